"""The memory addresses of one warp's lanes, read from the SASS: an interpreter of the integer
instructions that compute addresses, run for warp 0 of block 0.

What a memory access costs depends on which addresses a warp's 32 lanes touch (broadcasts and
bank conflicts in shared memory, the lines a global load spans), which an instruction's opcode
does not say. The address is a register computed from the thread index (and, for global memory,
the kernel's arguments) with integer instructions before and in the main loop; this module plays
them for the 32 lanes of warp 0 (``SR_TID.X`` = lane, ``SR_TID.Y`` = ``SR_TID.Z`` = 0,
``SR_LANEID`` = lane: the layout of any block whose x extent is a multiple of 32) and block 0
(another along the grid's x where asked: which accesses every block makes alike), so that
:mod:`study.toolchain.access` and :mod:`study.toolchain.l1` can count the cycles each access
needs; and, up to the loop's start, for each warp of a block, to tell which of them reach the loop
(:func:`warps_reaching`).

Rules of the interpreter:

* Instructions run once each, in address order, from the kernel's entry to the end of the main
  loop (the loop's first pass). A guard whose lanes are known applies lane by lane (the lanes it
  holds for take the result, the others keep theirs: an integer division's fix-ups); one not
  known is ignored; ``@!PT`` never runs. Branches are not followed, but for a forward branch
  before the loop, landing at or before its start, whose predicate is known and the same in
  every running lane (:func:`study.toolchain.walk.path`). An EXIT before the loop under a known
  predicate ends those lanes, and the loop's accesses are priced for the lanes left (a bounds
  check: at M = 1 a kernel that puts rows on lanes runs one lane a warp); an EXIT after a branch
  (a warp-specialised kernel's producers branch away) leaves every lane running. An access's own
  guard applies where no instruction of the loop writes its predicate, else it is not played
  (:func:`_running`).
* A value is 32 lanes of 32-bit integers, a predicate 32 booleans. Anything the interpreter does
  not model (a load's result, a floating-point result or compare, an add's carry out, an opcode
  outside the set below) makes its destination unknown, and an address that reads an unknown
  register is unknown (``None``): it is never guessed.
* Constant bank 0 holds the kernel's arguments at the offsets ``params`` gives; every other
  constant, and any special register but the thread, lane and block index, reads 0 (the same for every
  lane: shared addresses move together; global ones, which move with the matrices' sizes, are
  given only with ``params``). A spill (STL) keeps its value under its local address for its
  reload (LDL).

Opcodes modelled: ISETP and UISETP, PLOP3 and LOP3 (into predicates), MOV, UMOV, R2UR, IMAD (every form;
.WIDE's low word; .HI adds the 64-bit pair c+1:c), IADD3, UIADD3, VIADD, the steps of an integer
division (I2F, MUFU.RCP, F2I, IMAD.HI), LEA, ULEA (and .HI), SHF, USHF, SHL, SHR, LOP3, ULOP3,
IABS, IMNMX, VIMNMX, VIADDMNMX, PRMT (its default mode), SEL and USEL (lane by lane where the
predicate is known, else where either choice moves the lanes together), SGXT, BMSK, CS2R,
HFMA2.MMA of two constants (the compiler's constant move), S2R, S2UR, LDC, ULDC, STL, LDL.
"""


from __future__ import annotations

import re
import struct
from collections.abc import Sequence

from study.toolchain import walk
from study.toolchain.access import LANES
from study.toolchain.bits import MASK, f32, f32_bits, lop3, prmt
from study.toolchain.predicates import PRED, isetp, lop3_test, plop3, writes
from study.toolchain.predicates import signed as _signed
from study.toolchain.sass import Instr, split_operands

SHARED_ACCESS = ("LDS", "STS", "LDSM")
GLOBAL_ACCESS = ("LDG", "LDGSTS")
ZERO = (0,) * LANES
LANE = tuple(range(LANES))

_IMM = re.compile(r"^-?(?:0x[0-9a-fA-F]+|\d+)$")
_CONST = re.compile(r"^-?c\[0x[0-9a-fA-F]+\]\[(?:0x[0-9a-fA-F]+|U?R\d+(?:\+0x[0-9a-fA-F]+)?)\]$")


