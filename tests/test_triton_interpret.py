"""Triton kernels on the CPU: the interpreter for correctness, AOT compilation for SASS.

Correctness. ``TRITON_INTERPRET=1`` must be set before a kernel module is imported (the
``@triton.jit`` decorator reads it), and another test module may already have imported them
without it. So the interpreted runs happen in one child process, this file run as a script:
every Triton kernel of the registry, on small odd shapes, against a float64 reference, with
the output poisoned with NaN first.

AOT. Compiling for sm_90 needs no GPU: the cubin's SASS must hold FFMA and no tensor-core
instruction (the products are exact FP32), and the compile must specialise the arguments the
way the runtime JIT would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# (M, N, K): a single element, odd sizes across tile edges, M = 1 (decode-like), and odd M, N
# with K a multiple of 32 (EVEN_K: loads with no mask at all, edge rows/columns wrapped)
SHAPES = [(1, 1, 1), (33, 65, 17), (67, 131, 97), (1, 70, 45), (37, 70, 64)]
TOLERANCE = 1e-5  # relative Frobenius error against float64
SEED = 1234
TENSOR_CORE_OPS = {"HMMA", "HGMMA", "IMMA", "IGMMA", "DMMA", "QGMMA", "BMMA", "UTCHMMA", "UTCQMMA"}


# --------------------------------------------------------------------------------------------
# Child process: runs under TRITON_INTERPRET=1
# --------------------------------------------------------------------------------------------


def _interpreted_runs() -> list[dict]:
    import torch

    from study.kernels import by_impl

    assert os.environ.get("TRITON_INTERPRET") == "1"
    gen = torch.Generator().manual_seed(SEED)
    rows = []
    for kernel in by_impl("triton"):
        if kernel.gluon:  # Gluon has no CPU interpreter: the GPU tests check those (test_gluon.py)
            continue
        for M, N, K in SHAPES:
            a = torch.randn(M, K, generator=gen, dtype=torch.float32)
            b = torch.randn(K, N, generator=gen, dtype=torch.float32)
            out = torch.full((M, N), float("nan"), dtype=torch.float32)
            start = time.perf_counter()
            returned = kernel.launcher(a, b, out)
            seconds = time.perf_counter() - start
            ref = a.double() @ b.double()
            err = float(torch.linalg.norm(out.double() - ref) / torch.linalg.norm(ref))
            rows.append(dict(id=kernel.id, shape=[M, N, K], err=err, seconds=seconds,
                             same_out=returned is out, nan=bool(torch.isnan(out).any())))
    # strided operands: a transposed view of A and a column slice of B, with a partial last
    # K tile (K = 45) and with whole ones (K = 64, EVEN_K), through a twin and through TA
    from triton_kernels import t5_reg_tile_2d, ta_autotuned

    for rid, K, launch in (("T5p-strided", 45, lambda a, b: t5_reg_tile_2d.matmul(a, b, num_stages=3)),
                           ("T5-strided-even-k", 64, t5_reg_tile_2d.matmul),
                           ("TA-strided", 45, ta_autotuned.matmul),
                           ("TA-strided-even-k", 64, ta_autotuned.matmul)):
        a = torch.randn(K, 37, generator=gen).t()  # 37 x K, stride (1, 37)
        b = torch.randn(K, 140, generator=gen)[:, 3:73]  # K x 70, stride (140, 1)
        out = launch(a, b)
        ref = a.double() @ b.double()
        err = float(torch.linalg.norm(out.double() - ref) / torch.linalg.norm(ref))
        rows.append(dict(id=rid, shape=[37, 70, K], err=err, seconds=0.0, same_out=True,
                         nan=bool(torch.isnan(out).any())))
    return rows


# --------------------------------------------------------------------------------------------
# Parent process: pytest
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def interpreted():
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    done = subprocess.run([sys.executable, __file__, "--interpret"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"interpreter run failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    return {(r["id"], tuple(r["shape"])): r for r in rows}


def _triton_ids():
    sys.path.insert(0, str(ROOT))
    from study.kernels import by_impl

    return [k.id for k in by_impl("triton") if not k.gluon]  # Gluon: no CPU interpreter


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kid", _triton_ids())
def test_interpreted_kernel_matches_float64(interpreted, kid, shape):
    r = interpreted[(kid, tuple(shape))]
    assert r["same_out"], f"{kid} did not return the out tensor it was given"
    assert not r["nan"], f"{kid} left NaN in out at {shape}: some element was never written"
    assert r["err"] <= TOLERANCE, f"{kid} at {shape}: relative error {r['err']:.3e} > {TOLERANCE}"


@pytest.mark.parametrize("rid, K", [("T5p-strided", 45), ("T5-strided-even-k", 64), ("TA-strided", 45),
                                    ("TA-strided-even-k", 64)])
def test_interpreted_strided_operands(interpreted, rid, K):
    r = interpreted[(rid, (37, 70, K))]
    assert not r["nan"] and r["err"] <= TOLERANCE, r


def test_launcher_refuses_bad_operands():
    import torch

    from triton_kernels.tile import check_operands

    a, b = torch.ones(4, 3), torch.ones(3, 5)
    with pytest.raises(ValueError, match="float32"):
        check_operands(a.double(), b, None)
    with pytest.raises(ValueError, match="inner dimensions"):
        check_operands(a, torch.ones(4, 5), None)
    with pytest.raises(ValueError, match="2-D"):
        check_operands(a, torch.ones(3), None)
    with pytest.raises(ValueError, match=r"shape \(4, 5\)"):
        check_operands(a, b, torch.empty(5, 4))
    with pytest.raises(ValueError, match=">= 1"):
        check_operands(torch.ones(0, 3), b, None)
    if os.environ.get("TRITON_INTERPRET") != "1":
        with pytest.raises(ValueError, match="CUDA"):
            check_operands(a, b, None)


def test_autotuned_space_is_pruned_per_shape():
    from triton_kernels import ta_autotuned as ta

    if len(ta.CONFIGS) == 1:
        pytest.skip("TRITON_INTERPRET=1 in this process: the space is reduced to one config")
    big = ta.candidates(4096, 4096, 4096)
    assert 30 <= len(big) <= 48  # a tuning pass per shape must stay affordable
    assert all(c["BM"] <= 16 for c in ta.candidates(1, 4096, 4096))
    assert all(c["BM"] <= 32 for c in ta.candidates(32, 4096, 4096))
    assert any(c["BM"] == 128 and c["BN"] == 128 and c["num_warps"] == 8 for c in big)
    # the H200 winners at 4096^3 are in, and the space around them
    tiles = {(c["BM"], c["BN"], c["BK"], c["num_warps"], c["num_stages"]) for c in big}
    assert {(64, 64, 64, 4, 2), (64, 64, 64, 4, 3), (128, 64, 64, 8, 3)} <= tiles
    default = ta.DEFAULT_CONFIG
    assert tuple(default[k] for k in ("BM", "BN", "BK", "num_warps", "num_stages")) in tiles
    assert {(bm, bn) for bm, bn, _, w, _ in tiles if w == 4} >= {(64, 64), (64, 128), (128, 64)}
    assert {bk for *_, bk, w, _ in tiles if w == 4} >= {16, 32, 64, 128}
    # the ranges: 1..5 stages, 2..8 warps, block sides 32..256 (16 for decode)
    assert {s for *_, s in tiles} == {1, 2, 3, 4, 5}
    assert {w for *_, w, _ in tiles} == {2, 4, 8}
    assert min(min(bm, bn) for bm, bn, *_ in tiles) >= 32
    assert max(max(bm, bn) for bm, bn, *_ in tiles) == 256
    # small tiles only where 64x64 tiles would not fill the SMs; tiny problems tune little
    assert all(c["BM"] * c["BN"] >= 64 * 64 for c in big)
    assert any(c["BM"] * c["BN"] < 64 * 64 for c in ta.candidates(1024, 1024, 1024))
    assert len(ta.candidates(1024, 1024, 1024)) <= 50
    assert 1 <= len(ta.candidates(67, 131, 97)) <= ta.TINY_KEEP
    assert len(ta.candidates(1, 1, 1)) >= 1
    assert ta.best_config(12345, 1, 1) is None
    # a tuning result as the autotuner stores it: (M, N, K, dtype of each tensor) -> Config
    key = (12345, 1, 1, "torch.float32", "torch.float32", "torch.float32")
    ta.autotuned_matmul_kernel.cache[key] = ta.CONFIGS[0]
    try:
        assert ta.best_config(12345, 1, 1) == ta.config_dict(ta.CONFIGS[0])
        spec = ta.aot_spec(shape=(12345, 1, 1))
        assert spec.args["BM"] == ta.CONFIGS[0].kwargs["BM"]
        assert spec.num_warps == ta.CONFIGS[0].num_warps
        assert spec.args["EVEN_K"] is False  # K = 1: a partial K tile
    finally:
        del ta.autotuned_matmul_kernel.cache[key]
    assert ta.aot_spec().args["EVEN_K"] is True  # 4096 % BK == 0


def test_bk8_candidates_follow_what_tl_dot_accepts():
    """BK 8 is in the space exactly when the installed Triton's tl.dot takes K = 8 for FP32."""
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia import compiler

    from triton_kernels import ta_autotuned as ta

    if len(ta.CONFIGS) == 1:
        pytest.skip("TRITON_INTERPRET=1 in this process: the space is reduced to one config")
    k_min = compiler.min_dot_size(GPUTarget("cuda", 90, 32))(tl.float32, tl.float32)[2]
    assert ta.min_dot_k() == k_min
    bks = {c.kwargs["BK"] for c in ta.CONFIGS}
    assert (8 in bks) == (k_min <= 8)
    assert min(bks) == (8 if k_min <= 8 else 16)


