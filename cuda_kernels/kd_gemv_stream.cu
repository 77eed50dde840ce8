// KD, the streaming GEMV: the decode rung for the smallest M (a few token rows times a weight
// matrix), C = A B with A M x K small and B K x N large. At M = 1 every element of B is used once:
// square-shape tiling has nothing to reuse, so the kernel is a stream over B and the aim is to
// read B at the DRAM's pace, each byte once, with many bytes in flight.
// - Tile: a block owns BN = 4 * TX columns of C (TX column threads, 4 columns each) and MT rows;
//   its TG k-groups share its range of K. Thread (tx, g) reads float4 columns col .. col + 3 of B
//   at rows 4 * k4 .. 4 * k4 + 3 for k4 = g, g + TG, ...: 4 LDG.128 of B per 4 k, UNROLL such
//   steps in flight. A warp's load of B touches 32 / TX rows of TX * 16 contiguous bytes: whole
//   32-byte sectors, every byte used once.
// - A is staged in shared memory, coalesced, TG * UNROLL * 4 values of k at a time (MT LDS.128
//   per 4 k); a thread keeps MT x 4 partial sums.
// - The k-groups are summed in a fixed order (warp shuffles, then shared memory over the warps).
//   Where the output tiles alone would leave SMs idle, K is split across blocks too (enough
//   blocks that the loads of B in flight reach INFLIGHT_BYTES per SM, at most MAX_SPLITS): each
//   block leaves its sums in the workspace and the block of a tile that finishes last adds the
//   splits in their order (kd_common.cuh). No float atomics: the same bits every run.
// - The split rule is Little's law, the same for every shape: a block has THREADS * 4 * UNROLL
//   loads of 16 bytes in flight, and the DRAM's latency times its bandwidth, over the SMs, asks
//   for about INFLIGHT_BYTES of them per SM. Fewer blocks leave the DRAM waiting; more splits
//   than that only add parts to sum. A grid of more waves than fit (N large) is not split.
// - Entry points: kd_gemv_m1, kd_gemv_m2 (MT = 1, 2: UNROLL_FEW steps in flight), kd_gemv_m4,
//   kd_gemv_m8 (MT = 4, 8: UNROLL_MANY, which keeps their MT x 4 sums and the loads of B in
//   registers without spilling), all TX x TG threads. Any M runs on any of them: larger M takes
//   several row tiles of MT rows, the blocks of one column slab adjacent so that B is re-read
//   from L2. The registry picks the smallest MT at least M.
// Parameters (-D overrides): KD_TX, KD_TG, KD_UNROLL_FEW, KD_UNROLL_MANY, KD_INFLIGHT_BYTES,
// KD_MAX_SPLITS, KD_PREFETCH.
// Needs N % 4 == 0 and K % 4 == 0 (and 16-byte aligned pointers), like K6.
#include "common.cuh"
#include "kd_common.cuh"  // the ticket and the workspace

#ifndef KD_TX
#define KD_TX 16  // column threads of a block, 4 columns each
#endif
#ifndef KD_TG
#define KD_TG 8  // k-groups of a block
#endif
#ifndef KD_UNROLL_FEW
#define KD_UNROLL_FEW 4  // MT = 1, 2: 4-k steps whose loads are in flight together
#endif
#ifndef KD_UNROLL_MANY
#define KD_UNROLL_MANY 2  // MT = 4, 8: the same
#endif
#ifndef KD_INFLIGHT_BYTES
#define KD_INFLIGHT_BYTES 49152  // K is split until the loads of B in flight reach this per SM
#endif
#ifndef KD_PREFETCH
#define KD_PREFETCH 0  // 1: the next chunk's loads before this chunk's FMAs (docs/notes/kd_stream.md)
#endif
#ifndef KD_MAX_SPLITS
#define KD_MAX_SPLITS 16  // the most splits of K
#endif

#define KD_THREADS (KD_TX * KD_TG)
#define KD_BN (4 * KD_TX)

