"""The issue simulation of a loop body (study.predict.issue) on hand-made instruction streams,
each with the cycles worked out by hand: stall counts, scheduler sharing, a shared load's latency
behind its scoreboard, a pipe's throughput, a barrier, async copies behind DEPBAR."""

from __future__ import annotations

import dataclasses

import pytest

from study.predict import issue
from study.toolchain.sass import Instr

C = issue.Constants(lds_latency=30, ldg_latency=600, ldl_latency=40, read_latency=4, barrier_latency=20,
                    smem_wavefronts_per_cycle=1.0, fma_cycles=1, alu_cycles=2, mio_queue=8, banks=4,
                    bank_cycles=1)


def ins(op: str, operands: str = "", stall=1, write=7, read=7, wait=(), pred="") -> Instr:
    c = stall | 1 << 4 | write << 5 | read << 8 | sum(1 << i for i in wait) << 11
    return Instr(0, op, operands, pred, (0, c << 41))


def ffmas(n: int, stall: int = 1) -> list[Instr]:
    return [ins("FFMA", "R0, R1, R2, R0", stall=stall) for _ in range(n)]


BRA = ins("BRA", "0x0")


def test_one_warp_issues_one_instruction_a_cycle_on_its_scheduler_only():
    r = issue.simulate(ffmas(15) + [BRA], warps_per_block=1, blocks=1, c=C)
    assert r.cycles_per_iteration == 16  # 16 instructions at stall 1
    assert r.issue_pct == pytest.approx(25.0)  # one of the four schedulers


def test_a_warp_per_scheduler_fills_every_issue_slot():
    r = issue.simulate(ffmas(15) + [BRA], warps_per_block=4, blocks=1, c=C)
    assert r.cycles_per_iteration == 16 and r.issue_pct == pytest.approx(100.0)


def test_stall_counts_are_hidden_by_as_many_warps_as_the_stall_is_long():
    body = ffmas(7, stall=4) + [ins("BRA", "0x0", stall=4)]
    alone = issue.simulate(body, warps_per_block=4, blocks=1, c=C)  # one warp per scheduler
    assert alone.cycles_per_iteration == 32 and alone.issue_pct == pytest.approx(25.0)
    full = issue.simulate(body, warps_per_block=16, blocks=1, c=C)  # four per scheduler
    assert full.cycles_per_iteration == 32 and full.issue_pct == pytest.approx(100.0)


def test_a_shared_load_is_waited_for_through_its_scoreboard():
    """LDS at t (1 wavefront, served in [t, t+1)), its result at t+1+30; the FFMA waiting on its
    scoreboard issues then, the branch a cycle later, the next LDS a cycle after: 33 cycles."""
    body = [ins("LDS", "R4, [R2]", write=0), ins("FFMA", "R0, R4, R5, R3", wait=(0,)), BRA]
    r = issue.simulate(body, warps_per_block=1, blocks=1, c=C)
    assert r.cycles_per_iteration == 33
    assert max(r.stalls, key=r.stalls.get) == "short_scoreboard"


def test_a_spill_reload_waits_for_the_l1_not_for_dram():
    """LDL at t, its result at t + 40 (ldl_latency), the FFMA on its scoreboard then, the branch a
    cycle later, the next LDL a cycle after: 42 cycles; an LDG in its place: 600 + 2."""
    ldl = [ins("LDL", "R4, [R1+0x10]", write=0), ins("FFMA", "R0, R4, R5, R3", wait=(0,)), BRA]
    ldg = [ins("LDG.E", "R4, desc[UR4][R2.64]", write=0), ins("FFMA", "R0, R4, R5, R3", wait=(0,)), BRA]
    assert issue.simulate(ldl, warps_per_block=1, blocks=1, c=C).cycles_per_iteration == 42
    assert issue.simulate(ldg, warps_per_block=1, blocks=1, c=C).cycles_per_iteration == 602


def test_unit_cycles_from_the_lanes_replace_the_width_rule():
    """A 128-bit load whose 32 lanes read one float4 (a broadcast: 2 cycles, one per half-warp)
    rather than the 4 of its width: 8 such loads from four warps need 16 unit cycles a pass."""
    body = [ins("LDS.128", "R4, [R2]") for _ in range(2)] + [BRA]
    r = issue.simulate(body, warps_per_block=4, blocks=1, c=C, iterations=40,
                       l1_cycles=[2, 2, None])
    assert r.cycles_per_iteration == pytest.approx(16, abs=1)
    with pytest.raises(ValueError, match="one entry per instruction"):
        issue.simulate(body, warps_per_block=4, blocks=1, c=C, l1_cycles=[2])


