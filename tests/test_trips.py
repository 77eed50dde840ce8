"""study.toolchain.trips: the main loop's passes read from its own compare, on hand-written SASS
(the counts worked out by hand) and on compiled kernels (the counts from their tiles)."""

from __future__ import annotations

import pytest
from conftest import needs_tools

from study.toolchain import trips
from study.toolchain.sass import Instr

K_AT = 0x218  # where SGEMM_KERNEL_PARAMS puts K (after M and N) in constant bank 0


def _code(*lines):
    return [Instr(0x10 * i, op, args, pred) for i, (pred, op, args) in enumerate(lines)]


def _loop(instrs, first, last):
    return [i for i in instrs if first <= i.addr <= last]


def test_a_back_edge_loop_runs_until_its_counter_reaches_k():
    """k = 0; do { 2 FFMA; k += 16 } while (!(k >= K)): K / 16 passes."""
    code = _code(("", "MOV", "R2, RZ"),
                 ("", "FFMA", "R4, R5, R6, R4"),
                 ("", "FFMA", "R7, R5, R6, R7"),
                 ("", "IADD3", "R2, R2, 0x10, RZ"),
                 ("", "ISETP.GE.AND", f"P0, PT, R2, c[0x0][{K_AT:#x}], PT"),
                 ("@!P0", "BRA", "0x10"),
                 ("", "EXIT", ""))
    loop = _loop(code, 0x10, 0x50)
    assert trips.loop_trips(code, loop, {K_AT: 3584}) == 224
    assert trips.loop_trips(code, loop, {K_AT: 16}) == 1  # the body runs once before the compare
    assert trips.loop_trips(code, loop, None) is None  # no arguments: no sizes to compare with


def test_a_loop_left_from_its_middle_counts_the_ffmas_before_the_exit():
    """for (k = 0; k < K; k += 32) with the compare at the top: 1 FFMA, the exit, 2 FFMAs. At
    K = 256 eight passes run whole and the ninth runs its first FFMA: 8 + 1/3."""
    code = _code(("", "MOV", "R2, RZ"),
                 ("", "FFMA", "R4, R5, R6, R4"),
                 ("", "ISETP.GE.AND", f"P1, PT, R2, c[0x0][{K_AT:#x}], PT"),
                 ("@P1", "BRA", "0x90"),
                 ("", "FFMA", "R7, R5, R6, R7"),
                 ("", "FFMA", "R8, R5, R6, R8"),
                 ("", "IADD3", "R2, R2, 0x20, RZ"),
                 ("", "BRA", "0x10"),
                 ("", "NOP", ""),
                 ("", "EXIT", ""))
    loop = _loop(code, 0x10, 0x70)
    assert trips.loop_trips(code, loop, {K_AT: 256}) == pytest.approx(8 + 1 / 3)


def test_a_uniform_compare_copied_into_the_branch_predicate_is_followed():
    """The compiler's pattern for a uniform counter: UISETP into UP0, PLOP3.LUT (0x80) copies it
    into P0, the back edge branches on !P0. Counting down from K by 8: K / 8 passes."""
    code = _code(("", "MOV", f"R9, c[0x0][{K_AT:#x}]"),
                 ("", "R2UR", "UR4, R9"),
                 ("", "FFMA", "R4, R5, R6, R4"),
                 ("", "UIADD3", "UR4, UR4, -0x8, URZ"),
                 ("", "UISETP.LE.AND", "UP0, UPT, UR4, URZ, UPT"),
                 ("", "PLOP3.LUT", "P0, PT, PT, PT, UP0, 0x80, 0x0"),
                 ("@!P0", "BRA", "0x20"),
                 ("", "EXIT", ""))
    loop = _loop(code, 0x20, 0x60)
    assert trips.loop_trips(code, loop, {K_AT: 4096}) == 512


def test_a_compare_that_does_not_move_gives_no_count():
    code = _code(("", "MOV", "R2, RZ"),
                 ("", "FFMA", "R4, R5, R6, R4"),
                 ("", "ISETP.GE.AND", f"P0, PT, R2, c[0x0][{K_AT:#x}], PT"),
                 ("@!P0", "BRA", "0x10"),
                 ("", "EXIT", ""))
    assert trips.loop_trips(code, _loop(code, 0x10, 0x30), {K_AT: 4096}) is None
    # a compare of a value the interpreter does not know (a load's result)
    code = _code(("", "LDG.E", "R2, desc[UR4][R10.64]"),
                 ("", "FFMA", "R4, R5, R6, R4"),
                 ("", "IADD3", "R2, R2, 0x10, RZ"),
                 ("", "ISETP.GE.AND", f"P0, PT, R2, c[0x0][{K_AT:#x}], PT"),
                 ("@!P0", "BRA", "0x10"),
                 ("", "EXIT", ""))
    assert trips.loop_trips(code, _loop(code, 0x10, 0x40), {K_AT: 4096}) is None


