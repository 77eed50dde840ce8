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
from study.toolchain.sass import Instr, branch_target

COMPARES = {"ISETP", "UISETP", "VOTE", "VOTEU", "MATCH"}


def segments(loop: Sequence[Instr]) -> list[tuple[int, int]]:
    """(first, last) indices in ``loop`` of each waterfall loop it holds: a ``BRA.U.ANY`` back to
    an ``ELECT`` of the loop, with no compare between them."""
    out = []
    for j, ins in enumerate(loop[:-1]):
        if ins.base != "BRA" or "U" not in ins.mods or "ANY" not in ins.mods:
            continue
        target = branch_target(ins)
        i = next((i for i in range(j - 1, -1, -1) if loop[i].addr == target), None)
        if i is None or loop[i].base != "ELECT":
            continue
        if any(x.base in COMPARES for x in loop[i:j]):
            continue
        out.append((i, j))
    return out


def is_waterfall(code: Sequence[Instr]) -> bool:
    """Whether the loop ``code`` (its back edge last) is itself a waterfall loop: :func:`segments`
    of it, its first instruction written again after the back edge (which :func:`segments` looks
    for before the loop's last instruction), finds one loop spanning the whole of it."""
    return bool(code) and segments([*code, code[0]]) == [(0, len(code) - 1)]


def turns(instrs: Sequence[Instr], loop: Sequence[Instr], params: dict[int, int] | None) -> dict[int, int]:
    """By the address of its ELECT: how many lanes of warp 0 enter each waterfall loop of
    ``loop``, where the lanes interpreter knows it: its running lanes there, less those its guard
    or a guarded branch of the loop over the waterfall loop (``if (threadIdx.x == 0)``) leaves out.
    A waterfall loop whose lanes are not known is left out (played once)."""
    firsts = {loop[i].addr for i, _ in segments(loop)}
    if not firsts:
        return {}
    in_loop = {i.addr for i in loop}
    state = lanes.Lanes(params)
    skips: list[tuple[int, int, tuple | None]] = []  # a forward branch: at, to, the lanes taking it
    out: dict[int, int] = {}
    for ins in lanes.walked(instrs, loop, state):
        to = branch_target(ins) if ins.pred and ins.addr in in_loop else None
        if to is not None and to > ins.addr:
            skips.append((ins.addr, to, state.pred(ins.pred.lstrip("@"))))
        if ins.addr in firsts and ins.addr not in out:
            guard = state.pred(ins.pred.lstrip("@")) if ins.pred else tuple(state.active)
            over = [taken for at, to, taken in skips if at < ins.addr < to]
            if guard is not None and all(t is not None for t in over):
                out[ins.addr] = sum(a and g and not any(t[n] for t in over)
                                    for n, (a, g) in enumerate(zip(state.active, guard)))
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
