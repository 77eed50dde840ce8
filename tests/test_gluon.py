"""The Gluon kernels G6, G10, G12 and G15: their thread maps, their SASS, their launchers, their results.

Gluon kernels do not run under ``TRITON_INTERPRET=1`` (Triton 3.6 and 3.9 both send a
``@gluon.jit`` launch to the GPU driver), so correctness is checked on a GPU only; the CPU
tests check the layouts against the CUDA kernels' formulas, the AOT SASS for sm_90, and the
launchers' refusals. A Triton whose Gluon lacks what the twins use skips with the module's
one-line reason.
"""

from __future__ import annotations

import importlib
import math

import pytest
from conftest import gluon_module

from study import experiments
from study.measure import bench
from study.toolchain import sass, tools

MODULES = ("triton_kernels.g6_gluon", "triton_kernels.g10_gluon", "triton_kernels.g12_gluon",
           "triton_kernels.g15_gluon")
# N, K multiples of 4 (16-byte loads or copies, as K6's, K10's and K15's SGEMM_VEC4); G12 takes any shape
VEC4_MODULES = ("triton_kernels.g6_gluon", "triton_kernels.g10_gluon", "triton_kernels.g15_gluon")
# per K-tile of the CUDA twin (read off k6_vectorized.cu / k10_tuned.cu / k12_lean_issue.cu and
# their SASS): FFMA, LDS.128, LDG.128, LDGSTS (cp.async), barriers; PEELED: K-tiles outside the
# main loop (K12 peels its last one)
PER_PHASE = {
    "triton_kernels.g6_gluon": dict(FFMA=1024, LDS128=96, LDG128=10, LDGSTS=0, BAR=2, PEELED=0),
    "triton_kernels.g10_gluon": dict(FFMA=1024, LDS128=48, LDG128=3, LDGSTS=0, BAR=1, PEELED=0),
    # K12's 128 x 256 x 16 tile, 256 threads, 16 x 8 outputs each: per k-step 128 FFMA and
    # 16 / 4 + 8 / 4 LDS.128, 16 k-steps; 4-byte copies 128 * 16 / 256 = 8 of A and
    # 16 * 256 / 256 = 16 of B per thread; no LDG; one barrier. Outside the loop: the odd phase
    # (the loop runs phases in pairs) and the last phase, written for either stage it reads
    "triton_kernels.g12_gluon": dict(FFMA=16 * 128, LDS128=16 * (4 + 2), LDG128=0, LDGSTS=8 + 16, BAR=1,
                                     PEELED=3),
    # K12's tile and loads (16 rows x 4 values of k by 16 LDS.128 every 4 k-steps: 4 a k-step), and
    # 16-byte copies: 128 * 16 / 4 / 256 = 2 of A and 16 * 256 / 4 / 256 = 4 of B per thread
    "triton_kernels.g15_gluon": dict(FFMA=16 * 128, LDS128=16 * (4 + 2), LDG128=0, LDGSTS=2 + 4, BAR=1,
                                     PEELED=3),
}
GPU_SHAPES = [(1, 4, 4), (33, 68, 20), (67, 132, 96), (4096, 4096, 4096), (300, 260, 36)]


_module = gluon_module  # the twin's module, or a skip naming why this Triton cannot build it


