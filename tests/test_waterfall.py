"""Waterfall loops (study.toolchain.waterfall): found in a hand-made main loop, turned once per lane
that enters them (less the lanes a branch over them takes), written out that many times; a loop
that compares values left alone; and the loop nvcc writes for a 16-byte cuda::memcpy_async a
lane (a bulk copy a turn), compiled here."""

from __future__ import annotations

import pytest

from study.toolchain import waterfall
from study.toolchain.sass import Instr
from tests.conftest import needs_tools


def ins(addr: int, op: str, operands: str, pred: str = "") -> Instr:
    return Instr(addr, op, operands, pred)


def program(lanes_in: int, compare: bool = False) -> list[Instr]:
    """A main loop (0x30 .. 0xa0) whose waterfall loop (0x40 .. 0x80) lanes 0 .. lanes_in - 1 enter."""
    return [
        ins(0x00, "S2R", "R0, SR_TID.X"),
        ins(0x10, "ISETP.LT.AND", f"P2, PT, R0, {hex(lanes_in)}, PT"),
        ins(0x20, "PLOP3.LUT", "P0, PT, P2, PT, PT, 0x80, 0x0"),
        ins(0x30, "FFMA", "R4, R4, R4, R4"),
        ins(0x40, "ELECT", "P1, URZ, PT", "@P0"),
        ins(0x50, "R2UR", "UR4, R0", "@P1"),
        ins(0x60, "ISETP.EQ.AND" if compare else "PLOP3.LUT",
            "P0, PT, R0, UR4, PT" if compare else "P0, PT, P1, PT, PT, 0x8, 0x0", "@P1"),
        ins(0x70, "UBLKCP.S.G", "[UR4], [UR6], UR8"),
        ins(0x80, "BRA.U.ANY", "0x40", "@P0"),
        ins(0x90, "FFMA", "R5, R5, R5, R5"),
        ins(0xa0, "BRA", "0x30"),
    ]


def test_a_waterfall_loop_turns_once_per_lane_that_enters_it():
    prog = program(8)
    loop = prog[3:]
    assert waterfall.segments(loop) == [(1, 5)]
    assert waterfall.turns(prog, loop, None) == {0x40: 8}
    body, cycles = waterfall.expand(loop, list(range(len(loop))), {0x40: 8})
    assert len(body) == len(loop) + 7 * 5
    assert [i.addr for i in body[:3]] == [0x30, 0x40, 0x50] and body[-1].addr == 0xa0
    assert sum(1 for i in body if i.base == "UBLKCP") == 8
    assert cycles[1:6] == cycles[6:11] == [1, 2, 3, 4, 5]  # each turn keeps its instructions' cycles


def test_a_waterfall_loop_on_its_own_is_told_apart_from_the_loop_around_it():
    prog = program(8)
    assert waterfall.is_waterfall(prog[4:9])  # the ELECT .. BRA.U.ANY
    assert not waterfall.is_waterfall(prog[3:])  # the main loop holding it
    assert not waterfall.is_waterfall(program(8, compare=True)[4:9])


def test_a_loop_that_compares_values_is_left_as_it_is():
    """A compare in the loop may retire several lanes a turn: no rule for it, one turn played."""
    prog = program(32, compare=True)
    loop = prog[3:]
    assert waterfall.segments(loop) == []
    assert waterfall.expand(loop, [None] * len(loop), waterfall.turns(prog, loop, None))[0] == loop


@pytest.mark.parametrize("guard,want", [
    ("ISETP.NE.AND P3, PT, R0, RZ, PT", {0x40: 1}),  # if (threadIdx.x == 0): one lane, one turn
    ("FSETP.GT.AND P3, PT, R0, RZ, PT", {}),  # a branch on lanes not known: left out, played once
])
def test_a_branch_over_the_waterfall_loop_leaves_its_lanes_out(guard, want):
    prog = program(32)
    op, operands = guard.split(" ", 1)
    prog[3:4] = [ins(0x30, op, operands), ins(0x38, "BRA", "0x90", "@P3")]
    loop = prog[3:]
    assert waterfall.turns(prog, loop, None) == want


@needs_tools
def test_a_memcpy_async_of_16_bytes_a_lane_is_a_bulk_copy_a_turn(tmp_path):
    """nvcc (sm_90) issues each lane's 16-byte cuda::memcpy_async with a cuda::barrier as a bulk copy
    (UBLKCP) in a waterfall loop: played, the loop turns 32 times a pass, once per lane."""
    import subprocess

    from study.predict import model
    from study.toolchain import sass, tools

    src, cubin = tmp_path / "copy.cu", tmp_path / "copy.cubin"
    src.write_text(COPY_KERNEL)
    cmd = [tools.find_nvcc(), "-O3", "-std=c++17", "-arch=sm_90", "-cubin", "-o", str(cubin), str(src)]
    subprocess.run(cmd, check=True, capture_output=True)
    instrs = sass.dump_sass(cubin, "copy_rows")
    loop = sass.main_loop(instrs)
    found = waterfall.segments(loop)
    assert len(found) == 1 and any(i.base == "UBLKCP" for i in loop[found[0][0]:found[0][1]])
    first = loop[found[0][0]].addr
    assert waterfall.turns(instrs, loop, model.sgemm_params((128, 128, 4096), None)) == {first: 32}


COPY_KERNEL = r"""
#include <cuda/barrier>
extern "C" __global__ void copy_rows(int M, int N, int K, float alpha, const float *A, const float *B,
                                     float beta, float *C) {
    __shared__ __align__(16) float Bs[2][4 * 128];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar[2];
    if (threadIdx.x == 0) { init(&bar[0], blockDim.x); init(&bar[1], blockDim.x); }
    __syncthreads();
    float acc = 0.f;
    for (int k = 0; k < K; k += 4) {
        const int s = (k / 4) & 1;
        cuda::memcpy_async(&Bs[s][4 * threadIdx.x], &B[(size_t)k * N + 4 * threadIdx.x],
                           cuda::aligned_size_t<16>(16), bar[s]);
        bar[s].arrive_and_wait();
        acc = fmaf(Bs[s][threadIdx.x], alpha, acc);
        __syncthreads();
    }
    C[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"""
