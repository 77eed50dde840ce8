"""Does the seed's model replicate here, and can its three prices be known at all?

``replication`` sets, per kernel of the seed's table, the model error of the seed GPU's replay
beside this run's (each GPU with its own exact prices) and says whether the seed's reading holds:
a kernel the seed's model predicts within ``BAND_PCT`` on the seed GPU replicates where it is
within it here too. ``identifiability`` gives, for the exact calibration and the least-squares fit,
the condition number of the system the prices solve (the counted ledgers per FMA of the kernels
used), the leave-one-out errors, and the worst condition number of a leave-one-out system (with
the kernel it lacks): a large one says a single kernel holds up a price, so the prices are not
determined by the kernels that set them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from study.derive import ledgers, model
from study.derive.selection import main_rows
from study.derive.tables import role
from study.rundata.tables import T

BAND_PCT = 10.0  # the seed report's "within ±10%"
NAN = math.nan


def _within(v: float) -> bool:
    return math.isfinite(v) and abs(v) <= BAND_PCT


def reading(seed_err: float, here_err: float) -> str:
    """Whether the seed GPU's reading of a kernel holds here."""
    if not (math.isfinite(seed_err) and math.isfinite(here_err)):
        return "not on both"
    if _within(seed_err):
        return "replicates" if _within(here_err) else "does not replicate"
    return "fails on both" if not _within(here_err) else "fails on the seed GPU only"


def replication(seed_ledgers: pd.DataFrame, ledger: pd.DataFrame) -> pd.DataFrame:
    """Per counted kernel of the seed's table: its role, the model error on the seed GPU and here
    (exact prices of each), and ``reading``."""
    seed = {str(r["kernel"]): r for _, r in main_rows(seed_ledgers).iterrows()}
    here = {str(r["kernel"]): r for _, r in main_rows(ledger).iterrows()}
    rows = []
    for kid, s in seed.items():
        e_seed = float(s.get("model_error_pct", NAN))
        h = here.get(kid)
        e_here = float(h.get("model_error_pct", NAN)) if h is not None else NAN
        if not math.isfinite(e_seed) and not math.isfinite(e_here):
            continue  # cuBLAS: no ledger
        rows.append({"kernel": kid, "role": role(kid), "seed_error_pct": e_seed, "here_error_pct": e_here,
                     "reading": reading(e_seed, e_here)})
    return pd.DataFrame(rows, columns=[*T.seed_replication.columns])


def _system(kids) -> np.ndarray:
    km = ledgers.kernel_map()
    return np.array([model._ledger_row(km[k].counted) for k in kids], dtype=float)


COND_LIMIT = 30.0  # a leave-one-out system worse conditioned than this leans on the kernel it lacks


def identifiable(loo_worst_pct: float, without_condition: float) -> str:
    """"yes" where every kernel left out is predicted within BAND_PCT by the prices of the others
    and no leave-one-out system is worse conditioned than COND_LIMIT; "no" otherwise; "" where
    there is no leave-one-out (the exact calibration leaves nothing over)."""
    if not (math.isfinite(loo_worst_pct) and math.isfinite(without_condition)):
        return ""
    return "yes" if abs(loo_worst_pct) <= BAND_PCT and without_condition <= COND_LIMIT else "no"


def identifiability(prices: pd.DataFrame, loo: pd.DataFrame | None) -> pd.DataFrame:
    """Per fit of the seed's prices (exact, least squares): the kernels it used, the condition
    number of their ledger system (columns ldg, dist, bcast per FMA) and, for least squares, the
    leave-one-out errors (largest, its kernel, mean)."""
    rows = []
    for _, p in prices.iterrows():
        if p["method"] not in ("exact", "lstsq"):
            continue
        kids = [k for k in str(p.get("kernels", "")).split(",") if k]
        if not kids:
            continue
        cond = float(np.linalg.cond(_system(kids)))
        worst, worst_k, mean, without, without_k = NAN, "", NAN, NAN, ""
        if p["method"] == "lstsq" and loo is not None and len(loo):
            err = pd.to_numeric(loo["model_error_pct"], errors="coerce")
            i = err.abs().idxmax()
            worst, worst_k, mean = float(err[i]), str(loo.at[i, "kernel"]), float(err.abs().mean())
            # each leave-one-out fit solves the system of the other kernels: the worst-conditioned
            # says which kernel alone holds up a price
            conds = {k: float(np.linalg.cond(_system([x for x in kids if x != k]))) for k in kids}
            without_k = max(conds, key=conds.get)
            without = conds[without_k]
        rows.append({"method": p["method"], "kernels": ",".join(kids), "condition_number": cond,
                     "loo_worst_pct": worst, "loo_worst_kernel": worst_k, "loo_mean_abs_pct": mean,
                     "without_condition_number": without, "without_kernel": without_k,
                     "identifiable": identifiable(worst, without)})
    return pd.DataFrame(rows, columns=[*T.seed_identifiability.columns])
