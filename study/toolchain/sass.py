"""SASS: read what the compiler wrote -- ``cuobjdump -sass`` text parsed, opcodes counted.

cubin -> ``cuobjdump -sass`` -> instructions -> opcode histogram for the whole kernel and for
its main loop -> loads per FFMA: the instruction ledger as the compiler actually wrote it.
Resources (registers, local memory) come from ``cuobjdump -res-usage`` on the same cubin.

Conventions, fixed here once:

* ``total`` counts every instruction of the kernel except ``NOP`` (the alignment padding after
  the final ``EXIT``/``BRA`` self-loop); ``EXIT`` and that trailing ``BRA`` are counted.
* Widths: ``LDS``/``LDG`` with a ``.64``, ``.128`` or ``.256`` modifier are 64/128/256-bit loads
  (``LDG.E.ENL2.256`` is the 256-bit global load of newer archs); every other ``LDS``/``LDG``
  (no width, or a sub-word ``.U8``/``.S16``...) falls in the 32 bucket. Only a modifier that
  is exactly ``64``/``128``/``256`` is a width: ``.LTC128B`` is an L2 prefetch hint, and
  ``.U``/``.E``/``.ENL2``/``.CONSTANT``/``.EF``... say nothing about width.
* The main loop is the range [target, branch] of a backward ``BRA`` (to an earlier address of the
  same function; the trailing ``BRA`` to itself is not a loop) holding the most ``FFMA``; ties go to
  the shortest range. For the tiled kernels that is the phase loop with the k loop fully unrolled
  inside, for K1/K2 the (unrolled) k loop.
* Spills: ``spills`` is the local memory a kernel reserves, in bytes per thread: STACK + LOCAL of
  ``cuobjdump -res-usage`` on its cubin, read the same way for CUDA and Triton kernels. ptxas
  puts register spill slots in the stack frame (a Triton kernel that spills shows STACK); a
  local array indexed at run time would also live there, and none of the project's kernels
  has one. The instructions that move data to and from local memory are counted as ``LDL``
  and ``STL`` (``loop_LDL``/``loop_STL`` in the main loop): for these kernels spills > 0 exactly
  when LDL/STL occur, and the loop counts say whether the spill traffic is in the hot loop.
  (ptxas ``-v``'s "bytes spill stores/loads" add up the widths of the spill instructions it
  wrote, not the memory reserved, and a Triton compile leaves no ptxas log to read, so the
  table does not use them.)
"""

from __future__ import annotations

import functools
import math
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from study.toolchain import tools
from study.toolchain.compile import CompileError
from study.toolchain.control import Control, decode

# ---------------------------------------------------------------------------------------------
# SASS parsing


@dataclass(frozen=True)
class Instr:
    """One SASS instruction: address, guard predicate, opcode with modifiers, operands, and the
    two 64-bit words of its encoding where the dump prints them (sm_70 and later)."""

    addr: int
    opcode: str  # e.g. "LDG.E.128.CONSTANT"
    operands: str = ""
    pred: str = ""  # e.g. "@!P0"
    words: tuple[int, int] | None = field(default=None, compare=False)

    @property
    def control(self) -> Control | None:
        """The scheduling word (stall, scoreboards, wait mask, reuse flags); None where the dump
        gave no second word."""
        return decode(self.words[1]) if self.words else None

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]

    @property
    def mods(self) -> tuple[str, ...]:
        return tuple(self.opcode.split(".")[1:])

    @property
    def width(self) -> int:
        """Access width in bits for loads/stores: 64, 128 or 256 when named, else 32."""
        for m in self.mods:
            if m in ("64", "128", "256"):
                return int(m)
        return 32

    def __str__(self) -> str:
        pred = f"{self.pred} " if self.pred else ""
        return f"/*{self.addr:04x}*/ {pred}{self.opcode} {self.operands}".rstrip()


_LINE = re.compile(
    r"^\s*/\*(?P<addr>[0-9a-fA-F]+)\*/\s+(?:(?P<pred>@!?U?P[T0-9]+)\s+)?"
    r"(?P<op>[A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*(?P<args>[^;]*?)\s*;"
)
_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_WORD = re.compile(r"/\*\s*0x([0-9a-fA-F]{16})\s*\*/\s*$")  # an encoding word ending the line