class Lanes:
    """Register file of one warp: vector registers (R) per lane, uniform registers (UR) once."""

    def __init__(self, params: dict[int, int] | None = None, warp: int = 0, rows: bool = False,
                 block: int = 0) -> None:
        # the special registers of warp ``warp``'s lanes: of a block 32 threads wide where ``rows``
        # (SR_TID.Y = warp), else of a block of one row (SR_TID.X = 32 warp + lane); of the block
        # ``block`` along the grid's x (SR_CTAID.X)
        x = LANE if rows else tuple(32 * warp + lane for lane in LANE)
        self.special = {"SR_TID.X": x, "SR_LANEID": LANE, "SR_TID.Y": (warp if rows else 0,) * LANES,
                        "SR_CTAID.X": (block,) * LANES}
        self.regs: dict[str, tuple | None] = {}
        self.local: dict[str, tuple | None] = {}  # spilled values by their address operand
        self.params = params or {}  # constant bank 0 by byte offset: the kernel's arguments
        self.preds: dict[str, tuple | None] = {}  # predicates P0..P6 per lane (bools) where known
        self.active: tuple = (True,) * LANES  # the lanes no played EXIT has ended

    def pred(self, text: str) -> tuple | None:
        """A predicate operand's lanes (``PT``, ``P3``, ``!P3``), or None where not known."""
        t = text.strip()
        neg = t.startswith("!")
        name = t.lstrip("!")
        if name in ("PT", "UPT"):
            val = (True,) * LANES
        else:
            val = self.preds.get(name)
            if val is None:
                return None
        return tuple(not v for v in val) if neg else val

    def read(self, text: str) -> tuple | None:
        t = text.strip()
        neg = t.startswith("-")
        inv = t.startswith("~")
        t = t.lstrip("-~")
        t = t.replace("|", "")
        name = t.split(".")[0]
        if _IMM.match(text.strip()):
            v = int(text.strip(), 0) & MASK
            return (v,) * LANES
        if name in ("RZ", "URZ", "SRZ"):
            val = ZERO
        elif re.match(r"^U?R\d+$", name):
            val = self.regs.get(name)
            if val is None:
                return None
        elif _CONST.match(t):
            at = _param_offset(t)
            val = (self.params.get(at, 0) & MASK,) * LANES if at is not None else ZERO
        else:
            return None
        if neg:
            val = tuple((-v) & MASK for v in val)
        if inv:
            val = tuple((~v) & MASK for v in val)
        return val

    def write(self, dest: str, val: tuple | None, pair: tuple | None = None, wide: bool = False) -> None:
        name = dest.split(".")[0]
        if not re.match(r"^U?R\d+$", name):
            return
        self.regs[name] = val
        if pair is not None or wide:  # the register after a 64-bit destination
            self.regs[_next(name)] = pair


def _param_offset(text: str) -> int | None:
    """The byte offset of a constant-bank-0 operand ``c[0x0][0x218]``; None for any other."""
    m = re.match(r"^c\[0x0\]\[(0x[0-9a-fA-F]+)\]$", text.strip())
    return int(m[1], 16) if m else None


def step(state: Lanes, ins: Instr) -> None:
    """Play one instruction on ``state`` (its destination becomes unknown where not modelled).
    Under a guard whose lanes are known, the lanes it holds for take the result and the others
    keep what they held (an integer division's guarded fix-ups); under one not known, or where
    the destination held nothing known, the result as if unguarded."""
    guard = state.pred(ins.pred.lstrip("@")) if ins.pred and ins.pred != "@PT" else None
    if guard is None or all(guard):
        return _step(state, ins)
    regs, preds = dict(state.regs), dict(state.preds)
    _step(state, ins)
    for held, now in ((regs, state.regs), (preds, state.preds)):
        for name, val in now.items():
            old = held.get(name)
            if old is not None and val is not None and val is not old:
                now[name] = tuple(v if on else o for v, o, on in zip(val, old, guard))


