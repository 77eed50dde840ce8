"""What the lanes interpreter tells the L1 model beyond each access's cycles: the predicates an
instruction writes, an access's own guard where the loop does not write it, the global loads that
read again sectors an earlier load of the pass brought in (study.toolchain.l1.Reread), the copies
past the L1 whose lanes repeat a word (study.toolchain.l1.Repeated), the warps of a block that
reach the main loop, and the last block along x of K12, K15 and the Gluon tiles, whose copies of
B keep a word a lane. Hand-made instruction streams with the answers worked out by hand; K2
compiled (nvcc, cuobjdump) at M = 1, where 31 of its 32 warps end before the loop."""

from __future__ import annotations

import pickle

import pytest

from study.predict import issue
from study.toolchain import l1, lanes
from study.toolchain.l1 import Repeated, Reread
from study.toolchain.predicates import writes
from study.toolchain.sass import Instr
from tests.conftest import gluon_module, needs_tools

LANE = range(32)
BASE = 0x10000000
PARAMS = {0x210: 1, 0x220: BASE, 0x224: 0}  # M at 0x210, a pointer at 0x220


def ins(addr: int, op: str, operands: str, pred: str = "") -> Instr:
    return Instr(addr, op, operands, pred)


@pytest.mark.parametrize("ops,want", [
    (["P0", "PT", "R1", "R2", "PT"], ["P0"]),  # ISETP P0, PT, a, b, PT
    (["P0", "P1", "R1", "R2", "PT"], ["P0", "P1"]),  # both outputs of a compare
    (["R2", "P0", "P1", "R3", "R4", "RZ"], ["P0", "P1"]),  # IADD3's two carries out
    (["R6", "P1", "R0", "R8", "0x2"], ["P1"]),  # LEA's carry out
    (["R5", "R2", "R3", "R4", "0x2", "P0"], []),  # LEA.HI.X reads its carry in
    (["R23", "RZ", "RZ", "R17", "P3"], []),  # IMAD.X likewise
    (["R1", "R2", "R3", "P0"], []),  # SEL reads its predicate
])
def test_the_predicates_an_instruction_writes(ops, want):
    assert writes(ops) == want


def _rows_program(m_guard: str) -> list[Instr]:
    """Lane i reads the word at BASE + 4 i under ``@!P0`` (P0: lane >= M, set before the loop),
    and again under ``@!P2``, which the loop itself writes."""
    return [
        ins(0x00, "S2R", "R0, SR_TID.X"),
        ins(0x10, "ISETP.GE.AND", "P0, PT, R0, c[0x0][0x210], PT"),
        ins(0x20, "LDC.64", "R8, c[0x0][0x220]"),
        ins(0x30, "LEA", "R6, P1, R0, R8, 0x2"),
        ins(0x40, "LDG.E", "R4, desc[UR4][R6.64]", m_guard),
        ins(0x50, "ISETP.GE.AND", "P2, PT, R0, c[0x0][0x210], PT"),
        ins(0x60, "LDG.E", "R5, desc[UR4][R6.64+0x80]", "@!P2"),
        ins(0x70, "BRA", "0x40"),
    ]


def test_an_accesss_own_guard_applies_where_the_loop_does_not_write_it():
    prog = _rows_program("@!P0")
    a = lanes.lane_addresses(prog, prog[4:], PARAMS)
    assert a[0x40] == (BASE,) + (None,) * 31  # M = 1: lane 0 alone
    assert a[0x60] == tuple(BASE + 0x80 + 4 * i for i in LANE)  # P2 is the loop's: every lane
    cycles = l1.l1_cycles(prog, prog[4:], PARAMS)
    assert cycles[2] == 1 and cycles[0] == 1  # one line each; the second's sectors are new
    # M = 0: no lane runs the first load; it holds no unit time and waits for no memory
    assert l1.l1_cycles(prog, prog[4:], {**PARAMS, 0x210: 0})[0] == Reread(0, None)


