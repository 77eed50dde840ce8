"""The stride experiment at 4100 and on padded storage, and the two edge schemes of the Triton kernel.

CPU only: the edge schemes run under the Triton interpreter (in a child process, since
``TRITON_INTERPRET=1`` must be set before a kernel module is imported) and compile ahead of time
for sm_90; the experiment's points, the measuring memo and the report are checked on invented rows.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from study import derive, experiments, kernels, report
from study.derive import validate
from study.errors import InputError
from study.measure import plan as measure
from study.rundata import results
from study.rundata.rundir import RunDir

ROOT = Path(__file__).resolve().parents[1]
REPORT_FIXTURE = ROOT / "tests" / "fixtures" / "report"
STRIDE_FIXTURE = ROOT / "tests" / "fixtures" / "strides"
# (M, N, K) across tile edges: odd everything, a single row with K below one K tile, K a whole
# number of 32-wide K tiles (EVEN_K) with odd M and N
SHAPES = [(33, 65, 17), (1, 67, 5), (37, 70, 64)]
# the twins' tiles and one of TA's (grouped program order): (BM, BN, BK, num_warps, num_stages, GROUP_M)
TILES = [(32, 32, 32, 4, 1, 1), (32, 128, 32, 4, 3, 1), (64, 64, 32, 4, 3, 8)]
LD_PAD = 80  # a leading dimension longer than every row of SHAPES


# --------------------------------------------------------------------------------------------
# The edge schemes under the interpreter (child process)
# --------------------------------------------------------------------------------------------


def _interpreted() -> list[dict]:
    import torch

    from triton_kernels import t4_reg_tile_1d, tile

    assert os.environ.get("TRITON_INTERPRET") == "1"
    gen = torch.Generator().manual_seed(7)
    out_rows = []

    def padded(t):  # t's values on rows LD_PAD elements apart, the padding NaN
        buf = torch.full((t.shape[0], LD_PAD), float("nan"))
        buf[:, : t.shape[1]] = t
        return buf[:, : t.shape[1]]

    for M, N, K in SHAPES:
        a = torch.randn(M, K, generator=gen)
        b = torch.randn(K, N, generator=gen)
        ref = a.double() @ b.double()
        for storage in ("contiguous", "padded"):
            x, y = (a, b) if storage == "contiguous" else (padded(a), padded(b))
            for bm, bn, bk, warps, stages, group in TILES:
                outs = {}
                for mask in (True, False):
                    out = torch.full((M, N), float("nan")) if storage == "contiguous" else padded(
                        torch.full((M, N), float("nan")))
                    tile.launch_tiled(x, y, out, BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages,
                                      group_m=group, mask_mn=mask)
                    outs[mask] = out
                pad_untouched = True
                if storage == "padded":
                    base = outs[True].as_strided((M, LD_PAD), (LD_PAD, 1), outs[True].storage_offset())
                    pad_untouched = bool(torch.isnan(base[:, N:]).all())
                err = {m: float(torch.linalg.norm(o.double() - ref) / torch.linalg.norm(ref))
                       for m, o in outs.items()}
                out_rows.append(dict(shape=[M, N, K], storage=storage,
                                     tile=[bm, bn, bk, warps, stages, group],
                                     identical=bool(torch.equal(outs[True], outs[False])),
                                     err_mask=err[True], err_wrap=err[False], pad_untouched=pad_untouched))
        # a twin's launcher takes the scheme too, and None is the module default
        d = t4_reg_tile_1d.matmul(a, b, mask_mn=None)
        e = t4_reg_tile_1d.matmul(a, b, mask_mn=tile.MASK_MN)
        out_rows.append(dict(shape=[M, N, K], storage="default", identical=bool(torch.equal(d, e))))
    return out_rows


@pytest.fixture(scope="module")
def interpreted():
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    done = subprocess.run([sys.executable, __file__, "--interpret"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"interpreter run failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_both_edge_schemes_give_identical_results(interpreted):
    runs = [r for r in interpreted if r["storage"] != "default"]
    assert len(runs) == len(SHAPES) * 2 * len(TILES)
    for r in runs:
        assert r["identical"], r  # each output sums the same products in the same order
        assert r["err_mask"] <= 1e-5 and r["err_wrap"] <= 1e-5, r
        assert r["pad_untouched"], r  # nothing written past the end of a row of C


def test_a_launcher_without_a_scheme_takes_the_module_default(interpreted):
    assert all(r["identical"] for r in interpreted if r["storage"] == "default")


def test_the_scheme_argument_is_checked():
    from triton_kernels import tile

    assert tile.edge_scheme(None) is tile.MASK_MN
    assert tile.edge_scheme(True) is True and tile.edge_scheme(False) is False
    with pytest.raises(ValueError, match="mask_mn"):
        tile.edge_scheme(1)


def test_ta_candidates_carry_the_default_scheme_and_its_aot_spec_takes_another():
    from triton_kernels import ta_autotuned as ta
    from triton_kernels import tile

    assert {c.kwargs["MASK_MN"] for c in ta.CONFIGS} == {tile.MASK_MN}
    assert ta.config_dict(ta.CONFIGS[0])["MASK_MN"] is tile.MASK_MN
    cfg = dict(ta.DEFAULT_CONFIG)
    assert ta.aot_spec(config=cfg).args["MASK_MN"] is tile.MASK_MN
    assert ta.aot_spec(config={**cfg, "MASK_MN": not tile.MASK_MN}).args["MASK_MN"] is (not tile.MASK_MN)
    assert ta.aot_spec(config=cfg, mask_mn=True).args["MASK_MN"] is True
    spec = ta.aot_spec(config=cfg, shape=(4097, 4097, 4097), ld=4112)
    assert (spec.args["stride_am"], spec.args["stride_bk"], spec.args["stride_cm"]) == (4112, 4112, 4112)
    assert (spec.args["stride_ak"], spec.args["stride_bn"], spec.args["stride_cn"]) == (1, 1, 1)
    with pytest.raises(ValueError, match="shorter than a row"):
        ta.aot_spec(config=cfg, shape=(4097, 4097, 4097), ld=4096)


# --------------------------------------------------------------------------------------------
# SASS of both schemes (AOT for sm_90, no GPU)
# --------------------------------------------------------------------------------------------


def _has_aot() -> bool:
    from study.toolchain import tools

    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return tools.find_cuobjdump() is not None


needs_aot = pytest.mark.skipif(
    not _has_aot(),
    reason="needs triton and cuobjdump to compile the Triton kernels ahead of time and dump them",
)


def _loop(mod: str, shape, mask: bool, stages: int) -> dict:
    import importlib

    from study.toolchain import tools
    from study.toolchain.sass import histogram, main_loop, parse_sass
    from triton_kernels.aot import compile_sass_target

    module = importlib.import_module(f"triton_kernels.{mod}")
    spec = module.aot_spec(num_stages=stages, shape=shape, mask_mn=mask)
    k = compile_sass_target(spec, arch=90)
    h = histogram(main_loop(parse_sass(tools.run_cuobjdump(k.cubin, "-sass"))[k.name]))
    glob = {op: h.get(op, 0) for op in ("LDG32", "LDG64", "LDG128")}
    return {**glob, "LDGSTS": h["LDGSTS"], "FFMA": h["FFMA"], "total": h["total"]}


@needs_aot
@pytest.mark.parametrize("mask", [True, False], ids=["masked", "wrapped"])
def test_both_schemes_load_128_bits_at_4096_and_32_at_4097(mask):
    """T5's 32x128x32 tile on 4 warps: per thread per K tile A is 32*32/128 = 8 floats and B
    32*128/128 = 32, so 2 + 8 = 10 LDG.128 where the strides are multiples of 16, and 4 * 10 = 40
    LDG.32 at 4097, whichever the edge scheme: the width follows the strides, not the masks.
    T4's 32x32x32 tile on 4 warps: 8 + 8 floats, 4 LDG.128 or 16 LDG.32."""
    for mod, per_thread in (("t5_reg_tile_2d", 32 * 32 // 128 + 32 * 128 // 128),
                            ("t4_reg_tile_1d", 32 * 32 // 128 + 32 * 32 // 128)):
        aligned = _loop(mod, (4096,) * 3, mask, 1)
        odd = _loop(mod, (4097,) * 3, mask, 1)
        widths = (aligned["LDG128"], aligned["LDG64"], aligned["LDG32"])
        assert widths == (per_thread // 4, 0, 0), (mod, aligned)
        assert (odd["LDG128"], odd["LDG64"], odd["LDG32"]) == (0, 0, per_thread), (mod, odd)
        assert aligned["FFMA"] == odd["FFMA"] > 0


@needs_aot
def test_masks_cost_main_loop_instructions_at_4096():
    """What the SASS says, and why it does not decide ``tile.MASK_MN`` (True, from timing): at
    4096^3, where masks change no load width, the masked T5 and T4 tiles execute more main-loop
    instructions per FFMA than the wrapped ones, yet on the GPU the two run within 2% there and
    the wrapped one is 2-5x slower at 4097 (tile's docstring)."""
    from triton_kernels import tile

    assert tile.MASK_MN is True
    for mod in ("t5_reg_tile_2d", "t4_reg_tile_1d"):
        masked, wrapped = (_loop(mod, (4096,) * 3, m, 1) for m in (True, False))
        assert masked["total"] / masked["FFMA"] > wrapped["total"] / wrapped["FFMA"], (mod, masked, wrapped)


# --------------------------------------------------------------------------------------------
# The experiment's points
# --------------------------------------------------------------------------------------------


def test_the_stride_points_hold_4100_and_the_padded_remedy():
    pts = experiments.all_points("strides")
    assert [(p.M, p.N, p.K) for p in pts] == [(4096,) * 3, (4097,) * 3, (4100,) * 3, (4097,) * 3]
    assert [p.ld for p in pts] == [None, None, None, (4097 + 15) // 16 * 16]
    assert pts[3].ld == 4112 and pts[3].ld % 16 == 0 and pts[3].ld - 16 < 4097
    assert 4100 % 4 == 0 and 4100 % 16 != 0  # what the point is for
    assert len({p.label for p in pts}) == 4 and "ld=4112" in pts[3].label
    # the pair every comparison is made against stays the pair
    assert [p.label for p in experiments.points("strides")] == ["n=4096", "n=4097"]
    from study.derive.selection import stride_labels

    assert stride_labels() == ("n=4096", "n=4097")
    assert experiments.stride_extras() == tuple(pts[2:])
    assert experiments.stride_shapes(kernels.KERNELS) == [(4096,) * 3, (4097,) * 3, (4100,) * 3]
    assert experiments.padded_ld(4096) == 4096 and experiments.padded_ld(1) == 16


def test_who_runs_the_padded_point():
    padded = experiments.stride_extras()[1]
    for k in kernels.KERNELS:
        shape = experiments.shape_for(k, padded)
        if k.impl == "cuda" or k.id == "K0L":  # K0L's cuBLASLt plan is made for row-major operands
            assert shape is None and "contiguous operands only" in experiments.refusal(k, padded)
        else:  # on the padded rows; a kernel with 128-bit loads at the next multiple of 4
            assert experiments.refusal(k, padded) is None
            n = 4100 if k.multiple_of != (1, 1, 1) else 4097
            assert tuple(shape) == (n,) * 3 and shape.ld == 4112
    k6 = kernels.get("K6")
    assert experiments.shape_for(k6, experiments.stride_extras()[0]) == (4100, 4100, 4100)
    todo = measure.plan(kernels.select("K1,K6,T5p"), ["strides"], (4096,) * 3)
    at_padded = sorted(k.id for p, k in todo if p.ld is not None)
    assert at_padded == ["K0", "T5p"]
    refused = measure.refused(kernels.select("K1,K6,T5p"), ["strides"])
    assert sorted(k.id for _, k, _ in refused) == ["K1", "K6"]
    assert len(todo) == 4 * 4 - 2


def test_a_shape_remembers_its_storage():
    S = experiments.Shape
    assert S(4097, 4097, 4097) == (4097, 4097, 4097) and hash(S(4097, 4097, 4097)) == hash((4097,) * 3)
    assert S(4097, 4097, 4097, 4112) != (4097, 4097, 4097)
    assert S(4097, 4097, 4097, 4112) != S(4097, 4097, 4097)
    assert S(4097, 4097, 4097, 4112) == S(4097, 4097, 4097, 4112)
    M, N, K = S(1, 2, 3, 16)
    assert (M, N, K) == (1, 2, 3)
    assert len({S(4097, 4097, 4097), (4097, 4097, 4097), S(4097, 4097, 4097, 4112)}) == 2


# --------------------------------------------------------------------------------------------
# Measuring: the memo, the rows, the check on padded storage
# --------------------------------------------------------------------------------------------

PROV = {"gpu": "test GPU", "run_id": "r1", "commit": "abc"}


def _fake(calls):
    def measure_fn(k, shape):
        calls.append((k.id, tuple(shape), shape.ld or 0))  # 0: contiguous
        ms = 2.0 if shape.ld else 1.0  # padded and contiguous get different times
        row = {"kernel": k.id, "impl": k.impl, "M": shape[0], "N": shape[1], "K": shape[2], "ms": ms,
               "rel_err": 1e-7}
        return {"row": row, "samples": []}

    return measure_fn


def test_the_memo_never_mixes_padded_and_contiguous(tmp_path):
    rows = results.ResultsFile(tmp_path / "results.csv")
    clocks = results.ResultsFile(tmp_path / "clocks.csv", results.CLOCK_COLUMNS)
    ks = kernels.select("K6,T5p")  # K0, K6, T5p
    todo = measure.plan(ks, ["strides"], (4096,) * 3)
    calls = []
    measure.run_plan(todo, _fake(calls), rows, clocks, PROV)
    # K0 and T5p: 4096, 4097, 4100 and padded 4097 each; K6: 4096 and 4100 (its 4097 point is 4100)
    assert sorted(calls) == sorted(
        [(k, (n,) * 3, 0) for k in ("K0", "T5p") for n in (4096, 4097, 4100)]
        + [(k, (4097,) * 3, 4112) for k in ("K0", "T5p")]
        + [("K6", (n,) * 3, 0) for n in (4096, 4100)]
    )
    df = pd.read_csv(rows.path, dtype={"label": str})
    assert len(df) == 3 * 4 - 1  # K6 refuses the padded point
    padded = df[df["label"] == "n=4097 ld=4112"]
    assert set(padded["kernel"]) == {"K0", "T5p"}
    assert (padded["ld"] == 4112).all() and (padded["ms"] == 2.0).all()
    odd = df[df["label"] == "n=4097"]
    assert odd["ld"].isna().all() and (odd["ms"] == 1.0).all()
    # read back (--resume): the padded rows are keyed apart from the contiguous ones
    memo = results.measured(rows.path)
    assert memo[("K0", (4097,) * 3, 1)]["row"]["ms"] == 1.0  # (kernel, shape, pass)
    assert memo[("K0", experiments.Shape(4097, 4097, 4097, 4112), 1)]["row"]["ms"] == 2.0
    again = []
    measure.run_plan(todo, _fake(again), rows, clocks, PROV)
    assert again == []  # everything reused, each from its own storage
    df2 = pd.read_csv(rows.path, dtype={"label": str})
    assert (df2.groupby("label")["ms"].nunique() == 1).all()


def test_an_old_results_file_keeps_its_header_and_refuses_a_padded_row(tmp_path):
    path = tmp_path / "results.csv"
    old = [c for c in results.COLUMNS if c != "ld"]
    results.ResultsFile(path, old).append({"kernel": "K0", "M": 1, "N": 1, "K": 1, "ms": 1.0})
    f = results.ResultsFile(path)
    f.append({"kernel": "K1", "M": 2, "N": 2, "K": 2, "ms": 2.0, "ld": ""})
    df = pd.read_csv(path)
    assert list(df.columns) == old and list(df["kernel"]) == ["K0", "K1"]
    with pytest.raises(InputError, match="'ld'"):
        f.append({"kernel": "T5p", "M": 3, "N": 3, "K": 3, "ms": 3.0, "ld": 16})
    assert len(pd.read_csv(path)) == 2


def test_the_check_on_padded_storage_catches_what_contiguous_cannot():
    import torch


    shape = experiments.Shape(33, 65, 17, 80)

    def right(a, b, out):
        out.copy_(a @ b)

    def spills_into_padding(a, b, out):
        out.copy_(a @ b)
        out.as_strided((33, 80), (80, 1), out.storage_offset()).fill_(0.5)[:, :65].copy_(a @ b)

    def ignores_the_stride(a, b, out):  # reads A as if it were contiguous
        flat = a.as_strided((33, 17), (17, 1), a.storage_offset())
        out.copy_(torch.nan_to_num(flat) @ b)

    a, b, out = measure.operands(shape, 3, device="cpu")
    assert a.stride() == (80, 1) and b.stride() == (80, 1) and out.stride() == (80, 1)
    assert torch.isnan(out).all()
    assert measure.check(right, shape, 3, device="cpu") < 1e-6
    assert measure.check(spills_into_padding, shape, 3, device="cpu") == math.inf
    assert measure.check(ignores_the_stride, shape, 3, device="cpu") > 1e-2
    # contiguous shapes take bench.check's path
    assert measure.check(right, experiments.Shape(33, 65, 17), 3, device="cpu") < 1e-6


def test_recorded_rows_with_an_impossible_ld_are_refused():
    gpu = type("G", (), {"peak_gflops": lambda self: 1e9, "name": "g", "sm_clock_mhz": 1.0})()
    base = {"experiment": "strides", "label": "p", "M": 4097, "N": 4097, "K": 4097, "ms": 5.0,
            "rel_err": 1e-7}
    ok = pd.DataFrame([{**base, "kernel": "T5p", "ld": 4112}, {**base, "kernel": "K1", "ld": None}])
    validate.check_rows(ok, gpu, "t")
    with pytest.raises(InputError, match="contiguous operands only"):
        validate.check_rows(pd.DataFrame([{**base, "kernel": "K1", "ld": 4112}]), gpu, "t")
    with pytest.raises(InputError, match="ld of T5p"):
        validate.check_rows(pd.DataFrame([{**base, "kernel": "T5p", "ld": 4000}]), gpu, "t")


# --------------------------------------------------------------------------------------------
# The report, with and without the new rows
# --------------------------------------------------------------------------------------------


def _run(tmp: Path, extra: bool) -> str:
    data = tmp / "data"
    data.mkdir(parents=True)
    for name in ("results.csv", "sass.csv", "clocks.csv", "gpu.json", "ncu.csv"):
        shutil.copy(REPORT_FIXTURE / name, data / name)
    if extra:
        shutil.copy(STRIDE_FIXTURE / "sass_strides.csv", data / "sass_strides.csv")
        res = pd.read_csv(data / "results.csv", dtype={"label": str})
        template = res[(res["experiment"] == "strides") & (res["label"] == "n=4097")].set_index("kernel")
        new = []
        for r in pd.read_csv(STRIDE_FIXTURE / "extra_rows.csv", dtype={"label": str}).to_dict("records"):
            row = template.loc[r["kernel"]].to_dict() | r
            new.append({**row, "experiment": "strides", "kernel": r["kernel"]})
        pd.concat([res, pd.DataFrame(new)], ignore_index=True).to_csv(data / "results.csv", index=False)
    else:
        shutil.copy(REPORT_FIXTURE / "sass_strides.csv", data / "sass_strides.csv")
    derive.derive(RunDir(tmp), seed=None, note=False)
    text = report.render(tmp, measured=False).read_text()
    return text.split("### E4 strides", 1)[1].split("\n### ", 1)[0]


def _ms(label, kernel):
    res = pd.read_csv(REPORT_FIXTURE / "results.csv", dtype={"label": str})
    extra = pd.read_csv(STRIDE_FIXTURE / "extra_rows.csv", dtype={"label": str})
    both = pd.concat([res[res["experiment"] == "strides"], extra])
    return float(both[(both["label"] == label) & (both["kernel"] == kernel)]["ms"].iloc[0])


def test_the_report_shows_4100_and_the_padded_row(tmp_path):
    sec = _run(tmp_path, extra=True)
    lines = sec.splitlines()
    header = next(line for line in lines if line.startswith("| kernel |"))
    assert header.count("|") == 13  # 12 columns: the pair, then 4100 and the padded point
    assert "shape (n=4100)" in header and "ms (n=4097 ld=4112)" in header
    r0 = _ms("n=4100", "K0") / _ms("n=4096", "K0")
    p0 = _ms("n=4097 ld=4112", "K0") / _ms("n=4096", "K0")
    k0 = next(line for line in lines if line.startswith("| K0 |"))
    cells = f"| 4100×4100×4100 | {_ms('n=4100', 'K0'):.3f} | {r0:.3f} | {_ms('n=4097 ld=4112', 'K0'):.3f} |"
    assert k0.endswith(f"{cells} {p0:.3f} |"), k0
    k6 = next(line for line in lines if line.startswith("| K6 |"))
    assert k6.endswith("| contiguous operands only | – |")
    k1 = next(line for line in lines if line.startswith("| K1 |"))
    assert k1.endswith("| contiguous operands only | – |")
    assert "not in this run" not in sec
    findings = [line for line in lines if line.startswith("**Finding:**")]
    t5p_c = _ms("n=4100", "T5p") / _ms("n=4096", "T5p")
    t5p_b = _ms("n=4097", "T5p") / _ms("n=4096", "T5p")
    k6_c = _ms("n=4100", "K6") / _ms("n=4096", "K6")
    at_4100 = next(f for f in findings if "At n = 4100" in f)
    assert f"the Triton kernels take {t5p_c:.2f}×" in at_4100 and f"({t5p_b:.2f}×)" in at_4100
    assert "K6, which needs multiples of 4" in at_4100 and f"takes {k6_c:.2f}×" in at_4100
    assert "T5p loads with 128-bit instructions" in at_4100 and "40 32-bit loads" in at_4100
    assert "K6 keeps its 128-bit loads" in at_4100
    assert "instead of 10 128-bit ones" in at_4100 and "divisibility by 16" in at_4100
    padded = next(f for f in findings if "padded to 4112" in f)
    d_b = _ms("n=4097 ld=4112", "T5p") / _ms("n=4097", "T5p")
    assert f"take {d_b:.2f}× their contiguous n = 4097 time" in padded
    assert "faster than contiguous for 1 of 1" in padded  # 3.45 < 3.536 ms
    assert "K1, K2, K3, K3c, K4, K5, K6 take contiguous operands only" in padded
    # the load widths table gains the 4100 column
    assert "| T5p | 10×128-bit (cp.async) | 40×32-bit (cp.async) | 40×32-bit (cp.async) |" in sec


def test_a_run_without_the_new_rows_says_so(tmp_path):
    sec = _run(tmp_path, extra=False)
    lines = sec.splitlines()
    header = next(line for line in lines if line.startswith("| kernel |"))
    assert header == "| kernel | shape (n=4096) | ms | shape (n=4097) | ms | time ratio | change |"
    note = "*n = 4100 and n = 4097 ld = 4112: not in this run (results.csv has no row with these labels).*"
    assert note in lines
    assert not any("At n = 4100" in line or "padded to" in line for line in lines)
    assert any(line.startswith("**Finding:** K1 runs") for line in lines)  # the pair's findings stay


if __name__ == "__main__" and "--interpret" in sys.argv:
    sys.path.insert(0, str(ROOT))
    print(json.dumps(_interpreted()))
