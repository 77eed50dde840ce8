"""Bad input that used to pass, or to end in a traceback or an abort: a times file cut short, a
``--out`` folder holding something other than this run, a misspelt key in gpu.json, a kernel the
target architecture cannot build, a run directory that cannot be written. Each is one line on
stderr and exit 2 (or, for the kernel, one line and an error row), with nothing written. CPU only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import cli, lines, refused, succeeded

from study.errors import InputError
from study.rundata import results, rundir, tables
from study.rundata.gpu import GPU

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "reports" / "data"
FIXTURES = REPO / "tests" / "fixtures"
SEED_TIMES = DATA / rundir.SEED_TIMES
SEED_GPU = DATA / rundir.SEED_GPU


# --- helpers -------------------------------------------------------------------------------------


def replay(times: Path, out: Path, *more, gpu: Path = SEED_GPU) -> subprocess.CompletedProcess:
    return cli("study.run", "--from-results", times, "--gpu", gpu, "--out", out, *more)


def one_line(rc: int, err: str, *words: str) -> str:
    """The in-process form of :func:`refused`: ``main(...)``'s code and what capsys caught."""
    assert rc == 2, err
    got = lines(err)
    assert len(got) == 1 and got[0].startswith("error:") and "Traceback" not in err, err
    for w in words:
        assert w.lower() in got[0].lower(), f"{w!r} not in: {got[0]}"
    return got[0]


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root``: a file's bytes, None for a directory. Equal trees: nothing was
    written, created or removed."""
    root = Path(root)
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def cuda_absent():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: study.run would measure instead of copying the recorded run")


# --- 1. a times file cut short ---------------------------------------------------------------------


def test_a_times_file_cut_short_is_refused(tmp_path):
    text = SEED_TIMES.read_bytes()
    assert text.endswith(b",3.358\n")
    times = tmp_path / "times.csv"
    times.write_bytes(text[:-3])  # the last time, 3.358, now reads 3.3 and the newline is gone
    out = tmp_path / "out"
    refused(replay(times, out, "--no-report"), str(times), "truncated")
    assert not out.exists()


def test_a_last_row_with_fewer_fields_than_its_header_is_refused(tmp_path):
    # rel_err after the time: the last row keeps its time but lost its check, newline and all
    rows = pd.read_csv(SEED_TIMES, dtype=str).assign(rel_err="1.1e-06")
    text = rows.to_csv(index=False).encode()
    assert text.endswith(b",3.358,1.1e-06\n")
    times = tmp_path / "times.csv"
    times.write_bytes(text[: -len(b",1.1e-06\n")] + b"\n")
    out = tmp_path / "out"
    refused(replay(times, out, "--no-report"), str(times), "truncated", "fields")
    assert not out.exists()


def test_a_run_whose_counters_were_cut_short_is_refused_before_anything_is_derived(tmp_path, capsys):
    from study.report.__main__ import main

    d = tmp_path / "run"
    (d / "data").mkdir(parents=True)
    for name in ("results.csv", "clocks.csv", "gpu.json", "sass.csv", "ncu.csv"):
        shutil.copyfile(FIXTURES / "report" / name, d / "data" / name)
    ncu = d / "data" / "ncu.csv"
    ncu.write_bytes(ncu.read_bytes().rstrip(b"\n")[:-2])
    before = tree(d)
    one_line(main([str(d)]), capsys.readouterr().err, str(ncu), "truncated")
    assert tree(d) == before


@pytest.mark.parametrize("path", sorted([*DATA.glob("*.csv"), *FIXTURES.rglob("*.csv")]),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_every_committed_csv_still_reads(path):
    results.check_complete(path)
    assert len(results.read_csv(path).columns) > 0


def test_rows_appended_by_the_results_file_read_back(tmp_path):
    path = tmp_path / "data" / "results.csv"
    f = results.ResultsFile(path)
    f.append({"experiment": "main", "label": "main", "kernel": "TA", "M": 64, "N": 64, "K": 64, "ms": 0.5,
              "config": json.dumps({"BM": 32, "BN": 64, "BK": 16})})  # commas and quotes inside a field
    assert path.read_bytes().endswith(b"\n")
    f.append_many([{"experiment": "main", "label": "main", "kernel": "K1", "M": 64, "N": 64, "K": 64,
                    "ms": 1.5}])
    df = results.read(path, required=["kernel", "ms", "config"])
    assert list(df["kernel"]) == ["TA", "K1"] and list(df["ms"]) == [0.5, 1.5]
    assert json.loads(df.at[0, "config"])["BN"] == 64


# --- 2. a replay or a recorded copy: only into an empty folder or one holding the same run ---------


def _occupied(d: Path, what: str) -> Path:
    if what == "stray":
        d.mkdir()
        (d / "notes.txt").write_text("mine, not a run's\n")
    elif what == "stray-in-data":
        (d / "data").mkdir(parents=True)
        (d / "data" / "notes.txt").write_text("mine, not a run's\n")
    elif what == "reports-data":  # --out reports/data: a run's files at the folder's top level
        shutil.copytree(DATA, d)
    else:  # another run: the synthetic fixture's measured files
        (d / "data").mkdir(parents=True)
        for name in ("results.csv", "clocks.csv", "gpu.json", "sass.csv"):
            shutil.copyfile(FIXTURES / "report" / name, d / "data" / name)
    return d


@pytest.mark.parametrize("what", ["stray", "stray-in-data", "reports-data", "another-run"])
def test_a_replay_into_a_folder_holding_other_files_is_refused(tmp_path, what):
    d = _occupied(tmp_path / "out", what)
    before = tree(d)
    refused(replay(SEED_TIMES, d), str(d), "empty directory")
    assert tree(d) == before


@pytest.mark.parametrize("what", ["stray", "reports-data", "another-run"])
def test_a_recorded_copy_into_a_folder_holding_other_files_is_refused(tmp_path, cuda_absent, what):
    d = _occupied(tmp_path / "out", what)
    before = tree(d)
    refused(cli("study.run", "--no-sass", "--out", d), str(d), "empty directory")
    assert tree(d) == before


def test_a_replay_goes_into_an_empty_folder_and_rederives_its_own_run(tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    succeeded(replay(SEED_TIMES, d, "--no-report"))
    inputs = {n: (d / "data" / n).read_bytes() for n in (rundir.RESULTS, rundir.GPU)}
    (d / rundir.REPORT).write_text("# an earlier render\n")
    (d / rundir.FIGURES).mkdir()
    (d / rundir.FIGURES / "throughput.png").write_bytes(b"png")
    (d / rundir.LOCAL).mkdir()
    (d / rundir.LOCAL / "sass_sm_90.csv").write_text("kernel\nK1\n")
    succeeded(replay(SEED_TIMES, d, "--no-report"))  # the same inputs: it re-derives in place
    assert {n: (d / "data" / n).read_bytes() for n in inputs} == inputs
    assert (d / rundir.LOCAL / "sass_sm_90.csv").read_text() == "kernel\nK1\n"
    (d / "notes.txt").write_text("mine\n")  # ... but not beside a file that is no part of a run
    before = tree(d)
    refused(replay(SEED_TIMES, d, "--no-report"), str(d), "notes.txt")
    assert tree(d) == before


def test_a_recorded_copy_rederives_into_a_run_directory_of_the_same_inputs(tmp_path, cuda_absent):
    d = tmp_path / "run"
    shutil.copytree(DATA, d / "data")  # a copy of reports/: measured, seed and derived tables
    (d / rundir.REPORT).write_text("# an earlier render\n")
    shutil.copytree(REPO / "reports" / rundir.FIGURES, d / rundir.FIGURES)
    (d / rundir.LOCAL).mkdir()
    (d / rundir.LOCAL / "sass_sm_90.csv").write_text("kernel\nK1\n")
    measured = {n: (d / "data" / n).read_bytes() for n in rundir.MEASURED if (d / "data" / n).is_file()}
    succeeded(cli("study.run", "--no-sass", "--no-report", "--out", d))
    assert {n: (d / "data" / n).read_bytes() for n in measured} == measured
    assert (d / rundir.LOCAL / "sass_sm_90.csv").read_text() == "kernel\nK1\n"


def test_every_file_of_the_reference_run_is_declared():
    # a copy of reports/ is a run directory of the recorded run's inputs, not a folder of strays
    assert sorted(p.name for p in DATA.iterdir() if p.name not in tables.BY_FILE) == []


# --- 3. unknown keys in gpu.json -------------------------------------------------------------------

KNOWN_KEYS = ("name", "sms", "fp32_lanes_per_sm", "sm_clock_mhz", "mem_clock_mhz", "bus_width_bits",
              "sampled_sm_clock_mhz", "l2_bytes", "cc", "read_gbps", "copy_gbps", "roof_buffer_bytes")


@pytest.mark.parametrize("typo,key", [("sampled_sm_clok_mhz", "sampled_sm_clock_mhz"),
                                      ("l2_byts", "l2_bytes")])
def test_a_misspelt_key_in_gpu_json_is_refused(tmp_path, typo, key):
    data = json.loads(SEED_GPU.read_text())
    data[typo] = data.pop(key)
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(data, indent=2))
    with pytest.raises(InputError) as e:
        GPU.from_json(path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg and repr(typo) in msg
    assert all(k in msg for k in KNOWN_KEYS), msg
    out = tmp_path / "out"
    refused(replay(SEED_TIMES, out, "--no-report", gpu=path), typo, "unknown key")
    assert not out.exists()


def test_two_unknown_keys_are_both_named():
    data = {**json.loads(SEED_GPU.read_text()), "l2_byts": 1, "colour": "green"}
    with pytest.raises(InputError, match=r"unknown keys 'colour', 'l2_byts'"):
        GPU.from_dict(data)


@pytest.mark.parametrize("path", [DATA / "gpu.json", SEED_GPU, *sorted(FIXTURES.rglob("gpu.json"))],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_every_gpu_json_of_the_repository_loads(path):
    g = GPU.from_json(path)
    assert GPU.from_dict(g.to_dict()) == g


def test_a_description_with_every_field_loads(tmp_path):
    # what a measuring run writes: every optional field, the roofs and the sampled clock included
    g = GPU("NVIDIA H200", 132, 128, 1980.0, 3201.0, 6016, sampled_sm_clock_mhz=1980.0, l2_bytes=62914560,
            cc="9.0", read_gbps=4358.0, read_p20_gbps=4332.0, read_p80_gbps=4376.0, copy_gbps=4208.0,
            copy_p20_gbps=4203.0, copy_p80_gbps=4211.0, roof_buffer_bytes=2**30)
    g.to_json(tmp_path / "gpu.json")
    assert GPU.from_json(tmp_path / "gpu.json") == g


# --- 4. a kernel that cannot be built for the target architecture ----------------------------------


def _tools():
    from study.toolchain import tools

    try:
        import triton  # noqa: F401
    except ImportError:
        return None, None
    return tools.find_cuobjdump(), tools.find_nvcc()


needs_triton_and_cuobjdump = pytest.mark.skipif(
    _tools()[0] is None,
    reason="needs triton and cuobjdump (PATH or the triton wheel) to compile and dump SASS")


@needs_triton_and_cuobjdump
def test_a_kernel_the_arch_cannot_build_is_an_error_row_not_an_abort(tmp_path, cuda_absent):
    # G12's copies are cp.async, which sm_75 has not: Triton's compiler aborts on it. K12 (nvcc)
    # is the rest of the run where nvcc is present, else G10, a Gluon twin that builds for sm_75
    other = "K12" if _tools()[1] is not None else "G10"
    out = tmp_path / "run"
    p = cli("study.run", "--arch", "sm_75", "--kernels", f"G12,{other}", "--out", out, "--no-report",
            env={"SGEMM_SASS_CACHE": str(tmp_path / "cache")})
    shown = f"rc={p.returncode}\nstderr:\n{p.stderr}"
    assert p.returncode in (0, 2), shown  # never 134 (SIGABRT) or -6
    assert "Traceback" not in p.stderr, shown
    assert not [ln for ln in lines(p.stderr) if ln.startswith("LLVM ERROR")], shown  # the compiler's own
    about = [ln for ln in lines(p.stderr) if "G12" in ln]
    assert len(about) == 1 and "sm_75" in about[0], shown
    if p.returncode == 0:
        sass = pd.read_csv(out / rundir.LOCAL / "sass_sm_75.csv", keep_default_na=False).set_index("kernel")
        assert sass.at["G12", "error"] != "" and "G12" in sass.at["G12", "error"]
        assert other in sass.index and sass.at[other, "arch"] == "sm_75"
        if other == "G10":
            assert sass.at["G10", "error"] == "" and int(sass.at["G10", "FFMA"]) > 0
        assert (out / "data" / T_LEDGERS).is_file()  # the run went on past the SASS


T_LEDGERS = tables.T.ledgers.file


@needs_triton_and_cuobjdump
def test_a_compile_that_aborts_in_its_child_is_a_compile_error(monkeypatch, tmp_path):
    from study import kernels
    from study.toolchain import compile as tc

    monkeypatch.setenv("SGEMM_SASS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(tc, "_TRITON_COMPILED", {})
    with tc.TritonChild() as child:
        with pytest.raises(tc.CompileError, match=r"G12: .*(abort|died).*cp\.async"):
            tc.compile_triton(kernels.get("G12"), "sm_75", child=child)
        # the child that died is replaced: the next kernel compiles, and as it does in this process
        there = tc.compile_triton(kernels.get("T5"), "sm_75", child=child)
    monkeypatch.setattr(tc, "_TRITON_COMPILED", {})
    here = tc.compile_triton(kernels.get("T5"), "sm_75")
    assert there["cubin"].read_bytes() == here["cubin"].read_bytes()
    assert {k: v for k, v in there.items() if k != "cubin"} == {k: v for k, v in here.items() if k != "cubin"}


# --- 5. a run directory that cannot be written -----------------------------------------------------


@pytest.fixture
def replayed(tmp_path) -> Path:
    d = tmp_path / "run"
    succeeded(replay(SEED_TIMES, d, "--no-report"))
    return d


def _read_only(monkeypatch, root: Path) -> None:
    """``os.access`` answers as it would were ``root`` on a read-only file system (root, which these
    tests may run as, is refused nothing by permission bits)."""
    real, root = os.access, Path(root).resolve()

    def access(path, mode, *a, **k):
        p = Path(path).resolve()
        if mode & os.W_OK and (p == root or root in p.parents):
            return False
        return real(path, mode, *a, **k)

    monkeypatch.setattr(os, "access", access)


def test_report_of_a_directory_that_cannot_be_written_is_one_line(replayed, monkeypatch, capsys):
    from study.report.__main__ import main

    before = tree(replayed)
    _read_only(monkeypatch, replayed)
    one_line(main([str(replayed)]), capsys.readouterr().err, f"{replayed}: cannot write")
    assert tree(replayed) == before


def test_report_whose_write_fails_midway_is_one_line(replayed, monkeypatch, capsys):
    from study.report.__main__ import main

    def denied(self, path=None, *a, **k):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(pd.DataFrame, "to_csv", denied)
    one_line(main([str(replayed)]), capsys.readouterr().err, "Permission denied", str(replayed))


@pytest.mark.parametrize("exists", [True, False], ids=["existing", "new"])
def test_replay_into_a_directory_that_cannot_be_written_is_one_line(tmp_path, monkeypatch, capsys, exists):
    from study.run import main

    parent = tmp_path / "ro"
    out = parent / "run"
    out.mkdir(parents=True) if exists else parent.mkdir()
    before = tree(parent)
    _read_only(monkeypatch, parent)
    rc = main(["--from-results", str(SEED_TIMES), "--gpu", str(SEED_GPU), "--out", str(out)])
    one_line(rc, capsys.readouterr().err, str(out), "cannot")
    assert tree(parent) == before


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root writes through permission bits: the os.access tests above stand in")
def test_report_of_a_read_only_directory_as_a_user(replayed):
    modes = {p: p.stat().st_mode for p in [replayed, *replayed.rglob("*")]}
    for p in modes:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        before = tree(replayed)
        refused(cli("study.report", replayed), str(replayed), "cannot write")
        assert tree(replayed) == before
    finally:
        for p, m in modes.items():
            p.chmod(m)


@pytest.mark.parametrize("env", [{"RUN_DIR": "missing"}, {"SGEMM_COMMIT": "not-a-hash"}])
def test_the_gpu_session_refuses_a_bad_setting_before_it_builds_anything(tmp_path, env):
    """.ci/gpu-session: a RUN_DIR that holds no run, or an SGEMM_COMMIT that is no hash, is one
    line and exit 2, before the wheels, the build or anything under $OUT."""
    root = Path(__file__).resolve().parents[1]
    settings = {k: (str(tmp_path / v) if k == "RUN_DIR" else v) for k, v in env.items()}
    out = tmp_path / "out"
    p = subprocess.run(["bash", str(root / ".ci" / "gpu-session")], cwd=root, capture_output=True,
                       text=True, env={**os.environ, "OUT": str(out), **settings}, timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and next(iter(env)) in lines[0]
    assert not out.exists() or not any(out.iterdir())
