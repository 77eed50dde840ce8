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
// tile of C is BM = 16 or 32 rows by BN = SK_NW * 8 * SK_TN columns (144 by default; larger M
// takes several row tiles of 32), B and A streamed through shared memory in SK_STAGES stages of
// SK_BK values of k by tensor copies, one block per SM. The warps are specialised: a producer warp
// group (lane 0 of its first warp issues the copies, warps 1-3 transpose each stage's A into
// At[k][m]; setmaxnreg hands the group's registers to the consumers, SK_PRODUCER_REGS and
// SK_REGS each), and SK_KW groups along K of SK_NW consumer warps multiply (a lane BM / 4 adjacent
// rows x SK_TN columns, from LDS.128 of At and of B; a group waits only for its own SK_GK rows of
// each stage of B), their sums added in shared memory at a tile's end. The work, (tile, stage of
// K) units, is cut evenly over the blocks (stream-K: no wave quantisation); a tile a block covers
// whole is stored, a part of one goes to a workspace slot and the tile's last block (an integer
// ticket) adds the parts in the order of K.
//
// No float atomics anywhere: the result is the same bit for bit from run to run.
// Parameters (-D overrides): M1_TX, M1_TG, M1_UNROLL, TX, TG, UNROLL, MT_MAX, BLOCKS_PER_SM,
// MAX_SPLITS; SK, SK_MIN_M, SK_NW, SK_KW, SK_GK, SK_STAGES, SK_BLOCKS_PER_SM, SK_MIN_KTILES, SK_LR,
// SK_TN, SK_PRODUCER_REGS, SK_REGS.
// Defaults, from probes on the H200 at decode N = 18944, K = 3584 (L2 flushed, CUDA events):
// M = 1 keeps TX = 8, TG = 16, UNROLL = 4, the best of an earlier sweep of 135 variants (first
// probe run: 72.4 us, where a plain streaming read of B's 271.6 MB took 71.7 us); M = 2 .. 8
// take TX = 16, TG = 8, UNROLL = 2 (same run, M = 8: 76.6 us, 129.9 with the M = 1 set); M = 8
// stays on the streaming path (77.2 us, tiled 106.0).
// The tiled path's defaults (probe runs of 2026-12-01 at M = 32, cuBLAS 124.6 - 125.5 us timed
// beside them): one block per SM, 144 columns a tile (at N = 18944 the 132 tiles give each of
// the 132 SMs one whole tile, where the earlier design below split every tile over K), 8 consumer
// warps (2 along N x 4 groups along K) of 8 x 9 lanes, 16 k a group a stage, 4 stages, At[k][m]
// written by producer warps 1-3, the consumers waiting with try_wait: 97.8 - 98.2 us (M = 16
// 74.7 - 75.4 against 135.5; M = 64 183.4 - 184.8 against 223.6); then B's rows of each group on
// the group's own barrier (a group starts on a stage once its 16 rows are in, not all 64): in five
// probe runs 95.6 - 95.8 against 97.9 - 98.2, 97.1 - 97.3 against 99.8 - 100.0, 97.1 - 97.6
// against 98.7 - 99.6, 95.8 - 96.8 against 97.2 - 98.7 and 98.3 - 98.8 against 99.5 - 99.9 us
// (cuBLAS 124.5 - 125.9; M = 64 181.0 - 182.5 against 184.4 - 186.0, M = 16 alike; ncu's
// samples of the consumers at their wait for a stage: 104 against 230, beside about 6,900 in the
// stage loop). On the way there, in order, each beside the one before: 12 k a group, the
// groups' sums in a room of their own, As[m][k] read as before: 105.0 - 105.2 us against the
// earlier design's 106.7 - 108.0 (16 k and 3 stages:
// 102.6 - 103.1); the sums meeting in the tile's last stage inside the per-stage loop:
// 112.7 - 113.5 (ptxas moved the sums between registers every stage, 75 MOVs), the tile's end out
// of that loop: 100.7 - 101.3 (3 or 5 stages, 24 k a group: 101.0 - 102.1); At: 99.1 - 99.3 against
// 100.2 - 100.8, dispatch stalls 0.20 against 0.31 per issue, issue 81.3% against 77.6% (ncu, at
// 1.83 against 1.87 GHz); try_wait in place of a test_wait loop: 97.8 - 98.2 against 98.4 - 99.1.
// Slower or no better: 12 consumer warps (6 groups along K, 152 or 160 registers: 111.2 - 116.1
// us in two runs, long-scoreboard and dispatch stalls up), 8 or 12 k a group (105.4; 12 k with 5 stages
// 100.7 - 100.9), 3 stages (98.5 - 99.4), the copies of the first stage waited for before the
// others are issued (98.8 - 99.5), and 18 columns a lane (one warp along N: ptxas spills and 60%
// of the FFMAs read two sources of one register parity; not timed). Slower or no better than
// the groups' own barriers, in the same five runs: each group's A in a box of its own and its
// stage released group by group (119 - 122 us, and it failed under repeated launches at M = 16),
// the next fragments loaded across the stage's end (two sets a lane: 97.4 - 99.3 against
// 95.8 - 97.6), the groups' sums by recursive halving with every group storing its share
// (98.8 - 99.0 against 97.1 - 97.3), At's part of each group announced by the warp that wrote it
// (96.0 - 96.4 against 95.6 - 95.8), prefetch.tensormap (97.8 against 97.2), 12 consumer warps (6
// groups of 8 k, 4 or 5 stages: 109 - 121 us); in two runs before them, a nanosleep back-off
// (200 - 1000 ns) or a suspend-time hint in the producers' waits (no better). Where the time
// goes (M = 32, globaltimer at four points in every block, At not yet): the first stage lands
// 2.3 - 4.0 us after the start, the loop takes 94 - 96 us, the groups' sums and the stores 1.7 us;
// without B's copies (A's alone) the kernel takes 96.8 us against 101.3, at 1.97 GHz; at
// K = 1792, 3584 and 7168 it takes 55.1, 101.3 and 192 us: about 10 us that do not grow with K.
// The earlier design (two blocks per SM, 32 x 256 tiles each split over K by stream-K, four
// consumer warps of 8 x 8 lanes reading As[m][k], 16 k a stage): 4 stages and 2 blocks per SM
// were the best of 17 variants (stages 2 .. 8, 8 to 32 values of k a stage, 2 or 4 consumer
// warps, 1 to 6 blocks per SM, a register cap for 3 blocks): M = 32 111.1 us
// against cuBLAS's 125.5, where the same tiles copied by the block's own threads (B's 16 rows a
// stage by thread 0's bulk copies, their addresses derived from threadIdx and each inside a
// divergent loop that made them uniform; A by cp.async) with one __syncthreads a stage took 132.0;
// M = 16 81.0 against 135.5, M = 64 204.4 against 222.6 (probe run 2026-12-01). Double-buffering
// the consumers' fragments across k (215 registers: one block per SM; capped at 200 for two, it
// spills) was slower: 124.5 us at M = 32. A producer warp group whose registers go to the
// consumers (24 / 232) in place of one producer warp (the consumers then
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
// against a slab of B, B streamed through shared memory in SK_STAGES stages so that many of its
// bytes are in flight while the FMAs of an earlier stage run. Warp-specialised, one block per SM:
// - a producer warp group: lane 0 of warp 0 issues the tensor copies of a stage (A's BM x (BK + 4)
//   box and B's BK x BN as one GK x BN part per group along K, each on the group's own barrier,
//   in boxes of at most 256 columns, from block-uniform coordinates: one instruction each, no
//   per-thread address); warps 1-3 copy each stage's A, as it lands
//   (As[m][k]), into At[k][m], so that a consumer lane reads the values of its rows for one k
//   with LDS.128; setmaxnreg hands most of the group's registers to the consumers;
// - SK_WARPS consumer warps that only multiply and release the stage (mbarriers), synchronising
//   among themselves only at a tile's end (named barriers): the producers keep copying through
//   it. They are SK_KW groups along K of SK_NW warps along N: group g takes values
//   GK g .. GK (g + 1) - 1 of k of every stage, and at a tile's end the groups' sums meet in
//   shared memory (the tile's last stage, released after) and group 0 stores the tile.
// The copy engine zero-fills past M, N and K, so every stage takes the same path. Elsewhere
// (before sm_90, no encoder) every M takes the streaming path.

