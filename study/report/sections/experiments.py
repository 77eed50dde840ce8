"""The experiments: E2 sizes, E3 shapes, E4 strides, E6 clocks."""

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
    ratio_range,
    shape,
    spaced,
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
    return lines + figref(run, "shapes")


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


def _alignment(n: int) -> str:
    if n % 4:
        return "not a multiple of 4"
    return "a multiple of 4 " + ("and of 16" if n % 16 == 0 else "but not of 16")


def section_strides(run: Run) -> list[str]:
    la, lb = run.stride_labels()
    pc, pd_ = run.stride_point("c"), run.stride_point("d")
    tab = run.tables.get("strides")
    if tab is None:
        return missing("the stride experiment", "results.csv has no row with experiment = strides") + figref(
            run, "strides"
        )
    lines = [
        f"Median time at {spaced(la)} (a power-of-two row stride) and {spaced(lb)}; "
        "a kernel that needs aligned sizes runs at the next aligned size, named in its row.",
        "",
    ]
    has_c = bool(col(tab, "ms_c").notna().any())
    has_d = bool(col(tab, "ms_d").notna().any())
    if has_c or has_d:
        said = []
        if has_c:
            said.append(f"{spaced(pc.label)} is {_alignment(pc.M)}")
        if has_d:
            said.append(f"{spaced(pd_.label)} is {pd_.M}³ with the rows of A, B and C {pd_.ld} elements "
                        "apart (the same matrices on padded storage)")
        lines += ["; ".join(said) + f". Every time ratio is over the time at {spaced(la)}.", ""]
    header = ["kernel", f"shape ({la})", "ms", f"shape ({lb})", "ms", "time ratio", "change"]
    header += [f"shape ({pc.label})", "ms", "time ratio"] if has_c else []
    header += [f"ms ({pd_.label})", "time ratio"] if has_d else []
    rows = []
    for _, r in tab.iterrows():
        cells = [
            r["kernel"],
            shape(r.M_a, r.N_a, r.K_a),
            f"{r['ms_a']:.3f}",
            shape(r.M_b, r.N_b, r.K_b),
            f"{r['ms_b']:.3f}",
            f"{r['ratio']:.3f}",
            f"{r['change_pct']:+.1f}%",
        ]
        if has_c:
            timed = np.isfinite(float(r["ms_c"]))
            cells += [shape(r.M_c, r.N_c, r.K_c) if timed else "–", num(r["ms_c"], "{:.3f}"),
                      num(r["ratio_c"], "{:.3f}")]
        if has_d:
            refused = isinstance(r["why"], str) and r["why"].strip()
            cells += ["contiguous operands only", "–"] if refused else [num(r["ms_d"], "{:.3f}"),
                                                                       num(r["ratio_d"], "{:.3f}")]
        rows.append(cells)
    lines += md(header, rows)
    absent = [spaced(p.label) for p, has in ((pc, has_c), (pd_, has_d)) if not has]
    if absent:
        lines += missing(" and ".join(absent), f"{NOT_IN_RUN} (results.csv has no row with "
                         + ("this label" if len(absent) == 1 else "these labels") + ")")
    for s in _stride_findings(run, tab, la, lb):
        lines += [f"**Finding:** {s}", ""]
    for s in _remedy_findings(run, tab, run.tables.get("stride_loads"), la, lb, pc if has_c else None,
                              pd_ if has_d else None):
        lines += [f"**Finding:** {s}", ""]
    return lines + _stride_mechanism(run) + figref(run, "strides")


def _verb(subjects: list, verb: str) -> str:
    """``verb`` agreeing with a list of kernel ids: "take" for several, "takes" for one."""
    return verb if len(subjects) > 1 else verb + "s"


def _loads_at(sl, kernels, s) -> dict:
    """kernel -> (128-bit, 32-bit) main-loop global loads at shape ``s`` from the stride_loads
    table; kernels whose row there is missing or refused are left out."""
    out = {}
    if sl is None:
        return out
    for r in sl.itertuples():
        if r.kernel in kernels and (int(r.M), int(r.N), int(r.K)) == tuple(s):
            if not (isinstance(r.error, str) and r.error):
                out[r.kernel] = (float(r.loads_128), float(r.loads_32))
    return out


