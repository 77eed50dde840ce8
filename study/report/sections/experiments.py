"""The experiments: E2 sizes, E3 shapes, E6 clocks (E4 strides: ``strides``)."""

from __future__ import annotations

import math

import numpy as np

from study.report.figures import figref
from study.report.load import NOT_IN_RUN, Run
from study.report.md import (
    col,
    experiment_rows,
    md,
    missing,
    num,
    shape,
    spread_text,
    truthy,
)


def section_sizes(run: Run) -> list[str]:
    df = experiment_rows(run.measured, "sizes")
    if df.empty:
        return missing("the size sweep", "results.csv has no row with experiment = sizes") + figref(
            run, "sizes"
        )
    sizes = run.tables.get("sizes")
    foot = dict(zip(sizes["n"], sizes["footprint_bytes"])) if sizes is not None else {}
    ns = sorted(set(int(n) for n in df["M"]))
    l2 = run.gpu.l2_bytes if run.gpu else None
    piv = df.pivot_table(index="kernel", columns="M", values="gflops", aggfunc="median")
    rows = [
        [k, *[num(piv.at[k, n]) if n in piv.columns else "–" for n in ns]]
        for k in sorted(piv.index, key=run.order)
    ]
    lines = ["GFLOP/s per square size n (M = N = K); the footprint of A, B and C is 3·n²·4 bytes.", ""]
    lines += md(["kernel", *[f"n = {n} ({foot.get(n, math.nan) / 1e6:.1f} MB)" for n in ns]], rows)
    step = run.tables.get("size_step")
    if not l2:
        lines += ["*Where the footprint leaves the L2: the L2 size is " + NOT_IN_RUN + " (gpu.json).*", ""]
    elif step is not None:
        a, b = int(step["n_inside"].iloc[0]), int(step["n_outside"].iloc[0])
        st = step.set_index("kernel")
        base = run.baseline
        most = st.index[np.argmax(np.abs(np.log(st["change"].to_numpy())))]
        steps = (
            [
                f"cuBLAS goes from {st.at[base, 'gflops_inside']:,.0f} to "
                f"{st.at[base, 'gflops_outside']:,.0f} "
                f"GFLOP/s ({st.at[base, 'change']:.2f}×)"
            ]
            if base in st.index
            else []
        )
        if base not in st.index or most != base:
            steps.append(
                f"{most} changes most, {st.at[most, 'gflops_inside']:,.0f} to "
                f"{st.at[most, 'gflops_outside']:,.0f} GFLOP/s ({st.at[most, 'change']:.2f}×)"
            )
        lines += [
            f"**Finding:** the footprint leaves the {l2 / 2**20:.0f} MiB L2 between n = {a} "
            f"({foot[a] / 1e6:.1f} MB) and n = {b} ({foot[b] / 1e6:.1f} MB)"
            + (f"; across that step {' and '.join(steps)}" if steps else "")
            + ".",
            "",
        ]
    elif sizes is not None:
        where = "inside" if all(truthy(v) for v in sizes["inside_l2"]) else "outside"
        lines += [
            f"**Finding:** every measured size lies {where} the {l2 / 2**20:.0f} MiB L2 "
            f"(footprints {foot[ns[0]] / 1e6:.1f}–{foot[ns[-1]] / 1e6:.1f} MB).",
            "",
        ]
    return lines + figref(run, "sizes")


