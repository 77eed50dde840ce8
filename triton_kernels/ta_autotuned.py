"""TA: an autotuned Triton SGEMM, exact FP32 (``input_precision="ieee"``), keyed on (M, N, K).

The twins T3..T5 pin the CUDA kernels' block tiles; TA asks what Triton reaches when it may
pick the tile too. It is the twins' kernel, :func:`triton_kernels.tile.tiled_matmul_kernel`,
wrapped in ``triton.autotune`` (and ``triton.heuristics`` for ``EVEN_K``) with grouped
program order (``GROUP_M`` = 8) -- not a copy of it, so both read the same source and the
SASS symbol is ``tiled_matmul_kernel`` for all of them.

Why the space is what it is. With ``input_precision="ieee"`` the dot is plain FFMA on the
CUDA cores, not tensor cores, so the levers are those of a hand-written SGEMM: outputs per
thread (FFMAs per shared-memory load), registers (they cap the resident blocks), pipeline
depth (shared memory, which caps them too) and enough blocks to fill the 132 SMs. On the
H200 at 4096^3 a wide sweep (``python -m study.sweep``: 298 tiles x depths x warp counts,
then program order and register caps of the 8 fastest, Triton 3.6; its rows are in
``docs/notes/ta/data/sweep.csv``, its figures in ``docs/notes/ta.md``) found a plateau, not a peak:
64x64 tiles on 4 warps (32 outputs per thread, BK 16 or 64), 128x64 and 64x128 on 4 warps (64
per thread) and 128x64 on 8 warps all land together, below cuBLAS FP32; 1 stage, 128 outputs
per thread and 16 per thread fall below the plateau. Nsight Compute
(``python -m study.profile``) says why: such a tile executes as many instructions per FMA as
cuBLAS's kernel but issues on fewer of the scheduler's cycles, the rest lost to shared-load
latency and dispatch stalls -- the schedule inside the tile, which no choice of tile, depth or
warp count changes. So the space is that plateau and its edges:

* 4 warps on 64x64, 64x128 and 128x64 tiles, BK 16..128, 1..5 stages. 64x128 and 128x64
  hold 64 outputs per thread at ~168 registers with BK 32, 3 blocks per SM. Deeper K or
  pipelines are kept only where they leave at least 2 blocks per SM: one 4-warp block alone
  on an SM cannot hide its load latency. BK 128 unrolls 4096..8192 FFMAs into the loop
  body, so only one such point per tile. 1 stage (no software pipelining, like the CUDA
  kernels) on the two tiles where it came closest.
* 8 warps on 128x128, BK 16..32 (and one BK 64), 2..5 stages: 64 outputs per thread at
  ~190 registers, one block per SM -- the cuBLAS-like shape; and 8 warps on its halves
  64x128 / 128x64 (32 outputs per thread, 2 blocks per SM; 128x64x64 sits on the plateau).
* A few register-heavy points: 128 outputs per thread (128x128 on 4 warps; the fewest
  shared loads per FFMA, at 255 registers), 64x256 / 256x64 on 8 warps, 64x64 on 2 warps,
  and 32x256 for short wide problems.
* BK 8 where the installed Triton accepts a K of 8 in ``tl.dot`` for FP32 (3.9 does, 3.6
  requires 16): :func:`min_dot_k`.
* Small tiles (fewer than 64x64 outputs) for problems too small to fill the SMs with 64x64
  tiles, and 16-row tiles (the smallest ``tl.dot`` accepts) for decode-sized M.

The space is pruned per shape (:func:`prune`) because a tuning pass compiles and times every
candidate, once per shape, and the study's default run -- about 8 shapes plus its small
correctness shapes -- must finish within 10 minutes: about 40 candidates for a large
square problem (more at 1024^3, where small tiles are kept), 7 for M = 32, 5 for M = 1, 4
for a tiny problem.
Candidates go when their pipeline buffers do not fit in shared memory, when their block
tile is much taller/wider than the matrix, when they are small tiles on a problem that
64x64 tiles already spread over the SMs several times over, or 16-row tiles on a problem
with more than 16 rows; a problem under 2^24 multiply-adds keeps only its 4 smallest tiles.

Tuning happens on the first call for each (M, N, K) and is remembered for the process;
:func:`best_config` reads the winner back. Before that pass, :func:`precompile` compiles the
candidates it will time in parallel child processes (:mod:`triton_kernels.warm`), so that the
pass finds each binary in Triton's cache and only times them. Under ``TRITON_INTERPRET=1`` (CPU
interpreter, for tests) the space shrinks to one small configuration: benchmarking there means
nothing.
"""

