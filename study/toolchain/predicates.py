"""The predicates the lanes interpreter (:mod:`study.toolchain.lanes`) plays: an integer
compare (ISETP, UISETP) of two known values per lane, combined with a third predicate, into the
predicates it names, a logic op of three predicates (PLOP3), and a logic op of three registers
that also tests its result (LOP3 into a predicate); the state is the interpreter's (its ``read``,
``write``, ``pred`` and ``preds``)."""

from __future__ import annotations

import re

from study.toolchain.access import LANES
from study.toolchain.bits import MASK, lop3

PRED = re.compile(r"^U?P\d$")
PRED_OR_TRUE = re.compile(r"^U?P(\d|T)$")  # a predicate operand, PT (true: a write discarded) too


def writes(ops: list[str]) -> list[str]:
    """The predicates an instruction with operands ``ops`` writes: its first two operands where
    its destination is a predicate (a compare, PLOP3), else the predicates right after its
    register destination (an add's or LEA's carries out: ``IADD3 R2, P0, P1, ...``)."""
    if not ops:
        return []
    if PRED_OR_TRUE.match(ops[0]):
        return [o for o in ops[:2] if PRED.match(o)]
    out = []
    for o in ops[1:3]:
        if not PRED_OR_TRUE.match(o):
            break
        if PRED.match(o):
            out.append(o)
    return out


def signed(v: int) -> int:
    """A 32-bit register's value as a signed integer."""
    return v - (1 << 32) if v & 0x80000000 else v


COMPARE = {"LT": lambda x, y: x < y, "LE": lambda x, y: x <= y, "GT": lambda x, y: x > y,
            "GE": lambda x, y: x >= y, "EQ": lambda x, y: x == y, "NE": lambda x, y: x != y}
COMBINE = {"AND": lambda x, y: x and y, "OR": lambda x, y: x or y, "XOR": lambda x, y: x != y}


def isetp(state, ins, ops: list[str]) -> None:
    """ISETP.<cmp>[.U32].<op> Pu, Pv, a, b, Pp: Pu = (a cmp b) op Pp, Pv = !(a cmp b) op Pp, per
    lane; unknown where an operand is (the 64-bit .EX form is not played)."""
    mods = ins.mods
    names = [o for o in ops[:2] if re.match(r"^U?P\d$", o)]
    cmp = next((m for m in mods if m in COMPARE), None)
    op = next((m for m in mods if m in COMBINE), "AND")
    a = state.read(ops[2]) if len(ops) > 2 else None
    b = state.read(ops[3]) if len(ops) > 3 else None
    p = state.pred(ops[4]) if len(ops) > 4 else (True,) * LANES
    if cmp is None or "EX" in mods or a is None or b is None or p is None:
        for name in names:
            state.preds[name] = None
        return
    conv = (lambda v: v) if "U32" in mods else signed
    hit = tuple(COMPARE[cmp](conv(x), conv(y)) for x, y in zip(a, b))
    if re.match(r"^U?P\d$", ops[0]):
        state.preds[ops[0]] = tuple(COMBINE[op](h, q) for h, q in zip(hit, p))
    if len(ops) > 1 and re.match(r"^U?P\d$", ops[1]):
        state.preds[ops[1]] = tuple(COMBINE[op](not h, q) for h, q in zip(hit, p))


def plop3(state, ops: list[str]) -> None:
    """PLOP3.LUT Pu, Pv, a, b, c, lut, lut2: Pu = lut applied to the three predicates' bits per
    lane (as LOP3 applies it to registers' bits), Pv the same with lut2; unknown where an input is."""
    ins = [state.pred(o) for o in ops[2:5]]
    for name, lut in zip(ops[:2], ops[5:7]):
        if not re.match(r"^U?P\d$", name):
            continue
        if any(v is None for v in ins) or not re.match(r"^(0x[0-9a-fA-F]+|\d+)$", lut):
            state.preds[name] = None
            continue
        state.preds[name] = tuple(bool(lop3(a, b, c, int(lut, 0)) & 1) for a, b, c in zip(*ins))


def lop3_test(state, ops: list[str]) -> None:
    """LOP3.LUT Pu, Rd, a, b, c, lut, !PT (and ULOP3): Rd = lut applied to the bits of a, b and c,
    and Pu whether that is not zero, per lane (the compilers' bit test, ``x & mask``); Pu unknown
    where an operand is, or where the last predicate is another than !PT."""
    vals = [state.read(o) for o in ops[2:5]]
    lut = ops[5] if len(ops) > 5 else ""
    known = all(v is not None for v in vals) and re.match(r"^(0x[0-9a-fA-F]+|\d+)$", lut)
    out = tuple(lop3(a, b, c, int(lut, 0)) & MASK for a, b, c in zip(*vals)) if known else None
    if len(ops) > 1 and not PRED_OR_TRUE.match(ops[1]):
        state.write(ops[1], out)
    if PRED.match(ops[0]):
        tested = out is not None and len(ops) > 6 and ops[6] in ("!PT", "!UPT")
        state.preds[ops[0]] = tuple(v != 0 for v in out) if tested else None
