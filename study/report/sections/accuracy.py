"""The accuracy ledger (`docs/method.md#accuracy-ledger`): every kernel's error against float64 on
four input distributions and three K, its speed, which kernels are FP32-class, and the tensor-core
kernels' ledger. Renders accuracy_summary.csv, accuracy_ledger.csv, accuracy_findings.csv and
accuracy_tc.csv; computes nothing. A run without the ledger has no such section (``None``)."""

from __future__ import annotations

from study.report.figures import figref, in_run
from study.report.load import Run
from study.report.md import findings, md, missing, num

SUMMARY, LEDGER, FINDINGS, TC = "accuracy_summary", "accuracy_ledger", "accuracy_findings", "accuracy_tc"
UNITS = {"×": "{:.2f}×", "TFLOP/s": "{:.1f} TFLOP/s", "kernels": "{:.0f}"}


def _e(x) -> str:
    return num(x, "{:.2e}")


def _speedup(r) -> str:
    """The median speed-up over the best vendor kernel, with its spread and verdict over the passes."""
    med = num(r.speedup_vs_vendor, "{:.2f}×")
    if not r.passes == r.passes or r.passes < 2:
        return med
    lo, hi = num(r.speedup_lo, "{:.2f}"), num(r.speedup_hi, "{:.2f}")
    return f"{med} ({lo}–{hi}, {int(r.passes)}: {r.verdict})"


def section_accuracy(run: Run) -> list[str] | None:
    if not (in_run(run, SUMMARY) or in_run(run, LEDGER)):
        return None
    s = run.tables.get(SUMMARY)
    if s is None:
        return missing("the accuracy ledger", run.missing.get(SUMMARY, "accuracy_summary.csv has no rows"))
    lines = [
        "`python -m study.accuracy`: every kernel on inputs of four distributions (randn; uniform on "
        "[0, 1); 2^u, u uniform on ±20, random sign; ±(1 + u 2^-10), whose differences lie below "
        "TF32's mantissa) at M = N = 1024 and K = 256, 4096, 16384, its output NaN-poisoned, against "
        "the float64 product: the relative error ‖C − C₆₄‖/‖C₆₄‖ and the largest error in ulps of the "
        "FP32 result. The tensor-core and vendor kernels are timed at 4096³ on randn inputs in "
        "passes, each its own kernel order (*timed in* the ledger); the FP32 kernels' times are the "
        "run's main experiment's at that shape (*timed in* the run), each against the vendor's of "
        "the same rows: the speed-up over the best vendor kernel of each pass, its median, least and "
        "greatest. TT, TX and KX run on the tensor cores (TF32, 3×TF32 in Triton, 3×TF32 on wgmma); "
        "every other kernel multiplies in FP32.",
        "",
    ]
    lines += findings(run, FINDINGS, "the accuracy ledger's findings", UNITS)
    rows = [[r.kernel, r.precision, num(r.ms, "{:.3f}"), num(r.tflops), _speedup(r),
             _e(r.rel_err_randn), num(r.worst_vs_baseline, "{:.2f}×"),
             f"{r.worst_dist} K={int(r.worst_K)}" if r.worst_K == r.worst_K else "–",
             num(r.max_ulp_uniform, "{:.3g}"),
             r.fp32_class if isinstance(r.fp32_class, str) and r.fp32_class else "–",
             r.speed_from if isinstance(r.speed_from, str) and r.speed_from else "–"]
            for r in s.itertuples()]
    lines += md(["kernel", "precision", "ms at 4096³", "TFLOP/s", "over best vendor (min–max, passes)",
                 "rel. error (randn)",
                 "worst vs cuBLAS FP32", "where", "max ulp error (uniform)", "FP32-class", "timed in"],
                rows)
    led = run.tables.get(LEDGER)
    if led is not None:
        keys = list(dict.fromkeys(zip(led["dist"].astype(str), led["K"].astype(int))))
        grid = []
        for kid in dict.fromkeys(led["kernel"].astype(str)):
            rows_of = led[led["kernel"].astype(str) == kid].itertuples()
            mine = {(str(r.dist), int(r.K)): r.rel_err for r in rows_of}
            grid.append([kid, *(_e(mine.get(k)) for k in keys)])
        lines += ["Relative error per distribution and K:", ""]
        lines += md(["kernel", *(f"{d} K={k}" for d, k in keys)], grid)
    tc = run.tables.get(TC)
    if tc is not None and len(tc):
        lines += [
            "The tensor-core kernels' ledger at the speed shape: their products' time at the TF32 "
            "peak and its share of the measured time, MMA instructions per output (where the source "
            "fixes the instruction), the pass before the product (KX's split of A and B, TT's and "
            "TX's K-major copy of B) and its time at the copy roof, and the bytes the tiles carry "
            "into shared memory with their rate over the rest of the time.",
            "",
        ]
        lines += md(["kernel", "tile", "products", "ms", "tensor-core floor ms", "% of the time",
                     "MMA per output", "pass before", "its MB", "its floor ms", "tile GB", "tile TB/s"],
                    [[r.kernel, r.tile or "–", int(r.products), num(r.ms, "{:.3f}"),
                      num(r.tc_floor_ms, "{:.3f}"), num(r.tc_share_pct, "{:.0f}%"),
                      num(r.mma_per_output, "{:.4f}"), r.prepass or "–",
                      num(r.prepass_mb), num(r.prepass_floor_ms, "{:.3f}"), num(r.tile_gb, "{:.2f}"),
                      num(r.tile_tbps, "{:.2f}")] for r in tc.itertuples()])
    return lines + figref(run, "accuracy")
