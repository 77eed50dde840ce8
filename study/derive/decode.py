"""The decode panel's derived tables (`docs/method.md#decode-panel`) from its measured rows
(``decode.csv``, written by ``python -m study.decode``).

``summary``: per (shape, M) the decode rung's time (KD), the best vendor kernel's (the faster of
the registry's cuBLAS kernels, K0 and K0L), KD's speed-up over it and over each, KD's share of the
shape's read roof (the time to read B's bytes over KD's time), the fastest kernel there, and the
per-call times (GPU, host, end to end) of KD, the operator and cuBLAS's default: the host's cost
from the host pass (``decode_host.csv``, ``python -m study.measure.decode_host``), the median of
its passes, and the operator's slowest pass. ``findings``: the geometric mean of KD's speed-up up
to ``GEOMEAN_MAX_M``, its least and where, the points where KD loses or has no time, the
operator's host cost against ``HOST_LIMIT_US``, and how long the panel's rows took to record.

Only rows with status "ok" and a time count; where a (shape, M, kernel) was recorded twice the last
row wins. Shapes come in the order the rows first name them (the panel's order for a run that
measured it in one go), M ascending.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from study import kernels as registry
from study.errors import InputError
from study.rundata.tables import DECODE_OPERATOR, DECODE_READ, T

GEOMEAN_MAX_M = 32  # the findings' geometric mean is over M up to this (the batch sizes of decode)
HOST_LIMIT_US = 12.0  # the host cost per call the operator is held to (its slowest pass)
NAN = math.nan
SUMMARY_COLUMNS = [*T.decode_summary.columns]  # declared in study.rundata.tables
FINDING_COLUMNS = [*T.decode_findings.columns]


def _roles() -> tuple[str, str, tuple[str, ...]]:
    """The decode rung, the vendor default and the vendor kernels, from the registry: the CUDA
    kernel meant for decode, the baseline, every cuBLAS kernel (the baseline first)."""
    rung = next(k.id for k in registry.by_impl("cuda") if k.meant_for == "decode")
    base = registry.BASELINE.id
    vendors = (base, *(k.id for k in registry.by_impl("cublas") if k.id != base))
    return rung, base, vendors


def _check(decode: pd.DataFrame) -> None:
    lacks = [c for c in T.decode.required if c not in decode.columns]
    if lacks:
        raise InputError(f"{T.decode.file}: missing column{'s' * (len(lacks) > 1)} "
                         + ", ".join(map(repr, lacks)))


def _points(decode: pd.DataFrame) -> tuple[list[str], pd.DataFrame]:
    """The shapes in the order the rows first name them, and every row as typed: kernel, shape and
    status as text, M and the times as numbers; a later row of the same (shape, M, kernel) replaces
    an earlier one."""
    _check(decode)
    d = decode.copy()
    for c in ("shape", "kernel", "status"):
        d[c] = d[c].astype(str).str.strip()
    for c in ("N", "K", "M", "gpu_us", "e2e_us"):
        d[c] = pd.to_numeric(d[c], errors="coerce")
    shapes = list(dict.fromkeys(d["shape"]))
    d["_m"] = d["M"].fillna(-1)  # a read-roof row has no M
    d = d.drop_duplicates(["shape", "_m", "kernel"], keep="last")
    return shapes, d


def _timed(d: pd.DataFrame) -> pd.DataFrame:
    return d[(d["status"] == "ok") & (d["gpu_us"] > 0)]


def _us(at: dict, shape: str, m: int, kid: str, column: str = "gpu_us") -> float:
    """A time of ``kid`` at (shape, M) from the timed rows ``at``; NaN where it has none."""
    r = at.get((shape, m, kid))
    v = r[column] if r is not None else NAN
    return float(v) if v is not None and np.isfinite(v) and v > 0 else NAN


def host_costs(decode_host: pd.DataFrame | None) -> dict[tuple[str, int, str], tuple[float, float]]:
    """(shape, M, kernel) -> the host pass's cost of a call in µs: the median over its passes and
    the slowest pass (each pass's figure its median batch); only rows with status "ok" count."""
    if decode_host is None or decode_host.empty:
        return {}
    lacks = [c for c in ("shape", "M", "kernel", "status", "host_us") if c not in decode_host.columns]
    if lacks:
        raise InputError(f"{T.decode_host.file}: missing column{'s' * (len(lacks) > 1)} "
                         + ", ".join(map(repr, lacks)))
    h = decode_host.copy()
    h["host_us"] = pd.to_numeric(h["host_us"], errors="coerce")
    h["M"] = pd.to_numeric(h["M"], errors="coerce")
    h = h[(h["status"].astype(str).str.strip() == "ok") & (h["host_us"] > 0) & h["M"].notna()]
    g = h.groupby([h["shape"].astype(str).str.strip(), h["M"].astype(int),
                   h["kernel"].astype(str).str.strip()])
    return {k: (float(v.median()), float(v.max())) for k, v in g["host_us"]}


def summary(decode: pd.DataFrame, decode_host: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (shape, M) the panel recorded (``SUMMARY_COLUMNS``); the host columns empty
    where the host pass has no row of the point."""
    rung, base, vendors = _roles()
    k0, k0l = vendors[0], (vendors[1] if len(vendors) > 1 else "")
    shapes, d = _points(decode)
    timed = _timed(d)
    read = {s: us for s, k, us in zip(timed["shape"], timed["kernel"], timed["gpu_us"]) if k == DECODE_READ}
    at = {(r["shape"], int(r["_m"]), r["kernel"]): r for r in timed.to_dict("records")
          if r["kernel"] != DECODE_READ}
    points = d[d["kernel"] != DECODE_READ].dropna(subset=["M"])
    host = host_costs(decode_host)
    rows = []
    for s in shapes:
        here = points[points["shape"] == s]
        for m in sorted({int(v) for v in here["M"]}):
            t = {kid: _us(at, s, m, kid) for kid in {rung, base, *vendors, DECODE_OPERATOR}}
            kd = t[rung]
            vendor_us, _, vendor = min(((t[v], i, v) for i, v in enumerate(vendors) if np.isfinite(t[v])),
                                       default=(NAN, 0, ""))
            fastest_us, _, fastest = min(((r["gpu_us"], i, k) for i, ((s2, m2, k), r) in enumerate(at.items())
                                          if (s2, m2) == (s, m)), default=(NAN, 0, ""))
            read_us = read.get(s, NAN)
            k0l_us = t[k0l] if k0l else NAN
            rows.append({
                "shape": s, "N": int(here["N"].iloc[0]), "K": int(here["K"].iloc[0]), "M": m,
                "kd_us": kd, "k0_us": t[k0], "k0l_us": k0l_us, "vendor": vendor, "vendor_us": vendor_us,
                "speedup": vendor_us / kd, "speedup_k0": t[k0] / kd, "speedup_k0l": k0l_us / kd,
                "read_us": read_us, "pct_read_roof": 100.0 * read_us / kd,
                "fastest": fastest, "fastest_us": fastest_us, "op_us": t[DECODE_OPERATOR],
                **{f"{who}_host_us": host.get((s, m, kid), (NAN, NAN))[0]
                   for who, kid in (("kd", rung), ("op", DECODE_OPERATOR), ("k0", base))},
                "op_host_max_us": host.get((s, m, DECODE_OPERATOR), (NAN, NAN))[1],
                **{f"{who}_e2e_us": _us(at, s, m, kid, "e2e_us")
                   for who, kid in (("kd", rung), ("op", DECODE_OPERATOR), ("k0", base))},
            })
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def _where(df: pd.DataFrame) -> str:
    return "; ".join(f"{s} M={int(m)}" for s, m in zip(df["shape"], df["M"]))


def panel_seconds(decode: pd.DataFrame) -> tuple[float, int, int] | None:
    """How long the panel's rows took to record: per run (``run_id``) its last row's timestamp
    minus its first's, summed over the runs; with the rows and runs counted. None where no row has
    a timestamp that reads as one."""
    if "timestamp" not in decode.columns:
        return None
    t = pd.to_datetime(decode["timestamp"].astype(str), utc=True, errors="coerce", format="ISO8601")
    runs = decode["run_id"].astype(str) if "run_id" in decode.columns else pd.Series("", index=decode.index)
    ok = t.notna()
    if not ok.any():
        return None
    spans = t[ok].groupby(runs[ok]).agg(lambda g: (g.max() - g.min()).total_seconds())
    return float(spans.sum()), int(ok.sum()), len(spans)


def _host_findings(s: pd.DataFrame, decode_host: pd.DataFrame | None) -> list[dict]:
    """The operator's host cost per call over the points the host pass measured: its median, its
    slowest pass and where, and the points whose slowest pass is above ``HOST_LIMIT_US``."""
    h = s[np.isfinite(s["op_host_max_us"])]
    if h.empty:
        return []
    passes = ""
    if decode_host is not None and "pass" in decode_host.columns:
        passes = f"{pd.to_numeric(decode_host['pass'], errors='coerce').nunique()} passes; "
    worst = h.loc[[h["op_host_max_us"].idxmax()]]
    over = h[h["op_host_max_us"] > HOST_LIMIT_US]
    op = f"the operator's ({DECODE_OPERATOR}) host cost per call"
    return [
        {"id": "host_median", "finding": f"{op}, median over the points", "unit": "µs",
         "points": len(h), "value": float(h["op_host_us"].median()), "where": "",
         "note": f"{passes}each point its passes' median"},
        {"id": "host_slowest", "finding": f"{op}, the slowest pass", "unit": "µs", "points": len(h),
         "value": float(worst["op_host_max_us"].iloc[0]), "where": _where(worst), "note": ""},
        {"id": "host_over", "finding": f"points where {op} is above {HOST_LIMIT_US:g} µs in a pass",
         "unit": "points", "points": len(h), "value": len(over), "where": _where(over), "note": ""},
    ]


def findings(decode: pd.DataFrame, decode_host: pd.DataFrame | None = None) -> pd.DataFrame:
    """The panel's findings (``FINDING_COLUMNS``): ``value`` in ``unit``, over ``points``,
    ``where`` naming the points it concerns."""
    rung = _roles()[0]
    s = summary(decode, decode_host)
    best = "the best vendor kernel"  # the faster of ``vendors``, as the section says
    sp = s[np.isfinite(s["speedup"])]
    low = sp[sp["M"] <= GEOMEAN_MAX_M]
    rows = [{
        "id": "geomean", "finding": f"{rung}'s speed-up over {best}, geometric mean", "unit": "×",
        "points": len(low),
        "value": float(np.exp(np.log(low["speedup"]).mean())) if len(low) else NAN,
        "where": f"M <= {GEOMEAN_MAX_M}", "note": "",
    }]
    least = sp.loc[[sp["speedup"].idxmin()]] if len(sp) else sp
    rows.append({"id": "least", "finding": f"{rung}'s least speed-up over {best}", "unit": "×",
                 "points": len(sp), "value": float(least["speedup"].iloc[0]) if len(least) else NAN,
                 "where": _where(least), "note": ""})
    loses = sp[sp["speedup"] < 1.0]
    rows.append({"id": "loses", "finding": f"points where {rung} is slower than {best}", "unit": "points",
                 "points": len(sp), "value": len(loses), "where": _where(loses), "note": ""})
    untimed = s[~np.isfinite(s["kd_us"])]
    if len(untimed):
        _, d = _points(decode)
        status = {(r["shape"], int(r["_m"])): r["status"] for r in d[d["kernel"] == rung].to_dict("records")}
        why = "; ".join(f"{a} M={int(m)} ({status.get((a, int(m)), 'not measured')})"
                        for a, m in zip(untimed["shape"], untimed["M"]))
        rows.append({"id": "untimed", "finding": f"points where {rung} has no time", "unit": "points",
                     "points": len(s), "value": len(untimed), "where": why, "note": ""})
    rows += _host_findings(s, decode_host)
    took = panel_seconds(decode)
    if took is not None:
        secs, n, runs = took
        over = f", summed over {runs} runs" if runs > 1 else ""
        rows.append({"id": "took", "finding": "the panel's rows were recorded over", "unit": "s",
                     "points": NAN, "value": secs, "where": "",
                     "note": f"first row to last of {n} rows{over}"})
    return pd.DataFrame(rows, columns=FINDING_COLUMNS)