def _step(state: Lanes, ins: Instr) -> None:
    ops = split_operands(ins.operands)
    base = ins.base.lstrip("U") if ins.base.startswith("U") and ins.base not in ("UMOV",) else ins.base
    mods = ins.mods
    if not ops:
        return
    dest = ops[0]
    src = ops[1:]
    if ins.base == "STL":  # a spill: what the register held, kept under its local address
        state.local[ops[0]] = state.read(ops[1]) if len(ops) > 1 else None
        return
    if ins.base == "LDL":  # its reload
        state.write(dest, state.local.get(src[0]) if src else None)
        return
    if ins.base in ("ISETP", "UISETP"):
        isetp(state, ins, ops)
        return
    if ins.base in ("PLOP3", "UPLOP3"):
        plop3(state, ops)
        return
    if base == "LOP3" and PRED.match(dest):
        lop3_test(state, ops)
        return
    if ins.base == "R2P":  # predicates from a register's bits: not played
        state.preds = dict.fromkeys(state.preds)
        return
    # other predicates written (a compare not played, an add's carry out) are not known; stores
    # have no result here
    for name in writes(ops):
        state.preds[name] = None
    if re.match(r"^U?P(\d|T)", dest) or ins.base in ("STS", "STG", "ST", "BAR", "BRA", "EXIT"):
        return

    def r(i):
        return state.read(src[i]) if i < len(src) else None

    def lanewise(f, *vals):
        if any(v is None for v in vals):
            return None
        return tuple(f(*xs) & MASK for xs in zip(*vals))

    # skip predicate sources in the operand list (carry-ins of IADD3, SEL's selector)
    def values():
        return [s for s in src if not re.match(r"^!?U?P(\d|T)$", s)]

    val = None
    pair = None
    try:
        if ins.base == "S2R" or ins.base == "S2UR":
            sr = src[0] if src else ""
            val = state.special.get(sr, ZERO)
            if ins.base == "S2UR" and not sr.startswith("SR_CTAID"):  # a uniform register: the block's
                val = ZERO
        elif ins.base == "HFMA2" and "MMA" in mods and [s.strip() for s in src[:2]] == ["-RZ", "RZ"]:
            # HFMA2.MMA d, -RZ, RZ, h, l: the compiler's move of a constant, two halves packed
            h, lo = (struct.unpack("<H", struct.pack("<e", float(x)))[0] for x in src[2:4])
            val = ((h << 16) | lo,) * LANES
        elif ins.base == "R2UR":  # a uniform register from a vector one: lane 0's value
            a = r(0)
            val = (a[0],) * LANES if a is not None else None
        elif ins.base == "CS2R":
            val, pair = (ZERO, ZERO) if ".32" not in ins.opcode else (ZERO, None)
        elif base in ("MOV",) or ins.base == "UMOV":
            val = r(0)
        elif base in ("LDC",) or ins.base == "ULDC":
            at = _param_offset(src[0]) if src else None
            val = (state.params.get(at, 0) & MASK,) * LANES if at is not None else ZERO
            if ".64" in ins.opcode:
                pair = ((state.params.get(at + 4, 0) & MASK,) * LANES) if at is not None else ZERO
        elif base == "IMAD":
            # every form (.MOV, .SHL, .IADD included) is a * b + c of its three sources; the
            # high word of a product is not an address here
            v = values()
            if len(v) < 3:
                val = None
            elif "HI" in mods:
                # the high word of a * b + the 64-bit c+1:c (an integer division's step: c zero and
                # c+1 the estimate, which the step refines)
                a, b, c = (state.read(x) for x in v[:3])
                c_hi = state.read(_next(v[2])) if re.match(r"^U?R\d+$", v[2]) else ZERO
                signed = "U32" not in mods
                val = lanewise(lambda x, y, lo, hi: (((_signed(x) * _signed(y)) if signed else x * y)
                                                     + ((hi << 32) | lo)) >> 32, a, b, c, c_hi)
            elif "WIDE" in mods:  # a 64-bit d:d+1 = a * b + c:c+1; its low word only
                a, b, c = (state.read(x) for x in v[:3])
                val = lanewise(lambda x, y, z: x * y + z, a, b, c)
                pair = None
            else:
                a, b, c = (state.read(x) for x in v[:3])
                val = lanewise(lambda x, y, z: x * y + z, a, b, c)
        elif base == "VIADD":  # a + b (+ c): the integer add of newer ptxas
            v = values()
            vals = [state.read(x) for x in v]
            val = lanewise(lambda *xs: sum(xs), *vals) if vals else None
        elif base == "I2F":  # an integer's float32 bits (an integer division's reciprocal)
            a = r(0)
            unsigned = "U32" in mods
            val = lanewise(lambda x: f32_bits(float(x if unsigned else _signed(x))), a)
        elif base == "MUFU" and "RCP" in mods:
            val = lanewise(lambda x: f32_bits(1.0 / f32(x)) if f32(x) else 0x7F800000, r(0))
        elif base == "F2I":
            unsigned = "U32" in mods

            def f2i(x):
                f = f32(x)
                if f != f:  # NaN
                    return 0
                n = int(f)  # toward zero (TRUNC)
                return max(0, min(n, MASK)) if unsigned else max(-(1 << 31), min(n, (1 << 31) - 1))
            val = lanewise(f2i, r(0))
        elif base == "IADD3":
            v = values()
            a, b, c = (state.read(x) for x in v[:3])
            val = lanewise(lambda x, y, z: x + y + z, a, b, c)
        elif base == "LEA":
            v = values()
            if "HI" in mods:
                # LEA.HI d, a, b, c, s: b + ({c:a} >> (32 - s)), the high word c often RZ
                a, b = state.read(v[0]), state.read(v[1])
                hi = state.read(v[2]) if len(v) > 3 else ZERO
                s = int(v[-1], 0)
                val = lanewise(lambda x, y, h: y + ((((h << 32) | x) >> (32 - s)) & MASK), a, b, hi)
            else:
                a, b = state.read(v[0]), state.read(v[1])
                s = int(v[-1], 0)
                val = lanewise(lambda x, y: (x << s) + y, a, b)
        elif base == "SHF":
            # SHF.{L,R}.{U32,S32,U64,S64}[.HI] d, lo, n, hi: the 64-bit {hi:lo} shifted by n, the
            # low word of the result (the high word with .HI)
            v = values()
            lo, s, hi = state.read(v[0]), state.read(v[1]), state.read(v[2])
            signed = "S32" in mods or "S64" in mods
            high = "HI" in mods

            def shf(x, n, h):
                wide = (h << 32) | x
                if signed and h & 0x80000000:
                    wide -= 1 << 64
                n &= 63
                out = wide << n if "L" in mods else wide >> n
                return out >> 32 if high else out
            val = lanewise(shf, lo, s, hi)
        elif base in ("SHL",):
            a, s = r(0), r(1)
            val = lanewise(lambda x, n: x << (n & 31), a, s)
        elif base in ("SHR",):
            a, s = r(0), r(1)
            val = lanewise(lambda x, n: (_signed(x) if "S32" in mods else x) >> (n & 31), a, s)
        elif base == "LOP3":
            v = values()
            a, b, c = (state.read(x) for x in v[:3])
            lut = int(v[3], 0)
            val = lanewise(lambda x, y, z: lop3(x, y, z, lut), a, b, c)
        elif base == "IABS":
            val = lanewise(lambda x: abs(_signed(x)), r(0))
        elif base in ("IMNMX", "VIMNMX", "VIADDMNMX"):
            # min(a, b) (!PT: max), signed unless .U32; VIADDMNMX d, a, b, c: of a + b and c
            v = values()
            a, b = state.read(v[0]), state.read(v[1])
            if base == "VIADDMNMX":
                a, b = lanewise(lambda x, y: x + y, a, b), state.read(v[2])
            pick = min if "!PT" not in src[-1] and src[-1].endswith("PT") else max
            sign = (lambda x: x) if "U32" in mods else _signed
            val = lanewise(lambda x, y: pick(sign(x), sign(y)), a, b)
        elif base == "PRMT":
            # PRMT d, a, selector, b: each of d's four bytes picked by a nibble of the selector
            # from the eight bytes of b:a (a's the low four); the sign-replicating modes unknown
            a, sel, b = r(0), r(1), r(2)
            if sel is not None and len(set(sel)) == 1 and not sel[0] & 0x8888 and not mods:
                val = lanewise(lambda x, y: prmt(x, y, sel[0]), a, b)
        elif base == "SEL":
            # SEL d, a, b, P: a where P, else b, lane by lane where P is known; where it is not and
            # a and b are each the same for every lane (a stage's base, say) either choice moves
            # the warp's addresses together
            a, b = r(0), r(1)
            p = state.pred(src[2]) if len(src) > 2 else None
            if a is not None and b is not None and p is not None:
                val = tuple(x if on else y for x, y, on in zip(a, b, p))
            elif a is not None and b is not None and (a == b or (len(set(a)) == 1 and len(set(b)) == 1)):
                val = a
        elif base == "SGXT":
            a, n = r(0), r(1)
            def sgxt(x, b):
                b &= 31
                x &= (1 << b) - 1 if b else 0
                return x - (1 << b) if b and x >> (b - 1) & 1 and "U32" not in mods else x
            val = lanewise(sgxt, a, n)
        elif base == "BMSK":
            a, n = r(0), r(1)
            val = lanewise(lambda p, w: ((1 << (w & 31)) - 1) << (p & 31), a, n)
        else:
            val = None
    except (ValueError, IndexError):
        val = None
    state.write(dest, val, pair, wide=".64" in ins.opcode or "WIDE" in mods)


