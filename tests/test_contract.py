"""The run-directory and CLI contract, on CPU: what each command refuses, and that a refusal
leaves every directory as it was.

* data is never lost or mixed: a replay or a copy of the recorded run goes only into an empty
  directory or one holding the same inputs; measured rows are never replaced; no command writes
  outside its run directory (the default ``out/`` is ignored by git);
* a number that cannot be right is refused before any arithmetic;
* bad input is one line on stderr (``error: ...``) and exit 2, never a traceback;
* a flag that means nothing in a mode is refused, not silently ignored.

The CLIs run as subprocesses, as a user runs them; the ones that share their inputs share one
module-scoped run directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import cli, refused, succeeded

from study.errors import InputError
from study.rundata import rundir
from study.rundata.gpu import GPU
from study.rundata.rundir import RunDir
from study.rundata.tables import T

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "reports" / "data"
SEED_TIMES = DATA / rundir.SEED_TIMES
SEED_GPU = DATA / rundir.SEED_GPU
H200 = rundir.identity("NVIDIA H200", "9.0", 132)  # the GPU of the recorded run in reports/


# --- helpers -------------------------------------------------------------------------------------


def run(*args, **kw) -> subprocess.CompletedProcess:
    return cli("study.run", *args, **kw)


def replay(times: Path, out: Path, *more, gpu: Path = SEED_GPU) -> subprocess.CompletedProcess:
    return run("--from-results", times, "--gpu", gpu, "--out", out, *more)


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its SHA-256, every directory as ``dir``: two equal trees
    mean nothing was written, created or removed."""
    root = Path(root)
    if not root.exists():
        return {}
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def seed_rows() -> pd.DataFrame:
    return pd.read_csv(SEED_TIMES, dtype=str, keep_default_na=False)


def write_times(path: Path, rows: pd.DataFrame) -> Path:
    rows.to_csv(path, index=False)
    return path


def seed_with(tmp_path: Path, kernel: str, ms: str, name: str = "times.csv") -> Path:
    """The seed's times with ``kernel``'s time replaced by the text ``ms``."""
    rows = seed_rows()
    assert (rows["kernel"] == kernel).sum() == 1
    rows.loc[rows["kernel"] == kernel, "ms"] = ms
    return write_times(tmp_path / name, rows)


def measured_run(root: Path, change_row: bool = False) -> Path:
    """``root/data`` holding the measured inputs of the recorded run (another GPU's than the
    seed's); with ``change_row`` one time of results.csv differs: a different run."""
    (root / "data").mkdir(parents=True)
    for name in (rundir.RESULTS, rundir.GPU, rundir.CLOCKS):
        shutil.copyfile(DATA / name, root / "data" / name)
    if change_row:
        text = (root / "data" / rundir.RESULTS).read_text().splitlines(keepends=True)
        cells, col = text[1].split(","), text[0].split(",").index("ms")
        cells[col] = repr(float(cells[col]) * 1.01)
        text[1] = ",".join(cells)
        (root / "data" / rundir.RESULTS).write_text("".join(text))
    return root


def porcelain() -> set[str] | None:
    """The paths ``git status`` lists (untracked ones each named), None outside a git checkout."""
    try:
        p = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO,
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    return {ln[3:] for ln in p.stdout.splitlines() if ln.strip()}


# --- shared work ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory) -> Path:
    """A full run directory: the seed's times replayed, report and figures rendered."""
    out = tmp_path_factory.mktemp("seed") / "run"
    succeeded(replay(SEED_TIMES, out))
    return out


@pytest.fixture(scope="module")
def cuda_absent():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: study.run would measure instead of copying the recorded run")


# --- 1. data loss and mixing ----------------------------------------------------------------------


def test_replay_into_another_gpus_run_is_refused(tmp_path):
    d = measured_run(tmp_path / "run")
    before = tree(d)
    refused(replay(SEED_TIMES, d, "--no-report"), str(d), "NVIDIA H200", "different run")
    assert tree(d) == before