def _blocked_owner(layout, row: int, col: int, num_warps: int) -> set[int]:
    """Threads holding (row, col) of a tile under a 2-D row-major-order BlockedLayout."""
    spt, tpw, wpc = layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta
    assert list(layout.order) == [1, 0]
    r = (row // spt[0]) % (tpw[0] * wpc[0])
    c = (col // spt[1]) % (tpw[1] * wpc[1])
    lane = (r % tpw[0]) * tpw[1] + c % tpw[1]
    warp = (r // tpw[0]) * wpc[1] + c // tpw[1]
    assert warp < num_warps
    return {warp * 32 + lane}


# ---------------------------------------------------------------------------------------------
# thread -> output maps (CPU)


def test_g6_accumulator_is_k6s_thread_map():
    g6 = _module("triton_kernels.g6_gluon")
    from triton.experimental.gluon import language as gl

    acc = gl.BlockedLayout([8, 4], [1, 32], [4, 1], [1, 0])  # as written in g6_kernel
    assert (g6.BM, g6.BN, g6.BK, g6.NUM_WARPS, g6.TM, g6.TN) == (32, 128, 32, 4, 8, 4)
    for tid in range(128):
        tx, ty = tid % 32, tid // 32  # K6: blockDim (32, 4)
        for r in range(8):
            for c in range(4):
                row, col = 8 * ty + r, 4 * tx + c  # K6: i0 = 8 ty, columns 4 tx ..
                assert _blocked_owner(acc, row, col, 4) == {tid}


def _linear_offsets(layout, reg: int, lane: int, warp: int) -> tuple[int, int]:
    """The (row, column) a linear layout gives (register, lane, warp): every basis XORs its offset
    in where its bit is set."""
    row = col = 0
    for bits, bases in ((reg, layout.reg_bases), (lane, layout.lane_bases), (warp, layout.warp_bases)):
        for i, (dr, dc) in enumerate(bases):
            if bits >> i & 1:
                row, col = row ^ dr, col ^ dc
    return row, col


def _assert_linear_map(mod, shape: tuple[int, int], position) -> None:
    """The twin's ACC_LAYOUT puts acc[r][c] of every thread where ``position(tid, r, c)`` (the
    CUDA kernel's formulas) does, each output of the block tile exactly once: every basis of
    (register, lane, warp) XORs its (row, column) offset in where its bit is set."""
    bases = mod.ACC_BASES
    assert [len(bases["reg"]), len(bases["lane"]), len(bases["warp"])] == [7, 5, 3]
    layout = mod.ACC_LAYOUT.value
    assert layout.reg_bases == bases["reg"] and layout.lane_bases == bases["lane"]
    assert layout.warp_bases == bases["warp"] and list(layout.shape) == list(shape)
    seen = set()
    for tid in range(256):
        warp, lane = divmod(tid, 32)
        for reg in range(128):
            row, col = _linear_offsets(layout, reg, lane, warp)
            # register bits: c, r in a 4x4 sub-block, then j, then i (acc[r][c]: r = 4i + .., c = 4j + ..)
            r = 4 * (reg >> 5) + (reg >> 2 & 3)
            c = 4 * (reg >> 4 & 1) + (reg & 3)
            assert (row, col) == position(tid, r, c), (tid, reg)
            seen.add((row, col))
    assert len(seen) == shape[0] * shape[1]  # every output exactly once


def _k10_position(tid: int, r: int, c: int) -> tuple[int, int]:
    """(row, col) in the block tile of acc[r][c] of thread tid, by k10_tuned.cu's formulas."""
    BM, BN, TM, TN, WARPS_N = 256, 128, 16, 8, 2
    WM, WN = BM // 4, BN // WARPS_N
    LM, LN = WM // TM, WN // TN
    warp, lane = tid // 32, tid % 32
    lx = (lane & 1) | (((lane >> 2) & (LN // 2 - 1)) << 1)
    ly = ((lane >> 1) & 1) | ((lane // (2 * LN)) << 1)
    tm = (warp // WARPS_N) * WM + 4 * ly
    tn = (warp % WARPS_N) * WN + 4 * lx
    return tm + 4 * LM * (r // 4) + r % 4, tn + 4 * LN * (c // 4) + c % 4


def test_g10_linear_layout_is_k10s_lane_map():
    g10 = _module("triton_kernels.g10_gluon")
    _assert_linear_map(g10, (256, 128), _k10_position)


def _k12_position(tid: int, r: int, c: int) -> tuple[int, int]:
    """(row, col) in the block tile of acc[r][c] of thread tid, by k12_lean_issue.cu's k12_row
    and k12_col at its default parameters."""
    BM, BN, TM, TN, WARPS_M, WARPS_N = 128, 256, 16, 8, 2, 4
    WM, WN = BM // WARPS_M, BN // WARPS_N
    LM, LN = WM // TM, WN // TN
    warp, lane = tid // 32, tid % 32
    lx = (lane & 1) | (((lane >> 2) & (LN // 2 - 1)) << 1)
    ly = ((lane >> 1) & 1) | ((lane // (2 * LN)) << 1)
    row = (warp // WARPS_N) * WM + 4 * ly + 4 * LM * (r // 4) + r % 4
    col = (warp % WARPS_N) * WN + 4 * lx + 4 * LN * (c // 4) + c % 4
    return row, col


@pytest.mark.parametrize("name", ["triton_kernels.g12_gluon", "triton_kernels.g15_gluon"])
def test_g12_linear_layout_is_k12s_lane_map(name):
    mod = _module(name)
    assert (mod.BM, mod.BN, mod.BK, mod.NUM_WARPS, mod.TM, mod.TN) == (128, 256, 16, 8, 16, 8)
    assert (mod.WARPS_M, mod.WARPS_N) == (2, 4)
    _assert_linear_map(mod, (128, 256), _k12_position)


def test_g15_copies_of_a_write_whole_lines_of_row_major_slabs():
    # As of a stage is [BK / 4 * BM, 4] floats, row g * BM + m holding A[m][4g .. 4g + 3]. A copy
    # instruction (one register group of 4 values, one warp) must write 32 distinct 16-byte
    # pieces, each 8 consecutive lanes one aligned 128-byte line of shared memory (as B's copies,
    # 32 lanes on 512 contiguous bytes), and read 8 rows of A, 64 contiguous bytes each
    g15 = _module("triton_kernels.g15_gluon")
    layout = g15.A_COPY_LAYOUT.value
    rows, kg = g15.BK // g15.KG * g15.BM, g15.KG
    assert list(layout.shape) == [rows, kg] and kg == 4
    assert layout.reg_bases[:2] == [[0, 1], [0, 2]]  # a thread's 4 values of k: one 16-byte copy
    seen = set()
    for warp in range(g15.NUM_WARPS):
        for group in range(2 ** (len(layout.reg_bases) - 2)):
            pieces = []
            for lane in range(32):
                row, col = _linear_offsets(layout, group << 2, lane, warp)
                assert col == 0
                pieces.append(row)
                seen.update((row, c) for c in range(kg))
            assert len(set(pieces)) == 32, (warp, group, pieces)
            for eighth in range(4):
                lines = {row * 16 // 128 for row in pieces[8 * eighth:8 * eighth + 8]}
                assert len(lines) == 1 and pieces[8 * eighth] % 8 == 0, (warp, group, pieces)
            a_rows = {(row // g15.BM, row % g15.BM) for row in pieces}
            assert len({m for _, m in a_rows}) == 8 and len({g for g, _ in a_rows}) == 4
    assert len(seen) == rows * kg  # each value of the K-tile copied exactly once


# ---------------------------------------------------------------------------------------------
# launchers (CPU)


@pytest.mark.parametrize("name", MODULES)
def test_unsupported_reason_is_one_line_or_none(name):
    try:
        mod = importlib.import_module(name)
    except ImportError as e:
        pytest.skip(f"{name}: triton.experimental.gluon not importable: {e}")
    why = mod.unsupported_reason()
    assert mod.SUPPORTED == (why is None)
    if why is not None:
        import triton

        assert "\n" not in why and triton.__version__ in why


def test_a_missing_gluon_name_is_a_one_line_reason(monkeypatch):
    try:
        from triton_kernels import gluon_common as gc
    except ImportError as e:
        pytest.skip(f"triton.experimental.gluon not importable: {e}")
    import triton

    monkeypatch.delattr(gc.gl, "DistributedLinearLayout")
    why = gc.unsupported_reason()
    assert why == f"triton {triton.__version__}: triton.experimental.gluon lacks DistributedLinearLayout"


@pytest.mark.parametrize("name", VEC4_MODULES)
def test_launcher_refuses_before_launch(name):
    torch = pytest.importorskip("torch")
    mod = _module(name)
    a, b = torch.ones(8, 8), torch.ones(8, 6)
    with pytest.raises(ValueError, match=r"N must be a multiple of 4"):
        mod.matmul(a, b)
    with pytest.raises(ValueError, match=r"K must be a multiple of 4"):
        mod.matmul(torch.ones(8, 6), torch.ones(6, 8))
    with pytest.raises(ValueError, match="float32"):
        mod.matmul(a.double(), torch.ones(8, 8).double())
    with pytest.raises(ValueError, match="inner dimensions"):
        mod.matmul(a, torch.ones(4, 8))
    with pytest.raises(ValueError, match="CUDA tensors"):
        mod.matmul(a, torch.ones(8, 8))
    with pytest.raises(ValueError, match="num_stages"):
        mod.aot_spec(num_stages=3)


def test_g12_launcher_takes_any_shape_and_refuses_before_launch():
    torch = pytest.importorskip("torch")
    g12 = _module("triton_kernels.g12_gluon")
    assert g12.MULTIPLE_OF == (1, 1, 1)  # K12 is SGEMM_PLAIN: N = 6, K = 6 reach the device check
    with pytest.raises(ValueError, match="CUDA tensors"):
        g12.matmul(torch.ones(8, 6), torch.ones(6, 6))
    with pytest.raises(ValueError, match="float32"):
        g12.matmul(torch.ones(8, 8).double(), torch.ones(8, 8).double())
    with pytest.raises(ValueError, match="inner dimensions"):
        g12.matmul(torch.ones(8, 8), torch.ones(4, 8))
    with pytest.raises(ValueError, match="num_stages"):
        g12.aot_spec(num_stages=2)
    assert g12.async_copy is not None
    assert g12.async_copy.__name__ in ("async_load", "async_copy_global_to_shared")


@pytest.mark.parametrize("attr, value, match", [("B_STEP", 16, "B_STEP = 16"), ("B_STEP", -1, "B_STEP = -1"),
                                                 ("A_LANES_K", 3, "A_LANES_K = 3")])
def test_g12_refuses_a_copy_schedule_it_would_get_wrong(attr, value, match, monkeypatch):
    # BK = 16 k-steps a phase: a B_STEP of 16 names none of them, so B's tile would never be copied
    g12 = _module("triton_kernels.g12_gluon")
    monkeypatch.setattr(g12, attr, value)
    with pytest.raises(ValueError, match=match):
        g12.aot_spec()
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=match):
        g12.matmul(torch.ones(8, 8), torch.ones(8, 8))


# ---------------------------------------------------------------------------------------------
# SASS for sm_90, compiled ahead of time (CPU)


@pytest.mark.skipif(tools.find_cuobjdump() is None, reason="needs cuobjdump (PATH or the triton wheel)")
@pytest.mark.parametrize("name", MODULES)
def test_aot_main_loop_is_pure_ffma_with_the_cuda_twins_loads(name, tmp_path):
    mod = _module(name)
    from triton_kernels import aot

    k = aot.compile_sass_target(name, 90)
    cubin = tmp_path / f"{k.name}.cubin"
    cubin.write_bytes(k.cubin)
    instrs = sass.dump_sass(cubin)
    whole = sass.histogram(instrs)
    assert whole["HMMA"] == whole["HGMMA"] == whole["LDSM"] == 0, "tensor-core instructions"
    assert whole["LDL"] == whole["STL"] == 0, "register spills"
    loop = sass.histogram(sass.main_loop(instrs))
    want = PER_PHASE[name]
    assert loop["FFMA"] > 0 and loop["FFMA"] % want["FFMA"] == 0, loop
    phases = loop["FFMA"] // want["FFMA"]  # G10's loop holds two phases (its two named stages)
    assert loop["LDS"] == loop["LDS128"] == phases * want["LDS128"], loop
    assert loop["LDG"] == loop["LDG128"] == phases * want["LDG128"], loop
    assert loop["LDGSTS"] == phases * want["LDGSTS"], loop
    assert loop["BAR"] == phases * want["BAR"], loop
    assert k.num_warps * 32 == mod.NUM_WARPS * 32
    assert whole["FFMA"] == loop["FFMA"] + want["PEELED"] * want["FFMA"]


@pytest.mark.parametrize("shape", experiments.CHECK_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", ["triton_kernels.g12_gluon", "triton_kernels.g15_gluon"])
def test_g12_compiles_at_every_check_shape(name, shape):
    # the study checks every kernel at these shapes before it times it (a kernel that fails one is
    # not timed; one that refuses the shape is not checked there); K = 1 is the case Triton 3.6
    # lowers only with K left unspecialised
    mod = _module(name)
    if any(size % mult for size, mult in zip((shape[0], shape[1], shape[2]), mod.MULTIPLE_OF)):
        pytest.skip(f"{mod.NAME} refuses {shape}")
    from triton_kernels import aot

    k = aot.compile_sass_target(name, 90, shape=shape)
    assert k.name == f"{mod.NAME.lower()}_kernel" and k.cubin


# ---------------------------------------------------------------------------------------------
# results against float64 (GPU)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", MODULES)
def test_gluon_twin_matches_float64(name, shape):
    mod = _module(name)
    M, N, K = shape
    err = bench.check(mod.matmul, M, N, K, seed=M + 3 * N + 7 * K)  # NaN-poisoned output
    assert math.isfinite(err) and err <= bench.TOLERANCE, f"{name} at {M}x{N}x{K}: relative error {err:.2e}"


@pytest.mark.gpu
@pytest.mark.parametrize("name", MODULES)
def test_gluon_twin_writes_only_its_output(name):
    import torch

    mod = _module(name)
    a = torch.randn(70, 36, device="cuda")
    b = torch.randn(36, 132, device="cuda")
    big = torch.full((80, 140), float("nan"), device="cuda")
    out = big[:70, :132]  # a strided view: the border must stay NaN
    res = mod.matmul(a, b, out)
    torch.cuda.synchronize()
    assert res is out
    ref = a.double() @ b.double()
    assert torch.allclose(out.double(), ref, rtol=1e-4, atol=1e-4)
    assert torch.isnan(big[70:]).all() and torch.isnan(big[:, 132:]).all()


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(129, 257, 17), (1, 5, 3), (130, 258, 33), *experiments.CHECK_SHAPES],
                         ids=lambda s: "x".join(map(str, s)))
def test_g12_takes_any_shape(shape):
    g12 = _module("triton_kernels.g12_gluon")
    M, N, K = shape  # N and K not multiples of 4, a ragged first K-tile, rows and columns clamped
    err = bench.check(g12.matmul, M, N, K, seed=M + N + K)
    assert math.isfinite(err) and err <= bench.TOLERANCE, f"G12 at {M}x{N}x{K}: relative error {err:.2e}"


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(129, 260, 20), (1, 4, 4), (130, 516, 36), (257, 8, 1028),
                                   (1, 4096, 4096)], ids=lambda s: "x".join(map(str, s)))
def test_g15_takes_its_edges(shape):
    g15 = _module("triton_kernels.g15_gluon")
    M, N, K = shape  # rows and columns past the tile clamped, a ragged first K-tile of whole 16-byte copies
    err = bench.check(g15.matmul, M, N, K, seed=M + N + K)
    assert math.isfinite(err) and err <= bench.TOLERANCE, f"G15 at {M}x{N}x{K}: relative error {err:.2e}"
