"""The figures: one function each, registered in FIGURES; each reads the run's tables and draws.

A figure whose data the run lacks raises Skip with the reason; ``make_figures`` records it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from study.errors import first_line
from study.report.load import NOT_IN_RUN, Run
from study.report.md import experiment_rows, gpu_name, shape

IMPLS = ("cuda", "triton", "cublas")
BAND_PCT = 10.0  # the model's "within" band, in percent


class Skip(Exception):
    """A figure or table that this run's data cannot support; the message says why."""


def table(run: Run, key: str) -> pd.DataFrame:
    """A derived table of the run, or Skip naming why it is absent."""
    if key not in run.tables:
        raise Skip(run.missing.get(key, f"{key} {NOT_IN_RUN}"))
    return run.tables[key]


def ledger_main(run: Run) -> pd.DataFrame:
    return run.main_rows(table(run, "ledgers"))


def counted_loads(run: Run) -> pd.DataFrame:
    """Counted loads per FMA (dist, bcast, ldg) of the counted kernels in the main table."""
    led = run.tables.get("ledgers")
    if led is None or "dist" not in led.columns:
        return pd.DataFrame(columns=["kernel", "dist", "bcast", "ldg"])
    main = run.main_rows(led)
    return main[main["dist"].notna()][["kernel", "dist", "bcast", "ldg"]]


def sass_loads(run: Run) -> pd.DataFrame:
    s = run.tables.get("sass")
    if s is None or "loop_lds_per_ffma" not in s.columns:
        return pd.DataFrame(columns=["kernel", "lds", "ldg"])
    out = pd.DataFrame(
        {
            "kernel": s["kernel"],
            "lds": pd.to_numeric(s["loop_lds_per_ffma"], errors="coerce"),
            "ldg": pd.to_numeric(s.get("loop_ldg_per_ffma"), errors="coerce"),
        }
    )
    return out.dropna(subset=["lds"]).fillna(0.0)


def clock_trace(clk: pd.DataFrame) -> pd.DataFrame:
    """Each timing's samples laid end to end in the order they were recorded (x positions)."""
    if "experiment" in clk.columns and (clk["experiment"].astype(str) == "main").any():
        clk = clk[clk["experiment"].astype(str) == "main"]
    keys = [c for c in ("run_id", "experiment", "label", "kernel", "M", "N", "K") if c in clk.columns]
    parts, offset = [], 0.0
    for i, (_, g) in enumerate(clk.groupby(keys, sort=False)):
        t = pd.to_numeric(g["t_s"], errors="coerce")
        t = t - t.min()
        parts.append(g.assign(t=t + offset, trace=i))
        offset += float(t.max() if len(t) else 0) + 0.05
    return pd.concat(parts, ignore_index=True)