@pytest.mark.parametrize("resume", [False, True], ids=["plain", "resume"])
def test_recorded_copy_into_a_different_run_is_refused(tmp_path, cuda_absent, resume):
    d = measured_run(tmp_path / "run", change_row=True)
    before = tree(d)
    p = run("--out", d, "--no-sass", "--no-report", *(["--resume"] if resume else []))
    if resume:
        refused(p, "--resume", "means nothing")
    else:
        refused(p, str(d), "different run")
    assert tree(d) == before


def test_recorded_run_without_out_writes_only_under_out(cuda_absent):
    before = porcelain()
    if before is None:
        pytest.skip("not a git checkout: nothing to compare git status with")
    default = REPO / "out"
    existed = default.exists()
    try:
        p = run("--no-sass", timeout=600)
        if existed:  # whatever is there is kept (refused); the same recorded run re-derives
            assert p.returncode in (0, 2), p.stderr
            if p.returncode == 2:
                refused(p, "choose another --out")
        else:
            succeeded(p)
            assert (default / "data" / rundir.RESULTS).read_bytes() == (DATA / rundir.RESULTS).read_bytes()
            assert (default / rundir.REPORT).is_file()
            assert not (default / rundir.LOCAL).exists()  # --no-sass: no SASS compiled
        after = porcelain()
    finally:
        if not existed:
            shutil.rmtree(default, ignore_errors=True)
    assert after == before, f"written outside out/: {sorted(after ^ before)}"


@pytest.mark.parametrize("mode", ["replay", "recorded"])
@pytest.mark.parametrize("what", ["empty", "root", "file"])
def test_out_that_is_no_directory_is_refused(tmp_path, what, mode):
    work = tmp_path / "work"
    work.mkdir()
    target = {"empty": "", "root": "/", "file": str(work / "notes.txt")}[what]
    if what == "file":
        (work / "notes.txt").write_text("kept\n")
    before, root_before = tree(work), sorted(os.listdir("/"))
    args = ["--from-results", SEED_TIMES, "--gpu", SEED_GPU] if mode == "replay" else ["--no-sass"]
    p = run(*args, "--out", target, "--no-report", cwd=work)
    refused(p, "--out")
    assert tree(work) == before
    assert sorted(os.listdir("/")) == root_before


def test_replay_twice_rederives_a_full_run_directory(seed_run):
    inputs = {n: seed_run.joinpath("data", n).read_bytes() for n in (rundir.RESULTS, rundir.GPU)}
    succeeded(replay(SEED_TIMES, seed_run, "--no-report"))
    assert {n: seed_run.joinpath("data", n).read_bytes() for n in inputs} == inputs
    assert (seed_run / rundir.REPORT).is_file()
    assert list((seed_run / rundir.FIGURES).glob("*.png"))
    for name in (T.ledgers.file, T.model.file):
        assert (seed_run / "data" / name).is_file()
    p = cli("study.report", seed_run)
    succeeded(p)
    assert str(seed_run / rundir.REPORT) in p.stdout
    assert "RTX 4090" in (seed_run / rundir.REPORT).read_text()


def test_claim_measurement_never_replaces_rows(tmp_path):
    empty = RunDir(tmp_path / "empty")
    empty.claim_measurement(H200, resume=False)  # nothing there: a measurement may start
    assert not empty.root.exists()

    d = RunDir(measured_run(tmp_path / "run"))
    before = tree(d.root)
    assert d.holds_rows() and d.gpu_identity() == H200
    with pytest.raises(InputError, match="--resume"):
        d.claim_measurement(H200, resume=False)
    other = rundir.identity("NVIDIA GeForce RTX 4090", "8.9", 128)
    for resume in (False, True):
        with pytest.raises(InputError, match="measured on NVIDIA H200"):
            d.claim_measurement(other, resume=resume)
    d.claim_measurement(H200, resume=True)  # the same GPU continues its run
    assert tree(d.root) == before

    # a run that predates gpu.json: its rows say which GPU it was
    d.file(rundir.GPU).unlink()
    assert d.gpu_identity() == H200
    with pytest.raises(InputError, match="measured on NVIDIA H200"):
        d.claim_measurement(other, resume=True)


