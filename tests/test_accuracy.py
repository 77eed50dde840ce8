"""The accuracy ledger (``python -m study.accuracy``, docs/method.md#accuracy-ledger): its input
distributions and ulp arithmetic against values worked out by hand; its derived tables from a
hand-made accuracy.csv; the section and figure rendered from it; the command's refusals; the
tensor-core kernels TT and TX beside the study (registry, interpreter, and on a GPU their error).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import TEST_GPU, cli, refused

from study import arch, derive, report
from study import kernels as registry
from study.derive import accuracy as da
from study.measure import accuracy as acc
from study.predict import check
from study.rundata.gpu import GPU
from study.rundata.results import ResultsFile
from study.rundata.rundir import RunDir
from study.rundata.tables import T

REPO = Path(__file__).resolve().parent.parent
REPORT_FIXTURE = REPO / "tests" / "fixtures" / "report"


# --- the inputs and the ulp ------------------------------------------------------------------------


def _draw(dist: str, n: int = 256) -> torch.Tensor:
    return acc.draw(dist, n, n, torch.Generator().manual_seed(5), device="cpu")


def test_the_distributions_hold_what_they_say():
    u = _draw("uniform")
    assert u.dtype == torch.float32 and float(u.min()) >= 0 and float(u.max()) < 1
    w = _draw("wide").double()
    e = torch.log2(w.abs())
    assert float(e.min()) >= -20 and float(e.max()) <= 20 and float(e.max() - e.min()) > 38  # forty binades
    assert 0.4 < float((w < 0).double().mean()) < 0.6
    lb = _draw("lowbits")
    mag = lb.abs().double()
    assert float(mag.min()) >= 1 and float(mag.max()) <= 1 + 2**-10
    assert 0.4 < float((lb < 0).double().mean()) < 0.6
    # the values differ only below TF32's 10 mantissa bits: rounded to 10 bits (by hand: the 13 low
    # bits of the FP32 pattern cleared, half added first) nearly all land on 1 or 1 + 2^-10
    bits = lb.abs().view(torch.int32)
    tf32 = ((bits + (1 << 12)) & ~((1 << 13) - 1)).view(torch.float32).double()
    assert set(tf32.unique().tolist()) <= {1.0, 1 + 2**-10}
    assert float((mag - tf32).abs().max()) > 0  # and something is lost
    r = _draw("randn")
    assert abs(float(r.mean())) < 0.05 and 0.9 < float(r.std()) < 1.1


def test_an_unknown_distribution_is_refused():
    with pytest.raises(Exception, match="unknown distribution 'normal'"):
        _draw("normal")


def test_ulp32_by_hand():
    ref = torch.tensor([1.0, 3.0, 1e-3, -2.0, 2.0**-130], dtype=torch.float64)
    # 1 is in [1, 2): 2^-23; 3 in [2, 4): 2^-22; 1e-3 in [2^-10, 2^-9): 2^-33; |-2| in [2, 4): 2^-22;
    # 2^-130 is subnormal: the spacing there is 2^-149
    assert acc.ulp32(ref).tolist() == [2.0**-23, 2.0**-22, 2.0**-33, 2.0**-22, 2.0**-149]


def test_max_ulp_by_hand():
    ref = torch.tensor([[1.0, 3.0], [-2.0, 0.5]], dtype=torch.float64)
    out = torch.tensor([[1.0 + 2**-23, 3.0], [-2.0, 0.5 - 3 * 2**-25]], dtype=torch.float32)
    # 1 ulp at 1; at 0.5 the spacing is 2^-24, and 3 x 2^-25 is 1.5 of it
    assert acc.max_ulp(out, ref) == 1.5
    assert acc.max_ulp(torch.full((2, 2), math.nan), ref) == math.inf


def test_a_tensor_core_kernel_is_refused_without_tf32_tensor_cores_or_wgmma():
    tx, kx = registry.get("TX"), registry.get("KX")
    why = acc.refusal(tx, "7.5")
    assert "TX" in why and "7.5" in why and "sm_80" in why
    assert acc.refusal(tx, "8.0") is None and acc.refusal(tx, "9.0") is None
    assert acc.refusal(registry.get("K12"), "7.5") is None  # FP32 kernels run anywhere
    # KX's wgmma is sm_90a's alone: refused before and after Hopper
    for cc in ("8.0", "8.9", "10.0", "12.0"):
        why = acc.refusal(kx, cc)
        assert "KX" in why and "wgmma" in why and cc in why, cc
    assert acc.refusal(kx, "9.0") is None
    assert "sm_80" in acc.refusal(kx, "7.5")


def test_tf32_rates_give_the_whitepapers_peaks():
    # dense TF32 TFLOP/s of each flagship, from its architecture whitepaper
    for cc, sms, mhz, tflops in (("8.0", 108, 1410, 156.0), ("8.6", 82, 1695, 35.6), ("8.9", 128, 2520, 82.6),
                                 ("9.0", 132, 1830, 494.7)):
        rate = arch.get(cc).tf32_fma_per_sm_clk
        assert 2 * sms * rate * mhz * 1e6 / 1e12 == pytest.approx(tflops, rel=2e-3), cc
    assert not arch.has_tf32("7.5") and arch.has_tf32("8.0") and arch.has_tf32("sm_90")


# --- the registry: TT and TX beside the study -----------------------------------------------------


def test_tensor_core_kernels_are_beside_the_study():
    tc = {k.id for k in registry.TENSOR_CORE}
    assert tc == {"TT", "TX", "KX"}
    assert [registry.get(k).precision for k in ("TT", "TX", "KX")] == ["tf32", "tf32x3", "tf32x3"]
    assert tc <= set(registry.IDS)
    assert not tc & {k.id for k in registry.select(None)}  # a default run measures the study only
    assert not tc & {k.id for k in registry.tuned_kernels()}
    assert not any(check.predictable(k) for k in tc)  # the model has no tensor cores
    assert all(k.precision == "fp32" for k in registry.KERNELS)


INTERPRETED = """
import math, torch
from triton_kernels import tc_autotuned
a, b = torch.randn(48, 40), torch.randn(40, 72)
ref = a.double() @ b.double()
for fn in (tc_autotuned.matmul_tf32, tc_autotuned.matmul_tf32x3):
    out = torch.full((48, 72), math.nan)
    fn(a, b, out)
    print(fn.__name__, float((out.double() - ref).norm() / ref.norm()))
