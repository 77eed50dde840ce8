"""The scheduling word of each SASS instruction (study.toolchain.control): its fields at their
bits, and, on kernels compiled here for sm_90, that what it says agrees with the instruction text
and with the dependences in the code (a reuse flag where the text says .reuse; a wait on the
scoreboard of the shared load whose result an instruction reads)."""

from __future__ import annotations

import re

import pytest
from conftest import needs_tools

from study import kernels
from study.toolchain import compile as tc
from study.toolchain import control, sass


def word(stall=0, yield_bit=0, write=7, read=7, wait=(), reuse=0) -> int:
    """A second encoding word holding these fields at bits 41.. and noise below them."""
    c = stall | yield_bit << 4 | write << 5 | read << 8 | sum(1 << i for i in wait) << 11 | reuse << 17
    return c << 41 | 0x1234_5678


def test_each_field_is_read_at_its_bits():
    c = control.decode(word(stall=13, yield_bit=1, write=3, read=5, wait=(0, 4), reuse=0b1010))
    assert (c.stall, c.yield_bit, c.write_sb, c.read_sb, c.wait, c.reuse) == (13, 1, 3, 5, {0, 4}, 10)
    none = control.decode(word())
    assert (none.write_sb, none.read_sb, none.wait) == (None, None, frozenset())
    assert str(c) == "B0---4-:R5:W3:-:S13" and str(none) == "B------:R-:W-:Y:S00"


def test_words_printed_by_cuobjdump_for_sm_90():
    # S2R R50, SR_TID.X: reads a special register, a variable latency: sets scoreboard 1, stalls 7
    s2r = control.decode(0x000E6E0000002100)
    assert (s2r.stall, s2r.write_sb, s2r.wait) == (7, 1, frozenset())
    # IADD3 R2, R16, 0xf, RZ right after LDC R16 (scoreboard 2): waits on it
    iadd = control.decode(0x004FE20007FFE0FF)
    assert (iadd.stall, iadd.write_sb, iadd.wait) == (1, None, {2})


def test_the_parser_pairs_each_instruction_with_its_two_words():
    text = """
        Function : toy
        /*0000*/                   S2R R50, SR_TID.X ;          /* 0x0000000000327919 */
                                                                /* 0x000e6e0000002100 */
        /*0010*/                   IADD3 R2, R50, 0xf, RZ ;     /* 0x0000000f32027810 */
                                                                /* 0x002fe20007ffe0ff */
        /*0020*/                   EXIT ;
"""
    s2r, iadd, exit_ = sass.parse_sass(text)["toy"]
    assert s2r.words == (0x0000000000327919, 0x000E6E0000002100) and s2r.control.write_sb == 1
    assert iadd.control.wait == {1}
    assert exit_.words is None and exit_.control is None  # a dump without its words


@pytest.fixture(scope="module", params=["K6", "K12"])
def compiled(request):
    k = kernels.get(request.param)
    return sass.dump_sass(tc.compile_cuda(k, "sm_90"), k.symbol)


@needs_tools
def test_every_instruction_of_a_compiled_kernel_has_its_words(compiled):
    assert compiled and all(i.words is not None for i in compiled)


@needs_tools
def test_reuse_flags_are_where_the_text_says_reuse(compiled):
    """FFMA d, a, b, c: source slot a, b, c is reuse bit 0, 1, 2, set exactly where cuobjdump
    writes .reuse after that operand."""
    ffma = [i for i in compiled if i.base == "FFMA"]
    flagged = 0
    for i in ffma:
        ops = [o.strip() for o in i.operands.split(",")]
        text_bits = sum(1 << (pos - 1) for pos in (1, 2, 3) if ".reuse" in ops[pos])
        assert i.control.reuse == text_bits, str(i)
        flagged += bool(text_bits)
    assert flagged > len(ffma) // 4  # the tiled kernels reuse an operand in most FFMAs


_REG = re.compile(r"\bR(\d+)\b")


def _sources(ins) -> set[int]:
    ops = [o.strip() for o in ins.operands.split(",")]
    return {int(r) for o in ops[1:] for r in _REG.findall(o)}


