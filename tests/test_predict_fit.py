"""The constants' fit (study.predict.fit): the grid search recovers the constants that made a set
of times, leave-one-out fits without the kernel it predicts, the predictor takes the set fitted
for the GPU by name and falls back to the anchors, and bad input is one line and exit 2. No
kernel is compiled: the loops are hand-made, their cycles worked out by hand."""

from __future__ import annotations

import dataclasses
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from study.predict import fit, issue, model
from study.rundata.gpu import GPU
from study.toolchain.sass import Instr

ROOT = Path(__file__).resolve().parents[1]
H200 = GPU.from_json(ROOT / "reports" / "data" / "gpu.json")


def ins(op: str, operands: str = "", stall=1, write=7, wait=()) -> Instr:
    c = stall | 1 << 4 | write << 5 | 7 << 8 | sum(1 << i for i in wait) << 11
    return Instr(0, op, operands, "", (0, c << 41))


LDG = [ins("LDG.E", "R4, desc[UR4][R2.64]", write=0), ins("FFMA", "R1, R4, R5, R6", wait=(0,))]
BAR, BRA = ins("BAR.SYNC.DEFER_BLOCKING", "0x0"), ins("BRA", "0x0")

# one warp: LDG at t, the FFMA on its scoreboard at t + ldg, the branch, the next LDG: ldg + 2
# two warps: FFMA (stall 10), FFMA, the barrier released barrier cycles after both arrive at 11,
# the branch then, the next FFMA a cycle later: 10 + 1 + barrier + 1
# two warps: the LDG's wait, the FFMA, both at the barrier a cycle later, the branch at its
# release, the next LDG a cycle later: ldg + 1 + barrier + 1
LOOPS = {
    "A": (LDG + [BRA], 1, lambda ldg, bar: ldg + 2),
    "B": ([ins("FFMA", "R0, R1, R2, R0", stall=10), ins("FFMA", "R0, R1, R2, R0"), BAR, BRA], 2,
          lambda ldg, bar: 10 + 1 + bar + 1),
    "C": (LDG + [BAR, BRA], 2, lambda ldg, bar: ldg + 1 + bar + 1),
}
SHAPE = (132 * 64, 1, 1000)  # one block of each SM, one wave


def launch(warps: int) -> model.Launch:
    return model.Launch(grid=(H200.sms, 1, 1), threads=32 * warps, smem=0, registers=32)


def measured_ms(kid: str, ldg: int, bar: int) -> float:
    """The loop's cycles by hand, times its trips (the shape's FFMAs over the grid's), at the clock."""
    body, warps, cycles = LOOPS[kid]
    ffma = sum(i.base == "FFMA" for i in body)
    trips = math.prod(SHAPE) / (H200.sms * 32 * warps * ffma)
    return trips * cycles(ldg, bar) / (H200.sm_clock_mhz * 1e3)


GRID = {"ldg_latency": (600, 400, 800), "barrier_latency": (20, 10, 40)}  # the anchors first


def test_the_search_finds_the_constants_the_times_were_made_with():
    hidden = {"ldg_latency": 800, "barrier_latency": 40}  # neither is the anchors' value
    kids = list(LOOPS)
    cands = fit.candidates(GRID)
    assert len(cands) == 9 and cands[0] == issue.DEFAULT
    assert all(c.lds_latency == issue.DEFAULT.lds_latency and c.mio_queue == issue.DEFAULT.mio_queue
               for c in cands)
    table = np.array([[model.predict(LOOPS[k][0], launch(LOOPS[k][1]), SHAPE, H200, c=c)["ms"] for c in cands]
                      for k in kids])
    meas = [measured_ms(k, hidden["ldg_latency"], hidden["barrier_latency"]) for k in kids]
    logs = fit.log_errors(table, meas)
    chosen, loo = fit.fit_table(logs, kids)
    assert {f: getattr(cands[chosen], f) for f in GRID} == hidden
    assert np.abs(logs[:, chosen]).max() < 1e-12  # the model's cycles are the ones worked by hand
    # any two of the three loops still pin both constants down
    assert all(j == chosen for j in loo.values())