def _figure(figsize: tuple[float, float], ncols: int = 1):
    """A figure of its own, outside pyplot: it needs no backend and nothing is left open."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(1, ncols)


def _finish(fig, run: Run, title: str, fig_dir: Path, name: str) -> Path:
    fig.suptitle(f"{title} — {gpu_name(run)}", fontsize=11)
    fig.tight_layout()
    path = fig_dir / f"{name}.png"
    fig.savefig(path, dpi=110)
    return path


def fig_throughput(run: Run, fig_dir: Path) -> Path:
    df = run.main_rows(run.measured)
    if df.empty:
        raise Skip("no timed row in the main experiment")
    fig, ax = _figure((10, 4.5))
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
    return _finish(fig, run, f"Throughput at {shape(r.M, r.N, r.K)}", fig_dir, "throughput")


def fig_roofline(run: Run, fig_dir: Path) -> Path:
    led = ledger_main(run)
    pts = led[led["ai"].notna() & led["gflops"].notna()] if "ai" in led.columns else led.iloc[0:0]
    if pts.empty or run.gpu is None:
        raise Skip("no kernel with an arithmetic intensity" if run.gpu else "no GPU constants")
    bw, peak = run.gpu.dram_gbps, run.gpu.peak_gflops
    x = np.logspace(np.log10(pts["ai"].min() / 2), np.log10(max(pts["ai"].max() * 2, 2 * peak / bw)), 200)
    fig, ax = _figure((8, 5.5))
    ax.plot(x, x * bw, c="0.3", lw=1.2, label=f"DRAM roof: AI × {bw:,.0f} GB/s")
    ax.axhline(peak, c="0.3", ls="--", lw=1.2, label=f"FP32 roof: {peak:,.0f} GFLOP/s (max clock)")
    cub = led[led["impl"] == "cublas"]["gflops"].dropna()
    if len(cub):
        ax.axhline(cub.iloc[0], c="tab:green", ls=":", lw=1, label=f"cuBLAS {cub.iloc[0]:,.0f} GFLOP/s")
    sns.scatterplot(pts, x="ai", y="gflops", hue="impl", style="impl", s=60, ax=ax)
    for _, r in pts.iterrows():
        ax.annotate(
            r["kernel"], (r["ai"], r["gflops"]), textcoords="offset points", xytext=(4, 3), fontsize=7
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="arithmetic intensity (FLOP/byte, byte ledger)",
        ylabel="throughput (GFLOP/s)",
    )
    ax.legend(fontsize=8)
    return _finish(fig, run, "Roofline (byte ledger)", fig_dir, "roofline")


def fig_model(run: Run, fig_dir: Path) -> Path:
    pts = (
        table(run, "predictions")
        .melt(
            id_vars=["kernel", "measured"],
            value_vars=["exact", "lstsq", "sass"],
            var_name="prices",
            value_name="predicted",
        )
        .dropna()
    )
    pts = pts[(pts["measured"] > 0) & (pts["predicted"] > 0)]
    if pts.empty:
        raise Skip("no prediction beside a measured cadence")
    lo, hi = (
        pts[["measured", "predicted"]].min().min() / 1.5,
        pts[["measured", "predicted"]].max().max() * 1.5,
    )
    x = np.logspace(np.log10(lo), np.log10(hi), 50)
    fig, ax = _figure((7, 6))
    ax.fill_between(
        x, x * (1 - BAND_PCT / 100), x * (1 + BAND_PCT / 100), color="0.85", label=f"±{BAND_PCT:.0f}%"
    )
    ax.plot(x, x, c="0.3", lw=1, label="predicted = measured")
    sns.scatterplot(pts, x="measured", y="predicted", hue="prices", style="prices", s=50, ax=ax)
    for _, r in pts.drop_duplicates("kernel").iterrows():
        ax.annotate(
            r["kernel"],
            (r["measured"], r["predicted"]),
            textcoords="offset points",
            xytext=(4, -8),
            fontsize=7,
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlim=(lo, hi),
        ylim=(lo, hi),
        xlabel="measured cadence (cycles per warp-FMA per SM)",
        ylabel="predicted cadence (cycles per warp-FMA per SM)",
    )
    ax.legend(fontsize=8)
    return _finish(fig, run, "Instruction-ledger model: predicted vs measured", fig_dir, "model")


def fig_loads_per_fma(run: Run, fig_dir: Path) -> Path:
    counted = counted_loads(run)
    sass = sass_loads(run)
    if counted.empty and sass.empty:
        raise Skip("no counted kernel in this run and no SASS table")
    ids = sorted(set(counted.get("kernel", [])) | set(sass.get("kernel", [])), key=run.order)
    pos = {k: i for i, k in enumerate(ids)}
    pal = sns.color_palette("deep")
    fig, ax = _figure((max(7, 0.7 * len(ids)), 4.8))
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
    return _finish(fig, run, "Loads per FMA, counted vs compiled", fig_dir, "loads_per_fma")


def fig_shapes(run: Run, fig_dir: Path) -> Path:
    df = experiment_rows(run.measured, "shapes")
    if df.empty:
        raise Skip(f"the shapes experiment (E3) is {NOT_IN_RUN}")
    order = [lab for lab, _ in run.labels_in(df, "shapes")]
    fig, ax = _figure((11, 5))
    sns.barplot(run.in_order(df), x="label", y="gflops", hue="kernel", order=order, palette="tab20", ax=ax)
    ax.set(yscale="log", xlabel="shape", ylabel="throughput (GFLOP/s, log scale)")
    ax.legend(fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    return _finish(fig, run, "Throughput per shape", fig_dir, "shapes")


def fig_strides(run: Run, fig_dir: Path) -> Path:
    if "strides" not in run.tables:
        raise Skip(f"the strides experiment (E4) is {NOT_IN_RUN}")
    tab = run.tables["strides"]
    la, lb = run.stride_labels()
    long = tab.melt(id_vars="kernel", value_vars=["ms_a", "ms_b"], var_name="n", value_name="ms")
    long["n"] = long["n"].map({"ms_a": la, "ms_b": lb})
    fig, (a1, a2) = _figure((12, 4.5), ncols=2)
    sns.barplot(long, x="kernel", y="ms", hue="n", ax=a1)
    a1.set(yscale="log", xlabel="kernel", ylabel="median time (ms, log scale)")
    a1.tick_params(axis="x", rotation=60)
    sns.barplot(tab, x="kernel", y="ratio", color="tab:purple", ax=a2)
    a2.axhline(1, c="k", lw=1)
    a2.set(xlabel="kernel", ylabel=f"time at {lb} ÷ time at {la}")
    a2.tick_params(axis="x", rotation=60)
    return _finish(fig, run, "Power-of-two stride", fig_dir, "strides")


def fig_sizes(run: Run, fig_dir: Path) -> Path:
    df = experiment_rows(run.measured, "sizes")
    if df.empty:
        raise Skip(f"the sizes experiment (E2) is {NOT_IN_RUN}")
    fig, ax = _figure((9, 5))
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
    return _finish(fig, run, "Throughput vs size", fig_dir, "sizes")


def fig_clocks(run: Run, fig_dir: Path) -> Path:
    if "clocks" not in run.tables:
        raise Skip(run.missing.get("clocks", f"clocks.csv {NOT_IN_RUN}"))
    tr = clock_trace(run.tables["clocks"])
    fig, ax = _figure((11, 4.5))
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
    return _finish(fig, run, "SM clock sampled during the timings", fig_dir, "clocks")


def fig_bounds(run: Run, fig_dir: Path) -> Path:
    """Both models, measured vs predicted cadence, the ±10% band: the bound model's points coloured
    by their binding resource, the seed model's (its three price sets) in grey shades."""
    pts = table(run, "model_errors")
    pts = pts[(pts["measured_cadence"] > 0) & (pts["predicted_cadence"] > 0)].copy()
    if pts.empty:
        raise Skip("no prediction beside a measured cadence")
    ours = pts["method"].astype(str) == "bound"
    pts["point"] = np.where(ours, "bound model: " + pts["bound"].astype(str),
                            "seed model: " + pts["method"].astype(str))
    lo = pts[["measured_cadence", "predicted_cadence"]].min().min() / 1.5
    hi = pts[["measured_cadence", "predicted_cadence"]].max().max() * 1.5
    x = np.logspace(np.log10(lo), np.log10(hi), 50)
    fig, ax = _figure((7, 6))
    ax.fill_between(x, x * (1 - BAND_PCT / 100), x * (1 + BAND_PCT / 100), color="0.85",
                    label=f"±{BAND_PCT:.0f}%")
    ax.plot(x, x, c="0.3", lw=1, label="predicted = measured")
    seed = pts[~ours]
    if len(seed):
        sns.scatterplot(seed, x="measured_cadence", y="predicted_cadence", hue="point", s=18, alpha=0.6,
                        palette="Greys", ax=ax)
    if ours.any():
        sns.scatterplot(pts[ours], x="measured_cadence", y="predicted_cadence", hue="point", s=60,
                        palette="deep", marker="D", ax=ax)
        for _, r in pts[ours].iterrows():
            ax.annotate(r["kernel"], (r["measured_cadence"], r["predicted_cadence"]),
                        textcoords="offset points", xytext=(4, -8), fontsize=7)
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi),
           xlabel="measured cadence (cycles per warp-FMA per SM)",
           ylabel="predicted cadence (cycles per warp-FMA per SM)")
    ax.legend(fontsize=7)
    return _finish(fig, run, "Bound model and seed model: predicted vs measured", fig_dir, "bounds")


