// KD: the decode rung, for small M (a few token rows times a weight matrix): C = A B with A
// M x K small and B K x N large. Square-shape tiling stops paying here: at M = 1 every element of
// B is used once, so the kernel is a stream over B and the aim is to read it at the DRAM's pace.
// The launcher picks one of two paths by M (and the device).
//
// The streaming path (M < SK_MIN_M, and every M where the tiled path cannot run; kd_gemv is its
// M = 1 kernel, the registered one, and kd_gemv_m2 ... kd_gemv_m32 the others). A block owns
// BN = 4 * TX columns of C (TX column threads, 4 columns each) and MT rows; its TG k-groups share
// its range of K: thread (tx, g) reads float4 columns col .. col + 3 of B at rows
// 4 * k4 .. 4 * k4 + 3 for k4 = g, g + TG, ... (4 LDG.128 of B per 4 k, UNROLL such steps in
// flight), and A from shared memory, where a block stages it coalesced, TG * UNROLL * 4 values of
// k at a time (MT LDS.128 per 4 k), keeping MT x 4 partial sums. A warp's load of B touches
// 32 / TX rows of TX * 16 contiguous bytes: whole 32-byte sectors, every byte used once. The
// k-groups are summed in a fixed order (warp shuffles, then shared memory over the warps). Where
// the output tiles alone would leave SMs idle, K is split across blocks too (enough blocks for
// BLOCKS_PER_SM per SM): each block leaves its sums in a workspace and the block of a tile that
// finishes last (an integer ticket) adds the splits in their order 0, 1, ... MT is the smallest
// of 1, 2, 4, ..., MT_MAX at least M; larger M takes several row tiles, the blocks of one column
// slab adjacent so that B is re-read from L2. The M = 1 kernel has its own TX, TG, UNROLL
// (M1_TX, M1_TG, M1_UNROLL).
//
// The tiled path (M >= SK_MIN_M on sm_90, where the driver encodes tensor maps: kd_gemv_sk_m16,
// kd_gemv_sk_m32; kd_gemv_sk_m4 and kd_gemv_sk_m8 serve M <= 8 when SK_MIN_M is set that low): a
// tile of C is BM = 16 or 32 rows by BN = 8 * SK_TN * SK_WARPS columns (larger M takes several row
// tiles of 32), B and A streamed through shared memory in SK_STAGES stages of SK_BK values of k by
// tensor copies, the row tiles of one column slab adjacent, so B is re-read from L2. The warps
// are specialised: a producer warp group (lane 0 of its first warp issues the copies; setmaxnreg
// hands the group's registers to the consumers, SK_PRODUCER_REGS and SK_REGS each), SK_WARPS
// consumer warps multiply (a lane BM / 4 rows x 8 columns from LDS.128 of A, 4 rows a warp, and
// of B, 128 contiguous bytes a warp). The work, (tile, stage of K) units, is cut evenly over
// SK_BLOCKS_PER_SM blocks per SM (stream-K: no wave quantisation); a tile a block covers whole is
// stored, a part of one goes to a workspace slot and the tile's last block (an integer ticket)
// adds the parts in the order of K, every slot's loads in flight together.
//
// No float atomics anywhere: the result is the same bit for bit from run to run.
// Parameters (-D overrides): M1_TX, M1_TG, M1_UNROLL, TX, TG, UNROLL, MT_MAX, BLOCKS_PER_SM,
// MAX_SPLITS; SK, SK_MIN_M, SK_WARPS, SK_BK, SK_STAGES, SK_BLOCKS_PER_SM, SK_MIN_KTILES, SK_LR,
// SK_TN, SK_PRODUCER_WARPS, SK_PRODUCER_REGS, SK_REGS.
// Defaults, from probes on the H200 at decode N = 18944, K = 3584 (L2 flushed, CUDA events):
// M = 1 keeps TX = 8, TG = 16, UNROLL = 4, the best of an earlier sweep of 135 variants (first
// probe run: 72.4 us, where a plain streaming read of B's 271.6 MB took 71.7 us); M = 2 .. 8
// take TX = 16, TG = 8, UNROLL = 2 (same run, M = 8: 76.6 us, 129.9 with the M = 1 set); M = 8
// stays on the streaming path (77.2 us, tiled 106.0). The tiled path's SK_STAGES = 4 and
// SK_BLOCKS_PER_SM = 2 are the best of 17 variants (stages 2 .. 8, 8 to 32 values of k a stage,
// 2 or 4 consumer warps, 1 to 6 blocks per SM, a register cap for 3 blocks): M = 32 111.1 us
// against cuBLAS's 125.5, where the same tiles copied by the block's own threads (B's 16 rows a
// stage by thread 0's bulk copies, their addresses derived from threadIdx and each inside a
// divergent loop that made them uniform; A by cp.async) with one __syncthreads a stage took 132.0;
// M = 16 81.0 against 135.5, M = 64 204.4 against 222.6 (probe run 2026-12-01). Double-buffering
// the consumers' fragments across k (215 registers: one block per SM; capped at 200 for two, it
// spills) was slower: 124.5 us at M = 32. A producer warp group whose registers go to the
// consumers (24 / 232, SK_PRODUCER_WARPS = 4) in place of one producer warp (the consumers then
// at 168): M = 32 109.5 us against 113.2, 108.9 against 111.5 and 109.8 against 112.6 in three
// probe runs of 2026-12-01 (M = 16 alike: 80.0 - 81.3 against 80.1 - 81.9). Slower, in the same
// runs: 16 columns a lane (8 x 16, a 32 x 128 warp tile: 132 - 138 us, its partial tiles 4x the
// bytes), 2 lane rows (16 x 8 a lane: 124 - 131 us), A transposed into As[k][m] by the producer
// warps' 4-byte cp.async (the consumers' loop alone 90.6 us against 94.5, dispatch stalls 0.18
// against 0.34 per issue, but 134 - 230 us whole), and the tile ends handed to producer warps 1-3
// (128.8 us). The consumers' FMAs alone (no copies, no sums of parts) take 94.5 us at M = 32, at
// 1.98 GHz; the whole kernel runs at 1.89 GHz (ncu), the clock the GPU holds while it streams B.
// Where the rest of M = 32's time goes (the default with parts of it left out, one probe run):
// 111.1 us whole, 104.6 without the last block's sum of a tile's parts, 103.7 without tickets
// (the parts stored to slots, not summed), 101.0 with every part stored straight to C, 94.9
// without copies either. Slower or no better: two consumer warps along K (half the columns a
// tile, half the bytes a part: 119.3 us), B's copies with the L2 policy evict_first (109.5
// against 109.6), __threadfence in every thread in place of kd_ticket's fences (no difference);
// later probes of 2026-12-01: two consumer warps along K (two along N) with 16 x 8 lane tiles, a
// stage's FMAs row by row, each warp keeping half of its tile at a tile's end and taking its
// partner's part of that half through 32 KB of shared memory: 107.1 - 108.2 us against
// 108.5 - 108.8 (M = 64 197.7 against 199.1 - 200.9; M = 16 alike), issue 76.2% against 75.6%
// and dispatch stalls 0.39 against 0.44 per issue (ncu): the same issue-bound loop (with whole
// tiles exchanged, 64 KB, one block fits an SM: 118.3 - 118.7; four warps along K, B's stages
// 8 KB, fewer bytes in flight: 118.0 - 118.5); and B read from global memory straight into
// registers (a lane 32 rows x 4 columns, A through each warp's own cp.async stages, eight warps
// along K in one block per SM: 139 - 142 us under ncu, long-scoreboard stalls 0.43 - 0.88 per
// issue: two 4-k steps of B a lane hold too few bytes in flight, where the tensor copies keep
// four 16 KB stages per block); and the stages filled by the producer warp group's 16-byte
// cp.async (every thread a share, an mbarrier arrival when they land) in place of tensor copies:
// 153 - 157 us against 109.8 - 109.9, dispatch stalls 0.52 against 0.47 per issue (the consumers'
// dispatch stalls are not the tensor copies' doing). The stage's FMAs column by column (see
// kd_stage_fma) in place of row by row: M = 32 106.5 - 107.9 us against 109.1 - 110.8 in three
// probe runs (M = 64 195.1 - 198.0 against 201.3 - 202.3), dispatch stalls 0.29 against 0.47;
// the same with the fragments of the next 4 k (and of the next stage's first) loaded during
// this one's FMAs: 110.0 - 112.0 us; with stages of 24 or 32 k: 109.9 - 111.1.
// Needs N % 4 == 0 and K % 4 == 0 (and 16-byte aligned pointers), like K6.
#include "common.cuh"
#include "tma.cuh"  // tensor copies, mbarriers and the tensor-map encoder (the tiled path)

