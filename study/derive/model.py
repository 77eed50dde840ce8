"""The instruction-ledger cost model (`docs/method.md#model`): unit prices, predictions, errors.

predicted cadence = P_dist * dist + P_bcast * bcast + P_ldg * ldg   (cycles per warp-FMA per SM)

Three ways to price the loads:

- ``calibrate_exact``: the report's calibration. P_ldg from the kernel marked
  ``calibrates="ldg"`` alone (cadence / ldg), then P_dist and P_bcast from the two kernels
  marked ``calibrates="lds"`` (two equations, two unknowns). Everything else is extrapolation.
- ``fit_lstsq``: least squares over every counted kernel whose loads are all 32-bit and that is
  not request-bound. 128-bit kernels are left out because one "load" there moves four floats
  (a different price); request-bound kernels (more than 2 memory requests per FMA: the
  uncoalesced naive kernel) because their time is set by requests, not instructions. The fit
  minimises squared *relative* errors, the unit in which errors are reported, so the fast
  kernels weigh as much as the slow ones.
- ``fit_sass``: the same idea over the compiled loop bodies, pricing SASS instruction classes.

All three calibrate at one shape: the shape every calibration kernel was timed at (4096^3 when
present, else the largest such shape).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from study.derive import ledgers
from study.errors import InputError
from study.kernels import Counted

NAN = float("nan")
PREFERRED_SHAPE = (4096, 4096, 4096)
# more memory requests per FMA than this marks a kernel as request-bound (K1: 33, K2: 2)
REQUEST_BOUND_ABOVE = 2.0


@dataclass(frozen=True)
class Prices:
    """Cycles per load per FMA-slot for each load class of the instruction ledger."""

    p_ldg: float
    p_dist: float
    p_bcast: float
    method: str = "exact"
    decimals: int | None = None  # cadences were rounded to this many decimals before fitting
    shape: tuple[int, int, int] | None = None  # calibration shape (M, N, K)
    kernels: tuple[str, ...] = ()  # kernels the prices were fitted on

    @classmethod
    def from_row(cls, row: Mapping) -> Prices:
        """Rebuild prices from a row of ``model_table`` (e.g. read back from model.csv)."""
        dec = row.get("decimals")
        shape = tuple(int(row[d]) for d in "MNK") if all(pd.notna(row.get(d)) for d in "MNK") else None
        kern = row.get("kernels")
        return cls(
            float(row["p_ldg"]), float(row["p_dist"]), float(row["p_bcast"]), method=str(row["method"]),
            decimals=None if dec is None or pd.isna(dec) else int(dec), shape=shape,
            kernels=tuple(str(kern).split(",")) if isinstance(kern, str) and kern else (),
        )


# ---------------------------------------------------------------------------------------------
# Helpers


def calibrators(kernels=None) -> tuple[str, list[str]]:
    """(the ``calibrates="ldg"`` kernel, the ``calibrates="lds"`` kernels) of the registry."""
    km = ledgers.kernel_map(kernels)
    ldg_ids = [kid for kid, k in km.items() if k.calibrates == "ldg"]
    lds_ids = [kid for kid, k in km.items() if k.calibrates == "lds"]
    if len(ldg_ids) != 1 or len(lds_ids) != 2:
        raise ValueError(
            f"the registry must mark one kernel calibrates='ldg' and two calibrates='lds'; "
            f"found {ldg_ids} and {lds_ids}"
        )
    return ldg_ids[0], lds_ids


def lstsq_kernels(kernels=None) -> list[str]:
    """Kernels of the least-squares fit: counted CUDA kernels, 32-bit loads only, not
    request-bound. A counted Triton kernel (T1) is left out: the prices are CUDA's."""
    out = []
    for kid, k in ledgers.kernel_map(kernels).items():
        c = k.counted
        if k.impl != "cuda" or c is None or c.lds_bits != 32 or c.ldg_bits != 32:
            continue
        if c.req_per_fma is not None and c.req_per_fma > REQUEST_BOUND_ABOVE:
            continue
        out.append(kid)
    return out


def _shapes(df: pd.DataFrame, kid: str) -> set[tuple[int, int, int]]:
    sub = df[df["kernel"] == kid]
    return {(int(m), int(n), int(k)) for m, n, k in zip(sub["M"], sub["N"], sub["K"], strict=True)}


