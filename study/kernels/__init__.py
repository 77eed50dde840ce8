"""The one registry of kernels: ``KERNELS``, and the selections the study makes of it.

Every other module reads kernel ids, tiles, constraints and counted ledger inputs from here
and nowhere else, and picks kernels with the selection functions at the end (``last_rung``,
``headline_kernels``, ...) rather than by id. A CUDA kernel's entry gives only what its ``.cu``
does not say: the symbol, block tile, threads per block and operand needs of each function it
launches are read from the file's ``SGEMM_REGISTER(symbol, BM, BN, BK, THREADS, FLAGS)`` lines
(through the file's ``#define``s) the first time they are asked for (``study.kernels.kernel``
says what an entry is). Importing this module reads no file, builds nothing, compiles nothing
and never touches a GPU; launchers are resolved on first use.
"""

from __future__ import annotations

from fractions import Fraction

from study.errors import InputError
from study.kernels.kernel import (  # noqa: F401
    Counted,
    Kernel,
    KernelPath,
    PathFacts,
    TensorCore,
    check_cuda_operands,
)


def _t(bm, bn, bk=32):
    return (bm, bn, bk)


def _tl_dot(tid: str, twin: str, idea: str, module: str, tile, *, threads: int, stages: int) -> Kernel:
    """A ``tl.dot`` twin: the tiled Triton kernel (``triton_kernels/tile.py``) at its CUDA
    kernel's block tile and threads per block, pipelined ``stages`` deep."""
    return Kernel(tid, "triton", idea, target=f"{module}:matmul", threads=threads, tile=tile,
                  source="triton_kernels/tile.py", symbol="tiled_matmul_kernel", twin=twin,
                  num_stages=stages, options={"num_stages": stages})


def _tl_dot_pair(tid: str, twin: str, module: str, bm: int, bn: int, *, threads: int, of: str | None = None):
    """The unpipelined twin ``tid`` (one stage, as the CUDA kernels) and its software-pipelined
    sibling ``tid + "p"`` (three stages), at a BM x BN x 32 tile."""
    of = of or twin
    return (
        _tl_dot(tid, twin, f"twin of {of}: {bm}x{bn}x32 tile, {threads // 32} warps, unpipelined", module,
                _t(bm, bn), threads=threads, stages=1),
        _tl_dot(tid + "p", twin, f"twin of {of}, software-pipelined", module, _t(bm, bn), threads=threads,
                stages=3),
    )


def _kd_stream(*, mt: int, tx: int, tg: int, unroll: int) -> PathFacts:
    """The counts of one streaming GEMV kernel of KD (``kd_gemv_stream.cu``) at MT rows, TX column
    threads, TG k-groups and UNROLL 4-k steps in flight."""
    ldg = 4 * unroll + Fraction(mt * unroll, tx)  # LDG.128 of B, then of A's staged chunk
    return PathFacts(counted=Counted(
        lds_dist=0, lds_bcast=Fraction(mt, 4), fma_per_k=4 * mt, ldg_per_phase=ldg, elems_per_phase=4 * ldg,
        fma_per_phase=16 * mt * unroll, outputs=Fraction(4 * mt, tg), phase_k=4 * tg * unroll, lds_bits=128,
        ldg_bits=128))


def _kd_tiled(*, bm: int, bn: int = 144, bk: int = 64, gk: int = 16, consumers: int = 256) -> PathFacts:
    """The counts of one tiled decode GEMM kernel of KD (``kd_gemm_tiled.cu``) at BM rows, per
    consumer thread: 9 columns and BM / 4 rows a lane, GK values of k a group and stage."""
    tm = bm // 4
    return PathFacts(compute_threads=consumers, counted=Counted(
        lds_dist=3, lds_bcast=tm // 4, fma_per_k=9 * tm, ldg_per_phase=Fraction(1 + bk // gk, consumers),
        elems_per_phase=Fraction((bm + bn) * bk, consumers), fma_per_phase=Fraction(bm * bn * bk, consumers),
        outputs=Fraction(bm * bn, consumers), phase_k=bk, lds_bits=128, ldg_bits=32 * bm * bk,
        ldg_bits_b=32 * gk * bn))


