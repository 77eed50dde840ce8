"""The bound model's tables (`docs/bounds.md`): its constants with their meaning, both models'
errors side by side, what each rung moved, the findings and where the model travels.

Arithmetic over the model's predictions (``study.derive.bounds``); the derive step writes these
tables and the report renders them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from study import kernels as registry
from study.derive import model as seed_model
from study.derive.bounds import METHOD, NAN, T_LINE, Constants, Machine
from study.rows import order

CONSTANT_COLUMNS = ["constant", "value", "unit", "meaning", "fitted", "kernels"]


def constants_table(c: Constants, m: Machine) -> pd.DataFrame:
    fitted = ",".join(c.kernels)
    rows = [
        (
            "eta_issue",
            c.eta_issue,
            "–",
            "share of issue slots a scheduler sustains (4 schedulers per SM)",
            True,
        ),
        (
            "eta_smem",
            c.eta_smem,
            "–",
            "share of shared-memory wavefront slots sustained (1 per cycle per SM)",
            True,
        ),
        (
            "L_glob",
            c.l_glob,
            "cycles",
            "global-load latency a loop trip exposes when it waits on its own loads",
            True,
        ),
        ("fma_floor", m.fma_floor, "cycles", "32 / FP32 lanes per SM", False),
        ("t_line", T_LINE, "cycles", "one L1 line (tag lookup) per cycle per SM", False),
        (
            "dram_bytes_per_cycle_sm",
            m.dram_bytes_per_cycle_sm,
            "B/cycle",
            "DRAM peak / (SMs x SM clock)",
            False,
        ),
    ]
    return pd.DataFrame(
        [
            {"constant": n, "value": v, "unit": u, "meaning": d, "fitted": f, "kernels": fitted if f else ""}
            for n, v, u, d, f in rows
        ],
        columns=CONSTANT_COLUMNS,
    )


ERROR_COLUMNS = [
    "method",
    "kernel",
    "impl",
    "M",
    "N",
    "K",
    "measured_cadence",
    "predicted_cadence",
    "error_pct",
    "role",
    "bound",
]


def seed_rows(ledger: pd.DataFrame, predictions: pd.DataFrame | None) -> pd.DataFrame:
    """The seed's three methods as model_errors rows, from ``tables.predictions`` (its calibration
    shape; the role is the seed's)."""
    if predictions is None or predictions.empty:
        return pd.DataFrame(columns=ERROR_COLUMNS)
    impl = dict(zip(ledger["kernel"], ledger["impl"]))
    shape = (4096, 4096, 4096)
    rows = []
    for method in ("exact", "lstsq", "sass"):
        for _, r in predictions.iterrows():
            if not np.isfinite(r[method]):
                continue
            role = str(r["role"])
            rows.append(
                {
                    "method": method,
                    "kernel": r["kernel"],
                    "impl": impl.get(r["kernel"], ""),
                    "M": shape[0],
                    "N": shape[1],
                    "K": shape[2],
                    "measured_cadence": r["measured"],
                    "predicted_cadence": r[method],
                    "error_pct": r[f"{method}_err"],
                    "role": "fitted" if role.startswith("calibrates") else "predicted",
                    "bound": "",
                }
            )
    return pd.DataFrame(rows, columns=ERROR_COLUMNS)


def model_errors(pred: pd.DataFrame, c: Constants, seed: pd.DataFrame) -> pd.DataFrame:
    ours = pd.DataFrame(
        {
            "method": METHOD,
            "kernel": pred["kernel"],
            "impl": pred["impl"],
            "M": pred["M"],
            "N": pred["N"],
            "K": pred["K"],
            "measured_cadence": pred["measured_cadence"],
            "predicted_cadence": pred["predicted_cadence"],
            "error_pct": pred["error_pct"],
            "role": ["fitted" if k in c.kernels else "predicted" for k in pred["kernel"]],
            "bound": pred["bound"],
        },
        columns=ERROR_COLUMNS,
    )
    return pd.concat([seed, ours], ignore_index=True)[ERROR_COLUMNS]


