"""The bound model's inputs, read from a run's tables, and the whole model run on them
(`docs/bounds.md`): per (kernel, shape) with a time and counters, the counts of Nsight Compute
(ncu.csv), the main loop's SASS and the theoretical occupancy (sass.csv) of the function that shape
launched, and the tiles, threads and counted ledger inputs of the registry. The arithmetic on
those counts is :mod:`study.derive.bounds`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from study import kernels as registry
from study.derive import model as seed_model
from study.derive.bounds import (
    NAN,
    Constants,
    Machine,
    at_shape,
    fit,
    fit_kernels,
    fit_shape,
    leave_one_out,
    lines,
    machine,
    predict,
    producer_waits,
    store_wavefronts,
    tail_factor,
)
from study.derive.selection import in_order

# ncu metric names (study/profile.py records them)
NCU = {
    "inst": "smsp__inst_executed.sum",
    "inst_fma": "smsp__inst_executed_pipe_fma.sum",
    "wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "dram": "dram__bytes_read.sum",
    "warps": "sm__warps_active.avg.pct_of_peak_sustained_active",
}

INPUT_COLUMNS = [
    "kernel",
    "impl",
    "M",
    "N",
    "K",
    "measured_cadence",
    "inst_per_wfma",
    "fma_inst_per_wfma",
    "ld_wavefronts_per_wfma",
    "st_wavefronts_per_wfma",
    "wavefronts_per_wfma",
    "sectors_per_wfma",
    "requests_per_wfma",
    "lines_per_wfma",
    "dram_bytes_per_wfma",
    "warps",
    "warps_from",
    "wfma_per_trip",
    "exposed",
    "spill_reloads",
    "producer_waits",
    "stores",
    "blocks",
    "blocks_per_sm",
    "tail",
]

# ---------------------------------------------------------------------------------------------
# Inputs from the tables


def ncu_wide(ncu: pd.DataFrame) -> pd.DataFrame:
    """Per (kernel, M, N, K): the latest profiling run's metrics, ``.sum`` counts added over
    launches, rates averaged (as ``counters.counters`` combines them)."""
    df = ncu.copy()
    df["metric"], df["kernel"] = df["metric"].astype(str), df["kernel"].astype(str)
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    if "launch" not in df.columns:
        df["launch"] = 0
    if "run_id" in df.columns:
        last = df.groupby(["kernel", "M", "N", "K"])["run_id"].transform(lambda r: r.astype(str).max())
        df = df[df["run_id"].astype(str) == last]
    rows = []
    for (kid, M, N, K), g in df.groupby(["kernel", "M", "N", "K"], sort=False):
        wide = g.pivot_table(index="launch", columns="metric", values="value", aggfunc="last")
        r = {n: (wide[n].sum() if n.endswith(".sum") else wide[n].mean()) for n in wide.columns}
        names = sorted(g["ncu_kernel"].dropna().astype(str).unique()) if "ncu_kernel" in g.columns else []
        rows.append({"kernel": kid, "M": int(M), "N": int(N), "K": int(K), "ncu_kernels": names, **r})
    return pd.DataFrame(rows)


def _tile_threads(kid: str, config, path=None, s=None) -> tuple[tuple[int, int, int] | None, int | None]:
    k = registry.BY_ID[kid]
    if path is not None and k.impl == "cuda":
        return path.tile, path.threads
    if k.impl == "cuda" and len(k.paths) > 1:  # a function of an older registry: its SASS row's threads
        threads = pd.to_numeric(s.get("threads"), errors="coerce") if s is not None else NAN
        return None, int(threads) if np.isfinite(threads) else None
    if k.tuned:  # the autotune winner's tile and warps, recorded with the row
        cfg = json.loads(config) if isinstance(config, str) and config.startswith("{") else {}
        if all(d in cfg for d in ("BM", "BN", "BK")):
            return (int(cfg["BM"]), int(cfg["BN"]), int(cfg["BK"])), int(cfg.get("num_warps", 4)) * 32
        return None, None
    if k.impl == "cublas":
        return None, None
    return k.tile, k.threads


def launched_symbol(k, at: pd.DataFrame, profiled: list[str], sx: pd.DataFrame | None, cc: str | None):
    """(symbol, path) of the function ``k`` launched for the timed rows ``at`` (one kernel at one
    shape): the ``symbol`` the rows recorded; else the function the counters name where sass.csv
    holds its SASS (a run directory of an older registry keeps its own names); else the path
    ``Kernel.path_for`` names at the rows' shape on a device of capability ``cc``. ``path`` is
    None where the symbol is no path of today's registry; (None, None) for cuBLAS."""
    if k.impl != "cuda":
        return (k.symbol, None) if k.impl == "triton" else (None, None)
    paths = {p.symbol: p for p in k.paths}
    if "symbol" in at.columns:
        named = [str(v) for v in at["symbol"] if isinstance(v, str) and v.strip()]
        if named:
            return named[-1], paths.get(named[-1])
    if len(profiled) == 1 and profiled[0] in _held(sx, k.id):
        return profiled[0], paths.get(profiled[0])
    r = at.iloc[-1]
    path = k.path_for(int(r["M"]), int(r["N"]), int(r["K"]), cc)
    return path.symbol, path


