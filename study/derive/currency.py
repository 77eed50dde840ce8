"""Counters bound to the timed run: a kernel's Nsight Compute counters describe its time only where
they were read at the commit the time was measured at, with the same launch (an autotuned
kernel's configuration, a kernel of several paths' function).

``split(ncu, times)`` keeps, per (kernel, shape), the latest profiling run's rows, and parts them
into the *current* ones (every model, table and finding reads only these) and the *stale* ones,
each with why (``stale_counters.csv``; the report lists them).
"""

from __future__ import annotations

import json

import pandas as pd

from study import kernels as registry
from study.derive.selection import in_order
from study.rundata.tables import T

SHAPE = ["kernel", "M", "N", "K"]


def latest(ncu: pd.DataFrame) -> pd.DataFrame:
    """The rows of each (kernel, shape)'s latest profiling run (``run_id``, where recorded)."""
    df = ncu.copy()
    df["kernel"] = df["kernel"].astype(str)
    if "run_id" not in df.columns:
        return df
    last = df.groupby(SHAPE)["run_id"].transform(lambda r: r.astype(str).max())
    return df[df["run_id"].astype(str) == last]


def _config(text) -> dict:
    if not isinstance(text, str) or not text.strip().startswith("{"):
        return {}
    try:
        cfg = json.loads(text)
    except ValueError:
        return {}
    return cfg if isinstance(cfg, dict) else {}


def _last_config(df: pd.DataFrame) -> dict:
    """The configuration the last row of ``df`` that records one names."""
    if "config" not in df.columns or not df["config"].notna().any():
        return {}
    return _config(df["config"].dropna().iloc[-1])


def _one(values) -> str:
    vals = sorted({str(v) for v in values if isinstance(v, str) and v.strip()})
    return ", ".join(vals)


def why_stale(kid: str, g: pd.DataFrame, timed: pd.DataFrame) -> str:
    """Why the counters ``g`` (one kernel, one shape, one profiling run) do not describe the timed
    rows ``timed`` of that kernel and shape ("" where they do)."""
    if timed.empty:
        return "no time at this shape in the run"
    read_at = _one(g["commit"]) if "commit" in g.columns else ""
    timed_at = _one(timed["commit"]) if "commit" in timed.columns else ""
    if not read_at or read_at != timed_at:
        return f"read at commit {read_at or 'not recorded'}; timed at {timed_at or 'not recorded'}"
    k = registry.BY_ID.get(kid)
    if k is not None and k.tuned:
        read, ran = _last_config(g), _last_config(timed)
        if not read:
            return "the autotuned configuration it was read with is not recorded"
        if read != ran:
            return (f"read with {json.dumps(read, sort_keys=True)}; "
                    f"timed with {json.dumps(ran, sort_keys=True)}")
    if "symbol" in timed.columns and "ncu_kernel" in g.columns:
        # a launcher of several kernels (a transposition ahead of the product) is read whole: the
        # counters describe the timed call where the function it names is among those read
        launched = _one(timed["symbol"])
        profiled = _one(g["ncu_kernel"])
        read = {str(x) for x in g["ncu_kernel"].dropna()}
        if launched and profiled and launched not in read:
            return f"read of {profiled}; the timed rows launched {launched}"
    return ""


def split(ncu: pd.DataFrame | None, times: pd.DataFrame) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """(the current counter rows, or None where none is; the stale (kernel, shape)s with why)."""
    stale = []
    if ncu is None or not len(ncu):
        return None, pd.DataFrame(columns=[*T.stale_counters.columns])
    df = latest(ncu)
    keep = []
    contiguous = times
    if "ld" in times.columns:  # ncu profiles a shape on its natural strides
        contiguous = times[pd.to_numeric(times["ld"], errors="coerce").isna()]
    for (kid, M, N, K), g in df.groupby(SHAPE, sort=False):
        timed = contiguous[(contiguous["kernel"].astype(str) == kid) & (contiguous["M"] == M)
                           & (contiguous["N"] == N) & (contiguous["K"] == K)]
        why = why_stale(kid, g, timed)
        if why:
            stale.append({"kernel": kid, "M": M, "N": N, "K": K,
                          "commit": _one(g["commit"]) if "commit" in g.columns else "",
                          "run_id": _one(g["run_id"]) if "run_id" in g.columns else "", "why": why})
        else:
            keep.append(g)
    out = pd.DataFrame(stale, columns=[*T.stale_counters.columns])
    out = in_order(out).reset_index(drop=True) if len(out) else out
    return (pd.concat(keep, ignore_index=True) if keep else None), out
