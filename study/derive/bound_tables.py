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
from study.derive.bounds import METHOD, NAN, RESOURCES, T_LINE, Constants, Machine, at_shape
from study.derive.selection import order
from study.rundata.tables import T

CONSTANT_COLUMNS = [*T.bound_constants.columns]  # declared in study.rundata.tables


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
            "global-load latency a loop trip exposes when it waits on its own loads (overlapped on the "
            "shared-memory pipe by the other resident blocks' wavefronts); also the price of a spill reload "
            "in the loop and of a producer wait (one thread of an FMA warp waits on a stage's empty barrier "
            "and issues the block's tensor copies, once a phase)",
            True,
        ),
        ("fma_floor", m.fma_floor, "cycles", "32 / FP32 lanes per SM", False),
        ("t_line", T_LINE, "cycles", "one L1 line (tag lookup) per cycle per SM", False),
        (
            "dram_bytes_per_cycle_sm",
            m.dram_bytes_per_cycle_sm,
            "B/cycle",
            f"{m.roof_from} / (SMs x SM clock)",
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


ERROR_COLUMNS = [*T.model_errors.columns]  # declared in study.rundata.tables


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
            "role": [
                "fitted" if k in c.kernels and c.shape == (int(M), int(N), int(K)) else "predicted"
                for k, M, N, K in zip(pred["kernel"], pred["M"], pred["N"], pred["K"])
            ],
            "bound": pred["bound"],
        },
        columns=ERROR_COLUMNS,
    )
    return pd.concat([seed, ours], ignore_index=True)[ERROR_COLUMNS]


STEP_COLUMNS = [*T.bound_steps.columns]  # declared in study.rundata.tables
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


def steps(pred: pd.DataFrame, shape: tuple[int, int, int] | None = None) -> pd.DataFrame:
    """Per rung of the CUDA ladder (registry order) over the one before, at ``shape`` (default: the
    first row's): the binding resource each side, the measured and predicted speed-up, and how the
    binding terms (and the exposed latency, where either side has one) moved, in cycles per warp FMA."""
    if len(pred):
        pred = at_shape(pred, shape or tuple(int(v) for v in pred.iloc[0][["M", "N", "K"]]))
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


FINDING_COLUMNS = [*T.bound_findings.columns]  # declared in study.rundata.tables


def findings(
    pred: pd.DataFrame,
    c: Constants,
    loo: pd.DataFrame,
    errors: pd.DataFrame,
    band: float = 10.0,
    k1_band: float = 15.0,
) -> pd.DataFrame:
    """The numbers the report states about the bound model, computed here once: at the fit shape,
    then per other shape with counters (``shape_findings``)."""
    everywhere = pred
    pred = at_shape(pred, c.shape) if c.shape is not None else pred
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
    rows += shape_findings(everywhere, c, band)
    return pd.DataFrame([dict(zip(FINDING_COLUMNS, r)) for r in rows], columns=FINDING_COLUMNS)


def _dims(M, N, K) -> str:
    return f"{int(M)}×{int(N)}×{int(K)}"


def why_off(r) -> str:
    """Where a prediction fails and why, from the row's own numbers: the term that binds against
    the measured cadence (tail removed), the runner-up, and what the binding count would have to
    be for the prediction to hold."""
    t = {x: float(r[f"b_{x}"]) for x in RESOURCES if np.isfinite(float(r[f"b_{x}"]))}
    lat = float(r["latency"])
    meas = float(r["measured_cadence"]) / float(r["tail"])
    res = str(r["bound"]) if str(r["bound"]) in t else max(t, key=t.get)
    second = max((x for x in t if x != res), key=t.get, default=None)
    part = f"{NAMES[res].removesuffix(' bound')} term {t[res]:.3g}"
    if lat > 0 and res != "dram":
        part += f" + latency {lat:.3g}"
    part += f" vs measured {meas:.3g} cycles/warp FMA (tail {float(r['tail']):.3g} removed)"
    if second is not None:
        part += f"; next: {NAMES[second].removesuffix(' bound')} {t[second]:.3g}"
    blocks = float(r["blocks"])
    grid = f"{int(blocks)} blocks" if np.isfinite(blocks) else "grid unknown"
    if res == "dram":  # the share of the term's roof the kernel's bytes moved at
        part += (f"; its {float(r['dram_bytes_per_wfma']):.3g} DRAM bytes per warp FMA moved at "
                 f"{t[res] / meas * 100:.0f}% of the roof the term assumes")
    if float(r["error_pct"]) > 0:
        if res != "dram":
            part += f"; it runs {(t[res] / meas - 1) * 100:.0f}% faster than that term allows"
    else:
        part += (f"; every term together explains {max(t.values()) / meas * 100:.0f}% of the measured "
                 f"cadence ({grid}, {float(r['warps']):.0f} resident warps per SM)")
    return part


