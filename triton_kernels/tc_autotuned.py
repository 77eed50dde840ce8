"""TT and TX: the tiled kernel on the tensor cores, one TF32 product (TT) or three (TX, 3xTF32).

Beside the FP32 study, for its accuracy ledger: what the tensor cores give, in speed and in error,
where the CUDA cores' FFMA is the study's arithmetic. Both are :func:`triton_kernels.tile.
tiled_matmul_kernel` with ``tl.dot(..., input_precision=PRECISION)``, autotuned on (M, N, K) over a
space of tensor-core tiles (:data:`_SPACE`) as TA is over FFMA tiles, the same pruning and the same
parallel compiles first (:mod:`triton_kernels.ta_autotuned`).

- ``"tf32"``: A and B rounded to TF32 (10 explicit mantissa bits), one product per tile, FP32
  accumulation: the tensor cores' rate, TF32's error (about 2^-11 relative per product).
- ``"tf32x3"``: each operand split as x = hi + lo with hi = tf32(x), lo = tf32(x - hi), and
  C += hi_a hi_b + hi_a lo_b + lo_a hi_b: three products, the fourth (lo_a lo_b, about 2^-22 of
  the product) left out. The split is Triton's, done on the tiles in registers after they are
  loaded.

B's layout. Hopper's warp-group MMA (``wgmma``) takes 32-bit operands from shared memory only
K-major (transposing on the way in is for 16-bit types); B, row-major K x N, is N-major, and
Triton then moves B's tile through registers into a K-major shared layout on every step. Where
:data:`KMAJOR_B` says so for a precision, the launcher first copies B to K-major storage
(``b.t().contiguous()``, passed as its transposed view, so the kernel reads it through its
strides); that copy is part of every call's time. Both precisions take it: timed tile by tile on
the H200 with B either way, every tile ran faster K-major, copy included (``docs/notes/tc.md``).
"""

from __future__ import annotations

import triton

from triton_kernels import ta_autotuned
from triton_kernels.tile import MASK_MN, check_operands, even_k, interpreting, tiled_matmul_kernel

PRECISIONS = ("tf32", "tf32x3")
# Whether the launcher hands the kernel a K-major copy of B, per precision
KMAJOR_B = {"tf32": True, "tf32x3": True}

# (BM, BN, BK, num_warps, num_stages): tensor-core tiles, 4 and 8 warps (one or two warp groups)
_SPACE = (
    (128, 128, 32, 4, 3), (128, 128, 32, 4, 4), (128, 128, 32, 8, 3), (128, 128, 32, 8, 4),
    (128, 128, 64, 8, 3), (128, 128, 16, 4, 4), (128, 128, 16, 8, 5),
    (128, 256, 32, 8, 3), (128, 256, 16, 8, 4), (128, 256, 64, 8, 2),
    (256, 128, 32, 8, 3), (256, 128, 16, 8, 4),
    (64, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 256, 32, 4, 3), (64, 64, 32, 4, 4),
)
_INTERPRET_SPACE = ((32, 32, 32, 4, 1),)


def _configs(precision: str) -> list:
    space = _INTERPRET_SPACE if interpreting() else _SPACE
    return [triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": ta_autotuned.GROUP_M, "MASK_MN": MASK_MN,
                           "PRECISION": precision}, num_warps=w, num_stages=s)
            for bm, bn, bk, w, s in space]


CONFIGS = {p: _configs(p) for p in PRECISIONS}
KERNELS = {
    p: triton.autotune(configs=CONFIGS[p], key=["M", "N", "K"],
                       prune_configs_by={"early_config_prune": ta_autotuned.prune})(
        triton.heuristics({"EVEN_K": lambda args: even_k(args["K"], args["BK"])})(tiled_matmul_kernel))
    for p in PRECISIONS
}
# the autotuned kernels by module attribute, for the parallel compiles (triton_kernels.warm)
tf32_kernel, tf32x3_kernel = KERNELS["tf32"], KERNELS["tf32x3"]


def _launch(precision: str, a, b, out):
    out = check_operands(a, b, out)
    M, K = a.shape
    N = b.shape[1]
    if KMAJOR_B[precision] and b.stride(0) != 1:
        b = b.t().contiguous().t()
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
    if best_config(precision, M, N, K) is None and not interpreting():
        precompile(precision, M, N, K, strides)

    def grid(meta):
        return (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)

    KERNELS[precision][grid](a, b, out, M, N, K, *strides)
    return out


def matmul_tf32(a, b, out=None):
    """TT: ``out = a @ b`` with one TF32 tensor-core product per tile."""
    return _launch("tf32", a, b, out)


def matmul_tf32x3(a, b, out=None):
    """TX: ``out = a @ b`` with three TF32 tensor-core products per tile (3xTF32)."""
    return _launch("tf32x3", a, b, out)


def precompile(precision: str, M: int, N: int, K: int, strides: tuple[int, ...]) -> int:
    """The candidates a tuning pass will time, compiled at once in child processes first."""
    from triton_kernels import warm

    configs = CONFIGS[precision]
    kept = {id(c) for c in ta_autotuned._prune(configs, M, N, K, ta_autotuned.device_smem_limit())}
    index = [i for i, c in enumerate(configs) if id(c) in kept]
    return warm.warm(f"{__name__}:{precision}_kernel", ["float32"] * 3 + [M, N, K, *strides], index)


def best_config(precision: str, M: int, N: int, K: int) -> dict | None:
    """The winning configuration for (M, N, K) at ``precision``; None before that shape is tuned."""
    configs = CONFIGS[precision]
    if len(configs) == 1:
        return ta_autotuned.config_dict(configs[0])
    for key, c in getattr(KERNELS[precision], "cache", {}).items():
        if tuple(key[:3]) == (M, N, K):
            return ta_autotuned.config_dict(c)
    return None


def best_tf32(M: int, N: int, K: int) -> dict | None:
    return best_config("tf32", M, N, K)


def best_tf32x3(M: int, N: int, K: int) -> dict | None:
    return best_config("tf32x3", M, N, K)
