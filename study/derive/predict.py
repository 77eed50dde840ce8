"""``study.predict`` against a run (``predict_check.csv``, written by ``python -m study.predict --check
DIR --write``): per shape, and per kernel over the decode panel, the mean and largest |error| and
the kernels outside the band; each kernel at the main shape with ncu's issue rate beside the
predicted one; the ladder's steps and the twins' ratios at the main shape. The
summing is :func:`study.predict.check.summary`'s, which ``--check`` prints: these tables are its
rows as frames.
"""

from __future__ import annotations

import math

import pandas as pd

from study.errors import InputError
from study.predict import check
from study.rundata.tables import T


def rows_of(predictions: pd.DataFrame) -> list[dict]:
    """``predict_check.csv``'s predicted rows as :func:`study.predict.check.run` emits them."""
    lacks = [c for c in ("source", "kernel", "M", "N", "K", "measured_ms", "ms", "error_pct")
             if c not in predictions.columns]
    if lacks:
        raise InputError(f"{T.predict_check.file}: missing column{'s' * (len(lacks) > 1)} {', '.join(lacks)}")
    out = []
    for r in predictions.itertuples():
        ms = pd.to_numeric(r.ms, errors="coerce")
        if not (isinstance(ms, float) and math.isfinite(ms)):
            continue
        row = {"kernel": str(r.kernel), "shape": [int(r.M), int(r.N), int(r.K)],
               "measured_ms": float(r.measured_ms), "ms": float(ms), "error_pct": float(r.error_pct)}
        if str(r.source) == check.PANEL:
            row["source"] = check.PANEL
        out.append(row)
    return out


def shapes(predict_check: pd.DataFrame) -> pd.DataFrame:
    """One row per shape the run timed (``source`` "run", band ±``check.BAND_PCT``: the kernels
    outside it) and per kernel over the decode panel ("panel KD", band ±``check.PANEL_BAND_PCT``: how
    many points lie outside it; M, N, K empty; ``kernels`` counts the points, ``worst`` is the worst
    point's shape)."""
    rows = []
    for s in check.summary(rows_of(predict_check)):
        if s["summary"] == "shape":
            M, N, K = s["shape"]
            rows.append({"source": "run", "M": M, "N": N, "K": K, "kernels": s["kernels"],
                         "mean_abs_error_pct": s["mean_abs_error_pct"],
                         "max_abs_error_pct": s["max_abs_error_pct"], "worst": s["worst"],
                         "band_pct": check.BAND_PCT, "outside": " ".join(sorted(s["outside_10"]))})
        elif s["summary"] == check.PANEL and s["predicted"]:
            rows.append({"source": f"panel {s['kernel']}", "M": None, "N": None, "K": None,
                         "kernels": s["predicted"], "mean_abs_error_pct": s["mean_abs_error_pct"],
                         "max_abs_error_pct": s["max_abs_error_pct"], "worst": "x".join(map(str, s["worst"])),
                         "band_pct": check.PANEL_BAND_PCT, "outside": f"{s['outside_15']} points"})
    return pd.DataFrame(rows, columns=[*T.predict_shapes.columns])


def ratios(predict_check: pd.DataFrame) -> pd.DataFrame:
    """The ladder's steps (time of Kn over time of Kn+1) and the twins' ratios (the CUDA kernel's time
    over the twin's) at the main shape, measured beside predicted."""
    rows = [{"kind": s["summary"], "a": s["a"], "b": s["b"], "measured": s["measured"],
             "predicted": s["predicted"], "error_pct": s["error_pct"]}
            for s in check.summary(rows_of(predict_check)) if s["summary"] in ("step", "twin")]
    return pd.DataFrame(rows, columns=[*T.predict_ratios.columns])


def at_main(predict_check: pd.DataFrame, counters: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each kernel the run timed at the main shape (``check.MAIN``): its row of ``predict_check``
    with the issue rate ncu read there in the run (``counters``; NaN where it did not)."""
    p = predict_check
    num = {c: pd.to_numeric(p[c], errors="coerce") for c in ("M", "N", "K")}
    at = p[(p["source"].astype(str) == "run") & (num["M"] == check.MAIN[0]) & (num["N"] == check.MAIN[1])
           & (num["K"] == check.MAIN[2])]
    issue: dict[str, float] = {}
    if counters is not None and "issue_pct" in counters.columns:
        c = counters[(pd.to_numeric(counters["M"], errors="coerce") == check.MAIN[0])
                     & (pd.to_numeric(counters["N"], errors="coerce") == check.MAIN[1])
                     & (pd.to_numeric(counters["K"], errors="coerce") == check.MAIN[2])]
        issue = dict(zip(c["kernel"].astype(str), pd.to_numeric(c["issue_pct"], errors="coerce")))
    out = at.assign(ncu_issue_pct=[issue.get(str(k), math.nan) for k in at["kernel"]])
    return out.reindex(columns=[*T.predict_main.columns]).reset_index(drop=True)