def _held(sx: pd.DataFrame | None, kid: str) -> list[str]:
    """The functions of kernel ``kid`` whose SASS sass.csv holds."""
    if sx is None:
        return []
    return sorted(set(sx.loc[sx["kernel"].astype(str) == kid, "symbol"].astype(str)))


def _sass_row(sx: pd.DataFrame | None, kid: str, symbol: str | None):
    """The SASS row of kernel ``kid``'s function ``symbol``, None where sass.csv has none. A Triton
    kernel's row is its own whatever name Triton gave the function."""
    if sx is None:
        return None
    rows = sx[sx["kernel"].astype(str) == kid]
    if symbol and registry.BY_ID[kid].impl == "cuda":
        rows = rows[rows["symbol"].astype(str) == symbol]
    return rows.iloc[-1] if len(rows) else None


def _contiguous(at: pd.DataFrame) -> pd.DataFrame:
    """The rows timed on contiguous operands: ncu profiles a shape with its natural strides, so a
    padded-storage row (``ld`` set) is not the profiled launch."""
    if "ld" not in at.columns:
        return at
    ld = pd.to_numeric(at["ld"], errors="coerce")
    return at[ld.isna()]


def _config(cfg) -> dict:
    return json.loads(cfg) if isinstance(cfg, str) and cfg.startswith("{") else {}


