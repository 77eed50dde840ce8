"""study.toolchain.lanes: a warp's shared-memory addresses played from the SASS, and the
wavefronts an access of those addresses costs. Hand-made addresses and instruction streams with
their counts worked out by hand, and the compiled K6 and K7 against the count of their source
(the same figures ncu reads on the H200: reports/data/ncu.csv). CPU only; the compiled kernels
need nvcc and cuobjdump."""

from __future__ import annotations

import pytest

from study.toolchain import access, l1, lanes
from study.toolchain.sass import Instr
from tests.conftest import needs_tools

LANE = range(32)


@pytest.mark.parametrize("addrs,width,want", [
    ([4 * i for i in LANE], 32, 1),  # consecutive words: one per bank
    ([0] * 32, 32, 1),  # one word for every lane: a broadcast
    ([8 * i for i in LANE], 32, 2),  # stride 2 words: two distinct words in each even bank
    ([128 * i for i in LANE], 32, 32),  # one bank, 32 distinct words
    ([16 * i for i in LANE], 128, 4),  # float4 per lane: 256 B per half-warp, two cycles each
    ([0] * 32, 128, 2),  # a 128-bit broadcast: one cycle per half-warp
    ([16 * (i % 8) for i in LANE], 128, 2),  # 8 distinct float4 (128 B) shared by the half-warps
    ([8 * i for i in LANE], 64, 2),  # float2 per lane: 128 B per half-warp
])
def test_wavefronts_of_an_access(addrs, width, want):
    assert access.wavefronts(addrs, width) == want


def ins(addr: int, op: str, operands: str, pred: str = "") -> Instr:
    return Instr(addr, op, operands, pred)


def test_the_interpreter_follows_the_thread_index_into_an_address():
    # tid.x * 16 + 0x400 (a uniform base), then a row of 4 lanes: (tid & 3) * 512 + (tid >> 2) * 16
    prog = [
        ins(0x00, "S2R", "R0, SR_TID.X"),
        ins(0x10, "UMOV", "UR4, 0x400"),
        ins(0x20, "LEA", "R1, R0, UR4, 0x4"),
        ins(0x30, "LOP3.LUT", "R2, R0, 0x3, RZ, 0xc0, !PT"),
        ins(0x40, "SHF.R.U32.HI", "R3, RZ, 0x2, R0"),
        ins(0x50, "IMAD.SHL.U32", "R2, R2, 0x200, RZ"),
        ins(0x60, "LEA", "R2, R3, R2, 0x4"),
        ins(0x70, "LDS.128", "R4, [R1+0x10]"),
        ins(0x80, "LDS.128", "R8, [R2]"),
        ins(0x90, "LDG.E", "R5, desc[UR8][R6.64]"),
        ins(0xa0, "LDS", "R9, [R5]"),  # an address loaded from memory: unknown
        ins(0xb0, "BRA", "0x70"),
    ]
    a = lanes.lane_addresses(prog, prog[7:])
    assert a[0x70] == tuple(16 * i + 0x410 for i in LANE)
    assert a[0x80] == tuple((i & 3) * 512 + (i >> 2) * 16 for i in LANE)
    assert a[0xa0] is None
    # the second access: each half-warp reads 4 rows 512 B apart (the same banks) of 4 float4:
    # 4 distinct words in each of 16 banks, 4 cycles per half: 4 + 4
    assert access.wavefronts(a[0x80], 128) == 8


def test_a_guard_that_never_executes_is_not_played():
    prog = [ins(0x00, "S2R", "R0, SR_TID.X"), ins(0x10, "MOV", "R0, RZ", pred="@!PT"),
            ins(0x20, "LDS", "R1, [R0.X4]"), ins(0x30, "BRA", "0x20")]
    # .X4 scales the register by 4; the MOV under @!PT is skipped
    assert lanes.lane_addresses(prog, prog[2:])[0x20] == tuple(4 * i for i in LANE)
    prog[2] = ins(0x20, "LDS", "R1, [R0.SOMETHING]")  # a modifier it does not know: unknown
    assert lanes.lane_addresses(prog, prog[2:])[0x20] is None