# (BM, BN, BK, num_warps, num_stages): the default, the deepest pipeline, an 8-warp tile, a
# decode-sized tile, and the unpipelined case smem_bytes also claims to cover
SMEM_CASES = [(64, 64, 64, 4, 3), (64, 128, 32, 4, 5), (128, 128, 16, 8, 3), (16, 64, 32, 2, 5),
              (32, 128, 32, 4, 1)]


@pytest.mark.parametrize("tile", SMEM_CASES, ids=lambda t: "x".join(map(str, t)))
def test_smem_bytes_is_what_the_compiler_allocates(tile):
    """The pruning's shared-memory estimate = the shared memory of the compiled kernel."""
    from triton_kernels import ta_autotuned as ta
    from triton_kernels.aot import compile_sass_target

    bm, bn, bk, warps, stages = tile
    cfg = {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": ta.GROUP_M, "num_warps": warps, "num_stages": stages}
    compiled = compile_sass_target(ta, arch=90, config=cfg)
    config = ta.triton.Config({k: cfg[k] for k in ("BM", "BN", "BK", "GROUP_M")},
                              num_warps=warps, num_stages=stages)
    assert ta.smem_bytes(config) == compiled.shared


def test_autotuned_kernel_is_the_tile_kernel():
    """TA tunes the twins' kernel itself, not a copy: one source, one SASS symbol."""
    from triton_kernels import ta_autotuned as ta
    from triton_kernels import tile
    from triton_kernels.aot import _jit_function

    if len(ta.CONFIGS) == 1:
        pytest.skip("TRITON_INTERPRET=1 in this process: kernels are not JITFunctions")
    assert _jit_function(ta.autotuned_matmul_kernel) is tile.tiled_matmul_kernel
    assert "EVEN_K" in tile.tiled_matmul_kernel.arg_names


# --------------------------------------------------------------------------------------------
# AOT compilation for sm_90, no GPU
# --------------------------------------------------------------------------------------------


def test_aot_sm90_t5_is_ffma_without_tensor_cores():
    from study.toolchain import tools
    from triton_kernels import t5_reg_tile_2d
    from triton_kernels.aot import compile_sass_target

    k = compile_sass_target(t5_reg_tile_2d, arch=90, num_stages=1)
    assert k.name == "tiled_matmul_kernel"
    assert k.cubin[:4] == b"\x7fELF" and ".target sm_90" in k.ptx
    assert k.shared > 0 and k.num_warps == 4
    if tools.find_cuobjdump() is None:
        pytest.skip("cuobjdump not found (Triton wheel, PATH, CUDA_HOME): SASS not checked")
    assert tools.resource_usage(k.cubin)[k.name]["REG"] > 0
    sass = tools.run_cuobjdump(k.cubin, "-sass")
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass)
    assert ops.count("FFMA") >= 32 * 32 * 128 // 128  # one K tile: 1024 FFMA per thread
    # HFMA2.MMA is a plain FMA issued on another pipe (ptxas uses it to move constants)
    tensor_core = [o for o in ops if o.split(".")[0] in TENSOR_CORE_OPS]
    assert not tensor_core, f"tensor-core instructions in an ieee FP32 kernel: {set(tensor_core)}"


