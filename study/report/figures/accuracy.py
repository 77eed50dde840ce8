"""Speed against accuracy: every kernel as points (its TFLOP/s at 4096³ against its relative error,
one marker per input distribution, at the ledger's middle K), coloured by how it multiplies, with the
FP32 FMA peak and the TF32 tensor-core peak drawn as limits; from accuracy_summary.csv,
accuracy_ledger.csv and accuracy_findings.csv.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from study.report.figures.common import PAGE_IN, SMALL, Skip, lay_out, new_figure, table
from study.report.load import Run

MARKERS = {"randn": "o", "uniform": "s", "wide": "^", "lowbits": "D"}
COLOURS = {"fp32": "tab:blue", "tf32": "tab:red", "tf32x3": "tab:green"}


def named(run: Run, s, speed: dict) -> list[str]:
    """The kernels the figure names (the others' labels would pile up where many FP32 kernels share
    an error): the baseline, the fastest FP32 kernel that is not a library's, and every tensor-core
    kernel (the run's kernels.csv says which is which)."""
    k = run.kernels
    impl = dict(zip(k["id"].astype(str), k["impl"].astype(str)))
    base = run.with_role("baseline")
    prec = dict(zip(s["kernel"].astype(str), s["precision"].astype(str)))
    own = [kid for kid in speed if prec.get(kid) == "fp32" and impl.get(kid, "cublas") != "cublas"]
    fastest = [max(own, key=speed.get)] if own else []
    return [kid for kid in speed if kid in base or kid in fastest or prec.get(kid) != "fp32"]


def draw_accuracy(run: Run) -> Figure:
    s = table(run, "accuracy_summary")
    led = table(run, "accuracy_ledger")
    speed = {str(r.kernel): r.tflops for r in s.itertuples() if np.isfinite(r.tflops)}
    if not speed:
        raise Skip("accuracy_summary.csv has no kernel with both a time and an error")
    ks = sorted(set(led["K"].astype(int)))
    mid = ks[len(ks) // 2]
    at = led[(led["K"].astype(int) == mid) & led["kernel"].astype(str).isin(speed)]
    fig, ax = new_figure((PAGE_IN, PAGE_IN / 2))
    for r in at.itertuples():
        ax.scatter(r.rel_err, speed[str(r.kernel)], marker=MARKERS.get(str(r.dist), "x"),
                   color=COLOURS.get(str(r.precision), "0.4"), s=24, alpha=0.8, linewidths=0)
    for kid in named(run, s, speed):
        mine = at[at["kernel"].astype(str) == kid]
        if len(mine):
            ax.annotate(kid, (float(mine["rel_err"].max()), speed[kid]), xytext=(4, 2),
                        textcoords="offset points", fontsize=SMALL)
    f = run.tables.get("accuracy_findings")
    if f is not None:
        for fid, style in (("fp32_peak", ":"), ("tf32_peak", "--")):
            v = f[f["id"].astype(str) == fid]["value"]
            if len(v) and np.isfinite(float(v.iloc[0])):
                ax.axhline(float(v.iloc[0]), color="0.3", linestyle=style, linewidth=1)
                ax.annotate(f"{fid.split('_')[0].upper()} peak", (1.0, float(v.iloc[0])),
                            xycoords=("axes fraction", "data"), xytext=(-4, 3), textcoords="offset points",
                            ha="right", fontsize=SMALL)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set(xlabel=f"relative error ‖C − C₆₄‖/‖C₆₄‖ at M = N = 1024, K = {mid}", ylabel="TFLOP/s at 4096³")
    handles = [ax.scatter([], [], marker=m, color="0.4", s=24, label=d) for d, m in MARKERS.items()]
    handles += [ax.scatter([], [], marker="o", color=c, s=24, label=p) for p, c in COLOURS.items()]
    ax.legend(handles=handles, fontsize=SMALL, ncols=2, loc="upper left")  # clear of the peaks' labels
    return lay_out(fig, run, "Speed against accuracy")