@needs_tools
@pytest.mark.parametrize("kid,want", [
    # K6: per k, 2 loads of A (a float4 the 32 lanes of a row of threads share: one cycle per
    # half-warp) and 1 of B (32 consecutive float4: two per half-warp) for 32 FFMA:
    # (2 + 2 + 4) / 32
    ("K6", (2 + 2 + 4) / 32),
    # K7: per k, 2 loads of A at As[k][8 ty] (a half-warp is one ty: one cycle per half) and 2 of
    # B at Bs[k][8 tx] (16 lanes of a half 32 B apart: tx and tx + 4 share banks, 4 words a bank,
    # 4 cycles per half) for 64 FFMA: (2 + 2 + 8 + 8) / 64
    ("K7", (2 + 2 + 8 + 8) / 64),
])
def test_compiled_loops_cost_the_wavefronts_of_their_source(kid, want):
    from study import kernels
    from study.predict import model
    from study.toolchain import compile as tc
    from study.toolchain import sass

    k = kernels.get(kid)
    body, cycles = model.main_loop_of(sass.dump_sass(tc.compile_cuda(k, "sm_90"), k.symbol))
    ffma = sum(1 for i in body if i.base == "FFMA")
    shared = [c for i, c in zip(body, cycles) if i.base == "LDS"]
    assert None not in shared
    assert sum(shared) / ffma == pytest.approx(want)


@needs_tools
@pytest.mark.parametrize("kid", ["K3", "K3c", "K4", "K5", "K6", "K7", "K8", "K9", "K10", "K11", "K12"])
def test_the_sass_gives_the_shared_wavefronts_the_h200_measured(kid):
    """The CUDA kernels without tensor copies, compiled here as the reference run compiled them
    (nvcc 13.0, sm_90): their loop's wavefronts per FFMA from the lanes equal ncu's shared-load
    wavefronts per warp FMA in reports/data/ncu.csv (read at 4096^3 in the run's session)."""
    import pandas as pd

    from study import kernels
    from study.predict import model
    from study.toolchain import compile as tc
    from study.toolchain import sass
    from tests.conftest import REPO

    ncu = pd.read_csv(REPO / "reports" / "data" / "ncu.csv")
    row = ncu[(ncu["kernel"] == kid) & (ncu["M"] == 4096)
              & (ncu["metric"] == "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")]
    measured = float(row["value"].iloc[-1]) / (4096**3 / 32)
    k = kernels.get(kid)
    body, cycles = model.main_loop_of(sass.dump_sass(tc.compile_cuda(k, "sm_90"), k.symbol))
    loads = [c for i, c in zip(body, cycles) if i.base == "LDS" and i.pred != "@!PT"]
    assert None not in loads
    ffma = sum(1 for i in body if i.base == "FFMA")
    assert sum(loads) / ffma == pytest.approx(measured, rel=0.01)


@pytest.mark.parametrize("addrs,width,want", [
    ([4 * i for i in LANE], 32, 1),  # 32 consecutive floats: one 128-byte line
    ([4096 * i for i in LANE], 32, 32),  # one float from each of 32 rows
    ([0] * 32, 32, 1),  # the same float for every lane
    ([16 * i for i in LANE], 128, 4),  # 32 float4: 512 bytes
    ([120] * 32, 128, 2),  # one float4 across the end of a line
])
def test_lines_of_a_global_access(addrs, width, want):
    assert access.lines(addrs, width) == want