#include <stdint.h>
#include <stdlib.h>  // getenv

#ifndef KD_M1_TX
#define KD_M1_TX 8  // M = 1 (kd_gemv): column threads of a block, 4 columns each
#endif
#ifndef KD_M1_TG
#define KD_M1_TG 16  // M = 1: k-groups of a block
#endif
#ifndef KD_M1_UNROLL
#define KD_M1_UNROLL 4  // M = 1: 4-k steps whose loads are in flight together
#endif
#ifndef KD_TX
#define KD_TX 16  // M >= 2: column threads of a block
#endif
#ifndef KD_TG
#define KD_TG 8  // M >= 2: k-groups of a block
#endif
#ifndef KD_UNROLL
#define KD_UNROLL 2  // M >= 2: 4-k steps whose loads are in flight together
#endif
#ifndef KD_MT_MAX
#define KD_MT_MAX 8  // most rows of C one block of this path computes
#endif
#ifndef KD_BLOCKS_PER_SM
#define KD_BLOCKS_PER_SM 4  // K is split until the grid holds this many blocks per SM
#endif
#ifndef KD_MAX_SPLITS
#define KD_MAX_SPLITS 16
#endif

#define KD_M1_THREADS (KD_M1_TX * KD_M1_TG)
#define KD_M1_BN (4 * KD_M1_TX)
#define KD_THREADS (KD_TX * KD_TG)
#define KD_BN (4 * KD_TX)

static_assert(KD_MT_MAX >= 1 && KD_MT_MAX <= 32 && (KD_MT_MAX & (KD_MT_MAX - 1)) == 0,
              "MT_MAX a power of two up to 32");

#define KD_PARAMS SGEMM_KERNEL_PARAMS, int splits, float *__restrict__ ws, unsigned *__restrict__ tickets

// The ticket of a tile whose parts are summed by the block that brings the last one: one thread
// of the block takes it after a barrier that follows the block's stores of its part, and the
// block's loads of the other parts follow a barrier after it. The release fence before the count
// makes the block's part (ordered before it by the barrier) visible before the count is; the
// acquire fence after it, the other blocks' parts before this block loads them: a release /
// acquire pair at GPU scope in one thread, where __threadfence in every thread would be a
// sequentially consistent fence (fence.sc.gpu) each. True for the block that brings part
// `last` + 1 of them.
__device__ __forceinline__ bool kd_ticket(unsigned *ticket, unsigned last) {
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
    const bool is_last = atomicAdd(ticket, 1u) == last;
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
    return is_last;
}

