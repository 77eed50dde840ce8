"""The bound model (`docs/bounds.md`): what binds each kernel, from counts, never from its time.

A second model beside the seed's instruction-ledger prices (`study.derive.model`, unchanged). Per
kernel and shape, in the cadence's units (cycles per warp FMA per SM, `docs/method.md#cadence`)::

    b_fma   = fma-pipe instructions per warp FMA x 32 / lanes      FP32 pipe: lanes per SM per cycle
    b_issue = instructions per warp FMA / (4 x eta_issue)          4 schedulers, 1 instruction each
    b_smem  = shared wavefronts per warp FMA / eta_smem            1 wavefront per cycle per SM
    b_l1    = L1 lines (tag lookups) per warp FMA x 1 cycle        L1TEX t-stage: 1 line per cycle
    b_dram  = DRAM bytes per warp FMA / (DRAM bytes per cycle per SM)
    latency = waits x L_glob / (warp FMAs per warp per loop trip x resident warps per SM)
    waits   = exposed (1 when a loop trip waits on its own global loads, else 0)
              + spill reloads (LDL in the main loop: each waits on local memory, past L1)
              + producer waits (1 per phase where one thread of an FMA warp issues the block's
                tensor copies after waiting on the stage's empty barrier: K13)

    predicted = max(b_fma + latency, b_issue + latency, b_l1 + latency,
                    b_smem, b_smem / blocks + latency, b_dram) x tail

The exposed latency stalls a block's instruction stream (its warps wait at the scoreboard, then
at the barrier), so it adds to the issue, FMA and L1 terms. The shared-memory pipe works off a
queue that every resident block feeds: while one block waits, the others' wavefronts keep it
busy, so a trip of the pipe takes the larger of all blocks' wavefronts (``b_smem``) and one
block's wavefronts plus its wait (``b_smem / blocks + latency``): Hong & Kim's
computation-covers-memory case, at the granularity of a block, since the barrier makes a block
wait as one. With one block resident the barrier drains the queue and the wait adds in full. The
DRAM term has no latency: a stream bound by bandwidth keeps its requests in flight.

A producer wait is the serial work of a copy issuer that is also an FMA thread (``producer_waits``,
K13): each phase one thread waits on the empty barrier of the stage it refills (every warp's
release), arms the stage's full barrier and issues the tensor copies, each step a single lane's
work inside a divergent region, so its warp's other 31 lanes wait at the reconvergence (BSYNC)
and the warp issues no FMA meanwhile. The other warps can run ahead of that warp only until a
full barrier whose copies it has not yet issued, so the block goes at its pace, and the wait adds
to the instruction stream as a load wait does (not to the DRAM term). It is priced at ``L_glob``:
an assumption, with one kernel as evidence (K13, whose time exceeds its issue term by about that
much a phase: docs/bounds.md), not a constant of its own. The stage ring's lookahead (STAGES - LAG phases)
hides the copies' latency, not this wait, which is the issuing warp's own. A warp-specialised
kernel has none (K14: its producer warps own no outputs, ``Kernel.compute_threads``): the wait
holds no FMA warp.

Three fitted constants, each a property of the GPU: ``eta_issue`` (the share of issue slots a
scheduler sustains), ``eta_smem`` (the share of shared-memory wavefront slots sustained),
``L_glob`` (the global-load latency a loop trip exposes when it waits on its own loads: load,
store to shared, barrier; a spilled value reloaded in the loop, and a producer wait, are each
priced as one more such wait).
The DRAM rate is the measured read roof of gpu.json (``read_gbps``), else the datasheet peak; the
FMA floor comes from the lanes, the L1 line rate is the hardware's one tag lookup per cycle: none
of those is fitted. The constants are fitted at one shape (the one holding most of the fit set);
every other (kernel, shape) with counters and a time is predicted with them.

Inputs are counts only: instructions, fma-pipe instructions, shared-load wavefronts, global
sectors and requests and DRAM bytes from Nsight Compute (ncu.csv); the main loop's FFMA, LDG, STS,
LDGSTS, LDL and barrier counts and the theoretical occupancy from the SASS table (sass.csv); tiles,
threads, the counted request ledger, the copy instructions per thread and phase and the threads that
own outputs from the registry; shared-store conflict ways read off the
``.cu`` files (``Counted.sts_ways_a``/``sts_ways_b`` in the registry). Store wavefronts are
counted for tiles stored through registers (STS in the loop); a tile copied by cp.async (LDGSTS,
no STS in the loop) reaches shared memory by the L1's fill path, as a global load's line does,
and is not counted on the shared-memory pipe; nor is a tile the copy engine writes (TMA: no LDG,
LDGSTS, STS or STSM in the loop). The measured time is never an input: it is only
the target of the fit. Stall ratios are not used (they are normalised by issue-active cycles, a
function of the time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from study import kernels as registry
from study.derive import model as seed_model

NAN = math.nan
SCHEDULERS = 4  # warp schedulers per SM (every architecture study.arch knows since Maxwell)
LINE_SECTORS = 4  # 32-byte sectors per 128-byte L1 line
T_LINE = 1.0  # cycles per L1 line lookup (the t-stage takes one line per cycle)
WAVEFRONT_BYTES = 128  # shared memory moves 128 bytes (32 banks x 4) per wavefront
RESOURCES = ("fma", "issue", "smem", "l1", "dram")
METHOD = "bound"
# the fit's search box; a constant on its edge is reported as such (``Constants.on_edge``)
ETA_GRID = np.round(np.arange(0.40, 1.0001, 0.002), 3)

# Shared-store bank-conflict ways (A store, B store) are counted from each .cu into the registry
# (``Counted.sts_ways_a`` / ``sts_ways_b``): K5 stores A transposed with the lane index on the row
# (32-way); K6 stores A transposed from float4 loads (8-way); K7 the same with two lanes per bank
# (2-way); K8-K10 pad the transposed row (conflict-free). A kernel without counts (Triton, which
# swizzles its shared layouts) stores conflict-free; cuBLAS's stores are unknown (0).

TERM_COLUMNS = ["b_fma", "b_issue", "b_smem", "b_l1", "b_dram", "latency", "latency_smem"]


@dataclass(frozen=True)
class Constants:
    eta_issue: float
    eta_smem: float
    l_glob: float  # cycles
    kernels: tuple[str, ...] = ()  # fitted on
    shape: tuple[int, int, int] | None = None

    def on_edge(self) -> list[str]:
        lo, hi = float(ETA_GRID[0]), float(ETA_GRID[-1])
        return [n for n, v in (("eta_issue", self.eta_issue), ("eta_smem", self.eta_smem)) if v in (lo, hi)]


@dataclass(frozen=True)
class Machine:
    """What the model takes from gpu.json: nothing here is fitted."""

    lanes: int
    sms: int
    sm_clock_mhz: float
    dram_gbps: float  # the datasheet peak
    max_warps: int
    read_gbps: float | None = None  # the measured read roof (gpu.json), where the run measured it
    cc: str | None = None  # compute capability: which path a kernel of several launches (path_for)

    @property
    def fma_floor(self) -> float:
        return 32 / self.lanes

    @property
    def roof_gbps(self) -> float:
        """The DRAM rate the model uses: the measured read roof, else the datasheet peak."""
        return float(self.read_gbps) if self.read_gbps else self.dram_gbps

    @property
    def roof_from(self) -> str:
        return "measured read roof (gpu.json read_gbps)" if self.read_gbps else "datasheet DRAM peak"

    @property
    def dram_bytes_per_cycle_sm(self) -> float:
        return self.roof_gbps * 1e9 / (self.sms * self.sm_clock_mhz * 1e6)


def machine(gpu) -> Machine:
    from study import arch

    try:
        warps = arch.get(gpu.cc).max_warps_per_sm
    except Exception:  # an unknown capability: occupancy from the SASS table cannot be scaled
        warps = 0
    read = getattr(gpu, "read_gbps", None)
    return Machine(
        int(gpu.fp32_lanes_per_sm), int(gpu.sms), float(gpu.sm_clock_mhz), float(gpu.dram_gbps()), int(warps),
        float(read) if read else None, gpu.cc,
    )


# ---------------------------------------------------------------------------------------------
# The arithmetic (pure, on numbers)


def waits(exposed: bool, spill_reloads: float, producer_waits: float = 0.0) -> float:
    """Exposed global latencies per loop trip: one if the trip waits on its own loads, plus one
    per spilled value reloaded (LDL) in the loop, plus the producer waits (``producer_waits``)."""
    fin = lambda v: float(v) if v is not None and np.isfinite(v) else 0.0  # noqa: E731
    return (1.0 if exposed else 0.0) + fin(spill_reloads) + fin(producer_waits)


def producer_waits(
    copies_per_thread_phase: float, issuer_owns_outputs: bool, loop_ldg: float, loop_ldgsts: float,
    phases_per_trip: float,
) -> float:
    """Waits per loop trip of a copy issuer that is also an FMA thread: one per phase where the
    block's copies are fewer instructions than its threads (``copies_per_thread_phase`` < 1: one
    thread issues tensor copies for all, the registry's ``Counted.ldg_per_phase``), the threads
    load nothing themselves in the loop (no LDG, no LDGSTS: the copy engine writes the tiles) and
    the issuing thread owns outputs (no producer warps: ``Kernel.compute_threads`` unset). Each
    phase that thread waits on the stage's empty barrier and issues the copies while its warp's
    other lanes wait (K13); 0 for every other loop."""
    if not (np.isfinite(copies_per_thread_phase) and 0 < copies_per_thread_phase < 1):
        return 0.0
    if not issuer_owns_outputs or loop_ldg > 0 or loop_ldgsts > 0:
        return 0.0
    return float(phases_per_trip) if np.isfinite(phases_per_trip) and phases_per_trip > 0 else 0.0


def terms(
    *, inst, fma_inst, wavefronts, lines, dram_bytes, warps, wfma_per_trip, exposed, c: Constants, m: Machine,
    spill_reloads: float = 0.0, blocks_per_sm: float = 1.0, producer_waits: float = 0.0,
) -> dict[str, float]:
    """The five bounds and the latency terms, each in cycles per warp FMA per SM.

    ``latency``: the exposed waits shared by the resident warps. ``latency_smem``: what of it the
    shared-memory pipe loses, the wait less the other resident blocks' wavefronts
    (``(blocks - 1) / blocks x b_smem``), at least 0; all of it with one block resident."""
    w = waits(exposed, spill_reloads, producer_waits)
    lat = w * c.l_glob / (wfma_per_trip * warps) if w and wfma_per_trip > 0 and warps > 0 else 0.0
    b_smem = wavefronts / c.eta_smem
    blocks = blocks_per_sm if np.isfinite(blocks_per_sm) and blocks_per_sm >= 1 else 1.0
    return {
        "b_fma": fma_inst * m.fma_floor,
        "b_issue": inst / (SCHEDULERS * c.eta_issue),
        "b_smem": b_smem,
        "b_l1": lines * T_LINE,
        "b_dram": dram_bytes / m.dram_bytes_per_cycle_sm,
        "latency": lat,
        "latency_smem": max(0.0, lat - (blocks - 1) / blocks * b_smem) if np.isfinite(b_smem) else lat,
    }


def totals(t: dict[str, float]) -> dict[str, float]:
    """Per resource: its bound plus the latency it does not overlap (cycles per warp FMA)."""
    lat = t["latency"]
    add = {"fma": lat, "issue": lat, "smem": t.get("latency_smem", lat), "l1": lat, "dram": 0.0}
    return {r: t[f"b_{r}"] + add[r] for r in RESOURCES if np.isfinite(t[f"b_{r}"])}


def combine(t: dict[str, float], tail: float) -> tuple[float, str]:
    """(predicted cadence, binding resource): the largest of the bounds, each with the latency it
    does not overlap (``totals``), times the tail. The binding resource is that one, or "latency"
    when its added latency exceeds its bound."""
    tot = totals(t)
    top = max(tot, key=tot.get)
    bound = "latency" if tot[top] - t[f"b_{top}"] > t[f"b_{top}"] else top
    return tot[top] * tail, bound


def tail_factor(blocks: float, blocks_per_sm: float, sms: int) -> float:
    """Wave quantisation: the last wave of blocks runs as long as a full one."""
    if not (blocks > 0 and blocks_per_sm > 0):
        return 1.0
    waves = blocks / (blocks_per_sm * sms)
    return math.ceil(waves) / waves


def store_wavefronts(bm: int, bn: int, ways: tuple[int, int]) -> float:
    """Shared-store wavefronts per warp FMA of a BM x BN tile whose A and B stores take ``ways``
    wavefronts per warp-wide 32-bit store: per phase a block stores BM.BK + BK.BN floats
    (BK.(BM.ways_A + BN.ways_B)/32 wavefronts) for BM.BN.BK/32 warp FMAs."""
    return (ways[0] * bm + ways[1] * bn) / (bm * bn)


def lines(sectors: float, requests: float, uncoalesced: bool) -> float:
    """L1 lines (tag lookups) per warp FMA: every sector its own line for an uncoalesced kernel
    (the registry's request ledger), else four sectors to a line, at least one per request."""
    if uncoalesced:
        return sectors
    return max(requests, sectors / LINE_SECTORS)


def error_pct(pred: float, meas: float) -> float:
    return (pred / meas - 1) * 100 if meas and np.isfinite(meas) and np.isfinite(pred) else NAN


def _terms_row(r, c: Constants, m: Machine) -> dict[str, float]:
    return terms(
        inst=r["inst_per_wfma"],
        fma_inst=r["fma_inst_per_wfma"],
        wavefronts=r["wavefronts_per_wfma"],
        lines=r["lines_per_wfma"],
        dram_bytes=r["dram_bytes_per_wfma"],
        warps=r["warps"],
        wfma_per_trip=r["wfma_per_trip"],
        exposed=bool(r["exposed"]),
        spill_reloads=float(r["spill_reloads"]),
        producer_waits=float(r["producer_waits"]) if "producer_waits" in r.index else 0.0,
        blocks_per_sm=float(r["blocks_per_sm"]) if "blocks_per_sm" in r.index else 1.0,
        c=c,
        m=m,
    )


def predict(inp: pd.DataFrame, c: Constants, m: Machine) -> pd.DataFrame:
    """``inp`` with the terms, the predicted cadence, its error and the binding resource."""
    out = inp.copy()
    recs = []
    for _, r in inp.iterrows():
        t = _terms_row(r, c, m)
        pred, bound = combine(t, float(r["tail"]))
        recs.append(
            {
                **t,
                "predicted_cadence": pred,
                "bound": bound,
                "error_pct": error_pct(pred, float(r["measured_cadence"])),
            }
        )
    extra = pd.DataFrame(
        recs, index=inp.index, columns=[*TERM_COLUMNS, "predicted_cadence", "bound", "error_pct"]
    )
    return pd.concat([out, extra], axis=1)


# ---------------------------------------------------------------------------------------------
# The fit


def fit_kernels(inp: pd.DataFrame) -> list[str]:
    """The kernels the constants are fitted on: the CUDA ladder (registry order) less the
    request-bound kernels (their bound, the L1 line rate, is not fitted). The Triton kernels and
    cuBLAS are then predicted: code another compiler wrote."""
    have = set(inp["kernel"])
    out = []
    for k in registry.cuda_ladder():
        c = k.counted
        if k.id not in have or (
            c is not None and c.req_per_fma is not None and c.req_per_fma > seed_model.REQUEST_BOUND_ABOVE
        ):
            continue
        out.append(k.id)
    return out


def fit_shape(inp: pd.DataFrame, kernels: list[str] | None = None) -> tuple[int, int, int] | None:
    """The shape the constants are fitted at: the one holding most of ``kernels`` (default
    ``fit_kernels``), the largest on a tie. Every other shape is predicted."""
    kids = kernels if kernels is not None else fit_kernels(inp)
    sub = inp[inp["kernel"].isin(kids)]
    if sub.empty:
        return None
    n = sub.groupby(["M", "N", "K"])["kernel"].nunique()
    best = max(n.index, key=lambda s: (n[s], s[0] * s[1] * s[2]))
    return tuple(int(v) for v in best)


def at_shape(inp: pd.DataFrame, shape: tuple[int, int, int] | None) -> pd.DataFrame:
    if shape is None:
        return inp.iloc[0:0]
    return inp[(inp["M"] == shape[0]) & (inp["N"] == shape[1]) & (inp["K"] == shape[2])]


# Each resource's total is linear in L_glob: bound + slope x L_glob, the slope the latency per
# cycle of L_glob where the resource does not overlap it. The shared-memory pipe has two pieces:
# all blocks' wavefronts (slope 0) and one block's wavefronts plus the wait.
_FIT_ITERATIONS = 50


def fit(inp: pd.DataFrame, m: Machine, kernels: list[str] | None = None) -> Constants:
    """eta_issue, eta_smem on a grid (ETA_GRID); L_glob for each pair by least squares: minimises
    the squared relative errors over ``kernels`` (default ``fit_kernels``) at ``fit_shape``.

    For fixed etas each prediction is the largest of pieces linear in L_glob (``totals``); L_glob
    is solved in closed form with each kernel's binding piece, the pieces re-chosen at the new
    L_glob, until they no longer change (clipped at 0)."""
    kids = kernels if kernels is not None else fit_kernels(inp)
    shape = fit_shape(inp, kids)
    sub = at_shape(inp[inp["kernel"].isin(kids)], shape)
    if len(sub) < 3:
        raise ValueError(f"the bound model needs at least 3 kernels to fit 3 constants; got {len(sub)}")
    y = sub["measured_cadence"].to_numpy(float)
    tail = sub["tail"].to_numpy(float)
    ei, es = np.meshgrid(ETA_GRID, ETA_GRID, indexing="ij")  # (G, G)
    full = (*ei.shape, len(sub))
    col = lambda name: sub[name].to_numpy(float)[None, None, :]  # noqa: E731
    prod = sub["producer_waits"].to_numpy(float) if "producer_waits" in sub.columns else np.zeros(len(sub))
    n_waits = np.array([waits(e, r, q) for e, r, q in zip(sub["exposed"].to_numpy(bool),
                                                           sub["spill_reloads"].to_numpy(float), prod)])
    per_l = np.where(
        n_waits > 0,
        n_waits / (sub["wfma_per_trip"].to_numpy(float) * sub["warps"].to_numpy(float)),
        0.0,
    )
    per_l = np.nan_to_num(per_l)[None, None, :]
    bps = sub["blocks_per_sm"].to_numpy(float) if "blocks_per_sm" in sub.columns else np.ones(len(sub))
    bps = np.where(np.isfinite(bps) & (bps >= 1), bps, 1.0)[None, None, :]
    b_smem = col("wavefronts_per_wfma") / es[..., None]
    zero = np.zeros(full)
    # (piece bounds, piece slopes): fma, issue, l1 + latency; smem all blocks; smem one block + latency; dram
    bases = np.stack(
        np.broadcast_arrays(
            col("fma_inst_per_wfma") * m.fma_floor,
            col("inst_per_wfma") / (SCHEDULERS * ei[..., None]),
            col("lines_per_wfma") * T_LINE,
            b_smem,
            b_smem / bps,
            col("dram_bytes_per_wfma") / m.dram_bytes_per_cycle_sm,
        )
    )  # (6, G, G, n)
    bases = np.where(np.isfinite(bases), bases, -np.inf)
    slopes = np.stack(np.broadcast_arrays(per_l, per_l, per_l, zero, per_l, zero))
    n_pieces = bases.shape[0]
    flat_b = bases.reshape(n_pieces, -1, len(sub))  # (6, P, n)
    flat_s = slopes.reshape(n_pieces, -1, len(sub))
    lg = np.zeros(flat_b.shape[1])
    todo = np.arange(flat_b.shape[1])  # the eta pairs whose binding pieces still move
    for _ in range(_FIT_ITERATIONS):
        bs_, ss_ = flat_b[:, todo], flat_s[:, todo]
        j = np.argmax(bs_ + ss_ * lg[todo][None, :, None], axis=0)[None]
        base = np.take_along_axis(bs_, j, 0)[0]
        slope = np.take_along_axis(ss_, j, 0)[0]
        a = base * tail / y - 1  # residual at L = 0 on the binding pieces
        b = slope * tail / y  # d residual / d L
        bb = (b * b).sum(-1)
        new = np.where(bb > 0, np.clip(-(a * b).sum(-1) / np.where(bb > 0, bb, 1), 0, None), 0.0)
        moved = np.abs(new - lg[todo]) > 1e-9
        lg[todo] = new
        todo = todo[moved]
        if not len(todo):
            break
    lg = lg.reshape(ei.shape)
    pred = (bases + slopes * lg[None, ..., None]).max(0) * tail
    sse = ((pred / y - 1) ** 2).sum(-1)
    i, j = np.unravel_index(int(np.argmin(sse)), sse.shape)
    return Constants(float(ETA_GRID[i]), float(ETA_GRID[j]), float(lg[i, j]), tuple(kids), shape)


def leave_one_out(inp: pd.DataFrame, m: Machine, kernels: list[str] | None = None) -> pd.DataFrame:
    """For each fitted kernel: the constants refitted without it, then used to predict it (at the
    fit shape)."""
    kids = kernels if kernels is not None else fit_kernels(inp)
    shape = fit_shape(inp, kids)
    rows = []
    for kid in kids:
        c = fit(inp, m, [k for k in kids if k != kid])
        p = predict(at_shape(inp[inp["kernel"] == kid], shape), c, m).iloc[0]
        rows.append(
            {
                "method": METHOD,
                "kernel": kid,
                "measured_cadence": p["measured_cadence"],
                "predicted_cadence": p["predicted_cadence"],
                "error_pct": p["error_pct"],
                "model_error_pct": p["error_pct"],
                "bound": p["bound"],
                "eta_issue": c.eta_issue,
                "eta_smem": c.eta_smem,
                "l_glob": c.l_glob,
            }
        )
    return pd.DataFrame(rows)