STEP_COLUMNS = ["from", "to", "from_bound", "to_bound", "moved", "speedup", "predicted_speedup", "changed"]
NAMES = {
    "fma": "FMA-pipe bound",
    "issue": "issue bound",
    "smem": "shared-memory bound",
    "l1": "L1-request bound",
    "dram": "DRAM bound",
    "latency": "latency bound",
}


def _term(r, resource: str) -> float:
    return float(r["latency"] if resource == "latency" else r[f"b_{resource}"])


def steps(pred: pd.DataFrame) -> pd.DataFrame:
    """Per rung of the CUDA ladder (registry order) over the one before: the binding resource each
    side, the measured and predicted speed-up, and how the binding terms (and the exposed latency,
    where either side has one) moved, in cycles per warp FMA."""
    by = {r["kernel"]: r for _, r in pred.iterrows()}
    ladder = [k.id for k in registry.cuda_ladder() if k.id in by]
    rows = []
    for a, b in zip(ladder, ladder[1:]):
        ra, rb = by[a], by[b]
        # what moved: the term that bound the lower rung, and the one that binds the upper one
        keys = [ra["bound"]] + ([rb["bound"]] if rb["bound"] != ra["bound"] else [])
        if "latency" not in keys and max(ra["latency"], rb["latency"]) > 0.01:
            keys.append("latency")
        moved = [f"{NAMES[x].removesuffix(' bound')} {_term(ra, x):.3g} → {_term(rb, x):.3g}" for x in keys]
        rows.append(
            {
                "from": a,
                "to": b,
                "from_bound": ra["bound"],
                "to_bound": rb["bound"],
                "moved": f"{NAMES[ra['bound']]} → {NAMES[rb['bound']]}",
                "speedup": ra["measured_cadence"] / rb["measured_cadence"],
                "predicted_speedup": ra["predicted_cadence"] / rb["predicted_cadence"],
                "changed": "; ".join(moved) + " cycles",
            }
        )
    return pd.DataFrame(rows, columns=STEP_COLUMNS)


FINDING_COLUMNS = ["finding", "value", "kernels", "note"]


def findings(
    pred: pd.DataFrame,
    c: Constants,
    loo: pd.DataFrame,
    errors: pd.DataFrame,
    band: float = 10.0,
    k1_band: float = 15.0,
) -> pd.DataFrame:
    """The numbers the report states about the bound model, computed here once."""
    uncoal = [
        k.id
        for k in registry.request_ledger_kernels()
        if k.counted.req_per_fma > seed_model.REQUEST_BOUND_ABOVE
    ]
    rest = pred[~pred["kernel"].isin(uncoal)]
    outside = rest[rest["error_pct"].abs() > band]
    k1 = pred[pred["kernel"].isin(uncoal)]
    k1_out = k1[k1["error_pct"].abs() > k1_band]
    pr = pred[~pred["kernel"].isin(c.kernels) & ~pred["kernel"].isin(uncoal)]
    rows = [
        (
            "mean |error|, every kernel but the request-bound",
            rest["error_pct"].abs().mean(),
            ",".join(rest["kernel"]),
            "",
        ),
        (
            "max |error|, every kernel but the request-bound",
            rest["error_pct"].abs().max(),
            rest.loc[rest["error_pct"].abs().idxmax(), "kernel"] if len(rest) else "",
            "",
        ),
        (
            f"kernels outside ±{band:g}% (request-bound excluded)",
            float(len(outside)),
            ",".join(outside["kernel"]),
            "goal: 0",
        ),
        (
            f"request-bound kernels outside ±{k1_band:g}%",
            float(len(k1_out)),
            ",".join(k1_out["kernel"]),
            "goal: 0; bound: L1 lines = sectors",
        ),
        (
            "mean |error|, fitted kernels",
            pred[pred["kernel"].isin(c.kernels)]["error_pct"].abs().mean(),
            ",".join(c.kernels),
            "",
        ),
        (
            "mean |error|, predicted kernels (not fitted, not request-bound)",
            pr["error_pct"].abs().mean(),
            ",".join(pr["kernel"]),
            "",
        ),
        (
            "leave-one-out mean |error|",
            loo["error_pct"].abs().mean() if len(loo) else NAN,
            ",".join(loo["kernel"]) if len(loo) else "",
            "goal: ≤ 5%",
        ),
        (
            "leave-one-out max |error|",
            loo["error_pct"].abs().max() if len(loo) else NAN,
            loo.loc[loo["error_pct"].abs().idxmax(), "kernel"] if len(loo) else "",
            "",
        ),
    ]
    for method in ("exact", "lstsq", "sass"):
        e = errors[(errors["method"] == method) & ~errors["kernel"].isin(uncoal)]
        if len(e):
            rows.append(
                (
                    f"seed model ({method}): mean |error|, every kernel it prices but the request-bound",
                    e["error_pct"].abs().mean(),
                    ",".join(e["kernel"]),
                    "",
                )
            )
    for r in sorted(set(pred["bound"]), key=lambda b: list(NAMES).index(b)):
        ks = pred[pred["bound"] == r]["kernel"]
        rows.append((f"bound: {NAMES[r]}", float(len(ks)), ",".join(ks), ""))
    return pd.DataFrame([dict(zip(FINDING_COLUMNS, r)) for r in rows], columns=FINDING_COLUMNS)


