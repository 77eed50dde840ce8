"""The per-kernel ledgers, and the seed's calibrated model with its predictions."""

from __future__ import annotations

import numpy as np
import pandas as pd

from study.report.figures import BAND_PCT, Skip, figref, ledger_main
from study.report.load import Run
from study.report.md import md, missing, num, shape


def section_ledgers(run: Run) -> list[str]:
    try:
        led = ledger_main(run)
    except Skip as e:
        return (
            missing("the per-kernel ledgers", str(e)) + figref(run, "roofline") + figref(run, "loads_per_fma")
        )
    led = led[led["impl"] != "cublas"]
    lines = [
        "Instruction ledger: load instructions per FMA (dist = 32-way shared, bcast = broadcast shared, "
        "ldg = global). Byte ledger: DRAM bytes per output element, AI = 2K ÷ bytes/out (FLOP/byte), "
        "roof = AI × DRAM peak (GFLOP/s), attainment = measured ÷ roof. Request ledger (uncoalesced vs "
        "coalesced naive kernels only): memory requests per FMA. Cycles per load and per request are "
        "diagnostics: cadence ÷ loads (or requests) per FMA.",
        "",
    ]
    cols = [
        ("dist", "{:.3f}"),
        ("bcast", "{:.3f}"),
        ("ldg", "{:.3f}"),
        ("loads_per_fma", "{:.3f}"),
        ("bytes_per_out", "{:.0f}"),
        ("ai", "{:.3f}"),
        ("roof_gflops", "{:,.0f}"),
        ("attainment_pct", "{:.1f}%"),
        ("cycles_per_load", "{:.2f}"),
        ("req_per_fma", "{:g}"),
        ("cycles_per_request", "{:.2f}"),
    ]
    rows = [[r["kernel"], r["impl"], *[num(r.get(c), f) for c, f in cols]] for _, r in led.iterrows()]
    lines += md(
        [
            "kernel",
            "impl",
            "dist",
            "bcast",
            "ldg",
            "loads/FMA",
            "bytes/out",
            "AI",
            "roof GFLOP/s",
            "attainment",
            "cycles/load",
            "req/FMA",
            "cycles/request",
        ],
        rows,
    )
    att = led.dropna(subset=["attainment_pct"]) if "attainment_pct" in led.columns else led.iloc[0:0]
    if len(att):
        over = att[att["attainment_pct"] > 100]
        near = att.loc[(att["attainment_pct"] - 100).abs().idxmin()]
        lines += [
            f"**Finding:** {len(over)} of {len(att)} kernels exceed 100% of their DRAM roof"
            + (
                f" ({', '.join(f'{k} {v:.0f}%' for k, v in zip(over['kernel'], over['attainment_pct']))})"
                if len(over)
                else ""
            )
            + ", where the byte ledger is falsified (the bytes came from L2, not DRAM); the closest to the "
            f"roof is {near['kernel']} at {near['attainment_pct']:.1f}%.",
            "",
        ]
    return lines + figref(run, "roofline") + figref(run, "loads_per_fma")