def calibration_shape(ledger_df: pd.DataFrame, kernels=None) -> tuple[int, int, int]:
    """The shape timed for all calibration kernels: 4096^3 if so, else the largest (by MNK)."""
    ldg_id, lds_ids = calibrators(kernels)
    ids = [ldg_id, *lds_ids]
    common = set.intersection(*(_shapes(ledger_df, kid) for kid in ids))
    if PREFERRED_SHAPE in common:
        return PREFERRED_SHAPE
    if common:
        return max(common, key=lambda s: (s[0] * s[1] * s[2], s))
    # name the first calibration kernel missing at the most telling shape
    present = set().union(*(_shapes(ledger_df, kid) for kid in ids))
    shape = PREFERRED_SHAPE if PREFERRED_SHAPE in present or not present else max(
        present, key=lambda s: (s[0] * s[1] * s[2], s)
    )
    missing = [kid for kid in ids if shape not in _shapes(ledger_df, kid)]
    raise InputError(
        f"cannot calibrate: no time for {missing[0]} at {ledgers.shape_str(*shape)} "
        f"(the calibration needs {', '.join(ids)} at one common shape)"
    )


def _measured(ledger_df: pd.DataFrame, kids: Iterable[str], shape, decimals: int | None) -> dict[str, float]:
    """Median cadence of each kernel at ``shape``, rounded to ``decimals`` when given."""
    M, N, K = shape
    at = ledger_df[(ledger_df["M"] == M) & (ledger_df["N"] == N) & (ledger_df["K"] == K)]
    out = {}
    for kid in kids:
        v = at.loc[at["kernel"] == kid, "cadence"].median()
        if pd.isna(v):
            raise InputError(f"cannot calibrate: no time for {kid} at {ledgers.shape_str(*shape)}")
        out[kid] = round(float(v), decimals) if decimals is not None else float(v)
    return out


def _ledger_row(c: Counted) -> list[float]:
    return [ledgers.ldg(c), ledgers.dist(c), ledgers.bcast(c)]


def _check_ledger(df: pd.DataFrame) -> None:
    for col in ("kernel", "M", "N", "K", "cadence"):
        if col not in df.columns:
            raise InputError(f"ledger table lacks column {col!r}: build it with ledgers.ledger_table")


# ---------------------------------------------------------------------------------------------
# Prices


def calibrate_exact(ledger_rows: pd.DataFrame, decimals: int | None = 2, kernels=None) -> Prices:
    """The report's calibration: three kernels, three prices, no residual.

    ``decimals=2`` rounds the measured cadences first, as the report did (it printed cadences to
    two decimals and solved with the printed values); ``None`` uses them unrounded.
    """
    _check_ledger(ledger_rows)
    km = ledgers.kernel_map(kernels)
    ldg_id, lds_ids = calibrators(km)
    shape = calibration_shape(ledger_rows, km)
    cad = _measured(ledger_rows, [ldg_id, *lds_ids], shape, decimals)
    p_ldg = cad[ldg_id] / ledgers.ldg(km[ldg_id].counted)
    a = np.array([[ledgers.dist(km[k].counted), ledgers.bcast(km[k].counted)] for k in lds_ids])
    b = np.array([cad[k] - p_ldg * ledgers.ldg(km[k].counted) for k in lds_ids])
    p_dist, p_bcast = np.linalg.solve(a, b)
    return Prices(float(p_ldg), float(p_dist), float(p_bcast), "exact", decimals, shape,
                  (ldg_id, *lds_ids))


def fit_lstsq(ledger_rows: pd.DataFrame, decimals: int | None = None, exclude: Iterable[str] = (),
              kernels=None) -> Prices:
    """Least squares (relative errors) over ``lstsq_kernels`` at the calibration shape."""
    _check_ledger(ledger_rows)
    km = ledgers.kernel_map(kernels)
    shape = calibration_shape(ledger_rows, km)
    timed = set(ledger_rows.loc[
        (ledger_rows["M"] == shape[0]) & (ledger_rows["N"] == shape[1]) & (ledger_rows["K"] == shape[2]),
        "kernel",
    ])
    kids = [k for k in lstsq_kernels(km) if k in timed and k not in set(exclude)]
    if len(kids) < 3:
        raise InputError(
            f"cannot fit three prices by least squares from {len(kids)} kernel(s) at "
            f"{ledgers.shape_str(*shape)}: {', '.join(kids) or 'none'}"
        )
    cad = _measured(ledger_rows, kids, shape, decimals)
    y = np.array([cad[k] for k in kids])
    a = np.array([_ledger_row(km[k].counted) for k in kids]) / y[:, None]
    p, *_ = np.linalg.lstsq(a, np.ones(len(kids)), rcond=None)
    return Prices(float(p[0]), float(p[1]), float(p[2]), "lstsq", decimals, shape, tuple(kids))


def predict(counted: Counted, prices: Prices) -> float:
    return (prices.p_dist * ledgers.dist(counted) + prices.p_bcast * ledgers.bcast(counted)
            + prices.p_ldg * ledgers.ldg(counted))


def model_error_pct(predicted: float, measured: float) -> float:
    return (predicted / measured - 1) * 100