def test_a_load_of_sectors_an_earlier_load_of_the_pass_touched_is_a_reread():
    prog = [
        ins(0x00, "S2R", "R0, SR_TID.X"),
        ins(0x10, "LDC.64", "R8, c[0x0][0x220]"),
        ins(0x20, "LEA", "R6, P1, R0, R8, 0x2"),  # lane i: BASE + 4 i, 4 sectors
        ins(0x30, "LDG.E", "R4, desc[UR4][R8.64]"),  # one word for every lane: sector 0
        ins(0x40, "LDG.E", "R5, desc[UR4][R8.64+0x1c]"),  # the last word of sector 0
        ins(0x48, "LDG.E", "R7, desc[UR4][R8.64+0x20]"),  # sector 1: new, in the L2's first 64 bytes
        ins(0x50, "LDG.E", "R10, desc[UR4][R6.64]"),  # sectors 0-3: 2 and 3 are new
        ins(0x60, "LDG.E", "R11, desc[UR4][R6.64+0x20]"),  # sectors 1-4: 4 is new
        ins(0x70, "LDG.E", "R12, desc[UR4][R6.64+0x10]"),  # sectors 0-4, first touched by 0x30-0x60
        ins(0x80, "BRA", "0x30"),
    ]
    got = l1.l1_cycles(prog, prog[3:], PARAMS)
    assert got[0] == 1 and not isinstance(got[0], Reread)
    assert got[1] == Reread(1, 0x30)
    assert got[2] == Reread(1, 0x30, l2=True)  # the granule 0x30 brought into the L2
    assert not isinstance(got[3], Reread) and not isinstance(got[4], Reread)
    # two lines, a cycle of tags; its data is in once the latest of the loads it rereads has its own
    assert got[5] == Reread(1, 0x60)
    assert got[5] != 1 and Reread(1, 0x60) != Reread(1, 0x50) and Reread(1, 0x60) != Reread(1, 0x60, l2=True)
    assert pickle.loads(pickle.dumps(got[2])) == got[2]  # a loop's costs cross processes whole


def ctl(op: str, operands: str, addr: int, stall=1, write=7, wait=()) -> Instr:
    c = stall | 1 << 4 | write << 5 | 7 << 8 | sum(1 << i for i in wait) << 11
    return Instr(addr, op, operands, "", (0, c << 41))


def test_a_reread_waits_for_the_l1_or_the_load_it_rereads():
    """One warp, loads of one line each: the first's data at 1 + 600 (served in [0, 1)); its FFMA
    then, the second load at 602, served by 603, its data at max(603 + 40, 601) = 643; its FFMA
    then, the branch at 644, the next pass at 645. From the L2: 603 + 300, 905. From memory:
    603 + 600, 1205."""
    c = issue.Constants(ldg_latency=600, ldl_latency=40, l2_latency=300)
    body = [ctl("LDG.E", "R4, desc[UR4][R2.64]", 0x10, write=0),
            ctl("FFMA", "R1, R4, R5, R2", 0x20, wait=(0,)),  # registers in three banks
            ctl("LDG.E", "R6, desc[UR4][R2.64]", 0x30, write=1),
            ctl("FFMA", "R1, R6, R5, R3", 0x40, wait=(1,)),
            ctl("BRA", "0x10", 0x50)]
    again = issue.simulate(body, 1, 1, c, l1_cycles=[1, None, Reread(1, 0x10), None, None])
    fresh = issue.simulate(body, 1, 1, c, l1_cycles=[1, None, 1, None, None])
    l2 = issue.simulate(body, 1, 1, c, l1_cycles=[1, None, Reread(1, 0x10, l2=True), None, None])
    assert again.cycles_per_iteration == 645 and fresh.cycles_per_iteration == 1205
    assert l2.cycles_per_iteration == 905
    off = issue.simulate(body, 1, 1, c, l1_cycles=[1, None, Reread(0, None), None, None])
    assert off.cycles_per_iteration == 602 + 40 + 2  # no lane runs it: an L1 latency, no unit time