from __future__ import annotations

import functools

import triton

from triton_kernels.tile import (
    MASK_MN,
    check_operands,
    edge_scheme,
    even_k,
    interpreting,
    launch_tiled,
    padded_strides,
    tiled_matmul_kernel,
)

# --------------------------------------------------------------------------------------------
# Configuration space
# --------------------------------------------------------------------------------------------

GROUP_M = 8  # tile rows that walk the N tiles together (L2 reuse of B panels)
# Pipeline buffers may take 200/227 of the shared memory a block may have (200 KB of the H200's
# 227 KB): a margin, because smem_bytes counts the operand tiles only, and scratch a Triton
# version adds beside them must not push a kept candidate over the limit, where it would fail
# at launch instead of being pruned.
SMEM_SHARE = (200, 227)
# Small tiles (BM * BN below this) are tried only where 64x64 tiles make fewer than
# SMALL_TILE_BELOW blocks: about 4 waves on the H200's 132 SMs.
SMALL_TILE_AREA = 64 * 64
SMALL_TILE_BELOW = 512
# Problems under TINY_MACS multiply-adds take a few microseconds whatever the tile: tuning
# them only costs compiles, so they get the TINY_KEEP smallest tiles that survive pruning.
TINY_MACS = 2**24
TINY_KEEP = 4

# (BM, BN, BK, num_warps, num_stages)
_SPACE = (
    # 4 warps, 64x64: the plateau at 4096^3 on the H200 (64x64x64 2 stages, 64x64x16 3 stages)
    (64, 64, 16, 4, 3), (64, 64, 16, 4, 4),
    (64, 64, 32, 4, 3), (64, 64, 32, 4, 4), (64, 64, 32, 4, 5),
    (64, 64, 64, 4, 2), (64, 64, 64, 4, 3), (64, 64, 64, 4, 4),
    (64, 64, 128, 4, 2),
    # 4 warps, 64x128 and 128x64: 64 outputs per thread
    (64, 128, 32, 4, 3), (64, 128, 32, 4, 4), (64, 128, 32, 4, 5),
    (64, 128, 64, 4, 2), (64, 128, 64, 4, 3), (64, 128, 128, 4, 2),
    (128, 64, 32, 4, 3), (128, 64, 32, 4, 4), (128, 64, 32, 4, 5),
    (128, 64, 64, 4, 2), (128, 64, 64, 4, 3), (128, 64, 128, 4, 2),
    # unpipelined (1 stage), where it came closest
    (64, 128, 32, 4, 1), (64, 64, 32, 4, 1),
    # 8 warps, 128x128: 64 outputs per thread, one block per SM
    (128, 128, 16, 8, 3), (128, 128, 16, 8, 4), (128, 128, 16, 8, 5),
    (128, 128, 32, 8, 2), (128, 128, 32, 8, 3), (128, 128, 32, 8, 4),
    (128, 128, 64, 8, 2),
    # 8 warps on half that tile: 32 outputs per thread, two blocks per SM
    (64, 128, 32, 8, 3), (128, 64, 32, 8, 3), (128, 64, 64, 8, 3),
    # 128 outputs per thread: fewest shared loads per FFMA, 255 registers
    (128, 128, 16, 4, 4), (128, 128, 32, 4, 3), (64, 256, 32, 8, 3), (256, 64, 32, 8, 3),
    # 2 warps on 64x64 (64 outputs per thread), and a wide 32-row tile for short problems
    (64, 64, 32, 2, 4), (32, 256, 32, 4, 3),
    # small tiles: problems too small to fill the SMs with 64x64 tiles
    (32, 128, 32, 4, 3), (32, 128, 32, 4, 4), (32, 64, 32, 2, 4), (32, 64, 64, 2, 3),
    (64, 32, 32, 2, 4), (32, 32, 32, 2, 4), (32, 32, 64, 2, 3),
    # decode-sized M: 16-row tiles (the smallest tl.dot accepts)
    (16, 64, 64, 2, 4), (16, 128, 32, 4, 4), (16, 128, 64, 4, 3), (16, 256, 32, 4, 3),
    (16, 64, 32, 2, 5),
)
# BK 8: only where tl.dot takes K = 8 for FP32 (see min_dot_k)
_BK8_SPACE = ((64, 64, 8, 4, 3), (64, 128, 8, 4, 4))
_INTERPRET_SPACE = ((32, 32, 32, 4, 1),)


