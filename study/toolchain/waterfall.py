"""Waterfall loops in a main loop's SASS: a loop that hands one lane's values to uniform
registers a turn and closes with ``BRA.U.ANY`` while a lane is left. nvcc writes one where an
instruction takes uniform operands only and the program gives it a value per lane, e.g. a bulk
copy (``UBLKCP``) for each lane's ``cuda::memcpy_async`` of 16 bytes:

    @P0 ELECT P1, URZ, PT            a lane of those with P0 set
    @P1 R2UR UR16, R64 ...           its values, uniform
    @P1 PLOP3.LUT P0, PT, P1, ...    that lane done
        UBLKCP.S.G [UR18], [UR16], UR14
    @P0 BRA.U.ANY <the ELECT>        again while any lane has P0

Each turn retires the elected lane, so the loop turns once per lane that enters it. The main
loop's SASS holds it once; :func:`expand` writes it out as many times as it turns, so that the
simulation plays every turn. A loop that compares values (and so may retire several lanes a
turn) is left as it is."""

from __future__ import annotations

from collections.abc import Sequence

from study.toolchain import lanes
from study.toolchain.sass import Instr

COMPARES = {"ISETP", "UISETP", "VOTE", "VOTEU", "MATCH"}


def segments(loop: Sequence[Instr]) -> list[tuple[int, int]]:
    """(first, last) indices in ``loop`` of each waterfall loop it holds: a ``BRA.U.ANY`` back to
    an ``ELECT`` of the loop, with no compare between them."""
    out = []
    for j, ins in enumerate(loop[:-1]):
        if ins.base != "BRA" or "U" not in ins.mods or "ANY" not in ins.mods or not ins.operands:
            continue
        target = int(ins.operands.split(",")[-1].strip(), 16)
        i = next((i for i in range(j - 1, -1, -1) if loop[i].addr == target), None)
        if i is None or loop[i].base != "ELECT":
            continue
        if any(x.base in COMPARES for x in loop[i:j]):
            continue
        out.append((i, j))
    return out


def turns(instrs: Sequence[Instr], loop: Sequence[Instr], params: dict[int, int] | None) -> dict[int, int]:
    """By the address of its ELECT: how many lanes of warp 0 enter each waterfall loop of
    ``loop`` (the lanes interpreter's running lanes there, those its guard leaves where known)."""
    firsts = {loop[i].addr for i, _ in segments(loop)}
    if not firsts:
        return {}
    state = lanes.Lanes(params)
    out: dict[int, int] = {}
    for ins in lanes.walked(instrs, loop, state):
        if ins.addr in firsts and ins.addr not in out:
            guard = state.pred(ins.pred.lstrip("@")) if ins.pred else None
            running = [a and (guard is None or g) for a, g in zip(state.active, guard or state.active)]
            out[ins.addr] = sum(running)
        lanes.step(state, ins)
    return out


def expand(loop: list, cycles: list, counts: dict[int, int]) -> tuple[list, list]:
    """``loop`` and its per-instruction ``cycles`` with each waterfall loop written out as many
    times as ``counts`` says it turns (at least once)."""
    body, each = list(loop), list(cycles)
    for i, j in reversed(segments(loop)):
        n = max(1, counts.get(loop[i].addr, 1))
        body[i:j + 1] = loop[i:j + 1] * n
        each[i:j + 1] = cycles[i:j + 1] * n
    return body, each