def test_copies_past_the_l1_whose_lanes_repeat_a_word():
    """Quarter-warps on one 16-byte word each (G15's copies of A at M = 1): the two copies of the
    same words past the L1 are Repeated twice, made alike by every block; the same read through the
    L1, or by lanes on words of their own, is not; words that move with the block are its own."""
    prog = [
        ins(0x00, "S2R", "R0, SR_TID.X"),
        ins(0x08, "S2R", "R1, SR_CTAID.X"),
        ins(0x10, "LDC.64", "R8, c[0x0][0x220]"),
        ins(0x18, "SHF.R.U32.HI", "R2, RZ, 0x3, R0"),  # the lane's quarter
        ins(0x20, "LEA", "R6, P1, R2, R8, 0x4"),  # BASE + 16 quarter: 4 words, 8 lanes each
        ins(0x28, "MOV", "R7, RZ"),
        ins(0x2c, "IADD3", "R16, R1, 0x1, RZ"),
        ins(0x30, "LEA", "R12, P1, R16, R6, 0x9"),  # the same, 512 (block + 1) bytes further on
        ins(0x38, "MOV", "R13, RZ"),
        ins(0x40, "LEA", "R14, P1, R0, R8, 0x4"),  # BASE + 16 lane: a word a lane
        ins(0x48, "MOV", "R15, RZ"),
        ins(0x50, "LDGSTS.E.BYPASS.128", "[R20], desc[UR4][R6.64]"),
        ins(0x60, "LDGSTS.E.BYPASS.128", "[R20+0x200], desc[UR4][R6.64]"),
        ins(0x70, "LDGSTS.E.128", "[R20+0x400], desc[UR4][R6.64]"),  # through the L1
        ins(0x80, "LDGSTS.E.BYPASS.128", "[R20+0x600], desc[UR4][R12.64]"),
        ins(0x90, "LDGSTS.E.BYPASS.128", "[R20+0x800], desc[UR4][R14.64]"),
        ins(0xa0, "BRA", "0x50"),
    ]
    got = l1.l1_cycles(prog, prog[11:], PARAMS)
    assert got[0] == Repeated(32, copies=2, blocks=True) and got[1] == got[0]  # 4 quarters x 8 lanes
    assert not isinstance(got[2], Repeated) and not isinstance(got[4], Repeated)
    # block 1 reads 512 bytes on: words of each block's own, repeated once in the warp
    assert got[3] == Repeated(got[3], copies=1, blocks=False)
    assert got[0] != int(got[0]) and pickle.loads(pickle.dumps(got[0])) == got[0]


def test_a_repeated_copy_waits_for_every_copy_of_its_words():
    """One warp: a load served in [0, 1), its data at 1 + 600, its FFMA then, the branch at 602,
    the next pass at 603. Repeated twice in each of 10 blocks' one warp, 2 cycles each: 40 later;
    with words of its block's own, 4."""
    c = issue.Constants(ldg_latency=600, repeat_cycles=2.0)
    body = [ctl("LDG.E", "R4, desc[UR4][R2.64]", 0x10, write=0),
            ctl("FFMA", "R1, R4, R5, R2", 0x20, wait=(0,)),
            ctl("BRA", "0x10", 0x30)]
    fresh = issue.simulate(body, 1, 1, c, l1_cycles=[1, None, None], sharers=10)
    every = issue.simulate(body, 1, 1, c, l1_cycles=[Repeated(1, 2, True), None, None], sharers=10)
    own = issue.simulate(body, 1, 1, c, l1_cycles=[Repeated(1, 2, False), None, None], sharers=10)
    assert fresh.cycles_per_iteration == 603
    assert every.cycles_per_iteration == 643 and own.cycles_per_iteration == 607


def _exit_program(index: str) -> list[Instr]:
    """Warps whose row (``index``: SR_TID.Y, or SR_TID.X / 32) is past M end before the loop."""
    head = [ins(0x00, "S2R", f"R0, {index}")]
    if index == "SR_TID.X":
        head.append(ins(0x08, "SHF.R.U32.HI", "R0, RZ, 0x5, R0"))
    return head + [
        ins(0x10, "ISETP.GE.AND", "P0, PT, R0, c[0x0][0x210], PT"),
        ins(0x20, "EXIT", "", "@P0"),
        ins(0x30, "FFMA", "R1, R2, R3, R1"),
        ins(0x40, "BRA", "0x30"),
    ]