#define KD_PARAMS SGEMM_SPLIT_K_PARAMS

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
    constexpr int A_LOADS = (MT * CH + THREADS - 1) / THREADS;  // a thread's share of a chunk of A
    // The loads of the chunk at c (float4 rows of B): B's into registers, A's share likewise, to
    // be stored into shared memory when the chunk's turn comes. A chunk wholly inside K, read by
    // a thread whose columns are inside N, needs no guard: the common case is unpredicated. A
    // chunk past the split's end loads nothing.
    auto load = [&](float4 (&b)[UNROLL][4], float4 (&a)[A_LOADS], int c) {
        const bool whole = c + CH <= k4s;
        const float *b_chunk = b_col + (size_t)4 * (c + g) * N;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {  // every B load of the chunk first: all in flight
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float4 *p = reinterpret_cast<const float4 *>(b_chunk + (size_t)(4 * TG * u + j) * N);
                b[u][j] = (whole && col_ok) || (c + g + TG * u < k4s && col_ok) ? __ldg(p) : zero;
            }
        }
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int e = threadIdx.x + THREADS * i;
            const int m = e / CH, q = e % CH;  // q fastest: a row's float4 are contiguous
            a[i] = e < MT * CH && m < rows && (whole || c + q < k4s) ? __ldg(a4 + (size_t)m * (K / 4) + c + q) : zero;
        }
    };
    // One chunk: its A into shared memory, then every FMA of its B (k in order: FFMA only).
    auto step = [&](const float4 (&b)[UNROLL][4], const float4 (&a)[A_LOADS]) {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int e = threadIdx.x + THREADS * i;
            if (e < MT * CH) as[e % CH][e / CH] = a[i];
        }
        __syncthreads();
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int q = g + TG * u;
#pragma unroll
            for (int m = 0; m < MT; ++m) {  // rows past M hold zeros: never stored
                const float4 av4 = as[q][m];
                const float av[4] = {av4.x, av4.y, av4.z, av4.w};
#pragma unroll
                for (int j = 0; j < 4; ++j) {  // k = 4 (c + q) + j
                    acc[m].x = fmaf(av[j], b[u][j].x, acc[m].x);
                    acc[m].y = fmaf(av[j], b[u][j].y, acc[m].y);
                    acc[m].z = fmaf(av[j], b[u][j].z, acc[m].z);
                    acc[m].w = fmaf(av[j], b[u][j].w, acc[m].w);
                }
            }
        }
        __syncthreads();  // the chunk's A is read by every thread before the next overwrites it
    };
    // The loop is the same in every thread (its barriers uniform). With KD_PREFETCH the loads of
    // the next chunk are issued before the current chunk's FMAs, into a second set of registers
    // (the loop unrolled by two so that each set keeps its registers): the DRAM sees a thread's
    // loads without the gap of a chunk's barriers and FMAs between them.
    float4 b0[UNROLL][4], a0[A_LOADS];
#if KD_PREFETCH
    float4 b1[UNROLL][4], a1[A_LOADS];
    if (k_begin < k4s) load(b0, a0, k_begin);
    for (int c0 = k_begin; c0 < k4s; c0 += 2 * CH) {
        load(b1, a1, c0 + CH);
        step(b0, a0);
        if (c0 + CH >= k4s) break;
        load(b0, a0, c0 + 2 * CH);
        step(b1, a1);
    }
#else
    for (int c0 = k_begin; c0 < k4s; c0 += CH) {
        load(b0, a0, c0);
        step(b0, a0);
    }
#endif

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

#define KD_KERNEL(name, mt, unroll)                                                                  \
    extern "C" __global__ void __launch_bounds__(KD_THREADS) name(KD_PARAMS) {                         \
        kd_body<mt, KD_TX, KD_TG, unroll>(M, N, K, alpha, A, B, beta, C, splits, ws, tickets);         \
    }
KD_KERNEL(kd_gemv_m1, 1, KD_UNROLL_FEW)
KD_KERNEL(kd_gemv_m2, 2, KD_UNROLL_FEW)
KD_KERNEL(kd_gemv_m4, 4, KD_UNROLL_MANY)
KD_KERNEL(kd_gemv_m8, 8, KD_UNROLL_MANY)

