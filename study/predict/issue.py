"""Issue efficiency from the SASS: the main loop's instruction stream played on one SM's four
schedulers for the warps that reside there.

The rule is the same for every kernel, read from the SASS alone. Each warp runs the loop body in
order. An instruction issues when

* its warp's previous instruction's **stall count** has elapsed (ptxas's cover for fixed
  latencies: the hardware does not track them),
* the **scoreboards** in its wait mask are clear (``DEPBAR.LE SBn, k``: down to k), each set by
  a variable-latency instruction and cleared when its result is written (or its sources read),
* its **pipe** is free on its scheduler (FP32 / integer / the SM's shared-memory unit),
* for an access that holds the L1 / shared-memory unit, its scheduler's **queue** for the unit has
  room: shared accesses wait in one (``mio_queue`` deep, ``mio_throttle`` while full), global
  ones whose lines are known in another (``lg_queue``, ``lg_throttle``), as ncu tells the two apart,
* its block is not held at a **barrier** that some of its warps have not reached,
* its line of code is in its scheduler's **instruction cache** (where the constants model one:
  ``icache_lines`` > 0): set-associative, least recently used line evicted first; a miss brings
  the line ``icache_refill`` cycles later, and each line a warp reads has the ``icache_prefetch``
  lines after it requested where they are not there; until its line is in, the warp waits on
  ``no_instruction``. A loop whose lines fit the cache
  (no set holds more of them than its ways) stays resident after its first pass and is not
  played through the cache, and
* its scheduler is not still reading the registers of its last instruction: each read of a
  register bank beyond the first, not served by the reuse cache, holds the scheduler's dispatch a
  cycle (``study.toolchain.sass.bank_conflicts_each``, under the rule ``bank_rule`` with ``banks``
  banks; by default bank = register number mod ``banks``);

and each scheduler issues at most one instruction per cycle, from the ready warp that issued least
recently. Each warp's state in each cycle
is counted, by the names ncu uses: ``selected``, ``not_selected``, ``wait``,
``short_scoreboard``, ``long_scoreboard``, ``barrier``, ``mio_throttle``, ``lg_throttle``,
``math_pipe_throttle``, ``dispatch_stall``, ``no_instruction``.

Latencies and throughputs are :class:`Constants`, one set per GPU, fitted and stated where they
are declared. What this returns is the loop's steady state: cycles per iteration of the slowest
block and the share of scheduler cycles that issued.
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from study.toolchain.l1 import Repeated, Reread
from study.toolchain.sass import Instr, bank_conflicts_each

# instruction classes, by base opcode
SHARED = {"LDS", "LDSM", "STS", "STSM", "ATOMS"}
GLOBAL = {"LDG", "LDGSTS", "UTMALDG", "LDL"}
STORE = {"STG", "STL", "RED", "ATOMG", "UTMASTG"}
FMA_PIPE = {"FFMA", "FMUL", "FADD", "FMNMX", "FSEL", "FSETP", "IMAD", "HFMA2", "HADD2", "HMUL2", "FCHK"}
ALU_PIPE = {"IADD3", "LOP3", "ISETP", "LEA", "SHF", "SEL", "IMNMX", "PRMT", "IABS", "POPC", "FLO", "MOV",
            "SHFL", "VOTE", "PLOP3", "P2R", "R2P", "BMSK", "BREV", "IDP", "I2F", "F2I", "F2F", "I2FP", "F2IP"}


@dataclass(frozen=True)
class Constants:
    """Latencies (cycles) and throughputs of one GPU that the SASS does not state."""

    lds_latency: int = 30  # a shared load's result, after its wavefronts have been served
    ldg_latency: int = 600  # a global load's (or an async copy's) data in place
    # a load the SM's L1 serves: a spill reload (LDL: local memory a block re-reads stays there), or
    # a global load of sectors an earlier load of its pass brought in (study.toolchain.l1.Reread)
    ldl_latency: int = 40
    # a global load of sectors an earlier load of its pass brought into the L2 (study.toolchain.l1):
    # one thread's pointer chase through a buffer the L2 holds and the L1 does not (docs/notes)
    l2_latency: int = 400
    # what each copy of the same words adds to a copy past the L1 whose lanes repeat a word, the
    # L2 serving such copies one at a time (study.toolchain.l1.Repeated): a probe of copies of
    # one row by every warp and block (docs/notes/predict.md)
    repeat_cycles: float = 2.0
    other_latency: int = 20  # other variable-latency results (S2R, LDC, ...)
    mbar_latency: int = 20  # an mbarrier test's answer (SYNCS: whether a stage's phase is complete)
    read_latency: int = 4  # a read scoreboard: the sources of a store or copy have been read
    barrier_latency: int = 20  # from the last warp's arrival to the release of BAR.SYNC
    smem_wavefronts_per_cycle: float = 1.0  # the SM's shared-memory unit (128 B per cycle)
    fma_cycles: int = 1  # cycles one warp instruction holds its scheduler's FP32 pipe
    alu_cycles: int = 2  # the same for the integer / logic pipe
    mio_queue: int = 8  # shared-memory accesses a scheduler may have waiting for the unit (MIO)
    lg_queue: int = 8  # global accesses that hold the unit, likewise, in their own queue (LG)
    banks: int = 4  # register banks: a register's (or its pair's, by bank_rule) bank is its number mod this
    bank_cycles: int = 1  # dispatch cycles each extra read of one bank costs (sass.bank_conflicts_each)
    bank_rule: str = "mod-extra"  # which reads conflict (sass.BANK_RULES; sass.bank_conflicts_each)
    icache_lines: int = 0  # 128-byte lines each scheduler's instruction cache holds (0: not modelled)
    icache_ways: int = 4  # its associativity: a line's set is its address / 128 mod (lines / ways)
    icache_refill: int = 40  # cycles from a miss to the line in place, from the SM's next level
    icache_prefetch: int = 2  # lines after the one a warp reads that are requested (sequential prefetch)
    # a launch as CUDA events time it, where the loop's cycles do not reach: a fixed cost, and the
    # rate at which DRAM streams the operands (0: none, and the run's measured read roof)
    launch_us: float = 0.0
    stream_gbps: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


DEFAULT = Constants()  # the anchors, fitted on no GPU: of the order published for Hopper

# One set per GPU, by its name as its gpu.json gives it, fitted by ``python -m study.predict --fit
# DIR`` (study.predict.fit: the fields searched, the kernels fitted on and the objective):
# NVIDIA H200: ``python -m study.predict --fit reports``, on the committed run of 6bde200c0500 (the
# commit column of reports/data/results.csv), with the Triton that run timed (its SASS); how each
# refit moved which field, and the near ties, are in docs/notes/predict.md.
# The instruction cache's size, 256 lines (32 KB), lies between the loop sizes where ncu's fetch
# stalls in the run of df8367b86b66 are negligible and where they are not; its ways, refill and
# prefetch are the best of an exploratory grid over the larger loops; the counts and the grid are
# in docs/notes/predict.md. The cache played and the mbarrier test's latency are the values every
# fit that searched them chose (fit.FIXED).
# The register banks' rule is the grid's choice between the anchors' and the one whose counts
# follow the H200's bank probe best (study.bank_probe; the correlations are in the notes).
# The launch's fixed cost and the stream's rate are fitted on the vendor's GEMV (study.predict.fit
# .stream_fit), on the decode panel of the committed run of 6bde200c0500.
FITTED: dict[str, Constants] = {
    "NVIDIA H200": Constants(ldg_latency=800, mio_queue=8, lg_queue=8, barrier_latency=60, banks=2,
                             bank_rule="pair-extra-ab", icache_lines=256, mbar_latency=500, launch_us=8.2,
                             stream_gbps=4429.0),
}
LINE = 128  # bytes of an instruction-cache line


def constants_for(gpu_name: str | None) -> Constants:
    """The set fitted for the GPU named ``gpu_name``, else the anchors (:data:`DEFAULT`)."""
    return FITTED.get(str(gpu_name or "").strip(), DEFAULT)


def fitted(c: Constants, gpu_name: str | None) -> bool:
    """Whether ``c`` is the set fitted for the GPU named ``gpu_name``."""
    return FITTED.get(str(gpu_name or "").strip()) == c


def wavefronts(ins: Instr) -> int:
    """Shared-memory cycles of one warp's access by its width alone, where its lanes' addresses
    are not known: its bytes over the 128 bytes per cycle the unit serves (a 128-bit load by 32
    lanes, 512 bytes, is 4), every lane's address taken as distinct."""
    return max(1, ins.width // 32)


_DEPBAR = re.compile(r"SB(\d)\s*,\s*(0x[0-9a-fA-F]+|\d+)")


@dataclass
class _Warp:
    block: int
    scheduler: int
    pc: int = 0
    iteration: int = 0
    ready_at: int = 0  # the stall count's end
    boards: list = field(default_factory=lambda: [[] for _ in range(6)])  # release times per scoreboard
    at_barrier: tuple | bool = False  # the barrier (block, iteration, pc) it waits at
    waited_since: int = 0
    pending_copies: int = 0  # the latest async copy's completion (for LDGDEPBAR)
    global_boards: set = field(default_factory=set)  # scoreboards last set by a global access
    loaded: dict = field(default_factory=dict)  # a global load's address -> its data's latest arrival
    code: object = None  # the _Code it plays


@dataclass(frozen=True)
class LoopResult:
    cycles_per_iteration: float
    issue_pct: float  # share of scheduler cycles that issued an instruction, in the steady state
    instructions_per_iteration: int  # per warp
    warps: int
    stalls: dict  # reason -> share of the non-issuing scheduler cycles
    pipe_busy: dict  # pipe -> share of cycles busy (fma, alu per scheduler; shared for the SM)


def overflows(line_of: Sequence[int], sets: int, ways: int) -> bool:
    """Whether some set of a cache of ``sets`` sets of ``ways`` lines is asked to hold more of the
    loop's lines (``line_of``: each instruction's) than its ways: where none is, the loop's code
    stays resident once fetched."""
    per_set = Counter(line % sets for line in set(line_of))
    return any(n > ways for n in per_set.values())


def _kind(ins: Instr) -> str:
    b = ins.base
    if ins.pred == "@!PT":
        return "none"  # never executes: an issue slot only
    if b in SHARED:
        return "shared"
    if b in GLOBAL:
        return "global"
    if b in STORE:
        return "store"
    if b == "BAR":
        return "barrier"
    if b == "DEPBAR":
        return "depbar"
    if b == "LDGDEPBAR":
        return "copy_group"
    if b in FMA_PIPE:
        return "fma"
    if b in ALU_PIPE:
        return "alu"
    return "other"


def simulate(body: Sequence[Instr], warps_per_block: int, blocks: int, c: Constants = DEFAULT,
             iterations: int = 4, schedulers: int = 4,
             l1_cycles: Sequence[float | None] | None = None, sharers: int = 1,
             paths: Sequence[tuple[Sequence[Instr], Sequence]] | None = None) -> LoopResult:
    """Play ``iterations`` passes of the loop ``body`` (its last instruction the back edge) for
    ``blocks`` resident blocks of ``warps_per_block`` warps; the steady state is read over the
    second half of the passes (from the cycle every warp has finished half of them).
    ``l1_cycles`` gives, per instruction of ``body``, the cycles its access holds the SM's L1 /
    shared-memory unit where its lanes' addresses are known (:mod:`study.toolchain.l1`: a shared
    access's wavefronts, a global load's lines); elsewhere (None) a shared access is priced by its
    width (:func:`wavefronts`) and a global one holds no unit time. A global load given as a
    :class:`study.toolchain.l1.Reread` has its data ``ldl_latency`` after it is served
    (``l2_latency`` where the L2 holds it), or when the earlier load it rereads has its own,
    whichever is later; any other, ``ldg_latency``, and a copy given as a
    :class:`study.toolchain.l1.Repeated` ``repeat_cycles`` later for each copy of its words that
    the L2 serves in the pass: its ``copies`` in each warp of the block, in each of ``sharers``
    blocks of the GPU where every block copies them. ``paths``: where a block's warps run
    different passes (:mod:`study.toolchain.paths`), each warp's (body, l1_cycles), played in place
    of ``body``; the n-th barrier of one warp's pass meets the n-th of the others'."""
    if not body or any(i.control is None for i in body):
        raise ValueError("the loop body needs every instruction's scheduling word (sm_70 and later)")
    if warps_per_block < 1 or blocks < 1 or iterations < 2:
        raise ValueError("needs at least one warp, one block and two iterations")
    sim = _Sim(body, warps_per_block, blocks, c, schedulers, l1_cycles, sharers, paths)
    half = iterations // 2
    finished_at: dict[int, int] = {}
    t = 0
    longest = max(len(w.code.body) for w in sim.warps)
    limit = 64 * (1 + max(c.ldg_latency, c.lds_latency)) * longest * iterations * len(sim.warps)
    while len(finished_at) < iterations:
        if t > limit:
            raise RuntimeError("the loop made no progress: a wait that nothing in it clears")
        counting = half in finished_at
        for s in range(schedulers):
            sim.cycle(s, t, counting)
        for i in range(1, iterations + 1):
            if i not in finished_at and all(w.iteration >= i for w in sim.warps):
                finished_at[i] = t + 1
        t += 1
        if all(w.iteration >= iterations for w in sim.warps):
            break
    span = finished_at[iterations] - finished_at[half]
    slots = span * schedulers
    states = sum(sim.states.values()) or 1
    return LoopResult(
        cycles_per_iteration=span / (iterations - half),
        issue_pct=100.0 * sim.issued / slots if slots else 0.0,
        instructions_per_iteration=longest,
        warps=len(sim.warps),
        stalls={k: v / states for k, v in sim.states.most_common() if k != "selected"},
        pipe_busy={"fma": sim.busy["fma"] / slots if slots else 0.0,
                   "alu": sim.busy["alu"] / slots if slots else 0.0,
                   "shared": sim.busy["shared"] / span if span else 0.0},
    )


class _Code:
    """What the simulation reads of one instruction stream, per instruction: its kind, the cycles
    it holds the L1 / shared-memory unit, its DEPBAR's operands, its bank conflicts, its line of
    code, and for a BAR its rank among the stream's barriers."""

    def __init__(self, body, c: Constants, l1_cycles=None):
        self.body = body
        self.kinds = [_kind(i) for i in body]
        given = list(l1_cycles) if l1_cycles is not None else [None] * len(body)
        if len(given) != len(body):
            raise ValueError("l1_cycles needs one entry per instruction of the loop")
        self.unit = [g if g is not None else (wavefronts(i) if k == "shared" else 0)
                     for g, i, k in zip(given, body, self.kinds)]
        self.depbar = [(_DEPBAR.search(i.operands) if k == "depbar" else None)
                       for i, k in zip(body, self.kinds)]
        self.conflicts = bank_conflicts_each(body, c.banks, c.bank_rule)
        self.line_of = [i.addr // LINE for i in body]
        self.barrier, seen = [], 0
        for k in self.kinds:
            self.barrier.append(seen)
            seen += k == "barrier"


class _Sim:
    """The state of one SM while it plays the loop: warps, pipes, the shared-memory unit."""

    def __init__(self, body, warps_per_block, blocks, c: Constants, schedulers, l1_cycles=None, sharers=1,
                 paths=None):
        self.c, self.warps_per_block = c, warps_per_block
        self.sharers = sharers
        # each warp's code: its own pass where ``paths`` gives one per warp, else the one loop
        if paths:
            codes = [_Code(b, c, cy) for b, cy in paths]
        else:
            codes = [_Code(body, c, l1_cycles)] * warps_per_block
        if len(codes) != warps_per_block:
            raise ValueError("paths needs one (body, l1_cycles) per warp of a block")
        self.warps = [_Warp(block=b, scheduler=(b * warps_per_block + w) % schedulers, code=codes[w])
                      for b in range(blocks) for w in range(warps_per_block)]
        self.by_sched = [[w for w in self.warps if w.scheduler == s] for s in range(schedulers)]
        self.dispatch_free = [0] * schedulers  # a scheduler reading banked registers issues nothing
        self.fma_free = [0] * schedulers
        self.alu_free = [0] * schedulers
        self.mio_waiting: list[list[float]] = [[] for _ in range(schedulers)]  # shared accesses
        self.lg_waiting: list[list[float]] = [[] for _ in range(schedulers)]  # global (its own queue)
        self.smem_free = 0.0
        self.arrived: Counter = Counter()
        self.released: dict = {}  # (block, iteration, rank) of a barrier -> its release cycle
        self.issued = 0
        self.states: Counter = Counter()  # per warp and cycle, counted in the steady state
        self.busy: Counter = Counter()
        self.sets = max(1, c.icache_lines // max(1, c.icache_ways))
        line_of = [x for code in {id(k): k for k in codes}.values() for x in code.line_of]
        self.fetching = c.icache_lines > 0 and overflows(line_of, self.sets, c.icache_ways)
        self.lines = set(line_of)
        self.icache = [[OrderedDict() for _ in range(self.sets)] for _ in range(schedulers)]

    def line(self, s: int, line: int, t: int) -> int:
        """The cycle ``line`` is in scheduler ``s``'s instruction cache, fetching it at ``t`` (its
        set's least recently used line evicted) where it is not."""
        held = self.icache[s][line % self.sets]
        if line not in held:
            if len(held) >= self.c.icache_ways:
                held.popitem(last=False)
            held[line] = t + self.c.icache_refill
        return held[line]

    def fetched(self, s: int, w: _Warp, t: int) -> int:
        """The cycle ``w``'s next instruction's line is in place for scheduler ``s``; the lines
        after it that are not are requested at ``t`` too."""
        line = w.code.line_of[w.pc]
        ready = self.line(s, line, t)
        for ahead in range(1, self.c.icache_prefetch + 1):
            if line + ahead in self.lines:
                self.line(s, line + ahead, t)
        return ready

    def state(self, w: _Warp, s: int, t: int) -> str | None:
        """Why ``w`` cannot issue its next instruction at cycle ``t`` (None: it can)."""
        if w.at_barrier:
            if self.released.get(w.at_barrier, 1 << 60) > t:
                return "barrier"
            w.at_barrier = False
        if self.fetching and self.fetched(s, w, t) > t:
            return "no_instruction"
        if w.ready_at > t:
            return "wait"
        code = w.code
        ins, kind = code.body[w.pc], code.kinds[w.pc]
        for sb in ins.control.wait:
            if any(r > t for r in w.boards[sb]):
                return "long_scoreboard" if sb in w.global_boards else "short_scoreboard"
        d = code.depbar[w.pc]
        if d and sum(1 for r in w.boards[int(d[1])] if r > t) > int(d[2], 0):
            return "long_scoreboard"
        if (kind == "fma" and self.fma_free[s] > t) or (kind == "alu" and self.alu_free[s] > t):
            return "math_pipe_throttle"
        if kind == "shared" and len(self.mio_waiting[s]) >= self.c.mio_queue:
            return "mio_throttle"
        if kind == "global" and code.unit[w.pc] and len(self.lg_waiting[s]) >= self.c.lg_queue:
            return "lg_throttle"
        return None

    def cycle(self, s: int, t: int, counting: bool) -> None:
        self.mio_waiting[s] = [x for x in self.mio_waiting[s] if x > t]
        self.lg_waiting[s] = [x for x in self.lg_waiting[s] if x > t]
        live = self.by_sched[s]
        states = {id(w): self.state(w, s, t) for w in live}
        ready = [w for w in live if states[id(w)] is None]
        if ready and self.dispatch_free[s] > t:
            for w in ready:
                states[id(w)] = "dispatch_stall"
            ready = []
        chosen = None
        if ready:  # the ready warp that issued least recently
            chosen = min(ready, key=lambda w: w.waited_since)
            self.issue(chosen, s, t, counting)
        if counting:
            for w in live:
                st = states[id(w)]
                self.states["selected" if w is chosen else (st or "not_selected")] += 1

    def hold_unit(self, code: _Code, pc: int, s: int, t: int, counting: bool) -> float:
        """The SM's L1 / shared-memory unit takes the access of instruction ``pc`` of ``code`` as
        soon as it is free: busy for its cycles; the access waits in its scheduler's queue
        meanwhile. Returns the cycle the unit has served it."""
        served = code.unit[pc] / self.c.smem_wavefronts_per_cycle
        start = max(float(t), self.smem_free)
        self.smem_free = start + served
        self.busy["shared"] += served if counting else 0
        (self.mio_waiting if code.kinds[pc] == "shared" else self.lg_waiting)[s].append(start)
        return self.smem_free

    def issue(self, w: _Warp, s: int, t: int, counting: bool) -> None:
        c, code = self.c, w.code
        ins, kind = code.body[w.pc], code.kinds[w.pc]
        ctl = ins.control
        if self.fetching:  # the line just read is the set's most recently used
            line = code.line_of[w.pc]
            held = self.icache[s][line % self.sets]
            if line in held:
                held.move_to_end(line)
        result_at = None
        if kind == "fma":
            self.fma_free[s] = t + c.fma_cycles
            self.busy["fma"] += c.fma_cycles if counting else 0
        elif kind == "alu":
            self.alu_free[s] = t + c.alu_cycles
            self.busy["alu"] += c.alu_cycles if counting else 0
        elif kind == "shared":
            result_at = self.hold_unit(code, w.pc, s, t, counting) + c.lds_latency
        elif kind == "global":
            # its lines pass the unit's tag stage first, then the memory answers; a reread, the L1
            start = self.hold_unit(code, w.pc, s, t, counting) if code.unit[w.pc] else t
            again = code.unit[w.pc] if isinstance(code.unit[w.pc], Reread) else None
            if again is not None:
                hit = c.l2_latency if again.l2 else c.ldl_latency
                result_at = max(start + hit, w.loaded.get(again.after, 0))
            else:
                result_at = start + (c.ldl_latency if ins.base == "LDL" else c.ldg_latency)
            hot = code.unit[w.pc]
            if isinstance(hot, Repeated):
                queued = hot.copies * self.warps_per_block * (self.sharers if hot.blocks else 1)
                result_at += round(c.repeat_cycles * queued)
            w.loaded[ins.addr] = result_at
            if ins.base == "LDGSTS":
                w.pending_copies = max(w.pending_copies, result_at)
        elif kind == "copy_group":
            result_at = max(t + 1, w.pending_copies)
        elif kind == "other":
            result_at = t + (c.mbar_latency if ins.base == "SYNCS" else c.other_latency)
        if ctl.write_sb is not None:
            sb = ctl.write_sb
            w.boards[sb] = [r for r in w.boards[sb] if r > t] + [result_at or t + c.other_latency]
            if kind in ("global", "copy_group"):
                w.global_boards.add(sb)
            else:
                w.global_boards.discard(sb)
        if ctl.read_sb is not None:
            w.boards[ctl.read_sb] = [r for r in w.boards[ctl.read_sb] if r > t] + [t + c.read_latency]
        if kind == "barrier":
            key = (w.block, w.iteration, code.barrier[w.pc])
            self.arrived[key] += 1
            w.at_barrier = key
            if self.arrived[key] == self.warps_per_block:
                self.released[key] = t + c.barrier_latency
        w.ready_at = t + max(1, ctl.stall)
        self.dispatch_free[s] = t + 1 + code.conflicts[w.pc] * c.bank_cycles
        w.waited_since = t
        self.issued += counting
        w.pc += 1
        if w.pc == len(code.body):
            w.pc = 0
            w.iteration += 1