#ifndef KD_SK_MIN_M
#define KD_SK_MIN_M 9  // the smallest M that takes the tiled path
#endif
#ifndef KD_SK_NW
#define KD_SK_NW 2  // consumer warps side by side along N
#endif
#ifndef KD_SK_KW
#define KD_SK_KW 4  // groups of SK_NW consumer warps along K (a stage's k split between them)
#endif
#ifndef KD_SK_GK
#define KD_SK_GK 16  // values of k a group multiplies per stage: a stage is SK_BK = GK * KW of them
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
#define KD_SK_BLOCKS_PER_SM 1  // the grid: this many blocks per SM (fewer where they do not fit)
#endif
#ifndef KD_SK_LR
#define KD_SK_LR 4  // lane rows of a consumer warp (TM = BM / LR adjacent rows a lane); 32 / LR lane columns
#endif
#ifndef KD_SK_TN
#define KD_SK_TN 9  // columns of C per consumer lane: TN / 4 sub-blocks of 4, 4 * LC apart, then TN % 4
#endif
#ifndef KD_SK_PRODUCER_REGS
#define KD_SK_PRODUCER_REGS 40  // registers of a producer thread after setmaxnreg
#endif
#ifndef KD_SK_REGS
#define KD_SK_REGS 224  // registers of a consumer thread after setmaxnreg (sm_90a); 0: no setmaxnreg
#endif
// ptxas fits the kernel to SK_BLOCKS_PER_SM blocks per SM (__launch_bounds__) only where
// setmaxnreg then gives the consumers their registers back (sm_90a); elsewhere to one block, so
// that the consumers do not spill (the launcher's grid then holds as many as fit).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !KD_SK_REGS
#define KD_SK_BOUND_BLOCKS KD_SK_BLOCKS_PER_SM
#else
#define KD_SK_BOUND_BLOCKS 1
#endif

