"""G6: Gluon twin of K6 -- K6's 32 x 128 x 32 block tile with K6's thread -> output map, stated.

K6 (cuda_kernels/k6_vectorized.cu) runs 128 threads as blockDim (32, 4): thread (tx, ty), i.e.
lane tx of warp ty, owns rows 8ty .. 8ty+7 and columns 4tx .. 4tx+3 of the block tile. Here
that is the accumulator's layout::

    ACC = BlockedLayout(size_per_thread=[8, 4], threads_per_warp=[1, 32], warps_per_cta=[4, 1])

Every other tensor is laid out as in K6 too:

* A's K-tile [32 x 32] is loaded as float4 along K, float4 number f = tid + 128 i (i = 0, 1)
  holding row f / 8, columns 4 (f % 8) .. +3: ``BlockedLayout([1, 4], [4, 8], [4, 1])``.
  It is stored transposed, As[k][m], with four 32-bit stores per float4, as K6 does.
* B's K-tile [32 x 128]: lane tx of warp ty loads columns 4tx .. 4tx+3 of rows ty + 4i (i = 0..7),
  ``BlockedLayout([1, 4], [1, 32], [4, 1])``, stored as it came (128-bit stores).
* Per k-step a thread reads As[k][8ty .. 8ty+7] (two 128-bit broadcasts) and Bs[k][4tx .. 4tx+3]
  (one 128-bit load): a [32 x 1] view of As[k] and a [1 x 128] view of Bs[k], each loaded in
  ACC; then 32 ``gl.fma`` (FFMA, never tensor cores) of their broadcast product.
* Shared memory is unswizzled row-major (``SwizzledSharedLayout(1, 1, 1)``), one stage, with a
  barrier after the stores and one after the 32 k-steps, as K6's two ``__syncthreads``.
* The grid is K6's: program_id(0) walks the columns of C's tiles, program_id(1) the rows.

Edges as in K6: loads past M, N or K are masked (zero), stores past M or N dropped. N and K must
be multiples of 4 (K6's float4 constraint); the launcher refuses others before launch.
What Triton still decides: instruction order and scheduling, registers, address arithmetic.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from triton_kernels import gluon_common as gc
from triton_kernels.gluon_common import cta_barrier

BM, BN, BK = 32, 128, 32
NUM_WARPS = 4  # 128 threads, K6's blockDim (32, 4)
TM, TN = 8, 4  # outputs per thread: rows x columns
MULTIPLE_OF = (1, 4, 4)  # M, N, K (K6's SGEMM_VEC4)
NAME = "G6"


def unsupported_reason() -> str | None:
    """None when this Triton can build G6, else one line naming the version and what is missing."""
    return gc.unsupported_reason()


SUPPORTED = unsupported_reason() is None


@gluon.jit
def g6_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
):
    """C[M, N] = A[M, K] @ B[K, N] in FP32; one program computes one BM x BN tile of C."""
    gl.static_assert(gl.num_warps() == 4)
    # thread -> output: warp ty rows 8ty..8ty+7, lane tx columns 4tx..4tx+3 (K6's i0 and 4tx)
    ACC: gl.constexpr = gl.BlockedLayout([8, 4], [1, 32], [4, 1], [1, 0])
    LA: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])  # A tile: float4 along K
    LB: gl.constexpr = gl.BlockedLayout([1, 4], [1, 32], [4, 1], [1, 0])  # B tile: float4 along N
    SMEM: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])  # plain row-major

    pid_n = gl.program_id(0)  # blockIdx.x: columns of C
    pid_m = gl.program_id(1)  # blockIdx.y: rows

    a_s = gl.allocate_shared_memory(gl.float32, [BK, BM], SMEM)  # As[k][m], transposed
    b_s = gl.allocate_shared_memory(gl.float32, [BK, BN], SMEM)  # Bs[k][n]
    a_st = a_s.permute([1, 0])  # the [BM, BK] view through which A's tile is stored

    am = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, LA))
    ak = gl.arange(0, BK, layout=gl.SliceLayout(0, LA))
    bk = gl.arange(0, BK, layout=gl.SliceLayout(1, LB))
    bn = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, LB))
    a_ptrs = a_ptr + am[:, None] * stride_am + ak[None, :] * stride_ak
    b_ptrs = b_ptr + bk[:, None] * stride_bk + bn[None, :] * stride_bn
    a_rows = am[:, None] < M
    b_cols = bn[None, :] < N

    acc = gl.zeros([BM, BN], gl.float32, ACC)
    for k0 in range(0, K, BK):
        k_left = K - k0
        a = gl.load(a_ptrs, mask=a_rows & (ak[None, :] < k_left), other=0.0)
        b = gl.load(b_ptrs, mask=(bk[:, None] < k_left) & b_cols, other=0.0)
        a_st.store(a)
        b_s.store(b)
        cta_barrier()
        for k in gl.static_range(BK):
            av = a_st.slice(k, 1, dim=1).load(ACC)  # [BM, 1] = As[k][8ty..8ty+7]: 2 x LDS.128
            bv = b_s.slice(k, 1, dim=0).load(ACC)  # [1, BN] = Bs[k][4tx..4tx+3]: 1 x LDS.128
            acc = gl.fma(av, bv, acc)  # 8 x 4 FFMA
        cta_barrier()
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk

    cm = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, ACC))
    cn = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, ACC))
    c_ptrs = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    gl.store(c_ptrs, acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


def matmul(a, b, out=None):
    """``out = a @ b`` (FP32, row-major or any strides) with K6's tile and thread map; returns out."""
    return gc.launch(g6_kernel, a, b, out, name=NAME, why=unsupported_reason(), multiple_of=MULTIPLE_OF,
                     tile=(BM, BN, BK), num_warps=NUM_WARPS)


def aot_spec(num_stages: int = 1, shape: tuple[int, int, int] | None = None):
    """Kernel, representative arguments and options for ``aot.compile_sass_target`` (one shared
    stage, as K6: ``num_stages`` other than 1 refused, the kernel has no pipeline)."""
    return gc.aot_spec(g6_kernel, num_stages, shape, name=NAME, why=unsupported_reason(),
                       refusal="has one shared stage, as K6", tile=(BM, BN, BK), num_warps=NUM_WARPS)