_ADDR = re.compile(r"\[([^\]]*)\]")


def address(state: Lanes, operand: str) -> tuple | None:
    """The 32 lanes' byte addresses of a memory operand: ``[R8+UR4+0x80]``, or the bracket after
    a global access's ``desc[...]`` (``desc[UR8][R16.64+0x10]``: the pointer's low word)."""
    groups = _ADDR.findall(operand)
    if not groups:
        return None
    total = ZERO
    for part in re.split(r"\+", groups[-1].replace("-", "+-")):
        part = part.strip()
        if not part:
            continue
        name, *mods = part.lstrip("-").split(".")
        scale = 1
        for mod in mods:
            if re.match(r"^X\d+$", mod):
                scale = int(mod[1:])
            elif mod not in ("U32", "64", "reuse"):
                return None
        if _IMM.match(part):
            v = (int(part, 0) & MASK,) * LANES
        elif re.match(r"^U?R(\d+|Z)$", name):
            v = state.read(name)
            if v is None:
                return None
            v = tuple((x * scale) & MASK for x in v)
            if part.startswith("-"):
                v = tuple((-x) & MASK for x in v)
        else:
            return None
        total = tuple((x + y) & MASK for x, y in zip(total, v))
    return total


def lane_addresses(instrs: Sequence[Instr], loop: Sequence[Instr],
                   params: dict[int, int] | None = None, copies: bool = False) -> dict[int, tuple | None]:
    """Each memory access of ``loop`` (by address): its lanes' byte addresses in the loop's first
    pass (for a global access, the low 32 bits), or None where they are not known from the SASS.
    ``instrs`` is the whole kernel, ``loop`` its main loop (a slice of it). ``params``: the
    kernel's arguments by their offset in constant bank 0 (without them they read 0, and global
    addresses, which move with the matrices' sizes and pointers, are not given). ``copies``: the
    asynchronous copies' (LDGSTS) shared-memory destinations instead, and nothing else."""
    return play(instrs, loop, params)[1 if copies else 0]