#define KD_SK_WARPS (KD_SK_NW * KD_SK_KW)  // consumer warps
#define KD_SK_BK (KD_SK_GK * KD_SK_KW)     // values of k per stage
#define KD_SK_CONSUMERS (32 * KD_SK_WARPS)
#define KD_SK_GROUP (32 * KD_SK_NW)  // threads of a group along K
#define KD_SK_PRODUCERS 128          // a warp group
#define KD_SK_THREADS (KD_SK_PRODUCERS + KD_SK_CONSUMERS)  // the producers first
#define KD_SK_LC (32 / KD_SK_LR)              // lane columns of a consumer warp
#define KD_SK_TN4 (KD_SK_TN / 4)              // 4-column sub-blocks of a lane
#define KD_SK_TE (KD_SK_TN % 4)               // single columns after them: TE side by side a lane
#define KD_SK_WN (KD_SK_LC * KD_SK_TN)        // columns of a warp
#define KD_SK_BN (KD_SK_WN * KD_SK_NW)
#define KD_SK_BW (KD_SK_BN < 256 ? KD_SK_BN : 256)  // B's box: BK x BW, BN / BW of them a stage
#define KD_SK_LDA (KD_SK_BK + 4)  // As row length (floats): rows r .. r + 3 on distinct banks
#define KD_SK_A_BOX(bm) ((bm) * KD_SK_LDA * 4)                   // bytes of a stage's A as copied
#define KD_SK_A_BYTES(bm) ((KD_SK_A_BOX(bm) + 127) / 128 * 128)  // its room: At lands 128-byte aligned
#define KD_SK_AT_BYTES(bm) (KD_SK_BK * (bm) * 4)                 // At[BK][BM]: a multiple of 128 bytes
#define KD_SK_STAGE_BYTES(bm) (KD_SK_A_BYTES(bm) + KD_SK_AT_BYTES(bm) + KD_SK_BK * KD_SK_BN * 4)
// Bytes of dynamic shared memory of the kernel of BM rows: the stages, SK_KW + 2 barriers each,
// alignment.
#define KD_SK_SMEM(bm) (KD_SK_STAGES * KD_SK_STAGE_BYTES(bm) + 8 * (KD_SK_KW + 2) * KD_SK_STAGES + 128)