try:
    tc_autotuned.matmul_tf32x3(a, a)
except ValueError as e:
    print("refused", e)
"""


def test_tensor_core_kernels_in_the_interpreter():
    """TT and TX through their launchers (B's K-major copy among them) in Triton's interpreter, which
    multiplies in FP32 whatever the precision: the plumbing, not the arithmetic. In a process of its
    own: TRITON_INTERPRET=1 must be set before a kernel module is imported."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-c", INTERPRETED], capture_output=True, text=True, env=env,
                       timeout=600, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    got = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert float(got["matmul_tf32"]) < 1e-6 and float(got["matmul_tf32x3"]) < 1e-6
    assert "inner dimensions differ" in got["refused"]


def test_kx_sass_is_three_tf32_wgmma_per_8_k(tmp_path):
    """KX built for sm_90a: its main loop issues a k-tile's 32 values of k as 4 steps of 8, three
    products each (lo hi, hi lo, hi hi): 12 HGMMA.64x128x8.F32.TF32, and no FFMA; built for plain
    sm_90 it has no wgmma at all (the binding refuses it there)."""
    import subprocess

    from study.toolchain import sass, tools

    nvcc = tools.find_nvcc()
    if nvcc is None or tools.find_cuobjdump() is None:
        pytest.skip("needs nvcc and cuobjdump")
    src = REPO / "cuda_kernels" / "kx_tf32x3.cu"
    counts = {}
    for name, arch_flags in (("a", ["-gencode", "arch=compute_90a,code=sm_90a"]), ("plain", ["-arch=sm_90"])):
        out = tmp_path / f"kx_{name}.cubin"
        r = subprocess.run([nvcc, "-cubin", "-O3", "-std=c++17", *arch_flags, "-I", str(src.parent), "-o",
                            str(out), str(src)], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        instrs = sass.parse_sass(tools.run_cuobjdump(str(out), "-sass"))["kx_tf32x3"]
        loops = [instrs[s : e + 1] for s, e in sass.find_loops(instrs)]
        counts[name] = [[i.opcode for i in body] for body in loops if any(i.base == "HGMMA" for i in body)]
    (loop,) = counts["a"]  # one loop issues the products: the consumers' loop over k-tiles
    assert loop.count("HGMMA.64x128x8.F32.TF32") == 12 and sum(op.startswith("FFMA") for op in loop) == 0
    assert sum(op.startswith("FADD") for op in loop) == 64  # each k-tile's sums added to FP32: 128x128 / 256
    assert counts["plain"] == []


# --- the derived tables, against arithmetic by hand -------------------------------------------------

# (kernel, precision, role, dist, K, status, rel_err, max_ulp, ms)
ROWS = [
    ("K0", "fp32", "error", "randn", 256, "ok", 2e-7, 3.0, ""),
    ("K0", "fp32", "error", "randn", 4096, "ok", 1e-6, 40.0, ""),
    ("K0", "fp32", "error", "lowbits", 4096, "ok", 5e-7, 20.0, ""),
    ("K12", "fp32", "error", "randn", 256, "ok", 4e-7, 5.0, ""),
    ("K12", "fp32", "error", "randn", 4096, "ok", 3e-6, 50.0, ""),
    ("K12", "fp32", "error", "lowbits", 4096, "ok", 5e-7, 10.0, ""),
    ("K12", "fp32", "error", "uniform", 4096, "ok", 1e-7, 7.0, ""),  # no baseline there: no ratio
    ("TT", "tf32", "error", "randn", 256, "ok", 3e-4, 900.0, ""),
    ("TT", "tf32", "error", "randn", 4096, "ok", 8e-4, 8000.0, ""),
    ("TT", "tf32", "error", "lowbits", 4096, "ok", 1e-3, 9000.0, ""),
    ("TX", "tf32x3", "error", "randn", 256, "ok", 1e-7, 2.0, ""),
    ("TX", "tf32x3", "error", "randn", 4096, "wrong", "", "", ""),  # not finite: does not count
    ("TX", "tf32x3", "error", "randn", 4096, "ok", 2.5e-7, 9.0, ""),  # measured again: counts
    ("TX", "tf32x3", "error", "lowbits", 4096, "ok", 1.5e-6, 30.0, ""),
    ("K0", "fp32", "speed", "randn", 4096, "ok", 1e-6, "", 2.5, 1),
    ("K0L", "fp32", "speed", "randn", 4096, "ok", 1e-6, "", 2.0, 1),
    ("K12", "fp32", "speed", "randn", 4096, "ok", 1e-6, "", 2.2, 1),
    ("TT", "tf32", "speed", "randn", 4096, "ok", 8e-4, "", 0.5, 1),
    ("TX", "tf32x3", "speed", "randn", 4096, "ok", 2e-7, "", 1.25, 1),
    # a second pass: the vendor's best is K0 (2.4); TX 1.5; a third: K0L 2.1, TX 1.4
    ("K0", "fp32", "speed", "randn", 4096, "ok", 1e-6, "", 2.4, 2),
    ("K0L", "fp32", "speed", "randn", 4096, "ok", 1e-6, "", 2.6, 2),
    ("TX", "tf32x3", "speed", "randn", 4096, "ok", 2e-7, "", 1.5, 2),
    ("K0L", "fp32", "speed", "randn", 4096, "ok", 1e-6, "", 2.1, 3),
    ("TX", "tf32x3", "speed", "randn", 4096, "ok", 2e-7, "", 1.4, 3),
]


def write_fixture(path: Path) -> None:
    keys = ("kernel", "precision", "role", "dist", "K", "status", "rel_err", "max_ulp", "ms", "pass")
    f = ResultsFile(path, list(T.accuracy.columns))
    f.append_many({**dict(zip(keys, r)), "M": 4096 if r[2] == "speed" else 1024,
                   "N": 4096 if r[2] == "speed" else 1024, "gpu": "Test GPU", "commit": "abc"} for r in ROWS)


@pytest.fixture
def rows(tmp_path) -> pd.DataFrame:
    write_fixture(tmp_path / "accuracy.csv")
    return pd.read_csv(tmp_path / "accuracy.csv")


def test_ledger_by_hand(rows):
    led = da.ledger(rows)
    assert list(led.columns) == list(T.accuracy_ledger.columns)
    at = {(r["kernel"], r["dist"], r["K"]): r for r in led.to_dict("records")}
    assert at["K12", "randn", 4096]["vs_baseline"] == pytest.approx(3.0)  # 3e-6 / 1e-6
    assert at["TT", "lowbits", 4096]["vs_baseline"] == pytest.approx(2000.0)  # 1e-3 / 5e-7
    assert at["TX", "randn", 4096]["rel_err"] == 2.5e-7  # the later row
    assert at["TX", "randn", 4096]["vs_baseline"] == pytest.approx(0.25)
    assert list(dict.fromkeys(led["kernel"])) == ["K0", "K12", "TT", "TX"]  # the registry's order


def test_summary_by_hand(rows):
    s = da.summary(rows, GPU(**TEST_GPU)).set_index("kernel")
    assert list(s.reset_index().columns) == list(T.accuracy_summary.columns)
    flops = 2 * 4096**3
    # TX over its three passes: 1.25, 1.5, 1.4 ms, median 1.4; the best vendor per pass 2.0 (K0L),
    # 2.4 (K0), 2.1 (K0L): 1.6, 1.6, 1.5
    assert s.loc["TX", "ms"] == 1.4 and s.loc["TX", "tflops"] == pytest.approx(flops / 1.4e-3 / 1e12)
    assert s.loc["TX", "speedup_vs_vendor"] == pytest.approx(1.6)
    assert (s.loc["TX", "speedup_lo"], s.loc["TX", "speedup_hi"]) == (pytest.approx(1.5), pytest.approx(1.6))
    assert (s.loc["TX", "passes"], s.loc["TX", "verdict"]) == (3, "faster")
    assert s.loc["K12", "speedup_vs_vendor"] == pytest.approx(2.0 / 2.2)  # one pass
    assert (s.loc["K12", "passes"], s.loc["K12", "verdict"]) == (1, "one pass")
    # worst against the baseline: K12 3x (randn 4096), within 4: FP32-class; TT 2000x: not; TX 3x
    # (lowbits: 1.5e-6 / 5e-7)
    assert (s.loc["K12", "worst_vs_baseline"], s.loc["K12", "worst_dist"], s.loc["K12", "worst_K"]) == (
        pytest.approx(3.0), "randn", 4096)
    assert [s.loc[k, "fp32_class"] for k in ("K0", "K12", "TT", "TX")] == ["yes", "yes", "no", "yes"]
    assert s.loc["TX", "worst_dist"] == "lowbits" and math.isnan(s.loc["TX", "max_ulp_uniform"])  # none
    assert s.loc["K12", "max_ulp_uniform"] == 7.0
    assert s.loc["TX", "rel_err_randn"] == 2.5e-7  # randn at the middle K (4096 of 256, 4096)
    assert s.loc["K0L", "fp32_class"] == "" and math.isnan(s.loc["K0L", "worst_vs_baseline"])  # no errors


def test_fp32_kernels_take_their_speed_from_the_run(rows):
    """Without a speed row of its own K12's time is the run's main experiment's at the ledger's
    speed shape, against the vendor rows of the run's same passes; a kernel the run measured at
    another shape gets none. Passes 1, 2: K12 2.2, 2.3 ms; K0 2.5, 2.45; K0L 2.4, 2.6."""
    ledger_rows = rows[~((rows["kernel"] == "K12") & (rows["role"] == "speed"))]
    timed = ((1, "K12", 4096, 2.2), (2, "K12", 4096, 2.3), (1, "K0", 4096, 2.5), (2, "K0", 4096, 2.45),
             (1, "K0L", 4096, 2.4), (2, "K0L", 4096, 2.6), (1, "K15", 2048, 0.3))
    run = pd.DataFrame([{"experiment": "main", "label": "main", "pass": p, "kernel": k, "M": m, "N": 4096,
                         "K": 4096, "ms": ms} for p, k, m, ms in timed])
    s = da.summary(ledger_rows, GPU(**TEST_GPU), run).set_index("kernel")
    k12 = s.loc["K12"]
    assert (k12["speed_from"], k12["passes"], k12["ms"]) == ("run", 2, pytest.approx(2.25))
    # the run's best vendor: pass 1 K0L 2.4, pass 2 K0 2.45; over K12's 2.2 and 2.3
    assert (k12["speedup_lo"], k12["speedup_hi"]) == (pytest.approx(2.45 / 2.3), pytest.approx(2.4 / 2.2))
    assert k12["speedup_vs_vendor"] == pytest.approx((2.4 / 2.2 + 2.45 / 2.3) / 2)
    assert s.loc["TX", "speed_from"] == "ledger" and s.loc["K0", "speed_from"] == "ledger"
    assert "K15" not in s.index  # neither an error row nor a time at the ledger's shape


def test_the_ledger_times_the_tensor_core_and_vendor_kernels_by_default():
    timed = [k.id for k in registry.REGISTRY if acc.timed_here(k)]
    assert timed == ["K0", "K0L", "TT", "TX", "KX"]


def test_the_plan_measures_what_is_missing_in_its_order(tmp_path):
    found = {kid: (registry.get(kid), None) for kid in ("K0", "K12", "TX")}
    opts = acc.Options(tmp_path, list(found), ["randn", "wide"], [256, 4096], passes=3)
    done = {("K12", "error", "randn", "256", ""), ("K0", "error", "wide", "4096", ""),
            ("K12", "error", "wide", "4096", ""), ("TX", "error", "wide", "4096", ""),
            ("TX", "speed", "randn", "4096", "2")}
    todo = acc.plan(opts, found, done)
    assert todo == [
        ("error", ("randn", 256, ["K0", "TX"]), None), ("error", ("randn", 4096, ["K0", "K12", "TX"]), None),
        ("error", ("wide", 256, ["K0", "K12", "TX"]), None),  # wide 4096: all there
        ("speed", 1, "K0"), ("speed", 1, "TX"), ("speed", 2, "K0"),  # pass 2 reversed; TX's there
        ("speed", 3, "K0"), ("speed", 3, "TX"),
    ]
    every = acc.plan(acc.Options(tmp_path, list(found), ["randn"], [256], passes=1, speed_all=True), found,
                     set())
    assert [t[2] for t in every if t[0] == "speed"] == ["K0", "K12", "TX"]
    assert not [t for t in acc.plan(acc.Options(tmp_path, [], [], [], passes=0), found, set())]


def test_a_kernel_missing_a_point_is_not_called_fp32_class(rows):
    fewer = rows[~((rows["kernel"] == "K12") & (rows["dist"] == "lowbits"))]
    s = da.summary(fewer, GPU(**TEST_GPU)).set_index("kernel")
    assert s.loc["K12", "fp32_class"] == ""


def test_findings_by_hand(rows):
    f = da.findings(rows, GPU(**TEST_GPU)).set_index("id")
    # 132 SMs x 128 lanes x 2 x 1980 MHz; 132 x 1024 x 2 x 1980 MHz
    assert f.loc["fp32_peak", "value"] == pytest.approx(132 * 128 * 2 * 1.98e9 / 1e12)
    assert f.loc["tf32_peak", "value"] == pytest.approx(132 * 1024 * 2 * 1.98e9 / 1e12)
    assert f.loc["fp32_class", "value"] == 3 and f.loc["fp32_class", "where"] == "K0 K12 TX"
    assert f.loc["fastest_fp32_class", "where"] == "TX"
    assert f.loc["fastest_fp32_class", "value"] == pytest.approx(1.6)
    assert f.loc["fastest_fp32_class", "note"].endswith("1.50–1.60× over 3 passes: faster")


def test_tensor_core_ledger_by_hand():
    """KX (its tile and wgmma shape from its source) and TX (the tile its row's configuration ran)
    at 4096^3 on a GPU of 132 SMs at 1980 MHz (TF32: 1024 multiply-adds per SM per clock) and a copy
    roof of 4000 GB/s; KX's two passes 1.1 and 1.3 ms (median 1.2)."""
    cfg = '{"BM": 128, "BN": 64, "BK": 64, "num_warps": 8}'
    speed = [("KX", "tf32x3", 1, 1.1, ""), ("KX", "tf32x3", 2, 1.3, ""), ("TX", "tf32x3", 1, 1.7, cfg),
             ("K12", "fp32", 1, 2.6, "")]
    d = pd.DataFrame([{"kernel": k, "precision": p, "role": "speed", "dist": "randn", "M": 4096, "N": 4096,
                       "K": 4096, "pass": n, "status": "ok", "rel_err": 1e-7, "max_ulp": "", "ms": ms,
                       "config": c} for k, p, n, ms, c in speed])
    gpu = GPU(**{**TEST_GPU, "copy_gbps": 4000.0})
    t = da.tc_ledger(d, gpu).set_index("kernel")
    assert list(t.index) == ["TX", "KX"]  # tensor-core kernels only, the registry's order
    n, peak = 4096, 132 * 1024 * 2 * 1.98e9
    kx = t.loc["KX"]
    assert (kx["tile"], kx["products"], kx["ms"]) == ("128x128x32", 3, pytest.approx(1.2))
    assert kx["tc_floor_ms"] == pytest.approx(3 * 2 * n**3 / peak * 1e3)  # 0.770 ms
    assert kx["tc_share_pct"] == pytest.approx(100 * 3 * 2 * n**3 / peak * 1e3 / 1.2)
    assert kx["mma_per_output"] == pytest.approx(3 * (n / 8) / (64 * 128))  # 0.1875
    # the split: A and B read (4 bytes), their high and low parts written (8): 12 x 2 x 4096^2
    assert kx["prepass_mb"] == pytest.approx(12 * 2 * n * n / 1e6)
    assert kx["prepass_floor_ms"] == pytest.approx(12 * 2 * n * n / 4000e9 * 1e3)
    # 32 x 32 tiles x 128 k-tiles x (128 + 128) x 32 floats x 2 parts
    tile_bytes = 32 * 32 * 128 * 256 * 32 * 4 * 2
    assert kx["tile_gb"] == pytest.approx(tile_bytes / 1e9)
    rest_s = (1.2 - 12 * 2 * n * n / 4000e9 * 1e3) * 1e-3  # the time the split leaves
    assert kx["tile_tbps"] == pytest.approx(tile_bytes / rest_s / 1e12)
    tx = t.loc["TX"]
    assert (tx["tile"], tx["prepass"]) == ("128x64x64", "b_kmajor") and math.isnan(tx["mma_per_output"])
    assert tx["prepass_mb"] == pytest.approx(8 * n * n / 1e6)  # B read and written
    assert tx["tile_gb"] == pytest.approx(32 * 64 * 64 * (128 + 64) * 64 * 4 / 1e9)  # one part


def test_a_ledger_without_speed_rows_derives_its_errors_alone(rows):
    """``--no-speed``: the summary has every kernel's errors and no speed, the tensor-core ledger
    and the fastest FP32-class finding are empty; a configuration that is no JSON object leaves a
    tile unknown, never an error."""
    errors = rows[rows["role"] == "error"]
    s = da.summary(errors, GPU(**TEST_GPU)).set_index("kernel")
    assert s["ms"].isna().all() and (s["passes"] == 0).all() and (s["verdict"] == "").all()
    assert s.loc["TX", "fp32_class"] == "yes"
    assert da.tc_ledger(errors, GPU(**TEST_GPU)).empty
    assert "fastest_fp32_class" not in set(da.findings(errors, GPU(**TEST_GPU))["id"])
    bad = rows[(rows["kernel"] == "TX") & (rows["role"] == "speed")].assign(config="not json")
    t = da.tc_ledger(bad, GPU(**TEST_GPU)).set_index("kernel")
    assert t.loc["TX", "tile"] == "" and math.isnan(t.loc["TX", "tile_gb"])


def test_a_file_without_a_needed_column_is_refused(rows):
    with pytest.raises(Exception, match="missing column 'dist'"):
        da.summary(rows.drop(columns="dist"), GPU(**TEST_GPU))


# --- the report -------------------------------------------------------------------------------------


def test_the_section_and_figure_render_and_a_run_without_the_ledger_has_neither(tmp_path):
    out = tmp_path / "run"
    (out / "data").mkdir(parents=True)
    for name in ("results.csv", "gpu.json"):
        shutil.copy(REPORT_FIXTURE / name, out / "data" / name)
    bare = report.render(_derived(out)).read_text()
    assert "## Accuracy ledger" not in bare and "accuracy.png" not in bare
    write_fixture(out / "data" / T.accuracy.file)
    text = report.render(_derived(out)).read_text()
    sec = text.split("\n## Accuracy ledger\n", 1)[1].split("\n## ", 1)[0]
    for row in ("| TX | tf32x3 | 1.400 | 98.2 | 1.60× (1.50–1.60, 3: faster) | 2.50e-07 | 3.00× "
                "| lowbits K=4096 | – | yes | ledger |",
                "| TT | tf32 | 0.500 | 274.9 | 4.00× | 8.00e-04 | 2000.00× | lowbits K=4096 | – | no "
                "| ledger |",
                "| K12 | fp32 | 2.200 | 62.5 | 0.91× | 3.00e-06 | 3.00× | randn K=4096 | 7 | yes | ledger |"):
        assert row in sec, row
    assert "kernels whose error is FP32-class: **3** at K0 K12 TX" in sec
    assert "| TX | 1.00e-07 | 2.50e-07 | 1.50e-06 |" in sec  # randn 256, randn 4096, lowbits 4096
    assert (out / "figures" / "accuracy.png").is_file() and "![accuracy](figures/accuracy.png)" in sec


def _derived(out: Path) -> Path:
    derive.derive(RunDir(out), note=False)
    return out


# --- the command --------------------------------------------------------------------------------


@pytest.mark.parametrize("args,words", [
    ((), ("--out",)),
    (("--out", "{tmp}", "--kernels", "K99"), ("K99",)),
    (("--out", "{tmp}", "--dists", "normal"), ("normal", "randn")),
    (("--out", "{tmp}", "--ks", "0"), ("0",)),
    (("--out", "{tmp}", "--ks", "256,,4096"), ("--ks",)),
    (("--out", "{tmp}", "--passes", "0"), ("--passes",)),
    (("--out", "{tmp}", "--budget-s", "0"), ("--budget-s",)),
])
def test_bad_input_is_one_line(tmp_path, args, words):
    p = cli("study.accuracy", *(a.format(tmp=tmp_path / "o") for a in args))
    refused(p, *words)


def test_a_tensor_core_kernels_time_is_bounded_by_the_tf32_peak():
    """1.2 ms at 4096^3 is 115 TFLOP/s: above the Test GPU's FP32 peak (66.9), below its TF32 peak
    (535); 0.2 ms (687 TFLOP/s) is above both."""
    from study.derive import validate
    from study.errors import InputError

    base = {"experiment": "main", "label": "main", "M": 4096, "N": 4096, "K": 4096, "rel_err": 1e-7}
    gpu = GPU(**TEST_GPU)
    validate.check_rows(pd.DataFrame([{**base, "kernel": "KX", "ms": 1.2}]), gpu, "t")
    with pytest.raises(InputError, match="above the FP32 peak"):
        validate.check_rows(pd.DataFrame([{**base, "kernel": "K12", "ms": 1.2}]), gpu, "t")
    with pytest.raises(InputError, match="above the TF32 tensor-core peak"):
        validate.check_rows(pd.DataFrame([{**base, "kernel": "KX", "ms": 0.2}]), gpu, "t")


def test_the_model_refuses_the_tensor_core_kernels_in_one_line():
    for kid in ("KX", "TX"):
        refused(cli("study.predict", "--kernel", kid, "--shape", "4096,4096,4096"), kid, "tensor cores")


def test_the_study_run_leaves_the_tensor_core_kernels_to_this_command(tmp_path):
    p = cli("study.run", "--kernels", "K0,TX,KX", "--out", str(tmp_path / "o"))
    refused(p, "TX, KX", "study.accuracy")
    assert not (tmp_path / "o").exists()


def test_without_a_gpu_it_says_so(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is visible here")
    refused(cli("study.accuracy", "--out", str(tmp_path / "o")), "GPU")
    assert not (tmp_path / "o" / "data" / T.accuracy.file).exists()


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 4, 4), (130, 260, 36), (257, 128, 1028), (128, 384, 4096)])
def test_kx_on_the_gpu_at_ragged_shapes(shape):
    """KX against float64 where M, N, K are not multiples of its tile (the tensor copies fill the
    edges with zeros; the stores are guarded), NaN-poisoned output; and a refusal, not a launch,
    where N is not a multiple of 4."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("KX needs sm_90a")
    from study.measure import baseline, bench

    baseline.pin_fp32()
    launch = registry.get("KX").launcher
    assert bench.check(launch, *shape) <= 1e-5
    a, b = torch.randn(8, 8, device="cuda"), torch.randn(8, 6, device="cuda")
    with pytest.raises(ValueError, match="multiple of 4"):
        launch(a, b, torch.empty(8, 6, device="cuda"))


@pytest.mark.gpu
def test_on_the_gpu_tx_is_fp32_class_where_tt_is_not(tmp_path):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    out = tmp_path / "o"
    p = cli("study.accuracy", "--out", str(out), "--kernels", "K0,K12,TT,TX,KX", "--ks", "4096", "--no-speed")
    assert p.returncode == 0, p.stderr
    d = pd.read_csv(out / "data" / T.accuracy.file)
    assert set(d["status"]) == {"ok"} and len(d) == 5 * len(acc.DISTRIBUTIONS)
    led = da.ledger(d)
    worst = led.groupby("kernel")["vs_baseline"].max()
    for k in ("TX", "KX", "K12"):
        assert worst[k] <= da.FP32_CLASS_FACTOR, k
    assert worst["TT"] > 100  # one TF32 product: errors of TF32's 2^-11, not FP32's 2^-24