def _remedy_findings(run: Run, tab, sl, la: str, lb: str, pc, pd_) -> list[str]:
    """What n = 4100 and the padded storage say, from the stride table and the load widths."""
    t = tab.set_index("kernel")
    odd = [k for k in t.index if truthy(t.at[k, "at_other_shape"])]
    tri = [k for k in t.index if t.at[k, "impl"] == "triton" and k not in odd]
    base = run.baseline
    out = []
    if pc is not None:
        tc = [k for k in tri if np.isfinite(float(t.at[k, "ratio_c"]))]
        al = [k for k in odd if np.isfinite(float(t.at[k, "ratio_c"]))]
        if tc:
            text = (
                f"at {spaced(pc.label)} the Triton kernels take "
                f"{ratio_range([float(t.at[k, 'ratio_c']) for k in tc])} their time at {spaced(la)}, "
                f"as at {spaced(lb)} ({ratio_range([float(t.at[k, 'ratio']) for k in tc])})"
            )
            if al:
                text += (f", where {', '.join(al)}, which {_verb(al, 'need')} multiples of 4 and "
                         f"{_verb(al, 'run')} {spaced(pc.label)} for {spaced(lb)}, {_verb(al, 'take')} "
                         f"{ratio_range([float(t.at[k, 'ratio_c']) for k in al])}")
            if base in t.index and np.isfinite(float(t.at[base, "ratio_c"])):
                text += f"; cuBLAS {float(t.at[base, 'ratio_c']):.2f}×"
            a_shape = (int(t.at[tc[0], "M_a"]), int(t.at[tc[0], "N_a"]), int(t.at[tc[0], "K_a"]))
            c_shape = (pc.M, pc.N, pc.K)
            at_a, at_c = _loads_at(sl, tc, a_shape), _loads_at(sl, tc, c_shape)
            lost = [k for k in tc if k in at_a and k in at_c and at_a[k][0] > 0 and at_c[k][0] == 0]
            kept = [k for k, (w128, _) in _loads_at(sl, al, c_shape).items() if w128 > 0]
            if lost:
                text += (
                    f". The mechanism is in the SASS below: {', '.join(lost)} "
                    f"{_verb(lost, 'load')} with 128-bit instructions at {spaced(la)} and "
                    f"with none at {spaced(pc.label)} "
                    f"({ratio_range([at_c[k][1] for k in lost], '{:.0f}')} 32-bit loads per main loop "
                    f"instead of {ratio_range([at_a[k][0] for k in lost], '{:.0f}')} 128-bit ones)"
                    + (f", where {', '.join(kept)} {_verb(kept, 'keep')} "
                       f"{'their' if len(kept) > 1 else 'its'} 128-bit loads" if kept else "")
                    + ": Triton specialises an integer argument on divisibility by 16, so a row stride "
                    f"that is {_alignment(pc.M)} gets the unaligned code"
                )
            elif not at_c:
                text += (". Triton specialises an integer argument on divisibility by 16; the load widths "
                         f"that would show it at {spaced(pc.label)} are {NOT_IN_RUN}")
            out.append(text[0].upper() + text[1:] + ".")
    if pd_ is not None:
        td = [k for k in tri if np.isfinite(float(t.at[k, "ratio_d"]))]
        refused = [k for k in t.index if isinstance(t.at[k, "why"], str) and t.at[k, "why"]]
        if td:
            faster = [k for k in td if float(t.at[k, "ratio_d_b"]) < 1]
            text = (
                f"On rows padded to {pd_.ld} elements ({spaced(pd_.label)}) the Triton kernels take "
                f"{ratio_range([float(t.at[k, 'ratio_d_b']) for k in td])} their contiguous {spaced(lb)} "
                f"time ({ratio_range([float(t.at[k, 'ratio_d']) for k in td])} their {spaced(la)} time; "
                f"faster than contiguous for {len(faster)} of {len(td)})"
            )
            if base in t.index and np.isfinite(float(t.at[base, "ratio_d_b"])):
                text += f"; cuBLAS {float(t.at[base, 'ratio_d_b']):.2f}× its contiguous {spaced(lb)} time"
            if refused:
                text += f"; {', '.join(refused)} {_verb(refused, 'take')} contiguous operands only"
            out.append(text + ".")
    return out


def _widths(r) -> str:
    if isinstance(r["error"], str) and r["error"]:
        return "refused"
    parts = [f"{int(r[f'loads_{w}'])}×{w}-bit" for w in (128, 64, 32) if r[f"loads_{w}"] > 0]
    kind = " (cp.async)" if truthy(r["async"]) else ""
    return (", ".join(parts) or "none") + kind