template <int MT, int TX, int TG, int UNROLL>
__device__ __forceinline__ void kd_body(int M, int N, int K, float alpha, const float *__restrict__ A,
                                        const float *__restrict__ B, float beta, float *__restrict__ C,
                                        int splits, float *__restrict__ ws, unsigned *__restrict__ tickets) {
    constexpr int THREADS = TX * TG, BN = 4 * TX, WARPS = THREADS / 32;
    constexpr int CH = TG * UNROLL;  // float4 columns of A (4 k each) staged per chunk
    static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 1024 threads");
    static_assert(32 % TX == 0, "a warp holds whole k-groups");
    // Shared memory: the staged chunk of A during the loop, then one k-group's sums per warp
    // (the loop's last barrier frees the chunk). 16-byte words, so float4 views are aligned.
    constexpr int AS_WORDS = CH * (MT + 1), PARTIAL_WORDS = WARPS * MT * TX;
    __shared__ float4 kd_smem[AS_WORDS > PARTIAL_WORDS ? AS_WORDS : PARTIAL_WORDS];
    auto as = reinterpret_cast<float4 (*)[MT + 1]>(kd_smem);             // as[CH][MT + 1]
    auto partial = reinterpret_cast<float4 (*)[MT][TX]>(kd_smem);     // partial[WARPS][MT][TX]
    // Block b: split b / tiles of K, output tile b % tiles = (column slab, row tile), the row
    // tiles of one slab adjacent (they read the same B).
    const int m_tiles = (M + MT - 1) / MT;
    const int tiles = (N + BN - 1) / BN * m_tiles;
    const int split = blockIdx.x / tiles, tile = blockIdx.x % tiles;
    const int slab = tile / m_tiles;
    const int m0 = (tile % m_tiles) * MT;
    const int tx = threadIdx.x % TX, g = threadIdx.x / TX;
    const int col = slab * BN + 4 * tx;
    const bool col_ok = col < N;                    // N % 4 == 0: a float4 is all in or out
    const int rows = min(MT, M - m0);
    const int per_split = (K / 4 + splits - 1) / splits;  // float4 rows of B per split
    const int k_begin = split * per_split, k4s = min(K / 4, k_begin + per_split);

    float4 acc[MT];
#pragma unroll
    for (int m = 0; m < MT; ++m) acc[m] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    // A is staged in shared memory a chunk of CH = TG * UNROLL float4 columns (4 k each) at a
    // time: its loads are coalesced once per block instead of once per k-group, and each use is
    // an LDS.128 at a constant offset (a row of the chunk is padded by one float4: the 32 / TX
    // k-groups of a warp read distinct banks).
    const float *b_col = B + (col_ok ? col : 0);
    const float4 *a4 = reinterpret_cast<const float4 *>(A + (size_t)m0 * K);
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int c0 = k_begin; c0 < k4s; c0 += CH) {  // the same in every thread: barriers uniform
        // A chunk wholly inside K, read by a thread whose columns are inside N, needs no guard:
        // the common case takes the unpredicated path.
        const bool whole = c0 + CH <= k4s;
        float4 b[UNROLL][4];
        const float *b_chunk = b_col + (size_t)4 * (c0 + g) * N;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {  // every B load of the chunk first: all in flight
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float4 *p = reinterpret_cast<const float4 *>(b_chunk + (size_t)(4 * TG * u + j) * N);
                b[u][j] = (whole && col_ok) || (c0 + g + TG * u < k4s && col_ok) ? __ldg(p) : zero;
            }
        }
#pragma unroll
        for (int i = 0; i < (MT * CH + THREADS - 1) / THREADS; ++i) {
            const int e = threadIdx.x + THREADS * i;
            const int m = e / CH, q = e % CH;  // q fastest: a row's float4 are contiguous
            if (e < MT * CH)
                as[q][m] = (m < rows && (whole || c0 + q < k4s)) ? __ldg(a4 + (size_t)m * (K / 4) + c0 + q) : zero;
        }
        __syncthreads();
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int q = g + TG * u;
#pragma unroll
            for (int m = 0; m < MT; ++m) {  // rows past M hold zeros: never stored
                const float4 a = as[q][m];
                const float av[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
                for (int j = 0; j < 4; ++j) {  // k = 4 (c0 + q) + j, in order: FFMA only
                    acc[m].x = fmaf(av[j], b[u][j].x, acc[m].x);
                    acc[m].y = fmaf(av[j], b[u][j].y, acc[m].y);
                    acc[m].z = fmaf(av[j], b[u][j].z, acc[m].z);
                    acc[m].w = fmaf(av[j], b[u][j].w, acc[m].w);
                }
            }
        }
        __syncthreads();  // the chunk's A is read by every thread before the next overwrites it
    }

    // The k-groups of a warp (lanes tx, tx + TX, ...), summed by shuffles in a fixed order.
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int m = 0; m < MT; ++m) {
#pragma unroll
        for (int off = TX; off < 32; off *= 2) {
            acc[m].x += __shfl_xor_sync(0xffffffffu, acc[m].x, off);
            acc[m].y += __shfl_xor_sync(0xffffffffu, acc[m].y, off);
            acc[m].z += __shfl_xor_sync(0xffffffffu, acc[m].z, off);
            acc[m].w += __shfl_xor_sync(0xffffffffu, acc[m].w, off);
        }
        if (lane < TX) partial[warp][m][lane] = acc[m];
    }
    __syncthreads();
    // Then the warps, in order: thread t sums output (m, tx) = (t / TX, t % TX) over the warps.
    // One split of K: that is C. Several: each block leaves its sums in ws[split], and the
    // block of a tile that finishes last (an integer ticket; which block it is does not matter)
    // adds the splits in their order 0, 1, ...: the same sum whatever the order of arrival.
    for (int o = threadIdx.x; o < MT * TX; o += THREADS) {
        const int m = o / TX, x = o % TX;
        const int c = slab * BN + 4 * x;
        if (m >= rows || c >= N) continue;
        float4 s = partial[0][m][x];
#pragma unroll
        for (int w = 1; w < WARPS; ++w) {
            const float4 p = partial[w][m][x];
            s.x += p.x;
            s.y += p.y;
            s.z += p.z;
            s.w += p.w;
        }
        if (splits == 1)
            sgemm_store4(C, (size_t)(m0 + m) * N + c, alpha, s, beta);
        else
            __stcg(reinterpret_cast<float4 *>(ws + ((size_t)split * M + m0 + m) * N + c), s);
    }
    if (splits == 1) return;
    __shared__ bool kd_last;
    __syncthreads();
    if (threadIdx.x == 0) kd_last = kd_ticket(&tickets[tile], (unsigned)splits - 1);
    __syncthreads();
    if (!kd_last) return;
    for (int o = threadIdx.x; o < MT * TX; o += THREADS) {
        const int m = o / TX, x = o % TX;
        const int c = slab * BN + 4 * x;
        if (m >= rows || c >= N) continue;
        float4 s = __ldcg(reinterpret_cast<const float4 *>(ws + (size_t)(m0 + m) * N + c));
        for (int sp = 1; sp < splits; ++sp) {
            const float4 p = __ldcg(reinterpret_cast<const float4 *>(ws + ((size_t)sp * M + m0 + m) * N + c));
            s.x += p.x;
            s.y += p.y;
            s.z += p.z;
            s.w += p.w;
        }
        sgemm_store4(C, (size_t)(m0 + m) * N + c, alpha, s, beta);
    }
    if (threadIdx.x == 0) tickets[tile] = 0;  // ready for the next launch
}