@pytest.mark.parametrize("mask_mn", [True, False], ids=["masked", "wrapped"])
@pytest.mark.parametrize("kid", ["T5", "T5p", "TA"])
def test_aot_sm90_tile_kernel_loop_is_ffma_with_128_bit_global_loads(kid, mask_mn):
    """The shared kernel at 4096^3: FFMA only and 128-bit loads in either edge scheme; with wrapped
    indices (and EVEN_K) the loads carry no mask at all."""
    from study.kernels import get
    from study.toolchain import sass as study_sass
    from study.toolchain import tools
    from triton_kernels.aot import compile_sass_target

    entry = get(kid)
    k = compile_sass_target(entry.target, arch=90, num_stages=entry.num_stages, mask_mn=mask_mn)
    assert k.name == entry.symbol == "tiled_matmul_kernel"
    if tools.find_cuobjdump() is None:
        pytest.skip("cuobjdump not found (Triton wheel, PATH, CUDA_HOME): SASS not checked")
    instrs = study_sass.parse_sass(tools.run_cuobjdump(k.cubin, "-sass"))[k.name]
    # spilled or not (Triton 3.9 spills in T5p's loop), the reserved local memory and the
    # LDL/STL in the SASS tell the same story
    local = study_sass.histogram(instrs)
    spills = study_sass.spill_bytes(tools.resource_usage(k.cubin)[k.name])
    assert (spills > 0) == (local["LDL"] + local["STL"] > 0), (spills, local["LDL"], local["STL"])
    tensor_core = {i.opcode for i in instrs if i.base in TENSOR_CORE_OPS}
    assert not tensor_core, f"tensor-core instructions in an ieee FP32 kernel: {tensor_core}"
    loop = study_sass.main_loop(instrs)
    assert sum(i.base == "FFMA" for i in loop) >= 1024
    global_loads = [i for i in loop if i.base in ("LDG", "LDGSTS")]
    assert global_loads and all("128" in i.mods for i in global_loads), {i.opcode for i in global_loads}
    if mask_mn:
        return  # masked loads are predicated on M and N: what follows holds for wrapped indices
    # The A/B loads carry no M/N/K mask: no per-load predicate is computed in the loop. A
    # masked load is a guarded LDG (@P2 LDG) or an LDGSTS whose last operand (ignore-source)
    # is its own mask; what may remain is one predicate shared by every copy: the pipeline's
    # "this prefetch is still inside K".
    guards = {i.pred for i in global_loads if i.base == "LDG"}
    guards |= {m.group(1) for i in global_loads if i.base == "LDGSTS"
               for m in [re.search(r",\s*(!?U?P\w+)\s*$", i.operands)] if m}
    guards.discard("")
    assert len(guards) <= 1, f"per-load masks in the main loop: {sorted(guards)}"


