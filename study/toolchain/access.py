"""What one warp's memory access costs the SM's L1 / shared-memory unit, from its lanes'
addresses (:mod:`study.toolchain.lanes` reads them from the SASS): the cycles a global access
holds the L1 (its lines' tags and its data's banks), the wavefronts a shared access takes, and what
an asynchronous copy's bank conflicts add. A lane given as None does not run the access (a bounds
check ended it)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

LANES = 32
# Lines whose tags the L1 looks up in one cycle: read off K1's time against A's row stride on the
# H200 (sm_90), where 32 lanes on 32 lines fall in 32 banks (docs/notes/predict.md, "The L1 serves
# a global load by its banks too"; the probe in docs/notes/predict/offshape/).
TAGS_PER_CYCLE = 4


def lines(addrs: Sequence[int], width_bits: int, line: int = 128) -> int:
    """The 128-byte lines one warp's global access touches: the distinct lines of every lane's
    bytes."""
    width = max(4, width_bits // 8)
    return len({(a + off) // line for a in addrs if a is not None for off in (0, width - 1)})


def wavefronts(addrs: Sequence[int], width_bits: int, banks: int = 32, bank_bytes: int = 4) -> int:
    """Shared-memory cycles of one warp's access: each lane touches ``width_bits / 8`` bytes
    from its address. Accesses wider than 32 bits are served a half-warp at a time (16 lanes),
    32-bit ones a warp at a time; within one, a cycle serves one distinct word per bank (lanes
    reading the same word share it: a broadcast), so the group takes as many cycles as its
    busiest bank has distinct words."""
    width = max(4, width_bits // 8)
    group = LANES if width == 4 else LANES // 2
    total = 0
    for g in range(0, LANES, group):
        words: set[int] = set()
        for a in addrs[g : g + group]:
            if a is None:  # a lane an EXIT ended
                continue
            for off in range(0, width, bank_bytes):
                words.add((a + off) // bank_bytes)
        per_bank: dict[int, int] = {}
        for w in words:
            per_bank[w % banks] = per_bank.get(w % banks, 0) + 1
        if words:
            total += max(per_bank.values())
    return total


def global_cycles(addrs: Sequence[int], width_bits: int) -> int:
    """The cycles one warp's global load holds the L1: its lines' tags, ``TAGS_PER_CYCLE`` a cycle,
    or its data's banks, as a shared access's (:func:`wavefronts`: lanes on one bank in other
    lines wait their turn), whichever takes longer. A coalesced load takes a cycle a line either
    way; lanes each on a line of its own take their tags' cycles where their words fall in other
    banks, and a cycle a lane where they share one (a row stride that is a multiple of 128 bytes)."""
    return max(-(-lines(addrs, width_bits) // TAGS_PER_CYCLE), wavefronts(addrs, width_bits))


def copy_read_cycles(addrs: Sequence[int], width_bits: int) -> int:
    """The cycles an asynchronous copy's (LDGSTS) read holds the L1: the unit moves 128 bytes of
    lanes at a time (the warp's 32 lanes of a 4-byte copy, each quarter-warp of a 16-byte one), a
    cycle for each line the group's lanes touch and no fewer than the group's lanes that read one
    word (one read is not handed to several shared-memory destinations at once); no fewer than a
    global load's (:func:`global_cycles`). Read off ncu's shared wavefronts of each LDGSTS on
    sm_90 (docs/notes/predict.md, "An asynchronous copy's read"): G15's 16-byte copies of A, each
    quarter-warp on 8 rows, 32; T12p's, the same bytes 4 lanes a row, 8; G12T's 4-byte copies
    compiled for M = 1, 32 lanes on one word, 32."""
    width = max(4, width_bits // 8)
    group = max(1, 128 // width)
    total = 0
    for g in range(0, LANES, group):
        running = [a for a in addrs[g : g + group] if a is not None]
        if not running:
            continue
        total += max(lines(running, width_bits), max(Counter(running).values()))
    return max(total, global_cycles(addrs, width_bits))


def copy_conflicts(addrs: Sequence[int], width_bits: int) -> int:
    """The wavefronts an asynchronous copy's (LDGSTS) write into shared memory takes beyond one per
    global line it reads: those its bank conflicts add over a conflict-free write of the same
    bytes (:func:`wavefronts` less one per 128 bytes). Read off the H200's counters of each LDGSTS
    (ncu's L1 shared wavefronts per instruction, docs/notes/g12.md): K12's copies of A (2 lines,
    2-way: 3 wavefronts) and of B (1 line: 1), K15's 16-byte copies of B (4 lines: 4) and G12's
    copies of A (8 lines, 4-way: 11) each take their lines plus this."""
    width = max(4, width_bits // 8)
    running = sum(1 for a in addrs if a is not None)
    return max(0, wavefronts(addrs, width_bits) - max(1, -(-running * width // 128)))
