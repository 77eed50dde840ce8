"""The three ledgers and the per-kernel figures (`docs/method.md#figures`): pure arithmetic, no GPU.

Each figure is one small named function; ``ledger_table`` applies them to a table of measured
times. The only measured input is the median time; everything else is counted from the code
(``study.kernels.Counted``) or read from the GPU description (``study.rundata.gpu.GPU``).

Units: times in ms, clocks in MHz, bandwidth in GB/s, throughput in GFLOP/s, bytes per output
element, cadence in cycles per warp-FMA per SM.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from study import kernels as registry
from study.errors import InputError
from study.kernels import Counted, Kernel
from study.rundata.gpu import GPU, cadence_floor  # noqa: F401  (cadence_floor is a figure, docs/method.md#cadence-floor, defined once there)

NAN = float("nan")

# ---------------------------------------------------------------------------------------------
# Instruction ledger (docs/method.md#instruction-ledger): load instructions per FMA, counted from
# the inner loop.


def dist(c: Counted) -> float:
    """32-way shared loads per FMA (the index holds tx with coefficient 1)."""
    return c.lds_dist / c.fma_per_k


def bcast(c: Counted) -> float:
    """Broadcast shared loads per FMA (the index has no tx)."""
    return c.lds_bcast / c.fma_per_k


def ldg(c: Counted) -> float:
    """Global load instructions per FMA, spread over one phase."""
    return c.ldg_per_phase / c.fma_per_phase


def loads_per_fma(c: Counted) -> float:
    return dist(c) + bcast(c) + ldg(c)


# ---------------------------------------------------------------------------------------------
# Byte ledger (docs/method.md#byte-ledger): DRAM bytes per output element, from the tiling.


def bytes_per_out(c: Counted, K: int) -> float:
    """Phases x global elements per output per phase x 4 bytes, plus the 4-byte C write."""
    phases = math.ceil(K / c.phase_k)
    return phases * (c.elems_per_phase / c.outputs) * 4 + 4


def bytes_per_out_tile(BM: int, BN: int, K: int, BK: int = 32) -> float:
    """Byte ledger of any BM x BN x BK block tile: per phase a block loads BM x BK of A and
    BK x BN of B for its BM x BN outputs, 4 bytes each; a partial last phase loads a whole one
    (as ``bytes_per_out`` counts it), plus each output's own write."""
    phases = math.ceil(K / BK)
    return 4 * phases * BK * (1 / BM + 1 / BN) + 4


def footprint_bytes(n: float) -> float:
    """Bytes of A, B and C at M = N = K = n in FP32: 3·n²·4."""
    return 3 * n * n * 4


def n_at_footprint(nbytes: float) -> float:
    """The square size n whose footprint (``footprint_bytes``) equals ``nbytes``."""
    return math.sqrt(nbytes / footprint_bytes(1))


def ai(K: int, bytes_out: float) -> float:
    """Arithmetic intensity: 2K flops per output over its bytes."""
    return 2 * K / bytes_out


def roof_gflops(ai_: float, dram_gbps: float) -> float:
    return ai_ * dram_gbps


def attainment_pct(gflops_: float, roof: float) -> float:
    """Measured over the DRAM roof: >100% means the bytes did not all come from DRAM."""
    return 100 * gflops_ / roof


# ---------------------------------------------------------------------------------------------
# Bandwidth against the roofs (docs/method.md#bandwidth-roof): the bytes any kernel must move,
# over its time, against the measured read roof and the datasheet DRAM peak.


def bytes_once(M: int, N: int, K: int) -> float:
    """A and B read once, C written once, 4 bytes each: 4(MK + KN + MN), the least DRAM traffic
    of any kernel when the L2 starts empty."""
    return 4.0 * (M * K + K * N + M * N)


def b_share(M: int, N: int, K: int) -> float:
    """The part of ``bytes_once`` that is B: KN / (MK + KN + MN)."""
    return K * N / (M * K + K * N + M * N)


def gbps(nbytes: float, ms: float) -> float:
    """Bytes moved per second, in GB/s (1e9 bytes/s)."""
    return nbytes / (ms / 1e3) / 1e9


def pct_of_bandwidth(gbps_: float, roof_gbps: float | None) -> float:
    """100 x GB/s over a bandwidth roof; NaN when the roof is unknown (not measured)."""
    return 100 * gbps_ / roof_gbps if roof_gbps else NAN


# ---------------------------------------------------------------------------------------------
# Measured figures (the one measured input is the time).


def gflops(M: int, N: int, K: int, ms: float) -> float:
    return 2 * M * N * K / (ms / 1e3) / 1e9


