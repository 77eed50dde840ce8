"""The derived tables the report renders, each computed here once from the ledger table.

Every function takes tables (the ledger rows of a run, the model's prices, the SASS and counter
rows) and returns a table; :mod:`study.derive` writes them into the run directory and the report
reads them back. Pairings (twins, first and last rung, the baseline) come from registry fields.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from study import kernels as registry
from study.derive import ledgers, model
from study.derive.selection import in_order, main_rows
from study.errors import InputError
from study.rundata.rows import by_kernel
from study.rundata.tables import T

NAN = math.nan


# ---------------------------------------------------------------------------------------------
# Twins


def twin_pairs() -> dict[str, str]:
    """Triton kernel id -> the CUDA kernel it is compared with: one of ``kernels.twins_of``,
    its own ``twin`` field where it has one (T5 mirrors K5's tile but is K6's twin)."""
    pairs: dict[str, str] = {}
    for c in registry.by_impl("cuda"):
        for t in registry.twins_of(c.id):
            if t.twin == c.id or t.id not in pairs:
                pairs[t.id] = c.id
    return pairs


def with_twin_ratio(ledger_main: pd.DataFrame) -> pd.DataFrame:
    """Rows with their CUDA ``twin`` and ``triton_over_cuda_gflops`` (``ledgers.twin_ratio``:
    Triton GFLOP/s over the twin's at the same shape; above 1: Triton faster)."""
    main = ledger_main.copy()
    speed = {
        (k, m, n, kk): g
        for k, m, n, kk, g in zip(
            main["kernel"], main["M"], main["N"], main["K"], pd.to_numeric(main["gflops"], errors="coerce")
        )
    }
    pairs = twin_pairs()
    main["twin"] = [pairs.get(k, "") for k in main["kernel"]]
    main["triton_over_cuda_gflops"] = [
        ledgers.twin_ratio(speed[(k, m, n, kk)], speed[(t, m, n, kk)]) if (t, m, n, kk) in speed else NAN
        for k, t, m, n, kk in zip(main["kernel"], main["twin"], main["M"], main["N"], main["K"])
    ]
    return main


TWIN_COLUMNS = [*T.twins.columns]  # declared in study.rundata.tables


def row_cc(row) -> str | None:
    """The compute capability a row was measured on (its provenance ``cc``), None where unknown."""
    cc = row.get("cc")
    try:
        return f"{float(cc):.1f}"
    except (TypeError, ValueError):
        return None


def twins(ledger: pd.DataFrame) -> pd.DataFrame:
    """Per CUDA kernel timed in the main experiment beside a twin: its unpipelined and pipelined
    Triton twins and their GFLOP/s ratio to it."""
    main = by_kernel(main_rows(ledger))
    base = next((r for r in main.values() if r["impl"] == "cublas"), None)
    rows = []
    for c in registry.by_impl("cuda"):
        twins_ = registry.twins_of(c.id)
        if not twins_ or c.id not in main:
            continue
        u = next((t for t in twins_ if (t.num_stages or 1) == 1 and not t.gluon and t.id in main), None)
        p = next((t for t in twins_ if (t.num_stages or 1) > 1 and not t.gluon and t.id in main), None)
        g = next((t for t in twins_ if t.gluon and t.twin == c.id and t.id in main), None)
        cg = main[c.id]["gflops"]
        path = ledgers.row_path(main[c.id], c, row_cc(main[c.id]))  # the function the main shape ran
        tile, threads = (path.tile, path.threads) if path is not None else (c.tile, c.threads)
        rows.append(
            {
                "cuda": c.id,
                "tile": f"{tile[0]}×{tile[1]}×{tile[2]}" if tile else "none",
                "warps": threads // 32,
                "cuda_gflops": cg,
                "unpipelined": u.id if u else "",
                "unpipelined_gflops": main[u.id]["gflops"] if u else NAN,
                "pipelined": p.id if p else "",
                "pipelined_gflops": main[p.id]["gflops"] if p else NAN,
                "gluon": g.id if g else "",
                "gluon_gflops": main[g.id]["gflops"] if g else NAN,
                "cublas_gflops": base["gflops"] if base is not None else NAN,
                "ratio_unpipelined": ledgers.twin_ratio(main[u.id]["gflops"], cg) if u else NAN,
                "ratio_pipelined": ledgers.twin_ratio(main[p.id]["gflops"], cg) if p else NAN,
                "ratio_gluon": ledgers.twin_ratio(main[g.id]["gflops"], cg) if g else NAN,
            }
        )
    return pd.DataFrame(rows, columns=TWIN_COLUMNS)


# ---------------------------------------------------------------------------------------------
# Model predictions per kernel


PREDICTION_COLUMNS = [*T.predictions.columns]  # declared in study.rundata.tables


def role(kid: str) -> str:
    """What a kernel is to the seed's model: a calibrator, an extrapolation or an expected failure."""
    k = registry.BY_ID.get(kid)
    if k is None:
        return "–"
    if k.impl == "triton":
        return "transfer test (SASS prices only)"
    if k.calibrates == "ldg":
        return "calibrates P_ldg"
    if k.calibrates == "lds":
        return "calibrates P_dist, P_bcast"
    c = k.counted
    if c is None:
        return "–"
    if c.req_per_fma is not None and c.req_per_fma > model.REQUEST_BOUND_ABOVE:
        return f"expected failure: request-bound, {c.req_per_fma:g} requests per FMA"
    if c.lds_bits != 32 or c.ldg_bits != 32:
        return f"expected failure: {max(c.lds_bits, c.ldg_bits)}-bit loads priced at 32-bit rates"
    return "extrapolation"


def error_pct(pred, meas) -> float:
    try:
        return float(model.model_error_pct(float(pred), float(meas)))
    except (TypeError, ValueError, ZeroDivisionError):
        return NAN


def predictions(
    ledger: pd.DataFrame, prices: pd.DataFrame | None, sass_pred: pd.DataFrame | None
) -> pd.DataFrame:
    """Per kernel at the calibration shape: measured cadence and the cadence each price set predicts."""
    if ledger is None or ledger.empty:
        return pd.DataFrame(columns=PREDICTION_COLUMNS)
    base = ledger
    if prices is not None and len(prices) and all(c in prices.columns for c in "MNK"):
        r = prices.iloc[0]
        base = ledger[(ledger["M"] == r["M"]) & (ledger["N"] == r["N"]) & (ledger["K"] == r["K"])]
    base = main_rows(base) if len(main_rows(base)) else in_order(base.drop_duplicates("kernel", keep="last"))
    out = pd.DataFrame(
        {"kernel": base["kernel"].to_numpy(), "measured": base["cadence"].to_numpy(dtype=float)}
    )
    for method in ("exact", "lstsq"):
        pred = err = np.full(len(out), NAN)
        row = (
            prices[prices["method"] == method] if prices is not None and "method" in prices.columns else None
        )
        if row is not None and len(row):
            try:  # the model's own error: against the cadence rounded as the calibration was
                applied = model.apply(base, model.Prices.from_row(row.iloc[0]))
                pred = applied["predicted_cadence"].to_numpy(dtype=float)
                err = applied["model_error_pct"].to_numpy(dtype=float)
            except (InputError, KeyError, ValueError):
                pass
        out[method], out[f"{method}_err"] = pred, err
    sass, sass_err = {}, {}
    if sass_pred is not None and "predicted_cadence" in sass_pred.columns:
        sass = dict(zip(sass_pred["kernel"], pd.to_numeric(sass_pred["predicted_cadence"], errors="coerce")))
        sass_err = dict(
            zip(sass_pred["kernel"], pd.to_numeric(sass_pred["model_error_pct"], errors="coerce"))
        )
    out["sass"] = [sass.get(k, NAN) for k in out["kernel"]]
    out["sass_err"] = [
        sass_err.get(k, error_pct(sass.get(k), m)) for k, m in zip(out["kernel"], out["measured"])
    ]
    out["role"] = [role(k) for k in out["kernel"]]
    keep = out["kernel"].map(lambda k: registry.BY_ID.get(k) is not None and registry.get(k).impl != "cublas")
    return out[keep][PREDICTION_COLUMNS].reset_index(drop=True)


PRICE_SHIFT_COLUMNS = [*T.price_shift.columns]  # declared in study.rundata.tables


def price_shift(prices: pd.DataFrame) -> pd.DataFrame:
    """How least squares moves each of the seed's three prices from their exact calibration."""
    ex, ls = prices[prices["method"] == "exact"], prices[prices["method"] == "lstsq"]
    if ex.empty or ls.empty:
        return pd.DataFrame(columns=PRICE_SHIFT_COLUMNS)
    e, q = ex.iloc[0], ls.iloc[0]
    rows = [
        {"price": n, "exact": e[c], "lstsq": q[c], "change_pct": error_pct(q[c], e[c])}
        for n, c in (("P_dist", "p_dist"), ("P_bcast", "p_bcast"), ("P_ldg", "p_ldg"))
    ]
    return pd.DataFrame(rows, columns=PRICE_SHIFT_COLUMNS)


# ---------------------------------------------------------------------------------------------
# The GPU of the run


def gpu_figures(gpu, source: str) -> pd.DataFrame:
    """One row: the run's GPU constants (``gpu.json``, with the sampled clock derived from the
    rows where it records none), its peaks at both calibers (``GPU.peak_gflops``, ``dram_gbps``,
    ``cadence_floor``) and where the constants came from: what the report says of the GPU."""
    row = {c: getattr(gpu, c, None) for c in T.gpu_figures.columns if hasattr(gpu, c)}
    sampled = gpu.sampled_sm_clock_mhz
    row.update(
        peak_gflops=gpu.peak_gflops(), peak_gflops_sampled=gpu.peak_gflops(sampled) if sampled else None,
        dram_gbps=gpu.dram_gbps(), cadence_floor=gpu.cadence_floor(), source=source,
    )
    return pd.DataFrame([row], columns=[*T.gpu_figures.columns])
