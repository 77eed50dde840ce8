"""Hardware counters (Nsight Compute), per kernel, and what they say against cuBLAS."""

from __future__ import annotations

import numpy as np
import pandas as pd

from study.report.load import NOT_IN_RUN, Run
from study.report.md import by_kernel, md, missing, num, shape
from study.rundata.rows import one_shape


def section_counters(run: Run) -> list[str]:
    if "counters" not in run.tables:
        why = (
            run.missing.get("ncu", f"ncu.csv {NOT_IN_RUN}")
            if "ncu" in run.missing
            else "ncu.csv holds no counters of the launches this run timed"
        )
        how = "`python -m study.profile` reads them with Nsight Compute"
        return missing("hardware counters", f"{why}; {how}") + stale_lines(run)
    tab = run.tables["counters"]
    lines = [
        "Nsight Compute counters of one launch per kernel (`python -m study.profile`, clocks left "
        "as they are). A *warp FMA* is M·N·K/32, the multiply-adds of the problem counted by "
        "warps (independent of the code); `issue` is the share of scheduler cycles that issued an "
        "instruction; stalls are cycles per issued instruction, largest first (waits only: a ready "
        "warp passed over for another is not counted).",
        "",
    ]
    where = []
    for what, c in (("commit", "commit"), ("run", "run_id")):
        cells = tab.get(c, pd.Series(dtype=str)).dropna()
        vals = sorted({v.strip() for cell in cells for v in str(cell).split(",") if v.strip()})
        if vals:
            where.append(f"{what} {', '.join(vals)}")
    if where:
        lines += [f"Read at {'; '.join(where)}: the commit the times were measured at, with the launch "
                  "they timed.", ""]
    header = [
        "kernel",
        "shape",
        "ms",
        "regs",
        "warps active %",
        "issue %",
        "FMA pipe %",
        "FMA-pipe share of instr.",
        "instr. / warp FMA",
        "LDS / warp FMA",
        "bank conflicts / wavefront",
        "global sectors / warp FMA",
        "top stalls",
    ]
    rows = [
        [
            r["kernel"],
            shape(r["M"], r["N"], r["K"]),
            num(r["ms"], "{:.3f}"),
            num(r["regs"], "{:.0f}"),
            num(r["warps_pct"]),
            num(r["issue_pct"]),
            num(r["fma_pipe_pct"]),
            num(r["fma_share"], "{:.3f}"),
            num(r["inst_per_wfma"], "{:.3f}"),
            num(r["lds_per_wfma"], "{:.3f}"),
            num(r["conflicts_per_wavefront"], "{:.3f}"),
            num(r["sectors_per_wfma"], "{:.2f}"),
            r["top_stalls"],
        ]
        for _, r in tab.iterrows()
    ]
    return (lines + md(header, rows) + _findings(run, one_shape(tab, run.main_rows(run.measured)))
            + stale_lines(run))


def stale_lines(run: Run) -> list[str]:
    """The counters the run holds that describe no timed row of it (stale_counters.csv)."""
    stale = run.tables.get("stale_counters")
    if stale is None:
        return []
    rows = [[r["kernel"], shape(r["M"], r["N"], r["K"]), r["why"]] for _, r in stale.iterrows()]
    return [f"**Counters left out** ({len(stale)} kernel-shape pairs): read at another commit, or with "
            "another launch, than the times of this run; no table, model or finding uses them.", "",
            *md(["kernel", "shape", "why"], rows)]


def _findings(run: Run, tab: pd.DataFrame) -> list[str]:
    """Sentences from the counters at one shape (``tab``: the main experiment's where read there):
    the issue gap to cuBLAS, the request ledger check."""
    out = []
    by = by_kernel(tab)
    base = run.baseline
    if base in by:
        b = by[base]
        # the headline kernels, and the fastest CUDA rung profiled where it is not among them
        ladder = [kid for kid in run.ladder if kid in by and np.isfinite(by[kid]["ms"])]
        fastest = [min(ladder, key=lambda kid: by[kid]["ms"])] if ladder else []
        for kid in dict.fromkeys([*run.headline(by), *fastest]):
            if kid not in by or kid == base:
                continue
            r = by[kid]
            out += [
                f"**Finding ({kid} vs cuBLAS):** {kid} executes {num(r['inst_per_wfma'], '{:.3f}')} "
                "instructions "
                f"per warp FMA against cuBLAS's {num(b['inst_per_wfma'], '{:.3f}')}, and issues on "
                f"{num(r['issue_pct'])}% of scheduler cycles against {num(b['issue_pct'])}%; "
                "its FMA pipe is busy "
                f"{num(r['fma_pipe_pct'])}% of cycles against {num(b['fma_pipe_pct'])}% (top stalls: "
                f"{r['top_stalls']}).",
                "",
            ]
    for kid in run.with_role("request_ledger"):
        if kid not in by:
            continue
        r = by[kid]
        out += [
            f"**Request ledger ({kid}):** counted {run.kernel(kid)['req_per_fma']:g} requests per warp FMA; "
            f"measured {r['sectors_per_wfma']:.2f} 32-byte sectors and {r['requests_per_wfma']:.2f} load "
            "instructions per warp FMA (the ledger counts a warp's coalesced 128-byte load as one request; "
            "it spans 4 sectors).",
            "",
        ]
    return out
