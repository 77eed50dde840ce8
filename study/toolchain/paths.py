"""The instructions each warp of a block runs in one pass of a loop, in the order it runs them.

A loop's SASS lists every branch of its body once, in address order. Warps that take different
branches of it run different code: in a kernel whose halves take turns (one half copies the next
tile while the other multiplies, then the roles swap), each half's pass holds the other's code
only as a branch over it, and an inner loop over k that the compiler kept rolled runs as many
times as its compare says. :func:`pass_of` plays a warp through one pass: from the kernel's entry
to the loop as the lanes interpreter walks it (:func:`study.toolchain.lanes.walked`), then inside
the loop

* a forward branch that lands inside the loop is followed where its predicate is known and the
  same in every running lane of the warp (an unconditional one always); every other falls through;
* an inner loop is written out as many times as its own compare says (:mod:`study.toolchain.trips`)
  at most ``most`` times; a waterfall loop (:mod:`study.toolchain.waterfall`) once, for the
  caller to write out per lane; an inner loop whose passes are not known leaves the pass not known
  (``None``).

:func:`passes_of` does so for each warp of a block (:func:`study.predict.model.played_loop` plays
each warp's own where they differ).
"""

from __future__ import annotations

from collections.abc import Sequence

from study.toolchain import lanes, trips, walk, waterfall
from study.toolchain.sass import Instr, branch_target, find_loops, split_operands


def pass_of(instrs: Sequence[Instr], loop: Sequence[Instr], params: dict[int, int] | None,
            warp: int = 0, rows: bool = False, most: int = 1 << 20) -> list[Instr] | None:
    """The instructions warp ``warp`` of block 0 runs in the first pass of ``loop`` (a slice of
    the kernel ``instrs``), inner loops written out; None where an inner loop's passes are not
    known, or more than ``most``."""
    if not loop:
        return []
    state = lanes.Lanes(params, warp=warp, rows=rows)
    start = loop[0].addr
    for ins in lanes.walked(instrs, loop, state):
        if ins.addr >= start:
            break
        lanes.step(state, ins)
    at = {ins.addr: i for i, ins in enumerate(instrs)}
    s, e = at[start], at[loop[-1].addr]
    inner = [(s2, e2) for s2, e2 in find_loops(instrs) if s <= s2 and e2 <= e and (s2, e2) != (s, e)]

    def passes(s2: int, e2: int) -> int | None:
        code = list(instrs[s2 : e2 + 1])
        if waterfall.is_waterfall(code):  # once: the caller turns it
            return 1
        n = trips.loop_trips(instrs, code, params)
        return int(n) if n is not None and float(n).is_integer() and 1 <= n <= most else None

    def played(s1: int, e1: int) -> list[Instr] | None:
        out: list[Instr] = []
        i = s1
        while i <= e1:
            nested = [se for se in inner if se[0] == i and se[1] <= e1 and se != (s1, e1)]
            if nested:
                s2, e2 = max(nested, key=lambda se: se[1])
                n = passes(s2, e2)
                once = played(s2, e2) if n is not None else None
                if once is None:
                    return None
                out += once * n
                i = e2 + 1
                continue
            ins = instrs[i]
            out.append(ins)
            if ins.pred != "@!PT":
                lanes.step(state, ins)
            to = branch_target(ins) if ins.base == "BRA" else None
            if to is not None and ins.addr < to and to in at and at[to] <= e1 and _taken(state, ins):
                i = at[to]
                continue
            i += 1
        return out

    return played(s, e)


def _taken(state: lanes.Lanes, ins: Instr) -> bool:
    """Whether every running lane takes the branch ``ins``: its guard (:func:`walk.taken`) and,
    where it names one (``@P0 BRA P2, 0x…``), its predicate operand, both known to hold."""
    ops = [o.strip() for o in split_operands(ins.operands)]
    cond = next((o for o in ops if o.lstrip("!").startswith("P")), None)
    if cond is not None:
        p = state.pred(cond)
        if p is None or not all(v for v, a in zip(p, state.active) if a):
            return False
    return walk.taken(state, ins)


def passes_of(instrs: Sequence[Instr], loop: Sequence[Instr], params: dict[int, int] | None,
              warps: int, most: int = 1 << 20) -> list[list[Instr]] | None:
    """Each of a block's ``warps`` warps' pass of ``loop`` (:func:`pass_of`; a kernel that reads
    ``SR_TID.Y`` has blocks 32 threads wide, so that warp w is row w); None where one is not
    known."""
    rows = any(i.base == "S2R" and "SR_TID.Y" in i.operands for i in instrs)
    out = []
    for w in range(max(1, warps)):
        one = pass_of(instrs, loop, params, w, rows, most)
        if one is None:
            return None
        out.append(one)
    return out