// ---------------------------------------------------------------------------------------------
// The tiled path (M >= SK_MIN_M, on sm_90 where the driver encodes tensor maps): a few rows of C
// against a wide slab of B, B streamed through shared memory in SK_STAGES stages so that many of
// its bytes are in flight while the FMAs of an earlier stage run. Warp-specialised: a producer
// warp (group) whose lane 0 issues the tensor copies of a stage (A's BM x (BK + 4) box and B's
// BK x BN, in boxes of at most 256 columns, from block-uniform coordinates: one instruction each,
// no per-thread address), and SK_WARPS consumer warps that only multiply and release the stage
// (an mbarrier each way), synchronising among themselves only at a tile's end (a named barrier):
// the producer keeps copying through the epilogue. The copy engine zero-fills past M, N and K, so every stage takes the same path.
// Elsewhere (before sm_90, no encoder) every M takes the streaming path.

#ifndef KD_SK_MIN_M
#define KD_SK_MIN_M 9  // the smallest M that takes the tiled path
#endif
#ifndef KD_SK_WARPS
#define KD_SK_WARPS 4  // consumer warps, side by side along N: 64 columns each
#endif
#ifndef KD_SK_BK
#define KD_SK_BK 16  // values of k per stage
#endif
#ifndef KD_SK_MIN_KTILES
#define KD_SK_MIN_KTILES 4  // the fewest stages of work a block is given
#endif
#ifndef KD_SK
#define KD_SK 1  // 1: the tiled path where the device (sm_90) and the driver allow it; 0: never
#endif
#ifndef KD_SK_STAGES
#define KD_SK_STAGES 4  // stages of the copy pipeline
#endif
#ifndef KD_SK_BLOCKS_PER_SM
#define KD_SK_BLOCKS_PER_SM 2  // the grid: this many blocks per SM (fewer where they do not fit)
#endif

#ifndef KD_SK_LR
#define KD_SK_LR 4  // lane rows of a consumer warp (the rows of a lane LR apart); 32 / LR lane columns
#endif
#ifndef KD_SK_TN
#define KD_SK_TN 8  // columns of C per consumer lane, 4-column sub-blocks 4 * LC apart
#endif
#ifndef KD_SK_PRODUCER_WARPS
#define KD_SK_PRODUCER_WARPS 4  // 1, or 4: a warp group, whose registers setmaxnreg can hand over
#endif
#ifndef KD_SK_PRODUCER_REGS
#define KD_SK_PRODUCER_REGS 24  // registers of a producer thread after setmaxnreg
#endif
#ifndef KD_SK_REGS
#define KD_SK_REGS 232  // registers of a consumer thread after setmaxnreg (sm_90a); 0: no setmaxnreg
#endif
// ptxas fits the kernel to SK_BLOCKS_PER_SM blocks per SM (__launch_bounds__) only where
// setmaxnreg then gives the consumers their registers back (sm_90a); elsewhere to one block, so
// that the consumers do not spill (the launcher's grid then holds as many as fit).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !KD_SK_REGS
#define KD_SK_BOUND_BLOCKS KD_SK_BLOCKS_PER_SM
#else
#define KD_SK_BOUND_BLOCKS 1
#endif