static_assert(KD_SK_GK % 4 == 0 && KD_SK_GK >= 4, "whole float4 of k per group and stage");
static_assert(KD_SK_STAGES >= 2, "at least two stages");
static_assert(KD_SK_TN >= 1 && KD_SK_TN <= 32, "1 to 32 columns a lane");
static_assert(KD_SK_BN % KD_SK_BW == 0 && KD_SK_BW % KD_SK_WN == 0 && KD_SK_LDA <= 256 && (KD_SK_BW * 4) % 16 == 0,
              "a tensor copy's box is at most 256 elements a side, whole 16-byte rows, and holds whole warps' columns");
static_assert((KD_SK_LDA / 4) % 2 == 1, "A rows an odd number of 16-byte units apart: distinct bank groups");
static_assert(KD_SK_LR == 2 || KD_SK_LR == 4, "2 or 4 lane rows: the row tiles 4 .. 32 hold whole lanes");
static_assert(KD_SK_SMEM(32) <= 227 * 1024, "the stages fit in shared memory");
static_assert(KD_SK_KW / 2 * 32 * KD_SK_BN * 4 <= KD_SK_STAGE_BYTES(32), "half the groups' sums fit in a stage");
static_assert(KD_SK_REGS == 0 || (KD_SK_WARPS % 4 == 0 && KD_SK_REGS % 8 == 0 && KD_SK_REGS <= 256 &&
                                  KD_SK_BLOCKS_PER_SM * (KD_SK_PRODUCERS * KD_SK_PRODUCER_REGS +
                                                         KD_SK_CONSUMERS * KD_SK_REGS) <= 65536),
              "setmaxnreg: whole warp groups, multiples of 8 up to 256, the blocks' registers in the file");

__device__ __forceinline__ float4 kd_f4(const float *v) { return make_float4(v[0], v[1], v[2], v[3]); }