def shape_findings(pred: pd.DataFrame, c: Constants, band: float = 10.0) -> list[tuple]:
    """Per shape other than the fit shape: mean |error|, the kernels outside ±band and, for each,
    where the prediction fails and why (``why_off``)."""
    rows = []
    others = pred.drop_duplicates(["M", "N", "K"])[["M", "N", "K"]]
    for _, s in others.iterrows():
        shape = (int(s["M"]), int(s["N"]), int(s["K"]))
        if shape == c.shape:
            continue
        at = at_shape(pred, shape)
        out = at[at["error_pct"].abs() > band]
        rows.append((f"at {_dims(*shape)}: mean |error| (predicted with the fit-shape constants)",
                     at["error_pct"].abs().mean(), ",".join(at["kernel"]),
                     "bound: " + ", ".join(f"{k} {NAMES[b].removesuffix(' bound')}"
                                           for k, b in zip(at["kernel"], at["bound"]))))
        at_dims = f"at {_dims(*shape)}"
        rows.append((f"{at_dims}: kernels outside ±{band:g}%", float(len(out)), ",".join(out["kernel"]), ""))
        for _, r in out.iterrows():
            rows.append((f"{at_dims}: {r['kernel']} error", float(r["error_pct"]), r["kernel"], why_off(r)))
    return rows


TRAVEL_COLUMNS = [*T.bound_travel.columns]  # declared in study.rundata.tables


def travel(
    ledger: pd.DataFrame, inp: pd.DataFrame, seed_ledger: pd.DataFrame | None,
    left_out: pd.DataFrame | None = None, stale: pd.DataFrame | None = None,
    not_fitted: str = "", ncu: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Where the model can be applied: each shape of the run (and the seed GPU's replay) with
    whether its count inputs exist, and for which kernels. ``stale``: the counters left out as not
    describing the times (``currency``); ``not_fitted``: why the model was not fitted, where it
    was not, with ``ncu`` the current counters it then had."""
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
                "why": _travel_why(s, inp, left_out) if ok else _no_inputs_why(s, stale, not_fitted, ncu),
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


def _kernels_at(df: pd.DataFrame | None, s) -> list[str]:
    return sorted(set(at_shape(df, s)["kernel"].astype(str)), key=order) if df is not None and len(df) else []


def _no_inputs_why(s, stale: pd.DataFrame | None, not_fitted: str, ncu: pd.DataFrame | None) -> str:
    """Why the model is not applied at shape ``s``: not fitted, stale counters, or none read."""
    parts = []
    current = _kernels_at(ncu, s)
    if not_fitted and current:
        parts.append(f"the model was not fitted on this run ({not_fitted}); current counters here: "
                     + ", ".join(current))
    old = _kernels_at(stale, s)
    if old:
        parts.append(f"the counters of {len(old)} kernel(s) here are stale (read at another commit or "
                     "launch than the times: stale_counters.csv)")
    if parts:
        return "; ".join(parts)
    return ("no ncu counters at this shape (instructions, wavefronts, sectors per warp FMA are "
            "shape-dependent: the compiled loop, tails and edge guards change them)")


def _travel_why(s, inp: pd.DataFrame, left_out: pd.DataFrame | None) -> str:
    ks = sorted(set(at_shape(inp, s)["kernel"]), key=order)
    why = f"ncu counters and a time for {len(ks)} kernel(s): {', '.join(ks)}"
    if left_out is not None and len(left_out):
        lo = at_shape(left_out, s)
        if len(lo):
            why += "; counters not taken: " + "; ".join(f"{k} ({w})" for k, w in zip(lo["kernel"], lo["why"]))
    return why


def not_fitted(reason: str) -> pd.DataFrame:
    return pd.DataFrame(
        [{"finding": "not fitted", "value": NAN, "kernels": "", "note": reason}], columns=FINDING_COLUMNS
    )


def tables(ledger: pd.DataFrame, ncu: pd.DataFrame | None, sass: pd.DataFrame | None, gpu,
           seed_loo: pd.DataFrame | None, seed_ledgers: pd.DataFrame | None,
           predictions: pd.DataFrame | None,
           stale: pd.DataFrame | None = None) -> dict[str, pd.DataFrame | None]:
    """The bound model's tables by name: bounds, bound_constants, bound_steps, bound_findings,
    bound_travel, model_errors beside the seed's methods, and loo with a ``method`` column (the
    seed's leave-one-out rows "lstsq", then the bound model's). ``ncu``: the run's counters with
    their metric and value columns, or None; a table the model cannot fill is None."""
    from study.derive import bound_inputs, bounds

    bm = bound_inputs.run(ledger, ncu, sass, gpu) if ncu is not None else None
    loo = None if seed_loo is None else seed_loo.assign(method="lstsq", error_pct=seed_loo["model_error_pct"])
    seed = seed_rows(ledger, predictions)
    if bm is None:
        inp = bound_inputs.inputs(ledger, None, None, bounds.machine(gpu))
        why = bound_inputs.why_not(ledger, ncu, sass, gpu)
        return {
            "loo": loo, "bounds": None, "bound_constants": None, "bound_steps": None,
            "bound_findings": not_fitted(why),
            "bound_travel": travel(ledger, inp, seed_ledgers, stale=stale, not_fitted=why, ncu=ncu),
            "model_errors": seed if len(seed) else None,
        }
    errors = model_errors(bm.predictions, bm.constants, seed)
    return {
        "loo": pd.concat([x for x in (loo, bm.loo) if x is not None], ignore_index=True),
        "bounds": bm.predictions,
        "bound_constants": constants_table(bm.constants, bounds.machine(gpu)),
        "bound_steps": steps(bm.predictions, bm.constants.shape),
        "bound_findings": findings(bm.predictions, bm.constants, bm.loo, errors),
        "bound_travel": travel(ledger, bm.inputs, seed_ledgers, bm.left_out, stale=stale),
        "model_errors": errors,
    }