def play(instrs: Sequence[Instr], loop: Sequence[Instr], params: dict[int, int] | None,
         block: int = 0) -> tuple[dict[int, tuple | None], dict[int, tuple | None]]:
    """One pass of the interpreter for :func:`lane_addresses` and :mod:`study.toolchain.l1`: the
    accesses' addresses and the asynchronous copies' shared-memory destinations, for warp 0 of
    the block ``block`` along the grid's x."""
    accesses: dict[int, tuple | None] = {}
    copies: dict[int, tuple | None] = {}
    if not loop:
        return accesses, copies
    state = Lanes(params, block=block)
    in_loop = {i.addr for i in loop}
    # predicates the loop writes: an access guarded by one of them may run other lanes in later passes
    written = {n for i in loop for n in writes(split_operands(i.operands))}
    if any(i.base == "R2P" for i in loop):
        written |= {f"P{n}" for n in range(7)}
    for ins in walked(instrs, loop, state):
        if ins.addr in in_loop:
            own = ins.pred.lstrip("@")
            guard = state.pred(own) if own and own.lstrip("!") not in written else None
            if ins.base == "LDGSTS":
                copies[ins.addr] = _running(state, address(state, _shared(ins)), guard)
            if ins.base in SHARED_ACCESS or (params and ins.base in GLOBAL_ACCESS):
                accesses[ins.addr] = _running(state, address(state, address_operand(ins)), guard)
        step(state, ins)
    return accesses, copies


