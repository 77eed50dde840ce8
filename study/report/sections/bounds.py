"""The bound model (`docs/bounds.md`): what binds each kernel, beside the seed's model. Renders the
tables ``study.derive.bounds`` wrote; computes nothing."""

from __future__ import annotations

import pandas as pd

from study.report.figures import figref
from study.report.load import Run
from study.report.md import BOUND_NAMES, md, missing, num, shape


def section_bounds(run: Run) -> list[str]:
    lines = [
        "A second model beside the seed's (which is unchanged): per kernel the largest of five "
        "throughput bounds, each with the global latency a loop trip exposes where that resource "
        "does not overlap it, times the tail of the last wave. In cycles per warp-FMA per SM: FMA "
        "pipe = fma-pipe instructions × 32/lanes; issue = instructions ÷ (4 schedulers × η_issue); "
        "shared memory = (load + register-stored) wavefronts ÷ η_smem (cp.async tiles arrive by the "
        "L1 fill path, not counted); L1 requests = 128-byte lines looked up × 1 cycle (every sector "
        "its own line for the uncoalesced kernel of the request ledger); DRAM = bytes ÷ the measured "
        "read roof (else the datasheet peak) per cycle per SM; latency = L_glob ÷ (warp FMAs per "
        "warp per loop trip × resident warps), only where the loop waits on its own global loads. "
        "The latency adds to the issue, FMA and L1 terms; the shared-memory pipe loses it only "
        "where the other resident blocks' wavefronts do not cover it (max(all blocks' wavefronts, "
        "one block's + latency)); DRAM takes none. Inputs are counts (ncu instructions, wavefronts, "
        "sectors, DRAM bytes; SASS loop FFMA, LDG, STS, LDGSTS, barriers, occupancy; registry tiles; "
        "shared-store conflict ways read off the .cu), never a kernel's time; stall ratios are not "
        "used (they are normalised by issue-active cycles, a function of the time). Fitted on the "
        "CUDA ladder less the request-bound kernel at one shape; the Triton kernels, cuBLAS, the "
        "request-bound kernel and every other shape with counters are predicted.",
        "",
    ]
    ct = run.tables.get("bound_constants")
    if ct is None:
        f = run.tables.get("bound_findings")
        why = (
            str(f.iloc[0]["note"])
            if f is not None and len(f) and str(f.iloc[0]["finding"]) == "not fitted"
            else run.missing.get("bound_constants", "no constants")
        )
        return (
            lines
            + [f"*The bound model was not fitted on this run: {why}.*", ""]
            + _travel(run)
            + figref(run, "bounds")
        )
    rows = [
        [
            r["constant"],
            num(r["value"], "{:.3f}"),
            r["unit"],
            r["meaning"],
            r["kernels"] if str(r["fitted"]) == "True" else "not fitted",
        ]
        for _, r in ct.iterrows()
    ]
    lines += md(["constant", "value", "unit", "meaning", "fitted on"], rows)
    lines += _per_kernel(run)
    lines += _findings(run)
    lines += _loo(run)
    lines += _steps(run)
    lines += _travel(run)
    return lines + figref(run, "bounds")


def _fit_shape(b: pd.DataFrame, err: pd.DataFrame | None) -> tuple:
    """The shape the constants were fitted at: where model_errors has the bound model's fitted rows
    (else the first row's)."""
    if err is not None and "role" in err.columns:
        f = err[(err["method"].astype(str) == "bound") & (err["role"].astype(str) == "fitted")]
        if len(f):
            return tuple(int(v) for v in f.iloc[0][["M", "N", "K"]])
    return tuple(int(v) for v in b.iloc[0][["M", "N", "K"]])


def _at(df: pd.DataFrame, s: tuple) -> pd.DataFrame:
    return df[(df["M"] == s[0]) & (df["N"] == s[1]) & (df["K"] == s[2])]


