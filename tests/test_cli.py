"""The CLI's answers to bad input (one line, exit 2) and its no-GPU path."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import HAS_CUDA

from study import console, derive, run
from study.errors import InputError
from study.measure import plan as measure
from study.run import main
from study.rundata import gpu as gpu_mod
from study.rundata.rundir import RunDir

REPO = Path(__file__).resolve().parent.parent
SEED_TIMES = REPO / "reports" / "data" / "rtx4090_seed.csv"
SEED_GPU = REPO / "reports" / "data" / "rtx4090_seed_gpu.json"
RECORDED = REPO / "reports" / "data"


def run_cli(*args, cwd=REPO):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "study.run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--kernels", "K99"], ["K99", "known"]),
        (["--size", "0"], ["positive"]),
        (["--size", "-3"], ["positive"]),
        (["--size", "abc"], ["integer", "abc"]),
        (["--size", "12.5"], ["integer"]),
        (["--shape", "1,2"], ["M,N,K"]),
        (["--shape", "4,x,4"], ["integer"]),
        (["--kernels", "K6", "--shape", "4096,4097,4096"], ["K6", "multiple of 4", "N = 4097"]),
        (["--size", "4097"], ["K6", "multiple of 4"]),
        (["--experiments", "sizes,bogus"], ["bogus", "known"]),
        (["--experiments", ","], ["empty"]),
        (["--size", "64", "--shape", "1,2,3"], ["not allowed"]),
        (["--from-results", "x.csv"], ["--gpu"]),
        (["--from-results", "x.csv", "--gpu", "g.json"], ["--from-results", "no such file"]),
        (["--from-results", str(SEED_TIMES), "--gpu", str(SEED_GPU)], ["--out"]),
        (["--target-s", "0"], ["--target-s", "positive", "0.0"]),
        (["--target-s", "-1"], ["--target-s", "positive"]),
        (["--target-s", "nan"], ["--target-s", "positive"]),
        (["--target-s", "inf"], ["--target-s", "positive"]),
        (["--out", "/proc/sgemm-ledgers-out"], ["--out", "/proc/sgemm-ledgers-out", "cannot create"]),
        (["--arch", "90"], ["sm_90"]),
        (["--bogus-flag"], ["unrecognized"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error:"), err
    for w in words:
        assert w in err


def test_bad_input_never_prints_a_traceback():
    r = run_cli("--kernels", "K6", "--size", "4097")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and r.stderr.strip().count("\n") == 0
    assert "multiple of 4" in r.stderr


def test_replay_errors(tmp_path, capsys):
    gpu = REPO / "reports" / "data" / "rtx4090_seed_gpu.json"
    times = tmp_path / "t.csv"
    times.write_text("kernel,M,N\nK1,1,1\n")
    assert main(["--from-results", str(times), "--gpu", str(gpu), "--out", str(tmp_path)]) == 2
    assert "'K'" in capsys.readouterr().err
    times.write_text("kernel,M,N,K,ms\nK0,4096,4096,4096,2.4\nK2,4096,4096,4096,-1\n")
    assert main(["--from-results", str(times), "--gpu", str(gpu), "--out", str(tmp_path)]) == 2
    assert "K2" in capsys.readouterr().err
    none = tmp_path / "none.csv"
    assert main(["--from-results", str(none), "--gpu", str(gpu), "--out", str(tmp_path)]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.skipif(HAS_CUDA, reason="the no-GPU path is only taken where there is no CUDA device")
def test_without_gpu_says_it_measured_nothing(tmp_path):
    r = run_cli("--no-sass", "--no-report", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "measured nothing" in r.stderr
    assert "Traceback" not in r.stderr


# --- --out, --target-s, --kernels ----------------------------------------------------------------


def test_out_that_is_a_file_is_bad_input(tmp_path, capsys):
    f = tmp_path / "taken"
    f.write_text("not a directory")
    assert main(["--no-sass", "--no-report", "--out", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --out") and str(f) in err and err.count("\n") == 0
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "data").write_text("a file where data/ goes")
    assert main(["--from-results", str(SEED_TIMES), "--gpu", str(SEED_GPU), "--out", str(tmp_path / "o")]) \
        == 2
    assert "cannot create" in capsys.readouterr().err


def test_out_is_checked_but_not_created_by_the_parser(tmp_path):
    out = tmp_path / "new" / "deeper"
    assert run.Plan(["--out", str(out)]).out == out and not out.exists()


def test_repeated_kernel_is_measured_once():
    assert [k.id for k in run.Plan(["--kernels", "K3,K3"]).kernels] == ["K0", "K3"]
    assert [k.id for k in run.Plan(["--kernels", "K6,K1,K6"]).kernels] == ["K0", "K6", "K1"]


def test_unexpected_key_error_is_not_turned_into_bad_input(tmp_path, monkeypatch):
    def broken(args):
        raise KeyError("a bug, not bad input")

    monkeypatch.setattr(run, "replay", broken)
    with pytest.raises(KeyError, match="a bug"):
        main(["--from-results", str(SEED_TIMES), "--gpu", str(SEED_GPU), "--out", str(tmp_path)])


def test_unknown_kernel_is_still_exit_2(capsys):
    assert main(["--kernels", "K1,K99"]) == 2
    assert "unknown kernel id 'K99'" in capsys.readouterr().err


# --- device memory ---------------------------------------------------------------------------------


def test_footprint_bytes():
    # fp32 A (MxK), B (KxN), C (MxN): 4 bytes each; float64 A, B and reference C: 8 bytes each
    assert measure.footprint_bytes(4096, 4096, 4096) == 12 * 3 * 4096**2 == 603_979_776
    assert measure.footprint_bytes(1, 2, 3) == 4 * (3 + 6 + 2) + 8 * (3 + 6 + 2)
    assert measure.footprint_bytes(32, 18944, 3584) == 12 * (32 * 3584 + 3584 * 18944 + 32 * 18944)


def test_check_fits():
    measure.check_fits((4096, 4096, 4096), 603_979_776)  # exactly enough
    with pytest.raises(InputError, match=r"65536x65536x65536 needs 144.0 GiB.*80.0 GiB are free"):
        measure.check_fits((65536, 65536, 65536), 80 * 2**30)


def test_a_main_shape_too_big_for_the_device_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    import torch

    from study.measure import baseline

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (80 * 2**30, 141 * 2**30))
    monkeypatch.setattr(baseline, "pin_fp32", lambda: None)

    def must_not_run(*a, **k):
        raise AssertionError("reached the device before the memory check")

    from study.measure import device

    monkeypatch.setattr(device, "from_device", must_not_run)
    assert main(["--size", "65536", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: 65536x65536x65536 needs") and err.count("\n") == 0
    assert not (tmp_path / "data" / "results.csv").exists()


# --- replay ----------------------------------------------------------------------------------------


def replay(tmp_path, times, *extra):
    out = tmp_path / "out"
    return main(["--from-results", str(times), "--gpu", str(SEED_GPU), "--out", str(out), *extra])


def test_replay_end_to_end(tmp_path, capsys):
    assert replay(tmp_path, SEED_TIMES) == 0
    data = tmp_path / "out" / "data"
    led = pd.read_csv(data / "ledgers.csv").set_index("kernel")
    assert round(led.at["K3", "gflops"], 1) == 6184.0  # the seed report's K3 row
    assert round(led.at["K6", "pct_cublas"], 1) == 71.5
    mt = pd.read_csv(data / "model.csv").set_index("method")
    assert [round(mt.at["exact", c], 2) for c in ("p_ldg", "p_dist", "p_bcast")] == [1.94, 2.69, 0.53]
    assert list(pd.read_csv(data / "loo.csv")["kernel"]) == ["K2", "K3", "K3c", "K4", "K5"]
    out = capsys.readouterr()
    assert "6184" in out.out and "model: skipped" not in out.err
    assert (tmp_path / "out" / "REPORT.md").is_file()  # a replay is a full run directory


def test_replay_without_a_calibration_kernel_is_exit_2_naming_it(tmp_path, capsys):
    times = pd.read_csv(SEED_TIMES)
    sub = tmp_path / "sub.csv"
    times[times["kernel"] != "K2"].to_csv(sub, index=False)
    assert replay(tmp_path, sub) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "K2" in err and err.count("\n") == 0
    assert not (tmp_path / "out" / "data" / "ledgers.csv").exists()  # refused before writing


def test_replay_of_the_tool_s_own_results_with_a_failed_kernel(tmp_path, capsys):
    # results.csv as the tool writes it: a kernel that failed its check has no time
    rows = pd.read_csv(SEED_TIMES).assign(experiment="main", label="main", config="", rel_err=1.1e-6)
    failed = pd.DataFrame([{"experiment": "main", "label": "main", "kernel": "T1", "M": 4096, "N": 4096,
                            "K": 4096, "ms": None, "config": "", "rel_err": 0.3}])
    path = tmp_path / "results.csv"
    pd.concat([rows, failed]).to_csv(path, index=False)
    assert replay(tmp_path, path) == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "without a time" in line]
    assert len(notes) == 1 and "T1 (1 row)" in notes[0]
    led = pd.read_csv(tmp_path / "out" / "data" / "ledgers.csv")
    assert "T1" not in set(led["kernel"]) and len(led) == 8


def test_replay_ignores_a_config_that_is_not_json_and_a_tile_that_is_not_a_number(tmp_path, capsys):
    rows = pd.read_csv(SEED_TIMES).assign(config="")
    extra = pd.DataFrame([
        {"kernel": "TA", "M": 4096, "N": 4096, "K": 4096, "ms": 3.0, "config": "{not json"},
        {"kernel": "TA", "M": 2048, "N": 2048, "K": 2048, "ms": 0.5, "config": '{"BM": "x", "BN": 64}'},
        {"kernel": "TA", "M": 1024, "N": 1024, "K": 1024, "ms": 0.1,
         "config": '{"BK": 64, "BM": 64, "BN": 128}'},
    ])
    path = tmp_path / "t.csv"
    pd.concat([rows, extra]).to_csv(path, index=False)
    assert replay(tmp_path, path) == 0, capsys.readouterr().err
    led = pd.read_csv(tmp_path / "out" / "data" / "ledgers.csv")
    ta = led[led["kernel"] == "TA"].set_index("M")
    assert ta["bytes_per_out"].loc[[4096, 2048]].isna().all()
    # 64x128x64 at K = 1024: 16 phases x 64 x (1/64 + 1/128) x 4 bytes + 4 = 100
    assert ta.at[1024, "bytes_per_out"] == 100


def test_replay_refuses_a_dimension_beyond_32_bits(tmp_path, capsys):
    times = pd.read_csv(SEED_TIMES).astype({"M": float})
    times.loc[3, "M"] = 1e20
    path = tmp_path / "t.csv"
    times.to_csv(path, index=False)
    assert replay(tmp_path, path) == 2
    err = capsys.readouterr().err.strip()
    assert "line 5: M of K3" in err and "2147483647" in err and "np." not in err


def test_replay_refuses_a_huge_integer_in_the_gpu_json(tmp_path, capsys):
    g = tmp_path / "gpu.json"
    g.write_text(SEED_GPU.read_text().replace('"sms": 128', '"sms": 1' + "0" * 400))
    assert main(["--from-results", str(SEED_TIMES), "--gpu", str(g), "--out", str(tmp_path)]) == 2
    assert "'sms'" in capsys.readouterr().err


# --- derive: the model's steps run when their kernels were timed --------------------------------------


def derive_from(tmp_path, times):
    """A run directory holding ``times`` and the seed GPU, derived."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    times.assign(experiment="main", label="main").to_csv(data / "results.csv", index=False)
    (data / "gpu.json").write_bytes(SEED_GPU.read_bytes())
    rd = RunDir(tmp_path)
    return rd, derive.derive(rd)


