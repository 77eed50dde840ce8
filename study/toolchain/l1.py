"""What each memory access of a kernel's main loop costs the SM's L1 / shared-memory unit, from
its lanes' addresses in the loop's first pass (:mod:`study.toolchain.lanes`), and which global
loads read again what an earlier load of the same pass brought into the L1.

A global load whose 32-byte sectors an earlier global load of the warp's pass touched finds them
in the L1 (or on their way there): its data is in place an L1 hit's latency after it is served,
or when the earlier load's is, whichever is later, not a trip to memory's (:class:`Reread`). A
thread that reads one A value for each of its columns, once per column, reads it from the L1
after the first. A load of new sectors that lie in the L2's fetch granules an earlier load of the
pass brought from DRAM finds them in the L2, an L2 hit's latency away.

An asynchronous copy that bypasses the L1 and whose lanes read one word more than once (rows
clamped to the matrix's one row at M = 1) is a :class:`Repeated`: the L2 serves such requests
for the same words one at a time, those of every warp, and of every block where all blocks copy
the same words in the pass (a probe of the copies' time against the blocks, warps and copies
asking: docs/notes/predict.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from study.toolchain.access import copy_conflicts, copy_read_cycles, global_cycles, wavefronts
from study.toolchain.lanes import GLOBAL_ACCESS, address_operand, play
from study.toolchain.sass import Instr

SECTOR = 32  # bytes: the L1 fills a line a sector at a time
# bytes the L2 fetches from DRAM for a sector missed: the driver's default maximum L2 fetch
# granularity (cudaLimitMaxL2FetchGranularity), read on the H200
GRANULE = 64


class _Cost(int):
    """An access's L1 cycles (an int, as every access's cost) with what the simulation needs
    besides: equal only to one of the same kind with the same ``_fields``."""

    _fields: tuple[str, ...] = ()

    def _key(self) -> tuple:
        return (type(self), int(self), *(getattr(self, f) for f in self._fields))

    def __eq__(self, other) -> bool:
        return isinstance(other, _Cost) and self._key() == other._key()

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._key())


class Reread(_Cost):
    """The L1 cycles of a global load (an int, as every access's cost) whose sectors the load at
    address ``after`` of the loop brought into the L1 earlier in the same pass, or with ``l2``
    into the L2 only (each of its sectors in a :data:`GRANULE` an earlier load fetched); ``after``
    None: no lane runs it (its guard holds every lane off). Equal only to a Reread of the same
    load."""

    after: int | None
    l2: bool
    _fields = ("after", "l2")

    def __new__(cls, cycles: int, after: int | None = None, l2: bool = False) -> Reread:
        out = super().__new__(cls, cycles)
        out.after, out.l2 = after, l2
        return out

    def __repr__(self) -> str:
        at = self.after if self.after is None else hex(self.after)
        return f"Reread({int(self)}, after={at}{', l2' if self.l2 else ''})"


class Repeated(_Cost):
    """The L1 cycles of an asynchronous copy that bypasses the L1 (LDGSTS.BYPASS) and whose lanes
    read one word more than once: ``copies`` of the warp's pass read its words (itself included;
    each warp of the block is taken to read them alike), and with ``blocks`` every block of the
    grid's row copies the same words (the block after it along the grid's x does)."""

    copies: int
    blocks: bool
    _fields = ("copies", "blocks")

    def __new__(cls, cycles: int, copies: int = 1, blocks: bool = False) -> Repeated:
        out = super().__new__(cls, cycles)
        out.copies, out.blocks = copies, blocks
        return out

    def __repr__(self) -> str:
        return f"Repeated({int(self)}, copies={self.copies}{', blocks' if self.blocks else ''})"


def words(addrs: Sequence[int | None], width_bits: int) -> tuple[set[int], bool]:
    """The words (of the access's width) a warp's access reads, and whether a word is read by
    more than one of its running lanes."""
    width = max(4, width_bits // 8)
    running = [a // width for a in addrs if a is not None]
    return set(running), len(set(running)) < len(running)


def repeated(loop: Sequence[Instr], addrs: dict, later: Callable[[], dict]) -> dict[int, tuple[int, bool]]:
    """The copies of ``loop`` that bypass the L1 with lanes on one word more than once, by
    address: their :class:`Repeated` ``copies`` and ``blocks``, given their lanes' ``addrs`` (warp
    0 of block 0) and ``later``, which plays the block after it along the grid's x."""
    bypass = [i for i in loop if i.base == "LDGSTS" and "BYPASS" in i.opcode and addrs.get(i.addr)]
    read = {i.addr: words(addrs[i.addr], i.width) for i in bypass}
    hot = [i for i in bypass if read[i.addr][1]]
    if not hot:
        return {}
    other = later()
    out = {}
    for i in hot:
        mine = read[i.addr][0]
        copies = sum(1 for j in hot if read[j.addr][0] & mine)
        out[i.addr] = (copies, other.get(i.addr) == addrs[i.addr])
    return out


