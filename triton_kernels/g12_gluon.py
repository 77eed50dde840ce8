"""G12: Gluon twin of K12 -- 128 x 256 x 16 block tile, K12's warp tiles and lane map, cp.async stages.

K12 (cuda_kernels/k12_lean_issue.cu, default parameters) runs 256 threads as 2 x 4 warps of
64 x 64 warp tiles (warp w: warp row w / 4, warp column w % 4); lane ``lane`` of a warp is placed
at lane column ``lx`` and lane row ``ly``, K10's lane map::

    lx = (lane & 1) | ((lane >> 2) & 3) << 1      # lane bits 0, 2, 3 -> lx bits 0, 1, 2
    ly = ((lane >> 1) & 1) | (lane >> 4) << 1     # lane bits 1, 4    -> ly bits 0, 1

and owns 16 x 8 outputs as 4 x 2 sub-blocks of 4 x 4: rows 64 (w / 4) + 4 ly + 16 i + 0..3
(i = 0..3) and columns 64 (w % 4) + 4 lx + 32 j + 0..3 (j = 0, 1). As for G10, no
``BlockedLayout`` is this map; it is written out as a ``DistributedLinearLayout``
(:data:`ACC_BASES`): each basis is the (row, column) offset that one bit of (register, lane,
warp) adds.

Everything else follows K12:

* Asynchronous copies (``cp.async``, LDGSTS), 4 bytes each, global -> shared with no register
  on the way. A's K-tile [128 x 16]: a warp's copy reads 4 values of k (:data:`A_LANES_K`, the
  lanes along k) of 8 rows and writes As[k][m] (transposed), rows unpadded (see below); K12's
  map (16 lanes along k: row tid / 16 + 16 c, column tid % 16 for copy c) is A_LANES_K = 16.
  B's K-tile
  [16 x 256]: copy c (0..15) reads row c, column tid, into Bs[c][tid], unpadded. The copy
  map is the layout of the source pointers (register c of a thread is its copy c).
* A copy for a row past M or a column past N reads the one a tile before it (the last ones
  where there is none: :func:`edge_source`), so the main loop's copies carry no mask; what they
  bring feeds only outputs that are not stored.
* The ragged end of K first: phase 0 copies K - 16 (phases - 1) values of k (masked: the rest
  zero-filled by the copy) and every later phase is whole; the last phase is peeled (no
  copies, no barrier).
* A phase's copies are issued in two bursts: one ``async_copy`` of A's whole K-tile at k-step 0
  and one of B's at k-step :data:`B_STEP`. They are committed, waited for at the last k-step,
  and followed by one barrier that both publishes them and frees the stage just read: one
  barrier per phase. (Copies in pieces, spread over the phase as K12 spreads them, ran slower:
  each piece's bank conflicts interrupt the fragment loads of more k-steps; and under Triton 3.6
  slices of one buffer cost a barrier each. ``docs/notes/g12.md`` has both.)
* The fragments are read one k-step ahead (:data:`AHEAD`), as K12's double-buffered registers:
  each k-step reads the next one's values before its FMAs, and the last k-step, after the
  barrier, reads k-step 0 of the other stage.
* Two shared stages, two allocations named in the code (one loop iteration runs two phases,
  stage 0 then stage 1), as G10. With an even number of phases an odd one runs after the loop
  (a branch inside it would leave the stage read ahead after the barrier, and the next
  iteration's copy into it would need a barrier of its own); the peeled last phase reads stage 0
  or 1 by the parity of the number of phases.
* :data:`INDEXED` (G12T's loop, ``g12t_gluon``): one phase a loop iteration, the stages one
  allocation indexed by the phase's parity, both operands' copies issued right after each phase's
  barrier. Half the code; for G12's conflicted copies of A, all issued at once, it runs slower
  (docs/notes/g12t.md), so G12 keeps the named stages.
* ``VEC`` = 4: 16-byte copies of an A contiguous along m (G12T's transposed A) and of B.
* Per k-step a thread reads its 16 A values (4 x LDS.128) and 8 B values (2 x LDS.128): a
  [128 x 1] view of As[k] and a [1 x 256] view of Bs[k] loaded in the accumulator's layout,
  then 128 ``gl.fma`` (FFMA, never tensor cores) of their broadcast product.
* Grid as K12's: program_id(0) walks C's tile columns, program_id(1) its tile rows. Any M, N,
  K (K12 is ``SGEMM_PLAIN``): the copies are 4 bytes wide and the stores masked past M and N.

Gluon's asynchronous copy (``triton.experimental.gluon.language.nvidia.ampere.async_copy``) is
present in both Triton versions the project runs, under two names: ``async_copy_global_to_shared``
in 3.6, ``async_load`` in 3.9 (where the old name raises); :data:`async_copy` is whichever the
installed Triton has, and the twin uses it rather than G10's register prefetch because it is
K12's own mechanism (no prefetch registers, no shared stores).

What K12 does that a Gluon kernel does not state: As's rows padded by 4 floats. Gluon has no way
to write it: an As in a ``PaddedSharedLayout`` does not lower (Triton 3.6 and 3.9 both fail in
ConvertTritonGPUToLLVM), a swizzled As cannot be sliced by k for the fragment loads ("We don't
support splitting along the swizzling pattern"), and an allocation of 132-float rows is refused
(shapes must be powers of 2). So As is unpadded, and with K12's copy map (A_LANES_K = 16) A's
copies would meet 16-way bank conflicts (lanes 0..15 writing 16 rows k of one column m) where
K12's padded rows meet 2-way; the twin takes A_LANES_K = 4 (8 lanes along m: 4-way, for 16
contiguous bytes of 8 rows per copy instruction in place of K12's 64 of two). Its copies of A hold
the shared-memory unit 11 wavefronts each where K12's hold it 3, and the fragment loads queued
behind them are what the warps wait for (docs/notes/g12.md). Also not stated: K12's 32-bit shared-
window addresses and the stage switch by one XOR of each address register (Gluon allocates the two
stages and computes their addresses itself); and ``__launch_bounds__(256, 1)``, for which the
compile takes ``maxnreg`` as an option (:data:`MAXNREG`, None = the compiler's choice).
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as _ac

from triton_kernels import gluon_common as gc
from triton_kernels.gluon_common import cta_barrier

BM, BN, BK = 128, 256, 16
WARPS_M, WARPS_N = 2, 4
NUM_WARPS = WARPS_M * WARPS_N  # 256 threads
TM, TN = 16, 8  # outputs per thread: rows x columns, as 4 x 4 sub-blocks
MULTIPLE_OF = (1, 1, 1)  # any M, N, K, as K12 (SGEMM_PLAIN)
# the register cap (None: the compiler's choice; docs/notes/g12.md compares a cap of 232)
MAXNREG = None
# each k-step reads the next one's values from shared memory before its FMAs (K12's double-buffered
# fragments); False: each reads its own just before them, the order left to the compilers
AHEAD = True
# lanes of a warp along k in A's copy map (the rest along m). 16 is K12's map. Into the unpadded As,
# r lanes along k write r rows of one column m, one bank: r-way; and a copy instruction reads 32 / r
# rows of A (L1 lines). 4 and 8 cost a copy the fewest shared-memory wavefronts (lines plus the
# conflicts' extra ones: 11, against 17 for 2 or 16 and 32 for 1), and 4 ran fastest
# (docs/notes/g12.md)
A_LANES_K = 4
# the k-step of a phase that issues B's copy (A's is at k-step 0): 8, half a phase after A's
# (0, 4, 8 and 12 compared in docs/notes/g12.md). Copies into two allocations at two k-steps
# cost Triton 3.6 no barrier (slices of one would)
B_STEP = 8
NAME = "G12"
# one phase a loop iteration on stages indexed by its parity, not two on named stages
INDEXED = False

# (row, column) offset added by each bit of the register index, the lane and the warp.
ACC_BASES = dict(
    **gc.K10_LANE_MAP,  # registers and lanes: K10's lane map
    # warp bits 0..2 -> warp column bits (64, 128 columns), warp row (64 rows)
    warp=[[0, 64], [0, 128], [64, 0]],
)

# the accumulator's layout: thread -> outputs of the block tile, K12's map (used by the kernel)
ACC_LAYOUT = gc.linear_layout(ACC_BASES, [BM, BN])


# cp.async of a tensor of pointers into a shared-memory view: a Gluon builtin (3.9 and 3.6
# spellings)
async_copy = gc.builtin(_ac, "async_load", "async_copy_global_to_shared")


def unsupported_reason() -> str | None:
    """None when this Triton can build G12, else one line naming the version and what is missing."""
    why = gc.unsupported_reason()
    if why:
        return why
    missing = [n for n in ("commit_group", "wait_group") if not hasattr(_ac, n)]
    if async_copy is None:
        missing.insert(0, "async_load/async_copy_global_to_shared")
    if missing:
        import triton

        return (f"triton {triton.__version__}: triton.experimental.gluon's async_copy lacks "
                f"{', '.join(missing)}")
    return None


SUPPORTED = unsupported_reason() is None


@gluon.jit
def edge_source(first, n, TILE: gl.constexpr, VEC: gl.constexpr):
    """The row or column a copy reads for the group of VEC that starts at ``first`` (a tile's
    start plus a multiple of VEC), of ``n``: the group itself where it lies inside, else the group
    a tile before it, else the last VEC. Groups past the edge thus keep a word a lane, as the
    groups inside do: clamped onto the last VEC, the copies of the last row or column of tiles
    would hand one word to many lanes in every phase, and those blocks are in every wave."""
    return gl.where(first <= n - VEC, first, gl.where(first >= TILE, first - TILE, n - VEC))


@gluon.jit
def _copies(k, a_nxt, b_nxt, a_tile, b_tile, koff, stride_ak, stride_bk, B_STEP: gl.constexpr):
    """The copies k-step ``k`` of a phase issues into the other stage (a_nxt, b_nxt): A's whole
    K-tile at k-step 0, B's at k-step B_STEP, which commits them."""
    if k == 0:
        async_copy(a_nxt, a_tile + koff * stride_ak)
    if k == B_STEP:
        async_copy(b_nxt, b_tile + koff * stride_bk)
        _ac.commit_group()