def leave_one_out(ledger_rows: pd.DataFrame, decimals: int | None = None, kernels=None) -> pd.DataFrame:
    """For each kernel of the least-squares set: fit without it, predict it."""
    km = ledgers.kernel_map(kernels)
    full = fit_lstsq(ledger_rows, decimals, kernels=km)
    if len(full.kernels) < 4:
        raise InputError(
            f"cannot leave one out: the least-squares set at {ledgers.shape_str(*full.shape)} has "
            f"{len(full.kernels)} kernels ({', '.join(full.kernels)}); three prices need three left in"
        )
    cad = _measured(ledger_rows, full.kernels, full.shape, decimals)
    rows = []
    for kid in full.kernels:
        p = fit_lstsq(ledger_rows, decimals, exclude=[kid], kernels=km)
        pred = predict(km[kid].counted, p)
        rows.append({"kernel": kid, "measured_cadence": cad[kid], "predicted_cadence": pred,
                     "model_error_pct": model_error_pct(pred, cad[kid]),
                     "p_ldg": p.p_ldg, "p_dist": p.p_dist, "p_bcast": p.p_bcast})
    return pd.DataFrame(rows)


def apply(ledger_df: pd.DataFrame, prices: Prices, kernels=None) -> pd.DataFrame:
    """Fill predicted_cadence and model_error_pct for every row of a counted CUDA kernel
    (Triton kernels, counted or not, are priced only by the SASS model).

    The error is taken against the measured cadence rounded like the calibration input
    (``prices.decimals``), so the calibration kernels come out at exactly 0%.
    """
    _check_ledger(ledger_df)
    km = ledgers.kernel_map(kernels)
    df = ledger_df.copy()
    pred, err = [], []
    for kid, cad in zip(df["kernel"], df["cadence"], strict=True):
        c = km[kid].counted if kid in km and km[kid].impl == "cuda" else None
        if c is None:
            pred.append(NAN)
            err.append(NAN)
            continue
        p = predict(c, prices)
        measured = round(cad, prices.decimals) if prices.decimals is not None else cad
        pred.append(p)
        err.append(model_error_pct(p, measured))
    df["predicted_cadence"] = pred
    df["model_error_pct"] = err
    return df


# ---------------------------------------------------------------------------------------------
# The compiled ledger: prices per SASS instruction class


# price class -> the SASS loop-body count columns it sums. Global loads of any width, cp.async
# (LDGSTS) included, share one price; 64-bit shared loads go with 32-bit ones; LDSM (ldmatrix,
# which Triton may use for FP32 tiles; its .4 form hands each thread 128 bits) goes with LDS.128.
# The CUDA kernels use neither LDGSTS nor LDSM, so these two only matter for Triton predictions.
SASS_CLASSES = {
    "ldg": ("loop_LDG32", "loop_LDG64", "loop_LDG128", "loop_LDGSTS"),
    "lds32": ("loop_LDS32", "loop_LDS64"),
    "lds128": ("loop_LDS128", "loop_LDSM"),
}


@dataclass
class SassFit:
    p_ldg: float
    p_lds32: float
    p_lds128: float
    shape: tuple[int, int, int]
    kernels: tuple[str, ...]  # kernels the LDS prices were fitted on
    # kernel, x_ldg, x_lds32, x_lds128, measured_cadence, predicted_cadence, model_error_pct
    predictions: pd.DataFrame = field(repr=False)


def sass_ratios(sass_df: pd.DataFrame) -> pd.DataFrame:
    """Per kernel, instructions of each price class per FFMA of the loop body. Kernels without
    a loop holding FFMA (or whose compilation failed: NaN counts) are left out."""
    if "kernel" not in sass_df.columns or "loop_FFMA" not in sass_df.columns:
        raise InputError("SASS table needs columns 'kernel' and 'loop_FFMA'")
    ffma = pd.to_numeric(sass_df["loop_FFMA"], errors="coerce")
    sass_df = sass_df[ffma > 0]
    ffma = ffma[ffma > 0]
    out = pd.DataFrame({"kernel": sass_df["kernel"].astype(str)})
    for cls, cols in SASS_CLASSES.items():
        count = sum(pd.to_numeric(sass_df[c], errors="coerce").fillna(0) if c in sass_df.columns else 0
                    for c in cols)
        out[f"x_{cls}"] = (count / ffma).astype(float)
    return out.reset_index(drop=True)