def _guarded_bound(guard):
    """Triton 3.6's G10 in little: the bound (K + 7) / 8 is set up, then a branch on K > 7 jumps
    over the path for a K too short for the loop, which clears the bound's register; the loop
    counts 2 a pass up to the bound."""
    return _code(("", "IADD3", f"R4, c[0x0][{K_AT:#x}], 0x7, RZ"),
                 ("", "ISETP.GT.AND", "P0, PT, R4, 0x7, PT"),
                 (guard, "BRA", "0x50"),
                 ("", "CS2R", "R4, SRZ"),  # the short path: the accumulators (and R4) cleared
                 ("", "BRA", "0xc0"),
                 ("", "SHF.R.S32.HI", "R153, RZ, 0x3, R4"),
                 ("", "UMOV", "UR4, URZ"),
                 ("", "FFMA", "R8, R5, R6, R8"),  # 0x70: the loop
                 ("", "UIADD3", "UR4, UR4, 0x2, URZ"),
                 ("", "ISETP.LE.AND", "P2, PT, R153, UR4, PT"),
                 ("@!P2", "BRA", "0x70"),
                 ("", "EXIT", ""),
                 ("", "EXIT", ""))


def test_a_known_branch_before_the_loop_is_followed_over_the_code_it_skips():
    """At K = 1024 the bound is 128 and the loop runs 64 passes: the branch is taken, so the
    cleared register is never read. Played straight through, the bound would read 0 (one pass)."""
    code = _guarded_bound("@P0")
    loop = _loop(code, 0x70, 0xa0)
    assert trips.loop_trips(code, loop, {K_AT: 1024}) == 64
    assert trips.loop_trips(code, loop, {K_AT: 4096}) == 256


def test_a_branch_whose_predicate_is_not_known_falls_through():
    """The same code guarded by a predicate nothing wrote: the branch is not followed, and the
    straight path clears the bound (as before the rule): the count is the one the cleared bound
    gives, not a guess at the branch."""
    code = _guarded_bound("@P5")
    assert trips.loop_trips(code, _loop(code, 0x70, 0xa0), {K_AT: 1024}) == 1


@needs_tools
@pytest.mark.parametrize("kid, bk", [("K3", 32), ("K7", 8)])
def test_a_compiled_kernel_runs_k_over_its_tile_depth(kid, bk):
    """K3 and K7 loop once per K-tile (BK = 32 and 8, their registrations), one tile per pass."""
    from study import kernels
    from study.predict import model
    from study.toolchain import compile as tc
    from study.toolchain import sass

    path = kernels.get(kid).path_for(4096, 4096, 4096)
    instrs = sass.dump_sass(tc.compile_cuda(path, "sm_90"), path.symbol)
    loop = sass.main_loop(instrs)
    for K in (4096, 3584):
        assert trips.loop_trips(instrs, loop, model.sgemm_params((4096, 4096, K))) == K / bk


@needs_tools
def test_k12s_loop_leaves_its_last_k_tile_to_the_code_after_it():
    """K12 double-buffers its K-tiles (BK = 16): the loop runs K / 16 - 1 passes and the last
    tile's FFMAs (a pass's worth) come after it."""
    from study import kernels
    from study.predict import model
    from study.toolchain import compile as tc
    from study.toolchain import sass

    path = kernels.get("K12").path_for(4096, 4096, 4096)
    instrs = sass.dump_sass(tc.compile_cuda(path, "sm_90"), path.symbol)
    loop = sass.main_loop(instrs)
    assert trips.loop_trips(instrs, loop, model.sgemm_params((4096, 4096, 4096))) == 4096 / 16 - 1
    after = [i for i in instrs if i.addr > loop[-1].addr and i.base == "FFMA"]
    assert len(after) >= sum(1 for i in loop if i.base == "FFMA")


@needs_tools
@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (1, 18944, 3584)])
def test_every_cuda_kernels_passes_agree_with_the_ffmas_its_tiles_need(shape):
    """Every registered CUDA kernel, at the main shape and at one token: the passes its loop's
    compare allows (the way to the loop as warp 0 takes it) are the passes its tiles' FFMAs need,
    or one fewer where the last K-tile runs after the loop (KD's streaming path too: its split's
    bounds come from integer divisions before the loop); KD's balanced tiled path, whose compare
    the SASS does not tell, gives none."""
    from study import kernels
    from study.predict.__main__ import registered

    M, N, K = shape
    for k in kernels.by_impl("cuda"):
        if not k.registrations:
            continue
        (body, _), launch, _ = registered(k.id, shape, "sm_90", sms=132)  # the H200's SMs
        if launch.balanced:
            assert launch.passes is None, k.id
            continue
        ffma = sum(1 for i in body if i.base == "FFMA")
        Mp, Np = launch.padded(M, N)
        need = Mp * Np * K / (launch.blocks * (launch.compute_threads or launch.threads) * ffma)
        assert launch.passes in (need, need - 1), (k.id, launch.passes, need)