def pct_peak(gflops_: float, peak_gflops: float) -> float:
    return 100 * gflops_ / peak_gflops


def twin_ratio(gflops_triton: float, gflops_cuda: float) -> float:
    """Triton over CUDA: a Triton twin's GFLOP/s over its CUDA kernel's at the same shape.
    Above 1 the Triton twin is faster; the clock cancels, as in % of cuBLAS."""
    return gflops_triton / gflops_cuda


def pct_cublas(gflops_: float, cublas_gflops: float) -> float:
    """Share of cuBLAS at the same shape; the clock cancels, so it holds in either caliber."""
    return 100 * gflops_ / cublas_gflops


def cadence(M: int, N: int, K: int, ms: float, sms: int, clock_mhz: float) -> float:
    """Cycles per warp-FMA per SM: all SM cycles spent, over the warp-FMAs (MNK / 32) done."""
    return 32 * sms * clock_mhz * 1e6 * (ms / 1e3) / (M * N * K)


def cycles_per_load(cadence_: float, loads_per_fma_: float) -> float:
    """A diagnostic, not a prediction: what each load instruction seems to cost."""
    return cadence_ / loads_per_fma_


# ---------------------------------------------------------------------------------------------
# Request ledger (docs/method.md#request-ledger, K1/K2 only): memory transactions per FMA.


def req_per_fma(c: Counted) -> float:
    return NAN if c.req_per_fma is None else float(c.req_per_fma)


def cycles_per_request(cadence_: float, req_per_fma_: float) -> float:
    return cadence_ / req_per_fma_


# ---------------------------------------------------------------------------------------------
# The table.

REQUIRED_COLUMNS = ("kernel", "M", "N", "K", "ms")
INSTRUCTION_COLUMNS = (
    "dist", "bcast", "ldg", "loads_per_fma", "cycles_per_load", "req_per_fma", "cycles_per_request",
)
BYTE_COLUMNS = ("bytes_per_out", "ai", "roof_gflops", "attainment_pct")
MODEL_COLUMNS = ("predicted_cadence", "model_error_pct")
ROOF_COLUMNS = ("bytes_once", "gbps_once", "read_gbps", "pct_read_roof", "dram_gbps", "pct_dram_peak")
MEASURED_COLUMNS = (
    "impl", "gflops", "gflops_lo", "gflops_hi", "pct_peak", "pct_cublas", "cadence", "cadence_floor",
    "sampled_clock_mhz", "pct_peak_sampled", "cadence_sampled",
)
COMPUTED_COLUMNS = MEASURED_COLUMNS + INSTRUCTION_COLUMNS + BYTE_COLUMNS + MODEL_COLUMNS + ROOF_COLUMNS


def kernel_map(kernels=None) -> dict[str, Kernel]:
    """Kernels by id: the registry by default, or the given mapping / iterable of kernels."""
    if kernels is None:
        return dict(registry.BY_ID)
    if isinstance(kernels, Mapping):
        return dict(kernels)
    return {k.id: k for k in kernels}


def shape_str(M, N, K) -> str:
    return f"{int(M)}x{int(N)}x{int(K)}"


# the kernels take 32-bit int sizes; a larger dimension is refused, never wrapped
MAX_DIM = 2**31 - 1


def plain(v) -> str:
    """A cell as a message shows it: 0, 1e+20, 'slow' or "an empty cell" (no numpy reprs)."""
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "an empty cell"
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e16:
        return str(int(v))
    return repr(v) if isinstance(v, str) else str(v)


