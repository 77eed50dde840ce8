"""The figures over a series: throughput against size, the SM clock through the timings."""

from __future__ import annotations

import seaborn as sns
from matplotlib.figure import Figure

from study.report.figures.common import Skip, clock_trace, finish, new_figure
from study.report.load import NOT_IN_RUN, Run
from study.report.md import experiment_rows


def draw_sizes(run: Run) -> Figure:
    df = experiment_rows(run.measured, "sizes")
    if df.empty:
        raise Skip(f"the sizes experiment (E2) is {NOT_IN_RUN}")
    fig, ax = new_figure((9, 5))
    sns.lineplot(run.in_order(df), x="M", y="gflops", hue="kernel", marker="o", palette="tab20", ax=ax)
    l2 = run.gpu.l2_bytes if run.gpu else None
    sizes = run.tables.get("sizes")
    if l2 and sizes is not None and sizes["n_at_l2"].notna().any():
        n = float(sizes["n_at_l2"].dropna().iloc[0])
        ax.axvline(n, c="k", ls="--", lw=1, label=f"3·n²·4 B = L2 ({l2 / 2**20:.0f} MiB) at n = {n:.0f}")
    ax.set_xscale("log", base=2)
    ns = sorted(set(int(n) for n in df["M"]))
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.set(yscale="log", xlabel="n (M = N = K)", ylabel="throughput (GFLOP/s, log scale)")
    ax.legend(fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    return finish(fig, run, "Throughput vs size")


def draw_clocks(run: Run) -> Figure:
    if "clocks" not in run.tables:
        raise Skip(run.missing.get("clocks", f"clocks.csv {NOT_IN_RUN}"))
    tr = clock_trace(run.tables["clocks"])
    fig, ax = new_figure((11, 4.5))
    sns.lineplot(
        tr,
        x="t",
        y="sm_clock_mhz",
        hue="kernel",
        palette="tab20",
        lw=1,
        ax=ax,
        sort=False,
        units="trace",
        estimator=None,
    )
    if run.gpu is not None:
        ax.axhline(
            run.gpu.sm_clock_mhz, c="k", ls="--", lw=1, label=f"max SM clock {run.gpu.sm_clock_mhz:.0f} MHz"
        )
    ax.set(
        xlabel="time (s; the timings laid end to end in the order measured)", ylabel="sampled SM clock (MHz)"
    )
    ax.legend(fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    return finish(fig, run, "SM clock sampled during the timings")