def test_a_global_load_holds_the_unit_for_its_lines_then_waits_for_memory():
    """One warp: an LDG of 32 lines (one per lane) holds the unit for 32 cycles, then its data
    comes 600 cycles later: the FFMA on its scoreboard issues at 32 + 600, the branch a cycle
    after, the next LDG a cycle later: 634. A global load of unknown lines holds no unit time."""
    body = [ins("LDG.E", "R4, desc[UR4][R2.64]", write=0), ins("FFMA", "R0, R4, R5, R3", wait=(0,)), BRA]
    r = issue.simulate(body, warps_per_block=1, blocks=1, c=C, l1_cycles=[32, None, None])
    assert r.cycles_per_iteration == 634
    assert issue.simulate(body, warps_per_block=1, blocks=1, c=C).cycles_per_iteration == 602


def test_a_wide_shared_load_holds_the_unit_for_each_of_its_wavefronts():
    """LDS.128: 4 wavefronts; eight of them from four warps (one per scheduler) need 32 unit cycles
    an iteration once the schedulers' queues are full (40 passes: the second half is past that)."""
    body = [ins("LDS.128", "R4, [R2]") for _ in range(2)] + [BRA]
    r = issue.simulate(body, warps_per_block=4, blocks=1, c=C, iterations=40)
    assert r.cycles_per_iteration == pytest.approx(32, abs=1)
    assert r.pipe_busy["shared"] == pytest.approx(1.0, abs=0.05) and "mio_throttle" in r.stalls


def test_the_integer_pipe_takes_two_cycles_a_warp_instruction():
    body = [ins("IADD3", "R1, R1, 0x1, RZ") for _ in range(7)] + [BRA]
    r = issue.simulate(body, warps_per_block=1, blocks=1, c=C)
    assert r.cycles_per_iteration == 7 * 2 + 1 - 1  # each IADD3 waits out the pipe; the BRA does not
    assert "math_pipe_throttle" in r.stalls


def test_a_barrier_holds_every_warp_of_the_block_until_the_last_arrives():
    """Warps 0 and 1 of one block (schedulers 0 and 1) run the same body: 3 instructions, then the
    barrier; with stall 10 on the first, each reaches the barrier at 10 + 2 = 12 and leaves at
    12 + 20 = 32, so an iteration is 32 + 1 (BAR issue) + 1 (BRA): the release counts from the
    last arrival."""
    body = [ins("FFMA", "R0, R1, R2, R0", stall=10), ins("FFMA", "R0, R1, R2, R0"),
            ins("BAR.SYNC.DEFER_BLOCKING", "0x0"), BRA]
    r = issue.simulate(body, warps_per_block=2, blocks=1, c=C)
    assert r.cycles_per_iteration == 10 + 1 + 20 + 1
    assert "barrier" in r.stalls


def test_async_copies_are_waited_for_at_depbar():
    """An LDGSTS at t, its group committed by LDGDEPBAR (scoreboard 0), DEPBAR.LE SB0, 0x0 waits
    until the copy lands at t + 600; then the branch: 600 + 2 cycles an iteration."""
    body = [ins("LDGSTS.E", "[R2], desc[UR4][R4.64]"), ins("LDGDEPBAR", "", write=0),
            ins("DEPBAR.LE", "SB0, 0x0"), BRA]
    r = issue.simulate(body, warps_per_block=1, blocks=1, c=C)
    assert r.cycles_per_iteration == 600 + 2
    assert max(r.stalls, key=r.stalls.get) == "long_scoreboard"


def test_reads_of_one_register_bank_hold_the_scheduler_a_cycle_each_beyond_the_first():
    """FFMA R1, R0, R4, R8 reads three registers of bank 0 (mod 4): 2 extra dispatch cycles, so 3
    a FFMA; four warps on each scheduler: (7 x 3 + 1) x 4 = 88 cycles an iteration for 32 issued
    instructions per scheduler. With slot a's reuse flag set, the next FFMA finds R0 in the reuse
    cache and reads two: 2 cycles, except after the branch."""
    plain = [ins("FFMA", "R1, R0, R4, R8") for _ in range(7)] + [BRA]
    r = issue.simulate(plain, warps_per_block=16, blocks=1, c=C)
    assert r.cycles_per_iteration == 88 and r.issue_pct == pytest.approx(100 * 32 / 88)
    assert "dispatch_stall" in r.stalls
    c = 1 | 1 << 4 | 7 << 5 | 7 << 8 | 1 << 17  # stall 1, no scoreboards, reuse slot a
    reused = [Instr(0, "FFMA", "R1, R0.reuse, R4, R8", "", (0, c << 41)) for _ in range(7)] + [BRA]
    r = issue.simulate(reused, warps_per_block=16, blocks=1, c=C)
    assert r.cycles_per_iteration == (3 + 6 * 2 + 1) * 4