def _check_times(times: pd.DataFrame, known: Mapping[str, Kernel]) -> pd.DataFrame:
    if not isinstance(times, pd.DataFrame):
        raise InputError(f"times must be a table with columns {', '.join(REQUIRED_COLUMNS)}")
    for col in REQUIRED_COLUMNS:
        if col not in times.columns:
            raise InputError(f"times lack column {col!r} (need {', '.join(REQUIRED_COLUMNS)})")
    if times.empty:
        raise InputError("times are empty: no kernel was timed")
    labels = list(times.index)  # messages name the row as the caller numbered it
    t = times.copy().reset_index(drop=True)
    # a ledger table fed back in: drop the figures this module computes, keep the inputs
    t = t.drop(columns=[c for c in COMPUTED_COLUMNS if c in t.columns])
    t["kernel"] = t["kernel"].astype(str)
    unknown = sorted(set(t["kernel"]) - set(known))
    if unknown:
        raise InputError(f"unknown kernel id(s) in times: {', '.join(unknown)}; known: {', '.join(known)}")
    for dim in ("M", "N", "K"):
        v = pd.to_numeric(t[dim], errors="coerce")
        bad = ~(v >= 1) | (v != v.round())
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(
                f"{dim} of {t.at[i, 'kernel']} (row {labels[i]}) must be a positive integer, "
                f"got {plain(t.at[i, dim])}"
            )
        big = v > MAX_DIM
        if big.any():
            i = int(np.flatnonzero(big.to_numpy())[0])
            raise InputError(
                f"{dim} of {t.at[i, 'kernel']} (row {labels[i]}) must be at most {MAX_DIM} (2**31 - 1), "
                f"got {plain(t.at[i, dim])}"
            )
        t[dim] = v.astype("int64")
    ms = pd.to_numeric(t["ms"], errors="coerce")
    bad = ~(ms > 0) | ~np.isfinite(ms.to_numpy(dtype=float, na_value=np.nan))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(
            f"time of {t.at[i, 'kernel']} at {shape_str(t.at[i, 'M'], t.at[i, 'N'], t.at[i, 'K'])} "
            f"(row {labels[i]}) must be a positive number of ms, got {plain(t.at[i, 'ms'])}"
        )
    t["ms"] = ms.astype(float)
    return t


def _over_passes(M: int, N: int, K: int, r: pd.Series, column: str) -> float:
    """GFLOP/s at the time ``column`` of a row measured in several passes; NaN otherwise."""
    ms = _positive_number(r.get(column))
    several = _positive_number(r.get("passes")) is not None and float(r["passes"]) >= 2
    return gflops(M, N, K, ms) if ms is not None and several else NAN


def _positive_number(v) -> float | None:
    """``v`` as a finite number > 0, or None (blank, text, zero, negative, infinite)."""
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return f if math.isfinite(f) and f > 0 else None


def row_path(row, k: Kernel, cc: str | None):
    """The path (``Kernel.paths``) a timed row of ``k`` ran: the one its ``symbol`` names, where the
    row recorded one the registry knows, else the one ``Kernel.path_for`` names at the row's shape
    on a device of capability ``cc``; None for a kernel without paths (cuBLAS)."""
    paths = k.paths
    if len(paths) <= 1:
        return paths[0] if paths else None
    named = row.get("symbol")
    hit = [p for p in paths if isinstance(named, str) and p.symbol == named]
    return hit[0] if hit else k.path_for(int(row["M"]), int(row["N"]), int(row["K"]), cc)


def _row_tile(row, k: Kernel) -> tuple[float, float, float] | None:
    """Block tile (BM, BN, BK) of a row: BM/BN (and BK) columns of the times (an autotuned
    pick) or the registry's. A BM or BN that is not a positive number counts as missing."""
    bm, bn = _positive_number(row.get("BM")), _positive_number(row.get("BN"))
    if bm is not None and bn is not None:
        bk = _positive_number(row.get("BK"))
        return bm, bn, bk if bk is not None else 32.0
    if k.tile is not None:
        return k.tile
    return None


