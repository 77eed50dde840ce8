"""Each warp's pass through a loop (study.toolchain.paths): a branch on the warp's own thread
indices followed, one whose lanes disagree falling through, a rolled inner loop written out as many
times as its compare says; the simulation plays each warp's pass, its n-th barrier meeting the
others' n-th; and a kernel whose two halves take turns, compiled here."""

from __future__ import annotations

import subprocess

from study.predict import issue
from study.toolchain import paths
from study.toolchain.sass import Instr
from tests.conftest import needs_tools


def at(addr: int, op: str, operands: str = "", pred: str = "") -> Instr:
    return Instr(addr, op, operands, pred)


def halves(bound: int) -> list[Instr]:
    """A loop (0x30 .. 0x90) whose threads past ``bound`` branch to their own code (0x70)."""
    return [
        at(0x00, "S2R", "R0, SR_TID.X"),
        at(0x10, "ISETP.GT.U32.AND", f"P0, PT, R0, {hex(bound)}, PT"),
        at(0x20, "MOV", "R1, RZ"),
        at(0x30, "BRA", "0x70", "@P0"),
        at(0x40, "FFMA", "R4, R4, R4, R4"),
        at(0x50, "FFMA", "R5, R5, R5, R5"),
        at(0x60, "BRA", "0x80"),
        at(0x70, "LDG.E", "R6, desc[UR4][R2.64]"),
        at(0x80, "BAR.SYNC.DEFER_BLOCKING", "0x0"),
        at(0x90, "BRA", "0x30"),
    ]


def addrs(code) -> list[int]:
    return [i.addr for i in code]


def test_the_warps_past_a_bound_on_the_thread_index_take_their_own_branch():
    prog = halves(63)  # warps 2 and 3 are past thread 63
    each = paths.passes_of(prog, prog[3:], None, 4)
    first, second = [0x30, 0x40, 0x50, 0x60, 0x80, 0x90], [0x30, 0x70, 0x80, 0x90]
    assert [addrs(p) for p in each] == [first, first, second, second]


def test_a_branch_whose_lanes_disagree_falls_through():
    """Threads past 15 branch: warp 0's lanes disagree, so it plays the code in address order up to
    the unconditional branch; warp 1's all branch."""
    prog = halves(15)
    each = paths.passes_of(prog, prog[3:], None, 2)
    assert [addrs(p) for p in each] == [[0x30, 0x40, 0x50, 0x60, 0x80, 0x90], [0x30, 0x70, 0x80, 0x90]]


def test_a_branch_on_a_second_predicate_is_followed_where_both_hold():
    """``@P0 BRA P3, target``: warps 2 and 3 hold P0; they branch where P3 is known to hold too,
    and fall through where it is not known."""
    prog = halves(63)
    prog[3] = at(0x30, "BRA", "PT, 0x70", "@P0")
    assert addrs(paths.passes_of(prog, prog[3:], None, 4)[2]) == [0x30, 0x70, 0x80, 0x90]
    prog[3] = at(0x30, "BRA", "P3, 0x70", "@P0")
    assert addrs(paths.passes_of(prog, prog[3:], None, 4)[2]) == [0x30, 0x40, 0x50, 0x60, 0x80, 0x90]


def test_passes_with_different_numbers_of_barriers_are_not_played_apart():
    """The warps' barriers meet by their rank in the pass: where the halves' passes hold as many,
    each warp plays its own; where one holds a barrier more, every warp plays warp 0's."""
    from study.predict import model

    prog = halves(63)
    body, _, _, each = model.played_loop(prog, None, 4)
    assert addrs(body) == [0x30, 0x40, 0x50, 0x60, 0x80, 0x90]
    assert each is not None and [addrs(b) for b, _ in each][2] == [0x30, 0x70, 0x80, 0x90]
    prog[7] = at(0x70, "BAR.SYNC.DEFER_BLOCKING", "0x0")  # the second half's own code: a barrier
    body, _, _, each = model.played_loop(prog, None, 4)
    assert addrs(body) == [0x30, 0x40, 0x50, 0x60, 0x80, 0x90] and each is None


def test_a_rolled_inner_loop_is_written_out_as_often_as_its_compare_says():
    prog = [
        at(0x00, "MOV", "R1, c[0x0][0x210]"),  # the argument at 0x210: the inner loop's passes
        at(0x10, "MOV", "R2, RZ"),  # the loop around (0x10 .. 0x60)
        at(0x20, "FFMA", "R4, R4, R4, R4"),  # the inner loop (0x20 .. 0x50)
        at(0x30, "IADD3", "R2, R2, 0x1, RZ"),
        at(0x40, "ISETP.NE.AND", "P1, PT, R2, R1, PT"),
        at(0x50, "BRA", "0x20", "@P1"),
        at(0x60, "BRA", "0x10"),
    ]
    for n in (3, 5):
        (one,) = paths.passes_of(prog, prog[1:], {0x210: n}, 1)
        assert addrs(one) == [0x10] + [0x20, 0x30, 0x40, 0x50] * n + [0x60]
    assert paths.passes_of(prog, prog[1:], {0x210: 5}, 1, most=4) is None  # more passes than asked
    assert paths.passes_of(prog, prog[1:], None, 1) is None  # no arguments: the passes are not known