#define KD_SK_CONSUMERS (32 * KD_SK_WARPS)
#define KD_SK_PRODUCERS (32 * KD_SK_PRODUCER_WARPS)
#define KD_SK_THREADS (KD_SK_PRODUCERS + KD_SK_CONSUMERS)  // the producer warp(s) first
#define KD_SK_LC (32 / KD_SK_LR)              // lane columns of a consumer warp
#define KD_SK_WN (KD_SK_LC * KD_SK_TN)        // columns of a warp
#define KD_SK_BN (KD_SK_WN * KD_SK_WARPS)
#define KD_SK_BW (KD_SK_BN < 256 ? KD_SK_BN : 256)  // B's box: BK x BW, BN / BW of them a stage
#define KD_SK_LDA (KD_SK_BK + 4)  // As row length (floats): rows r .. r + 3 on distinct banks
#define KD_SK_A_BOX(bm) ((bm) * KD_SK_LDA * 4)                   // bytes of a stage's A
#define KD_SK_A_BYTES(bm) ((KD_SK_A_BOX(bm) + 127) / 128 * 128)  // its room: B lands 128-byte aligned
#define KD_SK_STAGE_BYTES(bm) (KD_SK_A_BYTES(bm) + KD_SK_BK * KD_SK_BN * 4)
// Bytes of dynamic shared memory of the kernel of BM rows.
#define KD_SK_SMEM(bm) (KD_SK_STAGES * KD_SK_STAGE_BYTES(bm) + 16 * KD_SK_STAGES + 128)  // + barriers, alignment

static_assert(KD_SK_BK % 4 == 0 && KD_SK_BK >= 4, "whole float4 of k per stage");
static_assert(KD_SK_STAGES >= 2, "at least two stages");
static_assert(KD_SK_TN % 4 == 0 && KD_SK_TN >= 4 && KD_SK_TN <= 32, "whole 4-column sub-blocks");
static_assert(KD_SK_BN % KD_SK_BW == 0 && KD_SK_BW % KD_SK_WN == 0 && KD_SK_LDA <= 256,
              "a tensor copy's box is at most 256 elements a side, and holds whole warps' columns");
static_assert((KD_SK_LDA / 4) % 2 == 1, "A rows an odd number of 16-byte units apart: distinct bank groups");
static_assert(KD_SK_LR == 2 || KD_SK_LR == 4, "2 or 4 lane rows: the row tiles 4 .. 32 hold whole lanes");
static_assert(KD_SK_SMEM(32) <= 227 * 1024, "the stages fit in shared memory");
static_assert(KD_SK_REGS == 0 || (KD_SK_PRODUCER_WARPS == 4 && KD_SK_WARPS % 4 == 0 && KD_SK_REGS % 8 == 0 &&
                                  KD_SK_REGS <= 256 &&
                                  KD_SK_BLOCKS_PER_SM * (KD_SK_PRODUCERS * KD_SK_PRODUCER_REGS +
                                                         KD_SK_CONSUMERS * KD_SK_REGS) <= 65536),
              "setmaxnreg: whole warp groups, multiples of 8 up to 256, the blocks' registers in the file");

__device__ __forceinline__ float4 kd_f4(const float *v) { return make_float4(v[0], v[1], v[2], v[3]); }

// A tile of C is BM = LR * TM rows by BN = WN * SK_WARPS columns; a warp owns WN = LC * TN of them,
// lane (rg, cg) = (lane % LR, lane / LR) the rows rg, rg + LR, ... (TM of them) and the columns
// 4 cg + 4 LC h .. + 3 (h < TN / 4) of the warp's WN. The default (LR = 4, TN = 8): per 4 values of
// k, TM LDS.128 of A (As[m][k], four distinct rows a warp, one wavefront) and 8 LDS.128 of B (eight
// distinct float4 a warp, 128 contiguous bytes) feed 32 TM FFMA. The work is the list of units (tile,
// stage of K), the row tiles of one column slab adjacent; block b of G takes units
// U b / G .. U (b + 1) / G - 1, the same share of B for every block (no wave quantisation), one
// continuous pipeline across the tiles it touches. A tile the block covers whole is stored; a
// part of one goes to one of the block's two workspace slots (its first tile, its last), and the
// block of the tile that finishes last (an integer ticket) adds the tile's slots in the order of
// K. No float atomics: the same bits every run.
struct KdUnits {
    int m_tiles, KT;        // row tiles; stages of K per tile
    long long U, G, u0, u1;  // units; blocks; this block's first unit and one past its last
    __device__ KdUnits(int M, int N, int K, int BM, int BN, int BK)
        : m_tiles((M + BM - 1) / BM), KT((K + BK - 1) / BK),
          U((long long)m_tiles * ((N + BN - 1) / BN) * KT), G(gridDim.x),
          u0(U * blockIdx.x / G), u1(U * (blockIdx.x + 1) / G) {}
    __device__ long long start_of(long long blk) const { return U * blk / G; }
    __device__ long long block_of(long long u) const { return ((u + 1) * G - 1) / U; }  // start_of <= u < next
};

