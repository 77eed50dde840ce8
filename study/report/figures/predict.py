"""Predicted against measured: each kernel at each shape the run timed as a point (the time
``study.predict`` gives from the SASS and the launch against the run's median), one colour per
shape, the decode panel's points in grey, the line of equality and its ±10% band; from
predict_check.csv.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from study.report.figures.common import (
    PAGE_IN,
    SMALL,
    Skip,
    lay_out,
    legend_right,
    new_figure,
    short_shape,
    table,
)
from study.report.load import Run


def draw_predict(run: Run) -> Figure:
    p = table(run, "predict_check")
    p = p.assign(ms=pd.to_numeric(p["ms"], errors="coerce"),
                 measured_ms=pd.to_numeric(p["measured_ms"], errors="coerce"))
    p = p[np.isfinite(p["ms"]) & np.isfinite(p["measured_ms"]) & (p["ms"] > 0) & (p["measured_ms"] > 0)]
    if p.empty:
        raise Skip("predict_check.csv has no predicted row")
    fig, ax = new_figure((PAGE_IN, PAGE_IN * 0.55))
    panel = p[p["source"].astype(str) == "panel"]
    ax.scatter(panel["measured_ms"], panel["ms"], s=10, color="0.7", linewidths=0, label="decode panel")
    runs = p[p["source"].astype(str) != "panel"]
    shapes = sorted({(int(r.M), int(r.N), int(r.K)) for r in runs.itertuples()},
                    key=lambda s: s[0] * s[1] * s[2])
    palette = [f"C{i}" for i in range(10) if i != 7]  # C7 is the panel's grey
    colours = [palette[i % len(palette)] for i in range(len(shapes))]
    for s, c in zip(shapes, colours):
        at = runs[(runs["M"] == s[0]) & (runs["N"] == s[1]) & (runs["K"] == s[2])]
        ax.scatter(at["measured_ms"], at["ms"], s=16, color=c, linewidths=0, label=short_shape(*s))
    lo = float(min(p["ms"].min(), p["measured_ms"].min())) / 1.5
    hi = float(max(p["ms"].max(), p["measured_ms"].max())) * 1.5
    xs = np.array([lo, hi])
    ax.plot(xs, xs, color="0.3", linewidth=1)
    ax.fill_between(xs, xs / 1.1, xs * 1.1, color="0.85", alpha=0.6, linewidth=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set(xlim=(lo, hi), ylim=(lo, hi), xlabel="measured ms (the run's median)",
           ylabel="predicted ms (SASS and launch)")
    h, labels = ax.get_legend_handles_labels()
    legend_right(ax, h, labels)
    ax.tick_params(labelsize=SMALL)
    return lay_out(fig, run, "Predicted against measured")