FIGURES: dict[str, Callable[[Run, Path], Path]] = {
    "throughput": fig_throughput,
    "roofline": fig_roofline,
    "model": fig_model,
    "bounds": fig_bounds,
    "loads_per_fma": fig_loads_per_fma,
    "shapes": fig_shapes,
    "strides": fig_strides,
    "sizes": fig_sizes,
    "clocks": fig_clocks,
}


def make_figures(run: Run, fig_dir: Path) -> None:
    """Draw every figure; one that fails is recorded as skipped with the reason, never fatal."""
    fig_dir.mkdir(parents=True, exist_ok=True)
    with matplotlib.rc_context():
        sns.set_theme(style="whitegrid", context="paper")
        for name, fn in FIGURES.items():
            try:
                path = fn(run, fig_dir)
                run.figures[name] = (f"figures/{path.name}", "")
            except Skip as e:
                run.figures[name] = (None, str(e))
            except Exception as e:  # an input this figure did not foresee costs that figure only
                run.figures[name] = (None, f"could not be drawn ({first_line(e)})")


def figref(run: Run, name: str) -> list[str]:
    path, why = run.figures.get(name, (None, "not drawn"))
    fn = f"`study.report.{FIGURES[name].__name__}`"
    if path is None:
        return [f"*Figure figures/{name}.png skipped ({fn}): {why}.*", ""]
    return [f"![{name}]({path})", "", f"*{path} — {fn}*", ""]