def seed_ledger_input(kids):
    times = pd.read_csv(SEED_TIMES)
    return times[times["kernel"].isin(kids)]


def test_derive_of_a_subset_writes_the_ledgers_and_skips_the_model(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "loo.csv").write_text("kernel\nK9\n")  # from another derivation: must not survive
    rd, d = derive_from(tmp_path, seed_ledger_input(["K0", "K6"]))
    led = pd.read_csv(data / "ledgers.csv").set_index("kernel")
    assert round(led.at["K6", "pct_cublas"], 1) == 71.5 and led["predicted_cadence"].isna().all()
    assert d.model.empty and pd.read_csv(data / "model.csv").empty
    assert not (data / "loo.csv").exists()
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("model: skipped")]
    assert len(lines) == 1 and "exact calibration" in lines[0] and "no time for K2" in lines[0]
    console.print_tables(rd, d, "test")  # prints with no model
    assert "Unit prices: none" in capsys.readouterr().out


def test_derive_runs_each_step_its_kernels_allow(tmp_path, capsys):
    _, d = derive_from(tmp_path, seed_ledger_input(["K0", "K2", "K3", "K4"]))
    assert list(d.model["method"]) == ["exact", "lstsq"]  # three kernels: both price sets ...
    assert not (tmp_path / "data" / "loo.csv").exists()  # ... but nothing to leave out
    err = capsys.readouterr().err
    assert [ln for ln in err.splitlines() if ln.startswith("model:")] == [
        next(ln for ln in err.splitlines() if ln.startswith("model: skipped leave-one-out"))]
    assert d.ledgers.set_index("kernel")["model_error_pct"].loc[["K2", "K3", "K4"]].abs().max() < 1e-9


