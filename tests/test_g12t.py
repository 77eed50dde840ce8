"""G12T, G12's kernel on a transposed A, and TAT, tl.dot on it: their loops' SASS, G12T's copies,
the launchers, the results.

The CPU tests compile for sm_90 ahead of time (Gluon has no interpreter): one phase a loop
iteration with K12's loads and G12's FFMAs, 16-byte copies of both operands whose writes into
shared memory meet no bank conflict (G12's copies of A do), and the transposition's 16-byte global
accesses. The GPU tests check results against float64 on ragged shapes, both copy widths and
strided operands; TAT's against float64 as well, its loads of A on At being K12's kind.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
from conftest import gluon_module

from study import experiments
from study.measure import bench
from study.toolchain import sass, tools

NEEDS_CUOBJDUMP = pytest.mark.skipif(tools.find_cuobjdump() is None,
                                     reason="needs cuobjdump (PATH or the triton wheel)")


def _module(name: str = "triton_kernels.g12t_gluon"):
    return gluon_module(name)


def _loop(spec, tmp_path):
    """The main loop's instructions of ``spec`` compiled for sm_90, and the whole kernel's."""
    from study.predict import model
    from triton_kernels import aot

    k = aot.compile_sass_target(spec, 90)
    cubin = tmp_path / f"{k.name}.cubin"
    cubin.write_bytes(k.cubin)
    instrs = sass.dump_sass(cubin, k.name)
    loop, _ = model.main_loop_of(instrs, model.cubin_params(k.arguments))
    return instrs, loop


@NEEDS_CUOBJDUMP
def test_the_loop_is_one_phase_of_k12s_loads_with_16_byte_copies(tmp_path):
    g12t = _module()
    instrs, loop = _loop(g12t.aot_spec(), tmp_path)
    ops = Counter(i.opcode for i in loop)
    # K12's 128 x 256 x 16 tile, 256 threads, 16 x 8 outputs: 16 k-steps of 128 FFMA and
    # 16 / 4 + 8 / 4 LDS.128; 16-byte copies: 128 * 16 / 4 / 256 = 2 of A, 16 * 256 / 4 / 256 = 4 of B
    assert ops["FFMA"] == 16 * 128, ops
    assert ops["LDS.128"] == 16 * (4 + 2), ops
    assert sum(n for o, n in ops.items() if o.startswith("LDGSTS") and o.endswith(".128")) == 2 + 4, ops
    assert sum(n for o, n in ops.items() if o.startswith("LDGSTS")) == 2 + 4, ops
    # the phase's barrier, and the one the compiler puts after copies into an indexed stage
    assert sum(n for o, n in ops.items() if o.startswith("BAR")) == 2, ops
    whole = sass.histogram(instrs)
    assert whole["LDL"] == whole["STL"] == 0, "register spills"
    assert whole["HMMA"] == whole["HGMMA"] == 0, "tensor-core instructions"


@NEEDS_CUOBJDUMP
def test_its_copies_meet_no_bank_conflict_where_g12s_copies_of_a_do(tmp_path):
    # the extra shared-memory wavefronts each copy's write takes, by the lanes' addresses as the
    # SASS computes them: none for G12T's; G12's 4-byte copies of a row-major A into As[k][m]
    # write 4 rows of one column per 8 lanes, 4-way (3 extra wavefronts)
    from study.toolchain import l1

    g12t = _module()
    g12 = _module("triton_kernels.g12_gluon")
    extra = {}
    for name, spec in (("G12T", g12t.aot_spec()), ("G12", g12.aot_spec())):
        instrs, loop = _loop(spec, tmp_path)
        extra[name] = Counter(c for i, c in zip(loop, l1.l1_cycles(instrs, loop)) if i.base == "LDGSTS")
    assert extra["G12T"] == Counter({0: 6}), extra  # one phase: 2 copies of A, 4 of B
    assert extra["G12"] == Counter({0: 2 * 16, 3: 2 * 8}), extra  # two phases: 8 of A, 16 of B each


@NEEDS_CUOBJDUMP
def test_the_transposition_moves_16_bytes_a_lane(tmp_path):
    g12t = _module()
    from triton_kernels import aot

    args = dict(x_ptr=aot.Pointer(), y_ptr=aot.Pointer(), R=4096, C=4096, stride_xr=4096, stride_xc=1,
                TR=g12t.TT_R, TC=g12t.TT_C)
    k = aot.compile_sass_target(aot.KernelSpec(g12t.transpose_kernel, args, num_warps=g12t.TT_WARPS,
                                               num_stages=1), 90)
    cubin = tmp_path / "t.cubin"
    cubin.write_bytes(k.cubin)
    ops = Counter(i.opcode for i in sass.dump_sass(cubin, k.name))
    # a 64 x 64 tile on 128 threads: 32 values a thread, 8 loads and 8 stores of 4 floats
    per_thread = g12t.TT_R * g12t.TT_C // (32 * g12t.TT_WARPS) // 4
    assert ops["LDG.E.128"] == ops["STG.E.128"] == per_thread, ops


def test_it_is_g12s_kernel_and_thread_map_on_at():
    # G12T launches G12's kernel, whose accumulator layout test_gluon checks against K12's formulas;
    # only A's strides (At.T: 1 along m, M along k) and the schedule's constexprs differ
    g12t = _module()
    g12 = _module("triton_kernels.g12_gluon")
    spec, ref = g12t.aot_spec(), g12.aot_spec()
    assert spec.fn is ref.fn is g12.g12_kernel
    assert (spec.args["stride_am"], spec.args["stride_ak"]) == (1, spec.args["M"])
    assert (ref.args["stride_am"], ref.args["stride_ak"]) == (ref.args["K"], 1)
    assert spec.args["VEC"] == 4 and spec.args["INDEXED"] and spec.args["A_LANES_K"] == 1
    assert (spec.num_warps, spec.args["BM"], spec.args["BN"], spec.args["BK"]) == (8, 128, 256, 16)


@pytest.mark.parametrize("shape", experiments.CHECK_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_it_compiles_at_every_check_shape(shape):
    g12t = _module()
    from triton_kernels import aot

    k = aot.compile_sass_target(g12t.aot_spec(shape=shape), 90)
    assert k.name == "g12_kernel" and k.cubin


def test_the_copy_width_follows_the_operands():
    torch = pytest.importorskip("torch")
    g12t = _module()
    b = torch.ones(8, 8)
    assert g12t._vec(8, 8, b) == 4
    assert g12t._vec(6, 8, b) == 1  # rows of At, M floats, not whole 16-byte pieces
    assert g12t._vec(8, 6, torch.ones(8, 6)) == 1
    assert g12t._vec(8, 8, torch.ones(8, 16)[:, :8]) == 4  # a row stride of 16 floats
    assert g12t._vec(8, 7, torch.ones(8, 9)[:, :7]) == 1
    assert g12t._vec(8, 8, torch.ones(8, 9)[:, 1:]) == 1  # row stride 9
    assert g12t._vec(8, 8, torch.ones(16, 8).t()[:, :8].contiguous().t().t()) == 4


def test_refuses_before_launch_and_a_schedule_it_would_get_wrong(monkeypatch):
    torch = pytest.importorskip("torch")
    g12t = _module()
    with pytest.raises(ValueError, match="CUDA tensors"):
        g12t.matmul(torch.ones(8, 6), torch.ones(6, 6))
    with pytest.raises(ValueError, match="float32"):
        g12t.matmul(torch.ones(8, 8).double(), torch.ones(8, 8).double())
    with pytest.raises(ValueError, match="inner dimensions"):
        g12t.matmul(torch.ones(8, 8), torch.ones(4, 8))
    with pytest.raises(ValueError, match="num_stages"):
        g12t.aot_spec(num_stages=2)
    monkeypatch.setattr(g12t, "AHEAD", False)
    with pytest.raises(ValueError, match="G12T: INDEXED stages read the fragments a k-step ahead"):
        g12t.aot_spec()


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (1, 4, 4), (4, 4, 4), (129, 257, 17), (130, 258, 33),
                                   (128, 256, 16), (128, 256, 32), (200, 300, 17), (8, 12, 48),
                                   (256, 516, 1028), *experiments.CHECK_SHAPES],
                         ids=lambda s: "x".join(map(str, s)))
def test_g12t_matches_float64(shape):
    g12t = _module()
    M, N, K = shape  # both copy widths, ragged first K-tiles, 1, 2 and 3 phases, clamped edges
    err = bench.check(g12t.matmul, M, N, K, seed=M + 3 * N + 7 * K)  # NaN-poisoned output
    assert math.isfinite(err) and err <= bench.TOLERANCE, f"G12T at {M}x{N}x{K}: relative error {err:.2e}"


@pytest.mark.gpu
def test_g12t_takes_strided_operands_and_writes_only_its_output():
    import torch

    g12t = _module()
    a = torch.randn(36, 70, device="cuda").t()  # A as a transposed view
    b = torch.randn(36, 136, device="cuda")[:, :132]  # row stride 136
    big = torch.full((80, 140), float("nan"), device="cuda")
    out = big[:70, :132]
    assert g12t.matmul(a, b, out) is out
    torch.cuda.synchronize()
    assert torch.allclose(out.double(), a.double() @ b.double(), rtol=1e-4, atol=1e-4)
    assert torch.isnan(big[70:]).all() and torch.isnan(big[:, 132:]).all()
    assert torch.equal(g12t.transpose(a), a.t())


@NEEDS_CUOBJDUMP
def test_tat_reads_a_tile_of_at_with_16_byte_loads(tmp_path):
    _module()  # the transposition is G12T's Gluon kernel
    from triton_kernels import tat_transposed as tat

    instrs, loop = _loop(tat.aot_spec(), tmp_path)
    ops = Counter(i.opcode for i in loop)
    # 128 x 128 x 32 on 256 threads: 64 outputs a thread, 32 k-steps of 64 FFMA; a 16-byte copy per
    # 4 floats of the tiles, (128 * 32 + 32 * 128) / 4 / 256 = 8
    assert ops["FFMA"] == 32 * 64, ops
    assert sum(n for o, n in ops.items() if o.startswith("LDGSTS") and o.endswith(".128")) == 8, ops
    assert sass.histogram(instrs)["LDL"] == 0, "register spills"


def test_tat_refuses_a_cpu_tensor_before_launch():
    torch = pytest.importorskip("torch")
    _module()
    from triton_kernels import tat_transposed as tat

    if not __import__("triton_kernels.tile", fromlist=["interpreting"]).interpreting():
        with pytest.raises(ValueError, match="CUDA tensors"):
            tat.matmul(torch.ones(8, 8), torch.ones(8, 8))
    with pytest.raises(ValueError, match="inner dimensions"):
        tat.matmul(torch.ones(8, 8), torch.ones(4, 8))


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (1, 4, 4), (129, 257, 17), (130, 258, 33),
                                   *experiments.CHECK_SHAPES], ids=lambda s: "x".join(map(str, s)))
def test_tat_matches_float64(shape):
    _module()
    from triton_kernels import tat_transposed as tat

    M, N, K = shape
    err = bench.check(tat.matmul, M, N, K, seed=M + 5 * N + 3 * K)
    assert math.isfinite(err) and err <= bench.TOLERANCE, f"TAT at {M}x{N}x{K}: relative error {err:.2e}"