# K13's counts per thread that owns outputs, K14's per consumer thread (the same tile and main
# loop): per phase (BK = 16) one tensor copy of the A box and one of the B box for the whole
# block (1/256 of an instruction each per thread: one instruction carries the thread's 8 (A) and
# 16 (B) elements 256 times over); per k-step 4 LDS.128 of B (lane columns) and 2 of A (lane
# rows, each LDS.128 four k-steps of one row) for 128 FMAs
TMA_TILE_COUNTS = Counted(lds_dist=4, lds_bcast=2, fma_per_k=128, ldg_per_phase=Fraction(1, 128),
                          elems_per_phase=24, fma_per_phase=2048, outputs=128, phase_k=16, lds_bits=128,
                          ldg_bits=32 * 128 * 16, ldg_bits_b=32 * 16 * 256)

KERNELS: tuple[Kernel, ...] = (
    Kernel(
        "K0", "cublas", "cuBLAS FP32 through torch.matmul, TF32 off",
        target="study.measure.baseline:cublas_matmul",
        launch_info="study.measure.baseline:default_kernel",
    ),
    # the vendor's strongest kernel at each shape: every algorithm cuBLASLt's heuristic offers,
    # timed, the fastest kept; "% of cuBLAS" is taken against the faster of the two
    Kernel(
        "K0L", "cublas",
        "the fastest of the cuBLASLt algorithms its heuristic offers (FP32 compute, no TF32)",
        target="study.measure.cublaslt:best_matmul", launch_info="study.measure.cublaslt:chosen",
        contiguous=True,  # its plan is made for one (row-major) layout per shape
    ),
    # CUDA kernels, in ladder order: symbol, tile, threads and operand needs are in each .cu's
    # SGEMM_REGISTER line (the binding is "cuda:<symbol>").
    Kernel(
        "K1", "cuda", "naive; row from threadIdx.x (uncoalesced)",
        source="cuda_kernels/k1_naive.cu",
        counted=Counted(lds_dist=0, lds_bcast=0, fma_per_k=1, ldg_per_phase=2, elems_per_phase=2,
                        fma_per_phase=1, outputs=1, phase_k=1, req_per_fma=33),
    ),
    Kernel(
        "K2", "cuda", "naive; column from threadIdx.x (coalesced)",
        source="cuda_kernels/k2_coalesced.cu", calibrates="ldg",
        counted=Counted(lds_dist=0, lds_bcast=0, fma_per_k=1, ldg_per_phase=2, elems_per_phase=2,
                        fma_per_phase=1, outputs=1, phase_k=1, req_per_fma=2),
    ),
    Kernel(
        "K3", "cuda", "shared-memory tiling, TILE = 32",
        source="cuda_kernels/k3_smem_tile.cu", calibrates="lds",
        counted=Counted(lds_dist=1, lds_bcast=1, fma_per_k=1, ldg_per_phase=2, elems_per_phase=2,
                        fma_per_phase=32, outputs=1, phase_k=32),
    ),
    Kernel(
        "K3c", "cuda", "K3 + thread coarsening, COARSE = 4 (one row, 4 tiles across)",
        source="cuda_kernels/k3c_coarsened.cu",
        counted=Counted(lds_dist=1, lds_bcast=1, fma_per_k=1, ldg_per_phase=5, elems_per_phase=5,
                        fma_per_phase=128, outputs=4, phase_k=32),
    ),
    Kernel(
        "K4", "cuda", "1-D register tiling: 8 rows of one column per thread",
        source="cuda_kernels/k4_reg_tile_1d.cu", calibrates="lds",
        counted=Counted(lds_dist=1, lds_bcast=8, fma_per_k=8, ldg_per_phase=16, elems_per_phase=16,
                        fma_per_phase=256, outputs=8, phase_k=32),
    ),
    Kernel(
        "K5", "cuda", "2-D register tiling: 8 rows x 4 columns per thread",
        source="cuda_kernels/k5_reg_tile_2d.cu",
        counted=Counted(lds_dist=4, lds_bcast=8, fma_per_k=32, ldg_per_phase=40, elems_per_phase=40,
                        fma_per_phase=1024, outputs=32, phase_k=32, sts_ways_a=32),
    ),
    Kernel(
        "K6", "cuda", "K5 with 128-bit (float4) global and shared loads",
        source="cuda_kernels/k6_vectorized.cu",
        counted=Counted(lds_dist=1, lds_bcast=2, fma_per_k=32, ldg_per_phase=10, elems_per_phase=40,
                        fma_per_phase=1024, outputs=32, phase_k=32, lds_bits=128, ldg_bits=128, sts_ways_a=8),
    ),
    # The ladder past K6: each rung one idea over the one before.
    Kernel(
        "K7", "cuda", "more outputs per thread: 128x128x8 block tile, 8x8 outputs per thread, 256 threads",
        source="cuda_kernels/k7_block_tile_8x8.cu",
        counted=Counted(lds_dist=2, lds_bcast=2, fma_per_k=64, ldg_per_phase=2, elems_per_phase=8,
                        fma_per_phase=512, outputs=64, phase_k=8, lds_bits=128, ldg_bits=128, sts_ways_a=2),
    ),
    Kernel(
        "K8", "cuda", "K7 + warp tiling: 32x64 warp tiles of 4x4 sub-blocks, conflict-free LDS.128",
        source="cuda_kernels/k8_warp_tile.cu",
        counted=Counted(lds_dist=2, lds_bcast=2, fma_per_k=64, ldg_per_phase=2, elems_per_phase=8,
                        fma_per_phase=512, outputs=64, phase_k=8, lds_bits=128, ldg_bits=128),
    ),
    Kernel(
        "K9", "cuda", "K8 + double buffering: two shared stages, register prefetch, one barrier per phase",
        source="cuda_kernels/k9_double_buffer.cu",
        counted=Counted(lds_dist=2, lds_bcast=2, fma_per_k=64, ldg_per_phase=2, elems_per_phase=8,
                        fma_per_phase=512, outputs=64, phase_k=8, lds_bits=128, ldg_bits=128),
    ),
    Kernel(
        "K10", "cuda", "the tuned rung: K9's scheme at 256x128x8, 16x8 outputs per thread, 64x64 warp tiles",
        source="cuda_kernels/k10_tuned.cu",
        counted=Counted(lds_dist=2, lds_bcast=4, fma_per_k=128, ldg_per_phase=3, elems_per_phase=12,
                        fma_per_phase=1024, outputs=128, phase_k=8, lds_bits=128, ldg_bits=128),
    ),
    Kernel(
        "K11", "cuda", "asynchronous copies (cp.async) global -> shared, no prefetch registers and no shared "
        "stores: K10's scheme at 128x256x16, 2 stages",
        source="cuda_kernels/k11_async_stages.cu",
        # per phase (BK = 16) 8 four-byte copies of A (transposed on the way) and 4 sixteen-byte
        # copies of B per thread; per k-step K10's 4 + 2 LDS.128 for 128 FMAs
        counted=Counted(lds_dist=2, lds_bcast=4, fma_per_k=128, ldg_per_phase=12, elems_per_phase=24,
                        fma_per_phase=2048, outputs=128, phase_k=16, lds_bits=128, ldg_bits=32,
                        ldg_bits_b=128),
    ),
    Kernel(
        "K12", "cuda", "a lean issue stream: K11's copies 4 bytes each with no guard in the main loop, "
        "32-bit shared addresses switched by one XOR, the ragged K-tile first; 128x256x16, any shape",
        source="cuda_kernels/k12_lean_issue.cu",
        # per phase (BK = 16) 8 four-byte copies of A (transposed on the way) and 16 of B per
        # thread; per k-step K10's 4 + 2 LDS.128 for 128 FMAs
        counted=Counted(lds_dist=2, lds_bcast=4, fma_per_k=128, ldg_per_phase=24, elems_per_phase=24,
                        fma_per_phase=2048, outputs=128, phase_k=16, lds_bits=128, ldg_bits=32),
    ),
    Kernel(
        "K13", "cuda", "the copy engine fetches the tiles: two TMA tensor copies per phase from one "
        "thread, mbarrier-counted bytes, 4 stages, no __syncthreads; 128x256x16, 8x16 per thread",
        source="cuda_kernels/k13_tma_stages.cu",
        counted=TMA_TILE_COUNTS,
    ),
    Kernel(
        "K14", "cuda", "warp specialisation: a producer warp group issues K13's tensor copies, two consumer "
        "warp groups multiply (setmaxnreg 24 / 240), 8 stages; 128x256x16, 8x16 per thread",
        source="cuda_kernels/k14_warp_specialised.cu",
        # 384 threads: warps 0-3 the producer (one thread waits on the empty barriers and issues
        # the two boxes of a phase), warps 4-11 the 256 consumers that own the outputs; per
        # consumer thread K13's counts (the block's two tensor copies a phase over 256 threads)
        compute_threads=256,
        counted=TMA_TILE_COUNTS,
        notes="meant for sm_90a (setmaxnreg), as the extension and the SASS tables build it; built for plain "
        "sm_90 its consumers spill under the 168-register cap of 384 threads",
    ),
    Kernel(
        "K15", "cuda", "K12's tile with B copied 16 bytes at a time (LDGSTS.128): a quarter of K12's copies "
        "of B; N, K multiples of 4",
        source="cuda_kernels/k15_wide_copies.cu",
        # K12's tile: per phase (BK = 16) 8 four-byte copies of A (transposed) and 4 sixteen-byte
        # copies of B per thread; per k-step 4 + 2 LDS.128 for 128 FMAs
        counted=Counted(lds_dist=2, lds_bcast=4, fma_per_k=128, ldg_per_phase=12, elems_per_phase=24,
                        fma_per_phase=2048, outputs=128, phase_k=16, lds_bits=128, ldg_bits=32,
                        ldg_bits_b=128),
    ),
    # Beside the ladder: a rung for one family of shapes (``meant_for``).
    Kernel(
        "KD", "cuda", "decode rung: for M up to 8 a streaming GEMV reads B once with 128-bit loads (rows "
        "of 1, 2, 4 or 8, K over the k-groups of a block and split across blocks); from M = 9 on sm_90 "
        "a tiled GEMM of 16 or 32 rows x 144 columns, one block per SM, a producer warp group's tensor "
        "copies (A transposed by three of its warps) through 4 shared-memory stages for 8 consumer warps "
        "in 4 groups along K that each wait for their own rows of B (setmaxnreg gives them its "
        "registers), the work cut evenly over the blocks (stream-K); K splits summed in a fixed order",
        source=("cuda_kernels/kd_gemv_stream.cu", "cuda_kernels/kd_gemm_tiled.cu"), meant_for="decode",
        per_path={
            # the streaming GEMV: per thread, a phase is the block's chunk of A, 4 TG UNROLL values of
            # k; the thread's UNROLL float4 of A's rows (LDS.128, one per MT rows and 4 k) meet its
            # 4 x UNROLL LDG.128 of B (4 columns, 4 k each), and it stages MT UNROLL / TX float4 of A;
            # the block's MT x 4 TX outputs are its TX TG threads' (4 MT / TG each)
            "kd_gemv_m1": _kd_stream(mt=1, tx=16, tg=8, unroll=4),
            "kd_gemv_m2": _kd_stream(mt=2, tx=16, tg=8, unroll=4),
            "kd_gemv_m4": _kd_stream(mt=4, tx=16, tg=8, unroll=2),
            "kd_gemv_m8": _kd_stream(mt=8, tx=16, tg=8, unroll=2),
            # the tiled GEMM, per consumer thread (256 of 384): a stage is 64 values of k, 16 per
            # group along K; per k a lane's BM / 4 rows (LDS.128 of At) meet its 9 columns of B
            # (2 LDS.128 and an LDS.32); per stage the block's tensor copies are A's BM x 64 box and
            # B's four 16 x 144 boxes
            "kd_gemm_m16": _kd_tiled(bm=16),
            "kd_gemm_m32": _kd_tiled(bm=32),
        },
    ),
    # Triton twins: same block tile and threads per block as their CUDA kernel.
    Kernel(
        "T1", "triton", "no on-chip reuse: every output element loads its own A and B values",
        target="triton_kernels.t1_naive:matmul", threads=128, tile=_t(32, 32, 1),
        source="triton_kernels/t1_naive.py", symbol="t1_naive_kernel", twin="K2", num_stages=1,
        options={"num_stages": 1},
        # K2's byte ledger (K1's is the same): no on-chip reuse, so each output loads its own A
        # and B value per k (its SASS loop: 16 LDG per 8 FFMA); which of the two request
        # patterns it gets is the compiler's choice (notes). The counts are per output element;
        # Triton gives each of its 128 threads 8 outputs, which leaves every ratio unchanged.
        # Its (32, 32, 1) tile is the launch grid's, not a shared-memory tile.
        counted=Counted(lds_dist=0, lds_bcast=0, fma_per_k=1, ldg_per_phase=2, elems_per_phase=2,
                        fma_per_phase=1, outputs=1, phase_k=1),
        notes="Triton has no way to say which thread owns which element: the compiler picks the "
        "mapping, so neither K1's nor K2's can be asked for; which one it got shows in the 32-byte "
        "global sectors per warp FMA Nsight Compute reads (32 + 1 in K1's pattern, 1 + 4 in K2's; "
        "`python -m study.profile --kernels T1,K1,K2`) and in T1's time beside K1's and K2's.",
    ),
    *_tl_dot_pair("T3", "K3", "triton_kernels.t3_smem_tile", 32, 32, threads=1024),
    *_tl_dot_pair("T3c", "K3c", "triton_kernels.t3c_coarsened", 32, 128, threads=1024),
    *_tl_dot_pair("T4", "K4", "triton_kernels.t4_reg_tile_1d", 32, 32, threads=128),
    # T5 takes K5's tile and threads (twins_of pairs it with K5 too); its twin is K6
    *_tl_dot_pair("T5", "K6", "triton_kernels.t5_reg_tile_2d", 32, 128, threads=128, of="K5/K6"),
    _tl_dot("T12p", "K12", "twin of K12: 128x256x16 tile, 8 warps, 2 stages", "triton_kernels.t12_lean_twin",
            (128, 256, 16), threads=256, stages=2),
    # Gluon twins (triton.experimental.gluon): the CUDA kernel's thread -> output map written out as
    # explicit layouts, so that the compiler chooses only the instruction schedule.
    Kernel(
        "G6", "triton", "Gluon twin of K6: K6's 8x4-per-thread map as a BlockedLayout, one shared stage",
        target="triton_kernels.g6_gluon:matmul", threads=128, tile=(32, 128, 32),
        source="triton_kernels/g6_gluon.py", symbol="g6_kernel", twin="K6", multiple_of=(1, 4, 4), gluon=True,
        notes="Gluon has no CPU interpreter: G6 is checked and timed on a GPU only.",
    ),
    Kernel(
        "G10", "triton", "Gluon twin of K10: K10's lane map as a DistributedLinearLayout, two stages",
        target="triton_kernels.g10_gluon:matmul", threads=256, tile=(256, 128, 8),
        source="triton_kernels/g10_gluon.py", symbol="g10_kernel", twin="K10", multiple_of=(1, 4, 4),
        gluon=True,
        notes="Two shared buffers and one loop iteration per two K tiles (a buffer indexed by the "
        "stage costs a second barrier per tile); no register double-buffering and no launch bound "
        "can be stated in Gluon.",
    ),
    # What Gluon cannot state of K12 (As's padding under cp.async, the XOR stage switch, register
    # double-buffering, the launch bound) is in its module docstring.
    Kernel(
        "G12", "triton", "Gluon twin of K12: K12's lane map as a DistributedLinearLayout, cp.async copies, "
        "two stages",
        target="triton_kernels.g12_gluon:matmul", threads=256, tile=(128, 256, 16),
        source="triton_kernels/g12_gluon.py", symbol="g12_kernel", twin="K12", gluon=True,
        notes="Its copies of A land in an unpadded As, where their bank conflicts make each copy "
        "several shared-memory wavefronts more than K12's copies into its padded As, and its warps "
        "wait on shared-memory results after them (ncu per instruction, docs/notes/g12.md). Gluon "
        "cannot pad As as K12 does: a padded shared layout does not lower to LLVM, a swizzled one "
        "cannot be sliced along k, and shared allocations take power-of-two shapes only.",
    ),
    Kernel(
        "G15", "triton", "K12's tile and lane map in Gluon with A row-major in shared memory: 16-byte "
        "copies of both operands, A read in slabs of 4 k",
        target="triton_kernels.g15_gluon:matmul", threads=256, tile=(128, 256, 16),
        source="triton_kernels/g15_gluon.py", symbol="g15_kernel", twin="K15", multiple_of=(1, 4, 4),
        gluon=True,
        notes="A is not transposed: each stage holds A's K-tile as four [128 x 4] row-major slabs, "
        "one per 4 values of k, which 16-byte copies fill a 128-byte line per 8 lanes; a thread "
        "reads the 4 values of k of each of its rows with one LDS.128 and splits them in registers. "
        "Its warps wait on shared memory as little as K12's and on dispatch more "
        "(docs/notes/g15.md).",
    ),
    Kernel(
        "G12T", "triton", "G12's kernel on A transposed first: A's copies as B's (16-byte, no bank "
        "conflict), one phase a loop iteration",
        target="triton_kernels.g12t_gluon:matmul", threads=256, tile=(128, 256, 16),
        source="triton_kernels/g12_gluon.py", symbol="g12_kernel", twin="K12", gluon=True,
        notes="A Gluon kernel writes A^T first (in every call's time); G12's kernel then copies it as B, "
        "into an unpadded As without bank conflicts, one phase a loop iteration on stages indexed by "
        "its parity: its loop's code is K12's size (docs/notes/g12t.md).",
    ),
    Kernel(
        "TD", "triton", "twin of KD: a program per 64 columns and all of K, no split across programs",
        target="triton_kernels.td_decode:matmul", threads=128, source="triton_kernels/td_decode.py",
        symbol="decode_kernel", twin="KD", num_stages=4, meant_for="decode",
    ),
    Kernel(
        "TAT", "triton", "Triton SGEMM (ieee) on A transposed first: 128x128x32, 8 warps, 3 stages",
        target="triton_kernels.tat_transposed:matmul", threads=256, tile=(128, 128, 32),
        source="triton_kernels/tile.py", symbol="tiled_matmul_kernel", num_stages=3,
        notes="G12T's transposition writes A^T first, in every call's time (docs/notes/g12t.md).",
    ),
    Kernel(
        "TA", "triton", "autotuned Triton SGEMM (ieee), keyed on (M, N, K)",
        target="triton_kernels.ta_autotuned:matmul", source="triton_kernels/tile.py",
        symbol="tiled_matmul_kernel", tuned="triton_kernels.ta_autotuned:best_config",
    ),
)