@gluon.jit
def _fragments(a_stage, b_stage, k, ACC: gl.constexpr):
    """Step ``k``'s values of one stage in the accumulator's layout: As[k][rows of the thread]
    ([BM, 1], 4 x LDS.128) and Bs[k][its columns] ([1, BN], 2 x LDS.128)."""
    av = a_stage.permute([1, 0]).slice(k, 1, dim=1).load(ACC)
    bv = b_stage.slice(k, 1, dim=0).load(ACC)
    return av, bv


@gluon.jit
def _phase(acc, av, bv, a_cur, b_cur, a_nxt, b_nxt, a_tile, b_tile, koff, stride_ak, stride_bk,
           BK: gl.constexpr, B_STEP: gl.constexpr, ACC: gl.constexpr, AHEAD: gl.constexpr):
    """One whole phase: multiply stage (a_cur, b_cur) while the K-tile from k = ``koff`` is
    copied into (a_nxt, b_nxt); one barrier at its last k-step. With AHEAD, (av, bv) are k-step
    0's values, read before the phase, and each k-step reads the next one's before its FMAs (the
    last reads k-step 0 of the other stage, after the barrier); returns them with the sums.
    Without, each k-step reads its own values just before its FMAs."""
    for k in gl.static_range(BK):
        if AHEAD:
            if k == BK - 1:
                # this step's values are in registers and the other stage's copies are issued:
                # wait for them; one barrier publishes them and frees this stage
                _ac.wait_group(0)
                cta_barrier()
                an, bn = _fragments(a_nxt, b_nxt, 0, ACC)
            else:
                an, bn = _fragments(a_cur, b_cur, k + 1, ACC)
        else:
            av, bv = _fragments(a_cur, b_cur, k, ACC)
        _copies(k, a_nxt, b_nxt, a_tile, b_tile, koff, stride_ak, stride_bk, B_STEP)
        if not AHEAD and k == BK - 1:
            _ac.wait_group(0)
            cta_barrier()
        acc = gl.fma(av, bv, acc)  # 16 x 8 FFMA
        if AHEAD:
            av, bv = an, bn
    return acc, av, bv