// A lane's TM x TN sums as a flat array f = TN i + j, moved in the threads' order: value group q
// of thread `tid` of T at dst[q T + tid], groups of 4 floats (one 16-byte access) where TM TN is a
// multiple of 4, of 1 elsewhere. `put(p, v)` and `get(p, v)` do the access (shared or global).
template <int F>
struct KdFlat {
    static constexpr int V = F % 4 == 0 ? 4 : 1;  // floats an access
    static constexpr int Q = F / V;              // accesses a thread
};
template <int F, class Put>
__device__ __forceinline__ void kd_flat_put(const float (&acc)[F], float *dst, int T, int tid, Put put) {
    constexpr int V = KdFlat<F>::V;
#pragma unroll
    for (int q = 0; q < KdFlat<F>::Q; ++q) put(dst + V * ((size_t)q * T + tid), acc + V * q);
}
template <int F, class Get>
__device__ __forceinline__ void kd_flat_add(float (&acc)[F], const float *src, int T, int tid, Get get) {
    constexpr int V = KdFlat<F>::V;
    float v[F];
#pragma unroll
    for (int q = 0; q < KdFlat<F>::Q; ++q) get(src + V * ((size_t)q * T + tid), v + V * q);  // all in flight
#pragma unroll
    for (int f = 0; f < F; ++f) acc[f] += v[f];
}
// One access of V floats (4: 16 bytes) at p: in global memory through the L2 only (the slots), or
// in shared memory (the groups' sums).
template <int V, bool GLOBAL>
__device__ __forceinline__ void kd_put(float *p, const float *v) {
    if constexpr (V == 4 && GLOBAL) __stcg(reinterpret_cast<float4 *>(p), kd_f4(v));
    else if constexpr (V == 4) *reinterpret_cast<float4 *>(p) = kd_f4(v);
    else if constexpr (GLOBAL) __stcg(p, v[0]);
    else *p = v[0];
}
template <int V, bool GLOBAL>
__device__ __forceinline__ void kd_get(const float *p, float *v) {
    if constexpr (V == 4) {
        const float4 x = GLOBAL ? __ldcg(reinterpret_cast<const float4 *>(p)) : *reinterpret_cast<const float4 *>(p);
        v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else {
        v[0] = GLOBAL ? __ldcg(p) : *p;
    }
}

// A tile of C is BM = LR * TM rows by BN = WN * SK_NW columns; a warp owns WN = LC * TN of them,
// lane (rg, cg) = (lane % LR, lane / LR) the rows TM rg .. TM rg + TM - 1, the columns
// 4 cg + 4 LC h .. + 3 (h < TN / 4) of the warp's WN and, where TN % 4 = TE > 0, the TE columns
// 4 LC (TN / 4) + TE cg .. + TE - 1. The default (LR = 4, TN = 9, BN = 144): per value of k, TM / 4
// LDS.128 of At (four distinct 16-byte words a warp) and 2 LDS.128 and an LDS.32 of B (eight
// distinct float4 a warp, 128 contiguous bytes, then 32) feed 9 TM FFMA. The work is the list of
// units (tile, stage of K), tile t the column slab t % slabs of row tile t / slabs (the blocks that
// read one slab for different row tiles run at once: B is re-read from L2); block b of G takes
// units U b / G .. U (b + 1) / G - 1, the same share of B for every block (no wave quantisation),
// one continuous pipeline across the tiles it touches. A tile the block covers whole is stored; a
// part of one goes to one of the block's two workspace slots (its first tile, its last), and the
// block of the tile that finishes last (an integer ticket) adds the tile's slots in the order of
// K. No float atomics: the same bits every run. At decode N = 18944 on 132 SMs the 132 slabs of
// 144 columns give every block one whole tile: no slots, no tickets.
struct KdUnits {
    int m_tiles, slabs, KT;  // row tiles; column slabs; stages of K per tile
    long long U, G, u0, u1;  // units; blocks; this block's first unit and one past its last
    __device__ KdUnits(int M, int N, int K, int BM, int BN, int BK)
        : m_tiles((M + BM - 1) / BM), slabs((N + BN - 1) / BN), KT((K + BK - 1) / BK),
          U((long long)m_tiles * slabs * KT), G(gridDim.x), u0(U * blockIdx.x / G), u1(U * (blockIdx.x + 1) / G) {}
    __device__ long long start_of(long long blk) const { return U * blk / G; }
    __device__ long long block_of(long long u) const { return ((u + 1) * G - 1) / U; }  // start_of <= u < next
};

// Named barriers (0 is __syncthreads, which the producers would have to join): 1 for every
// consumer, 2 for group 0's.
__device__ __forceinline__ void kd_consumers_sync() {
    asm volatile("bar.sync 1, %0;\n" ::"n"(KD_SK_CONSUMERS) : "memory");
}
__device__ __forceinline__ void kd_group0_sync() { asm volatile("bar.sync 2, %0;\n" ::"n"(KD_SK_GROUP) : "memory"); }

// The end of this block's part of tile t (the last unit of t, or of the block), by group 0 (its
// thread tid, lane (rg, cg) of its warp `warp`), whose acc holds every group's sum: acc is stored,
// or left in a slot and, by the tile's last block, summed with the others; `last` is a shared flag.
template <int BM, int TM = BM / KD_SK_LR>
__device__ __forceinline__ void kd_tile_end(float (&acc)[TM * KD_SK_TN], int t, bool tile_done, const KdUnits &u,
                                            int M, int N, float alpha, float beta, float *__restrict__ C,
                                            float *__restrict__ ws, unsigned *__restrict__ tickets, int tid,
                                            int warp, int rg, int cg, bool *last) {
    constexpr int T = KD_SK_GROUP, TN = KD_SK_TN, LC = KD_SK_LC, F = TM * TN;
    const long long t_begin = (long long)t * u.KT, t_end = t_begin + u.KT;
    const int row0 = (t / u.slabs) * BM, wcol = (t % u.slabs) * KD_SK_BN + warp * KD_SK_WN;
    auto store = [&]() {
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = row0 + TM * rg + i;
            if (row >= M) continue;
#pragma unroll
            for (int h = 0; h < KD_SK_TN4; ++h) {
                const int col = wcol + 4 * cg + 4 * LC * h;
                if (col < N) sgemm_store4(C, (size_t)row * N + col, alpha, kd_f4(acc + TN * i + 4 * h), beta);
            }
#pragma unroll
            for (int e = 0; e < KD_SK_TE; ++e) {
                const int col = wcol + 4 * LC * KD_SK_TN4 + KD_SK_TE * cg + e;
                if (col < N) sgemm_store(C, row * N + col, alpha, acc[TN * i + 4 * KD_SK_TN4 + e], beta);
            }
        }
    };
    if (u.u0 <= t_begin && tile_done) {
        store();
        return;
    }
    // Slot 2 b: the block's first tile; 2 b + 1: its last. A slot is BM x BN floats in the
    // threads' order: a warp's accesses are contiguous.
    constexpr int V = KdFlat<F>::V;
    const long long b = blockIdx.x;
    float *slot = ws + (2 * b + (t == u.u0 / u.KT ? 0 : 1)) * (BM * KD_SK_BN);
    kd_flat_put(acc, slot, T, tid, kd_put<V, true>);
    const long long first = u.block_of(t_begin), final_ = u.block_of(t_end - 1);
    kd_group0_sync();
    if (tid == 0) *last = kd_ticket(&tickets[t], (unsigned)(final_ - first));
    kd_group0_sync();
    if (!*last) return;
    // acc (stored) becomes the sum over the slots, in the order of K; a slot's loads fly together.
#pragma unroll
    for (int f = 0; f < F; ++f) acc[f] = 0.0f;
    for (long long p = first; p <= final_; ++p) {
        const long long sl = 2 * p + (u.start_of(p) / u.KT == t ? 0 : 1);
        kd_flat_add(acc, ws + sl * (BM * KD_SK_BN), T, tid, kd_get<V, true>);
    }
    store();
    if (tid == 0) tickets[t] = 0;  // ready for the next launch
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900  // tma.cuh's helpers: the tiled path only
__device__ __forceinline__ float kd_lds1(uint32_t addr) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
    return v;
}
__device__ __forceinline__ void kd_lds2(float *v, uint32_t addr) {
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v[0]), "=f"(v[1]) : "r"(addr));
}
// One group's share of a stage's FMAs: At of the stage at a_lds (the group's first k, the lane's
// first row TM rg), Bs at b_lds (the group's first row, the lane's first column) and b_lde (its
// single columns). The FMAs of one k go column by column: one value of B meets the TM values of A
// in turn (B's in the operand reuse cache, A's value and the sum read from the register file).
template <int TM>
__device__ __forceinline__ void kd_stage_fma(float (&acc)[TM * KD_SK_TN], uint32_t a_lds, uint32_t b_lds,
                                             uint32_t b_lde) {
    constexpr int BW = KD_SK_BW, TN = KD_SK_TN, LC = KD_SK_LC, BM = TM * KD_SK_LR;
#pragma unroll
    for (int k = 0; k < KD_SK_GK; ++k) {
        float a[TM];
        if constexpr (TM >= 4) {
#pragma unroll
            for (int q = 0; q < TM / 4; ++q) tma_lds4(a + 4 * q, a_lds + 4 * (k * BM + 4 * q));
        } else if constexpr (TM == 2) {
            kd_lds2(a, a_lds + 4 * (k * BM));
        } else {
            a[0] = kd_lds1(a_lds + 4 * (k * BM));
        }
        const uint32_t row = 4 * (k * BW);
        float bv[TN];
#pragma unroll
        for (int h = 0; h < KD_SK_TN4; ++h) tma_lds4(bv + 4 * h, b_lds + row + 4 * (4 * LC * h));
#pragma unroll
        for (int e = 0; e < KD_SK_TE; ++e) bv[4 * KD_SK_TN4 + e] = kd_lds1(b_lde + row + 4 * e);
#pragma unroll
        for (int j = 0; j < TN; ++j)
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[TN * i + j] = fmaf(a[i], bv[j], acc[TN * i + j]);
    }
}
#endif

