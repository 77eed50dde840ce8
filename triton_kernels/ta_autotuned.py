"""TA: an autotuned Triton SGEMM, exact FP32 (``input_precision="ieee"``), keyed on (M, N, K).

The twins T3..T5 pin the CUDA kernels' block tiles; TA asks what Triton reaches when it may
pick the tile too. The space is real -- block tiles 32..256 (16 rows for decode-sized M),
K tiles 16..64, 2..8 warps, 1..5 pipeline stages, grouped program order -- but pruned per
shape so a tuning pass stays affordable (about 30-40 candidates for a large problem, a
handful for a small M): candidates whose pipeline buffers do not fit in shared memory go,
and block tiles much taller/wider than the matrix go.

Tuning happens on the first call for each (M, N, K) and is remembered for the process;
:func:`best_config` reads the winner back. Under ``TRITON_INTERPRET=1`` (CPU interpreter,
for tests) the space shrinks to one small configuration: benchmarking there means nothing.
"""

from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels.tile import check_operands, interpreting

# --------------------------------------------------------------------------------------------
# Configuration space
# --------------------------------------------------------------------------------------------

GROUP_M = 8  # tile rows that walk the N tiles together (L2 reuse of B panels)
SMEM_BUDGET = 200 * 1024  # bytes of pipeline buffers a candidate may ask for (H200: 227 KB per block)

# (BM, BN, BK, num_warps, num_stages)
_SPACE = (
    # large tiles, 8 warps: many outputs per thread, the FFMA-bound end
    (128, 128, 32, 8, 3), (128, 128, 32, 8, 4), (128, 128, 16, 8, 3), (128, 128, 16, 8, 4),
    (128, 128, 64, 8, 2), (128, 128, 64, 8, 3),
    (128, 256, 16, 8, 3), (128, 256, 32, 8, 3), (256, 128, 16, 8, 3), (256, 128, 32, 8, 3),
    (64, 256, 32, 8, 3), (64, 256, 32, 8, 4), (256, 64, 32, 8, 3), (256, 64, 32, 8, 4),
    (128, 64, 32, 8, 3), (64, 128, 32, 8, 3),
    # medium tiles, 4 warps
    (128, 128, 32, 4, 3), (128, 128, 16, 4, 4),
    (64, 128, 32, 4, 3), (64, 128, 32, 4, 4), (64, 128, 16, 4, 5),
    (128, 64, 32, 4, 3), (128, 64, 32, 4, 4), (128, 64, 16, 4, 5),
    (64, 64, 32, 4, 3), (64, 64, 32, 4, 4), (64, 64, 64, 4, 3), (64, 64, 16, 4, 5),
    (64, 64, 32, 2, 4),
    # small tiles: short or narrow problems, more blocks for the SMs
    (32, 64, 32, 2, 4), (32, 128, 32, 4, 4), (32, 256, 32, 4, 3), (32, 64, 64, 2, 3),
    (64, 32, 32, 2, 4), (32, 32, 32, 2, 4), (32, 32, 64, 2, 3),
    # decode-sized M: 16-row tiles (the smallest tl.dot accepts)
    (16, 64, 64, 2, 4), (16, 128, 32, 4, 4), (16, 128, 64, 4, 3), (16, 256, 32, 4, 3),
    (16, 64, 32, 2, 5),
)
_INTERPRET_SPACE = ((32, 32, 32, 4, 1),)


def _config(bm, bn, bk, warps, stages):
    return triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": GROUP_M},
                         num_warps=warps, num_stages=stages)


def smem_bytes(c) -> int:
    """Shared memory of the operand buffers: one A and one B tile per pipeline slot.

    Triton keeps ``num_stages - 1`` slots in flight (one when unpipelined).
    """
    kw = c.kwargs
    return (kw["BM"] + kw["BN"]) * kw["BK"] * 4 * max(1, c.num_stages - 1)


def _fits_extent(tile: int, extent: int, floor: int) -> bool:
    """Keep tiles no taller (wider) than the matrix rounded up to a power of two."""
    return tile <= max(floor, triton.next_power_of_2(extent))