@needs_tools
def test_a_shared_load_result_is_read_only_after_a_wait_on_its_scoreboard(compiled):
    """In the main loop, between each LDS and the first instruction that reads a register it
    loads, some instruction waits on the scoreboard of that LDS or of a later one (shared loads
    complete in order, so a wait on a later one covers it)."""
    loop = sass.main_loop(compiled)
    checked = 0
    for n, ld in enumerate(loop):
        if ld.base != "LDS" or ld.pred == "@!PT":
            continue
        first = int(ld.operands.split(",")[0].strip().lstrip("R"))
        dest = set(range(first, first + ld.width // 32))
        use = next((j for j in range(n + 1, len(loop)) if dest & _sources(loop[j])), None)
        if use is None:
            continue  # read in the next iteration, after the loop's own waits
        boards, covered = set(), False
        for ins in loop[n : use + 1]:
            if ins.control.wait & boards:
                covered = True
                break
            if ins.base == "LDS" and ins.control.write_sb is not None:
                boards.add(ins.control.write_sb)
        assert covered, f"{ld} is read by {loop[use]} with no wait on its scoreboard"
        checked += 1
    assert checked >= 8


@needs_tools
def test_the_loop_schedule_counts_what_the_words_say(compiled):
    """loop_schedule on a tiled kernel's loop: every instruction stalls its warp at least a cycle
    and at most 15, some (not all) instructions wait on a scoreboard, the FFMAs reuse operands;
    a dump without words gives NaN rather than a count."""
    loop = sass.main_loop(compiled)
    s = sass.loop_schedule(compiled)
    assert len(loop) <= s["loop_stall_cycles"] <= 15 * len(loop)
    assert 0 < s["loop_waits"] < len(loop)
    assert s["loop_reuse"] > len(loop) // 4
    bare = [sass.Instr(i.addr, i.opcode, i.operands, i.pred) for i in compiled]
    assert all(v != v for v in sass.loop_schedule(bare).values())


def test_bank_conflicts_count_reads_of_one_bank_beyond_the_first():
    """By hand, banks = register mod 4 (mod 2 in the last line): R0, R4, R8 are all bank 0 (2
    extra reads); R1, R2, R3 three banks (none); R5 twice is one read; the reuse flag of slot a
    on the first instruction serves R0 to the second, whose R4 and R8 are then one extra read; a
    constant or RZ reads no register; an integer add is not counted."""
    def i(op, operands, reuse=0):
        return sass.Instr(0, op, operands, "", (0, (1 | 1 << 4 | 7 << 5 | 7 << 8 | reuse << 17) << 41))

    loop = [i("FFMA", "R1, R0, R4, R8"), i("FFMA", "R1, R1, R2, R3"), i("FFMA", "R9, R5, R5, R6"),
            i("FFMA", "R1, R0.reuse, R4, R8", reuse=1), i("FFMA", "R2, R0, R4, R8"),
            i("FFMA", "R1, R4, c[0x0][0x10], RZ"), i("IADD3", "R1, R0, R4, R8")]
    assert sass.bank_conflicts_each(loop, 4) == [2, 0, 0, 2, 1, 0, 0]
    assert sass.bank_conflicts(loop, 4) == 5
    assert sass.bank_conflicts([i("FFMA", "R1, R0, R2, R5")], 2) == 1  # R0, R2 even; R5 odd


def test_bank_rules_by_hand():
    """The other rules of bank_conflicts_each, by hand: R0, R2, R4 share bank 0 mod 2 (two extra
    reads; one under mod-all3, where a bank serves two); as 64-bit pairs (pair: (r // 2) mod 2) they
    fall in banks 0, 1, 0 (one extra read); without slot c (-ab) R0 and R2 are one extra read mod 2
    and none as pairs; an unknown rule is refused."""
    import pytest

    loop = [sass.Instr(0, "FFMA", "R1, R0, R2, R4", "", (0, (1 | 1 << 4 | 7 << 5 | 7 << 8) << 41))]
    assert sass.bank_conflicts_each(loop, 2, "mod-extra") == [2]
    assert sass.bank_conflicts_each(loop, 2, "mod-all3") == [1]
    assert sass.bank_conflicts_each(loop, 2, "pair-extra") == [1]
    assert sass.bank_conflicts_each(loop, 2, "pair-all3") == [0]
    assert sass.bank_conflicts_each(loop, 2, "mod-extra-ab") == [1]
    assert sass.bank_conflicts_each(loop, 2, "pair-extra-ab") == [0]
    with pytest.raises(ValueError):
        sass.bank_conflicts_each(loop, 2, "mod-any")
