"""The bar figures: throughput at the main shape, loads per FMA, throughput per shape, the stride pair.

Kernels run along x, their ids turned upright; each legend sits above its axes, over no bar.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from study.report.figures.common import (
    IMPLS,
    PAGE_IN,
    SMALL,
    Skip,
    counted_loads,
    impl_colors,
    lay_out,
    legend_above,
    new_figure,
    sass_loads,
    thousands,
)
from study.report.load import NOT_IN_RUN, Run
from study.report.md import experiment_rows, shape


def kernel_ticks(ax: Axes, ids: list[str]) -> None:
    ax.set_xticks(range(len(ids)), ids, rotation=90)
    ax.set_xlim(-0.6, len(ids) - 0.4)


def value_labels(ax: Axes, bars, texts: list[str]) -> None:
    """Each bar's value upright inside its top, white; above the bar where it does not fit inside.
    The layout must be final (``lay_out``)."""
    renderer = ax.figure.canvas.get_renderer()
    for bar, text in zip(bars, texts):
        if not np.isfinite(bar.get_height()) or bar.get_height() <= 0:
            continue
        x, top = bar.get_x() + bar.get_width() / 2, bar.get_y() + bar.get_height()
        label = ax.annotate(text, (x, top), xytext=(0, -3), textcoords="offset points", rotation=90,
                            ha="center", va="top", color="white", fontsize=SMALL)
        if label.get_window_extent(renderer).y0 < bar.get_window_extent(renderer).y0 + 2:
            label.set(position=(0, 3), va="bottom", color="0.15")


def draw_throughput(run: Run) -> Figure:
    df = run.main_rows(run.measured)
    if df.empty:
        raise Skip("no timed row in the main experiment")
    colors = impl_colors()
    vals = df["gflops"].to_numpy(float)
    fig, ax = new_figure((PAGE_IN, 4.6))
    bars = ax.bar(range(len(df)), vals, 0.8, color=[colors.get(i, "0.5") for i in df["impl"]])
    handles = [Rectangle((0, 0), 1, 1, color=colors[i], label=i) for i in IMPLS if i in set(df["impl"])]
    lo, hi = pass_range(df)
    if np.isfinite(lo).any():
        handles.append(ax.errorbar(range(len(df)), vals, yerr=[vals - lo, hi - vals], fmt="none",
                                   ecolor="k", elinewidth=1, capsize=2, label="min–max over passes"))
    top = np.nanmax(vals)
    if run.gpu is not None:
        top = max(top, run.gpu.peak_gflops)
        handles.append(ax.axhline(run.gpu.peak_gflops, ls="--", c="k", lw=1,
                                  label=f"FP32 peak at max clock ({run.gpu.peak_gflops:,.0f} GFLOP/s)"))
    ax.set_yscale("log")  # the naive kernels' ~500 GFLOP/s beside the tuned ones' ~50,000
    ax.set_ylim(10 ** np.floor(np.log10(np.nanmin(vals) / 2)), top * 1.6)
    thousands(ax.yaxis)
    kernel_ticks(ax, list(df["kernel"]))
    legend_above(ax, handles, [h.get_label() for h in handles], ncol=len(handles))
    ax.set(xlabel="kernel", ylabel="throughput (GFLOP/s, log scale)")
    r = df.iloc[0]
    lay_out(fig, run, f"Throughput at {shape(r.M, r.N, r.K)}")
    value_labels(ax, bars, [f"{v:,.0f}" for v in vals])
    return fig


def pass_range(main) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``main`` the least and greatest GFLOP/s over its passes (ledgers.csv's
    ``gflops_lo`` / ``gflops_hi``); NaN where it ran in one pass or the run predates passes."""
    lo = pd.to_numeric(main.get("gflops_lo", pd.Series(np.nan, index=main.index)), errors="coerce")
    hi = pd.to_numeric(main.get("gflops_hi", pd.Series(np.nan, index=main.index)), errors="coerce")
    return lo.to_numpy(float), hi.to_numpy(float)


def zoom_top(totals: list[float]) -> float | None:
    """The top of a second, zoomed panel where some bars are under a quarter of the tallest (there
    they would read as slivers), else None."""
    tallest = max(totals, default=0.0)
    small = [t for t in totals if 0 < t <= tallest / 4]
    return 1.15 * max(small) if len(small) >= 3 else None