def _stride_mechanism(run: Run) -> list[str]:
    """The main loop's global loads by width at each stride shape, from the SASS of that launch."""
    sl = run.tables.get("stride_loads")
    if sl is None:
        return missing(
            "the load widths at these shapes",
            run.missing.get("stride_loads", "?")
            + " (the SASS at the stride shapes: data/sass_strides.csv, written by a measured run)",
        )
    shapes = sorted({(int(r.M), int(r.N), int(r.K)) for r in sl.itertuples()})
    cells = {(r.kernel, (int(r.M), int(r.N), int(r.K))): _widths(sl.loc[i]) for i, r in sl.iterrows()}
    kernels = list(dict.fromkeys(sl["kernel"]))
    lines = [
        "By mechanism: the main loop's global loads (LDG and cp.async LDGSTS) by width, read from the SASS "
        "compiled as a launch at each shape would be. Triton specialises integer arguments on "
        "divisibility by "
        "16, so it compiles a stride of 4097 or 4100 apart from 4096; a CUDA kernel is one binary for every "
        "shape, and one with 128-bit loads refuses a size that is not a multiple of 4.",
        "",
    ]
    rows = [[k, *[cells.get((k, s), "–") for s in shapes]] for k in kernels]
    lines += md(["kernel", *[f"n = {s[0]}" if s[0] == s[1] == s[2] else shape(*s) for s in shapes]], rows)
    lost = [
        k
        for k in kernels
        if (k, shapes[0]) in cells
        and "128-bit" in cells[(k, shapes[0])]
        and any(
            (k, s) in cells and "128-bit" not in cells[(k, s)] and cells[(k, s)] != "refused"
            for s in shapes[1:]
        )
    ]
    if lost:
        by = {(r.kernel, (int(r.M), int(r.N), int(r.K))): r for r in sl.itertuples()}
        a = shapes[0]
        fourfold = all(
            by[(k, s)].loads_32 == 4 * by[(k, a)].loads_128 + by[(k, a)].loads_32
            for k in lost
            for s in shapes[1:]
            if (k, s) in by and cells[(k, s)] != "refused"
        )
        lines += [
            f"**Finding:** at n = {a[0]} {', '.join(lost)} load with 128-bit instructions and lose them "
            "at the unaligned sizes"
            + (", where each 128-bit load of the main loop becomes four 32-bit ones" if fourfold else "")
            + ".",
            "",
        ]
    return lines


def _stride_findings(run: Run, tab, la: str, lb: str) -> list[str]:
    t = tab.set_index("kernel")
    cuda = run.ladder
    pair = run.with_role("request_ledger")
    out = []
    k1 = pair[0] if pair else ""
    if k1 in t.index:
        r = t.loc[k1]
        word, f = ("faster", r["speedup"]) if r["speedup"] >= 1 else ("slower", 1 / r["speedup"])
        out.append(
            f"{k1} runs {f:.2f}× {word} at {spaced(lb)} than at {spaced(la)} "
            f"({r['ms_a']:.3f} → {r['ms_b']:.3f} ms)."
        )
        k2 = r["pair"] if isinstance(r["pair"], str) else ""
        if k2:
            x, y = r["pair_ratio_a"], r["pair_ratio_b"]
            if x > y:
                out.append(
                    f"The {k1}/{k2} time ratio is {x:.3f}× at {spaced(la)} and {y:.3f}× at {spaced(lb)}: "
                    f"a factor {x / y:.2f} of {k1}'s deficit at {spaced(la)} comes with the power-of-two "
                    "stride, not with coalescing."
                )
            else:
                out.append(
                    f"The {k1}/{k2} time ratio is {x:.3f}× at {spaced(la)} and {y:.3f}× at {spaced(lb)}: "
                    f"the power-of-two stride adds nothing to {k1}'s deficit."
                )
    odd = [k for k in t.index if truthy(t.at[k, "at_other_shape"])]
    rest = [k for k in cuda if k not in pair and k in t.index and k not in odd]
    parts = []
    if rest:
        parts.append(
            f"{', '.join(rest)} changes by {ratio_range([t.at[k, 'change_pct'] for k in rest], '{:+.1f}%')}"
        )
    tri = [k for k in t.index if t.at[k, "impl"] == "triton" and k not in odd]
    if tri:
        parts.append(
            f"the Triton kernels' by {ratio_range([t.at[k, 'change_pct'] for k in tri], '{:+.1f}%')}"
        )
    base = run.baseline
    if base in t.index:
        parts.append(f"cuBLAS's by {t.at[base, 'change_pct']:+.1f}%")
    parts += [
        f"{k}'s (at {shape(t.at[k, 'M_b'], t.at[k, 'N_b'], t.at[k, 'K_b'])}) by {t.at[k, 'change_pct']:+.1f}%"
        for k in odd
    ]
    if parts:
        out.append(f"From {spaced(la)} to {spaced(lb)} the time of " + "; ".join(parts) + ".")
    return out


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
