"""python -m study.predict: bad input is one line and exit 2; a registered kernel and a kernel of
any .cu file are predicted from their SASS and launch alone (no GPU), and the arithmetic from the
loop's steady state to the time holds (trip count, waves, clock)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs_tools

ROOT = Path(__file__).resolve().parents[1]


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "study.predict", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("args, says", [
    (["--kernel", "K99", "--shape", "64,64,64"], "no such kernel"),
    (["--kernel", "K12", "--shape", "0,64,64"], "positive"),
    (["--kernel", "K12", "--shape", "64,64"], "--shape"),
    (["--kernel", "K6", "--shape", "4096,4097,4096"], "K6"),  # an N its 128-bit loads refuse
    (["--shape", "64,64,64"], "--kernel"),
    (["--cu", "missing.cu", "--symbol", "k", "--grid", "1,1", "--block", "32", "--shape", "1,1,1"],
     "missing.cu"),
    (["--cu", "cuda_kernels/k6_vectorized.cu", "--shape", "64,64,64"], "--symbol"),
    (["--kernel", "K12", "--shape", "64,64,64", "--gpu", "missing.json"], "missing.json"),
    (["--kernel", "K12", "--shape", "64,64,64", "--arch", "sm_1"], "sm_1"),
    (["--kernel", "K12"], "--shape"),
    (["--check", "no/such/dir"], "no data/results.csv"),
    (["--check", "reports", "--kernel", "K12"], "--check DIR takes no"),
    (["--compare", "K12", "--shape", "64,64,64"], "two kernel ids"),
    (["--compare", "K12,G12", "--kernel", "K12", "--shape", "64,64,64"], "takes no --kernel"),
    (["--compare", "K12,K99", "--shape", "64,64,64"], "no such kernel"),
    (["--kernel", "K12", "--shape", "64,64,64", "--config", "{}"], "K12 is not autotuned"),
    (["--kernel", "TA", "--shape", "64,64,64", "--config", '{"BM": 64'], "not JSON"),
    (["--kernel", "TA", "--shape", "64,64,64", "--config", "[64, 64]"], "a JSON object"),
    (["--check", "reports", "--config", "{}"], "--check DIR takes no"),
    (["--cu", "cuda_kernels/k6_vectorized.cu", "--symbol", "k", "--grid", "1,1", "--block", "32",
      "--shape", "64,64,64", "--config", "{}"], "--config goes with --kernel"),
])
def test_bad_input_is_one_line_and_exit_2(args, says):
    p = run(*args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in p.stderr


@needs_tools
def test_a_file_that_does_not_compile_or_lacks_the_symbol_is_one_line(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(float *c) { c[0] = undefined_name; }\n")
    p = run("--cu", str(bad), "--symbol", "k", "--grid", "1,1", "--block", "32", "--shape", "1,1,1")
    assert p.returncode == 2 and "nvcc failed" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = run("--cu", "cuda_kernels/k6_vectorized.cu", "--symbol", "nothing_like_it", "--grid", "1,1",
            "--block", "32", "--shape", "64,64,64")
    assert p.returncode == 2 and "k6_vectorized" in p.stderr


# one output per thread, a 16-wide K step staged in shared memory: a small SGEMM of its own
TOY = r"""
#define T 16
extern "C" __global__ void toy_sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  __shared__ float As[T][T], Bs[T][T];
  int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += T) {
    As[threadIdx.y][threadIdx.x] = A[r * K + k0 + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * N + c];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  C[r * N + c] = acc;
}
"""


# the same tile with its k loop left rolled two steps at a time (8 passes per tile), inside the
# loop over tiles that stages them: SGEMM's usual arguments
NESTED = TOY.replace("toy_sgemm(int M, int N, int K, const float *A",
                     "nested(int M, int N, int K, float alpha, const float *A").replace(
    "const float *B, float *C)", "const float *B, float beta, float *C)").replace(
    "#pragma unroll\n", "#pragma unroll 2\n")


def predict_cu(path: Path, source: str, symbol: str, n: int) -> dict:
    """``--cu`` on ``source`` written to ``path``: one 16 x 16 tile a block of 256 threads, n³."""
    path.write_text(source)
    p = run("--cu", str(path), "--symbol", symbol, "--grid", f"{n // 16},{n // 16}", "--block", "256",
            "--shape", f"{n},{n},{n}", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@needs_tools
def test_a_short_rolled_k_loop_is_played_inside_the_loop_over_tiles(tmp_path):
    """The tile loop runs K / 16 passes, each with the k loop's 8 passes of 2 FFMA written out:
    16 FFMA a pass, with the tile's loads, stores and barriers in the loop played."""
    n = 1024
    r = predict_cu(tmp_path / "nested.cu", NESTED, "nested", n)
    assert r["loop_ffma"] == 16 and r["trips"] == n // 16 and r["trips_from"] == "loop compare"
    # an argument list other than SGEMM's usual one: its compare is not played, the FFMAs count
    q = predict_cu(tmp_path / "other.cu", NESTED.replace("int M, int N, int K, float alpha,",
                                                         "float alpha, int M, int N, int K,"), "nested", n)
    assert q["trips_from"] == "FFMAs" and q["loop_ffma"] == 2