// The split of K each entry point's launch makes (SGEMM_SPLIT_K, common.cuh): a block keeps
// THREADS * 4 * unroll LDG.128 of B in flight; the grid is split until those reach INFLIGHT_BYTES
// per SM, at least one staged chunk of A (TG * unroll float4 of k) per split, at most MAX_SPLITS.
SGEMM_SPLIT_K(kd_gemv_m1, KD_THREADS * 4 * KD_UNROLL_FEW * 16, KD_INFLIGHT_BYTES, KD_MAX_SPLITS,
              4 * KD_TG * KD_UNROLL_FEW)
SGEMM_SPLIT_K(kd_gemv_m2, KD_THREADS * 4 * KD_UNROLL_FEW * 16, KD_INFLIGHT_BYTES, KD_MAX_SPLITS,
              4 * KD_TG * KD_UNROLL_FEW)
SGEMM_SPLIT_K(kd_gemv_m4, KD_THREADS * 4 * KD_UNROLL_MANY * 16, KD_INFLIGHT_BYTES, KD_MAX_SPLITS,
              4 * KD_TG * KD_UNROLL_MANY)
SGEMM_SPLIT_K(kd_gemv_m8, KD_THREADS * 4 * KD_UNROLL_MANY * 16, KD_INFLIGHT_BYTES, KD_MAX_SPLITS,
              4 * KD_TG * KD_UNROLL_MANY)

// The launch of one of them: tiles of MT rows x BN columns, each given the rule's splits along K.
// Where the workspace cannot be had (out of memory), nothing is launched and the caller sees C
// unwritten.
typedef void (*KdStreamKernel)(KD_PARAMS);
template <int MT>
static void kd_stream_launch(KdStreamKernel kernel, const SgemmSplitK &rule, int M, int N, int K, float alpha,
                             const float *A, const float *B, float beta, float *C, cudaStream_t stream) {
    KdWorkspace &w = kd_device();
    const int tiles = sgemm_cdiv(N, KD_BN) * sgemm_cdiv(M, MT);
    const int splits = sgemm_split_count(rule, tiles, w.sms, K);
    if (splits > 1 && !kd_reserve(w, (size_t)splits * M * N * sizeof(float), (size_t)tiles, stream)) return;
    kernel<<<dim3(tiles * splits), dim3(KD_THREADS), 0, stream>>>(M, N, K, alpha, A, B, beta, C, splits, w.ws,
                                                                 w.tickets);
}

void launch_kd_gemv_m1(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
                       cudaStream_t stream) {
    kd_stream_launch<1>(kd_gemv_m1, sgemm_split_kd_gemv_m1, M, N, K, alpha, A, B, beta, C, stream);
}
void launch_kd_gemv_m2(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
                       cudaStream_t stream) {
    kd_stream_launch<2>(kd_gemv_m2, sgemm_split_kd_gemv_m2, M, N, K, alpha, A, B, beta, C, stream);
}
void launch_kd_gemv_m4(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
                       cudaStream_t stream) {
    kd_stream_launch<4>(kd_gemv_m4, sgemm_split_kd_gemv_m4, M, N, K, alpha, A, B, beta, C, stream);
}
void launch_kd_gemv_m8(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
                       cudaStream_t stream) {
    kd_stream_launch<8>(kd_gemv_m8, sgemm_split_kd_gemv_m8, M, N, K, alpha, A, B, beta, C, stream);
}

// BM: the rows of C a block computes (MT); BN its columns; BK 0: no K-tile of B in shared memory.
SGEMM_REGISTER(kd_gemv_m1, 1, KD_BN, 0, KD_THREADS, SGEMM_VEC4)
SGEMM_REGISTER(kd_gemv_m2, 2, KD_BN, 0, KD_THREADS, SGEMM_VEC4)
SGEMM_REGISTER(kd_gemv_m4, 4, KD_BN, 0, KD_THREADS, SGEMM_VEC4)
SGEMM_REGISTER(kd_gemv_m8, 8, KD_BN, 0, KD_THREADS, SGEMM_VEC4)