def test_derive_calibrates_once(tmp_path, monkeypatch):
    from study.derive import model

    calls = []
    real = model.calibrate_exact
    monkeypatch.setattr(model, "calibrate_exact", lambda *a, **k: calls.append(1) or real(*a, **k))
    derive_from(tmp_path, pd.read_csv(SEED_TIMES))
    assert len(calls) == 1


def test_with_tile_columns():
    configs = ['{"BM": 64, "BN": 32, "BK": 16}', "{oops", "", None]
    times = pd.DataFrame({"kernel": ["TA"] * 4, "config": configs})
    t = derive.with_tile_columns(times)
    assert (t.at[0, "BM"], t.at[0, "BN"], t.at[0, "BK"]) == (64, 32, 16)
    assert t.loc[1:, ["BM", "BN", "BK"]].isna().all().all()


# --- the main table ----------------------------------------------------------------------------------


def test_main_table_ratio_is_triton_gflops_over_cuda_gflops():
    gpu = gpu_mod.GPU.from_json(SEED_GPU)
    from study.derive import ledgers, tables

    times = pd.DataFrame({"kernel": ["K0", "K3", "T3", "K6", "T5", "T1", "K2"], "M": 4096, "N": 4096,
                          "K": 4096, "ms": [2.4, 22.225, 11.1125, 3.358, 6.716, 25.815, 25.815]})
    main_ = tables.with_twin_ratio(ledgers.ledger_table(times, gpu)).set_index("kernel")
    assert main_.at["T3", "twin"] == "K3" and main_.at["T3", "triton_over_cuda_gflops"] == pytest.approx(2.0)
    assert main_.at["T5", "twin"] == "K6" and main_.at["T5", "triton_over_cuda_gflops"] == pytest.approx(0.5)
    assert main_.at["T1", "twin"] == "K2" and main_.at["T1", "triton_over_cuda_gflops"] == pytest.approx(1.0)
    assert main_.loc[["K0", "K3", "K6"], "triton_over_cuda_gflops"].isna().all()