def _per_kernel(run: Run) -> list[str]:
    b = run.tables.get("bounds")
    if b is None:
        return missing("per-kernel bounds", run.missing.get("bounds", "not in this run"))
    err = run.tables.get("model_errors")
    seed = {}
    if err is not None:
        for _, r in err[err["method"].astype(str) != "bound"].iterrows():
            seed[(r["kernel"], r["method"])] = r["error_pct"]
    fitted = {}
    if err is not None:
        ours = err[err["method"].astype(str) == "bound"]
        fitted = {(k, int(M), int(N), int(K)): role
                  for k, M, N, K, role in zip(ours["kernel"], ours["M"], ours["N"], ours["K"], ours["role"])}
    fs = _fit_shape(b, err)
    terms = [
        ("b_fma", "FMA"),
        ("b_issue", "issue"),
        ("b_smem", "smem"),
        ("b_l1", "L1"),
        ("b_dram", "DRAM"),
        ("latency", "latency"),
    ]
    rows = []
    for _, r in run.in_order(_at(b, fs)).iterrows():
        rows.append(
            [
                r["kernel"],
                fitted.get((r["kernel"], *fs), "–"),
                num(r["measured_cadence"], "{:.3f}"),
                *[num(r[c], "{:.3f}") for c, _ in terms],
                num(r["tail"], "{:.3f}"),
                num(r["predicted_cadence"], "{:.3f}"),
                num(r["error_pct"], "{:+.1f}%"),
                BOUND_NAMES.get(r["bound"], r["bound"]),
                *[num(seed.get((r["kernel"], m)), "{:+.1f}%") for m in ("exact", "lstsq", "sass")],
            ]
        )
    out = [
        f"Per kernel at {shape(*fs)}: the terms (cycles per warp-FMA per SM), the prediction, its error "
        "and the binding resource; the last three columns are the seed model's errors for the same kernel "
        "(– where it prices none).",
        "",
    ] + md(
        [
            "kernel",
            "role",
            "measured",
            *[n for _, n in terms],
            "tail",
            "predicted",
            "error",
            "bound",
            "seed exact",
            "seed lstsq",
            "seed sass",
        ],
        rows,
    )
    other = b[~((b["M"] == fs[0]) & (b["N"] == fs[1]) & (b["K"] == fs[2]))]
    if len(other):
        rows = [
            [
                shape(r["M"], r["N"], r["K"]),
                r["kernel"],
                num(r["measured_cadence"], "{:.3f}"),
                *[num(r[c], "{:.3f}") for c, _ in terms],
                num(r["tail"], "{:.3f}"),
                num(r["predicted_cadence"], "{:.3f}"),
                num(r["error_pct"], "{:+.1f}%"),
                BOUND_NAMES.get(r["bound"], r["bound"]),
            ]
            for _, r in other.sort_values(["M", "N", "K"], kind="stable").iterrows()
        ]
        out += [
            f"At the other shapes with counters, predicted with the constants fitted at {shape(*fs)}:",
            "",
        ] + md(["shape", "kernel", "measured", *[n for _, n in terms], "tail", "predicted", "error", "bound"],
               rows)
    return out


def _findings(run: Run) -> list[str]:
    f = run.tables.get("bound_findings")
    if f is None:
        return []
    out = []
    for _, r in f.iterrows():
        v = r["value"]
        txt = num(v, "{:.1f}%") if "error" in str(r["finding"]) else num(v, "{:.0f}")
        ks = (
            r["kernels"]
            if isinstance(r["kernels"], str) and r["kernels"] and "mean" not in str(r["finding"])
            else ""
        )
        note = f" ({r['note']})" if isinstance(r["note"], str) and r["note"] else ""
        out.append(f"- {r['finding']}: **{txt}**" + (f" — {ks}" if ks else "") + note)
    return ["**Findings:**", "", *out, ""]


def _loo(run: Run) -> list[str]:
    loo = run.tables.get("loo")
    if loo is None or "method" not in loo.columns:
        return []
    ours = loo[loo["method"].astype(str) == "bound"]
    if ours.empty:
        return []
    rows = [
        [
            r["kernel"],
            num(r["measured_cadence"], "{:.3f}"),
            num(r["predicted_cadence"], "{:.3f}"),
            num(r["error_pct"], "{:+.1f}%"),
            BOUND_NAMES.get(r["bound"], r["bound"]),
            num(r["eta_issue"], "{:.3f}"),
            num(r["eta_smem"], "{:.3f}"),
            num(r["l_glob"], "{:.0f}"),
        ]
        for _, r in run.in_order(ours).iterrows()
    ]
    return [
        "### Bound model: leave-one-out",
        "",
        "The three constants refitted without each fitted kernel, then used to predict it.",
        "",
    ] + md(
        ["kernel left out", "measured", "predicted", "error", "bound", "η_issue", "η_smem", "L_glob"], rows
    )


def _steps(run: Run) -> list[str]:
    st = run.tables.get("bound_steps")
    if st is None:
        return []
    rows = [
        [
            f"{r['from']} → {r['to']}",
            r["moved"],
            r["changed"],
            num(r["speedup"], "{:.2f}×"),
            num(r["predicted_speedup"], "{:.2f}×"),
        ]
        for _, r in st.iterrows()
    ]
    return [
        "### What each optimisation moved",
        "",
        "Per rung of the CUDA ladder over the one before: the binding resource before and after, "
        "and how those terms moved (cycles per warp-FMA per SM).",
        "",
    ] + md(["step", "binding resource", "terms", "speed-up", "predicted"], rows)


def _travel(run: Run) -> list[str]:
    tr = run.tables.get("bound_travel")
    if tr is None:
        return []
    rows = [
        [
            r["where"],
            shape(r["M"], r["N"], r["K"]),
            r["kernels"],
            "yes" if str(r["applied"]) == "True" else "no",
            r["why"],
        ]
        for _, r in tr.iterrows()
    ]
    return [
        "### Where the model travels",
        "",
        "Its inputs are counts of a kernel at a shape; where they were not read, it is not applied "
        "(never filled in from the time).",
        "",
    ] + md(["where", "shape", "kernels", "applied", "why"], rows)


__all__ = ["section_bounds", "pd"]