def sectors(addrs: Sequence[int | None], width_bits: int) -> set[int]:
    """The 32-byte sectors a warp's access touches (lanes given as None do not run it)."""
    width = max(4, width_bits // 8)
    return {(a + off) // SECTOR for a in addrs if a is not None for off in (0, width - 1)}


def l1_cycles(instrs: Sequence[Instr], loop: Sequence[Instr],
              params: dict[int, int] | None = None) -> list[int | None]:
    """Per instruction of ``loop``: the cycles its access holds the SM's L1/shared-memory unit
    where its lanes' addresses are known (:func:`study.toolchain.lanes.lane_addresses`): a shared
    access's wavefronts, a global load's (:func:`study.toolchain.access.global_cycles`; a
    :class:`Reread` where an earlier load of the pass touched its sectors), an asynchronous
    copy's read (:func:`study.toolchain.access.copy_read_cycles`) plus what the bank conflicts of
    its write into shared memory add (:func:`study.toolchain.access.copy_conflicts`), either where
    only it is known (a :class:`Repeated` where its lanes repeat words past the L1); else None (not
    an access, or not known)."""
    addrs, dest = play(instrs, loop, params)
    hot = repeated(loop, addrs, lambda: play(instrs, loop, params, block=1)[0]) if params else {}

    # a store guarded @!P beside the same store guarded @P (the zero a bounds check writes in
    # place of the loaded value): each lane runs one of the two, so the unit serves one of them
    guarded = {(i.base, address_operand(i), i.pred) for i in loop if i.pred}
    first: dict[int, int] = {}  # sector -> the address of the load that first touched it this pass
    fetched: dict[int, int] = {}  # the same for the L2's granules

    def cost(i):
        a = addrs.get(i.addr)
        d = dest.get(i.addr)
        if i.base == "LDGSTS" and (a is not None or d is not None):
            # either part where only it is known (a copy whose lines are not known holds no time
            # for them, as a global load's)
            read = copy_read_cycles(a, i.width) if a is not None else 0
            cycles = read + (copy_conflicts(d, i.width) if d is not None else 0)
            return Repeated(cycles, *hot[i.addr]) if i.addr in hot else cycles
        if a is None:
            return None
        if i.pred.startswith("@!") and (i.base, address_operand(i), "@" + i.pred[2:]) in guarded:
            return 0
        if i.base not in GLOBAL_ACCESS:
            return wavefronts(a, i.width)
        cycles = global_cycles(a, i.width)
        if i.base != "LDG" or i.pred == "@!PT":
            return cycles
        touched = sectors(a, i.width)
        if not touched:
            return Reread(cycles, None)
        if touched <= first.keys():
            return Reread(cycles, max(first[s] for s in touched))
        for s in touched - first.keys():
            first[s] = i.addr
        granules = {s * SECTOR // GRANULE for s in touched}
        if granules <= fetched.keys():
            return Reread(cycles, max(fetched[g] for g in granules), l2=True)
        for g in granules - fetched.keys():
            fetched[g] = i.addr
        return cycles
    return [cost(i) for i in loop]
