"""The scheduling word of an instruction: what ptxas tells the warp scheduler, read from the
encoding ``cuobjdump -sass`` prints beside each instruction.

From Volta (sm_70) on, an instruction is 128 bits, printed as two 64-bit words; the top bits of
the second word are its control code, which the hardware obeys instead of tracking dependences
itself:

* ``stall`` (4 bits): cycles before this warp may issue its next instruction. ptxas sets it to
  cover the fixed latency of the results the next instructions read (an FFMA's result is read
  some cycles later; the stalls between them add up to that latency).
* ``yield_bit`` (1 bit): the scheduler's hint to switch warps after this instruction, as encoded
  (the bit is clear where the hint is given).
* ``write_sb`` / ``read_sb`` (3 bits each, 7 = none): one of six scoreboards an instruction of
  variable latency (shared, global, local and constant loads, special registers, ...) counts up
  on issue and down when its result is written (``write_sb``) or when its sources have been read
  and may be overwritten (``read_sb``).
* ``wait`` (6 bits, a mask): the scoreboards whose count must be zero before this instruction
  issues: the consumer of a variable-latency result waits on its producer's scoreboard.
* ``reuse`` (4 bits): per source operand slot, keep the value in the operand reuse cache for the
  next instruction that reads the same register in the same slot (no register-file read, no
  bank conflict for it).

Bit positions within the second word: stall 41-44, yield 45, write 46-48, read 49-51, wait 52-57,
reuse 58-61. Before Volta the control codes are separate words and are not read here.
"""

from __future__ import annotations

from dataclasses import dataclass

NO_SCOREBOARD = 7


@dataclass(frozen=True)
class Control:
    stall: int
    yield_bit: int
    write_sb: int | None
    read_sb: int | None
    wait: frozenset[int]
    reuse: int

    def __str__(self) -> str:
        """The usual short form: wait mask, read/write scoreboards, yield, stall."""
        mask = "".join(str(i) if i in self.wait else "-" for i in range(6))
        r = "-" if self.read_sb is None else self.read_sb
        w = "-" if self.write_sb is None else self.write_sb
        return f"B{mask}:R{r}:W{w}:{'-' if self.yield_bit else 'Y'}:S{self.stall:02d}"


def decode(hi: int) -> Control:
    """The control code of an instruction whose second encoding word is ``hi``."""
    c = (hi >> 41) & ((1 << 23) - 1)
    w, r = (c >> 5) & 7, (c >> 8) & 7
    return Control(
        stall=c & 0xF,
        yield_bit=(c >> 4) & 1,
        write_sb=None if w == NO_SCOREBOARD else w,
        read_sb=None if r == NO_SCOREBOARD else r,
        wait=frozenset(i for i in range(6) if (c >> (11 + i)) & 1),
        reuse=(c >> 17) & 0xF,
    )