def test_claim_copy_accepts_only_the_same_inputs(tmp_path):
    d = RunDir(measured_run(tmp_path / "run"))
    same = {n: (DATA / n).read_bytes() for n in (rundir.RESULTS, rundir.GPU, rundir.CLOCKS)}
    d.claim_copy(same, "a copy")  # the same inputs: re-derives
    with pytest.raises(InputError, match="different run"):
        # without clocks.csv: the clocks of the run there would be left beside other rows
        d.claim_copy({n: same[n] for n in (rundir.RESULTS, rundir.GPU)}, "a replay")
    with pytest.raises(InputError, match="different run"):
        d.claim_copy({**same, rundir.RESULTS: same[rundir.RESULTS] + b"\n"}, "a copy")


# --- 2. wrong numbers refused before any arithmetic ----------------------------------------------


def test_duplicate_rows_are_refused(tmp_path):
    rows = seed_rows()
    times = write_times(tmp_path / "times.csv", pd.concat([rows, rows[rows["kernel"] == "K3"]]))
    refused(replay(times, tmp_path / "out", "--no-report"), "second row", "K3", "4096")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kernel,ms", [("K3", "0.5"), ("K0", "0.2"), ("K3", "0.001")])
def test_time_faster_than_the_fp32_peak_is_refused(tmp_path, kernel, ms):
    p = replay(seed_with(tmp_path, kernel, ms), tmp_path / "out", "--no-report")
    line = refused(p, kernel, "FP32 peak", ms)
    assert "ZeroDivision" not in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("ms,shown", [("1e308", "1e+308"), ("inf", "inf"), ("-1", "-1"), ("0", "got 0"),
                                      ("fast", "fast")])
def test_impossible_time_is_refused(tmp_path, ms, shown):
    p = replay(seed_with(tmp_path, "K3", ms), tmp_path / "out", "--no-report")
    refused(p, "K3", "line 5", "positive number of ms", shown)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kernel", ["K3", "K5"])  # K5: not needed by the calibration
@pytest.mark.parametrize("ms", ["nan", ""], ids=["nan", "empty"])
def test_missing_time_without_a_failed_check_is_refused(tmp_path, ms, kernel):
    # no rel_err column: nothing says the kernel failed its check, so its row is never dropped
    p = replay(seed_with(tmp_path, kernel, ms), tmp_path / "out", "--no-report")
    line = refused(p, kernel, {"K3": "line 5", "K5": "line 8"}[kernel], "no time", "rel_err")
    assert "failed its check" not in line
    assert not (tmp_path / "out").exists()


def test_shape_the_kernel_refuses_is_refused(tmp_path):
    rows = seed_rows()
    bad = pd.DataFrame([{"kernel": "K6", "M": "4097", "N": "4097", "K": "4097", "ms": "3.5"}])
    times = write_times(tmp_path / "times.csv", pd.concat([rows, bad]))
    refused(replay(times, tmp_path / "out", "--no-report"), "K6", "multiple of 4", "4097")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["sm_999", "sm_10", "sm_\u0669\u0660"],
                         ids=["sm_999", "sm_10", "arabic-digits"])
def test_unknown_arch_is_refused_before_any_compiler(tmp_path, value):
    t0 = time.monotonic()
    p = run("--arch", value, "--out", tmp_path / "out")
    assert p.returncode != -signal.SIGABRT
    refused(p, repr(value))
    assert time.monotonic() - t0 < 5, "a compiler ran"
    assert "nvcc" not in p.stderr.lower() and "ptxas" not in p.stderr.lower()
    assert not (tmp_path / "out").exists()


# --- 3. no tracebacks ----------------------------------------------------------------------------


def test_profile_child_without_gpu_is_one_line(cuda_absent):
    refused(cli("study.profile", "--child", "K1"), "CUDA")
    p = cli("study.profile", "--help")
    assert p.returncode == 0, p.stderr
    assert "--child" not in p.stdout


def test_sweep_unknown_flag_is_named():
    refused(cli("study.sweep", "--bogus"), "--bogus")


def test_report_of_no_run_directory_is_refused(tmp_path):
    refused(cli("study.report", "/nonexistent"), "/nonexistent", "results.csv")
    d = tmp_path / "run"
    (d / "data").mkdir(parents=True)
    (d / "data" / rundir.GPU).write_bytes(SEED_GPU.read_bytes())
    before = tree(d)
    refused(cli("study.report", d), str(d), "results.csv")
    assert tree(d) == before