def test_leave_one_out_fits_on_every_kernel_but_the_one_it_predicts():
    seen = []

    def fit_on(ks):
        seen.append(list(ks))
        return len(seen)

    out = fit.leave_one_out(["K3", "K7", "G12"], fit_on)
    assert seen == [["K7", "G12"], ["K3", "G12"], ["K3", "K7"]]
    assert out == {"K3": 1, "K7": 2, "G12": 3}


def test_a_kernel_left_out_is_predicted_with_what_the_others_choose():
    """|log error| per kernel (rows X, Y, Z) and candidate (columns 0, 1): X alone wants 1.
    In sample: column 0 averages 0.6 / 3 = 0.2, column 1 0.4 / 3 = 0.133, so 1. Without X: 0
    against 0.2, so X is predicted with 0 (its error 0.6). Without Y: 0.3 against 0.1, so 1."""
    logs = np.array([[0.6, 0.0], [0.0, -0.2], [0.0, 0.2]])
    chosen, loo = fit.fit_table(logs, ["X", "Y", "Z"])
    assert chosen == 1 and loo == {"X": 0, "Y": 1, "Z": 1}


def test_ties_go_to_the_first_candidate():
    assert fit.best(np.array([[0.1, 0.1, -0.1]]), [0]) == 0


def test_decoding_each_instruction_once_plays_the_same_loop():
    body, warps, _ = LOOPS["C"]
    c = dataclasses.replace(issue.DEFAULT, ldg_latency=700)
    assert issue.simulate(fit.decoded(body), warps, 2, c) == issue.simulate(body, warps, 2, c)


def test_the_gpu_named_in_its_gpu_json_takes_its_fitted_set_and_another_the_anchors():
    h200 = issue.FITTED[H200.name]
    assert issue.constants_for(H200.name) is h200 and issue.fitted(h200, H200.name)
    assert issue.constants_for("NVIDIA GeForce RTX 4090") is issue.DEFAULT
    assert issue.constants_for(None) is issue.DEFAULT and not issue.fitted(h200, "NVIDIA GeForce RTX 4090")
    # the stated set is one the fit can return: its fields on the grid, the launch and the stream
    # as the panel gives them, those outside the grid as the fit fixes them, the others the anchors'
    stream = dataclasses.replace(issue.DEFAULT, **fit.FIXED, launch_us=h200.launch_us,
                                 stream_gbps=h200.stream_gbps)
    assert h200 in fit.candidates(base=stream)
    body, warps, _ = LOOPS["C"]
    mine = model.predict(body, launch(warps), SHAPE, H200)
    assert mine["ms"] == model.predict(body, launch(warps), SHAPE, H200, c=h200)["ms"]
    assert model.UNFITTED not in mine["missing"]
    other = dataclasses.replace(H200, name="NVIDIA GeForce RTX 4090")
    theirs = model.predict(body, launch(warps), SHAPE, other)
    assert theirs["ms"] == model.predict(body, launch(warps), SHAPE, H200, c=issue.DEFAULT)["ms"]
    assert model.UNFITTED in theirs["missing"]
    # the H200's set plays an instruction cache, the anchors do not: the prediction says which
    assert model.NO_ICACHE not in mine["missing"] and model.NO_ICACHE in theirs["missing"]
    # the H200's set on another GPU is not that GPU's fit
    assert model.UNFITTED in model.predict(body, launch(warps), SHAPE, other, c=h200)["missing"]


