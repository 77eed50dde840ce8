"""How many times a kernel's main loop runs, read from its SASS: the compare that decides whether
the loop goes on, played for its first two passes by the lanes interpreter
(:mod:`study.toolchain.lanes`) and carried on from there.

A loop's way out is a predicated branch: the back edge at its end (``@!P6 BRA start``: the loop
goes on while the predicate holds) or, where the back edge is unconditional, the one branch inside
the loop to an address outside it (``@P2 BRA past``: the loop leaves when it holds). The
predicate is the one the loop's last integer compare (ISETP) before that branch writes. Its two
operands are played in the loop's first and second pass; a loop counter or a pointer moves by the
same step every pass, so pass i compares a1 + (i - 1)(a2 - a1) with b1 + (i - 1)(b2 - b1), and
the trip count is the first pass whose compare lets the loop go. The way to the loop is the one
:func:`study.toolchain.walk.path` gives: a K too short for the loop has code of its own, which the
warp jumps over and which may clear the registers the bound is in. Where anything of this is not
known (an operand the interpreter does not know, a uniform predicate, a compare that no pass
ends), there is no count (``None``) and the caller keeps its own.

A pass that leaves through a branch inside the loop has run the instructions before it: it counts
as the fraction of the loop's FFMAs that lie before the branch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from study.toolchain import lanes, walk
from study.toolchain.predicates import COMBINE, COMPARE, signed, writes
from study.toolchain.sass import Instr, branch_target, split_operands

LIMIT = 1 << 20  # a compare that has not ended the loop by this pass is taken for one that never does


def _way_out(loop: Sequence[Instr]) -> tuple[int, str, bool] | None:
    """(index of the branch in ``loop``, its predicate as written, whether the loop goes on when
    the predicate holds), or None where the loop has no single predicated way out."""
    if not loop:
        return None
    start, end = loop[0].addr, loop[-1].addr
    last = loop[-1]
    if last.base == "BRA" and branch_target(last) == start and last.pred:
        return len(loop) - 1, last.pred.lstrip("@"), True
    if last.base != "BRA" or last.pred:
        return None
    outs = [(i, ins) for i, ins in enumerate(loop[:-1])
            if ins.base == "BRA" and ins.pred and not start <= (branch_target(ins) or start) <= end]
    if len(outs) != 1:
        return None
    i, ins = outs[0]
    return i, ins.pred.lstrip("@"), False


def _writes(ins: Instr, name: str) -> bool:
    return name in writes(split_operands(ins.operands))


def _compare(code: Sequence[Instr], name: str) -> tuple[Instr, str] | None:
    """(the integer compare whose result the predicate ``name`` holds at the end of ``code``, the
    predicate it writes that): the last instruction there that writes ``name``, an ISETP, or a
    PLOP3 that copies a uniform predicate (LUT 0x80 of PT, PT and it) that a UISETP before it
    wrote; else None."""
    writer = next((ins for ins in reversed(code) if _writes(ins, name) and ins.pred != "@!PT"), None)
    if writer is None:
        return None
    if writer.base == "PLOP3":
        ops = split_operands(writer.operands)
        if "LUT" not in writer.mods or len(ops) < 6 or ops[0] != name or ops[2:4] != ["PT", "PT"] \
                or ops[5].lower() != "0x80" or not re.match(r"^UP\d$", ops[4]):
            return None
        name = ops[4]
        upto = code.index(writer)
        writer = next((ins for ins in reversed(code[:upto]) if _writes(ins, name)), None)
        if writer is None:
            return None
    if writer.base not in ("ISETP", "UISETP") or "EX" in writer.mods:
        return None
    return writer, name


def _operands(state: lanes.Lanes, ins: Instr) -> tuple | None:
    """An ISETP's two compared values and its combining predicate, each the same in every lane
    (a loop's counter is), else None."""
    ops = split_operands(ins.operands)
    if len(ops) < 4:
        return None
    a, b = state.read(ops[2]), state.read(ops[3])
    p = state.pred(ops[4]) if len(ops) > 4 else (True,) * lanes.LANES
    if a is None or b is None or p is None or len(set(a)) > 1 or len(set(b)) > 1 or len(set(p)) > 1:
        return None
    return a[0], b[0], p[0]


def loop_trips(instrs: Sequence[Instr], loop: Sequence[Instr],
               params: dict[int, int] | None = None) -> float | None:
    """The passes of ``loop`` (the main loop, a slice of the kernel ``instrs``) one block runs, for
    the kernel's arguments ``params`` (by offset in constant bank 0, as the lanes interpreter takes
    them); None where the SASS does not tell."""
    out = _way_out(loop)
    if out is None or not params:  # without the arguments the compare reads no sizes
        return None
    at, pred, goes_on_when = out
    name = pred.lstrip("!")
    if not re.match(r"^P\d$", name):
        return None
    found = _compare(loop[:at], name)
    if found is None:
        return None
    setp, name = found
    cmp = next((m for m in setp.mods if m in COMPARE), None)
    if cmp is None:
        return None
    first = split_operands(setp.operands)[0] == name  # Pu = hit op Pp; Pv = !hit op Pp
    combine = COMBINE[next((m for m in setp.mods if m in COMBINE), "AND")]
    conv = (lambda v: v) if "U32" in setp.mods else signed

    state = lanes.Lanes(params)
    seen = []
    for ins in walk.path(instrs, state, loop):
        if ins.addr == setp.addr:
            seen.append(_operands(state, ins))
        if ins.pred != "@!PT":
            lanes.step(state, ins)
    for ins in loop:  # the second pass
        if ins.addr == setp.addr:
            seen.append(_operands(state, ins))
        if ins.pred != "@!PT":
            lanes.step(state, ins)
    if len(seen) != 2 or None in seen:
        return None
    (a1, b1, p), (a2, b2, _) = seen
    da, db = (a2 - a1) & lanes.MASK, (b2 - b1) & lanes.MASK
    if da == 0 and db == 0:
        return None
    negated = pred.startswith("!")
    ffma = [i for i, ins in enumerate(loop) if ins.base == "FFMA"]
    before = sum(1 for i in ffma if i < at) / len(ffma) if ffma else 1.0
    for i in range(1, LIMIT):
        a, b = (a1 + (i - 1) * da) & lanes.MASK, (b1 + (i - 1) * db) & lanes.MASK
        hit = COMPARE[cmp](conv(a), conv(b))
        holds = combine(hit if first else not hit, p) != negated
        if holds != goes_on_when:  # the loop leaves in pass i
            return float(i) if goes_on_when else i - 1 + before
    return None