def section_shapes(run: Run) -> list[str]:
    df = experiment_rows(run.measured, "shapes")
    if df.empty:
        return missing("the shape sweep", "results.csv has no row with experiment = shapes") + figref(
            run, "shapes"
        )
    labels = run.labels_in(df, "shapes")
    piv = df.pivot_table(index="kernel", columns="label", values="gflops", aggfunc="median")
    rows = [
        [k, *[num(piv.at[k, lab]) if lab in piv.columns else "–" for lab, _ in labels]]
        for k in sorted(piv.index, key=run.order)
    ]
    lines = [
        "GFLOP/s per shape (M×N×K); prefill and decode use the Qwen2.5-7B FFN (N = 18944, K = 3584).",
        "",
    ]
    lines += md(["kernel", *[f"{lab} ({shape(*s)})" for lab, s in labels]], rows)
    sh = run.tables.get("shapes")
    if sh is not None:
        ups = sh.dropna(subset=["speedup"])
        cub = sh.dropna(subset=["cublas_gflops"])
        first, last = sh["first"].iloc[0], sh["last"].iloc[0]
        if len(ups) or len(cub):
            lines += [
                "**Finding:** "
                + (
                    f"the {first} → {last} speed-up is "
                    + ", ".join(f"{u:.1f}× ({lab})" for lab, u in zip(ups["label"], ups["speedup"]))
                    if len(ups)
                    else f"{first} and {last} were not both timed"
                )
                + (
                    "; cuBLAS runs at "
                    + ", ".join(
                        f"{v:,.0f} GFLOP/s ({lab})" for lab, v in zip(cub["label"], cub["cublas_gflops"])
                    )
                    if len(cub)
                    else ""
                )
                + ".",
                "",
            ]
        lines += shape_roof_lines(sh)
    lines += _fastest_against_baseline(run, sh)
    return lines + figref(run, "shapes")


def _fastest_against_baseline(run: Run, sh) -> list[str]:
    """At each shape timed in several passes, its fastest kernel against cuBLAS over the passes."""
    c = run.tables.get("comparisons")
    if c is None or sh is None or "kernel" not in sh.columns:
        return []
    parts = []
    for _, r in sh.iterrows():
        hit = c[(c["comparison"] == "vs_baseline") & (c["experiment"] == "shapes")
                & (c["label"].astype(str) == str(r["label"])) & (c["a"] == r["kernel"])]
        if len(hit) and hit["passes"].iloc[0] >= 2:
            parts.append(f"{r['label']}: {r['kernel']} {spread_text(hit.iloc[0])}")
    if not parts:
        return []
    return ["**Finding (spread):** the fastest kernel of each shape timed in several passes, against "
            "cuBLAS (cuBLAS's time over its, pass by pass): " + "; ".join(parts) + ".", ""]