# Beside the study: kernels on the tensor cores (the tiled Triton kernel at TF32 and 3xTF32, and KX,
# 3xTF32 in CUDA on wgmma), measured by the accuracy ledger (``python -m study.accuracy``) alone:
# ``KERNELS`` and every selection below hold the FP32 kernels only, and ``study.run`` refuses these.
TENSOR_CORE: tuple[Kernel, ...] = (
    Kernel(
        "TT", "triton", "autotuned tl.dot on the tensor cores, TF32 (one product, operands rounded to TF32)",
        target="triton_kernels.tc_autotuned:matmul_tf32", source="triton_kernels/tile.py",
        symbol="tiled_matmul_kernel", tuned="triton_kernels.tc_autotuned:best_tf32", precision="tf32",
        tensor_core=TensorCore(parts=1, prepass="b_kmajor"),
    ),
    Kernel(
        "TX", "triton", "autotuned tl.dot on the tensor cores, 3xTF32 (operands split in high and low "
        "TF32 parts, three products)",
        target="triton_kernels.tc_autotuned:matmul_tf32x3", source="triton_kernels/tile.py",
        symbol="tiled_matmul_kernel", tuned="triton_kernels.tc_autotuned:best_tf32x3", precision="tf32x3",
        tensor_core=TensorCore(parts=1, prepass="b_kmajor"),
    ),
    Kernel(
        "KX", "cuda", "3xTF32 on Hopper's warp-group MMA: the operands split in high and low TF32 parts "
        "(B transposed K-major) by a pass of their own, then 128x128 tiles of three wgmma m64n128k8 per 8 "
        "k through K14's tensor copies (128-byte swizzle) and warp specialisation, each k-tile's products "
        "added to FP32 sums",
        source="cuda_kernels/kx_tf32x3.cu", precision="tf32x3",
        tensor_core=TensorCore(parts=2, prepass="split", mma=(64, 128, 8)),
    ),
)
REGISTRY: tuple[Kernel, ...] = KERNELS + TENSOR_CORE  # every kernel, the study's first

