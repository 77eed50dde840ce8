"""The figures over a series: throughput against size, the SM clock through the timings."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from study.report.figures.common import (
    IMPLS,
    PAGE_IN,
    SMALL,
    Skip,
    clock_trace,
    impl_colors,
    lay_out,
    new_figure,
    thousands,
)
from study.report.load import NOT_IN_RUN, Run
from study.report.md import experiment_rows


def impl_of(run: Run, kid: str) -> str:
    k = run.kernel(kid)
    return str(k["impl"]) if k is not None and "impl" in k.index else ""


def draw_sizes(run: Run) -> Figure:
    """One panel a kernel (the baseline dotted in each, for reference), the sizes along a shared
    log axis, the n whose footprint fills the L2 dashed."""
    df = run.in_order(experiment_rows(run.measured, "sizes"))
    if df.empty:
        raise Skip(f"the sizes experiment (E2) is {NOT_IN_RUN}")
    kernels = list(dict.fromkeys(df["kernel"]))
    ncols = min(4, len(kernels))
    nrows = math.ceil(len(kernels) / ncols)
    fig, axes = new_figure((PAGE_IN, max(4.6, 1.1 * nrows + 1.5)), nrows, ncols, sharex=True, sharey=True)
    axes = np.atleast_1d(axes).ravel()
    colors = impl_colors()
    l2 = run.gpu.l2_bytes if run.gpu else None
    sizes = run.tables.get("sizes")
    n_l2 = None
    if l2 and sizes is not None and sizes["n_at_l2"].notna().any():
        n_l2 = float(sizes["n_at_l2"].dropna().iloc[0])
    base = df[df["kernel"] == run.baseline]
    ns = sorted(set(int(n) for n in df["M"]))
    for ax, kid in zip(axes, kernels):
        g = df[df["kernel"] == kid]
        if kid != run.baseline and len(base):
            ax.plot(base["M"], base["gflops"], c="0.55", ls=":", lw=1.2)
        if n_l2:
            ax.axvline(n_l2, c="k", ls="--", lw=0.8)
        ax.plot(g["M"], g["gflops"], marker="o", ms=3.5, lw=1.5, c=colors.get(impl_of(run, kid), "0.3"))
        ax.set_title(kid, fontsize=9, pad=2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    for i, ax in enumerate(axes):
        if i >= len(kernels):
            ax.remove()
        elif i + ncols >= len(kernels):  # the lowest panel of its column: it shows the sizes
            ax.tick_params(labelbottom=True)
            ax.set_xlabel("n (M = N = K)")
    ax0 = axes[0]
    ax0.set_xticks(ns, [str(n) for n in ns])
    ax0.set_xlim(ns[0] / 1.3, ns[-1] * 1.3)  # the end labels clear of the next panel's
    ax0.minorticks_off()
    thousands(ax0.yaxis)
    fig.supylabel("throughput (GFLOP/s, log scale)", fontsize=9.6)
    impls = [i for i in IMPLS if i in {impl_of(run, k) for k in kernels}]
    handles = [Line2D([], [], c=colors[i], marker="o", ms=3.5, label=i) for i in impls]
    if len(base):
        handles.append(Line2D([], [], c="0.55", ls=":", lw=1.2, label=f"{run.baseline}, in every panel"))
    if n_l2:
        handles.append(Line2D([], [], c="k", ls="--", lw=0.8,
                              label=f"3·n²·4 B = L2 ({l2 / 2**20:.0f} MiB) at n = {n_l2:.0f}"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False, fontsize=SMALL)
    return lay_out(fig, run, "Throughput vs size")


def draw_clocks(run: Run) -> Figure:
    """The samples of every timing laid end to end, each timing on its own band, its kernel named
    above it (where the names would touch, every other is left out)."""
    if "clocks" not in run.tables:
        raise Skip(run.missing.get("clocks", f"clocks.csv {NOT_IN_RUN}"))
    tr = clock_trace(run.tables["clocks"])
    colors = impl_colors()
    fig, ax = new_figure((PAGE_IN, 4.6))
    spans = []
    for i, (_, g) in enumerate(tr.groupby("trace", sort=True)):
        kid = str(g["kernel"].iloc[0])
        t0, t1 = float(g["t"].min()), float(g["t"].max())
        if i % 2:
            ax.axvspan(t0 - 0.025, t1 + 0.025, color="0.92", lw=0, zorder=0)
        ax.plot(g["t"], g["sm_clock_mhz"], lw=1.2, c=colors.get(impl_of(run, kid), "0.3"))
        spans.append(((t0 + t1) / 2, kid))
    handles = [Line2D([], [], c=colors[i], lw=1.2, label=i) for i in IMPLS
               if i in {impl_of(run, k) for _, k in spans}]
    if run.gpu is not None:
        handles.append(ax.axhline(run.gpu.sm_clock_mhz, c="k", ls="--", lw=1,
                                  label=f"max SM clock {run.gpu.sm_clock_mhz:.0f} MHz"))
    ax.set(xlabel="time (s; the timings laid end to end in the order measured)",
           ylabel="sampled SM clock (MHz)")
    top = ax.secondary_xaxis("top")
    top.set_xticks([c for c, _ in spans], [k for _, k in spans], rotation=90, fontsize=SMALL)
    top.tick_params(length=0, pad=2)
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False, fontsize=SMALL)
    lay_out(fig, run, "SM clock sampled during the timings")
    # names closer than a line of text to the one before are left out
    renderer = fig.canvas.get_renderer()
    room = top.get_xticklabels()[0].get_window_extent(renderer).width + 2 if spans else 0
    kept, last = [], -np.inf
    for c, kid in spans:
        x = ax.transData.transform((c, 0))[0]
        if x - last >= room:
            kept.append((c, kid))
            last = x
    top.set_xticks([c for c, _ in kept], [k for _, k in kept], rotation=90, fontsize=SMALL)
    return fig