def ledger_table(
    times: pd.DataFrame,
    gpu: GPU,
    kernels: Iterable[Kernel] | Mapping[str, Kernel] | None = None,
    match_on: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Every figure of `docs/method.md#figures` for each timed (kernel, shape).

    ``times`` needs columns kernel, M, N, K, ms (others are kept; an optional ``sm_clock_mhz``
    gives the clock sampled during that row, and optional BM/BN/BK the tile an autotuner picked).
    ``match_on`` are the columns that pair a row with its cuBLAS row for % of cuBLAS: by default
    M, N, K and, where the times have them, experiment and label (so a kernel is compared with
    cuBLAS timed in the same experiment). When several cuBLAS rows match, their median GFLOP/s
    is used.

    The main caliber is the device-reported max clock; ``*_sampled`` columns use the sampled
    clock (the row's ``sm_clock_mhz``, else ``gpu.sampled_sm_clock_mhz``; NaN when neither).
    ``predicted_cadence`` and ``model_error_pct`` stay NaN here: ``study.derive.model.apply`` fills them.
    Every row, cuBLAS's too, carries the bandwidth of its bytes moved once against the measured
    read roof (``gpu.read_gbps``; NaN when the run did not measure it) and the datasheet DRAM peak.
    Counted kernels (the CUDA ones, and T1, which has K2's no-reuse ledger) carry the ledgers
    their counts give; other Triton kernels the byte ledger from their tile (their instruction
    ledger comes from SASS); cuBLAS only the measured figures.
    """
    known = kernel_map(kernels)
    t = _check_times(times, known)
    if match_on is None:
        match_on = [c for c in ("experiment", "label") if c in t.columns] + ["M", "N", "K"]
    match_on = list(match_on)
    for col in match_on:
        if col not in t.columns:
            raise InputError(f"times lack column {col!r} used to pair rows with cuBLAS")

    peak = gpu.peak_gflops()
    bw = gpu.dram_gbps()
    read_bw = float(gpu.read_gbps) if gpu.read_gbps else NAN
    floor = gpu.cadence_floor()
    if "sm_clock_mhz" in t.columns:
        sampled = pd.to_numeric(t["sm_clock_mhz"], errors="coerce")
        sampled = sampled.where(sampled > 0)
    else:
        sampled = pd.Series(NAN, index=t.index)
    if gpu.sampled_sm_clock_mhz:
        sampled = sampled.fillna(gpu.sampled_sm_clock_mhz)

    rows = []
    for i, r in t.iterrows():
        k = known[r["kernel"]]
        M, N, K, ms = int(r["M"]), int(r["N"]), int(r["K"]), float(r["ms"])
        f_s = sampled.at[i]
        g = gflops(M, N, K, ms)
        cad = cadence(M, N, K, ms, gpu.sms, gpu.sm_clock_mhz)
        out = {
            "impl": k.impl,
            "gflops": g,
            # the least and greatest over the passes (spread.representatives), NaN for one pass
            "gflops_lo": _over_passes(M, N, K, r, "ms_slowest"),
            "gflops_hi": _over_passes(M, N, K, r, "ms_fastest"),
            "pct_peak": pct_peak(g, peak),
            "cadence": cad,
            "cadence_floor": floor,
            "sampled_clock_mhz": f_s,
            "pct_peak_sampled": pct_peak(g, gpu.peak_gflops(f_s)) if pd.notna(f_s) else NAN,
            "cadence_sampled": cadence(M, N, K, ms, gpu.sms, f_s) if pd.notna(f_s) else NAN,
        }
        out.update(dict.fromkeys(INSTRUCTION_COLUMNS + BYTE_COLUMNS + MODEL_COLUMNS, NAN))
        path = row_path(r, k, gpu.cc)
        c = path.counted if path is not None else k.counted
        if c is not None:
            lpf = loads_per_fma(c)
            rq = req_per_fma(c)
            out.update(
                dist=dist(c), bcast=bcast(c), ldg=ldg(c), loads_per_fma=lpf,
                cycles_per_load=cycles_per_load(cad, lpf), req_per_fma=rq,
                cycles_per_request=cycles_per_request(cad, rq),
                bytes_per_out=bytes_per_out(c, K),
            )
        elif k.impl != "cublas":
            tile = _row_tile(r, k)
            if tile is not None:
                out["bytes_per_out"] = bytes_per_out_tile(*tile[:2], K, tile[2])
        if not math.isnan(out["bytes_per_out"]):
            a = ai(K, out["bytes_per_out"])
            roof = roof_gflops(a, bw)
            out.update(ai=a, roof_gflops=roof, attainment_pct=attainment_pct(g, roof))
        once = bytes_once(M, N, K)
        moved = gbps(once, ms)
        out.update(
            bytes_once=once, gbps_once=moved,
            read_gbps=read_bw, pct_read_roof=pct_of_bandwidth(moved, read_bw),
            dram_gbps=bw, pct_dram_peak=pct_of_bandwidth(moved, bw),
        )
        rows.append(out)

    df = pd.concat([t, pd.DataFrame(rows, index=t.index)], axis=1)
    # % of cuBLAS is against the best vendor kernel at the point: the faster of the vendor kernels
    # timed there (cuBLAS's default, the best cuBLASLt algorithm), each its median where it has
    # several rows
    base_ids = [kid for kid, k in known.items() if k.impl == "cublas"]
    base = df[df["kernel"].isin(base_ids)]
    if match_on:
        per = base.groupby([*match_on, "kernel"])["gflops"].median().reset_index()
        ref = per.groupby(match_on)["gflops"].max().rename("_cublas_gflops").reset_index()
        df = df.merge(ref, on=match_on, how="left")
    else:
        df["_cublas_gflops"] = base.groupby("kernel")["gflops"].median().max() if len(base) else NAN
    df["pct_cublas"] = pct_cublas(df["gflops"], df["_cublas_gflops"])
    df = df.drop(columns="_cublas_gflops")

    lead = ["kernel", "impl", "M", "N", "K", "ms", "gflops", "pct_peak", "pct_cublas"]
    rest = [c for c in df.columns if c not in lead]
    return df[lead + rest]