def ins(op: str, operands: str = "", stall=1) -> Instr:
    """An instruction with its scheduling word: ``stall`` cycles, no scoreboard."""
    c = stall | 1 << 4 | 7 << 5 | 7 << 8
    return Instr(0, op, operands, "", (0, c << 41))


def test_each_warp_plays_its_own_pass_and_the_barriers_meet_by_their_rank():
    """Warp 0's pass: an FFMA of 10 cycles' stall, the barrier, the back edge; warp 1's the same with
    15. The barrier is released ``barrier_latency`` after the later warp arrives, the back edge
    issues then and the next pass a cycle later: 15 + barrier + 1 cycles a pass, where two warps
    playing warp 0's pass take 10 + barrier + 1."""
    bar, bra = ins("BAR.SYNC.DEFER_BLOCKING", "0x0"), ins("BRA", "0x0")
    fast = [ins("FFMA", "R0, R1, R2, R0", stall=10), bar, bra]
    slow = [ins("FFMA", "R0, R1, R2, R0", stall=15), bar, bra]
    c = issue.DEFAULT
    alike = issue.simulate(fast, 2, 1, c)
    assert alike.cycles_per_iteration == 10 + c.barrier_latency + 1
    both = issue.simulate(fast, 2, 1, c, paths=[(fast, [None] * 3), (slow, [None] * 3)])
    assert both.cycles_per_iteration == 15 + c.barrier_latency + 1


HALVES_KERNEL = r"""
// the two halves of a block take turns: one multiplies a tile in shared memory while the other
// copies the next, then they swap; the loop over a tile's k stays rolled
extern "C" __global__ void __launch_bounds__(128)
halves(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C) {
  __shared__ float s[2][64][16];
  float acc[16] = {0.f};
  const int t = threadIdx.x % 64;
  const bool second = threadIdx.x >= 64;
  for (int k = 0; k < K; k += 32) {
    if (!second) {
#pragma unroll 1
      for (int d = 0; d < 16; ++d)
        for (int j = 0; j < 16; ++j) acc[j] += s[0][t][d] * s[1][j][d];
      __syncthreads();
      for (int j = 0; j < 16; ++j) s[0][t][j] = A[(size_t)(blockIdx.x * 64 + t) * K + k + j];
    } else {
      for (int j = 0; j < 16; ++j) s[1][t][j] = B[(size_t)(k + j) * N + t];
      __syncthreads();
#pragma unroll 1
      for (int d = 0; d < 16; ++d)
        for (int j = 0; j < 16; ++j) acc[j] += s[1][t][d] * s[0][j][d];
    }
    __syncthreads();
  }
  for (int j = 0; j < 16; ++j) C[(size_t)(blockIdx.x * 64 + t) * N + j + 16 * second] = acc[j];
}
"""


@needs_tools
def test_two_halves_that_take_turns_play_their_own_passes(tmp_path):
    """Compiled here: warps 0-1 and 2-3 play different passes of the loop over tiles, each holding
    its rolled loop over k written out 16 times (16 x 16 FFMAs) and the same two barriers."""
    from study.predict import model
    from study.toolchain import sass, tools

    src, cubin = tmp_path / "halves.cu", tmp_path / "halves.cubin"
    src.write_text(HALVES_KERNEL)
    cmd = [tools.find_nvcc(), "-O3", "-std=c++17", "-arch=sm_90", "-cubin", "-o", str(cubin), str(src)]
    subprocess.run(cmd, check=True, capture_output=True)
    instrs = sass.dump_sass(cubin, "halves")
    params = model.sgemm_params((64, 32, 1024))
    body, _, passes, each = model.played_loop(instrs, params, 4)
    assert passes == 1024 / 32
    assert each is not None and len(each) == 4
    firsts, seconds = [addrs(b) for b, _ in each[:2]], [addrs(b) for b, _ in each[2:]]
    assert firsts[0] == firsts[1] == addrs(body) and seconds[0] == seconds[1] != firsts[0]
    for b, cycles in each:
        assert sum(i.base == "FFMA" for i in b) == 16 * 16
        assert sum(i.base == "BAR" for i in b) == 2
        assert len(cycles) == len(b)