@pytest.mark.parametrize("index,warps,m,want", [
    ("SR_TID.Y", 32, 1, 1), ("SR_TID.Y", 32, 5, 5), ("SR_TID.Y", 32, 32, 32), ("SR_TID.Y", 32, 100, 32),
    ("SR_TID.X", 8, 3, 3), ("SR_TID.X", 8, 1, 1),
])
def test_the_warps_of_a_block_that_reach_the_loop(index, warps, m, want):
    prog = _exit_program(index)
    assert lanes.warps_reaching(prog, prog[-2:], {0x210: m}, warps) == want


@needs_tools
def test_k2_at_m1_runs_its_loop_with_one_warp_of_32():
    """K2's block is 32 x 32 threads, a row of C per warp; at M = 1 the rows past the first end
    before the loop (its source's bounds check), so one warp of each block runs it."""
    from study.predict.__main__ import registered

    _, one, _ = registered("K2", (1, 18944, 3584), "sm_90", sms=132)
    _, full, _ = registered("K2", (32, 18944, 3584), "sm_90", sms=132)
    assert one.threads == 1024 and one.loop_warps == 1 and one.compute_threads is None
    assert full.loop_warps is None


@needs_tools
def test_g15_at_m1_copies_its_one_row_of_a_past_the_l1_in_every_warp_and_block():
    """G15 compiled for M = 1 copies A 16 bytes a lane past the L1 with its rows clamped to the one
    row: each quarter-warp on one word, two copies of those words in each half of a pass, the same
    in every block (its grid is one row of tiles); compiled for 4096^3, no copy repeats a word."""
    from study.predict.__main__ import registered

    gluon_module("triton_kernels.g15_gluon")
    (body, cycles), _, _ = registered("G15", (1, 18944, 3584), "sm_90", sms=132)
    hot = [c for c in cycles if isinstance(c, Repeated)]
    assert hot and all(c.copies == 2 and c.blocks for c in hot)
    assert all("BYPASS" in i.opcode for i, c in zip(body, cycles) if isinstance(c, Repeated))
    (_, full), _, _ = registered("G15", (4096, 4096, 4096), "sm_90", sms=132)
    assert not any(isinstance(c, Repeated) for c in full)


def _compiled(kid: str, shape):
    """(SASS, main loop, arguments, tile width) of a registered kernel compiled here at ``shape``."""
    from study import kernels
    from study.predict import model
    from study.toolchain import compile as tc
    from study.toolchain import sass
    from study.toolchain.triton_child import TritonChild

    k = kernels.get(kid)
    if k.impl == "cuda":
        path = k.path_for(*shape)
        bn = next(r.bn for r in k.registrations if r.symbol == path.symbol)
        instrs = sass.dump_sass(tc.compile_cuda(path, "sm_90"), path.symbol)
        params = model.sgemm_params(shape, None)
    else:
        gluon_module(k.target.split(":")[0])
        with TritonChild() as child:
            t = tc.compile_triton(k, "sm_90", shape=shape, child=child)
        bn = t["config"]["BN"] if t["config"] else k.tile[1]
        instrs = sass.dump_sass(t["cubin"], t["name"])
        params = model.cubin_params(t["arguments"])
    return instrs, sass.main_loop(instrs), params, bn


@needs_tools
@pytest.mark.parametrize("kid,shape", [("K12", (4096, 4097, 4096)), ("K12", (4096, 4100, 4096)),
                                       ("K15", (4096, 4100, 4096)), ("G12", (4097, 4097, 4097)),
                                       ("G12T", (4100, 4100, 4100)), ("G15", (4100, 4100, 4100))])
def test_the_last_column_of_tiles_copies_a_word_a_lane(kid, shape):
    """K12's, K15's and the Gluon tiles' copies of B read a column past N from a tile width before
    it: in the last block along x, where all but a few columns lie past N, warp 0's copies of B
    hand each lane a word of its own, as block 0's do (clamped onto the last columns, they would
    hand one word to many lanes in every pass of that block)."""
    instrs, loop, params, bn = _compiled(kid, shape)
    copies = [i for i in loop if i.base == "LDGSTS"]
    assert copies
    for block in (0, -(-shape[1] // bn) - 1):
        addrs, _ = lanes.play(instrs, loop, params, block=block)
        assert all(addrs.get(i.addr) for i in copies)
        assert not any(l1.words(addrs[i.addr], i.width)[1] for i in copies), block