def run(*args):
    return subprocess.run([sys.executable, "-m", "study.predict", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def run_dir(tmp_path: Path, kernels: tuple[str, ...], gpu: bool = True) -> Path:
    """A run directory holding the reference run's rows of ``kernels`` (and its gpu.json)."""
    data = tmp_path / "run" / "data"
    data.mkdir(parents=True)
    lines = (ROOT / "reports" / "data" / "results.csv").read_text().splitlines()
    keep = [ln for ln in lines[1:] if ln.split(",")[3] in kernels]
    (data / "results.csv").write_text("\n".join([lines[0], *keep]) + "\n")
    if gpu:
        shutil.copy(ROOT / "reports" / "data" / "gpu.json", data / "gpu.json")
    return data.parent


@pytest.mark.parametrize("case, says", [
    ("missing", "no data/results.csv"),
    ("with --kernel", "--fit DIR takes no"),
    ("with --check", "--fit DIR takes no"),
    ("no gpu.json", "no data/gpu.json"),
    ("too few kernels", "kernels of the declared set timed at 4096x4096x4096"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, case, says):
    args = {
        "missing": lambda: ["--fit", str(tmp_path / "no" / "such")],
        "with --kernel": lambda: ["--fit", "reports", "--kernel", "K12"],
        "with --check": lambda: ["--fit", "reports", "--check", "reports"],
        "no gpu.json": lambda: ["--fit", str(run_dir(tmp_path, ("K12",), gpu=False))],
        # K0 is not predicted and K1 is left out: one kernel of the set
        "too few kernels": lambda: ["--fit", str(run_dir(tmp_path, ("K0", "K1", "K12")))],
    }[case]()
    p = run(*args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in p.stderr


def test_the_launch_and_the_stream_come_from_the_vendors_gemv_at_one_row():
    """Times made as 5 µs + bytes at 4000 GB/s (bytes: A's K, B's K·N, C's N floats) for the
    faster vendor kernel; the slower one, KD and M = 2 are not read."""
    import pandas as pd

    rows = []
    for n, k in [(4096, 4096), (14336, 4096), (152064, 3584)]:
        us = 5 + 4 * (k + k * n + n) / 4000e3
        rows += [dict(N=n, K=k, M=1, kernel="K0", status="ok", gpu_us=us),
                 dict(N=n, K=k, M=1, kernel="K0L", status="ok", gpu_us=us * 1.1),
                 dict(N=n, K=k, M=1, kernel="KD", status="ok", gpu_us=us * 0.5),
                 dict(N=n, K=k, M=2, kernel="K0", status="ok", gpu_us=us * 3)]
    got = fit.stream_fit(pd.DataFrame(rows))
    assert got == {"launch_us": 5.0, "stream_gbps": 4000, "points": 3}
    assert fit.stream_fit(pd.DataFrame(rows[:4])) is None  # one size: nothing to fit


def test_the_launch_is_added_to_the_larger_of_the_loop_and_the_stream():
    body, warps, _ = LOOPS["C"]
    bare = dataclasses.replace(issue.DEFAULT, ldg_latency=700)
    with_launch = dataclasses.replace(bare, launch_us=10.0)
    a = model.predict(body, launch(warps), SHAPE, H200, c=bare)
    b = model.predict(body, launch(warps), SHAPE, H200, c=with_launch)
    assert b["ms"] == pytest.approx(a["ms"] + 0.010) and b["launch_ms"] == pytest.approx(0.010)
    # a stream rate replaces the run's read roof in the DRAM floor: 4 bytes per element of A, B, C
    M, N, K = SHAPE
    fast = model.predict(body, launch(warps), SHAPE, H200, c=dataclasses.replace(bare, stream_gbps=1000.0))
    assert fast["dram_ms"] == pytest.approx(4 * (M * K + K * N + M * N) / 1e12 * 1e3)


def test_candidates_played_in_forked_processes_are_those_played_here():
    """Each candidate's column once, whatever the number of processes; the one this process holds
    (the first) is not among them."""
    def column(j):
        return [j * j, -j]

    here = dict(fit.columns(column, 6, workers=1))
    forked = dict(fit.columns(column, 6, workers=2))
    assert here == forked == {j: [j * j, -j] for j in range(1, 6)}