BY_ID: dict[str, Kernel] = {k.id: k for k in REGISTRY}
IDS: tuple[str, ...] = tuple(BY_ID)
BASELINE: Kernel = next(k for k in KERNELS if k.impl == "cublas")


def get(kid: str) -> Kernel:
    """The kernel with id ``kid``; an unknown id is an InputError naming the known ones."""
    try:
        return BY_ID[kid]
    except KeyError:
        raise InputError(f"unknown kernel id {kid!r}; known: {', '.join(IDS)}") from None


def select(spec: str | None) -> list[Kernel]:
    """Kernels named in a comma-separated spec ("K1,K6"), all of them for None.

    A kernel named twice is taken once, where it first appears. The baseline is always
    included: every % of cuBLAS needs it. None: the study's kernels (``KERNELS``), not the
    tensor-core ones.
    """
    if not spec:
        return list(KERNELS)
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    if not wanted:
        raise InputError("--kernels is empty; known: " + ", ".join(IDS))
    picked = []
    for s in wanted:
        k = get(s)
        if k not in picked:
            picked.append(k)
    if BASELINE not in picked:
        picked.insert(0, BASELINE)
    return picked


def resolve(kernels) -> list[Kernel]:
    """Registry entries from Kernel objects, ids, a "K3,K6" spec, or None (the study's kernels,
    ``KERNELS``)."""
    if kernels is None:
        return list(KERNELS)
    if isinstance(kernels, str):
        return [get(s.strip()) for s in kernels.split(",") if s.strip()]
    return [get(k) if isinstance(k, str) else k for k in kernels]


