"""A kernel's time from its SASS and its launch: the main loop's steady state on one SM
(:func:`study.predict.issue.simulate`) times the loop's trip count, times the waves of blocks,
at the GPU's clock; DRAM as a floor.

* Residency: blocks per SM from the cubin's registers and shared memory, the threads per block
  and the arch table (:mod:`study.toolchain.occupancy`); of each block, the warps that own outputs
  and reach the main loop play it (:func:`with_loop_warps`), each its own pass where the warps'
  passes differ (:func:`played_loop`).
* Trip count: the passes the loop's own compare allows (``Launch.passes``, read from the SASS
  by :mod:`study.toolchain.trips` for the kernel's arguments), where it tells and the grid is not
  balanced; else the multiply-adds of the C the grid's tiles cover (a tile past the edge of C
  runs its whole loop) over the FFMAs one pass of the loop does for the whole grid (every block's
  threads that own outputs, each doing the loop's FFMAs). The two differ where a pass's FFMAs
  are not all distinct multiply-adds of C (a Triton kernel compiled for M = 1 merges the rows a
  thread owns into one) and by the passes peeled off the loop (code around the loop).
* Waves: the grid's blocks over the blocks the SMs hold at once, rounded up. The whole waves run
  at the loop's pace with the SMs full; a last wave that is not whole holds the blocks left,
  spread over the SMs, and runs as long as the SM with the most of them takes: the loop played
  again at that residency (fewer warps share the schedulers, so each block's loop runs faster
  where issue binds it). A balanced grid (SGEMM_BALANCED) is priced as one wave of as many
  blocks as the SMs hold, each running an even share of the trips: the ideal its cuts approach.
* DRAM floor: A, B and C moved once, at the rate the GPU's constants give for a stream
  (``stream_gbps``), else at the run's measured read bandwidth.
* Launch: the fixed cost of a launch as CUDA events time it (``launch_us``), added to the larger
  of the two: what the constants give, fitted on a stream where the loop's cycles say nothing.

What is not modelled yet is said with the result (``missing``): the code before and after the
loop, instruction-cache misses where the constants do not model the cache, the constants where
none are fitted for the GPU (the anchors stand in: :func:`study.predict.issue.constants_for`),
and for warp-specialised kernels the producer warps' own code (only the warps that own outputs
run the main loop, and only their code fills the instruction cache).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from study.predict import issue
from study.toolchain import l1, lanes, occupancy, paths, sass, trips, waterfall

MISSING = ("prologue and epilogue",)
NO_ICACHE = "instruction cache"
UNFITTED = "unfitted constants"


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    threads: int  # per block
    smem: int  # shared memory per block, static and dynamic, bytes
    registers: int  # per thread
    compute_threads: int | None = None  # threads that own outputs, where fewer than ``threads``
    # the warps of a block that reach the main loop, where fewer than own outputs (a bounds check
    # that ends the rows past M before the loop: with_loop_warps)
    loop_warps: int | None = None
    tile: tuple[int, int] | None = None  # rows and columns of C a block computes, where known
    # the blocks share the tiles' loop trips so that the SMs finish together (SGEMM_BALANCED):
    # priced as one wave of as many blocks as the SMs hold, each with an even share
    balanced: bool = False
    # the main loop's passes per block where its SASS tells them (study.toolchain.trips: the
    # loop's compare, played), else None and the trip count comes from the FFMAs
    passes: float | None = None
    # each warp's (loop, L1 cycles) where a block's warps run different passes of the loop
    # (played_loop), for the warps that run it; else None and every warp plays the one loop
    paths: tuple | None = None

    def padded(self, M: int, N: int) -> tuple[int, int]:
        """The rows and columns of C the grid's tiles cover (M, N where the tile is not known): a
        tile past the edge runs its whole loop."""
        if not self.tile:
            return M, N
        bm, bn = self.tile
        return math.ceil(M / bm) * bm, math.ceil(N / bn) * bn

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


def with_loop_warps(launch: Launch, instrs: list, body: list, params: dict[int, int] | None) -> Launch:
    """``launch`` with the warps of a block that reach the main loop ``body`` with a lane running
    at the kernel's arguments ``params`` (:func:`study.toolchain.lanes.warps_reaching`: a bounds
    check that ends a block's rows past M before the loop), where fewer than own outputs; and
    with each of those warps' pass of the loop where their passes differ (:func:`played_loop`)."""
    owners = -(-(launch.compute_threads or launch.threads) // 32)
    reaching = lanes.warps_reaching(instrs, body, params, -(-launch.threads // 32))
    if 0 < reaching < owners:
        launch = replace(launch, loop_warps=reaching)
    warps = launch.loop_warps or owners
    return replace(launch, paths=played_loop(instrs, params, warps)[3]) if warps > 1 else launch


def predict(body: list, launch: Launch, shape: tuple[int, int, int], gpu, arch: str = "sm_90",
            c: issue.Constants | None = None, l1_cycles: list | None = None,
            loops: dict | None = None) -> dict:
    """The prediction for one kernel at ``shape`` (M, N, K): its main loop's SASS ``body`` run
    with ``launch`` on ``gpu`` (a :class:`study.rundata.gpu.GPU`) under the constants ``c`` (by
    default those fitted for ``gpu``'s name, else the anchors); ``l1_cycles`` as
    :func:`main_loop_of` gives them. ``loops``: a dict in which the loop's steady state is kept
    for the next shape with the same loop, residency and constants (the loop does not depend on
    the shape)."""
    M, N, K = shape
    c = issue.constants_for(gpu.name) if c is None else c
    ffma = sum(1 for i in body if i.base == "FFMA")
    if not body or ffma == 0:
        raise ValueError("no main loop with FFMA in the SASS: nothing to predict from")
    occ = occupancy.occupancy_limits(launch.registers, launch.smem, launch.threads, arch)
    if occ["blocks"] < 1:
        raise ValueError(f"a block of {launch.threads} threads, {launch.registers} registers and "
                         f"{launch.smem} B of shared memory cannot reside on an SM of {arch}")
    blocks = occ["blocks"] * gpu.sms if launch.balanced else launch.blocks
    per_sm = min(occ["blocks"], max(1, math.ceil(blocks / gpu.sms)))
    owners = launch.compute_threads or launch.threads
    # the warps that run the main loop: a warp-specialised kernel's producer warps run other code,
    # and a block's warps that end before it run none
    warps = launch.loop_warps or -(-owners // 32)
    code = (tuple((i.addr, i.opcode, i.operands, i.words) for i in body), tuple(l1_cycles or ()))
    by_warp = tuple(tuple(i.addr for i in b) for b, _ in launch.paths) if launch.paths else None
    if launch.paths and len(launch.paths) != warps:
        raise ValueError(f"{len(launch.paths)} warps' passes given for {warps} warps of a block")
    # the blocks of the GPU that run a pass together and make the same copies (the row of the grid
    # along x, as far as the SMs hold it), where a copy is made alike by every block
    # (study.toolchain.l1.Repeated); else 1, so that the loop's steady state serves other shapes
    alike = any(isinstance(x, l1.Repeated) and x.blocks for x in l1_cycles or ())
    sharers = min(blocks if launch.balanced else launch.grid[0], occ["blocks"] * gpu.sms) if alike else 1

    def played(resident: int) -> issue.LoopResult:
        """The loop's steady state with ``resident`` blocks an SM, from ``loops`` where kept."""
        key = (*code, warps, resident, c, sharers, by_warp)
        loop = loops.get(key) if loops is not None else None
        if loop is None:
            loop = issue.simulate(body, warps, resident, c, l1_cycles=l1_cycles, sharers=sharers,
                                  paths=launch.paths)
            if loops is not None:
                loops[key] = loop
        return loop

    loop = played(per_sm)
    Mp, Np = launch.padded(M, N)
    counted = launch.passes is not None and not launch.balanced
    trips = launch.passes if counted else Mp * Np * K / (blocks * owners * ffma)
    waves = math.ceil(blocks / (occ["blocks"] * gpu.sms))
    hz = gpu.sm_clock_mhz * 1e6
    # the last wave: the blocks left over the whole waves, spread over the SMs; the SM holding
    # the most of them sets its time, and with fewer blocks resident their loop runs at its own pace
    whole, left = divmod(blocks, occ["blocks"] * gpu.sms)
    last_per_sm = math.ceil(left / gpu.sms) if whole and left else per_sm
    last_cycles = (loop if last_per_sm == per_sm else played(last_per_sm)).cycles_per_iteration
    compute_s = trips * ((waves - 1) * loop.cycles_per_iteration + last_cycles) / hz
    dram_s = 4 * (M * K + K * N + M * N) / ((c.stream_gbps or gpu.read_gbps or gpu.dram_gbps()) * 1e9)
    seconds = c.launch_us * 1e-6 + max(compute_s, dram_s)
    bound = "dram" if dram_s >= compute_s else _bound(loop)
    return {
        "ms": seconds * 1e3,
        "gflops": 2 * M * N * K / seconds / 1e9,
        "issue_pct": loop.issue_pct,
        "bound": bound,
        "stalls": dict([kv for kv in loop.stalls.items() if kv[0] != "not_selected"][:3]),
        "cycles_per_iteration": loop.cycles_per_iteration,
        "trips": trips,
        "trips_from": "loop compare" if counted else "FFMAs",
        "waves": waves,
        "last_wave_blocks_per_sm": last_per_sm,
        "last_wave_cycles_per_iteration": last_cycles,
        "grid": [blocks, 1, 1] if launch.balanced else list(launch.grid),
        "threads": launch.threads,
        "registers": launch.registers,
        "smem": launch.smem,
        "blocks_per_sm": per_sm,
        "warps_per_sm": per_sm * occ["warps_per_block"],
        "loop_warps_per_sm": per_sm * warps,
        "loop_instructions": len(body),
        "loop_ffma": ffma,
        "dram_ms": dram_s * 1e3,
        "compute_ms": compute_s * 1e3,
        "launch_ms": c.launch_us * 1e-3,
        "missing": missing(body, l1_cycles, issue.fitted(c, gpu.name), c.icache_lines > 0),
    }


def missing(body: list, l1_cycles: list | None, fitted: bool = False, icache: bool = False) -> list[str]:
    """What this prediction leaves out: always :data:`MISSING`; the instruction cache unless the
    constants model it (``icache``); :data:`UNFITTED` unless the constants are those ``fitted``
    for the GPU; where the loop has tensor copies or mbarriers, when the copies land and which
    warps wait for them (a test of an mbarrier costs ``mbar_latency``, one fitted constant); the
    shared accesses whose lanes' addresses the SASS did not give (priced by width)."""
    out = list(MISSING) + ([] if icache else [NO_ICACHE]) + ([] if fitted else [UNFITTED])
    if any(i.base in ("SYNCS", "UTMALDG", "UBLKCP") for i in body):
        out.append("when tensor copies land and which warps wait for them "
                   "(an mbarrier test is one fitted latency)")
    known = l1_cycles or [None] * len(body)
    unknown = sum(1 for i, c in zip(body, known)
                  if i.base in lanes.SHARED_ACCESS and i.pred != "@!PT" and c is None)
    if unknown:
        out.append(f"lane addresses of {unknown} shared accesses (priced by width)")
    return out


# what a warp waiting in each state waits for
RESOURCE = {"mio_throttle": "L1 / shared memory", "short_scoreboard": "shared-memory latency",
            "long_scoreboard": "global-memory latency", "math_pipe_throttle": "math pipe",
            "lg_throttle": "L1 / shared memory",
            "barrier": "barrier", "wait": "fixed latency (stall counts)",
            "dispatch_stall": "register banks", "no_instruction": "instruction fetch"}


def _bound(loop: issue.LoopResult) -> str:
    """The resource that sets the loop's pace: a pipe or unit busy on nearly every cycle, else
    issue when the schedulers issue on nearly every cycle, else what the leading stall waits for."""
    if loop.pipe_busy.get("shared", 0) >= 0.9:
        return "L1 / shared memory"
    if loop.pipe_busy.get("fma", 0) >= 0.9:
        return "fp32 pipe"
    if loop.issue_pct >= 90:
        return "issue"
    lead = next((k for k in loop.stalls if k in RESOURCE), None)
    return RESOURCE[lead] if lead else "issue"


NEST_MAX = 16  # the most passes per entry of an inner loop played inside the loop around it
AROUND = issue.SHARED | issue.GLOBAL | {"BAR"}  # what the loop around must hold to be played


def played_loop(instrs: list, params: dict[int, int] | None = None,
                warps: int = 1) -> tuple[list, list, float | None, tuple | None]:
    """(the loop the simulation plays, the cycles each of its instructions holds the L1 / shared-
    memory unit as :func:`main_loop_of` gives them, the passes one block runs of it: None where
    the SASS does not tell, each of the block's first ``warps`` warps' (loop, cycles) where their
    passes differ: else None). That is the main loop (:func:`study.toolchain.sass.main_loop`),
    except where the compiler left a short loop over a tile's k rolled inside the loop over tiles:
    when the main loop runs at most :data:`NEST_MAX` passes per entry (its compare, played for the
    kernel's arguments ``params``: :mod:`study.toolchain.trips`) and the shortest loop around it
    holds the tile's copies or barriers (:data:`AROUND`), the loop around is played. Each warp's
    pass is its own walk through the loop (:mod:`study.toolchain.paths`: the branches it is known
    to take followed, its inner loops written out as many times as they run); where a walk is not
    known, the loop's instructions in address order, the main loop written out in the loop around
    as many times as it runs. A waterfall loop inside (:mod:`study.toolchain.waterfall`) is
    written out as many times as it turns. Warps whose passes hold different numbers of barriers
    (which meet by their rank) all play warp 0's."""
    body = sass.main_loop(instrs)
    passes = trips.loop_trips(instrs, body, params) if body else None
    region, flat = body, body
    outer = _around(instrs, body)
    if outer and passes is not None and float(passes).is_integer() and 2 <= passes <= NEST_MAX:
        i0 = outer.index(body[0])
        i1 = i0 + len(body)
        if any(i.base in AROUND for i in outer[:i0] + outer[i1:]):
            region, flat = outer, outer[:i0] + body * int(passes) + outer[i1:]
            passes = trips.loop_trips(instrs, outer, params)
    if not region:
        return [], [], passes, None
    cycles = dict(zip((i.addr for i in region), l1.l1_cycles(instrs, region, params)))
    turns = waterfall.turns(instrs, region, params)
    walks = paths.passes_of(instrs, region, params, warps, NEST_MAX) or [flat]
    each = [waterfall.expand(w, [cycles[i.addr] for i in w], turns) for w in walks]
    differ = any([i.addr for i in b] != [i.addr for i in each[0][0]] for b, _ in each[1:])
    # the warps' barriers meet by their rank in the pass: passes that hold different numbers of
    # them are not played apart (every warp plays warp 0's)
    differ = differ and len({sum(i.base == "BAR" for i in b) for b, _ in each}) == 1
    return (*each[0], passes, tuple((tuple(b), tuple(c)) for b, c in each) if differ else None)


def _around(instrs: list, body: list) -> list:
    """The shortest loop of ``instrs`` that holds the loop ``body`` and more ([] where none does)."""
    if not body:
        return []
    at = {ins.addr: i for i, ins in enumerate(instrs)}
    s, e = at[body[0].addr], at[body[-1].addr]
    holding = [(s2, e2) for s2, e2 in sass.find_loops(instrs) if s2 <= s and e <= e2 and (s2, e2) != (s, e)]
    if not holding:
        return []
    s2, e2 = min(holding, key=lambda se: se[1] - se[0])
    return list(instrs[s2 : e2 + 1])


def main_loop_of(instrs: list, params: dict[int, int] | None = None) -> tuple[list, list]:
    """(the main loop of a kernel's SASS ``instrs``, the cycles each of its instructions holds
    the L1 / shared-memory unit where its lanes' addresses are known from the SASS, else None);
    ``params``: the kernel's arguments by offset (:func:`sgemm_params`), without which global
    addresses are not known."""
    body = sass.main_loop(instrs)
    return body, l1.l1_cycles(instrs, body, params)


def cubin_params(arguments) -> dict[int, int]:
    """Arguments (("*fp32", None) for a pointer, ("i32" or "i64", value) for an integer, ("f32",
    None) for a float, whose value no address takes, in the kernel's order) by their offset in
    constant bank 0 on sm_70 and later: from 0x210, each at its natural alignment; each pointer an
    aligned address of its own (its low word)."""
    out, at, pointers = {}, 0x210, 0
    for kind, value in arguments:
        size = 8 if kind.startswith("*") or kind == "i64" else 4
        at = -(-at // size) * size
        if kind.startswith("*"):
            pointers += 1
            out[at], out[at + 4] = 0x10000000 * (4 * pointers - 3), 0
        else:
            out[at] = int(value or 0) & 0xFFFFFFFF
            if size == 8:
                out[at + 4] = (int(value) >> 32) & 0xFFFFFFFF
        at += size
    return out


def sgemm_params(shape: tuple[int, int, int], splits: int | None = None) -> dict[int, int]:
    """A registered CUDA kernel's arguments at ``shape`` by their offset in constant bank 0: the
    sizes, and the matrices at aligned addresses of their own (low words; the high words 0); with
    ``splits``, a kernel whose launch splits K, which takes the split count, the workspace and
    the tickets after them."""
    M, N, K = shape
    # SGEMM_KERNEL_PARAMS (cuda_kernels/common.cuh): M, N, K, alpha, A, B, beta, C
    args = [("i32", M), ("i32", N), ("i32", K), ("f32", None), ("*fp32", None), ("*fp32", None),
            ("f32", None), ("*fp32", None)]
    # SGEMM_SPLIT_K_PARAMS: then splits, ws, tickets
    return cubin_params(args + ([("i32", splits), ("*fp32", None), ("*u32", None)] if splits else []))