def _run_dir_with(seed_run: Path, dest: Path, kernel: str, ms: str) -> Path:
    shutil.copytree(seed_run, dest)
    rows = pd.read_csv(dest / "data" / rundir.RESULTS, dtype=str, keep_default_na=False)
    rows["rel_err"] = "1.1e-06"
    rows.loc[rows["kernel"] == kernel, "ms"] = ms
    rows.to_csv(dest / "data" / rundir.RESULTS, index=False)
    return dest


@pytest.mark.parametrize("kernel,ms,words", [
    ("K4", "-1", ("K4", "-1", "positive number of ms")),
    ("K3", "nan", ("K3", "passed its check", "no time")),
    ("K3", "", ("K3", "passed its check", "no time")),
], ids=["negative-K4", "nan-K3", "empty-K3"])
def test_report_refuses_a_row_it_cannot_use(seed_run, tmp_path, kernel, ms, words):
    d = _run_dir_with(seed_run, tmp_path / "run", kernel, ms)
    before = tree(d)
    line = refused(cli("study.report", d), str(d / "data" / rundir.RESULTS), "line", *words)
    assert "failed its check" not in line and "left out" not in line
    assert tree(d) == before


# --- 4. no flag silently ignored -----------------------------------------------------------------


@pytest.mark.parametrize("module", ["study.run", "study.profile"])
@pytest.mark.parametrize("value", ["", ","], ids=["empty", "comma"])
def test_empty_kernel_list_is_refused(tmp_path, value, module):
    refused(cli(module, "--kernels", value, "--out", tmp_path / "out"), "--kernels", "empty")
    assert not (tmp_path / "out").exists()


def test_empty_or_missing_replay_files_are_refused(tmp_path):
    out = tmp_path / "out"
    refused(run("--from-results", "", "--gpu", "", "--out", out), "--from-results", "empty")
    refused(run("--from-results", SEED_TIMES, "--gpu", "", "--out", out), "--gpu", "empty")
    refused(run("--from-results", SEED_TIMES, "--out", out), "--gpu", "GPU.json")
    refused(run("--gpu", SEED_GPU, "--out", out), "--gpu", "--from-results")
    refused(run("--from-results", tmp_path / "none.csv", "--gpu", SEED_GPU, "--out", out),
            "none.csv", "no such")
    before = tree(REPO / "reports")
    # the reference run is another GPU's: a replay never goes into reports/
    refused(replay(SEED_TIMES, REPO / "reports", "--no-report"), "NVIDIA H200", "different run")
    assert tree(REPO / "reports") == before
    assert not out.exists()


@pytest.mark.parametrize("flag", [["--kernels", "K1"], ["--size", "1024"], ["--arch", "sm_90"], ["--resume"]],
                         ids=lambda f: f[0])
def test_flag_that_means_nothing_in_a_replay_is_refused(tmp_path, flag):
    refused(replay(SEED_TIMES, tmp_path / "out", *flag), flag[0], "replay")
    assert not (tmp_path / "out").exists()


def test_unknown_compute_capability_is_refused(tmp_path):
    pytest.importorskip("study.arch", reason="study.arch (the architecture table) is not there yet")
    gpu = json.loads(SEED_GPU.read_text())
    with pytest.raises(InputError, match="banana"):
        GPU.from_dict({**gpu, "cc": "banana"})
    assert GPU.from_dict(gpu).cc == "8.9"
    bad = tmp_path / "gpu.json"
    bad.write_text(json.dumps({**gpu, "cc": "banana"}))
    refused(replay(SEED_TIMES, tmp_path / "out", gpu=bad), "banana", "cc")
    assert not (tmp_path / "out").exists()


# --- 5. every CLI: an unknown flag is one line ---------------------------------------------------


@pytest.mark.parametrize("module", ["study.run", "study.report", "study.profile", "study.sweep"])
def test_unknown_flag_is_one_line(module):
    refused(cli(module, "--no-such-flag"), "--no-such-flag")