def section_model(run: Run) -> list[str]:
    mt = run.tables.get("model")
    lines = [
        "Predicted cadence = P_dist·dist + P_bcast·bcast + P_ldg·ldg (cycles per warp-FMA per SM). "
        "*exact*: P_ldg from the kernel marked to calibrate it, then P_dist and P_bcast from two "
        "equations in two unknowns (cadences rounded to two decimals first); *lstsq*: least squares "
        "over every 32-bit, not request-bound kernel; *sass*: prices per compiled instruction class "
        "of the SASS main loop.",
        "",
    ]
    if mt is None:
        lines += missing("unit prices", run.missing["model"])
    else:
        cols = [c for c in ("p_ldg", "p_dist", "p_bcast", "p_lds32", "p_lds128") if c in mt.columns]
        rows = [
            [
                r["method"],
                *[num(r[c], "{:.3f}") for c in cols],
                r.get("kernels", "–"),
                shape(r["M"], r["N"], r["K"]) if all(pd.notna(r.get(d)) for d in "MNK") else "–",
            ]
            for _, r in mt.iterrows()
        ]
        lines += md(["method", *[c.replace("p_", "P_") for c in cols], "fitted on", "at shape"], rows)
        lines += _price_shift(run.tables.get("price_shift"))
    pr = run.tables.get("predictions")
    if pr is None:
        lines += missing("per-kernel predictions", run.missing["predictions"])
    else:
        rows = [
            [
                r["kernel"],
                r["role"],
                num(r["measured"], "{:.3f}"),
                *[
                    x
                    for m in ("exact", "lstsq", "sass")
                    for x in (num(r[m], "{:.3f}"), num(r[f"{m}_err"], "{:+.1f}%"))
                ],
            ]
            for _, r in pr.iterrows()
        ]
        lines += md(["kernel", "role", "measured", "exact", "error", "lstsq", "error", "sass", "error"], rows)
        lines += _model_finding(pr)
    if "model_sass" in run.missing:
        lines += [f"*SASS-priced predictions: {run.missing['model_sass']}.*", ""]
    loo = run.tables.get("loo")
    if loo is not None and "method" in loo.columns:  # the seed's rows; the bound model's are in its section
        loo = loo[loo["method"].astype(str) == "lstsq"]
    lines += ["### Leave-one-out", ""]
    if loo is None:
        lines += missing("leave-one-out errors", run.missing["loo"])
    else:
        rows = [
            [
                r["kernel"],
                num(r.get("measured_cadence"), "{:.3f}"),
                num(r.get("predicted_cadence"), "{:.3f}"),
                num(r.get("model_error_pct"), "{:+.1f}%"),
            ]
            for _, r in run.in_order(loo).iterrows()
        ]
        lines += ["Least squares refitted without each kernel, then used to predict it.", ""]
        lines += md(["kernel left out", "measured", "predicted", "error"], rows)
        if "model_error_pct" in loo.columns and loo["model_error_pct"].notna().any():
            worst = loo.loc[loo["model_error_pct"].abs().idxmax()]
            lines += [
                f"**Finding:** predicting each kernel from the others, the largest error is "
                f"{worst['model_error_pct']:+.1f}% ({worst['kernel']}).",
                "",
            ]
    return lines + figref(run, "model")


def _price_shift(shift: pd.DataFrame | None) -> list[str]:
    if shift is None:
        return []
    moves = ", ".join(
        f"{r['price']} {r['exact']:.2f} → {r['lstsq']:.2f} ({r['change_pct']:+.0f}%)"
        for _, r in shift.iterrows()
        if np.isfinite(r["exact"]) and np.isfinite(r["lstsq"])
    )
    return [f"**Finding:** least squares moves the prices {moves}.", ""] if moves else []


def _model_finding(pr: pd.DataFrame) -> list[str]:
    role = dict(zip(pr["kernel"], pr["role"]))
    errs = [(r["kernel"], float(r["exact_err"])) for _, r in pr.iterrows()]
    extra = [(k, e) for k, e in errs if np.isfinite(e) and role[k] == "extrapolation"]
    fails = [(k, e) for k, e in errs if np.isfinite(e) and role[k].startswith("expected failure")]
    if not extra and not fails:
        return []
    fmt = lambda xs: ", ".join(f"{k} ({e:+.1f}%)" for k, e in xs) or "none"  # noqa: E731
    inside = [x for x in extra if abs(x[1]) <= BAND_PCT]
    outside = [x for x in extra if abs(x[1]) > BAND_PCT]
    lines = [
        f"**Finding:** with the exact prices, extrapolations within ±{BAND_PCT:.0f}%: {fmt(inside)}; "
        f"beyond it: {fmt(outside)}; expected failures: "
        + (", ".join(f"{k} ({e:+.1f}%, {role[k].split(': ', 1)[1]})" for k, e in fails) or "none")
        + ".",
        "",
    ]
    # the same CUDA kernels priced on the ledger the compiler wrote instead of the hand count
    both = [
        (r["kernel"], float(r["exact_err"]), float(r["sass_err"]))
        for _, r in pr.iterrows()
        if role[r["kernel"]] == "extrapolation" or role[r["kernel"]].startswith("expected failure")
    ]
    both = [(k, e, q) for k, e, q in both if np.isfinite(e) and np.isfinite(q)]
    if both:
        better = [k for k, e, q in both if abs(q) < abs(e)]
        lines += [
            "**Finding:** priced on the compiled (SASS) ledger instead of the hand count, "
            + ", ".join(f"{k} {e:+.1f}% → {q:+.1f}%" for k, e, q in both)
            + f"; the compiled ledger predicts {len(better)} of these {len(both)} kernels better"
            + (f" ({', '.join(better)})." if better else "."),
            "",
        ]
    return lines