@gluon.jit
def _last_phase(acc, av, bv, a_cur, b_cur, BK: gl.constexpr, ACC: gl.constexpr, AHEAD: gl.constexpr):
    """The peeled last phase: nothing left to copy, no barrier; (av, bv) as for :func:`_phase`."""
    for k in gl.static_range(BK):
        if AHEAD:
            if k < BK - 1:
                an, bn = _fragments(a_cur, b_cur, k + 1, ACC)
        else:
            av, bv = _fragments(a_cur, b_cur, k, ACC)
        acc = gl.fma(av, bv, acc)
        if AHEAD and k < BK - 1:
            av, bv = an, bn
    return acc


@gluon.jit
def _phase_indexed(acc, av, bv, a_s, b_s, s, a_tile, b_tile, koff, K, stride_ak, stride_bk,
                   BK: gl.constexpr, ACC: gl.constexpr):
    """One phase on stage ``s`` of the indexed stages (a_s, b_s), fragments read a k-step ahead.
    Its last k-step waits for the other stage's copies, and after the one barrier that publishes
    them and frees this stage it copies the K-tile at ``koff`` (two phases on) into this stage, the
    copies' writes then behind the barrier that the reads before them need; past K it copies the
    last K-tile again, into a stage no phase reads."""
    for k in gl.static_range(BK):
        if k == BK - 1:
            _ac.wait_group(0)
            cta_barrier()
            kc = gl.minimum(koff, K - BK)
            async_copy(a_s.index(s), a_tile + kc * stride_ak)
            async_copy(b_s.index(s), b_tile + kc * stride_bk)
            _ac.commit_group()
            an, bn = _fragments(a_s.index(1 - s), b_s.index(1 - s), 0, ACC)
        else:
            an, bn = _fragments(a_s.index(s), b_s.index(s), k + 1, ACC)
        acc = gl.fma(av, bv, acc)
        av, bv = an, bn
    return acc, av, bv