def test_a_body_without_scheduling_words_is_refused():
    with pytest.raises(ValueError, match="scheduling word"):
        issue.simulate([Instr(0, "FFMA", "R0, R1, R2, R0")], warps_per_block=1, blocks=1, c=C)


def at(addr: int, i: Instr) -> Instr:
    return Instr(addr, i.opcode, i.operands, i.pred, i.words)


def lines_of_code(n: int) -> list[Instr]:
    """n lines of 8 instructions (16 bytes each, 128 a line) at stall 1, the back edge last."""
    body = ffmas(8 * n - 1) + [BRA]
    return [at(16 * k, i) for k, i in enumerate(body)]


# an instruction cache of two lines in two sets of one way, refilled in 10 cycles
ICACHE = dict(icache_lines=2, icache_ways=1, icache_refill=10)


def test_lines_that_share_a_set_beyond_its_ways_miss_on_every_pass():
    """Three lines, two sets of one way: lines 0 and 2 evict each other, line 1 stays. Each pass
    waits 10 cycles at line 0 and 10 at line 2: 24 instructions in 44 cycles."""
    c = issue.Constants(**{**C.as_dict(), **ICACHE, "icache_prefetch": 0})
    r = issue.simulate(lines_of_code(3), warps_per_block=1, blocks=1, c=c)
    assert r.cycles_per_iteration == 44
    assert max(r.stalls, key=r.stalls.get) == "no_instruction"
    assert issue.simulate(lines_of_code(3), 1, 1, C).cycles_per_iteration == 24  # no cache modelled


def test_a_line_prefetched_with_the_one_before_it_arrives_sooner():
    """With one line of prefetch, line 2 is asked for when the warp reaches line 1, 8 cycles before
    it needs it: it waits 2 cycles there and 10 at line 0 (nothing asks for it ahead of the back
    edge): 24 instructions in 36 cycles."""
    c = issue.Constants(**{**C.as_dict(), **ICACHE, "icache_prefetch": 1})
    assert issue.simulate(lines_of_code(3), warps_per_block=1, blocks=1, c=c).cycles_per_iteration == 36


def test_a_loop_whose_lines_fit_its_sets_is_not_played_through_the_cache():
    c = issue.Constants(**{**C.as_dict(), **ICACHE})
    assert not issue.overflows([k // 8 for k in range(16)], sets=2, ways=1)  # lines 0 and 1
    assert issue.overflows([k // 8 for k in range(24)], sets=2, ways=1)  # line 2 joins line 0's set
    assert issue.overflows(range(257), sets=64, ways=4)  # 32 KB of 4 ways: line 256 is set 0's fifth
    assert not issue.overflows(range(256), sets=64, ways=4)
    assert issue.simulate(lines_of_code(2), 4, 1, c) == issue.simulate(lines_of_code(2), 4, 1, C)


def test_an_mbarrier_test_answers_after_its_own_latency():
    """SYNCS.PHASECHK at t writes its scoreboard at t + mbar_latency; the branch that waits on it
    issues then and the next test a cycle later: a pass is the latency plus one cycle. Other
    variable-latency instructions (S2R) keep other_latency."""
    body = [ins("SYNCS.PHASECHK.TRANS64", "P0, [R2+URZ+0x100], R3", write=1), ins("BRA", "0x0", wait=(1,))]
    s2r = [ins("S2R", "R4, SR_TID.X", write=1), ins("BRA", "0x0", wait=(1,))]
    for lat in (20, 300):
        c = issue.Constants(**{**C.as_dict(), "mbar_latency": lat})
        assert issue.simulate(body, warps_per_block=1, blocks=1, c=c).cycles_per_iteration == lat + 1
        other = issue.simulate(s2r, warps_per_block=1, blocks=1, c=c)
        assert other.cycles_per_iteration == c.other_latency + 1


def test_global_loads_wait_in_their_own_queue_not_the_shared_one():
    """Four LDGs of 4 lines each and a branch, one warp: the unit serves a load every 4 cycles.
    With room for one waiting global access, each load after the first waits for the one before it
    to be taken: 16 cycles an iteration, the unit's, stalled on lg_throttle. With room for 64 (and
    for one shared access) nothing waits within the passes played: 5 cycles, one per instruction."""
    body = [ins("LDG.E", f"R{4 + n}, [R2.64]") for n in range(4)] + [BRA]
    lines = [4, 4, 4, 4, None]
    full = issue.simulate(body, 1, 1, dataclasses.replace(C, lg_queue=1, mio_queue=64), l1_cycles=lines)
    assert full.cycles_per_iteration == 16 and max(full.stalls, key=full.stalls.get) == "lg_throttle"
    room = issue.simulate(body, 1, 1, dataclasses.replace(C, lg_queue=64, mio_queue=1), l1_cycles=lines)
    assert room.cycles_per_iteration == 5 and "lg_throttle" not in room.stalls
