"""The main table (E1) and the Triton twins beside their CUDA kernels."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from study.report.figures import figref
from study.report.load import Run
from study.report.md import (
    by_kernel,
    comparison,
    config_text,
    md,
    missing,
    num,
    ratio_range,
    shape,
    spread_text,
)


def section_main(run: Run) -> list[str]:
    lines = []
    main = run.main_rows(run.measured)
    failed = run.main_rows(run.results[run.results["ms"].isna()])
    if main.empty and failed.empty:
        return lines + missing("the main experiment (E1)", "results.csv has no row with experiment = main")
    ref = main.iloc[0] if len(main) else failed.iloc[0]
    g = run.gpu
    lines += [
        f"FP32 C = A·B at {shape(ref.M, ref.N, ref.K)}, row-major, α = 1, β = 0. Time: median of the timed "
        "repetitions (p20–p80 in brackets), L2 flushed before each. Two calibers: *% peak* and *cadence* use "
        + (
            f"the device-reported max SM clock ({g.sm_clock_mhz:.0f} MHz, {g.peak_gflops:,.0f} GFLOP/s)"
            if g
            else "the max SM clock (not known here)"
        )
        + "; the *sampled* columns use the median SM clock sampled during that timing, numerator and "
        "denominator switched together. % of cuBLAS does not depend on the clock. Cadence: cycles per "
        "warp-FMA per SM" + (f" (floor {g.cadence_floor:.3g})." if g else "."),
        "",
        *_vendor(run, main),
    ]
    rows = [
        [
            r["kernel"],
            r["impl"],
            f"{r['ms']:.3f} ({num(r.get('p20_ms'), '{:.3f}')}–{num(r.get('p80_ms'), '{:.3f}')})",
            num(r["gflops"]),
            num(r.get("pct_peak"), "{:.1f}%"),
            num(r.get("pct_peak_sampled"), "{:.1f}%"),
            num(r.get("pct_cublas"), "{:.1f}%"),
            num(r.get("cadence"), "{:.3f}"),
            num(r.get("cadence_sampled"), "{:.3f}"),
            num(r.get("rel_err"), "{:.1e}"),
        ]
        for _, r in main.iterrows()
    ]
    for _, r in failed.iterrows():
        if r["kernel"] not in set(main["kernel"]):
            rows.append(
                [
                    r["kernel"],
                    r.get("impl", ""),
                    "failed its check",
                    *["–"] * 6,
                    num(r.get("rel_err"), "{:.1e}"),
                ]
            )
    rows.sort(key=lambda r: run.order(r[0]))
    lines += md(
        [
            "kernel",
            "impl",
            "ms (p20–p80)",
            "GFLOP/s",
            "% peak",
            "% peak sampled",
            "% cuBLAS",
            "cadence",
            "cadence sampled",
            "rel err",
        ],
        rows,
    )
    lines += _spread(run, main)
    cuda = main[main["impl"] == "cuda"].dropna(subset=["pct_cublas"])
    if len(cuda):
        best = cuda.loc[cuda["pct_cublas"].idxmax()]
        tri = main[main["impl"] == "triton"].dropna(subset=["pct_cublas"])
        tbest = tri.loc[tri["pct_cublas"].idxmax()] if len(tri) else None
        vs = comparison(run, "vs_baseline", best["kernel"])
        lines += [
            f"**Finding:** the fastest hand-written CUDA kernel, {best['kernel']}, reaches "
            f"{best['pct_cublas']:.1f}% of cuBLAS ({best['gflops']:,.0f} GFLOP/s; against cuBLAS "
            f"{spread_text(vs)})"
            + (
                f"; the fastest Triton kernel, {tbest['kernel']}, {tbest['pct_cublas']:.1f}%"
                if tbest is not None
                else ""
            )
            + ".",
            "",
        ]
    if len(failed):
        lines += [
            f"Kernels that failed their correctness check at this shape: {', '.join(failed['kernel'])} "
            "(not timed; their relative error is shown).",
            "",
        ]
    return lines + figref(run, "throughput")


def _vendor(run: Run, main) -> list[str]:
    """What the vendor rows ran (their recorded kernel, algorithm and library version), and what
    "% of cuBLAS" is taken against."""
    vendor = main[main["impl"] == "cublas"]
    said = []
    for _, r in vendor.iterrows():
        cfg = r.get("config")
        try:
            c = json.loads(cfg) if isinstance(cfg, str) and cfg.startswith("{") else {}
        except ValueError:
            c = {}
        what = [f"kernel {c['kernel']}"] if c.get("kernel") else []
        if "algorithm_id" in c:
            what.append(f"algorithm {c['algorithm_id']} of {c.get('offered', '?')} offered (tile "
                        f"{c.get('tile', '?')}, split-K {c.get('split_k', '?')}, heuristic rank "
                        f"{c.get('heuristic_rank', '?')})")
        what += [f"cuBLASLt {c['cublaslt']}"] if c.get("cublaslt") else []
        said.append(f"{r['kernel']} ({', '.join(what) or 'launch not recorded'})")
    if not said:
        return []
    return ["*% cuBLAS* is taken against the best vendor kernel at each point: the faster of the vendor "
            "rows timed there — " + "; ".join(said) + ".", ""]


def _twin_spread(run: Run, twin: str, cuda: str) -> str:
    """A twin's ratio to its CUDA kernel over the run's passes, where it has several."""
    c = comparison(run, "twin", twin, cuda)
    if c is None or not c["passes"] or c["passes"] < 2:
        return ""
    return (f" ({num(c['ratio_lo'], '{:.2f}')}–{num(c['ratio_hi'], '{:.2f}')} over {int(c['passes'])} "
            f"passes)")


def _spread(run: Run, main) -> list[str]:
    """Each kernel's speed against the baseline over the run's passes (comparisons.csv)."""
    c = run.tables.get("comparisons")
    if c is None:
        return missing("the spread across passes", run.missing.get("comparisons", "comparisons.csv "
                                                                   "not in this run"))
    here = c[(c["comparison"] == "vs_baseline") & (c["experiment"] == "main")]
    if not len(here) or here["passes"].max() < 2:
        return ["*Spread across passes:* this run timed its main table in one pass, so no margin in it "
                "is judged against the run-to-run spread (a run of several passes says, for each "
                "kernel, whether it is faster, slower or within noise of cuBLAS).", ""]
    ordered = run.in_order(here.assign(kernel=here["a"]))
    rows = [[r["a"], num(r["ratio"], "{:.3f}×"),
             f"{num(r['ratio_lo'], '{:.3f}')}–{num(r['ratio_hi'], '{:.3f}')}", f"{int(r['passes'])}",
             r["verdict"]] for _, r in ordered.iterrows()]
    return ["Speed against cuBLAS over the run's passes (cuBLAS's time over the kernel's, pass by pass; "
            "each pass times the kernels in its own order): *faster* or *slower* only where the whole "
            "min–max lies on one side of 1, else *within noise*.", "",
            *md(["kernel", "× cuBLAS (median)", "min–max", "passes", "verdict"], rows)]


def section_twins(run: Run) -> list[str]:
    tw = run.tables.get("twins")
    if tw is None:
        return missing(
            "the Triton twins", "no CUDA kernel and its Triton twin were both timed in the main experiment"
        )
    lines = [
        "Each Triton twin keeps its CUDA kernel's block tile and threads per block "
        '(num_warps = threads ÷ 32) and computes in exact FP32 (`input_precision="ieee"`), so the '
        "ratio isolates who writes the code inside the tile. Unpipelined: `num_stages=1`, like the "
        "CUDA kernels; pipelined: Triton's software pipelining; Gluon: the CUDA kernel's own thread → "
        "output map written as explicit layouts, so that only the code generation differs. Throughput "
        "in GFLOP/s at the main shape; Triton ÷ CUDA is the twin's GFLOP/s over its CUDA kernel's "
        "(above 1: the twin is faster).",
        "",
    ]

    def twin(r, which):
        return f"{r[which]}: {num(r[f'{which}_gflops'])}" if isinstance(r[which], str) and r[which] else "–"

    rows = [
        [
            r["cuda"],
            f"{r['tile']}, {int(r['warps'])} warps",
            num(r["cuda_gflops"]),
            twin(r, "unpipelined"),
            twin(r, "pipelined"),
            twin(r, "gluon") if "gluon" in r else "–",
            num(r["cublas_gflops"]),
            num(r["ratio_unpipelined"], "{:.2f}×"),
            num(r["ratio_pipelined"], "{:.2f}×"),
            num(r.get("ratio_gluon"), "{:.2f}×"),
        ]
        for _, r in tw.iterrows()
    ]
    lines += md(
        [
            "CUDA kernel",
            "block tile",
            "CUDA",
            "Triton unpipelined",
            "Triton pipelined",
            "Gluon",
            "cuBLAS",
            "Triton ÷ CUDA (unpipelined)",
            "Triton ÷ CUDA (pipelined)",
            "Gluon ÷ CUDA",
        ],
        rows,
    )
    main = by_kernel(run.main_rows(run.measured))
    tuned = [kid for kid in run.with_role("tuned") if kid in main]
    for kid in tuned:
        r = main[kid]
        lines += [
            f"Autotuned Triton ({kid}): {r['gflops']:,.0f} GFLOP/s, "
            f"{num(r.get('pct_cublas'), '{:.1f}%')} of "
            f"cuBLAS; winning config: {config_text(r.get('config'))}.",
            "",
        ]
    timed = set(run.measured["kernel"])  # a kernel's note where this run timed it
    for k in run.kernels.itertuples():
        if k.impl == "triton" and isinstance(k.notes, str) and k.notes and k.id in timed:
            twin = f" (twin of {k.twin})" if isinstance(k.twin, str) and k.twin else ""
            lines += [f"{k.id}{twin}: {k.idea}. {k.notes}", ""]
    gl = tw.iloc[0:0]
    if "ratio_gluon" in tw:
        gl = tw[np.isfinite(pd.to_numeric(tw["ratio_gluon"], errors="coerce"))]
    if len(gl):
        lines += [
            "**Finding:** with the CUDA kernel's own thread → output map stated in Gluon, "
            + "; ".join(f"{r['gluon']} runs at {r['ratio_gluon']:.2f}× {r['cuda']}'s throughput"
                        + _twin_spread(run, r["gluon"], r["cuda"])
                        + (f" (the `tl.dot` twin {r['pipelined']}: {r['ratio_pipelined']:.2f}×"
                           + _twin_spread(run, r["pipelined"], r["cuda"]) + ")"
                           if isinstance(r["pipelined"], str) and r["pipelined"] else "")
                        for _, r in gl.iterrows())
            + ": the layout is the same, so what is left between them is the code Triton generates "
            "inside it (instruction order, registers, what Gluon cannot state; notes above).",
            "",
        ]
    ta = main[tuned[0]] if tuned else None
    lines += [
        f"**Finding:** unpipelined Triton twins run at {ratio_range(list(tw['ratio_unpipelined']))} the "
        f"throughput of their CUDA kernel, pipelined ones at {ratio_range(list(tw['ratio_pipelined']))}"
        + (
            f"; the autotuned kernel reaches {ta['pct_cublas']:.1f}% of cuBLAS"
            if ta is not None and np.isfinite(ta.get("pct_cublas", np.nan))
            else ""
        )
        + ".",
        "",
    ]
    return lines


def section_tile_gap(run: Run) -> list[str]:
    """Triton against the hand-written tile (tile_gap.csv, ``study.derive.tile_gap``)."""
    tg = run.tables.get("tile_gap")
    if tg is None:
        return missing("Triton against the hand-written tile",
                       "no CUDA rung with a Gluon twin was timed in the main experiment")
    lines = [
        "For each CUDA rung from the first with a Gluon twin on: the fastest `tl.dot` kernel timed "
        "beside it (its `tl.dot` twins and the `tl.dot` kernels that choose their own tile) and the fastest "
        "Gluon twin of its block tile. *÷ CUDA* is the kernel's speed over the rung's, pass by pass "
        "(above 1: faster). The gap in time is split into two factors, from the counters at the main "
        "shape: *instructions* (the kernel's instructions per warp FMA over the rung's) and *issue* "
        "(the rung's issue rate over the kernel's); the larger one is named from the slower "
        "kernel's side: the stall reason that grew most per issued instruction, with the figure of "
        "the SASS main loop or the counters that shows what it waits on, or the instruction class "
        "that grew most per FFMA (docs/method.md#tile-gap).",
        "",
    ]
    rows = []
    for _, r in tg.iterrows():
        kid = r["kernel"] if isinstance(r["kernel"], str) and r["kernel"] else ""
        if not kid:
            rows.append([r["cuda"], r["kind"], "–", "–", "–", "–", "–", "none timed"])
            continue
        lo_hi = (f" ({num(r['ratio_lo'], '{:.2f}')}–{num(r['ratio_hi'], '{:.2f}')})"
                 if r["passes"] and r["passes"] >= 2 else "")
        rows.append([
            r["cuda"], r["kind"], kid, num(r["ratio"], "{:.2f}×") + lo_hi,
            f"{num(r['inst_per_wfma'], '{:.3f}')} / {num(r['cuda_inst_per_wfma'], '{:.3f}')}",
            f"{num(r['issue_pct'])} / {num(r['cuda_issue_pct'])}",
            f"{num(r['from_instructions'], '{:.3f}')} × {num(r['from_issue'], '{:.3f}')}",
            r["difference"] if isinstance(r["difference"], str) else "–",
        ])
    lines += md(["CUDA rung", "kind", "kernel", "÷ CUDA (min–max over passes)",
                 "instructions per warp FMA (kernel / CUDA)", "issue % (kernel / CUDA)",
                 "factors: instructions × issue", "what differs"], rows)
    slower = tg[pd.to_numeric(tg["ratio_hi"], errors="coerce") < 1]
    named = slower[slower["stall"].astype(str).str.len() > 0]
    if len(slower):
        by_issue = named[named["named"].astype(str) == "issue"]
        top = by_issue["stall"].value_counts()
        lines += [
            f"**Finding:** of the {len(slower)} kernels slower than their rung over every pass, "
            f"{len(by_issue)} lose more to issue than to instructions"
            + (": the stall that grew most is " + ", ".join(f"{s} ({n}×)" for s, n in top.items())
               if len(top) else "")
            + ".",
            "",
        ]
    return lines


def section_ladder(run: Run) -> list[str]:
    lad = run.tables.get("ladder")
    if lad is None:
        return missing(
            "the ladder", run.missing.get("ladder", "no CUDA rung was timed in the main experiment")
        )
    lines = [
        "The CUDA rungs in order, each one idea over the one before: its speed-up over the rung before, "
        "and its ledgers — global sectors per warp FMA (the request ledger as Nsight Compute counts it), "
        "loads per FMA counted from the code, SASS instructions per FFMA in the main loop (the issue "
        "ledger), shared-memory wavefronts per warp FMA (Nsight Compute), barriers per phase in the SASS "
        "main loop, registers and theoretical occupancy — and the issue rate and FMA-pipe use the "
        "counters measured. *Moved*: the ledger that changed by the largest factor from the rung before, "
        "among those that changed the way the time did (a cost that fell for a speed-up, rose for a "
        "slow-down; occupancy the other way round).",
        "",
    ]
    rows = [
        [
            r["kernel"],
            r["idea"],
            num(r["gflops"], "{:,.0f}"),
            num(r["pct_cublas"], "{:.1f}%"),
            _step(run, lad, r),
            num(r["sectors_per_wfma"], "{:.2f}"),
            num(r["loads_per_fma"], "{:.3f}"),
            num(r["issue_per_ffma"], "{:.3f}"),
            num(r["wavefronts_per_wfma"], "{:.3f}"),
            num(r["bar_per_phase"], "{:.0f}"),
            num(r["registers"], "{:.0f}"),
            num(r["occupancy_pct"], "{:.1f}%"),
            num(r["issue_pct"], "{:.1f}%"),
            num(r["fma_pipe_pct"], "{:.1f}%"),
            f"{r['moved']}: {num(r['moved_from'], '{:.3g}')} → {num(r['moved_to'], '{:.3g}')}"
            if isinstance(r["moved"], str) and r["moved"] and not _noise(run, lad, r)
            else ("within noise" if _noise(run, lad, r) else "–"),
        ]
        for _, r in lad.iterrows()
    ]
    lines += md(
        [
            "rung",
            "idea",
            "GFLOP/s",
            "% cuBLAS",
            "speed-up",
            "sectors / warp FMA",
            "loads/FMA",
            "SASS instr./FFMA",
            "wavefronts / warp FMA",
            "barriers / phase",
            "regs",
            "occupancy",
            "issue",
            "FMA pipe",
            "moved",
        ],
        rows,
    )
    top = lad.loc[lad["pct_cublas"].idxmax()] if lad["pct_cublas"].notna().any() else None
    if top is not None:
        lines += [
            f"**Finding:** the ladder's fastest rung, {top['kernel']}, reaches {top['pct_cublas']:.1f}% of "
            f"cuBLAS; its largest single step is " + _largest_step(lad) + ".",
            "",
        ]
    return lines


def _prev(lad, r) -> str | None:
    i = list(lad["kernel"]).index(r["kernel"])
    return str(lad["kernel"].iloc[i - 1]) if i else None


def _step(run: Run, lad, r) -> str:
    """A rung's speed-up over the rung before: the median over the passes, with their min–max."""
    prev = _prev(lad, r)
    c = comparison(run, "step", r["kernel"], prev) if prev else None
    if c is None or not c["passes"] or c["passes"] < 2:
        return num(r["speedup"], "{:.2f}×")
    return f"{num(c['ratio'], '{:.2f}×')} ({num(c['ratio_lo'], '{:.2f}')}–{num(c['ratio_hi'], '{:.2f}')})"


def _noise(run: Run, lad, r) -> bool:
    """Whether the step to this rung is within the run's spread across passes: then no ledger is
    named as its cause."""
    prev = _prev(lad, r)
    c = comparison(run, "step", r["kernel"], prev) if prev else None
    return c is not None and c["verdict"] == "within noise"


def _largest_step(lad) -> str:
    steps = lad.dropna(subset=["speedup"])
    if steps.empty:
        return "not measurable (one rung)"
    i = steps["speedup"].idxmax()
    prev = lad.loc[lad.index[lad.index.get_loc(i) - 1], "kernel"]
    r = steps.loc[i]
    return f"{prev} → {r['kernel']}, {r['speedup']:.2f}× ({r['idea']})"
