"""The GPU path's orchestration (plan -> rows on disk -> ledgers/model -> report) on the CPU,
with the device-only steps replaced: it catches wiring faults that only a GPU run would hit."""

import pandas as pd
import pytest
import torch
from conftest import stub_device

from study import run
from study.measure import plan as measure
from study.rundata.gpu import GPU

# a made-up speed per kernel (GFLOP/s), under the 66.9 TFLOP/s peak
SPEED = {"K0": 50000.0, "K2": 6000.0, "K3": 9000.0, "K4": 20000.0, "K6": 35000.0}


def fake_measure(self, k, shape):
    M, N, K = shape
    ms = 2 * M * N * K / SPEED[k.id] / 1e6
    row = {"kernel": k.id, "impl": k.impl, "M": M, "N": N, "K": K, "rel_err": 1e-6, "ms": ms,
           "p20_ms": ms * 0.99, "p80_ms": ms * 1.01, "reps": 5, "sm_clock_mhz": 1900.0, "clock_samples": 2,
           "config": ""}
    return {"row": row, "samples": [(0.0, 1900.0), (0.05, 1900.0)]}


@pytest.fixture
def no_device(monkeypatch):
    stub_device(monkeypatch, fake_measure)


def test_measure_writes_rows_ledgers_model_and_report(no_device, tmp_path):
    plan = run.Plan(["--kernels", "K2,K3,K4,K6", "--experiments", "main,strides", "--out", str(tmp_path),
                     "--no-sass"])
    assert run.measure(plan) == 0
    rows = pd.read_csv(tmp_path / "data" / "results.csv")
    # 5 kernels (K0 added) x 5 points (main, n = 4096, 4097, 4100 and 4097 on rows of 4112), less
    # the 4 CUDA kernels at the padded point (contiguous operands only), then the main point in two
    # more passes; K6 runs 4100^3 where the others run 4097^3
    assert len(rows) == 5 * 5 - 4 + 2 * 5 and set(rows["gpu"]) == {"Test GPU"}
    recorded = GPU.from_json(tmp_path / "data" / "gpu.json")
    assert recorded.read_gbps == pytest.approx(2**30 / 0.25e-3 / 1e9)  # 4294.97 GB/s
    assert rows.query("kernel == 'K6' and label == 'n=4097'")[["M", "N", "K"]].values.tolist() == [[4100] * 3]
    led = pd.read_csv(tmp_path / "data" / "ledgers.csv")
    k3 = led.query("kernel == 'K3' and experiment == 'main'").iloc[0]
    assert k3["gflops"] == pytest.approx(9000.0) and k3["pct_cublas"] == pytest.approx(18.0)
    model = pd.read_csv(tmp_path / "data" / "model.csv")
    assert "exact" in set(model["method"])
    assert (tmp_path / "data" / "gpu.json").is_file()
    # the median clock is derived, never written back into the measured gpu.json
    assert GPU.from_json(tmp_path / "data" / "gpu.json").sampled_sm_clock_mhz is None
    assert set(led.query("experiment == 'main'")["sampled_clock_mhz"]) == {1900.0}
    text = (tmp_path / "REPORT.md").read_text()
    assert "measured" in text and "Test GPU" in text


def test_measure_refuses_a_shape_that_does_not_fit(no_device, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (2**30, 141 * 2**30))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert run.main(["--size", "16384", "--kernels", "K2", "--out", str(tmp_path)]) == 2
    assert "GiB" in capsys.readouterr().err


def test_measure_never_replaces_measured_rows(no_device, monkeypatch, tmp_path, capsys):
    argv = ["--kernels", "K2", "--experiments", "main", "--out", str(tmp_path), "--no-sass", "--no-report"]
    assert run.measure(run.Plan(argv)) == 0
    rows = (tmp_path / "data" / "results.csv").read_bytes()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert run.main(argv) == 2  # the same GPU, no --resume: refused, the rows kept
    assert "--resume" in capsys.readouterr().err
    assert (tmp_path / "data" / "results.csv").read_bytes() == rows
    assert run.measure(run.Plan(argv + ["--resume"])) == 0  # everything already there: nothing added
    assert (tmp_path / "data" / "results.csv").read_bytes() == rows


def test_a_launcher_that_refuses_its_operands_is_a_row_without_time_and_the_run_goes_on(capsys):
    """The measurer's own path, with the check's launch refused the way K0L refused padded rows
    before the plan left it out there: the row has an infinite error and no time, the reason is
    one line, nothing is raised; a CUDA error (not a refusal) still stops the run."""
    from study.errors import InputError

    class Refusing:
        id, impl = "KX", "cublas"

        @staticmethod
        def launcher(a, b, out):
            raise InputError("KX takes contiguous float32 CUDA tensors")

        @staticmethod
        def path_for(M, N, K, cc):
            return None

    def check(launch, shape, seed):
        a = b = out = None
        launch(a, b, out)

    m = measure.Measurer(flush=None, target_s=0.01)
    orig = measure.check
    measure.check = check
    try:
        got = m(Refusing, (64, 64, 64))
        assert got["samples"] == [] and got["row"]["ms"] == "" and got["row"]["rel_err"] == float("inf")
        said = capsys.readouterr().err.strip().splitlines()
        assert len(said) == 1 and said[0].startswith("KX at 64x64x64: ")
        assert said[0].endswith("KX takes contiguous float32 CUDA tensors; not timed")

        def cuda_error(launch, shape, seed):
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

        measure.check = cuda_error
        with pytest.raises(RuntimeError):
            m(Refusing, (64, 64, 64))
    finally:
        measure.check = orig