template <int BM>
__device__ __forceinline__ void kd_sk_body(int M, int N, int K, float alpha, float beta, float *__restrict__ C,
                                           float *__restrict__ ws, unsigned *__restrict__ tickets,
                                           const CUtensorMap *map_a, const CUtensorMap *map_b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int TM = BM / KD_SK_LR, F = TM * KD_SK_TN, BN = KD_SK_BN, BW = KD_SK_BW, BK = KD_SK_BK;
    constexpr int S = KD_SK_STAGES, GK = KD_SK_GK, T = KD_SK_GROUP, LDA = KD_SK_LDA;
    constexpr int A_BYTES = KD_SK_A_BYTES(BM), AT_BYTES = KD_SK_AT_BYTES(BM), STAGE_BYTES = KD_SK_STAGE_BYTES(BM);
    extern __shared__ __align__(128) unsigned char kd_sk_smem[];
    __shared__ bool kd_sk_last;
    const uint32_t base = (tma_saddr(kd_sk_smem) + 127) & ~uint32_t(127);
    // Stage s at base + s STAGE_BYTES: As (A as copied), At, Bs. Its barriers: full + 8 (KW s + g)
    // (group g's rows of Bs landed and At written), empty + 8 s (the consumers are done with it),
    // a_full + 8 s (As landed).
    constexpr int KW = KD_SK_KW;
    const uint32_t full = base + S * STAGE_BYTES, empty = full + 8 * S * KW, a_full = empty + 8 * S;
    const KdUnits u(M, N, K, BM, BN, BK);
    const int n_units = (int)(u.u1 - u.u0);

    if (threadIdx.x == 0) {
        for (int s = 0; s < S; ++s) {
            // full: the copy's expect_tx and warps 1-3, plus the group's bytes of Bs; a_full: the
            // copy's expect_tx, plus As's bytes; empty: one arrival per consumer warp
            for (int g = 0; g < KW; ++g) mbar_init(full + 8 * (KW * s + g), 4);
            mbar_init(a_full + 8 * s, 1);
            mbar_init(empty + 8 * s, KD_SK_WARPS);
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (threadIdx.x < KD_SK_PRODUCERS) {
#if KD_SK_REGS && defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(KD_SK_PRODUCER_REGS));
#endif
        if (threadIdx.x == 0) {
            // ---- lane 0 of warp 0: unit n into stage n % S, once its last use is released; B's
            // rows of each group on the group's own barrier, in the groups' order (a group starts
            // on a stage as soon as its GK rows are in: the first stage's wait is shorter)
            int t = (int)(u.u0 / u.KT), kt = (int)(u.u0 % u.KT);
            for (int n = 0; n < n_units; ++n) {
                const unsigned s = (unsigned)n % S;
                const uint32_t stage = base + s * STAGE_BYTES;
                if (n >= S) mbar_try_wait(empty + 8 * s, (((unsigned)n / S) - 1) & 1);
                mbar_expect(a_full + 8 * s, KD_SK_A_BOX(BM));
                tma_load_2d(stage, map_a, kt * BK, (t / u.slabs) * BM, a_full + 8 * s);
#pragma unroll
                for (int g = 0; g < KW; ++g) {
                    const uint32_t bar = full + 8 * (KW * s + g);
                    mbar_expect(bar, GK * BN * 4);
#pragma unroll
                    for (int j = 0; j < BN / BW; ++j)
                        tma_load_2d(stage + A_BYTES + AT_BYTES + 4 * (j * (BK * BW) + g * (GK * BW)), map_b,
                                    (t % u.slabs) * BN + j * BW, kt * BK + g * GK, bar);
                }
                if (++kt == u.KT) kt = 0, ++t;
            }
        }
        if (threadIdx.x >= 32) {
            // ---- warps 1-3: stage n's As[m][k] into At[k][m], a 4 x 4 block at a time (four
            // LDS.128 of rows 4 mb .. + 3, four STS.128 of k 4 kb .. + 3; at BM = 32 a warp's 32
            // accesses of 16 bytes fall evenly on the 8 bank groups: 4 wavefronts, the fewest)
            constexpr int MB = BM / 4, BLOCKS = MB * (BK / 4);
            for (int n = 0; n < n_units; ++n) {
                const unsigned s = (unsigned)n % S;
                const uint32_t as = base + s * STAGE_BYTES, at = as + A_BYTES;
                mbar_try_wait(a_full + 8 * s, ((unsigned)n / S) & 1);
                for (int e = threadIdx.x - 32; e < BLOCKS; e += KD_SK_PRODUCERS - 32) {
                    const int mb = e % MB, kb = e / MB;
                    float v[4][4];
#pragma unroll
                    for (int r = 0; r < 4; ++r) tma_lds4(v[r], as + 4 * ((4 * mb + r) * LDA + 4 * kb));
#pragma unroll
                    for (int c = 0; c < 4; ++c) {
                        const uint32_t dst = at + 4 * ((4 * kb + c) * BM + 4 * mb);
                        asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "f"(v[0][c]),
                                     "f"(v[1][c]), "f"(v[2][c]), "f"(v[3][c])
                                     : "memory");
                    }
                }
                __syncwarp();
                if (threadIdx.x % 32 == 0)
                    for (int g = 0; g < KW; ++g) mbar_arrive(full + 8 * (KW * s + g));
            }
        }
        return;  // the consumers wait for every copy before they leave
    }

    // ---- the consumers: warp (kg, wn) = group kg along K, wn along N
#if KD_SK_REGS && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(KD_SK_REGS));
#endif
    const int ctid = threadIdx.x - KD_SK_PRODUCERS, lane = ctid % 32, kg = ctid / T, tid = ctid % T, wn = tid / 32;
    const int rg = lane % KD_SK_LR, cg = lane / KD_SK_LR;
    float acc[F];
#pragma unroll
    for (int f = 0; f < F; ++f) acc[f] = 0.0f;
    int ct = (int)(u.u0 / u.KT), ck = (int)(u.u0 % u.KT);
    const uint32_t a_lds0 = base + A_BYTES + 4 * (GK * kg * BM + TM * rg);
    // the warp's columns lie in box (wn WN) / BW, at (wn WN) % BW
    const uint32_t b_box =
        base + A_BYTES + AT_BYTES + 4 * ((wn * KD_SK_WN) / BW * (BK * BW) + GK * kg * BW + (wn * KD_SK_WN) % BW);
    const uint32_t b_lds0 = b_box + 4 * (4 * cg), b_lde0 = b_box + 4 * (4 * KD_SK_LC * KD_SK_TN4 + KD_SK_TE * cg);
    // The block's part of one tile at a time: units n .. n + seg - 1 of tile t, then its end. (The
    // tile's end outside this inner loop: inside it, ptxas moved the sums between registers every
    // stage.)
    for (int n = 0; n < n_units;) {
        const int t = ct, seg = min(n_units - n, u.KT - ck);
        const bool tile_done = ck + seg == u.KT;
        ck = 0, ++ct;
        for (const int n_end = n + seg; n < n_end; ++n) {
            const unsigned s = (unsigned)n % S;  // unsigned: % and / by S without a sign correction
            mbar_try_wait(full + 8 * (KW * s + kg), ((unsigned)n / S) & 1);
            kd_stage_fma<TM>(acc, a_lds0 + s * STAGE_BYTES, b_lds0 + s * STAGE_BYTES, b_lde0 + s * STAGE_BYTES);
            __syncwarp();
            // the warp is done with stage s (the tile's last stays held where the groups' sums meet in it)
            if (lane == 0 && (KD_SK_KW == 1 || n + 1 < n_end)) mbar_arrive(empty + 8 * s);
        }
        if (KD_SK_KW > 1) {
            // The groups' sums added in the tile's last stage, in rounds: the upper half of the
            // `active` groups leaves its sums there and the lower half adds them (a fixed order,
            // the same every run); the stage is released after.
            const unsigned s = (unsigned)(n - 1) % S;
            float *const rs = reinterpret_cast<float *>(kd_sk_smem + (base - tma_saddr(kd_sk_smem)) + s * STAGE_BYTES);
            kd_consumers_sync();  // every warp's loads of stage s are done
#pragma unroll
            for (int active = KD_SK_KW; active > 1; active = (active + 1) / 2) {
                const int half = (active + 1) / 2;
                if (kg >= half && kg < active)
                    kd_flat_put(acc, rs + (size_t)(kg - half) * (BM * BN), T, tid, kd_put<KdFlat<F>::V, false>);
                kd_consumers_sync();
                if (kg < active - half)
                    kd_flat_add(acc, rs + (size_t)kg * (BM * BN), T, tid, kd_get<KdFlat<F>::V, false>);
                if (half > 1) kd_consumers_sync();
            }
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // before the copy engine writes it again
            __syncwarp();
            if (lane == 0) mbar_arrive(empty + 8 * s);
        }
        if (kg == 0)
            kd_tile_end<BM>(acc, t, tile_done, u, M, N, alpha, beta, C, ws, tickets, tid, wn, rg, cg, &kd_sk_last);
#pragma unroll
        for (int f = 0; f < F; ++f) acc[f] = 0.0f;
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
    // The tiled path: BM the smallest of 4, 8, 16, 32 at least M; a grid of SK_BLOCKS_PER_SM blocks
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
        tma_map(encode, &map_b, B, K, N, KD_SK_GK, KD_SK_BW)) {
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