def fit_sass(ledger_df: pd.DataFrame, sass_df: pd.DataFrame, decimals: int | None = None,
             kernels=None) -> SassFit:
    """Price compiled loads: P_ldg exactly on the ``calibrates="ldg"`` kernel (its loop holds
    global loads only), then P_lds32 (LDS 32/64-bit) and P_lds128 by least squares (relative
    errors) over the tiled CUDA kernels. Predicts every kernel of ``sass_df``, Triton included:
    that tests whether prices measured on CUDA code transfer to code another compiler wrote.
    A price whose class no fitted kernel uses is NaN."""
    _check_ledger(ledger_df)
    km = ledgers.kernel_map(kernels)
    x = sass_ratios(sass_df).drop_duplicates("kernel").set_index("kernel")
    shape = calibration_shape(ledger_df, km)
    at = ledger_df[(ledger_df["M"] == shape[0]) & (ledger_df["N"] == shape[1]) & (ledger_df["K"] == shape[2])]
    timed = set(at["kernel"])
    ldg_id, _ = calibrators(km)
    if ldg_id not in x.index or not x.at[ldg_id, "x_ldg"] > 0:
        raise InputError(f"cannot calibrate the SASS model: no loop with FFMA and global loads in the "
                         f"SASS of {ldg_id}")
    cad = _measured(ledger_df, [k for k in x.index if k in timed], shape, decimals)
    p_ldg = cad[ldg_id] / x.at[ldg_id, "x_ldg"]

    fit_ids = [k for k in x.index if k in cad and k in km and km[k].impl == "cuda" and km[k].tile]
    if not fit_ids:
        raise InputError(f"cannot fit LDS prices: no tiled CUDA kernel has SASS counts and a time at "
                         f"{ledgers.shape_str(*shape)}")
    y = np.array([cad[k] - p_ldg * x.at[k, "x_ldg"] for k in fit_ids])
    meas = np.array([cad[k] for k in fit_ids])
    a = x.loc[fit_ids, ["x_lds32", "x_lds128"]].to_numpy()
    used = np.flatnonzero((a != 0).any(axis=0))
    prices = np.full(2, NAN)
    sol, *_ = np.linalg.lstsq(a[:, used] / meas[:, None], y / meas, rcond=None)
    prices[used] = sol
    p = dict(ldg=p_ldg, lds32=prices[0], lds128=prices[1])

    pred = x.reset_index()
    pred["measured_cadence"] = [cad.get(k, NAN) for k in pred["kernel"]]
    pred["predicted_cadence"] = sum(
        np.where(pred[f"x_{c}"] == 0, 0.0, p[c] * pred[f"x_{c}"]) for c in SASS_CLASSES
    )
    pred["model_error_pct"] = model_error_pct(pred["predicted_cadence"], pred["measured_cadence"])
    return SassFit(float(p_ldg), float(prices[0]), float(prices[1]), shape, tuple(fit_ids), pred)


# ---------------------------------------------------------------------------------------------
# The table written to model.csv

MODEL_TABLE_COLUMNS = ("method", "p_ldg", "p_dist", "p_bcast", "p_lds32", "p_lds128",
                       "M", "N", "K", "decimals", "kernels")


def model_table(ledger_df: pd.DataFrame, decimals: int | None = 2, sass_df: pd.DataFrame | None = None,
                kernels=None) -> pd.DataFrame:
    """One row per pricing method: "exact" (cadences rounded to ``decimals``, the report's
    choice), "lstsq" (unrounded), and "sass" when SASS loop counts are given."""
    table = prices_table([calibrate_exact(ledger_df, decimals, kernels),
                          fit_lstsq(ledger_df, None, kernels=kernels)])
    if sass_df is not None:
        table = with_sass(table, fit_sass(ledger_df, sass_df, kernels=kernels))
    return table


def prices_table(prices: Iterable[Prices]) -> pd.DataFrame:
    """Rows of ``model_table`` for the given price sets (none gives the empty table)."""
    rows = [{"method": p.method, "p_ldg": p.p_ldg, "p_dist": p.p_dist, "p_bcast": p.p_bcast,
             "p_lds32": NAN, "p_lds128": NAN, "M": p.shape[0], "N": p.shape[1], "K": p.shape[2],
             "decimals": NAN if p.decimals is None else p.decimals, "kernels": ",".join(p.kernels)}
            for p in prices]
    return pd.DataFrame(rows, columns=list(MODEL_TABLE_COLUMNS))


def with_sass(model_df: pd.DataFrame, fit: SassFit) -> pd.DataFrame:
    """``model_df`` (a ``model_table``) with the "sass" row of ``fit`` appended."""
    row = {"method": "sass", "p_ldg": fit.p_ldg, "p_dist": NAN, "p_bcast": NAN,
           "p_lds32": fit.p_lds32, "p_lds128": fit.p_lds128, "M": fit.shape[0], "N": fit.shape[1],
           "K": fit.shape[2], "decimals": NAN, "kernels": ",".join(fit.kernels)}
    rest = model_df[model_df["method"] != "sass"].to_dict("records")
    return pd.DataFrame([*rest, row], columns=list(model_df.columns))
