"""What each memory access of a kernel's main loop costs the SM's L1 / shared-memory unit, from
its lanes' addresses in the loop's first pass (:mod:`study.toolchain.lanes`), and which global
loads read again what an earlier load of the same pass brought into the L1.

A global load whose 32-byte sectors an earlier global load of the warp's pass touched finds them
in the L1 (or on their way there): its data is in place an L1 hit's latency after it is served,
or when the earlier load's is, whichever is later, not a trip to memory's (:class:`Reread`). A
thread that reads one A value for each of its columns, once per column, reads it from the L1
after the first. A load of new sectors that lie in the L2's fetch granules an earlier load of the
pass brought from DRAM finds them in the L2, an L2 hit's latency away."""

from __future__ import annotations

from collections.abc import Sequence

from study.toolchain.access import copy_conflicts, copy_read_cycles, global_cycles, wavefronts
from study.toolchain.lanes import GLOBAL_ACCESS, address_operand, play
from study.toolchain.sass import Instr

SECTOR = 32  # bytes: the L1 fills a line a sector at a time
# bytes the L2 fetches from DRAM for a sector missed: the driver's default maximum L2 fetch
# granularity (cudaLimitMaxL2FetchGranularity), read on the H200
GRANULE = 64


class Reread(int):
    """The L1 cycles of a global load (an int, as every access's cost) whose sectors the load at
    address ``after`` of the loop brought into the L1 earlier in the same pass, or with ``l2``
    into the L2 only (each of its sectors in a :data:`GRANULE` an earlier load fetched); ``after``
    None: no lane runs it (its guard holds every lane off). Equal only to a Reread of the same
    load."""

    after: int | None
    l2: bool

    def __new__(cls, cycles: int, after: int | None = None, l2: bool = False) -> Reread:
        out = super().__new__(cls, cycles)
        out.after, out.l2 = after, l2
        return out

    def __eq__(self, other) -> bool:
        return isinstance(other, Reread) and self._key() == other._key()

    def _key(self) -> tuple:
        return int(self), self.after, self.l2

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        at = self.after if self.after is None else hex(self.after)
        return f"Reread({int(self)}, after={at}{', l2' if self.l2 else ''})"


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
    only it is known; else None (not an access, or not known)."""
    addrs, dest = play(instrs, loop, params)

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
            return read + (copy_conflicts(d, i.width) if d is not None else 0)
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
