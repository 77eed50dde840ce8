"""TD: Triton twin of KD, the decode rung (small M: a few token rows times a large weight matrix).

One program owns BN columns of C and MT rows (MT the smallest power of two >= M, at most
MT_MAX; larger M takes several row tiles, the programs of one column slab adjacent so that B is
re-read from L2) and walks all of K in BK steps: every element of B is loaded once, by one
program, with no split of K across programs, so the sum is the same from run to run. Below 16
rows ``tl.dot`` does not apply (its M is at least 16): the product is a broadcast multiply and a
sum over k (``tl.sum(a[:, :, None] * b[None, :, :], 1)``), which Triton lowers to FFMA; from 16
rows up it is ``tl.dot(..., input_precision="ieee")`` (FFMA too, never TF32). Triton chooses
the vector widths and the pipelining (``num_stages``) itself.
"""

from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels.tile import check_operands

BN, BK = 64, 64
NUM_WARPS = 4
NUM_STAGES = 4
MT_MAX = 32
DOT_MIN_ROWS = 16  # tl.dot needs M >= 16


@triton.jit
def decode_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    MT: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, USE_DOT: tl.constexpr,
):
    pid = tl.program_id(0)
    m_tiles = tl.cdiv(M, MT)
    slab = pid // m_tiles
    rm = (pid % m_tiles) * MT + tl.arange(0, MT)
    rn = slab * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((MT, BN), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BK)):
        k_left = K - k0 * BK
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        if USE_DOT:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc += tl.sum(a[:, :, None] * b[None, :, :], 1)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def rows_per_program(M: int, mt_max: int = MT_MAX) -> int:
    """MT: the smallest power of two >= M, at most ``mt_max``."""
    mt = 1
    while mt < M and mt < mt_max:
        mt *= 2
    return mt


def matmul(a, b, out=None, bn: int = BN, bk: int = BK, num_warps: int = NUM_WARPS,
           num_stages: int = NUM_STAGES, mt_max: int = MT_MAX):
    """``out = a @ b`` (FP32) for small M; any M, N, K >= 1 and any strides."""
    out = check_operands(a, b, out)
    M, K = a.shape
    N = b.shape[1]
    mt = rows_per_program(M, mt_max)
    grid = (triton.cdiv(N, bn) * triton.cdiv(M, mt),)
    decode_kernel[grid](
        a, b, out, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
        MT=mt, BN=bn, BK=bk, USE_DOT=mt >= DOT_MIN_ROWS, num_warps=num_warps, num_stages=num_stages,
    )
    return out


def aot_spec(num_stages: int = NUM_STAGES, shape: tuple[int, int, int] | None = None):
    """What :mod:`triton_kernels.aot` needs to compile the decode kernel (no GPU): at the b1
    decode shape unless ``shape`` says otherwise."""
    from triton_kernels.aot import matmul_spec

    M, N, K = shape or (1, 18944, 3584)
    mt = rows_per_program(M)
    meta = dict(MT=mt, BN=BN, BK=BK, USE_DOT=mt >= DOT_MIN_ROWS)
    return matmul_spec(decode_kernel, meta, num_warps=NUM_WARPS, num_stages=num_stages, shape=(M, N, K))