def min_dot_k() -> int:
    """The smallest K the installed Triton's ``tl.dot`` accepts for FP32 operands (16 if unknown)."""
    try:
        import triton.language as tl
        from triton.backends.compiler import GPUTarget
        from triton.backends.nvidia.compiler import min_dot_size

        return int(min_dot_size(GPUTarget("cuda", 90, 32))(tl.float32, tl.float32)[2])
    except Exception:  # an API this code does not know: assume the older, stricter bound
        return 16


def _config(bm, bn, bk, warps, stages):
    # every candidate carries the kernel's default edge scheme (tile.MASK_MN): TA tunes the tile,
    # never the edge scheme, so it runs the same scheme as the twins
    return triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": GROUP_M, "MASK_MN": MASK_MN},
                         num_warps=warps, num_stages=stages)


def smem_bytes(c) -> int:
    """Shared memory of the operand buffers: one A and one B tile per pipeline slot.

    Triton keeps ``num_stages - 1`` slots in flight (one when unpipelined).
    """
    kw = c.kwargs
    return (kw["BM"] + kw["BN"]) * kw["BK"] * 4 * max(1, c.num_stages - 1)


def smem_budget(limit: int) -> int:
    """Bytes of pipeline buffers a candidate may ask for where a block may have ``limit`` bytes
    of shared memory: ``SMEM_SHARE`` of it (204800 for the H200's 232448)."""
    num, den = SMEM_SHARE
    return int(limit) * num // den


def device_smem_limit() -> int | None:
    """Shared memory a block may opt in to on the current CUDA device, as Triton's driver reports
    it (``max_shared_mem``); None where there is no device to ask (no GPU, or
    ``TRITON_INTERPRET=1``). Read once per device."""
    if interpreting():
        return None
    try:
        from triton.runtime import driver

        return _smem_limit_of(int(driver.active.get_current_device()))
    except Exception:  # no CUDA driver or device, or a driver API this code does not know
        return None


@functools.cache
def _smem_limit_of(device: int) -> int | None:
    from triton.runtime import driver

    props = driver.active.utils.get_device_properties(device)
    return int(props["max_shared_mem"]) if props.get("max_shared_mem") else None


def _fits_extent(tile: int, extent: int, floor: int) -> bool:
    """Keep tiles no taller (wider) than the matrix rounded up to a power of two."""
    return tile <= max(floor, triton.next_power_of_2(extent))


def _small_tiles_pay(M: int, N: int) -> bool:
    """Whether tiles smaller than 64x64 may win: 64x64 tiles leave the SMs short of blocks."""
    return triton.cdiv(M, 64) * triton.cdiv(N, 64) < SMALL_TILE_BELOW


def prune(configs, named_args, **kwargs):
    """Drop candidates that cannot fit or cannot pay for this (M, N, K) on the current device.

    The autotuner calls this with the launch's arguments, on the device it tunes on.
    """
    return _prune(configs, named_args["M"], named_args["N"], named_args["K"], device_smem_limit())