# The cycles a global load holds the L1: its lines' tags, 4 a cycle, or its data's banks, whichever
# is more (the H200's stride curve of K1: docs/notes/predict/offshape/).
@pytest.mark.parametrize("addrs,width,want", [
    ([4 * i for i in LANE], 32, 1),  # one line, 32 banks
    ([16 * i for i in LANE], 128, 4),  # 512 bytes: 4 lines, 4 cycles of data
    ([4096 * 4 * i for i in LANE], 32, 32),  # rows 16 KB apart: 32 lines, every lane in bank 0
    ([4097 * 4 * i for i in LANE], 32, 8),  # rows 4 bytes off: 32 banks, 32 tags at 4 a cycle
    ([4100 * 4 * i for i in LANE], 32, 8),  # 16 bytes off: 4 lanes a bank, the tags still longer
    ([4104 * 4 * i for i in LANE], 32, 8),  # 32 bytes off: 8 lanes a bank, 8 cycles either way
    ([4112 * 4 * i for i in LANE], 32, 16),  # 64 bytes off: 16 lanes a bank
    ([0] * 32, 32, 1),  # a broadcast
])
def test_global_cycles_are_the_tags_or_the_banks(addrs, width, want):
    assert access.global_cycles(addrs, width) == want


def test_global_addresses_need_the_kernels_arguments():
    # A[tid * K] with K from the constant bank (offset 0x218): 32 rows of 4 K bytes apart
    prog = [
        ins(0x00, "S2R", "R0, SR_TID.X"),
        ins(0x10, "LDC", "R2, c[0x0][0x218]"),
        ins(0x20, "LDC.64", "R8, c[0x0][0x220]"),
        ins(0x30, "IMAD", "R4, R0, R2, RZ"),
        ins(0x40, "LEA", "R6, P0, R4, R8, 0x2"),
        ins(0x50, "LDG.E", "R5, desc[UR4][R6.64]"),
        ins(0x60, "BRA", "0x50"),
    ]
    params = {0x218: 4096, 0x220: 0x10000000}
    a = lanes.lane_addresses(prog, prog[5:], params)
    assert a[0x50] == tuple(0x10000000 + 4 * 4096 * i for i in LANE)
    assert l1.l1_cycles(prog, prog[5:], params) == [32, None]
    assert 0x50 not in lanes.lane_addresses(prog, prog[5:])  # no arguments: not given
    # K = 4097: the rows' words fall in 32 banks, and the 32 tags take 8 cycles
    assert l1.l1_cycles(prog, prog[5:], {**params, 0x218: 4097}) == [8, None]


