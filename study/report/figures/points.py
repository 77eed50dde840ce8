"""The scatter figures: the roofline, and both models' predicted against measured cadence."""

from __future__ import annotations

import numpy as np
import seaborn as sns
from matplotlib.figure import Figure

from study.report.figures.common import BAND_PCT, Skip, finish, ledger_main, new_figure, table
from study.report.load import Run


def draw_roofline(run: Run) -> Figure:
    led = ledger_main(run)
    pts = led[led["ai"].notna() & led["gflops"].notna()] if "ai" in led.columns else led.iloc[0:0]
    if pts.empty or run.gpu is None:
        raise Skip("no kernel with an arithmetic intensity" if run.gpu else "no GPU constants")
    bw, peak = run.gpu.dram_gbps, run.gpu.peak_gflops
    x = np.logspace(np.log10(pts["ai"].min() / 2), np.log10(max(pts["ai"].max() * 2, 2 * peak / bw)), 200)
    fig, ax = new_figure((8, 5.5))
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
    return finish(fig, run, "Roofline (byte ledger)")


def draw_model(run: Run) -> Figure:
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
    fig, ax = new_figure((7, 6))
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
    return finish(fig, run, "Instruction-ledger model: predicted vs measured")


def draw_bounds(run: Run) -> Figure:
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
    fig, ax = new_figure((7, 6))
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
    return finish(fig, run, "Bound model and seed model: predicted vs measured")