@gluon.jit
def _named_stages(acc, av, bv, a_s0, b_s0, a_s1, b_s1, a_tile, b_tile, koff, phases, stride_ak,
                  stride_bk, BK: gl.constexpr, B_STEP: gl.constexpr, ACC: gl.constexpr,
                  AHEAD: gl.constexpr):
    """Phases 1 .. phases - 1 on two named stages, two per iteration: stage 0 then stage 1; an odd
    one after the loop, so that no branch inside it leaves a stage read after its barrier (the next
    iteration's copy into it would need another barrier). The last phase reads the stage its tile
    was copied into: 0 for an odd number of phases."""
    for _p in range(1, phases - 1, 2):
        acc, av, bv = _phase(acc, av, bv, a_s0, b_s0, a_s1, b_s1, a_tile, b_tile, koff,
                             stride_ak, stride_bk, BK, B_STEP, ACC, AHEAD)
        koff += BK
        acc, av, bv = _phase(acc, av, bv, a_s1, b_s1, a_s0, b_s0, a_tile, b_tile, koff,
                             stride_ak, stride_bk, BK, B_STEP, ACC, AHEAD)
        koff += BK
    if phases % 2 == 0:
        acc, av, bv = _phase(acc, av, bv, a_s0, b_s0, a_s1, b_s1, a_tile, b_tile, koff,
                             stride_ak, stride_bk, BK, B_STEP, ACC, AHEAD)
        acc = _last_phase(acc, av, bv, a_s1, b_s1, BK, ACC, AHEAD)
    else:
        acc = _last_phase(acc, av, bv, a_s0, b_s0, BK, ACC, AHEAD)
    return acc