# An asynchronous copy's write into shared memory: the wavefronts its bank conflicts add beyond a
# conflict-free write of the same bytes. The four maps are the copies the H200's counters were read
# for (ncu's L1 shared wavefronts of each LDGSTS: their lines plus this; docs/notes/g12.md).
@pytest.mark.parametrize("addrs,width,want", [
    ([4 * i for i in LANE], 32, 0),  # a row of 32 words (B's copies in K12 and G12)
    # 16 lanes along k into rows of 132 words (K12's padded As): bank 4k + m, k and k + 8 share one
    ([4 * ((i % 16) * 132 + i // 16) for i in LANE], 32, 1),
    # 4 lanes along k into rows of 128 words (G12's unpadded As): the 4 rows k of one column m
    # fall in one bank
    ([4 * ((i % 4) * 128 + i // 4) for i in LANE], 32, 3),
    ([16 * i for i in LANE], 128, 0),  # 16 bytes a lane, contiguous (K15's copies of B)
])
def test_copy_conflicts(addrs, width, want):
    assert access.copy_conflicts(addrs, width) == want


# An asynchronous copy's read: per 128 bytes of lanes (a warp of 4-byte copies, a quarter-warp of
# 16-byte ones), the lines they touch and no fewer than the lanes on one word. The cases are copies
# whose shared wavefronts ncu read per instruction on sm_90 (docs/notes/predict.md).
@pytest.mark.parametrize("addrs,width,want", [
    ([4 * i for i in LANE], 32, 1),  # one line, each word once (B's copies in K12, G12)
    ([4 * (i % 16) + 16384 * (i // 16) for i in LANE], 32, 2),  # two half lines (K12's copies of A)
    ([4 * (i % 4) + 16384 * (i // 4) for i in LANE], 32, 8),  # 8 lines (G12's copies of A)
    ([0] * 32, 32, 32),  # every lane the same word (G12T's copies of A at M = 1)
    ([4 * (i % 4) for i in LANE], 32, 8),  # 4 words, 8 lanes each (G12's at M = 1)
    ([4 * (i % 16) for i in LANE], 32, 2),  # 16 words, 2 lanes each (K12's at M = 1)
    ([16 * i for i in LANE], 128, 4),  # 512 contiguous bytes (K15's copies of B): a line a quarter
    ([16 * (i % 4) + 16384 * (i // 4) for i in LANE], 128, 8),  # 4 lanes a row (T12p's of A): 2 a quarter
    ([16384 * (i % 8) + 16 * (i // 8) for i in LANE], 128, 32),  # 8 rows a quarter (G15's of A)
    ([16 * (i // 8) for i in LANE], 128, 32),  # a quarter on one word (G15's at M = 1)
    ([0 if i < 8 else None for i in LANE], 128, 8),  # one quarter running, on one word
])
def test_a_copys_read(addrs, width, want):
    assert access.copy_read_cycles(addrs, width) == want


def test_a_copy_holds_the_unit_for_its_lines_and_its_conflicts():
    # A[tid] copied into row tid % 4, column tid / 4 of rows of 128 words: 1 line read, 4-way write
    # (3 wavefronts more)
    prog = [
        ins(0x00, "S2R", "R0, SR_TID.X"),
        ins(0x10, "LDC.64", "R8, c[0x0][0x220]"),
        ins(0x20, "LEA", "R6, P0, R0, R8, 0x2"),
        ins(0x30, "LOP3.LUT", "R2, R0, 0x3, RZ, 0xc0, !PT"),
        ins(0x40, "SHF.R.U32.HI", "R3, RZ, 0x2, R0"),
        ins(0x50, "IMAD.SHL.U32", "R2, R2, 0x200, RZ"),
        ins(0x60, "LEA", "R2, R3, R2, 0x2"),
        ins(0x70, "LDGSTS.E", "[R2], desc[UR4][R6.64]"),
        ins(0x80, "BRA", "0x70"),
    ]
    params = {0x220: 0x10000000}
    assert l1.l1_cycles(prog, prog[7:], params) == [1 + 3, None]
    assert l1.l1_cycles(prog, prog[7:]) == [3, None]  # the lines not known: the conflicts alone


def test_a_guarded_pair_of_stores_costs_one_of_them():
    prog = [ins(0x00, "S2R", "R0, SR_TID.X"), ins(0x10, "SHF.L.U32", "R1, R0, 0x7, RZ"),
            ins(0x20, "STS", "[R1], R2", pred="@P0"), ins(0x30, "STS", "[R1], RZ", pred="@!P0"),
            ins(0x40, "BRA", "0x20")]
    # tid * 128: every lane in bank 0, 32 distinct words: 32 cycles, once
    assert l1.l1_cycles(prog, prog[2:]) == [32, 0, None]


def test_two_loads_under_opposite_guards_are_each_priced():
    """The pair rule above is for one access written twice (its operand the same); two global
    loads of other addresses under P and !P are two loads."""
    params = {0x210: 0x10000000, 0x218: 0x20000000}
    prog = [ins(0x00, "S2R", "R0, SR_TID.X"), ins(0x10, "LDC.64", "R2, c[0x0][0x210]"),
            ins(0x20, "LDC.64", "R4, c[0x0][0x218]"), ins(0x30, "IMAD.WIDE", "R2, R0, 0x80, R2"),
            ins(0x40, "LDG.E", "R6, desc[UR4][R2.64]", pred="@!P0"),
            ins(0x50, "LDG.E", "R7, desc[UR4][R4.64]", pred="@P0"), ins(0x60, "BRA", "0x40")]
    # lanes 128 B apart: 32 lines, 8 cycles of tags, all in bank 0: 32 cycles; then one word
    assert l1.l1_cycles(prog, prog[4:], params) == [32, 1, None]


@pytest.mark.parametrize("op,operands,want", [
    # min(tid, 5) and max: Hopper's VIMNMX reads like IMNMX (PT: the minimum)
    ("VIMNMX", "R1, R0, 0x5, PT", [min(i, 5) for i in LANE]),
    ("VIMNMX", "R1, R0, 0x5, !PT", [max(i, 5) for i in LANE]),
    ("VIMNMX.U32", "R1, R0, 0xffffffff, PT", list(LANE)),  # unsigned: -1 is the largest
    ("VIMNMX", "R1, R0, 0xffffffff, !PT", list(LANE)),  # signed: -1 is below every lane
    # min(tid + 16, 20)
    ("VIADDMNMX", "R1, R0, 0x10, R2, PT", [min(i + 16, 20) for i in LANE]),
    # byte 0 of tid, then the low three bytes of 0x20 (b:a, selector 0x6540): (0x20 << 8) | tid
    ("PRMT", "R1, R0, 0x6540, R2", [(20 << 8) | i for i in LANE]),
    # tid where tid < 4 (P0 from the ISETP), else 20
    ("SEL", "R1, R0, R2, P0", [i if i < 4 else 20 for i in LANE]),
    ("SEL", "R1, R0, R2, !P0", [20 if i < 4 else i for i in LANE]),
])
def test_the_min_max_byte_and_select_steps(op, operands, want):
    prog = [ins(0x00, "S2R", "R0, SR_TID.X"), ins(0x10, "MOV", "R2, 0x14"),
            ins(0x20, "ISETP.GE.AND", "P0, PT, R0, 0x4, PT"),
            ins(0x30, "ISETP.LT.AND", "P0, PT, R0, 0x4, PT"),
            ins(0x40, op, operands), ins(0x50, "LDS", "R3, [R1.X4]"), ins(0x60, "BRA", "0x50")]
    assert lanes.lane_addresses(prog, prog[5:])[0x50] == tuple(4 * w for w in want)


@pytest.mark.parametrize("writer,want", [
    # a uniform compare, copied into P0 by PLOP3 (0x80: a AND b AND c, a and b PT): tid + 4
    ("UISETP.GT.AND UP0, UPT, UR5, 0x1f, UPT", 4),
    # an add's carry out into P0, and a float compare, are not played: P0 not known, as if unguarded
    ("IADD3 R7, P0, R0, 0x4, RZ", 4),
    ("FSETP.GT.AND P0, PT, R0, RZ, PT", 4),
])
def test_a_predicate_is_known_only_where_its_writer_is_played(writer, want):
    """P0 first holds false for every lane (ISETP), so a guarded add left unplayed would leave
    tid; a writer of P0 the interpreter plays (or does not) decides what the guard does."""
    op, operands = writer.split(" ", 1)
    copy = "P0, PT, PT, PT, UP0, 0x80, 0x0"
    prog = [ins(0x00, "S2R", "R0, SR_TID.X"), ins(0x08, "MOV", "R9, 0x40"),
            ins(0x10, "ULDC", "UR5, c[0x0][0x210]"),
            ins(0x18, "ISETP.GT.AND", "P0, PT, R0, 0x100, PT"), ins(0x20, op, operands),
            ins(0x28, "PLOP3.LUT", copy) if op == "UISETP.GT.AND" else ins(0x28, "NOP", ""),
            ins(0x30, "IADD3", "R0, R0, 0x4, RZ", pred="@P0"),
            ins(0x40, "LDS", "R1, [R0.X4]"), ins(0x50, "BRA", "0x40")]
    a = lanes.lane_addresses(prog, prog[-2:], {0x210: 0x1000})[0x40]
    assert a == tuple(4 * (i + want) for i in LANE)
    # with the writer left out, P0 stays false and the add does not run
    prog[4] = prog[5] = ins(0x20, "NOP", "")
    assert lanes.lane_addresses(prog, prog[-2:], {0x210: 0x1000})[0x40] == tuple(4 * i for i in LANE)


def test_a_select_whose_predicate_is_not_known_moves_only_uniform_choices():
    prog = [ins(0x00, "S2R", "R0, SR_TID.X"), ins(0x10, "MOV", "R2, 0x14"),
            ins(0x20, "SEL", "R1, R0, R2, P3"), ins(0x30, "LDS", "R3, [R1.X4]"), ins(0x40, "BRA", "0x30")]
    assert lanes.lane_addresses(prog, prog[3:])[0x30] is None  # P3 never written: not known


@pytest.mark.parametrize("last,want", [
    # tid & 1 (0xc0: a AND b), tested: odd lanes select tid, even ones 20
    ("!PT", [i if i & 1 else 20 for i in LANE]),
    # any other last predicate: the test's result is not known, nor is the select's
    ("P2", None),
])
def test_a_logic_op_into_a_predicate_tests_its_result(last, want):
    """LOP3.LUT P1, R5, a, b, c, lut, !PT writes the logic op's result to R5 and whether it is not
    zero to P1, lane by lane: the bit test compilers write for ``x & mask``."""
    prog = [ins(0x00, "S2R", "R0, SR_TID.X"), ins(0x10, "MOV", "R2, 0x14"),
            ins(0x20, "LOP3.LUT", f"P1, R5, R0, 0x1, RZ, 0xc0, {last}"),
            ins(0x30, "SEL", "R1, R0, R2, P1"), ins(0x40, "IADD3", "R6, R5, R1, RZ"),
            ins(0x50, "LDS", "R3, [R1.X4]"), ins(0x58, "LDS", "R4, [R6.X4]"), ins(0x60, "BRA", "0x50")]
    got = lanes.lane_addresses(prog, prog[5:])
    if want is None:
        assert got[0x50] is None
    else:
        assert got[0x50] == tuple(4 * w for w in want)
        assert got[0x58] == tuple(4 * (w + (i & 1)) for i, w in zip(LANE, want))


@needs_tools
def test_k1_reads_a_line_per_lane_of_a_and_one_of_b():
    """K1 (the row from threadIdx.x): per FFMA a warp reads A at 32 rows (32 lines) and one float
    of B (one line): 33 unit cycles per FFMA, the 33 sectors per warp FMA of its ledger."""
    from study import kernels
    from study.predict import model
    from study.toolchain import compile as tc
    from study.toolchain import sass

    k = kernels.get("K1")
    body, cycles = model.main_loop_of(sass.dump_sass(tc.compile_cuda(k, "sm_90"), k.symbol),
                                      model.sgemm_params((4096, 4096, 4096)))
    ffma = sum(1 for i in body if i.base == "FFMA")
    loads = [c for i, c in zip(body, cycles) if i.base == "LDG"]
    assert None not in loads and sum(loads) / ffma == 33
    # at M = 1 its bounds check ends every lane of a warp but the first: one line of A, one of B
    body, cycles = model.main_loop_of(sass.dump_sass(tc.compile_cuda(k, "sm_90"), k.symbol),
                                      model.sgemm_params((1, 4096, 4096)))
    loads = [c for i, c in zip(body, cycles) if i.base == "LDG"]
    assert None not in loads and sum(loads) / ffma == 2


def _row_per_lane(m: int, guard: list) -> list:
    """A[tid * K] read in a loop after ``guard`` (instructions at 0x30..): rows on lanes, as K1's;
    M at 0x210, K at 0x218, A at 0x220 as the CUDA kernels' arguments lie."""
    return [
        ins(0x00, "S2R", "R0, SR_TID.X"),
        ins(0x10, "LDC", "R1, c[0x0][0x210]"),
        ins(0x20, "LDC", "R2, c[0x0][0x218]"),
        *guard,
        ins(0x60, "LDC.64", "R8, c[0x0][0x220]"),
        ins(0x70, "IMAD", "R4, R0, R2, RZ"),
        ins(0x80, "LEA", "R6, P1, R4, R8, 0x2"),
        ins(0x90, "LDG.E", "R5, desc[UR4][R6.64]"),
        ins(0xa0, "BRA", "0x90"),
    ]


@pytest.mark.parametrize("m, want", [(1, 1), (5, 5), (32, 32), (4096, 32)])
def test_an_exit_whose_lanes_are_known_ends_them(m, want):
    # if (row >= M || col >= N) return; with row = tid and col = 0 (< N): lanes tid >= M leave
    # before the loop, and its load touches one line per lane left
    guard = [ins(0x30, "ISETP.GE.AND", "P0, PT, RZ, c[0x0][0x214], PT"),
             ins(0x40, "ISETP.GE.OR", "P0, PT, R0, R1, P0"),
             ins(0x50, "EXIT", "", pred="@P0")]
    prog = _row_per_lane(m, guard)
    params = {0x210: m, 0x214: 64, 0x218: 4096, 0x220: 0x10000000}
    assert l1.l1_cycles(prog, prog[-2:], params) == [want, None]
    a = lanes.lane_addresses(prog, prog[-2:], params)[0x90]
    assert sum(x is not None for x in a) == want


def test_an_exit_under_a_predicate_not_known_ends_no_lane():
    # the compare reads a loaded value (not played): every lane is priced
    guard = [ins(0x30, "LDG.E", "R3, desc[UR4][R8.64]"),
             ins(0x40, "ISETP.GE.AND", "P0, PT, R3, R1, PT"),
             ins(0x50, "EXIT", "", pred="@P0")]
    prog = _row_per_lane(1, guard)
    params = {0x210: 1, 0x218: 4096, 0x220: 0x10000000}
    assert l1.l1_cycles(prog, prog[-2:], params) == [32, None]


def test_an_exit_after_a_branch_ends_no_lane():
    # the straight path past a branch may be another warp's code: its EXIT is not played
    guard = [ins(0x30, "ISETP.GE.AND", "P0, PT, R0, R1, PT"),
             ins(0x40, "BRA", "0x200", pred="@P2"),
             ins(0x50, "EXIT", "", pred="@P0")]
    prog = _row_per_lane(1, guard)
    params = {0x210: 1, 0x218: 4096, 0x220: 0x10000000}
    assert l1.l1_cycles(prog, prog[-2:], params) == [32, None]


def test_a_loads_own_guard_applies_unless_the_loop_writes_it():
    # @P1 LDG with P1 = tid < 8, set before the loop: its 8 lanes' rows, 16 KB apart, are 8 lines
    # in one bank (8 cycles). Where the loop writes P1 itself, it can carry from the pass before,
    # which the first pass does not see: every lane is priced (32)
    head = [
        ins(0x00, "S2R", "R0, SR_TID.X"),
        ins(0x10, "LDC", "R2, c[0x0][0x218]"),
        ins(0x20, "ISETP.LT.U32.AND", "P1, PT, R0, 0x8, PT"),
        ins(0x30, "LDC.64", "R8, c[0x0][0x220]"),
        ins(0x40, "IMAD", "R4, R0, R2, RZ"),
        ins(0x50, "LEA", "R6, P3, R4, R8, 0x2"),
        ins(0x60, "LDG.E", "R5, desc[UR4][R6.64]", pred="@P1"),
    ]
    params = {0x218: 4096, 0x220: 0x10000000}
    prog = head + [ins(0x70, "BRA", "0x60")]
    assert l1.l1_cycles(prog, prog[6:], params) == [8, None]
    prog = head + [ins(0x70, "ISETP.LT.U32.AND", "P1, PT, R0, 0x4, PT"), ins(0x80, "BRA", "0x60")]
    assert l1.l1_cycles(prog, prog[6:], params) == [32, None, None]


def test_newer_integer_adds_and_a_divisions_steps_are_played():
    # VIADD a + imm; I2F / MUFU.RCP / F2I of the reciprocal an integer division starts from:
    # 7 -> 7.0 -> 1/7 -> truncated 0
    prog = [ins(0x00, "S2R", "R0, SR_TID.X"), ins(0x10, "VIADD", "R1, R0, 0x1f"),
            ins(0x40, "MOV", "R4, 0x7"), ins(0x50, "I2F.U32.RP", "R5, R4"), ins(0x60, "MUFU.RCP", "R6, R5"),
            ins(0x70, "F2I.FTZ.U32.TRUNC.NTZ", "R7, R6"), ins(0x80, "IADD3", "R8, R1, R7, RZ"),
            ins(0x90, "LDS", "R9, [R1]"), ins(0xa0, "LDS", "R9, [R8]"), ins(0xb0, "BRA", "0x90")]
    a = lanes.lane_addresses(prog, prog[7:])
    assert a[0x90] == tuple(i + 0x1F for i in LANE)
    assert a[0xa0] == a[0x90]  # + F2I(1/7.0) = 0


@pytest.mark.parametrize("divisor", [1, 3, 7, 64, 1000])
def test_an_unsigned_division_as_nvcc_writes_it(divisor):
    """nvcc's unsigned n / d: a reciprocal estimate, refined by IMAD.HI.U32 whose addend is the
    64-bit pair c+1:c (c zero, c+1 the estimate), the quotient's high word, then two fix-ups
    under predicates that differ by lane. The lanes' quotients are Python's."""
    prog = [ins(0x00, "S2R", "R0, SR_TID.X"), ins(0x08, "IMAD", "R0, R0, 0x3b9, 0x3e8"),  # n = 953 t + 1000
            ins(0x10, "MOV", f"R4, {divisor:#x}"), ins(0x20, "I2F.U32.RP", "R5, R4"),
            ins(0x30, "MUFU.RCP", "R5, R5"),
            ins(0x40, "IADD3", "R6, R5, 0xffffffe, RZ"), ins(0x50, "F2I.FTZ.U32.TRUNC.NTZ", "R7, R6"),
            ins(0x60, "HFMA2.MMA", "R6, -RZ, RZ, 0, 0"), ins(0x70, "IADD3", "R8, RZ, -R4, RZ"),
            ins(0x80, "IMAD", "R8, R8, R7, RZ"), ins(0x90, "IMAD.HI.U32", "R7, R7, R8, R6"),
            ins(0xa0, "IMAD.HI.U32", "R9, R7, R0, RZ"), ins(0xb0, "IADD3", "R10, -R9, RZ, RZ"),
            ins(0xc0, "IMAD", "R10, R4, R10, R0"), ins(0xd0, "ISETP.GE.U32.AND", "P0, PT, R10, R4, PT"),
            ins(0xe0, "IADD3", "R10, R10, -R4, RZ", pred="@P0"),
            ins(0xf0, "IADD3", "R9, R9, 0x1, RZ", pred="@P0"),
            ins(0x100, "ISETP.GE.U32.AND", "P1, PT, R10, R4, PT"),
            ins(0x110, "IADD3", "R9, R9, 0x1, RZ", pred="@P1"),
            ins(0x120, "LDS", "R11, [R9.X4]"), ins(0x130, "BRA", "0x120")]
    a = lanes.lane_addresses(prog, prog[-2:])[0x120]
    assert a == tuple(4 * ((953 * i + 1000) // divisor) for i in LANE)


def test_a_guard_whose_lanes_are_not_known_leaves_the_result_as_if_unguarded():
    prog = [ins(0x00, "S2R", "R0, SR_TID.X"), ins(0x10, "IADD3", "R0, R0, 0x4, RZ", pred="@P3"),
            ins(0x20, "LDS", "R1, [R0.X4]"), ins(0x30, "BRA", "0x20")]
    assert lanes.lane_addresses(prog, prog[2:])[0x20] == tuple(4 * (i + 4) for i in LANE)


def test_arguments_lie_at_their_natural_alignment_from_0x210():
    from study.predict import model

    # three pointers (8 bytes each from 0x210), then 32-bit integers, then a 64-bit one (aligned)
    p = model.cubin_params([("*fp32", None), ("*fp32", None), ("*fp32", None), ("i32", 4096),
                            ("i32", 7), ("i32", 1), ("i64", 1 << 33)])
    assert [p[0x210 + 8 * i + 4] for i in range(3)] == [0, 0, 0]  # the pointers' high words
    assert len({p[0x210], p[0x218], p[0x220]}) == 3 and all(p[o] % 256 == 0 for o in (0x210, 0x218, 0x220))
    assert (p[0x228], p[0x22C], p[0x230]) == (4096, 7, 1)
    assert (p[0x238], p[0x23C]) == (0, 2)  # 0x234 skipped: the i64 takes the next 8-byte slot
    # the SGEMM layout of the CUDA kernels is the same rule with a float between them
    assert model.sgemm_params((5, 6, 7))[0x218] == 7