def twins_of(cuda_kernel_id: str) -> list[Kernel]:
    """The Triton kernels that mirror a CUDA kernel: those naming it as their ``twin`` and those
    with its block tile and threads per block (so K5 gets T5/T5p, whose ``twin`` is K6)."""
    c = get(cuda_kernel_id)
    return [
        t for t in KERNELS
        if t.impl == "triton"
        and (t.twin == c.id or (c.tile is not None and t.tile == c.tile and t.threads == c.threads))
    ]


def by_impl(impl: str) -> list[Kernel]:
    return [k for k in KERNELS if k.impl == impl]


# ---------------------------------------------------------------------------------------------
# Selections: what the study and its report pick, by property rather than by id


def _unique(kernels) -> list[Kernel]:
    out: list[Kernel] = []
    for k in kernels:
        if all(k is not o for o in out):
            out.append(k)
    return out


def cuda_ladder() -> list[Kernel]:
    """The hand-written CUDA kernels for every shape, in registry order: the optimisation ladder
    K1, K2, ... (a kernel ``meant_for`` some shapes only is beside it, not on it)."""
    return [k for k in by_impl("cuda") if k.meant_for is None]


def last_rung(impl: str = "cuda", among=None) -> Kernel:
    """The last kernel of ``impl`` for every shape, in registry order (for "cuda": the top of the
    ladder). ``among``: kernel ids to pick from (those a run measured, so that a run made before
    a rung was added is described by its own top rung); the registry's last where none is a rung."""
    ladder = [k for k in by_impl(impl) if k.meant_for is None]
    if not ladder:
        raise InputError(f"the registry holds no {impl!r} kernel; impls: "
                         + ", ".join(sorted({k.impl for k in KERNELS})))
    picked = [k for k in ladder if among is not None and k.id in among]
    return (picked or ladder)[-1]