# --- the no-GPU path ---------------------------------------------------------------------------------


@pytest.mark.skipif(HAS_CUDA, reason="the no-GPU path is only taken where there is no CUDA device")
@pytest.mark.skipif(not (RECORDED / "results.csv").is_file(), reason="no recorded run in reports/data")
def test_without_gpu_into_a_dir_holding_another_run_is_refused(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    other = REPO / "tests" / "fixtures" / "report"  # another run's files, already in --out
    for name in ("results.csv", "clocks.csv", "gpu.json", "sass.csv"):
        (data / name).write_bytes((other / name).read_bytes())
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    r = run_cli("--no-sass", "--out", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "holds a different run" in r.stderr
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_the_baseline_message_names_no_kernel_id():
    """Ids live in the registry: the baseline's own refusals name the library, not an id."""
    import re

    import torch

    from study import kernels
    from study.measure import baseline

    for a, b in ((torch.zeros(3), torch.zeros(3, 3)), (torch.zeros(2, 3), torch.zeros(4, 2))):
        with pytest.raises(InputError) as e:
            baseline.cublas_matmul(a, b)
        said = [kid for kid in kernels.IDS if re.search(rf"\b{re.escape(kid)}\b", str(e.value))]
        assert said == [], str(e.value)
    assert "2-D matrices" in str(baseline_error(torch.zeros(3), torch.zeros(3, 3)))
    assert "inner dimensions differ" in str(baseline_error(torch.zeros(2, 3), torch.zeros(4, 2)))


def baseline_error(a, b) -> InputError:
    from study.measure import baseline

    with pytest.raises(InputError) as e:
        baseline.cublas_matmul(a, b)
    return e.value


def test_tuned_configs_come_from_the_main_rows(tmp_path):
    from study.measure.plan import tuned_configs

    f = tmp_path / "results.csv"
    f.write_text(
        "experiment,label,kernel,M,N,K,ms,config\n"
        'main,main,TA,64,64,64,1.0,"{""BM"": 64, ""BN"": 32, ""BK"": 32, ""num_warps"": 4}"\n'
        'sizes,n=1024,TA,1024,1024,1024,1.0,"{""BM"": 128, ""BN"": 128, ""BK"": 32, ""num_warps"": 8}"\n'
        "main,main,K6,64,64,64,1.0,\n"
        'main,main,T5,64,64,64,1.0,"{not json"\n'
    )
    assert tuned_configs(pd.read_csv(f, dtype={"config": str})) == {"TA": {"BM": 64, "BN": 32, "BK": 32,
                                                                          "num_warps": 4}}
    assert tuned_configs(None) == {}
