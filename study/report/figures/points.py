"""The scatter figures: the roofline, and both models' predicted against measured cadence.

Their point labels are placed by ``labels.place`` (none collides with another, a marker or the
legend; a label with no room is left out) once the layout is fixed; each legend sits outside the axes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from study.report.figures import labels
from study.report.figures.common import (
    BAND_PCT,
    PAGE_IN,
    Skip,
    impl_colors,
    lay_out,
    ledger_main,
    legend_above,
    legend_right,
    new_figure,
    short_shape,
    table,
    thousands,
)
from study.report.load import Run
from study.report.md import BOUND_NAMES, shape

MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")  # one a shape, the main shape's first
CADENCE = "cycles per warp-FMA per SM"


def draw_roofline(run: Run) -> Figure:
    led = ledger_main(run)
    pts = led[led["ai"].notna() & led["gflops"].notna()] if "ai" in led.columns else led.iloc[0:0]
    if pts.empty or run.gpu is None:
        raise Skip("no kernel with an arithmetic intensity" if run.gpu else "no GPU constants")
    bw, peak = run.gpu.dram_gbps, run.gpu.peak_gflops
    x = np.logspace(np.log10(pts["ai"].min() / 2), np.log10(max(pts["ai"].max() * 2, 2 * peak / bw)), 200)
    fig, ax = new_figure((PAGE_IN, 6.4))
    ax.plot(x, x * bw, c="0.3", lw=1.2, label=f"DRAM roof: AI × {bw:,.0f} GB/s")
    ax.axhline(peak, c="0.3", ls="--", lw=1.2, label=f"FP32 roof: {peak:,.0f} GFLOP/s (max clock)")
    cub = led[led["impl"] == "cublas"]["gflops"].dropna()
    if len(cub):
        ax.axhline(cub.iloc[0], c="tab:green", ls=":", lw=1, label=f"cuBLAS {cub.iloc[0]:,.0f} GFLOP/s")
    sns.scatterplot(pts, x="ai", y="gflops", hue="impl", style="impl", s=50, palette=impl_colors(), ax=ax)
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP/byte, byte ledger)",
           ylabel="throughput (GFLOP/s)")
    thousands(ax.xaxis)
    thousands(ax.yaxis)
    handles, names = ax.get_legend_handles_labels()
    legend_above(ax, handles, names, ncol=3)
    lay_out(fig, run, "Roofline (byte ledger)")
    labels.place(ax, pts["ai"], pts["gflops"], list(pts["kernel"]))
    return fig


def diagonal(ax: Axes, lo: float, hi: float) -> list:
    """The ±band around predicted = measured, and the line: their legend handles."""
    x = np.logspace(np.log10(lo), np.log10(hi), 50)
    band = ax.fill_between(x, x * (1 - BAND_PCT / 100), x * (1 + BAND_PCT / 100), color="0.85",
                           label=f"±{BAND_PCT:.0f}%")
    (line,) = ax.plot(x, x, c="0.3", lw=1, label="predicted = measured")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), box_aspect=1,
           xlabel=f"measured cadence ({CADENCE})", ylabel=f"predicted cadence ({CADENCE})")
    thousands(ax.xaxis)
    thousands(ax.yaxis)
    return [band, line]


def span(frame: pd.DataFrame, cols: list[str]) -> tuple[float, float]:
    return frame[cols].min().min() / 1.5, frame[cols].max().max() * 1.5


def off_diagonal(measured, predicted) -> np.ndarray:
    """How far each prediction is from its measurement, as |log(predicted / measured)| (for the
    order in which the points are labelled: the worst first)."""
    return np.abs(np.log(np.asarray(predicted, float) / np.asarray(measured, float)))


def draw_model(run: Run) -> Figure:
    pts = (
        table(run, "predictions")
        .melt(id_vars=["kernel", "measured"], value_vars=["exact", "lstsq", "sass"], var_name="prices",
              value_name="predicted")
        .dropna()
    )
    pts = pts[(pts["measured"] > 0) & (pts["predicted"] > 0)]
    if pts.empty:
        raise Skip("no prediction beside a measured cadence")
    fig, ax = new_figure((8.2, 6.2))
    diagonal(ax, *span(pts, ["measured", "predicted"]))
    sns.scatterplot(pts, x="measured", y="predicted", hue="prices", style="prices", s=45, ax=ax)
    legend_right(ax, *ax.get_legend_handles_labels())
    lay_out(fig, run, "Instruction-ledger model: predicted vs measured")
    # each kernel named once, at its prediction farthest from the diagonal
    far = pts.assign(off=off_diagonal(pts["measured"], pts["predicted"])).sort_values("off", ascending=False)
    far = far.drop_duplicates("kernel")
    outside = far["off"] > np.log1p(BAND_PCT / 100)
    labels.place(ax, far["measured"], far["predicted"], list(far["kernel"]), priority=outside)
    return fig


def shape_order(run: Run, rows: pd.DataFrame) -> list[tuple[int, int, int]]:
    """The shapes of ``rows``: the main experiment's first, then by how many points each has."""
    counts = rows.groupby(["M", "N", "K"]).size().sort_values(ascending=False, kind="stable")
    shapes = [tuple(int(v) for v in s) for s in counts.index]
    main = [(p.M, p.N, p.K) for p in run.points("main")]
    return sorted(shapes, key=lambda s: s not in main)