def request_ledger_kernels() -> list[Kernel]:
    """Kernels whose counted ledger has a request count per FMA (``req_per_fma``): the naive pair."""
    return [k for k in KERNELS if k.counted is not None and k.counted.req_per_fma is not None]


def tuned_kernels() -> list[Kernel]:
    """Autotuned kernels (``tuned`` set), in registry order."""
    return [k for k in KERNELS if k.tuned]


def free_tl_dot_kernels() -> list[Kernel]:
    """The ``tl.dot`` kernels that mirror no CUDA kernel and choose their own tile (the autotuned
    one, and TAT on a transposed A): FP32, for every shape, in registry order."""
    return [k for k in KERNELS if k.impl == "triton" and not k.gluon and not k.twin and not k.meant_for
            and k.precision == "fp32"]


def pipelined_twins(cuda_kernel_id: str) -> list[Kernel]:
    """The ``tl.dot`` twins of a CUDA kernel (``twins_of``) that are software-pipelined
    (num_stages > 1)."""
    return [t for t in twins_of(cuda_kernel_id) if (t.num_stages or 1) > 1 and not t.gluon]


def gluon_twins(cuda_kernel_id: str) -> list[Kernel]:
    """The twins of a CUDA kernel written in Gluon (its thread -> output map stated)."""
    return [t for t in twins_of(cuda_kernel_id) if t.gluon]