@needs_tools
def test_any_cu_kernel_is_predicted_from_its_sass_and_launch(tmp_path):
    n = 1024
    r = predict_cu(tmp_path / "toy.cu", TOY, "toy", n)
    # the k loop unrolled (16 FFMA), and the K-tile loop too, as nvcc chooses
    assert r["loop_ffma"] % 16 == 0
    assert r["trips"] == pytest.approx(n**3 / ((n // 16) ** 2 * 256 * r["loop_ffma"]))
    gpu = json.loads((ROOT / "reports" / "data" / "gpu.json").read_text())
    resident, blocks = r["blocks_per_sm"], (n // 16) ** 2
    assert r["waves"] == -(-blocks // (resident * gpu["sms"]))
    # the whole waves at the loop's pace with every SM full; the blocks left over them spread over
    # the SMs, the SM with the most setting the last wave's pace
    whole, left = divmod(blocks, resident * gpu["sms"])
    last = -(-left // gpu["sms"]) if whole and left else resident
    assert r["last_wave_blocks_per_sm"] == last
    if last == resident:
        assert r["last_wave_cycles_per_iteration"] == r["cycles_per_iteration"]
    cycles = (r["waves"] - 1) * r["cycles_per_iteration"] + r["last_wave_cycles_per_iteration"]
    expect_ms = r["trips"] * cycles / (gpu["sm_clock_mhz"] * 1e3)
    assert r["ms"] == pytest.approx(r["launch_ms"] + max(expect_ms, r["dram_ms"]))
    assert r["gflops"] == pytest.approx(2 * n**3 / (r["ms"] * 1e-3) / 1e9)
    assert 0 < r["issue_pct"] <= 100 and r["bound"]


@needs_tools
def test_a_last_wave_of_few_blocks_runs_at_its_own_residency(tmp_path):
    """33 x 33 blocks of the toy: the SMs hold resident x 132 at once (8 x 132 = 1056 with 256
    threads, 2 KB of shared memory and few registers a block), so one whole wave and 33 blocks
    left, at most one a SM. The last wave's loop is played for one block an SM: its pass takes
    fewer cycles than a pass of 8 blocks sharing the schedulers, and the time adds the two."""
    path = tmp_path / "toy.cu"
    path.write_text(TOY)
    p = run("--cu", str(path), "--symbol", "toy", "--grid", "33,33", "--block", "256",
            "--shape", "528,528,1024", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    gpu = json.loads((ROOT / "reports" / "data" / "gpu.json").read_text())
    assert r["blocks_per_sm"] == 8 and r["waves"] == 2
    assert r["last_wave_blocks_per_sm"] == 1
    assert r["last_wave_cycles_per_iteration"] < r["cycles_per_iteration"]
    cycles = r["cycles_per_iteration"] + r["last_wave_cycles_per_iteration"]
    compute_ms = r["trips"] * cycles / (gpu["sm_clock_mhz"] * 1e3)
    assert r["ms"] == pytest.approx(r["launch_ms"] + max(compute_ms, r["dram_ms"]))


@needs_tools
def test_a_registered_kernel_is_predicted_from_its_registration(tmp_path):
    p = run("--kernel", "K10", "--shape", "4096,4096,4096")
    assert p.returncode == 0, p.stderr
    line = p.stdout.strip()
    assert line.startswith("K10 at 4096x4096x4096: ") and " ms, " in line and "issue " in line
    assert "not modelled: " in line  # what the prediction leaves out is said with it


@needs_tools
def test_a_balanced_kernel_is_one_wave_of_a_block_per_sm():
    """KD's tiled path (SGEMM_BALANCED: a block per SM, each with an even share of the units) is
    priced as one wave of a block per SM at 32 x 6144 x 4096, each block running an even share of
    the loop trips of its 43 tiles of 32 x 144 (6192 columns: the last tile runs whole), where a
    block per tile would be 43 blocks on 132 SMs."""
    M, N, K = 32, 6144, 4096
    p = run("--kernel", "KD", "--shape", f"{M},{N},{K}", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    gpu = json.loads((ROOT / "reports" / "data" / "gpu.json").read_text())
    assert r["grid"] == [gpu["sms"], 1, 1] and r["waves"] == 1 and r["blocks_per_sm"] == 1
    assert r["trips"] == pytest.approx(32 * 43 * 144 * K / (gpu["sms"] * 256 * r["loop_ffma"]))


@needs_tools
@pytest.mark.parametrize("M, blocks", [(1, 224), (4, 448)])
def test_a_streaming_launch_is_predicted_with_the_splits_it_makes(M, blocks):
    """KD's streaming path at M x 3584 x 18944 (Qwen2.5-7B's down projection): 56 tiles of 64
    columns, and K split until 48 KiB of loads are in flight per SM on the 132 SMs: at M = 1 a
    block keeps 128 threads x 4 x 4 loads of 16 bytes = 32 KiB in flight, so 198 blocks, 4 splits,
    224 blocks; at M = 4, 16 KiB a block, 396 blocks, 8 splits, 448; the registration alone says 56."""
    p = run("--kernel", "KD", "--shape", f"{M},3584,18944", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["grid"] == [blocks, 1, 1] and r["waves"] == 1


@needs_tools
def test_a_tiled_triton_kernel_is_predicted_from_its_tile():
    """G12: one program per 128 x 256 tile of C, compiled here (Triton's AOT) as the SASS table
    compiles it: 512 programs at 4096^3. Its loop's compare allows one pass fewer than the FFMAs
    of a tile count (4096^3 / 512 / 256 threads over the loop's): the last pass's FFMAs run after
    the loop, as the code around it."""
    pytest.importorskip("triton")
    n = 4096
    p = run("--kernel", "G12", "--shape", f"{n},{n},{n}", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["grid"] == [(n // 128) * (n // 256), 1, 1] and r["threads"] == 256
    assert r["trips_from"] == "loop compare"
    assert r["trips"] == pytest.approx(n**3 / (r["grid"][0] * 256 * r["loop_ffma"]) - 1)
    assert 0 < r["issue_pct"] <= 100


@needs_tools
def test_an_autotuned_kernel_is_predicted_at_the_configuration_given():
    """TA at one token on an 18944-wide B: the 16 x 64 tile a run timed there and the 256 x 64 tile
    of 4096^3 are both 18944 / 64 = 296 programs, of 2 and of 8 warps; the wide tile computes 256
    rows for the one of A, the narrow one 16."""
    pytest.importorskip("triton")
    narrow = {"BM": 16, "BN": 64, "BK": 32, "GROUP_M": 8, "num_warps": 2, "num_stages": 5}
    wide = {"BM": 256, "BN": 64, "BK": 32, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}
    got = {}
    for name, cfg in (("narrow", narrow), ("wide", wide)):
        p = run("--kernel", "TA", "--shape", "1,18944,3584", "--config", json.dumps(cfg), "--json")
        assert p.returncode == 0, p.stderr
        got[name] = json.loads(p.stdout)
        assert got[name]["config"] == cfg
    assert (got["narrow"]["grid"][0], got["narrow"]["threads"]) == (296, 64)
    assert (got["wide"]["grid"][0], got["wide"]["threads"]) == (296, 256)
    assert got["narrow"]["ms"] < got["wide"]["ms"]


def test_check_compiles_an_autotuned_kernel_at_the_configuration_each_row_timed():
    """A run's rows carry TA's configuration per shape: --check predicts each shape at the
    configuration timed there, a kernel with no configuration at None."""
    import pandas as pd

    from study.predict import check

    cfg = {4096: '{"BM": 256, "BN": 64}', 1: '{"BM": 16, "BN": 64}'}
    results = pd.DataFrame({
        "kernel": ["TA", "TA", "TA", "K12"], "M": [4096, 4096, 1, 4096], "N": [4096, 4096, 18944, 4096],
        "K": [4096, 4096, 3584, 4096], "ms": [3.0, 3.2, 0.1, 2.6], "ld": [None] * 4,
        "config": [cfg[4096], cfg[4096], cfg[1], None]})
    times = check.measured_times(results)
    assert len(times) == 3
    seen = {}

    def one(kid, shape, loops, config):
        seen[(kid, shape[0])] = config
        return {"ms": 1.0, "issue_pct": 80.0, "bound": "issue"}

    rows = check.run(times, one, lambda r: None)
    assert seen == {("TA", 4096): {"BM": 256, "BN": 64}, ("TA", 1): {"BM": 16, "BN": 64}, ("K12", 4096): None}
    assert {r["kernel"]: r["measured_ms"] for r in rows if r["shape"][0] == 4096} == {"TA": 3.1, "K12": 2.6}
    assert next(r for r in rows if r["shape"][0] == 1)["config"] == {"BM": 16, "BN": 64}


@needs_tools
def test_the_passes_of_a_triton_loop_compiled_for_one_row_follow_k_not_its_ffmas():
    """G10 compiled for M = 1 merges the rows a thread owns (M is a constant to Triton): its loop
    holds 16 times fewer FFMAs than at 4096^3, but each pass still covers the same k. Its passes
    come from the loop's compare: K over the k of a pass at 4096^3, not the FFMAs' count."""
    pytest.importorskip("triton")
    big, one = ({**json.loads(run("--kernel", "G10", "--shape", shape, "--json").stdout)}
                for shape in ("4096,4096,4096", "1,18944,3584"))
    assert big["trips_from"] == one["trips_from"] == "loop compare"
    assert big["loop_ffma"] == 16 * one["loop_ffma"]
    assert one["trips"] == pytest.approx(big["trips"] * 3584 / 4096)
    # the FFMAs' count: a 256 x 128 tile (its rows past M = 1 run too) over 256 threads' FFMAs
    by_ffma = 256 * 128 * 3584 / (256 * one["loop_ffma"])
    assert by_ffma == pytest.approx(16 * one["trips"])


def test_check_sets_each_prediction_beside_the_runs_time_and_summarises(tmp_path, monkeypatch):
    """study.predict.check on a stand-in predictor: the error of each row, the per-shape summary,
    and a step and a twin ratio at the main shape worked out by hand."""
    import pandas as pd

    from study.errors import InputError
    from study.predict import check

    results = pd.DataFrame({
        "kernel": ["K11", "K11", "K12", "G12", "K12", "K0"],
        "M": [4096] * 4 + [1, 4096], "N": [4096] * 4 + [18944, 4096], "K": [4096] * 4 + [3584, 4096],
        "ms": [3.0, 3.2, 2.5, 2.9, 0.6, 2.7], "ld": [None] * 6})
    times = check.measured_times(results)
    assert times.set_index("kernel").loc["K11", "ms"] == pytest.approx(3.1)  # the median of its rows
    predicted = {("K11", 4096): 2.9, ("K12", 4096): 2.6, ("G12", 4096): 3.2}

    def one(kid, shape, loops, config):
        if (kid, shape[0]) not in predicted:
            raise InputError(f"{kid}: nothing to predict from")
        return {"ms": predicted[(kid, shape[0])], "issue_pct": 80.0, "bound": "issue"}

    got = []
    rows = check.run(times, one, got.append)
    assert rows == got and {r["kernel"] for r in rows} == {"K11", "K12", "G12"}  # K0: cuBLAS, not predicted
    by = {(r["kernel"], r["shape"][0]): r for r in rows}
    assert by[("K12", 4096)]["error_pct"] == pytest.approx(100 * (2.6 / 2.5 - 1))
    assert "nothing to predict from" in by[("K12", 1)]["error"]
    s = check.summary(rows)
    main = next(r for r in s if r["summary"] == "shape" and r["shape"] == [4096, 4096, 4096])
    errs = [abs(100 * (2.9 / 3.1 - 1)), abs(100 * (2.6 / 2.5 - 1)), abs(100 * (3.2 / 2.9 - 1))]
    assert main["mean_abs_error_pct"] == pytest.approx(sum(errs) / 3) and main["outside_10"] == ["G12"]
    step = next(r for r in s if r["summary"] == "step" and r["a"] == "K12")
    assert (step["measured"], step["predicted"]) == (pytest.approx(3.1 / 2.5), pytest.approx(2.9 / 2.6))
    twin = next(r for r in s if r["summary"] == "twin" and r["a"] == "G12" and r["b"] == "K12")
    assert twin["measured"] == pytest.approx(2.5 / 2.9) and twin["predicted"] == pytest.approx(2.6 / 3.2)
    assert "measured 1.240x" in check.line(step)


def test_check_sets_the_error_at_the_clock_a_kernel_ran_at_beside_its_error():
    """A point the GPU ran below 99% of its max clock (1980 MHz here): its loop's 9.9 ms at 1980
    MHz take 9.9 x 1980 / 1800 = 10.89 ms at 1800, plus the launch's 0.1, against 11.0 measured:
    -0.1% where the prediction says -9.1%. A DRAM-bound one keeps its DRAM time; one at 1975 MHz
    is not held back."""
    import pandas as pd

    from study.predict import check

    times = pd.DataFrame({"kernel": ["K6", "KD", "K5"], "M": [8192] * 3, "N": [8192] * 3,
                          "K": [8192] * 3, "ms": [11.0, 5.0, 10.0]})
    preds = {"K6": (9.9, 1.0, 10.0), "KD": (3.0, 4.9, 5.0), "K5": (9.9, 1.0, 10.0)}  # compute, DRAM, ms

    def one(kid, shape, loops, config):
        compute, dram, ms = preds[kid]
        return {"ms": ms, "compute_ms": compute, "dram_ms": dram, "launch_ms": 0.1, "issue_pct": 60.0,
                "bound": "issue"}

    clocks = check.sampled_clocks(pd.DataFrame({
        "kernel": ["K6", "K6", "K6", "KD", "K5"], "M": [8192] * 5, "N": [8192] * 5, "K": [8192] * 5,
        "sm_clock_mhz": [1800, 1785, 1815, 1700, 1975]}))
    assert clocks[("K6", 8192, 8192, 8192)] == 1800
    rows = {r["kernel"]: r for r in check.run(times, one, lambda r: None, clocks, 1980.0)}
    assert rows["K6"]["error_pct"] == pytest.approx(100 * (10.0 / 11.0 - 1))
    assert rows["K6"]["error_at_clock_pct"] == pytest.approx(100 * ((0.1 + 9.9 * 1980 / 1800) / 11.0 - 1))
    assert rows["KD"]["error_at_clock_pct"] == pytest.approx(100 * ((0.1 + 4.9) / 5.0 - 1))  # 3.49 < 4.9
    assert "clock_mhz" not in rows["K5"]
    assert "ran at 1800 MHz, at which -0.1%" in check.line(rows["K6"])
    shape = next(r for r in check.summary(list(rows.values())) if r["summary"] == "shape")
    at_clock = [abs(rows["K6"]["error_at_clock_pct"]), 0.0, 0.0]
    assert shape["held_back"] == ["K6", "KD"]
    assert shape["mean_abs_error_at_clock_pct"] == pytest.approx(sum(at_clock) / 3)


def test_check_takes_the_decode_panels_points_and_sums_them_up_per_kernel():
    """The panel's timed points of registered kernels (not the read roof, the operator or a wrong
    row), in ms, predicted like a run's and summed up per kernel apart from the per-shape lines."""
    import pandas as pd

    from study.errors import InputError
    from study.predict import check

    decode = pd.DataFrame({
        "shape": ["o"] * 6, "N": [4096] * 6, "K": [4096] * 6,
        "M": [1, 1, 1, None, 2, 2], "kernel": ["KD", "OP", "K0", "read", "KD", "TD"],
        "status": ["ok", "ok", "ok", "ok", "ok", "wrong"],
        "gpu_us": [20.0, 19.0, 21.0, 24.0, 25.0, None]})
    times = check.panel_times(decode)
    assert sorted(zip(times["kernel"], times["M"])) == [("K0", 1), ("KD", 1), ("KD", 2)]
    assert times.set_index(["kernel", "M"]).loc[("KD", 2), "ms"] == pytest.approx(0.025)
    assert set(times["source"]) == {check.PANEL}
    predicted = {1: 0.022, 2: 0.020}  # KD only: +10% at M = 1, -20% at M = 2

    def one(kid, shape, loops, config):
        if kid != "KD":
            raise InputError(f"{kid}: nothing to predict from")
        return {"ms": predicted[shape[0]], "issue_pct": 50.0, "bound": "dram"}

    rows = check.run(times, one, lambda r: None)
    assert {r["kernel"] for r in rows} == {"KD"} and all(r["source"] == check.PANEL for r in rows)
    s = check.summary(rows)
    assert not [r for r in s if r["summary"] == "shape"]  # the panel's points are not shapes of the run
    kd = next(r for r in s if r["summary"] == check.PANEL and r["kernel"] == "KD")
    assert (kd["points"], kd["predicted"], kd["outside_15"]) == (2, 2, 1)
    assert kd["mean_abs_error_pct"] == pytest.approx(15.0) and kd["max_abs_error_pct"] == pytest.approx(20.0)
    assert kd["worst"] == [2, 4096, 4096]
    assert "2 of 2 points" in check.line(kd) and "outside ±15%: 1" in check.line(kd)


def test_the_distance_from_a_shared_load_to_its_first_use():
    """LDS.128 R4 writes R4-R7: the FFMA reading R6 three instructions later is its first use; a
    load whose result the loop never reads has no distance."""
    from study.predict import compare
    from study.toolchain.sass import Instr

    body = [Instr(0, "LDS.128", "R4, [R2]"), Instr(16, "FFMA", "R0, R1, R3, R0"),
            Instr(32, "IADD3", "R8, R8, 0x1, RZ"), Instr(48, "FFMA", "R0, R6.reuse, R3, R0"),
            Instr(64, "LDS", "R20, [R2+0x4]"), Instr(80, "BRA", "0x0")]
    assert compare.lds_distances(body) == [3]


@needs_tools
def test_compare_splits_the_gap_by_the_models_costs():
    p = run("--compare", "K6,K7", "--shape", "4096,4096,4096", "--json")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert {(r["kernel"], r["variant"]) for r in rows} == {
        (k, v) for k in ("K6", "K7") for v in ("full model", "register banks free", "shared-load latency 0")}
    by = {(r["kernel"], r["variant"]): r for r in rows}
    # switching a cost off does not make the loop slower, but for the order the warps then issue
    # in: a list schedule is not monotone (K7 with the shared loads' latency at 0 plays a little slower
    # under the H200's constants), so within 1%
    for k in ("K6", "K7"):
        assert by[(k, "register banks free")]["ms"] <= 1.01 * by[(k, "full model")]["ms"]
        assert by[(k, "shared-load latency 0")]["ms"] <= 1.01 * by[(k, "full model")]["ms"]
    # the unit's cycles hold at least the shared loads' wavefronts worked out from the sources in
    # tests/test_lanes.py (K6 8 per 32 FFMA, K7 20 per 64), plus the global loads and stores
    assert by[("K6", "full model")]["unit_cycles_per_ffma"] >= 8 / 32
    assert by[("K7", "full model")]["unit_cycles_per_ffma"] >= 20 / 64


def test_check_says_when_the_triton_here_is_not_the_runs():
    """A run whose Triton rows name 3.6.0, checked where Triton is 3.9.0 or missing: one row that
    says so; checked with 3.6.0, or a run with no Triton rows: none."""
    import pandas as pd

    from study.predict import check

    rows = pd.DataFrame({"kernel": ["K12", "G12", "TA"], "impl": ["cuda", "triton", "triton"],
                         "triton": ["3.6.0"] * 3})
    note = check.toolchain(rows, "3.9.0")
    assert (note["triton_here"], note["triton_run"]) == ("3.9.0", ["3.6.0"])
    assert "Triton here: 3.9.0; the run's Triton rows: 3.6.0" in check.line(note)
    assert "Triton here: none" in check.line(check.toolchain(rows, None))
    assert check.toolchain(rows, "3.6.0") is None
    assert check.toolchain(rows[rows["impl"] == "cuda"], "3.9.0") is None
