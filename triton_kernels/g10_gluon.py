"""G10: Gluon twin of K10 -- 256 x 128 x 8 block tile, K10's warp tiles and lane map, two stages.

K10 (cuda_kernels/k10_tuned.cu, default parameters) runs 256 threads as 4 x 2 warps of 64 x 64
warp tiles (warp w: warp row w / 2, warp column w % 2); lane ``lane`` of a warp is placed at
lane column ``lx`` and lane row ``ly``::

    lx = (lane & 1) | ((lane >> 2) & 3) << 1      # lane bits 0, 2, 3 -> lx bits 0, 1, 2
    ly = ((lane >> 1) & 1) | (lane >> 4) << 1     # lane bits 1, 4    -> ly bits 0, 1

and owns 16 x 8 outputs as 4 x 2 sub-blocks of 4 x 4: rows 64 (w / 2) + 4 ly + 16 i + 0..3
(i = 0..3) and columns 64 (w % 2) + 4 lx + 32 j + 0..3 (j = 0, 1). Lane bits do not map to
rows and columns in order (bit 1 is a row bit between column bits) and a thread's sub-blocks
are strided inside the warp tile, so no ``BlockedLayout`` is this map. It is a linear map of
the bits of (register, lane, warp), written out as a ``DistributedLinearLayout``
(:data:`ACC_BASES`): each basis is the (row, column) offset that one bit adds.

Everything else follows K10:

* A's K-tile [256 x 8]: float4 number f = tid + 256 i (i = 0, 1) holds row f / 2, columns
  4 (f % 2) .. +3; stored transposed, As[k][m], rows padded by 4 floats
  (``PaddedSharedLayout``: 4 floats after every 256), four 32-bit stores per float4.
* B's K-tile [8 x 128]: float4 f = tid holds row f / 32, columns 4 (f % 32) .. +3; stored as is.
* Two shared stages. Phase t multiplies stage t % 2 while tile t + 1 is loaded into registers
  (masked, zero past K); at its last k-step, once that step's A and B values are in registers,
  the prefetched tile is stored into the other stage and one barrier orders both stages: one
  barrier per phase, as K10. The stages are two allocations named in the code (one loop
  iteration runs two phases, stage 0 then stage 1), not one buffer indexed by ``t % 2``: Triton's
  barrier analysis treats an indexed buffer as one and would add a second barrier per phase.
* Per k-step a thread reads its 16 A values (4 x LDS.128) and 8 B values (2 x LDS.128): a
  [256 x 1] view of As[k] and a [1 x 128] view of Bs[k] loaded in the accumulator's layout,
  then 128 ``gl.fma`` (FFMA, never tensor cores) of their broadcast product.
* Grid as K10's: program_id(0) walks C's tile columns, program_id(1) its tile rows.

What K10 does that a Gluon kernel does not state: K10's double-buffered register fragments
(k-step k + 1's values read before step k's FMAs). Gluon has no separate register buffers;
the order of loads and FMAs inside the unrolled phase is left to the LLVM/ptxas scheduler.
K10's ``__launch_bounds__(256, 1)`` (255 registers) has no Gluon spelling either: the compile
takes ``maxnreg`` as an option (:data:`MAXNREG`, None = the compiler's choice).

Edges as in K10: loads past M, N or K are masked (zero), stores past M or N dropped. N and K must
be multiples of 4 (K10's float4 constraint); the launcher refuses others before launch.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from triton_kernels import gluon_common as gc
from triton_kernels.gluon_common import cta_barrier

BM, BN, BK = 256, 128, 8
WARPS_M, WARPS_N = 4, 2
NUM_WARPS = WARPS_M * WARPS_N  # 256 threads
TM, TN = 16, 8  # outputs per thread: rows x columns, as 4 x 4 sub-blocks
PAD = 4  # floats after each As row (K10_PAD)
MULTIPLE_OF = (1, 4, 4)  # M, N, K (K10's SGEMM_VEC4)
MAXNREG = None
NAME = "G10"

# (row, column) offset added by each bit of the register index, the lane and the warp.
ACC_BASES = dict(
    **gc.K10_LANE_MAP,  # registers and lanes: K10's lane map
    # warp bits 0..2 -> warp column (64 columns), warp row bits (64, 128 rows)
    warp=[[0, 64], [64, 0], [128, 0]],
)


# the accumulator's layout: thread -> outputs of the block tile, K10's map (used by the kernel)
ACC_LAYOUT = gc.linear_layout(ACC_BASES, [BM, BN])


def unsupported_reason() -> str | None:
    """None when this Triton can build G10, else one line naming the version and what is missing."""
    return gc.unsupported_reason()


SUPPORTED = unsupported_reason() is None


@gluon.jit
def _phase(acc, a_cur, b_cur, a_nxt, b_nxt, a_ptrs, b_ptrs, a_rows, b_cols, ak, bk, k_left,
           BK: gl.constexpr, ACC: gl.constexpr):
    """One K-tile: multiply stages (a_cur, b_cur) while the next tile (``k_left`` columns of K
    from ``a_ptrs``/``b_ptrs``; masked to zero past K) is loaded and stored into (a_nxt, b_nxt)."""
    a = gl.load(a_ptrs, mask=a_rows & (ak[None, :] < k_left), other=0.0)  # in flight during the FMAs
    b = gl.load(b_ptrs, mask=(bk[:, None] < k_left) & b_cols, other=0.0)
    a_t = a_cur.permute([1, 0])  # [BM, BK] view of As[k][m]
    for k in gl.static_range(BK):
        av = a_t.slice(k, 1, dim=1).load(ACC)  # [BM, 1]: As[k][rows of the thread], 4 x LDS.128
        bv = b_cur.slice(k, 1, dim=0).load(ACC)  # [1, BN]: Bs[k][its columns], 2 x LDS.128
        if k == BK - 1:
            # the other stage was last read before the previous barrier and this step's values
            # are in registers: one barrier orders both stages
            a_nxt.permute([1, 0]).store(a)
            b_nxt.store(b)
            cta_barrier()
        acc = gl.fma(av, bv, acc)  # 16 x 8 FFMA
    return acc


@gluon.jit
def g10_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, PAD: gl.constexpr,
):
    """C[M, N] = A[M, K] @ B[K, N] in FP32; one program computes one BM x BN tile of C."""
    gl.static_assert(gl.num_warps() == 8)
    ACC: gl.constexpr = ACC_LAYOUT
    LA: gl.constexpr = gl.BlockedLayout([1, 4], [16, 2], [8, 1], [1, 0])  # A: row f / 2, float4 along K
    LB: gl.constexpr = gl.BlockedLayout([1, 4], [1, 32], [8, 1], [1, 0])  # B: row f / 32, float4 along N
    # As[k][m]: rows of BM floats, each followed by PAD floats; Bs[k][n] unpadded
    AS: gl.constexpr = gl.PaddedSharedLayout.with_identity_for([[BM, PAD]], [BK, BM], [1, 0])
    BS: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])

    pid_n = gl.program_id(0)  # blockIdx.x: columns of C
    pid_m = gl.program_id(1)  # blockIdx.y: rows

    # two stages, each its own allocation: a barrier orders only the stage it must
    a_s0 = gl.allocate_shared_memory(gl.float32, [BK, BM], AS)
    a_s1 = gl.allocate_shared_memory(gl.float32, [BK, BM], AS)
    b_s0 = gl.allocate_shared_memory(gl.float32, [BK, BN], BS)
    b_s1 = gl.allocate_shared_memory(gl.float32, [BK, BN], BS)

    am = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, LA))
    ak = gl.arange(0, BK, layout=gl.SliceLayout(0, LA))
    bk = gl.arange(0, BK, layout=gl.SliceLayout(1, LB))
    bn = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, LB))
    a_ptrs = a_ptr + am[:, None] * stride_am + ak[None, :] * stride_ak
    b_ptrs = b_ptr + bk[:, None] * stride_bk + bn[None, :] * stride_bn
    a_rows = am[:, None] < M
    b_cols = bn[None, :] < N

    # prologue: tile 0 into stage 0
    a = gl.load(a_ptrs, mask=a_rows & (ak[None, :] < K), other=0.0)
    b = gl.load(b_ptrs, mask=(bk[:, None] < K) & b_cols, other=0.0)
    a_s0.permute([1, 0]).store(a)
    b_s0.store(b)
    cta_barrier()

    acc = gl.zeros([BM, BN], gl.float32, ACC)
    n_tiles = gl.cdiv(K, BK)
    # two phases per iteration, stage 0 then stage 1 (the stages are named, not indexed)
    for t in range(0, n_tiles, 2):
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
        acc = _phase(acc, a_s0, b_s0, a_s1, b_s1, a_ptrs, b_ptrs, a_rows, b_cols, ak, bk,
                     K - (t + 1) * BK, BK, ACC)
        if t + 1 < n_tiles:
            a_ptrs += BK * stride_ak
            b_ptrs += BK * stride_bk
            acc = _phase(acc, a_s1, b_s1, a_s0, b_s0, a_ptrs, b_ptrs, a_rows, b_cols, ak, bk,
                         K - (t + 2) * BK, BK, ACC)

    cm = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, ACC))
    cn = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, ACC))
    c_ptrs = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    gl.store(c_ptrs, acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


def matmul(a, b, out=None):
    """``out = a @ b`` (FP32, row-major or any strides) with K10's tile and lane map; returns out."""
    return gc.launch(g10_kernel, a, b, out, name=NAME, why=unsupported_reason(), multiple_of=MULTIPLE_OF,
                     tile=(BM, BN, BK), num_warps=NUM_WARPS, maxnreg=MAXNREG, PAD=PAD)


def aot_spec(num_stages: int = 1, shape: tuple[int, int, int] | None = None):
    """Kernel, representative arguments and options for ``aot.compile_sass_target`` (``num_stages``
    other than 1 refused: writes its two stages itself)."""
    return gc.aot_spec(g10_kernel, num_stages, shape, name=NAME, why=unsupported_reason(),
                       refusal="writes its two stages itself", tile=(BM, BN, BK), num_warps=NUM_WARPS,
                       maxnreg=MAXNREG, PAD=PAD)