def draw_loads_per_fma(run: Run) -> Figure:
    counted = counted_loads(run)
    sass = sass_loads(run)
    if counted.empty and sass.empty:
        raise Skip("no counted kernel in this run and no SASS table")
    ids = sorted(set(counted.get("kernel", [])) | set(sass.get("kernel", [])), key=run.order)
    pos = {k: i for i, k in enumerate(ids)}
    pal = sns.color_palette("deep")
    bars = []  # (x, height, bottom, colour, hatch) of every stacked piece
    w = 0.38
    for frame, dx, parts, hatch in (
        (counted, -w / 2, ("dist", "bcast", "ldg"), None),
        (sass, w / 2, ("lds", "ldg"), "//"),
    ):
        for _, r in frame.iterrows():
            bottom = 0.0
            for p in parts:
                color = pal[{"dist": 0, "bcast": 1, "ldg": 2, "lds": 4}[p]]
                bars.append((pos[r["kernel"]] + dx, r[p], bottom, color, hatch))
                bottom += r[p]
    zoom = zoom_top([b[1] + b[2] for b in bars])
    fig, axes = new_figure((PAGE_IN, 6.6 if zoom else 4.6), nrows=2 if zoom else 1, sharex=True)
    axes = np.atleast_1d(axes)
    for ax in axes:
        for x, height, bottom, color, hatch in bars:
            ax.bar(x, height, w, bottom=bottom, color=color, hatch=hatch, edgecolor="white")
        ax.set_ylabel("load instructions per FMA")
    handles = [Rectangle((0, 0), 1, 1, color=pal[i]) for i in (0, 1, 2, 4)]
    legend_above(axes[0], handles, [
        "counted: 32-way LDS (dist)",
        "counted: broadcast LDS (bcast)",
        "LDG (counted / SASS)",
        "SASS: LDS of any width (hatched bars)",
    ], ncol=2)
    if zoom:
        axes[1].set_ylim(0, zoom)
        axes[1].set_ylabel("load instructions per FMA\n(zoomed: taller bars cut)")
    kernel_ticks(axes[-1], ids)
    axes[-1].set_xlabel("kernel (left bar: counted from code; right, hatched: SASS main loop)")
    return lay_out(fig, run, "Loads per FMA, counted vs compiled")


def draw_shapes(run: Run) -> Figure:
    df = experiment_rows(run.measured, "shapes")
    if df.empty:
        raise Skip(f"the shapes experiment (E3) is {NOT_IN_RUN}")
    points = run.labels_in(df, "shapes")
    order = [lab for lab, _ in points]
    df = run.in_order(df)
    kernels = list(dict.fromkeys(df["kernel"]))
    fig, ax = new_figure((PAGE_IN, 4.8))
    sns.barplot(df, x="kernel", y="gflops", hue="label", order=kernels, hue_order=order,
                palette=sns.color_palette("colorblind", len(order)), width=0.85, ax=ax)
    ax.set(yscale="log", xlabel="kernel", ylabel="throughput (GFLOP/s, log scale)")
    ax.set_ylim(top=df["gflops"].max() * 1.6)
    thousands(ax.yaxis)
    kernel_ticks(ax, kernels)
    handles, labels = ax.get_legend_handles_labels()
    names = {lab: f"{lab} ({shape(*mnk)})" for lab, mnk in points}
    legend_above(ax, handles, [names.get(lab, lab) for lab in labels], ncol=2)
    return lay_out(fig, run, "Throughput per shape")


def draw_strides(run: Run) -> Figure:
    if "strides" not in run.tables:
        raise Skip(f"the strides experiment (E4) is {NOT_IN_RUN}")
    tab = run.tables["strides"]
    la, lb = run.stride_labels()
    long = tab.melt(id_vars="kernel", value_vars=["ms_a", "ms_b"], var_name="n", value_name="ms")
    long["n"] = long["n"].map({"ms_a": la, "ms_b": lb})
    fig, (a1, a2) = new_figure((PAGE_IN, 6.6), nrows=2, sharex=True)
    sns.barplot(long, x="kernel", y="ms", hue="n", ax=a1)
    a1.set(yscale="log", xlabel="", ylabel="median time (ms, log scale)")
    thousands(a1.yaxis)
    handles, labels = a1.get_legend_handles_labels()
    legend_above(a1, handles, labels, ncol=len(labels))
    sns.barplot(tab, x="kernel", y="ratio", color="tab:purple", ax=a2)
    a2.axhline(1, c="k", lw=1)
    a2.set(xlabel="kernel", ylabel=f"time at {lb} ÷\ntime at {la}")
    kernel_ticks(a2, list(tab["kernel"]))
    return lay_out(fig, run, "Power-of-two stride")
