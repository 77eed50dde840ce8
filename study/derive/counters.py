"""The hardware counters of a run (Nsight Compute), aggregated per kernel and shape, and the
ladder: what each CUDA rung bought and which ledger moved.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from study import kernels as registry
from study.derive.selection import in_order, main_rows
from study.rundata.rows import at_main_shapes, by_kernel
from study.rundata.tables import T

NAN = math.nan


# ---------------------------------------------------------------------------------------------
# Hardware counters

# ncu metric names the counters table reads (study/profile.py asks for them)
NCU = {
    "time": "gpu__time_duration.sum",
    "regs": "launch__registers_per_thread",
    "warps": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "issue": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "fma_pipe": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "inst": "smsp__inst_executed.sum",
    "inst_fma": "smsp__inst_executed_pipe_fma.sum",
    "lds": "smsp__inst_executed_op_shared_ld.sum",
    "wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
}
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(.+)_per_issue_active\.ratio$")
TIME_NS = {
    "ns": 1.0,
    "nsecond": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "s": 1e9,
    "second": 1e9,
}
COUNTER_COLUMNS = [*T.counters.columns]  # declared in study.rundata.tables


def _num(df: pd.DataFrame, name: str) -> pd.Series:
    if name not in df.columns:
        return pd.Series(NAN, index=df.index, dtype=float)
    return pd.to_numeric(df[name], errors="coerce")


def _div(a: float, b: float) -> float:
    """a / b, NaN where b is 0 or either is missing (a kernel with no shared loads, say)."""
    return a / b if np.isfinite(a) and np.isfinite(b) and b != 0 else NAN


def top_stalls(r: pd.Series, n: int = 3) -> str:
    """The ``n`` largest stall reasons per issued instruction.

    'selected' is the cycle of issuing and 'not_selected' a ready warp passed over for another:
    neither is a wait, so neither is listed.
    """
    stalls = []
    for name, v in r.items():
        m = STALL.match(str(name))
        if m and m.group(1) not in ("selected", "not_selected") and np.isfinite(v) and v > 0:
            stalls.append((float(v), m.group(1)))
    return ", ".join(f"{s} {v:.2f}" for v, s in sorted(stalls, reverse=True)[:n]) or "–"


def _joined(g: pd.DataFrame, column: str) -> str:
    """The distinct values of ``column`` in ``g``, joined (where the counters were read)."""
    if column not in g.columns:
        return ""
    return ", ".join(sorted({str(v) for v in g[column].dropna() if str(v).strip()}))


def combined(g: pd.DataFrame) -> pd.Series:
    """Metric -> value of one kernel and shape's rows (``metric``, ``value``, ``launch``; values
    numeric, times in ns): counts (``.sum``) added over the launches, stalls per issued instruction
    weighted by each launch's instructions, other rates and ratios by its duration (evenly where a
    weight is missing)."""
    wide = g.pivot_table(index="launch", columns="metric", values="value", aggfunc="last")
    even = pd.Series(1 / len(wide), index=wide.index)

    def weights(metric: str) -> pd.Series:
        x = _num(wide, metric)
        return x / x.sum() if x.notna().all() and x.sum() > 0 else even

    by_time, by_inst = weights(NCU["time"]), weights(NCU["inst"])
    agg = {}
    for name in wide.columns:
        col = _num(wide, name)
        w = by_inst if STALL.match(name) else by_time
        agg[name] = col.sum() if name.endswith(".sum") else float((col * w).sum(min_count=1))
    return pd.Series(agg, dtype=float)


def counters(ncu: pd.DataFrame) -> pd.DataFrame:
    """One row per (kernel, shape): the latest ncu run's counters, launches combined, and the
    figures per warp FMA (M·N·K/32: the problem's multiply-adds counted by warps).

    Counts (``.sum``) add over launches; rates and ratios are weighted by each launch's
    duration. ``ms`` is converted from whatever unit ncu printed.
    """
    df = ncu.copy()
    df["metric"] = df["metric"].astype(str)
    df["kernel"] = df["kernel"].astype(str)
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    if "launch" not in df.columns:
        df["launch"] = 0
    if "unit" in df.columns:
        is_time = df["metric"] == NCU["time"]
        scale = df["unit"].astype(str).map(TIME_NS).fillna(1.0)
        df.loc[is_time, "value"] = df.loc[is_time, "value"] * scale[is_time]
    if "run_id" in df.columns:  # several profiles of one kernel and shape: the latest wins
        last = df.groupby(["kernel", "M", "N", "K"])["run_id"].transform(lambda r: r.astype(str).max())
        df = df[df["run_id"].astype(str) == last]
    rows = []
    for (kid, M, N, K), g in df.groupby(["kernel", "M", "N", "K"], sort=False):
        r = combined(g)
        launches = g["launch"].nunique()
        g_ = lambda key, r=r: float(r.get(NCU[key], NAN))  # noqa: E731
        wfma = M * N * K / 32
        rows.append(
            {
                "kernel": kid,
                "M": M,
                "N": N,
                "K": K,
                "launches": launches,
                "ms": g_("time") / 1e6,
                "regs": g_("regs"),
                "warps_pct": g_("warps"),
                "issue_pct": g_("issue"),
                "fma_pipe_pct": g_("fma_pipe"),
                "fma_share": _div(g_("inst_fma"), g_("inst")),
                "inst_per_wfma": g_("inst") / wfma,
                "lds_per_wfma": g_("lds") / wfma,
                "wavefronts_per_wfma": g_("wavefronts") / wfma,
                "conflicts_per_wavefront": _div(g_("conflicts"), g_("wavefronts")),
                "sectors_per_wfma": g_("sectors") / wfma,
                "requests_per_wfma": g_("requests") / wfma,
                "top_stalls": top_stalls(r),
                "commit": _joined(g, "commit"),
                "run_id": _joined(g, "run_id"),
            }
        )
    out = pd.DataFrame(rows, columns=COUNTER_COLUMNS)
    return in_order(out).reset_index(drop=True) if len(out) else out


# ---------------------------------------------------------------------------------------------
# The ladder: what each CUDA rung bought, and which ledger moved

# ledger column of the ladder table -> how the report names it. The "moved" ledger is the one
# whose value changed by the largest factor from the rung before, among those that changed the
# way the time did (a cost that fell for a speed-up, rose for a slow-down; occupancy, which hides
# latency, the other way round), or among all of them when none did.
LADDER_LEDGERS = {
    "sectors_per_wfma": "global sectors per warp FMA (ncu)",
    "loads_per_fma": "loads per FMA (counted)",
    "issue_per_ffma": "SASS instructions per FFMA (main loop)",
    "wavefronts_per_wfma": "shared wavefronts per warp FMA (ncu)",
    "bar_per_phase": "barriers per phase (SASS main loop)",
    "occupancy_pct": "occupancy %",
}
HIGHER_IS_BETTER = {"occupancy_pct"}


def moved_ledger(prev: dict, row: dict, speedup: float) -> tuple[str, float, float, float] | None:
    """(column, before, after, factor) of the ledger that moved most from ``prev`` to ``row`` in the
    direction of ``speedup`` (the rung before's time over this one's); None when no ledger has
    two positive values."""
    changed = []
    for col in LADDER_LEDGERS:
        a, b = float(prev[col]), float(row[col])
        if np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0:
            changed.append((col, a, b, b / a))
    if not changed:
        return None

    def helps(c) -> bool:  # the change makes the rung faster
        return c[3] > 1 if c[0] in HIGHER_IS_BETTER else c[3] < 1

    pool = changed
    if np.isfinite(speedup) and speedup != 1:
        pool = [c for c in changed if helps(c) == (speedup > 1) and c[3] != 1] or changed
    return max(pool, key=lambda c: abs(math.log(c[3])))


LADDER_COLUMNS = [*T.ladder.columns]  # declared in study.rundata.tables


def ladder(ledger: pd.DataFrame, sass: pd.DataFrame | None, counters_: pd.DataFrame | None) -> pd.DataFrame:
    """Per CUDA rung timed in the main experiment, in ladder order: its speed, its speed-up over the
    rung before, its ledgers (counted, SASS, counters) and the ledger that moved most from the rung
    before, the way its time moved (:func:`moved_ledger`)."""
    main_ = main_rows(ledger)
    main = by_kernel(main_)
    s = by_kernel(sass) if sass is not None and "kernel" in sass.columns else {}
    # the counters read at the main rows' shapes (those at other shapes are other launches)
    c = by_kernel(at_main_shapes(counters_, main_)) if counters_ is not None and len(counters_) else {}
    rows, prev = [], None
    for k in registry.cuda_ladder():
        if k.id not in main:
            continue
        r = main[k.id]
        sr, cr = s.get(k.id), c.get(k.id)
        loop_ffma = float(sr["loop_FFMA"]) if sr is not None and pd.notna(sr.get("loop_FFMA")) else NAN
        row = {
            "kernel": k.id,
            "idea": k.idea,
            "ms": r["ms"],
            "gflops": r["gflops"],
            "pct_cublas": r["pct_cublas"],
            "speedup": prev["ms"] / r["ms"] if prev is not None else NAN,
            "sectors_per_wfma": cr["sectors_per_wfma"] if cr is not None else NAN,
            "loads_per_fma": r.get("loads_per_fma", NAN),
            "issue_per_ffma": float(sr["loop_total"]) / loop_ffma
            if sr is not None and loop_ffma > 0
            else NAN,
            "wavefronts_per_wfma": cr["wavefronts_per_wfma"] if cr is not None else NAN,
            "bar_per_phase": float(sr["loop_BAR"])
            if sr is not None and pd.notna(sr.get("loop_BAR"))
            else NAN,
            "registers": sr["registers"] if sr is not None else NAN,
            "occupancy_pct": sr["occupancy_pct"] if sr is not None else NAN,
            "issue_pct": cr["issue_pct"] if cr is not None else NAN,
            "fma_pipe_pct": cr["fma_pipe_pct"] if cr is not None else NAN,
            "moved": "",
            "moved_from": NAN,
            "moved_to": NAN,
            "moved_factor": NAN,
        }
        if prev is not None:
            best = moved_ledger(prev, row, row["speedup"])
            if best is not None:
                row.update(
                    moved=LADDER_LEDGERS[best[0]], moved_from=best[1], moved_to=best[2], moved_factor=best[3]
                )
        rows.append(row)
        prev = row
    return pd.DataFrame(rows, columns=LADDER_COLUMNS)