# K is not specialised on its value: with K = 1 the number of phases would be a constant, and
# Triton 3.6 does not lower the kernel then (an assertion in ConvertTritonGPUToLLVM); at 4096^3 the
# main loop's SASS is the same either way but for its bound's compare
@gluon.jit(do_not_specialize=["K"])
def g12_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, A_LANES_K: gl.constexpr,
    B_STEP: gl.constexpr, AHEAD: gl.constexpr, VEC: gl.constexpr = 1, INDEXED: gl.constexpr = False,
):
    """C[M, N] = A[M, K] @ B[K, N] in FP32; one program computes one BM x BN tile of C."""
    gl.static_assert(gl.num_warps() == 8)
    ACC: gl.constexpr = ACC_LAYOUT
    # A's K-tile [BK, BM]: lanes -> A_LANES_K values of k (fastest) x 32 / A_LANES_K rows, the
    # warps -> the rest of k (at most 8 deep), then rows. VEC = 4 (A contiguous along m, as the
    # view of a transposed A is: G12T): a lane copies 4 rows of one k, 16 bytes, the warp 128 rows
    WK: gl.constexpr = BK // A_LANES_K if BK // A_LANES_K < 8 else 8
    if VEC == 1:
        LA: gl.constexpr = gl.BlockedLayout([1, 1], [A_LANES_K, 32 // A_LANES_K], [WK, 8 // WK], [0, 1])
    else:
        LA: gl.constexpr = gl.BlockedLayout([1, VEC], [1, 32], [8, 1], [1, 0])
    # B's K-tile [BK, BN]: thread tid -> column tid (VEC = 4: columns 4 tid .. 4 tid + 3 of a row a
    # warp), register c -> row c
    if VEC == 1:
        LB: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, 8], [1, 0])
    else:
        LB: gl.constexpr = gl.BlockedLayout([1, VEC], [1, 32], [8, 1], [1, 0])
    # As[k][m] and Bs[k][n], plain row-major: cp.async takes no padded layout (module docstring)
    SMEM: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])

    pid_n = gl.program_id(0)  # blockIdx.x: columns of C
    pid_m = gl.program_id(1)  # blockIdx.y: rows

    if INDEXED:
        a_s = gl.allocate_shared_memory(gl.float32, [2, BK, BM], SMEM)
        b_s = gl.allocate_shared_memory(gl.float32, [2, BK, BN], SMEM)
        a_s0 = a_s.index(0)
        b_s0 = b_s.index(0)
    else:
        a_s0 = gl.allocate_shared_memory(gl.float32, [BK, BM], SMEM)
        a_s1 = gl.allocate_shared_memory(gl.float32, [BK, BM], SMEM)
        b_s0 = gl.allocate_shared_memory(gl.float32, [BK, BN], SMEM)
        b_s1 = gl.allocate_shared_memory(gl.float32, [BK, BN], SMEM)

    # sources at k = 0; rows past M and columns past N as edge_source gives them
    # (VEC = 4: M and N multiples of 4; a copy's 4 rows or columns together)
    ak = gl.arange(0, BK, layout=gl.SliceLayout(1, LA))
    am = gl.arange(0, BM, layout=gl.SliceLayout(0, LA))
    am = gl.max_contiguous(gl.multiple_of(edge_source(pid_m * BM + am // VEC * VEC, M, BM, VEC) + am % VEC,
                                          VEC), VEC)
    a_tile = a_ptr + am[None, :] * stride_am + ak[:, None] * stride_ak  # [BK, BM]: As[k][m]'s source
    bk = gl.arange(0, BK, layout=gl.SliceLayout(1, LB))
    bn = gl.arange(0, BN, layout=gl.SliceLayout(0, LB))
    bn = gl.max_contiguous(gl.multiple_of(edge_source(pid_n * BN + bn // VEC * VEC, N, BN, VEC) + bn % VEC,
                                          VEC), VEC)
    b_tile = b_ptr + bk[:, None] * stride_bk + bn[None, :] * stride_bn  # [BK, BN]

    phases = gl.cdiv(K, BK)
    k_first = K - BK * (phases - 1)  # values of k in phase 0 (1 .. BK)

    # phase 0 into stage 0, all at once: k >= k_first zero-filled (K12's issue_first)
    async_copy(a_s0, a_tile, mask=ak[:, None] < k_first)
    async_copy(b_s0, b_tile, mask=bk[:, None] < k_first)
    _ac.commit_group()
    if INDEXED:
        # phase 1 into stage 1 (with one phase: the K-tile at 0 again, masked to K, never read),
        # before the barrier
        kc = gl.maximum(gl.minimum(k_first, K - BK), 0)
        async_copy(a_s.index(1), a_tile + kc * stride_ak, mask=ak[:, None] + kc < K)
        async_copy(b_s.index(1), b_tile + kc * stride_bk, mask=bk[:, None] + kc < K)
        _ac.commit_group()
        _ac.wait_group(1)
    else:
        _ac.wait_group(0)
    cta_barrier()

    acc = gl.zeros([BM, BN], gl.float32, ACC)
    av, bv = _fragments(a_s0, b_s0, 0, ACC)  # read ahead (AHEAD) or again by k-step 0
    koff = k_first  # first k of the K-tile being copied
    if INDEXED:
        # one phase an iteration, the stages indexed by its parity: half the loop's code. Each
        # phase's last k-step copies two phases on into the stage it frees
        koff += BK
        for p in range(0, phases - 1):
            acc, av, bv = _phase_indexed(acc, av, bv, a_s, b_s, p % 2, a_tile, b_tile, koff, K,
                                         stride_ak, stride_bk, BK, ACC)
            koff += BK
        s = (phases - 1) % 2
        acc = _last_phase(acc, av, bv, a_s.index(s), b_s.index(s), BK, ACC, AHEAD)
        _ac.wait_group(0)  # the last copy, of a K-tile no phase reads, lands before the exit
    else:
        acc = _named_stages(acc, av, bv, a_s0, b_s0, a_s1, b_s1, a_tile, b_tile, koff, phases,
                            stride_ak, stride_bk, BK, B_STEP, ACC, AHEAD)

    cm = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, ACC))
    cn = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, ACC))
    c_ptrs = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    gl.store(c_ptrs, acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


def check_schedule(name: str, b_step: int, a_lanes_k: int, indexed: bool, ahead: bool) -> dict:
    """The schedule's constexprs for :func:`g12_kernel`, or ValueError naming a schedule it would get
    wrong: B's copy issued at k-step ``b_step`` of a phase needs 0 <= b_step < BK (else no k-step
    issues it and B's tile is never copied), A's copy map ``a_lanes_k`` lanes along k dividing the
    warp's 32 lanes and BK, and the indexed stages (which copy at each phase's end) read ahead."""
    if not 0 <= b_step < BK:
        raise ValueError(f"{name}: B_STEP = {b_step} is not a k-step of the phase (0 .. {BK - 1}): "
                         "B's copy would never be issued")
    if a_lanes_k < 1 or 32 % a_lanes_k or BK % a_lanes_k:
        raise ValueError(f"{name}: A_LANES_K = {a_lanes_k} does not divide 32 lanes and BK = {BK}")
    if indexed and not ahead:
        raise ValueError(f"{name}: INDEXED stages read the fragments a k-step ahead; AHEAD = False is "
                         "not offered with them")
    return dict(A_LANES_K=a_lanes_k, B_STEP=b_step, AHEAD=ahead, INDEXED=indexed)


def _options() -> dict:
    """The schedule's constexprs, as the module states them now."""
    return check_schedule(NAME, B_STEP, A_LANES_K, INDEXED, AHEAD)


def matmul(a, b, out=None):
    """``out = a @ b`` (FP32, row-major or any strides) with K12's tile and lane map; returns out."""
    return gc.launch(g12_kernel, a, b, out, name=NAME, why=unsupported_reason(), multiple_of=MULTIPLE_OF,
                     tile=(BM, BN, BK), num_warps=NUM_WARPS, maxnreg=MAXNREG, **_options())


def aot_spec(num_stages: int = 1, shape: tuple[int, int, int] | None = None):
    """Kernel, representative arguments and options for ``aot.compile_sass_target`` (``num_stages``
    other than 1 refused: writes its two stages itself)."""
    return gc.aot_spec(g12_kernel, num_stages, shape, name=NAME, why=unsupported_reason(),
                       refusal="writes its two stages itself", tile=(BM, BN, BK), num_warps=NUM_WARPS,
                       maxnreg=MAXNREG, **_options())