def prune(configs, named_args, **kwargs):
    """Drop candidates that cannot fit or cannot pay for this (M, N, K)."""
    M, N, K = named_args["M"], named_args["N"], named_args["K"]
    kept = [
        c for c in configs
        if smem_bytes(c) <= SMEM_BUDGET
        and _fits_extent(c.kwargs["BM"], M, 16)
        and _fits_extent(c.kwargs["BN"], N, 32)
        and _fits_extent(c.kwargs["BK"], K, 16)
        # 16-row tiles only where the problem is decode-sized
        and (c.kwargs["BM"] > 16 or M <= 16)
    ]
    # never return nothing: fall back to the smallest tiles
    return kept or sorted(configs, key=lambda c: c.kwargs["BM"] * c.kwargs["BN"])[:2]


CONFIGS = [_config(*c) for c in (_INTERPRET_SPACE if interpreting() else _SPACE)]
# Used for ahead-of-time compilation when no tuning result is at hand.
DEFAULT_CONFIG = {"BM": 128, "BN": 128, "BK": 32, "GROUP_M": GROUP_M, "num_warps": 8, "num_stages": 3}


# --------------------------------------------------------------------------------------------
# Kernel
# --------------------------------------------------------------------------------------------


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"], prune_configs_by={"early_config_prune": prune})
@triton.jit
def autotuned_matmul_kernel(
    # pointers
    a_ptr, b_ptr, c_ptr,
    # sizes
    M, N, K,
    # strides (in elements)
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    # meta-parameters
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
):
    """C[M, N] = A[M, K] @ B[K, N] in FP32; one program per BM x BN tile, grouped order."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    # GROUP_M consecutive programs take GROUP_M tile rows of one tile column: B stays in L2
    group_size = GROUP_M * num_pid_n
    first_m = (pid // group_size) * GROUP_M
    rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows
    pid_n = (pid % group_size) // rows

    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    in_m = rm[:, None] < M
    in_n = rn[None, :] < N

    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BK)):
        k_left = K - k0 * BK  # the last K tile may be partial: masked lanes read 0
        a = tl.load(a_ptrs, mask=in_m & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & in_n, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk

    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=in_m & in_n)


kernel = autotuned_matmul_kernel


# --------------------------------------------------------------------------------------------
# Launcher and tuning results
# --------------------------------------------------------------------------------------------


def matmul(a, b, out=None):
    """``out = a @ b`` (FP32); the first call for a new (M, N, K) runs the tuning."""
    out = check_operands(a, b, out)
    M, K = a.shape
    N = b.shape[1]

    def grid(meta):
        return (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)

    autotuned_matmul_kernel[grid](
        a, b, out,
        M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
    )
    return out


def config_dict(c) -> dict:
    """A triton.Config as a plain dict: BM, BN, BK, GROUP_M, num_warps, num_stages."""
    return {**c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages}


def candidates(M: int, N: int, K: int) -> list[dict]:
    """The configurations a tuning pass for (M, N, K) benchmarks."""
    configs = CONFIGS if len(CONFIGS) == 1 else prune(CONFIGS, {"M": M, "N": N, "K": K})
    return [config_dict(c) for c in configs]


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
             config: dict | None = None):
    """Kernel, arguments and options for :func:`triton_kernels.aot.compile_sass_target`.

    ``config`` defaults to the tuned winner for ``shape`` (4096^3) when this process has one,
    else to :data:`DEFAULT_CONFIG`; ``num_stages`` overrides the config's.
    """
    from triton_kernels.aot import DEFAULT_SHAPE, matmul_spec

    shape = tuple(shape or DEFAULT_SHAPE)
    cfg = dict(config or best_config(*shape) or DEFAULT_CONFIG)
    meta = {k: cfg[k] for k in ("BM", "BN", "BK")}
    meta["GROUP_M"] = cfg.get("GROUP_M", GROUP_M)
    stages = num_stages if num_stages is not None else cfg.get("num_stages", 3)
    return matmul_spec(autotuned_matmul_kernel, meta, num_warps=cfg.get("num_warps", 4),
                       num_stages=stages, shape=shape)
