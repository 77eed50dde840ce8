"""The bar figures: throughput at the main shape, loads per FMA, throughput per shape, the stride pair."""

from __future__ import annotations

import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from study.report.figures.common import IMPLS, Skip, counted_loads, finish, new_figure, sass_loads
from study.report.load import NOT_IN_RUN, Run
from study.report.md import experiment_rows, shape


def draw_throughput(run: Run) -> Figure:
    df = run.main_rows(run.measured)
    if df.empty:
        raise Skip("no timed row in the main experiment")
    fig, ax = new_figure((10, 4.5))
    sns.barplot(
        df,
        x="kernel",
        y="gflops",
        hue="impl",
        order=list(df["kernel"]),
        hue_order=[i for i in IMPLS if i in set(df["impl"])],
        dodge=False,
        ax=ax,
    )
    if run.gpu is not None:
        ax.axhline(
            run.gpu.peak_gflops,
            ls="--",
            c="k",
            lw=1,
            label=f"FP32 peak at max clock ({run.gpu.peak_gflops:,.0f} GFLOP/s)",
        )
        ax.legend(fontsize=8)
    ax.set(xlabel="kernel", ylabel="throughput (GFLOP/s)")
    r = df.iloc[0]
    return finish(fig, run, f"Throughput at {shape(r.M, r.N, r.K)}")


def draw_loads_per_fma(run: Run) -> Figure:
    counted = counted_loads(run)
    sass = sass_loads(run)
    if counted.empty and sass.empty:
        raise Skip("no counted kernel in this run and no SASS table")
    ids = sorted(set(counted.get("kernel", [])) | set(sass.get("kernel", [])), key=run.order)
    pos = {k: i for i, k in enumerate(ids)}
    pal = sns.color_palette("deep")
    fig, ax = new_figure((max(7, 0.7 * len(ids)), 4.8))
    w = 0.38
    for frame, dx, parts, hatch in (
        (counted, -w / 2, ("dist", "bcast", "ldg"), None),
        (sass, w / 2, ("lds", "ldg"), "//"),
    ):
        for _, r in frame.iterrows():
            bottom = 0.0
            for p in parts:
                color = pal[{"dist": 0, "bcast": 1, "ldg": 2, "lds": 4}[p]]
                ax.bar(
                    pos[r["kernel"]] + dx, r[p], w, bottom=bottom, color=color, hatch=hatch, edgecolor="white"
                )
                bottom += r[p]
    handles = [Rectangle((0, 0), 1, 1, color=pal[i]) for i in (0, 1, 2, 4)]
    ax.legend(
        handles,
        [
            "counted: 32-way LDS (dist)",
            "counted: broadcast LDS (bcast)",
            "LDG (counted / SASS)",
            "SASS: LDS of any width (hatched bars)",
        ],
        fontsize=8,
    )
    ax.set_xticks(range(len(ids)), ids)
    ax.set(
        xlabel="kernel (left bar: counted from code; right, hatched: SASS main loop)",
        ylabel="load instructions per FMA",
    )
    return finish(fig, run, "Loads per FMA, counted vs compiled")


def draw_shapes(run: Run) -> Figure:
    df = experiment_rows(run.measured, "shapes")
    if df.empty:
        raise Skip(f"the shapes experiment (E3) is {NOT_IN_RUN}")
    order = [lab for lab, _ in run.labels_in(df, "shapes")]
    fig, ax = new_figure((11, 5))
    sns.barplot(run.in_order(df), x="label", y="gflops", hue="kernel", order=order, palette="tab20", ax=ax)
    ax.set(yscale="log", xlabel="shape", ylabel="throughput (GFLOP/s, log scale)")
    ax.legend(fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    return finish(fig, run, "Throughput per shape")


def draw_strides(run: Run) -> Figure:
    if "strides" not in run.tables:
        raise Skip(f"the strides experiment (E4) is {NOT_IN_RUN}")
    tab = run.tables["strides"]
    la, lb = run.stride_labels()
    long = tab.melt(id_vars="kernel", value_vars=["ms_a", "ms_b"], var_name="n", value_name="ms")
    long["n"] = long["n"].map({"ms_a": la, "ms_b": lb})
    fig, (a1, a2) = new_figure((12, 4.5), ncols=2)
    sns.barplot(long, x="kernel", y="ms", hue="n", ax=a1)
    a1.set(yscale="log", xlabel="kernel", ylabel="median time (ms, log scale)")
    a1.tick_params(axis="x", rotation=60)
    sns.barplot(tab, x="kernel", y="ratio", color="tab:purple", ax=a2)
    a2.axhline(1, c="k", lw=1)
    a2.set(xlabel="kernel", ylabel=f"time at {lb} ÷ time at {la}")
    a2.tick_params(axis="x", rotation=60)
    return finish(fig, run, "Power-of-two stride")