@pytest.mark.parametrize("module", ["t1_naive", "t5_reg_tile_2d", "ta_autotuned"])
@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (1, 4097, 4097)], ids=["4096", "1x4097x4097"])
def test_aot_specialisation_matches_the_runtime(module, shape):
    """Our AOT signature = what the runtime binder derives for the same contiguous launch."""
    import importlib

    import triton.runtime.jit as jit

    from triton_kernels.aot import Pointer, _jit_function, specialize

    mod = importlib.import_module(f"triton_kernels.{module}")
    spec = mod.aot_spec(shape=shape)

    try:
        from triton.backends.compiler import GPUTarget
        from triton.compiler import make_backend

        backend = make_backend(GPUTarget("cuda", 90, 32))
        fn = _jit_function(spec.fn)
        binder = jit.create_function_from_signature(fn.signature, fn.params, backend)
        import torch

        ptr = jit.MockTensor(torch.float32)
    except (ImportError, AttributeError) as exc:  # internal API: names differ between Triton releases
        pytest.skip(f"runtime binder not reachable in this Triton: {exc!r}")
    values = [ptr if isinstance(v, Pointer) else v for v in spec.args.values()]
    result = binder(*values)
    runtime = next((x for x in result if isinstance(x, list) and x and isinstance(x[0], tuple)), None)
    if runtime is None:
        pytest.skip("unrecognised binder result in this Triton")
    signature, _, attrs = specialize(fn, spec.args)
    assert len(runtime) == len(fn.arg_names), (len(runtime), fn.arg_names)
    for i, (name, (ty, flag)) in enumerate(zip(fn.arg_names, runtime)):
        assert signature[name] == ty, (name, signature[name], ty)
        if ty != "constexpr":
            assert ((i,) in attrs) == (flag == "D"), (name, flag, attrs.get((i,)))


if __name__ == "__main__" and "--interpret" in sys.argv:
    sys.path.insert(0, str(ROOT))
    print(json.dumps(_interpreted_runs()))