def split_operands(operands: str) -> list[str]:
    """An instruction's operands, split at the commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in operands:
        if ch in "[":
            depth += 1
        elif ch in "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_sass(text: str) -> dict[str, list[Instr]]:
    """``cuobjdump -sass`` text -> {function name: instructions in address order}.

    Text that has instruction lines but no ``Function :`` header lands under ``""``.
    """
    funcs: dict[str, list[Instr]] = {}
    current: list[Instr] | None = None
    first: int | None = None  # the first encoding word of the last instruction, awaiting its second
    for line in text.splitlines():
        f = _FUNC.match(line)
        if f:
            current = funcs.setdefault(f.group(1), [])
            first = None
            continue
        m = _LINE.match(line)
        word = _WORD.search(line)
        if m:
            if current is None:
                current = funcs.setdefault("", [])
            current.append(Instr(int(m["addr"], 16), m["op"], m["args"], m["pred"] or ""))
            first = int(word[1], 16) if word else None
        elif word and first is not None and current:  # the second word, on a line of its own
            last = current[-1]
            current[-1] = Instr(last.addr, last.opcode, last.operands, last.pred, (first, int(word[1], 16)))
            first = None
    return funcs


# ---------------------------------------------------------------------------------------------
# reading a cubin


def resources_cubin(cubin: Path | str, symbol: str | None = None) -> dict:
    """``cuobjdump -res-usage`` for one function (``tools.resource_usage``): REG, STACK,
    SHARED, LOCAL, ... as read; ``symbol`` None reads the only function.

    Note: for sm_90 cubins SHARED includes the 1 KB the driver reserves per block (ptxas says
    8192 B smem, cuobjdump says SHARED:9216), unlike sm_80 cubins; Triton's dynamic shared
    memory is not in it. The occupancy wants the ptxas / Triton figure (it adds the
    reservation itself).
    """
    tools.require_cuobjdump()
    try:
        funcs = tools.resource_usage(Path(cubin))
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        raise CompileError(str(e)) from None
    if symbol is None and len(funcs) == 1:
        symbol = next(iter(funcs))
    if symbol not in funcs:
        raise CompileError(f"{symbol!r} not in {Path(cubin).name}; it holds {', '.join(funcs) or 'none'}")
    return funcs[symbol]


def spill_bytes(usage: dict) -> int:
    """Local memory per thread, in bytes: STACK + LOCAL of a ``resources_cubin`` record (the
    module docstring says why this is the spill figure)."""
    return int(usage.get("STACK", 0)) + int(usage.get("LOCAL", 0))


@functools.lru_cache(maxsize=64)
def _sass_text(cubin: str, mtime: float) -> str:
    """``tools.run_cuobjdump`` (every cuobjdump found, in search order, until one reads the
    cubin); its failures become CompileError."""
    tools.require_cuobjdump()
    try:
        return tools.run_cuobjdump(cubin, "-sass")
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        raise CompileError(str(e)) from None


def dump_sass(cubin: Path | str, symbol: str | None = None) -> list[Instr]:
    """The instructions of function ``symbol`` in ``cubin`` (the only function when None)."""
    path = Path(cubin)
    funcs = parse_sass(_sass_text(str(path), path.stat().st_mtime))
    if symbol is None and len(funcs) == 1:
        return next(iter(funcs.values()))
    if symbol not in funcs:
        raise CompileError(f"{symbol!r} not in {path.name}; it holds {', '.join(funcs) or 'no code'}")
    return funcs[symbol]


# ---------------------------------------------------------------------------------------------
# histograms and loops

HIST_KEYS = (
    "FFMA", "LDS32", "LDS64", "LDS128", "LDS", "LDG32", "LDG64", "LDG128", "LDG256", "LDG",
    "LDGSTS", "STS", "STG", "BAR", "HMMA", "HGMMA", "LDSM", "STSM", "LDL", "STL", "total",
)


def histogram(instrs: Iterable[Instr]) -> dict[str, int]:
    """Opcode counts (see the module docstring for widths and what ``total`` holds).

    ``LDS``/``LDG`` are the sums over widths; ``LDGSTS`` (cp.async), ``STS``, ``LDSM``/``STSM``
    (ldmatrix/stmatrix, which Triton uses to move FP32 tiles too) any width; ``BAR`` every
    barrier flavour; ``LDL``/``STL`` local-memory loads and stores (spills). A width with no key
    of its own (``LDS.256``) gets one in the returned dict. An instruction predicated on ``!PT``
    (never true) moves nothing: ptxas places ``@!PT LDS RZ, [RZ]`` after cp.async copies; it
    counts in ``total`` (it is in the instruction stream) but not as a load.
    """
    h = dict.fromkeys(HIST_KEYS, 0)
    for ins in instrs:
        base = ins.base
        if base == "NOP":
            continue
        h["total"] += 1
        if ins.pred == "@!PT":
            continue
        if base in ("LDS", "LDG"):
            key = f"{base}{ins.width}"
            h[key] = h.get(key, 0) + 1
            h[base] += 1
        elif base in h:
            h[base] += 1
    return h


def branch_target(ins: Instr) -> int | None:
    if ins.base not in ("BRA", "JMP"):
        return None
    hexes = re.findall(r"0x([0-9a-fA-F]+)", ins.operands)
    return int(hexes[-1], 16) if hexes else None


def find_loops(instrs: Sequence[Instr]) -> list[tuple[int, int]]:
    """Loops as (start, end) instruction indices, inclusive: one per backward-branch target.

    A backward branch jumps to an earlier address of the same function; the trailing
    ``BRA`` to itself (the end-of-kernel trap) is not a loop. Several back edges to one
    header make one loop reaching to the last of them.
    """
    index = {ins.addr: i for i, ins in enumerate(instrs)}
    loops: dict[int, int] = {}
    for i, ins in enumerate(instrs):
        target = branch_target(ins)
        if target is None or target >= ins.addr or target not in index:
            continue
        start = index[target]
        loops[start] = max(loops.get(start, i), i)
    return sorted(loops.items())


def main_loop(instrs: Sequence[Instr]) -> list[Instr]:
    """The body of the innermost loop with the most FFMA (ties: the shortest); [] when there is
    no loop. Innermost: it overlaps no shorter loop with FFMA (a persistent kernel's loop over
    tiles holds the main loop, and more FFMA than it: its peeled phases; where the compiler lays a
    loop's back edge out past an inner loop's start, the two spans overlap without nesting, and
    the shorter is the inner one)."""
    def ffma(start: int, end: int) -> int:
        return sum(1 for ins in instrs[start : end + 1] if ins.base == "FFMA")

    loops = [(s, e) for s, e in find_loops(instrs) if ffma(s, e)]
    inner = [(s, e) for s, e in loops
             if not any((s2, e2) != (s, e) and s2 <= e and s <= e2 and e2 - s2 < e - s for s2, e2 in loops)]
    best = max(inner, key=lambda se: (ffma(*se), -(se[1] - se[0])), default=None)
    return list(instrs[best[0] : best[1] + 1]) if best else []


def loop_histogram(instrs: Sequence[Instr]) -> dict[str, float]:
    """``histogram`` of the main loop with a ``loop_`` prefix, plus load instructions per FFMA.

    ``loop_lds_per_ffma`` = (LDS of any width + LDSM) / FFMA: every shared-load instruction.
    ``loop_ldg_per_ffma`` = (LDG of any width + LDGSTS) / FFMA: every global-load instruction,
    synchronous or asynchronous (Triton's pipelined loops and K11 load with LDGSTS only).
    NaN when there is no loop with FFMA.
    """
    h = histogram(main_loop(instrs))
    out: dict[str, float] = {f"loop_{k}": v for k, v in h.items()}
    ffma = h["FFMA"]
    out["loop_lds_per_ffma"] = (h["LDS"] + h["LDSM"]) / ffma if ffma else math.nan
    out["loop_ldg_per_ffma"] = (h["LDG"] + h["LDGSTS"]) / ffma if ffma else math.nan
    return out


SCHEDULE_KEYS = ("loop_stall_cycles", "loop_waits", "loop_reuse", "loop_bank2", "loop_bank4")
_SOURCE_REG = re.compile(r"^[-|!]*R(\d+)\b")
BANKED = ("FFMA", "IMAD", "FMUL", "FADD")  # FP32-pipe instructions that read up to three registers


# the rules bank_conflicts_each counts under
BANK_RULES = ("mod-extra", "mod-all3", "pair-extra", "pair-all3", "mod-extra-ab", "pair-extra-ab")


def bank_conflicts(loop: Sequence[Instr], banks: int, rule: str = "mod-extra") -> int:
    """:func:`bank_conflicts_each` summed over the loop."""
    return sum(bank_conflicts_each(loop, banks, rule))


def bank_conflicts_each(loop: Sequence[Instr], banks: int, rule: str = "mod-extra") -> list[int]:
    """Register reads of the loop's FP32-pipe instructions (FFMA, IMAD, FMUL, FADD) that share a
    bank with another read of the same instruction: per instruction, its distinct source registers
    (slots a, b, c; RZ, constants and immediates read none), less those the reuse cache serves (the
    previous instruction set the reuse flag of that slot and read the same register there), counted
    per bank. ``rule`` names the bank of a register and what a bank serves in a cycle:

    * ``mod-extra``: bank = register number mod ``banks``, one read per bank and cycle: the reads
      of a bank beyond the first count;
    * ``mod-all3``: bank = register number mod ``banks``, two reads per bank and cycle: the reads
      of a bank beyond the second count (with 2 banks, a conflict only where all three sources
      share one: the rule Jia et al. measured on Volta and Turing);
    * ``pair-extra``, ``pair-all3``: the same with 64-bit-wide banks, bank = (register number // 2)
      mod ``banks`` (an even/odd pair in one bank);
    * a rule ending in ``-ab``: only slots a and b are read through the banks (slot c, an FFMA's
      accumulator, is not counted).

    A count under a stated rule, not a claim about the hardware: which rule (if any) costs
    cycles on a GPU is for a fit or a microbenchmark to say. One count per instruction."""
    if rule not in BANK_RULES:
        raise ValueError(f"bank rule {rule!r}: expected one of {', '.join(BANK_RULES)}")
    width = 2 if rule.startswith("pair") else 1
    ports = 2 if "all3" in rule else 1
    slots = 2 if rule.endswith("-ab") else 3
    counts = []
    prev: dict[int, int] = {}  # slot -> register the previous instruction keeps in the reuse cache
    for ins in loop:
        ops = [o.strip() for o in ins.operands.split(",")]
        regs = {}
        if ins.base in BANKED:
            for slot, text in enumerate(ops[1:4]):
                m = _SOURCE_REG.match(text)
                if m:
                    regs[slot] = int(m[1])
        read = {r for slot, r in regs.items() if prev.get(slot) != r and slot < slots}
        per_bank: dict[int, int] = {}
        for r in read:
            b = (r // width) % banks
            per_bank[b] = per_bank.get(b, 0) + 1
        counts.append(sum(max(0, n - ports) for n in per_bank.values()))
        reuse = ins.control.reuse if ins.control else 0
        prev = {slot: r for slot, r in regs.items() if (reuse >> slot) & 1}
    return counts


def loop_schedule(instrs: Sequence[Instr]) -> dict[str, float]:
    """What the main loop's scheduling words say (:mod:`study.toolchain.control`), per pass of the
    loop by one warp: ``loop_stall_cycles`` the sum of the stall counts (the fewest cycles the
    warp needs for a pass, alone on its scheduler), ``loop_waits`` the instructions that wait on
    a scoreboard (a wait mask, or DEPBAR's count), ``loop_reuse`` the operand reuse flags set,
    ``loop_bank2`` / ``loop_bank4`` the register reads :func:`bank_conflicts` counts with 2 and 4
    banks. NaN where there is no loop with FFMA or the dump has no scheduling words."""
    return schedule(main_loop(instrs))


def schedule(loop: Sequence[Instr]) -> dict[str, float]:
    """:func:`loop_schedule` of a loop body already found."""
    if not loop or any(i.control is None for i in loop):
        return dict.fromkeys(SCHEDULE_KEYS, math.nan)
    return {
        "loop_stall_cycles": sum(i.control.stall for i in loop),
        "loop_waits": sum(1 for i in loop if i.control.wait or i.base == "DEPBAR"),
        "loop_reuse": sum(bin(i.control.reuse).count("1") for i in loop),
        "loop_bank2": bank_conflicts(loop, 2),
        "loop_bank4": bank_conflicts(loop, 4),
    }