def shape_tag(run: Run, s: tuple[int, int, int]) -> str:
    """A shape as a point label names it: 4096³ for a cube; else the name of the one experiment
    point at that shape (decode_b1) where there is one; else M×N×K."""
    if s[0] == s[1] == s[2]:
        return short_shape(*s)
    p = run.tables.get("points")
    names = set() if p is None else {
        str(r.label) for r in p.itertuples() if (int(r.M), int(r.N), int(r.K)) == s and pd.isna(r.ld)}
    return names.pop() if len(names) == 1 else shape(*s)


def shape_name(run: Run, s: tuple[int, int, int]) -> str:
    """A shape in the legend: M×N×K, with its point's name where the labels use that."""
    tag = shape_tag(run, s)
    return shape(*s) if tag in (shape(*s), short_shape(*s)) else f"{shape(*s)} ({tag})"


def heading(text: str) -> Line2D:
    """A legend entry that draws nothing: a heading over the entries that follow it."""
    return Line2D([], [], linestyle="none", marker="", label=text, gid="heading")


def draw_bounds(run: Run) -> Figure:
    """Both models, measured vs predicted cadence, the ±10% band: the bound model's points coloured
    by their binding resource and marked by their shape, the seed model's (its three price sets) in
    grey shades; the bound model's points named (with their shape where a kernel has several)."""
    pts = table(run, "model_errors")
    pts = pts[(pts["measured_cadence"] > 0) & (pts["predicted_cadence"] > 0)].copy()
    if pts.empty:
        raise Skip("no prediction beside a measured cadence")
    ours = pts["method"].astype(str) == "bound"
    shapes = shape_order(run, pts)
    marker = {s: MARKERS[i % len(MARKERS)] for i, s in enumerate(shapes)}
    pts["marker"] = [marker[(int(r.M), int(r.N), int(r.K))] for r in pts.itertuples()]
    resources = list(dict.fromkeys(pts.loc[ours, "bound"].astype(str)))
    ours_shapes = {(int(r.M), int(r.N), int(r.K)) for r in pts[ours].itertuples()}
    color = dict(zip(resources, sns.color_palette("deep")))
    fig, ax = new_figure((PAGE_IN, 6.4))
    handles = diagonal(ax, *span(pts, ["measured_cadence", "predicted_cadence"]))
    seed = pts[~ours]
    greys = dict(zip(dict.fromkeys(seed["method"].astype(str)), ("0.78", "0.62", "0.46", "0.3")))
    for (method, m), g in seed.groupby([seed["method"].astype(str), "marker"], sort=False):
        ax.scatter(g["measured_cadence"], g["predicted_cadence"], s=16, color=greys[method], marker=m,
                   linewidths=0, zorder=2)
    for (res, m), g in pts[ours].groupby([pts.loc[ours, "bound"].astype(str), "marker"], sort=False):
        ax.scatter(g["measured_cadence"], g["predicted_cadence"], s=55, color=color[res], marker=m,
                   edgecolors="white", linewidths=0.6, zorder=3)
    if ours.any():
        handles += [heading("bound model, colour: what binds")]
        handles += [Patch(color=color[r], label=BOUND_NAMES.get(r, r)) for r in resources]
        handles += [heading("marker: the shape M×N×K")]
        handles += [Line2D([], [], ls="none", marker=marker[s], color="0.25", label=shape_name(run, s))
                    for s in shapes if s in ours_shapes]
    if len(seed):
        handles += [heading("seed model, price set:")]
        handles += [Line2D([], [], ls="none", marker="o", markersize=4, color=g, label=m)
                    for m, g in greys.items()]
    legend_right(ax, handles, [h.get_label() for h in handles])
    for h, t in zip(handles, ax.get_legend().get_texts()):
        if h.get_gid() == "heading":
            t.set_fontweight("bold")
    lay_out(fig, run, "Bound model and seed model: predicted vs measured" if ours.any()
            else "Seed model: predicted vs measured (the bound model was not fitted on this run)")
    mine = pts[ours]
    several = mine.groupby("kernel")["M"].transform("size") > 1
    names = [f"{r.kernel} @ {shape_tag(run, (int(r.M), int(r.N), int(r.K)))}" if many else str(r.kernel)
             for r, many in zip(mine.itertuples(), several)]
    off = off_diagonal(mine["measured_cadence"], mine["predicted_cadence"])
    main = [marker[(int(r.M), int(r.N), int(r.K))] == MARKERS[0] for r in mine.itertuples()]
    priority = 2 * (off > np.log1p(BAND_PCT / 100)) + ~np.asarray(main, bool)
    labels.place(ax, mine["measured_cadence"], mine["predicted_cadence"], names, priority=priority)
    return fig
