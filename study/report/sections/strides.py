"""E4 strides: the power-of-two stride against the unaligned ones and the padded remedy, with the
main loop's load widths behind each penalty (stride_loads.csv)."""

from __future__ import annotations

import numpy as np

from study.report.figures import figref
from study.report.load import NOT_IN_RUN, Run
from study.report.md import (
    col,
    md,
    missing,
    num,
    ratio_range,
    shape,
    spaced,
    truthy,
)


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
