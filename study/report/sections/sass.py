"""The compiled code: occupancy and the SASS histogram, and the hand count against it."""

from __future__ import annotations

from study.report.load import Run
from study.report.md import md, missing, num, op_name, prov_col, truthy


def section_sass(run: Run) -> list[str]:
    lines = []
    s = run.tables.get("sass")
    if s is None:
        return lines + missing("the SASS histogram and occupancy", run.missing["sass"])
    s = run.in_order(s)
    arch = prov_col(s, "arch")
    lines += [
        f"Compiled for {arch or 'the recorded target'} and read back with cuobjdump. Registers per thread, "
        "static shared memory per block, theoretical occupancy (resident warps ÷ max warps per SM), then the "
        "whole-kernel opcode histogram and the main loop's loads per FFMA.",
        "",
    ]
    res_cols = [
        ("registers", "{:.0f}"),
        ("smem_bytes", "{:.0f}"),
        ("spills", "{:.0f}"),
        ("threads", "{:.0f}"),
        ("occupancy_pct", "{:.1f}%"),
    ]
    rows = [
        [
            r["kernel"],
            r.get("impl", ""),
            *[num(r.get(c), f) for c, f in res_cols],
            r.get("occupancy_limited_by", "") if isinstance(r.get("occupancy_limited_by"), str) else "",
            r.get("error", "") if isinstance(r.get("error"), str) else "",
        ]
        for _, r in s.iterrows()
    ]
    lines += md(
        [
            "kernel",
            "impl",
            "registers",
            "smem bytes",
            "spills",
            "threads",
            "occupancy",
            "limited by",
            "error",
        ],
        rows,
    )
    ops = [
        c
        for c in (
            "FFMA",
            "LDS32",
            "LDS64",
            "LDS128",
            "LDG32",
            "LDG64",
            "LDG128",
            "LDGSTS",
            "STS",
            "BAR",
            "HMMA",
            "HGMMA",
            "total",
        )
        if c in s.columns
    ]
    rows = [
        [
            r["kernel"],
            *[num(r.get(c), "{:.0f}") for c in ops],
            num(r.get("loop_lds_per_ffma"), "{:.3f}"),
            num(r.get("loop_ldg_per_ffma"), "{:.3f}"),
        ]
        for _, r in s.iterrows()
    ]
    lines += md(["kernel", *[op_name(c) for c in ops], "loop LDS/FFMA", "loop LDG/FFMA"], rows)
    occ = s.dropna(subset=["occupancy_pct"]) if "occupancy_pct" in s.columns else s.iloc[0:0]
    tc = [c for c in ("HMMA", "HGMMA") if c in s.columns]
    tensor = s[(s[tc].fillna(0).sum(axis=1) > 0)]["kernel"].tolist() if tc else []
    if len(occ):
        lines += [
            "**Finding:** theoretical occupancy "
            + ", ".join(f"{k} {v:.1f}%" for k, v in zip(occ["kernel"], occ["occupancy_pct"]))
            + (
                "; tensor-core instructions appear in " + ", ".join(tensor)
                if tensor
                else "; no kernel issues a tensor-core instruction (HMMA/HGMMA)"
            )
            + ".",
            "",
        ]
    return lines


def section_counted(run: Run) -> list[str]:
    lines = []
    c = run.tables.get("counted_vs_compiled")
    if c is None:
        return lines + missing("the counted-vs-compiled check", run.missing["counted_vs_compiled"])
    c = run.in_order(c)
    lines += [
        "Loads per FMA counted from the source beside the SASS main loop (instructions of any width per "
        "FFMA); flagged where they differ by more than 10%, with the reason read off the histogram.",
        "",
    ]
    rows = [
        [
            r["kernel"],
            num(r.get("counted_lds_per_fma"), "{:.3f}"),
            num(r.get("sass_lds_per_fma"), "{:.3f}"),
            num(r.get("counted_ldg_per_fma"), "{:.3f}"),
            num(r.get("sass_ldg_per_fma"), "{:.3f}"),
            "yes" if truthy(r.get("flag")) else "no",
            r.get("explanation", ""),
        ]
        for _, r in c.iterrows()
    ]
    lines += md(
        [
            "kernel",
            "counted LDS/FMA",
            "SASS LDS/FMA",
            "counted LDG/FMA",
            "SASS LDG/FMA",
            "differs",
            "explanation",
        ],
        rows,
    )
    flagged = [r["kernel"] for _, r in c.iterrows() if truthy(r.get("flag"))]
    lines += [
        f"**Finding:** {len(flagged)} of {len(c)} kernels compile to a load mix more than 10% off their "
        f"count" + (f" ({', '.join(flagged)})" if flagged else "") + ".",
        "",
    ]
    return lines