// The end of this block's part of tile t (the last unit of t, or of the block): acc is stored, or
// left in a slot and, by the tile's last block, summed with the others; acc is zero after. The
// consumers take part (consumer tid, lane (rg, cg) of consumer warp `warp`), synchronising on
// named barrier 1 (0 is __syncthreads, which the producer would have to join); `last` is a shared
// flag.
__device__ __forceinline__ void kd_consumers_sync() {
    asm volatile("bar.sync 1, %0;\n" ::"n"(KD_SK_CONSUMERS) : "memory");
}
template <int BM, int TM = BM / KD_SK_LR>
__device__ __forceinline__ void kd_tile_end(float (&acc)[TM][KD_SK_TN], int t, bool tile_done, const KdUnits &u, int M,
                                            int N, float alpha, float beta, float *__restrict__ C,
                                            float *__restrict__ ws, unsigned *__restrict__ tickets, int tid,
                                            int warp, int rg, int cg, bool *last) {
    constexpr int T = KD_SK_CONSUMERS;
    constexpr int BN = KD_SK_BN, H = KD_SK_TN / 4, LC = KD_SK_LC;
    const long long t_begin = (long long)t * u.KT, t_end = t_begin + u.KT;
    const int row0 = (t % u.m_tiles) * BM, col0 = (t / u.m_tiles) * BN + warp * KD_SK_WN + 4 * cg;
    auto store = [&]() {
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = row0 + rg + KD_SK_LR * i;
#pragma unroll
            for (int h = 0; h < H; ++h) {
                const int col = col0 + 4 * LC * h;
                if (row < M && col < N) sgemm_store4(C, (size_t)row * N + col, alpha, kd_f4(acc[i] + 4 * h), beta);
            }
        }
    };
    if (u.u0 <= t_begin && tile_done) {
        store();
    } else {
        // Slot 2 b: the block's first tile; 2 b + 1: its last. A slot is BM x BN floats in the
        // threads' order ((i, h), then the thread): a warp's float4 are contiguous.
        const long long b = blockIdx.x;
        float4 *slot = reinterpret_cast<float4 *>(ws) + (2 * b + (t == u.u0 / u.KT ? 0 : 1)) * (BM * BN / 4);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int h = 0; h < H; ++h) __stcg(slot + (H * i + h) * T + tid, kd_f4(acc[i] + 4 * h));
        const long long first = u.block_of(t_begin), final_ = u.block_of(t_end - 1);
        kd_consumers_sync();
        if (tid == 0) *last = kd_ticket(&tickets[t], (unsigned)(final_ - first));
        kd_consumers_sync();
        if (*last) {
            // acc (stored) becomes the sum over the slots, in the order of K; every load of a
            // slot is independent of the sum so far, so a slot's TM x 2 loads fly together.
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < KD_SK_TN; ++j) acc[i][j] = 0.0f;
#pragma unroll 2
            for (long long p = first; p <= final_; ++p) {
                const long long sl = 2 * p + (u.start_of(p) / u.KT == t ? 0 : 1);
                const float4 *src = reinterpret_cast<const float4 *>(ws) + sl * (BM * BN / 4) + tid;
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int h = 0; h < H; ++h) {
                        const float4 v = __ldcg(src + (H * i + h) * T);
                        acc[i][4 * h] += v.x;
                        acc[i][4 * h + 1] += v.y;
                        acc[i][4 * h + 2] += v.z;
                        acc[i][4 * h + 3] += v.w;
                    }
            }
            store();
            if (tid == 0) tickets[t] = 0;  // ready for the next launch
        }
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < KD_SK_TN; ++j) acc[i][j] = 0.0f;
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900  // tma.cuh's helpers: the tiled path only
// One stage's FMAs: As of the stage at a_lds (the thread's row rg), Bs at b_lds (its columns).
// The FMAs of one k go column by column: one value of B meets the TM values of A in turn (B's in
// the operand reuse cache, A's value and the sum read from the register file). Row by row (A's
// value reused) the FFMAs read B's value and the sum, both in registers that 16-byte loads and
// stores fill four in a row: of M = 32's 1024 FFMA a stage, 393 read three sources, or two of one
// register parity, from the register file (the SASS), against 246 column by column (K12: 20% of
// its FFMAs), and ncu's dispatch stalls fell from 0.47 to 0.29 per issue (K12: 0.21).
template <int TM>
__device__ __forceinline__ void kd_stage_fma(float (&acc)[TM][KD_SK_TN], uint32_t a_lds, uint32_t b_lds) {
    constexpr int BW = KD_SK_BW, BK = KD_SK_BK, LDA = KD_SK_LDA, TN = KD_SK_TN, LR = KD_SK_LR, LC = KD_SK_LC;
#pragma unroll
    for (int k4 = 0; k4 < BK / 4; ++k4) {
        float a[TM][4];
#pragma unroll
        for (int i = 0; i < TM; ++i) tma_lds4(a[i], a_lds + 4 * (LR * i * LDA + 4 * k4));
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            float bv[TN];
#pragma unroll
            for (int h = 0; h < TN / 4; ++h) tma_lds4(bv + 4 * h, b_lds + 4 * ((4 * k4 + kk) * BW + 4 * LC * h));
#pragma unroll
            for (int j = 0; j < TN; ++j)
#pragma unroll
                for (int i = 0; i < TM; ++i) acc[i][j] = fmaf(a[i][kk], bv[j], acc[i][j]);
        }
    }
}
#endif