def _inputs(
    ledger: pd.DataFrame, ncu: pd.DataFrame | None, sass: pd.DataFrame | None, m: Machine
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(inputs, left out): the count inputs of every (kernel, shape) with counters and a time, and
    the (kernel, shape)s with counters that the model cannot take, with why."""
    skipped: list[dict] = []
    if ncu is None or ledger is None or ledger.empty:
        return pd.DataFrame(columns=INPUT_COLUMNS), pd.DataFrame(columns=SKIP_COLUMNS)
    wide = ncu_wide(ncu)
    sx = sass.drop_duplicates(["kernel", "symbol"], keep="last") if sass is not None else None
    rows = []
    for _, w in wide.iterrows():
        kid = w["kernel"]
        M, N, K = w["M"], w["N"], w["K"]

        def skip(why, kid=kid, M=M, N=N, K=K):
            skipped.append({"kernel": kid, "M": M, "N": N, "K": K, "why": why})

        if kid not in registry.BY_ID:
            skip("not in the registry")
            continue
        k = registry.BY_ID[kid]
        at = ledger[(ledger["kernel"] == kid) & (ledger["M"] == M) & (ledger["N"] == N) & (ledger["K"] == K)]
        at = _contiguous(at)
        if at.empty:
            skip("counters but no time on contiguous operands at this shape")
            continue
        meas = float(pd.to_numeric(at["cadence"], errors="coerce").median())
        wfma = M * N * K / 32

        def get(key, w=w, wfma=wfma):
            return float(w.get(NCU[key], NAN)) / wfma

        config = at["config"].iloc[-1] if "config" in at.columns else None
        profiled = list(w.get("ncu_kernels", []))
        symbol, path = launched_symbol(k, at, profiled, sx, m.cc)
        s = _sass_row(sx, kid, symbol)
        launched = [n for n in profiled if n != symbol]
        held = _held(sx, kid)
        if k.impl == "cuda" and launched and (s is not None or held):
            # the counters are of another function than the one whose SASS sass.csv holds
            skip(f"the launch profiled here is {', '.join(launched)}, not {symbol}, whose SASS "
                 "sass.csv holds" if s is not None else
                 f"the launch profiled here is {', '.join(launched)}; sass.csv holds the SASS of "
                 f"{', '.join(held)}, not of {symbol}, which this shape launches")
            continue
        compiled = _config(s.get("config")) if s is not None else {}
        if k.tuned and compiled and any(_config(config).get(n) != v for n, v in compiled.items()):
            # the SASS table holds the compile of one tuned config: its loop counts and occupancy
            # are not this launch's
            skip(f"the autotuner picked another config here than the one compiled into sass.csv ({config})")
            continue
        tile, threads = _tile_threads(kid, config, path, s)
        # resident warps: theoretical occupancy from the SASS table; cuBLAS has none, so ncu's
        # active warps (a residency count, not a time) stand in
        if s is not None and pd.notna(s.get("occupancy_pct")) and m.max_warps:
            warps, warps_from = float(s["occupancy_pct"]) / 100 * m.max_warps, "sass occupancy"
        else:
            warps, warps_from = float(w.get(NCU["warps"], NAN)) / 100 * m.max_warps, "ncu warps active"
        loop_ffma = float(s["loop_FFMA"]) if s is not None and pd.notna(s.get("loop_FFMA")) else NAN
        loop_ldg = float(s.get("loop_LDG", 0) or 0) if s is not None else 0.0
        loop_bar = float(s.get("loop_BAR", 0) or 0) if s is not None else NAN
        loop_sts = float(s.get("loop_STS", 0) or 0) if s is not None else NAN
        loop_ldgsts = float(s.get("loop_LDGSTS", 0) or 0) if s is not None else NAN
        loop_stsm = float(s.get("loop_STSM", 0) or 0) if s is not None else NAN
        # a loop trip waits on its own global loads unless they were issued a trip ahead: one
        # barrier per trip (register prefetch into a second stage) or cp.async stages (no LDG)
        exposed = bool(s is not None and loop_ldg > 0 and loop_bar != 1)
        spill_reloads = float(s.get("loop_LDL", 0) or 0) if s is not None else 0.0
        c = path.counted if path is not None else k.counted
        uncoalesced = bool(
            c is not None and c.req_per_fma is not None and c.req_per_fma > seed_model.REQUEST_BOUND_ABOVE
        )
        ld_wf = get("wavefronts")
        # how the loop fills its shared tile: STS from registers (counted on the shared-memory
        # pipe), cp.async (LDGSTS, no STS: the L1's fill path, not counted), the copy engine (TMA:
        # no load or store of the threads in the loop, not counted)
        if tile is None:
            stores = "none"  # no shared tile (K1, K2) or unknown (cuBLAS)
        elif s is not None and loop_sts == 0 and loop_ldgsts > 0:
            stores = "cp.async"
        elif s is not None and loop_sts == 0 and loop_stsm == 0 and loop_ldgsts == 0 and loop_ldg == 0:
            stores = "TMA"
        else:
            stores = "STS"
        # a copy issuer among the FMA threads: per phase it waits on the stage's empty barrier
        # and issues the block's tensor copies while its warp waits (phases per trip from the
        # loop's FFMA over the counted FMAs per thread and phase)
        prod = (
            producer_waits(
                float(c.ldg_per_phase), k.compute_threads is None, loop_ldg, loop_ldgsts,
                loop_ffma / c.fma_per_phase if c.fma_per_phase else NAN,
            )
            if c is not None and s is not None
            else 0.0
        )
        if stores == "STS":
            ways = (c.sts_ways_a, c.sts_ways_b) if c is not None else (1, 1)
            st_wf = store_wavefronts(tile[0], tile[1], ways)
        else:
            st_wf = 0.0
        sectors, requests = get("sectors"), get("requests")
        if tile is not None and threads:
            blocks = math.ceil(M / tile[0]) * math.ceil(N / tile[1])
        elif c is not None and threads:
            blocks = math.ceil(M * N / (threads * c.outputs))
        else:
            blocks = NAN
        bps = math.floor(warps / (threads // 32)) if threads and np.isfinite(warps) else NAN
        rows.append(
            {
                "kernel": kid,
                "impl": k.impl,
                "M": M,
                "N": N,
                "K": K,
                "measured_cadence": meas,
                "inst_per_wfma": get("inst"),
                "fma_inst_per_wfma": get("inst_fma"),
                "ld_wavefronts_per_wfma": ld_wf,
                "st_wavefronts_per_wfma": st_wf,
                "wavefronts_per_wfma": ld_wf + st_wf,
                "sectors_per_wfma": sectors,
                "requests_per_wfma": requests,
                "lines_per_wfma": lines(sectors, requests, uncoalesced),
                "dram_bytes_per_wfma": get("dram"),
                "warps": warps,
                "warps_from": warps_from,
                "wfma_per_trip": loop_ffma,
                "exposed": exposed,
                "spill_reloads": spill_reloads,
                "producer_waits": prod,
                "stores": stores,
                "blocks": blocks,
                "blocks_per_sm": bps,
                "tail": tail_factor(blocks, bps, m.sms),
            }
        )
    out = pd.DataFrame(rows, columns=INPUT_COLUMNS)
    out = in_order(out).reset_index(drop=True) if len(out) else out
    return out, pd.DataFrame(skipped, columns=SKIP_COLUMNS)


SKIP_COLUMNS = ["kernel", "M", "N", "K", "why"]


def inputs(
    ledger: pd.DataFrame, ncu: pd.DataFrame | None, sass: pd.DataFrame | None, m: Machine
) -> pd.DataFrame:
    """One row per (kernel, shape) that has both a time and counters: the model's count inputs."""
    return _inputs(ledger, ncu, sass, m)[0]


def left_out(ledger: pd.DataFrame, ncu: pd.DataFrame | None, sass: pd.DataFrame | None,
             m: Machine) -> pd.DataFrame:
    """The (kernel, shape)s with counters the model does not take, and why."""
    return _inputs(ledger, ncu, sass, m)[1]


@dataclass
class BoundModel:
    inputs: pd.DataFrame
    constants: Constants
    predictions: pd.DataFrame
    loo: pd.DataFrame
    left_out: pd.DataFrame | None = None  # (kernel, shape)s with counters it does not take, and why


def why_not(ledger: pd.DataFrame, ncu: pd.DataFrame | None, sass: pd.DataFrame | None, gpu) -> str:
    """Why the model cannot be fitted on this run ("" when it can)."""
    if ncu is None:
        return "the run has no ncu counters (ncu.csv)"
    inp = inputs(ledger, ncu, sass, machine(gpu))
    fit = fit_kernels(inp)
    kids = sorted(set(at_shape(inp, fit_shape(inp))["kernel"]) & set(fit), key=fit.index)
    if len(kids) < 4:
        return (
            f"{len(kids)} CUDA-ladder kernel(s) not request-bound have both a time and ncu counters "
            f"({', '.join(kids) or 'none'}); three constants and a leave-one-out need at least 4"
        )
    return ""


def run(ledger: pd.DataFrame, ncu: pd.DataFrame | None, sass: pd.DataFrame | None, gpu) -> BoundModel | None:
    """The whole model at the shape(s) with counters; None when it cannot be fitted (``why_not``)."""
    m = machine(gpu)
    inp, skipped = _inputs(ledger, ncu, sass, m)
    if inp.empty:
        return None
    shape = fit_shape(inp)
    kids = [k for k in fit_kernels(inp) if k in set(at_shape(inp, shape)["kernel"])]
    if len(kids) < 4:
        return None
    c = fit(inp, m, kids)
    return BoundModel(inp, c, predict(inp, c, m), leave_one_out(inp, m, kids), skipped)
