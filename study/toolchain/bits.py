"""The bit-level steps of the lanes interpreter (:mod:`study.toolchain.lanes`): LOP3's table,
PRMT's bytes, and a register's bits as a float and back (an integer division's reciprocal)."""

from __future__ import annotations

import struct

MASK = 0xFFFFFFFF


def lop3(a: int, b: int, c: int, lut: int) -> int:
    """LOP3: each bit of the result is bit (a b c) of ``lut``, a's bit the highest."""
    r = 0
    for bit in range(32):
        idx = (((a >> bit) & 1) << 2) | (((b >> bit) & 1) << 1) | ((c >> bit) & 1)
        r |= ((lut >> idx) & 1) << bit
    return r


def f32(bits: int) -> float:
    """A register's 32 bits read as an IEEE single."""
    return struct.unpack("<f", struct.pack("<I", bits & MASK))[0]


def f32_bits(x: float) -> int:
    """An IEEE single's 32 bits (an infinity where it overflows)."""
    try:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:
        return 0x7F800000 if x > 0 else 0xFF800000


def prmt(a: int, b: int, selector: int) -> int:
    """PRMT's default mode: byte i of the result is byte (selector >> 4 i) & 7 of b:a."""
    pool = (a & MASK) | ((b & MASK) << 32)
    return sum(((pool >> (8 * ((selector >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4))
