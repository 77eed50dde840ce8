"""study.sweep: the space it covers and its refusals. CPU only (the sweep itself needs a GPU)."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from study import arch
from study.errors import InputError
from study.measure import sweep

REPO = Path(__file__).resolve().parent.parent


def test_space_covers_the_ranges_a_tuner_should_try():
    space = sweep.space(arch.get("sm_90").smem_per_block)
    assert len(space) == len(set(space))
    bms = {bm for bm, *_ in space} | {bn for _, bn, *_ in space}
    assert min(bms) == 32 and max(bms) == 256
    assert {bk for _, _, bk, _, _ in space} == {8, 16, 32, 64}
    assert {w for *_, w, _ in space} == {2, 4, 8}
    assert {s for *_, s in space} == {1, 2, 3, 4, 5}
    for bm, bn, bk, warps, stages in space:
        per_thread = bm * bn // (32 * warps)
        assert 16 <= per_thread <= 128, (bm, bn, warps)
        assert per_thread * bk <= sweep.MAX_LOOP_FFMA
        assert (bm + bn) * bk * 4 * max(1, stages) <= 227 * 1024
    # every depth of the tiles a person tries first
    for stages in range(1, 6):
        assert (64, 64, 32, 4, stages) in space


def test_ranked_keeps_only_measured_rows_fastest_first():
    rows = [{"status": "ok", "ms": 3.0}, {"status": "wrong result", "ms": 1.0},
            {"status": "ok", "ms": 2.5}, {"status": "compile error: X", "ms": ""}]
    assert [r["ms"] for r in sweep.ranked(rows)] == [2.5, 3.0]


@pytest.mark.parametrize("args, needle", [
    (["--out", "{tmp}", "--jobs", "0"], "--jobs must be at least 1"),
    (["--out", "{tmp}", "--budget-s", "-5"], "--budget-s must be a positive number"),
    (["--out", "{tmp}", "--shape", "4096,x,4096"], "not an integer"),
    ([], "--out DIR is required"),
])
def test_cli_bad_input_is_one_line_exit_2(tmp_path, args, needle):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = subprocess.run([sys.executable, "-m", "study.sweep", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], done.stderr


def test_cli_without_a_gpu_measures_nothing(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the sweep would run")
    done = subprocess.run([sys.executable, "-m", "study.sweep", "--out", str(tmp_path)], capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    assert done.returncode == 2
    assert "needs a CUDA GPU" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "data" / "sweep.csv").exists()


def test_recorded_h200_sweep_backs_the_ta_space():
    """docs/notes/ta/data/sweep.csv (an H200 run of this sweep) holds what TA's docstring says of it."""
    from triton_kernels import ta_autotuned as ta

    df = pd.read_csv(REPO / "docs" / "notes" / "ta" / "data" / "sweep.csv")
    assert set(sweep.COLUMNS) <= set(df.columns)
    ok = df[(df["status"] == "ok") & (df["round"].astype(str) != "cublas")]
    assert (ok["rel_err"] <= 1e-5).all()
    best = ok["pct_cublas"].max()
    assert 85 < best < 95  # the plateau: no configuration reached the 95 % goal
    # the plateau's tiles are in TA's space
    top = ok.sort_values("ms").head(10)
    space = {c[:2] + (c[3],) for c in ta._SPACE}
    assert all((int(r.BM), int(r.BN), int(r.num_warps)) in space for r in top.itertuples())
    # unpipelined configurations trail the pipelined ones
    assert ok[ok["num_stages"] == 1]["pct_cublas"].max() < best - 3


def test_space_follows_the_shared_memory_of_the_arch():
    """The depth cut is the arch table's per-block limit: sm_120's 99 KB keeps fewer, all within it."""
    h200 = sweep.space(arch.get("sm_90").smem_per_block)
    small = sweep.space(arch.get("sm_120").smem_per_block)
    assert set(small) < set(h200)
    assert all((bm + bn) * bk * 4 * max(1, st) <= 99 * 1024 for bm, bn, bk, _, st in small)
    import torch

    if not torch.cuda.is_available():  # no device: no limit to read, said in one line
        with pytest.raises(InputError, match="no CUDA device"):
            sweep.space()