template <int BM>
__device__ __forceinline__ void kd_sk_body(int M, int N, int K, float alpha, float beta, float *__restrict__ C,
                                           float *__restrict__ ws, unsigned *__restrict__ tickets,
                                           const CUtensorMap *map_a, const CUtensorMap *map_b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int TM = BM / KD_SK_LR, BN = KD_SK_BN, BW = KD_SK_BW, BK = KD_SK_BK, S = KD_SK_STAGES;
    constexpr int LDA = KD_SK_LDA, A_BYTES = KD_SK_A_BYTES(BM), STAGE_BYTES = KD_SK_STAGE_BYTES(BM);
    extern __shared__ __align__(128) unsigned char kd_sk_smem[];
    __shared__ bool kd_sk_last;
    const uint32_t base = (tma_saddr(kd_sk_smem) + 127) & ~uint32_t(127);
    const uint32_t full = base + S * STAGE_BYTES, empty = full + 8 * S;  // barrier s at + 8 s
    const KdUnits u(M, N, K, BM, BN, BK);
    const int n_units = (int)(u.u1 - u.u0);

    if (threadIdx.x == 0) {
        for (int s = 0; s < S; ++s) {
            mbar_init(full + 8 * s, 1);              // the producer's expect_tx, plus the bytes
            mbar_init(empty + 8 * s, KD_SK_WARPS);   // one arrival per consumer warp
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (threadIdx.x < KD_SK_PRODUCERS) {
#if KD_SK_REGS && defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(KD_SK_PRODUCER_REGS));
#endif
        // ---- the producer, lane 0 alone: unit n into stage n % S, once its last use is released
        if (threadIdx.x == 0) {
            int t = (int)(u.u0 / u.KT), kt = (int)(u.u0 % u.KT);
            for (int n = 0; n < n_units; ++n) {
                const int s = n % S;
                const uint32_t stage = base + s * STAGE_BYTES;
                if (n >= S) mbar_try_wait(empty + 8 * s, ((n / S) - 1) & 1);
                mbar_expect(full + 8 * s, KD_SK_A_BOX(BM) + BK * BN * 4);
                tma_load_2d(stage, map_a, kt * BK, (t % u.m_tiles) * BM, full + 8 * s);
#pragma unroll
                for (int j = 0; j < BN / BW; ++j)
                    tma_load_2d(stage + A_BYTES + j * (BK * BW * 4), map_b, (t / u.m_tiles) * BN + j * BW, kt * BK,
                                full + 8 * s);
                if (++kt == u.KT) kt = 0, ++t;
            }
        }
        return;  // the consumers wait for every copy before they leave
    }

    // ---- the consumers
#if KD_SK_REGS && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(KD_SK_REGS));
#endif
    const int tid = threadIdx.x - KD_SK_PRODUCERS, lane = tid % 32, warp = tid / 32;
    const int rg = lane % KD_SK_LR, cg = lane / KD_SK_LR;
    float acc[TM][KD_SK_TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < KD_SK_TN; ++j) acc[i][j] = 0.0f;
    int ct = (int)(u.u0 / u.KT), ck = (int)(u.u0 % u.KT);
    const uint32_t a_lds0 = base + 4 * (rg * LDA);
    // the warp's columns lie in box (warp WN) / BW, at (warp WN) % BW
    const uint32_t b_lds0 =
        base + A_BYTES + 4 * ((warp * KD_SK_WN) / BW * (BK * BW) + (warp * KD_SK_WN) % BW + 4 * cg);
    for (int n = 0; n < n_units; ++n) {
        const int s = n % S;
        mbar_wait(full + 8 * s, (n / S) & 1);
        kd_stage_fma<TM>(acc, a_lds0 + s * STAGE_BYTES, b_lds0 + s * STAGE_BYTES);
        __syncwarp();
        if (lane == 0) mbar_arrive(empty + 8 * s);  // the warp's loads of stage s are done

        const int t = ct;
        const bool tile_done = ck + 1 == u.KT;
        if (++ck == u.KT) ck = 0, ++ct;
        if (!tile_done && n + 1 != n_units) continue;  // the same in every consumer
        kd_tile_end<BM>(acc, t, tile_done, u, M, N, alpha, beta, C, ws, tickets, tid, warp, rg, cg, &kd_sk_last);
    }
#endif
}

// M = 1: the registered kernel (its SASS is the rung's in the tables)
extern "C" __global__ void __launch_bounds__(KD_M1_THREADS) kd_gemv(KD_PARAMS) {
    kd_body<1, KD_M1_TX, KD_M1_TG, KD_M1_UNROLL>(M, N, K, alpha, A, B, beta, C, splits, ws, tickets);
}
#define KD_KERNEL(name, mt)                                                                          \
    extern "C" __global__ void __launch_bounds__(KD_THREADS) name(KD_PARAMS) {                         \
        kd_body<mt, KD_TX, KD_TG, KD_UNROLL>(M, N, K, alpha, A, B, beta, C, splits, ws, tickets);      \
    }
KD_KERNEL(kd_gemv_m2, 2)
KD_KERNEL(kd_gemv_m4, 4)
KD_KERNEL(kd_gemv_m8, 8)
KD_KERNEL(kd_gemv_m16, 16)
KD_KERNEL(kd_gemv_m32, 32)

// The tiled path, one kernel per row tile BM.
#define KD_SK_KERNEL(name, bm)                                                                    \
    extern "C" __global__ void __launch_bounds__(KD_SK_THREADS, KD_SK_BOUND_BLOCKS)                \
        name(SGEMM_KERNEL_PARAMS, float *__restrict__ ws, unsigned *__restrict__ tickets,          \
             const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b) { \
        kd_sk_body<bm>(M, N, K, alpha, beta, C, ws, tickets, &map_a, &map_b);                      \
    }
KD_SK_KERNEL(kd_gemv_sk_m4, 4)
KD_SK_KERNEL(kd_gemv_sk_m8, 8)
KD_SK_KERNEL(kd_gemv_sk_m16, 16)
KD_SK_KERNEL(kd_gemv_sk_m32, 32)

// The splits of K for an M x N x K product on a GPU of `sms` SMs: enough blocks to give every
// SM BLOCKS_PER_SM of them, at least one staged chunk of A (ch float4 of k) per split, at most
// MAX_SPLITS.
static int kd_splits(int tiles, int K, int ch, int sms) {
    int s = (KD_BLOCKS_PER_SM * sms + tiles - 1) / tiles;
    s = min(s, min(KD_MAX_SPLITS, sgemm_cdiv(K / 4, ch)));
    return s < 1 ? 1 : s;
}

// Per device: the split sums (grown on demand) and one zeroed ticket per output tile (each launch
// leaves them zero again), and what the tiled kernels need to know of the device. One launch at a
// time per device: two streams running KD at once would share them.
struct KdWorkspace {
    float *ws = nullptr;
    size_t ws_bytes = 0;
    unsigned *tickets = nullptr;
    size_t n_tickets = 0;
    int sms = 0;
    int sk_blocks[4] = {0, 0, 0, 0};  // resident blocks per SM of kd_gemv_sk_m4 ... kd_gemv_sk_m32
    int major = 0;                    // compute capability (major)
};
static KdWorkspace kd_workspace[64];

// Room for `bytes` of split sums and `tiles` tickets; false when the device has no memory left
// (cudaMalloc's error is then the one the binding reads; the freed buffer is forgotten, so a later
// call allocates afresh).
static bool kd_reserve(KdWorkspace &w, size_t bytes, size_t tiles, cudaStream_t stream) {
    if (bytes > w.ws_bytes) {
        cudaFree(w.ws);
        if (cudaMalloc(&w.ws, bytes) != cudaSuccess) w.ws = nullptr;
        w.ws_bytes = w.ws ? bytes : 0;
    }
    if (tiles > w.n_tickets) {
        cudaFree(w.tickets);
        if (cudaMalloc(&w.tickets, tiles * sizeof(unsigned)) != cudaSuccess) w.tickets = nullptr;
        w.n_tickets = w.tickets ? tiles : 0;
        if (w.n_tickets) cudaMemsetAsync(w.tickets, 0, tiles * sizeof(unsigned), stream);
    }
    return w.ws_bytes >= bytes && w.n_tickets >= tiles;
}

void launch_kd_gemv(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                    float *C, cudaStream_t stream) {
    int dev = 0;
    cudaGetDevice(&dev);
    KdWorkspace &w = kd_workspace[dev % 64];
    if (!w.sms) cudaDeviceGetAttribute(&w.sms, cudaDevAttrMultiProcessorCount, dev);
    if (!w.major) cudaDeviceGetAttribute(&w.major, cudaDevAttrComputeCapabilityMajor, dev);
    // The tiled path: BM the smallest of 4, 8, 16, 32 at least M; a grid of WS_BLOCKS_PER_SM blocks
    // per SM (at most what fits), each given at least SK_MIN_KTILES stages of K. Where the tensor
    // maps cannot be made, the streaming path below takes every M.
    int v = 0;
    while (v < 3 && (4 << v) < M) ++v;
    const int bm = 4 << v;
    // SGEMM_KD_TILED=0 in the environment keeps every M on the streaming path (the tests check
    // that path at M >= 9 on a device that would tile).
    static const bool tiled = [] {
        const char *e = getenv("SGEMM_KD_TILED");
        return KD_SK && !(e && e[0] == '0');
    }();
    const TmaEncode encode = tiled && M >= KD_SK_MIN_M && w.major >= 9 ? tma_encoder() : nullptr;
    CUtensorMap map_a, map_b;
    if (encode && tma_map(encode, &map_a, A, M, K, bm, KD_SK_LDA) &&
        tma_map(encode, &map_b, B, K, N, KD_SK_BK, KD_SK_BW)) {
        void (*const kernels[4])(SGEMM_KERNEL_PARAMS, float *, unsigned *, const CUtensorMap, const CUtensorMap) = {
            kd_gemv_sk_m4, kd_gemv_sk_m8, kd_gemv_sk_m16, kd_gemv_sk_m32};
        const int smem[4] = {KD_SK_SMEM(4), KD_SK_SMEM(8), KD_SK_SMEM(16), KD_SK_SMEM(32)};
        if (!w.sk_blocks[v]) {
            cudaFuncSetAttribute(kernels[v], cudaFuncAttributeMaxDynamicSharedMemorySize, smem[v]);
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&w.sk_blocks[v], kernels[v], KD_SK_THREADS, smem[v]);
            if (w.sk_blocks[v] < 1) w.sk_blocks[v] = 1;
        }
        const long long tiles = (long long)sgemm_cdiv(M, bm) * sgemm_cdiv(N, KD_SK_BN);
        const long long units = tiles * sgemm_cdiv(K, KD_SK_BK);
        long long grid = (long long)min(KD_SK_BLOCKS_PER_SM, w.sk_blocks[v]) * w.sms;
        grid = min(grid, max(1LL, units / KD_SK_MIN_KTILES));
        if (!kd_reserve(w, (size_t)2 * grid * bm * KD_SK_BN * sizeof(float), (size_t)tiles, stream)) return;
        kernels[v]<<<(unsigned)grid, KD_SK_THREADS, smem[v], stream>>>(M, N, K, alpha, A, B, beta, C, w.ws,
                                                                       w.tickets, map_a, map_b);
        return;
    }
    int mt = 1;
    while (mt < M && mt < KD_MT_MAX) mt *= 2;
    const int bn = mt == 1 ? KD_M1_BN : KD_BN, ch = mt == 1 ? KD_M1_TG * KD_M1_UNROLL : KD_TG * KD_UNROLL;
    const int tiles = sgemm_cdiv(N, bn) * sgemm_cdiv(M, mt);
    const int splits = kd_splits(tiles, K, ch, w.sms);
    if (splits > 1 && !kd_reserve(w, (size_t)splits * M * N * sizeof(float), (size_t)tiles, stream))
        return;  // out of memory: the caller sees C unwritten
    const dim3 grid(tiles * splits), block(mt == 1 ? KD_M1_THREADS : KD_THREADS);
    switch (mt) {
#define KD_CASE(n, name) \
    case n: name<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C, splits, w.ws, w.tickets); break;
    KD_CASE(1, kd_gemv)
    KD_CASE(2, kd_gemv_m2)
    KD_CASE(4, kd_gemv_m4)
    KD_CASE(8, kd_gemv_m8)
    KD_CASE(16, kd_gemv_m16)
    default: KD_CASE(32, kd_gemv_m32)
#undef KD_CASE
    }
}

// The registered symbol is the M = 1 kernel: BN and THREADS are its own; BM the most rows of C a
// block of its (streaming) path computes, MT_MAX; BK 0: it stages no K-tile of B.
SGEMM_REGISTER(kd_gemv, KD_MT_MAX, KD_M1_BN, 0, KD_M1_THREADS, SGEMM_VEC4)