def _prune(configs, M: int, N: int, K: int, smem_limit: int | None):
    """``prune`` for a given shared-memory limit per block; None prunes nothing for shared
    memory (there is no limit to check against)."""
    budget = smem_budget(smem_limit) if smem_limit else None
    small_ok = _small_tiles_pay(M, N)
    kept = [
        c for c in configs
        if (budget is None or smem_bytes(c) <= budget)
        and _fits_extent(c.kwargs["BM"], M, 16)
        and _fits_extent(c.kwargs["BN"], N, 32)
        and _fits_extent(c.kwargs["BK"], K, 16)
        # 16-row tiles only where the problem is decode-sized
        and (c.kwargs["BM"] > 16 or M <= 16)
        and (small_ok or c.kwargs["BM"] * c.kwargs["BN"] >= SMALL_TILE_AREA)
    ]
    def area(c):
        return c.kwargs["BM"] * c.kwargs["BN"]

    if M * N * K < TINY_MACS:
        kept = sorted(kept, key=area)[:TINY_KEEP]  # a stable sort: listing order breaks ties
    # never return nothing: fall back to the smallest tiles
    return kept or sorted(configs, key=area)[:2]


def space() -> tuple[tuple[int, int, int, int, int], ...]:
    """(BM, BN, BK, num_warps, num_stages) of every candidate this Triton can compile."""
    if interpreting():
        return _INTERPRET_SPACE
    return _SPACE + tuple(c for c in _BK8_SPACE if c[2] >= min_dot_k())


CONFIGS = [_config(*c) for c in space()]
# Used for ahead-of-time compilation when no tuning result is at hand: the H200's 4096^3 winner
# when the space was chosen, on the plateau the sweep found (docs/notes/ta.md).
DEFAULT_CONFIG = {"BM": 64, "BN": 64, "BK": 64, "GROUP_M": GROUP_M, "num_warps": 4, "num_stages": 2}


# --------------------------------------------------------------------------------------------
# Kernel: the one of tile.py, tuned
# --------------------------------------------------------------------------------------------

# The Autotuner keeps its own cache of winners per key; compiled binaries stay in the
# JITFunction's cache, shared with the twins' launches (they differ in BM/BN/BK/GROUP_M).
autotuned_matmul_kernel = triton.autotune(
    configs=CONFIGS, key=["M", "N", "K"], prune_configs_by={"early_config_prune": prune},
)(triton.heuristics({"EVEN_K": lambda args: even_k(args["K"], args["BK"])})(tiled_matmul_kernel))


# --------------------------------------------------------------------------------------------
# Launcher and tuning results
# --------------------------------------------------------------------------------------------


def matmul(a, b, out=None, config: dict | None = None):
    """``out = a @ b`` (FP32); the first call for a new (M, N, K) runs the tuning. ``config`` (a
    :func:`config_dict`) launches that configuration instead, with no tuning: the same kernel the
    autotuner runs when it picks it."""
    if config is not None:
        return launch_tiled(a, b, out, BM=config["BM"], BN=config["BN"], BK=config["BK"],
                            num_warps=config["num_warps"], num_stages=config["num_stages"],
                            group_m=config.get("GROUP_M", GROUP_M), mask_mn=config.get("MASK_MN"))
    out = check_operands(a, b, out)
    M, K = a.shape
    N = b.shape[1]
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
    if best_config(M, N, K) is None:  # a tuning pass follows: its candidates compiled at once first
        precompile(M, N, K, strides)

    def grid(meta):
        return (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)

    autotuned_matmul_kernel[grid](a, b, out, M, N, K, *strides)
    return out


