"""G15: K12's tile and lane map in Gluon, with A kept row-major in shared memory, in slabs of 4 k.

K12 (and K15, and the Gluon twin G12) copy A transposed, As[k][m], so that one LDS.128 reads the
values of one k for 4 consecutive rows. The transposing copy moves 4 bytes per lane, and K12 pads
As's rows by 4 floats to keep its copies' bank conflicts 2-way. Gluon cannot state that padding
(``g12_gluon``'s docstring): G12's copies into the unpadded As meet more conflicts, and its fragment
loads wait behind them (docs/notes/g12.md).

G15 does not transpose A. A stage holds A's K-tile [128 x 16] as 4 slabs, one [128 x 4] row-major
slab per 4 values of k (row g * 128 + m of the allocation holds A[m][4g .. 4g + 3]), so A's rows are
copied as they lie in global memory, 16 bytes per lane and copy, into whole 128-byte lines of
shared memory. Once every 4 k-steps a thread reads the 4 values of k of each of its 16 rows (16 x
LDS.128, as many as K12's 4 a k-step) and splits each row's 4 values into the 4 k-steps' operands
in registers; B is copied as K15 copies it (16 bytes, Bs[k][n]) and read as K12 reads it (2 x
LDS.128 a k-step), one k-step ahead of its FMAs, and the next slab is read after the last k-step of
the current one.

The rest is G12's: the accumulator in K12's thread -> output map (``g12_gluon.ACC_LAYOUT``), two
stages in two named allocations each for A and B, a phase's copies in two bursts (A's at k-step 0,
B's at :data:`B_STEP`), one barrier per phase, the last phase peeled, rows past M and columns past
N copied from a tile before them (``g12_gluon.edge_source``), masked at the store. N and K must be
multiples of 4 (16-byte copies), as K15's SGEMM_VEC4; the ragged end of K is copied first, in
whole groups of 4.

What this changes against G12, measured per instruction (docs/notes/g15.md): the warps' waits on
shared-memory results fall to K12's level and their FFMAs wait on dispatch more; the copies of A
are not cheap either (a copy reads 8 rows of 64 bytes, and the shared-memory unit takes its
lanes one at a time). In every k-step the A operands of G15's FFMAs are the same element of 16
register quads (an LDS.128 writes an aligned quad), where K12's come from 4 quads. A CUDA build of
K15 with this layout of A (docs/notes/g15/harness/k15_slabs.cu) shows the same trade: the layout
costs, not the code Triton generates around it.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as _ac

from triton_kernels import g12_gluon as g12
from triton_kernels import gluon_common as gc
from triton_kernels.gluon_common import cta_barrier

BM, BN, BK = g12.BM, g12.BN, g12.BK
KG = 4  # values of k per slab of As (one 16-byte copy and one LDS.128 per row)
NUM_WARPS = g12.NUM_WARPS
MULTIPLE_OF = (1, 4, 4)  # N and K: 16-byte copies, as K15 (SGEMM_VEC4)
MAXNREG = None
# the k-step of a phase that issues B's copy (A's is at k-step 0): 6, the fastest of 4, 6, 8, 10 and
# 12 at 4096^3 (docs/notes/g15.md)
B_STEP = 6
NAME = "G15"

TM, TN = g12.TM, g12.TN
WARPS_M, WARPS_N = g12.WARPS_M, g12.WARPS_N
ACC_BASES = g12.ACC_BASES
ACC_LAYOUT = g12.ACC_LAYOUT
# A's K-tile as [BK / KG * BM, KG], row g * BM + m holding A[m][KG g .. KG g + KG - 1]: a lane copies
# 16 bytes (registers: the KG values); lane bits -> 8 rows (8 lanes write one 128-byte line of a
# slab, as 8 lanes of B's copies do), then g (a row's 64 bytes of A); warps and the last register
# bit -> the rest of the rows. A copy instruction reads 8 rows of A, 64 contiguous bytes each
A_COPY_LAYOUT = gc.linear_layout(dict(
    reg=[[0, 1], [0, 2], [64, 0]], lane=[[1, 0], [2, 0], [4, 0], [BM, 0], [2 * BM, 0]],
    warp=[[8, 0], [16, 0], [32, 0]]), [BK // KG * BM, KG])
async_copy = g12.async_copy
unsupported_reason = g12.unsupported_reason
SUPPORTED = g12.SUPPORTED


@gluon.jit
def _copies(k, a_nxt, b_nxt, a_tile, b_tile, koff, stride_ak, stride_bk, B_STEP: gl.constexpr):
    """The copies k-step ``k`` of a phase issues into the other stage: A's K-tile at k-step 0, B's at
    k-step B_STEP, which commits them. koff is a multiple of 4 (K is); written so, the compiler
    knows it and copies 16 bytes at a time."""
    if k == 0:
        async_copy(a_nxt, a_tile + (koff // 4) * 4 * stride_ak)  # K % 4 == 0: 16-byte copies
    if k == B_STEP:
        async_copy(b_nxt, b_tile + koff * stride_bk)
        _ac.commit_group()


@gluon.jit
def _slab(a_stage, g: gl.constexpr, BM: gl.constexpr, ACC: gl.constexpr):
    """The 4 k-steps' values of slab g for the thread's rows: [BM, 1] each in the accumulator's
    layout, from one LDS.128 per row."""
    x = a_stage.slice(g * BM, BM, dim=0).load(ACC)  # [BM, KG]: registers hold the row's 4 values of k
    # [BM, 4] -> [BM, 2, 2] (k = 2 hi + lo); split takes the last dimension: lo, then hi
    even, odd = gl.split(gl.reshape(x, [x.shape[0], 2, 2]))  # k = 0, 2 and k = 1, 3
    k0, k2 = gl.split(even)
    k1, k3 = gl.split(odd)
    # each is one register per row already in the accumulator's row layout: the conversions are
    # no-ops (the loop's SASS has no shared-memory round trip; tests/test_gluon.py)
    L: gl.constexpr = gl.SliceLayout(1, ACC)
    return (gl.convert_layout(k0, L)[:, None], gl.convert_layout(k1, L)[:, None],
            gl.convert_layout(k2, L)[:, None], gl.convert_layout(k3, L)[:, None])


@gluon.jit
def _brow(b_stage, k: gl.constexpr, ACC: gl.constexpr):
    """Bs[k][the thread's columns], [1, BN] in the accumulator's layout (2 x LDS.128)."""
    return b_stage.slice(k, 1, dim=0).load(ACC)


@gluon.jit
def _phase(acc, a0, a1, a2, a3, bv, a_cur, b_cur, a_nxt, b_nxt, a_tile, b_tile, koff, stride_ak,
           stride_bk, BK: gl.constexpr, KG: gl.constexpr, B_STEP: gl.constexpr, ACC: gl.constexpr,
           LAST: gl.constexpr):
    """One phase on stage (a_cur, b_cur): (a0 .. a3) are the current slab's 4 k-steps' A operands
    and bv k-step 0's B operands, read before the phase. Each k-step reads the next one's B before
    its FMAs, and the last k-step of a slab reads the next slab after them; the last k-step waits
    for the other stage's copies, whose one barrier publishes them and frees this stage, and then
    reads the other stage's first values. LAST: the peeled last phase, no copies, no barrier."""
    SLAB: gl.constexpr = a_cur.shape[0] // (BK // KG)
    for k in gl.static_range(BK):
        if k % KG == 0:
            av = a0
        elif k % KG == 1:
            av = a1
        elif k % KG == 2:
            av = a2
        else:
            av = a3
        if not LAST:
            _copies(k, a_nxt, b_nxt, a_tile, b_tile, koff, stride_ak, stride_bk, B_STEP)
        if k < BK - 1:
            bn = _brow(b_cur, k + 1, ACC)
        elif not LAST:
            _ac.wait_group(0)
            cta_barrier()
            bn = _brow(b_nxt, 0, ACC)
        acc = gl.fma(av, bv, acc)
        if k % KG == KG - 1:
            if k < BK - 1:
                a0, a1, a2, a3 = _slab(a_cur, k // KG + 1, SLAB, ACC)
            elif not LAST:
                a0, a1, a2, a3 = _slab(a_nxt, 0, SLAB, ACC)
        if k < BK - 1 or not LAST:
            bv = bn
    return acc, a0, a1, a2, a3, bv


@gluon.jit(do_not_specialize=["K"])
def g15_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, KG: gl.constexpr, B_STEP: gl.constexpr,
):
    """C[M, N] = A[M, K] @ B[K, N] in FP32 (N, K multiples of 4); one program computes one BM x BN
    tile of C."""
    gl.static_assert(gl.num_warps() == 8)
    ACC: gl.constexpr = ACC_LAYOUT
    G: gl.constexpr = BK // KG
    LA: gl.constexpr = A_COPY_LAYOUT
    # B's K-tile [BK, BN]: a lane copies 16 bytes of a row, 32 lanes 512 contiguous bytes
    LB: gl.constexpr = gl.BlockedLayout([1, 4], [1, 32], [8, 1], [1, 0])
    SMEM: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])

    pid_n = gl.program_id(0)
    pid_m = gl.program_id(1)

    a_s0 = gl.allocate_shared_memory(gl.float32, [G * BM, KG], SMEM)
    a_s1 = gl.allocate_shared_memory(gl.float32, [G * BM, KG], SMEM)
    b_s0 = gl.allocate_shared_memory(gl.float32, [BK, BN], SMEM)
    b_s1 = gl.allocate_shared_memory(gl.float32, [BK, BN], SMEM)

    ar = gl.arange(0, G * BM, layout=gl.SliceLayout(1, LA))
    am = g12.edge_source(pid_m * BM + ar % BM, M, BM, 1)
    aj = gl.arange(0, KG, layout=gl.SliceLayout(0, LA))
    akk = (ar // BM)[:, None] * KG + aj[None, :]  # [G * BM, KG]: k of each element
    akk = gl.max_contiguous(gl.multiple_of(akk, [1, KG]), [1, KG])
    a_tile = a_ptr + am[:, None] * stride_am + akk * stride_ak
    bk = gl.arange(0, BK, layout=gl.SliceLayout(1, LB))
    # rows past M and columns past N (N % 4 == 0, a copy's 4 columns together) as edge_source gives them
    bc = gl.arange(0, BN, layout=gl.SliceLayout(0, LB))
    bn = g12.edge_source(pid_n * BN + bc // 4 * 4, N, BN, 4) + bc % 4
    bn = gl.max_contiguous(gl.multiple_of(bn, 4), 4)
    b_tile = b_ptr + bk[:, None] * stride_bk + bn[None, :] * stride_bn

    phases = gl.cdiv(K, BK)
    k_first = K - BK * (phases - 1)
    async_copy(a_s0, a_tile, mask=akk < k_first)
    async_copy(b_s0, b_tile, mask=bk[:, None] < k_first)
    _ac.commit_group()
    _ac.wait_group(0)
    cta_barrier()

    acc = gl.zeros([BM, BN], gl.float32, ACC)
    a0, a1, a2, a3 = _slab(a_s0, 0, BM, ACC)
    bv = _brow(b_s0, 0, ACC)
    koff = k_first
    for _p in range(1, phases - 1, 2):
        acc, a0, a1, a2, a3, bv = _phase(acc, a0, a1, a2, a3, bv, a_s0, b_s0, a_s1, b_s1, a_tile,
                                         b_tile, koff, stride_ak, stride_bk, BK, KG, B_STEP, ACC, False)
        koff += BK
        acc, a0, a1, a2, a3, bv = _phase(acc, a0, a1, a2, a3, bv, a_s1, b_s1, a_s0, b_s0, a_tile,
                                         b_tile, koff, stride_ak, stride_bk, BK, KG, B_STEP, ACC, False)
        koff += BK
    if phases % 2 == 0:
        acc, a0, a1, a2, a3, bv = _phase(acc, a0, a1, a2, a3, bv, a_s0, b_s0, a_s1, b_s1, a_tile,
                                         b_tile, koff, stride_ak, stride_bk, BK, KG, B_STEP, ACC, False)
        acc, a0, a1, a2, a3, bv = _phase(acc, a0, a1, a2, a3, bv, a_s1, b_s1, a_s0, b_s0, a_tile,
                                         b_tile, koff, stride_ak, stride_bk, BK, KG, B_STEP, ACC, True)
    else:
        acc, a0, a1, a2, a3, bv = _phase(acc, a0, a1, a2, a3, bv, a_s0, b_s0, a_s1, b_s1, a_tile,
                                         b_tile, koff, stride_ak, stride_bk, BK, KG, B_STEP, ACC, True)

    cm = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, ACC))
    cn = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, ACC))
    c_ptrs = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    gl.store(c_ptrs, acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


def _options() -> dict:
    """The schedule's constexprs as the module states them; refuses a B_STEP that no k-step of a
    phase has (B's tile would never be copied)."""
    if not 0 <= B_STEP < BK:
        raise ValueError(f"G15: B_STEP = {B_STEP} is not a k-step of the phase (0 .. {BK - 1}): "
                         "B's copy would never be issued")
    return dict(KG=KG, B_STEP=B_STEP)


def matmul(a, b, out=None):
    """``out = a @ b`` (FP32, N and K multiples of 4) on K12's tile and lane map; returns out."""
    return gc.launch(g15_kernel, a, b, out, name=NAME, why=unsupported_reason(), multiple_of=MULTIPLE_OF,
                     tile=(BM, BN, BK), num_warps=NUM_WARPS, maxnreg=MAXNREG, **_options())


def aot_spec(num_stages: int = 1, shape: tuple[int, int, int] | None = None):
    """Kernel, representative arguments and options for ``aot.compile_sass_target`` (``num_stages``
    other than 1 refused: writes its two stages itself)."""
    return gc.aot_spec(g15_kernel, num_stages, shape, name=NAME, why=unsupported_reason(),
                       refusal="writes its two stages itself", tile=(BM, BN, BK), num_warps=NUM_WARPS,
                       maxnreg=MAXNREG, **_options())
