"""The path warp 0 takes from a kernel's entry to the end of its main loop, for the lanes
interpreter (:mod:`study.toolchain.lanes`) and the loop's passes (:mod:`study.toolchain.trips`):
the instructions in address order, but for the forward branches before the loop whose predicate
the interpreter knows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from study.toolchain.sass import Instr, branch_target


def path(instrs: Sequence[Instr], state, loop: Sequence[Instr]) -> Iterator[Instr]:
    """The instructions from the kernel's entry to the end of ``loop`` in the order warp 0 runs
    them, as far as ``state`` (a :class:`study.toolchain.lanes.Lanes`, which the caller steps)
    tells: before the loop, a forward branch that lands at or before the loop's start is followed
    where its predicate is known and the same in every running lane (an unconditional one
    always), so code the warp jumps over (a path for a K too short for the loop, which may clear
    the registers the loop's bounds are in) is not played. Every other branch falls through, as
    the lanes interpreter's rules say."""
    if not loop:
        return
    start, end = loop[0].addr, loop[-1].addr
    at = {ins.addr: i for i, ins in enumerate(instrs)}
    i = 0
    while i < len(instrs):
        ins = instrs[i]
        if ins.addr > end:
            return
        yield ins
        target = branch_target(ins) if ins.base == "BRA" and ins.addr < start else None
        if target is not None and ins.addr < target <= start and target in at and taken(state, ins):
            i = at[target]
            continue
        i += 1


def taken(state, ins: Instr) -> bool:
    """Whether a branch is taken by every running lane (False where any lane is not known to)."""
    if not ins.pred:
        return True
    if ins.pred == "@!PT":
        return False
    p = state.pred(ins.pred.lstrip("@"))
    running = [v for v, a in zip(p, state.active) if a] if p is not None else []
    return bool(running) and all(running)