def shape_roof_lines(sh) -> list[str]:
    """E3's bandwidth roof (docs/method.md#shape-roof): per shape, the fastest kernel's bytes moved
    once against the measured read roof and the datasheet DRAM peak, and the finding for the shapes
    whose bytes are mostly B. Nothing when the shapes table predates these columns."""
    from study.report.sections.provenance import NOT_MEASURED

    need = ("kernel", "fastest_ms", "bytes_once", "b_share", "gbps_once", "pct_read_roof", "pct_dram_peak",
            "gflops", "pct_peak")
    if any(c not in sh.columns for c in need):
        return []
    sh = sh[np.isfinite(col(sh, "gbps_once"))]
    if sh.empty:
        return []

    def read_pct(v) -> str:
        return num(v, "{:.1f}%") if math.isfinite(v) else NOT_MEASURED

    rows = [
        [
            f"{r['label']} ({shape(r['M'], r['N'], r['K'])})",
            r["kernel"],
            num(r["fastest_ms"], "{:.3f}"),
            num(r["bytes_once"] / 1e6),
            num(100 * r["b_share"], "{:.2f}%"),
            num(r["gbps_once"], "{:,.0f}"),
            read_pct(float(r["pct_read_roof"])),
            num(r["pct_dram_peak"], "{:.1f}%"),
            num(r["gflops"], "{:,.0f}"),
            num(r["pct_peak"], "{:.1f}%"),
        ]
        for _, r in sh.iterrows()
    ]
    lines = [
        "Bandwidth per shape: the bytes every kernel must move (A and B read once, C written once: "
        "4(MK + KN + MN)) over the time of the kernel that moves them fastest, against the read "
        "bandwidth measured when the run started (the read roof) and the datasheet DRAM peak; beside "
        "them the same kernel's 2MNK FLOP over its time, against the FP32 peak (% peak, as in the "
        "main table).",
        "",
    ]
    lines += md(
        ["shape", "fastest", "ms", "MB moved", "B's share", "GB/s", "% of read roof", "% of DRAM peak",
         "GFLOP/s", "% of FP32 peak"],
        rows,
    )
    at = float(col(sh, "b_dominates_at").max())
    share = f"{100 * at:.0f}%" if math.isfinite(at) else "most"
    b = sh[col(sh, "b_dominates") == 1]
    if b.empty:
        return lines + [f"**Finding:** no shape of this run has B as {share} or more of its bytes.", ""]
    parts = []
    for _, r in b.iterrows():
        dram = f"{r['pct_dram_peak']:.1f}% of the datasheet DRAM peak ({r['dram_gbps'] / 1e3:.2f} TB/s"
        pct = (
            f"{r['pct_read_roof']:.1f}% of the measured read bandwidth ({r['read_gbps'] / 1e3:.2f} TB/s) "
            f"and {dram})"
            if math.isfinite(float(r["pct_read_roof"]))
            else f"{dram}; the measured read bandwidth: {NOT_MEASURED})"
        )
        parts.append(
            f"{r['label']}: the fastest kernel, {r['kernel']}, moves its {r['bytes_once'] / 1e6:.1f} MB "
            f"at {r['gbps_once']:,.0f} GB/s, {pct}, and computes at {r['gflops']:,.0f} GFLOP/s, "
            f"{r['pct_peak']:.1f}% of the FP32 peak"
        )
    finding = f"**Finding:** where B is {share} or more of the bytes moved: " + "; ".join(parts) + "."
    return lines + [finding, ""]


def section_clocks(run: Run) -> list[str]:
    tab = run.tables.get("clock_summary")
    if tab is None:
        return missing(
            "sampled SM clocks", "results.csv records no sampled clock for the main experiment"
        ) + figref(run, "clocks")
    mx = run.gpu.sm_clock_mhz if run.gpu else math.nan
    samples = run.tables.get("clocks")
    rows = [
        [
            r["kernel"],
            f"{r['median_mhz']:.0f}",
            num(r["pct_of_max"], "{:.1f}%"),
            num(r["samples"], "{:.0f}"),
            f"{r['lo_mhz']:.0f}–{r['hi_mhz']:.0f}" if np.isfinite(r["lo_mhz"]) else "–",
        ]
        for _, r in tab.iterrows()
    ]
    lines = [
        "Median SM clock sampled through NVML during each main-table timing, against the "
        f"device-reported max ({num(mx, '{:.0f}')} MHz)."
        + ("" if samples is not None else f" Per-sample traces: {run.missing.get('clocks', 'clocks.csv')}."),
        "",
    ]
    lines += md(["kernel", "median sampled MHz", "% of max", "samples", "sample range MHz"], rows)
    first = tab.iloc[0]
    lo, hi = tab.loc[tab["median_mhz"].idxmin()], tab.loc[tab["median_mhz"].idxmax()]
    lines += [
        f"**Finding:** the median sampled SM clock over the main table is {first['run_median_mhz']:.0f} MHz"
        + (
            f", {first['run_pct_of_max']:.1f}% of the {mx:.0f} MHz max (at that clock a % of peak reads "
            f"{first['max_over_median']:.3f}× its max-clock value)"
            if np.isfinite(mx)
            else ""
        )
        + f"; per kernel it ranges from {lo['median_mhz']:.0f} MHz ({lo['kernel']}) to "
        f"{hi['median_mhz']:.0f} MHz ({hi['kernel']}).",
        "",
    ]
    return lines + figref(run, "clocks")