def headline_kernels(among=None) -> list[Kernel]:
    """The kernels the report's headline compares with cuBLAS, in this order: the tuned kernels,
    the pipelined twins of the last CUDA rung (``last_rung(among=among)``), and that rung itself
    (always last)."""
    top = last_rung(among=among)
    return _unique([*tuned_kernels(), *pipelined_twins(top.id), top])


def source_profile() -> list[Kernel]:
    """The kernels whose per-instruction counters are read when none are named: each CUDA rung a
    Gluon kernel names as its twin, followed by that twin, then the tuned kernels."""
    pairs = [k for c in cuda_ladder() for t in gluon_twins(c.id) if t.twin == c.id for k in (c, t)]
    return _unique([*pairs, *tuned_kernels()])


def default_profile() -> list[Kernel]:
    """The kernels profiled when none are named, each once, in this order: the CUDA rungs (the
    request-ledger kernels first), their pipelined and Gluon twins, the ``tl.dot`` kernels that
    choose their own tile (the tuned one first), the baseline."""
    ladder = cuda_ladder()
    twins = [t for c in ladder for t in [*pipelined_twins(c.id), *gluon_twins(c.id)]]
    return _unique([*request_ledger_kernels(), *ladder, *twins, *tuned_kernels(), *free_tl_dot_kernels()]
                   + [BASELINE])