def precompile(M: int, N: int, K: int, strides: tuple[int, ...]) -> int:
    """Compile the candidates a tuning pass at (M, N, K) with these strides will time, in parallel
    child processes (:func:`triton_kernels.warm.warm`), so that the pass only times them; the
    candidates and the choice are the autotuner's as before. Returns the children that finished."""
    if interpreting():
        return 0
    from triton_kernels import warm

    kept = {id(c) for c in _prune(CONFIGS, M, N, K, device_smem_limit())}
    index = [i for i, c in enumerate(CONFIGS) if id(c) in kept]
    return warm.warm(f"{__name__}:autotuned_matmul_kernel", ["float32"] * 3 + [M, N, K, *strides], index)


def config_dict(c) -> dict:
    """A triton.Config as a plain dict: BM, BN, BK, GROUP_M, MASK_MN, num_warps, num_stages."""
    return {**c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages}


def candidates(M: int, N: int, K: int, smem_limit: int | None = None) -> list[dict]:
    """The configurations a tuning pass for (M, N, K) benchmarks where a block may have
    ``smem_limit`` bytes of shared memory (None: the current device's, if there is one)."""
    if len(CONFIGS) == 1:
        return [config_dict(CONFIGS[0])]
    limit = smem_limit if smem_limit is not None else device_smem_limit()
    return [config_dict(c) for c in _prune(CONFIGS, M, N, K, limit)]


def best_config(M: int, N: int, K: int) -> dict | None:
    """The winning configuration for (M, N, K), or None when that shape has not been tuned.

    With a single candidate (the interpreter) there is nothing to tune: that one is returned.
    """
    if len(CONFIGS) == 1:
        return config_dict(CONFIGS[0])
    # The autotuner's cache maps (M, N, K, <dtype of each tensor argument>...) to a Config.
    for key, c in getattr(autotuned_matmul_kernel, "cache", {}).items():
        if tuple(key[:3]) == (M, N, K):
            return config_dict(c)
    return None


def aot_spec(num_stages: int | None = None, shape: tuple[int, int, int] | None = None,
             config: dict | None = None, smem_limit: int | None = None, mask_mn: bool | None = None,
             ld: int | None = None):
    """Kernel, arguments and options for :func:`triton_kernels.aot.compile_sass_target`.

    ``config`` defaults to the tuned winner for ``shape`` (4096^3) when this process has one,
    else to :data:`DEFAULT_CONFIG`; ``num_stages`` overrides the config's. ``EVEN_K`` follows
    from ``shape`` as the heuristic sets it at run time. The edge scheme is ``mask_mn`` if given,
    else the config's ``MASK_MN``, else the candidates' (:data:`triton_kernels.tile.MASK_MN`);
    ``ld`` pads the rows of A, B and C to that many elements (None: contiguous).
    ``smem_limit``: the shared memory a
    block may have on the target (the caller knows the target; no device is asked); a
    configuration whose buffers exceed it is a ValueError, since it could not launch there.
    """
    from triton_kernels.aot import DEFAULT_SHAPE, matmul_spec

    shape = tuple(shape or DEFAULT_SHAPE)
    cfg = dict(config or best_config(*shape) or DEFAULT_CONFIG)
    meta = {k: cfg[k] for k in ("BM", "BN", "BK")}
    meta["GROUP_M"] = cfg.get("GROUP_M", GROUP_M)
    meta["EVEN_K"] = even_k(shape[2], meta["BK"])
    meta["MASK_MN"] = edge_scheme(mask_mn if mask_mn is not None else cfg.get("MASK_MN"))
    stages = num_stages if num_stages is not None else cfg.get("num_stages", 3)
    if smem_limit is not None:
        need = smem_bytes(triton.Config(meta, num_warps=cfg.get("num_warps", 4), num_stages=stages))
        if need > smem_limit:
            raise ValueError(f"{meta['BM']}x{meta['BN']}x{meta['BK']} with {stages} stages needs {need} B "
                             f"of shared memory per block; the target allows {smem_limit}")
    spec = matmul_spec(autotuned_matmul_kernel, meta, num_warps=cfg.get("num_warps", 4),
                       num_stages=stages, shape=shape)
    return padded_strides(spec, ld)
