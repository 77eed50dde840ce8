"""The decode panel's derived tables (`docs/method.md#decode-panel`) from its measured rows
(``decode.csv``, written by ``python -m study.decode``).

``summary``: per (shape, M) the decode rung's time (KD), the best vendor kernel's (the faster of
the registry's cuBLAS kernels, K0 and K0L), KD's speed-up over it and over each, KD's share of the
shape's read roof (the time to read B's bytes over KD's time), the fastest kernel there, and the
per-call times (GPU, host, end to end) of KD, the operator and cuBLAS's default. ``findings``: the
geometric mean of KD's speed-up up to ``GEOMEAN_MAX_M``, its least and where, the points where KD
loses or has no time, and how long the panel's rows took to record.

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
    for c in ("N", "K", "M", "gpu_us", "host_us", "e2e_us"):
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


def summary(decode: pd.DataFrame) -> pd.DataFrame:
    """One row per (shape, M) the panel recorded (``SUMMARY_COLUMNS``)."""
    rung, base, vendors = _roles()
    k0, k0l = vendors[0], (vendors[1] if len(vendors) > 1 else "")
    shapes, d = _points(decode)
    timed = _timed(d)
    read = {s: us for s, k, us in zip(timed["shape"], timed["kernel"], timed["gpu_us"]) if k == DECODE_READ}
    at = {(r["shape"], int(r["_m"]), r["kernel"]): r for r in timed.to_dict("records")
          if r["kernel"] != DECODE_READ}
    points = d[d["kernel"] != DECODE_READ].dropna(subset=["M"])
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
                **{f"{who}_{col}": _us(at, s, m, kid, col) for col in ("host_us", "e2e_us")
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


def findings(decode: pd.DataFrame) -> pd.DataFrame:
    """The panel's findings (``FINDING_COLUMNS``): ``value`` in ``unit``, over ``points``,
    ``where`` naming the points it concerns."""
    rung = _roles()[0]
    s = summary(decode)
    best = "the best vendor kernel"  # the faster of ``vendors``, as the section says
    sp = s[np.isfinite(s["speedup"])]
    low = sp[sp["M"] <= GEOMEAN_MAX_M]
    rows = [{
        "finding": f"{rung}'s speed-up over {best}, geometric mean", "unit": "×", "points": len(low),
        "value": float(np.exp(np.log(low["speedup"]).mean())) if len(low) else NAN,
        "where": f"M <= {GEOMEAN_MAX_M}", "note": "",
    }]
    least = sp.loc[[sp["speedup"].idxmin()]] if len(sp) else sp
    rows.append({"finding": f"{rung}'s least speed-up over {best}", "unit": "×", "points": len(sp),
                 "value": float(least["speedup"].iloc[0]) if len(least) else NAN, "where": _where(least),
                 "note": ""})
    loses = sp[sp["speedup"] < 1.0]
    rows.append({"finding": f"points where {rung} is slower than {best}", "unit": "points", "points": len(sp),
                 "value": len(loses), "where": _where(loses), "note": ""})
    untimed = s[~np.isfinite(s["kd_us"])]
    if len(untimed):
        _, d = _points(decode)
        status = {(r["shape"], int(r["_m"])): r["status"] for r in d[d["kernel"] == rung].to_dict("records")}
        why = "; ".join(f"{a} M={int(m)} ({status.get((a, int(m)), 'not measured')})"
                        for a, m in zip(untimed["shape"], untimed["M"]))
        rows.append({"finding": f"points where {rung} has no time", "unit": "points", "points": len(s),
                     "value": len(untimed), "where": why, "note": ""})
    took = panel_seconds(decode)
    if took is not None:
        secs, n, runs = took
        over = f", summed over {runs} runs" if runs > 1 else ""
        rows.append({"finding": "the panel's rows were recorded over", "unit": "s", "points": NAN,
                     "value": secs, "where": "", "note": f"first row to last of {n} rows{over}"})
    return pd.DataFrame(rows, columns=FINDING_COLUMNS)