TRAVEL_COLUMNS = ["where", "M", "N", "K", "kernels", "applied", "why"]


def travel(ledger: pd.DataFrame, inp: pd.DataFrame, seed_ledger: pd.DataFrame | None) -> pd.DataFrame:
    """Where the model can be applied: each shape of the run (and the seed GPU's replay) with
    whether its count inputs exist."""
    have = {(int(M), int(N), int(K)) for M, N, K in zip(inp["M"], inp["N"], inp["K"])} if len(inp) else set()
    rows = []
    shapes = ledger.drop_duplicates(["M", "N", "K"])
    for _, r in shapes.sort_values(["M", "N", "K"]).iterrows():
        s = (int(r["M"]), int(r["N"]), int(r["K"]))
        ks = sorted(
            set(ledger[(ledger["M"] == s[0]) & (ledger["N"] == s[1]) & (ledger["K"] == s[2])]["kernel"]),
            key=order,
        )
        ok = s in have
        labels = ", ".join(
            sorted(
                set(
                    ledger[(ledger["M"] == s[0]) & (ledger["N"] == s[1]) & (ledger["K"] == s[2])][
                        "label"
                    ].astype(str)
                )
            )
        )
        rows.append(
            {
                "where": f"this run: {labels}",
                "M": s[0],
                "N": s[1],
                "K": s[2],
                "kernels": len(ks),
                "applied": ok,
                "why": "ncu counters and SASS for every profiled kernel"
                if ok
                else "no ncu counters at this shape (instructions, wavefronts, sectors per warp FMA are "
                "shape-dependent: the compiled loop, tails and edge guards change them)",
            }
        )
    if seed_ledger is not None and len(seed_ledger):
        r = seed_ledger.iloc[0]
        rows.append(
            {
                "where": f"seed GPU replay ({r.get('gpu', 'RTX 4090')})",
                "M": int(r["M"]),
                "N": int(r["N"]),
                "K": int(r["K"]),
                "kernels": int(seed_ledger["kernel"].nunique()),
                "applied": False,
                "why": "the seed published times only: no ncu counters, no SASS of its build",
            }
        )
    return pd.DataFrame(rows, columns=TRAVEL_COLUMNS)


def not_fitted(reason: str) -> pd.DataFrame:
    return pd.DataFrame(
        [{"finding": "not fitted", "value": NAN, "kernels": "", "note": reason}], columns=FINDING_COLUMNS
    )