def walked(instrs: Sequence[Instr], loop: Sequence[Instr], state: Lanes):
    """The instructions ``state``'s warp runs from the kernel's entry to the end of ``loop``'s
    first pass (:func:`study.toolchain.walk.path`; the caller steps ``state`` through them), less
    those that never run (``@!PT``) and the EXITs before the loop, which end the lanes their known
    predicate holds for (none after a branch: the straight path may not be the warp's from there)."""
    start = loop[0].addr
    branched = False
    for ins in walk.path(instrs, state, loop):
        if ins.pred == "@!PT":
            continue
        if ins.base == "BRA":
            branched = True
        if ins.base == "EXIT" and ins.addr < start and ins.pred:
            ended = state.pred(ins.pred.lstrip("@")) if not branched else None
            if ended is not None:
                state.active = tuple(a and not e for a, e in zip(state.active, ended))
            continue
        yield ins


def warps_reaching(instrs: Sequence[Instr], loop: Sequence[Instr], params: dict[int, int] | None,
                   warps: int) -> int:
    """How many of a block's ``warps`` reach ``loop`` with a lane running: each played to the
    loop's start as warp 0 is, with its own thread indices (:class:`Lanes`: a kernel that reads
    ``SR_TID.Y`` has blocks 32 threads wide, so that warp w is row w; any other, one row). At
    M = 1, a block of 32 x 32 threads whose rows past M end before the loop runs it with one warp."""
    if not loop:
        return warps
    rows = any(i.base == "S2R" and "SR_TID.Y" in i.operands for i in instrs)
    reaching = 0
    for w in range(warps):
        state = Lanes(params, warp=w, rows=rows)
        for ins in walked(instrs, loop, state):
            if ins.addr >= loop[0].addr:
                reaching += any(state.active)
                break
            step(state, ins)
    return reaching


def _next(reg: str) -> str:
    """The register after ``reg`` (the high word of a 64-bit pair)."""
    prefix = "UR" if reg.startswith("UR") else "R"
    return f"{prefix}{int(reg[len(prefix):]) + 1}"


def _running(state: Lanes, addrs: tuple | None, guard: tuple | None = None) -> tuple | None:
    """An access's lane addresses with the lanes an EXIT ended, and those its own ``guard`` (where
    known and no instruction of the loop writes its predicate) holds off, as None. (A guard the
    loop writes is not played: it can carry from the pass before, which the first pass does not
    see; a pipelined loop's loads guarded by "not the last pass" would read as never run.)"""
    on = state.active if guard is None else tuple(a and g for a, g in zip(state.active, guard))
    if addrs is None or all(on):
        return addrs
    return tuple(a if o else None for a, o in zip(addrs, on))


def _shared(ins: Instr) -> str:
    return next((o for o in split_operands(ins.operands) if o.startswith("[")), "")


def address_operand(ins: Instr) -> str:
    """An access's address operand: a global access's, else its shared one."""
    return _global(ins) if ins.base in GLOBAL_ACCESS else _shared(ins)


def _global(ins: Instr) -> str:
    ops = split_operands(ins.operands)
    return next((o for o in ops if "desc[" in o or (o.startswith("[") and ins.base == "LDG")), "")
