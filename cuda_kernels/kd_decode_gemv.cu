// KD: the decode rung, for small M (a few token rows times a weight matrix): C = A B with A
// M x K small and B K x N large. Square-shape tiling stops paying here: at M = 1 every element of
// B is used once, so the kernel is a stream over B and the aim is to read it at the DRAM's pace.
// A block owns BN = 4 * TX columns of C (TX column threads, 4 columns each) and MT rows; its TG
// k-groups share its range of K: thread (tx, g) reads float4 columns col .. col + 3 of B at rows
// 4 * k4 .. 4 * k4 + 3 for k4 = g, g + TG, ... (4 LDG.128 of B per 4 k, UNROLL such steps in
// flight), and A from shared memory, where a block stages it coalesced, TG * UNROLL * 4 values of
// k at a time (MT LDS.128 per 4 k), keeping MT x 4 partial sums. A warp's load of B touches
// 32 / TX rows of TX * 16 contiguous bytes: whole 32-byte sectors, every byte used once.
// The k-groups are summed in a fixed order (warp shuffles, then shared memory over the warps).
// Where the output tiles alone would leave SMs idle, K is split across blocks too (enough blocks
// for BLOCKS_PER_SM per SM): each block leaves its sums in a workspace and the block of a tile
// that finishes last (an integer ticket) adds the splits in their order 0, 1, ...; no float
// atomics, so the result is the same bit for bit from run to run. MT is the smallest of 1, 2,
// 4, ..., MT_MAX at least M; larger M takes several row tiles, the blocks of one column slab
// adjacent so that B is re-read from L2. Each MT is its own kernel (kd_gemv is MT = 1, the
// registered one; kd_gemv_m2 ... the others).
// Parameters (-D overrides): TX, TG, UNROLL, MT_MAX, BLOCKS_PER_SM, MAX_SPLITS. The defaults are
// the best of 135 variants on the H200 over decode M = 1, 8 and 32 (N = 18944, K = 3584; the
// geometric mean of the speed-ups over cuBLAS).
// Needs N % 4 == 0 and K % 4 == 0 (and 16-byte aligned pointers), like K6.
#include "common.cuh"

#ifndef KD_TX
#define KD_TX 16       // column threads of a block: 4 columns each
#endif
#ifndef KD_TG
#define KD_TG 8       // k-groups of a block
#endif
#ifndef KD_UNROLL
#define KD_UNROLL 2    // 4-k steps whose loads are in flight together
#endif
#ifndef KD_MT_MAX
#define KD_MT_MAX 8   // most rows of C one block computes
#endif
#ifndef KD_BLOCKS_PER_SM
#define KD_BLOCKS_PER_SM 4  // K is split until the grid holds this many blocks per SM
#endif
#ifndef KD_MAX_SPLITS
#define KD_MAX_SPLITS 16
#endif

#define KD_THREADS (KD_TX * KD_TG)
#define KD_BN (4 * KD_TX)
#define KD_WARPS (KD_THREADS / 32)
#define KD_CH (KD_TG * KD_UNROLL)  // float4 columns of A (4 k each) staged per chunk

static_assert(KD_THREADS % 32 == 0 && KD_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(32 % KD_TX == 0, "a warp holds whole k-groups");
static_assert(KD_MT_MAX >= 1 && KD_MT_MAX <= 32 && (KD_MT_MAX & (KD_MT_MAX - 1)) == 0,
              "MT_MAX a power of two up to 32");

#define KD_PARAMS SGEMM_KERNEL_PARAMS, int splits, float *__restrict__ ws, unsigned *__restrict__ tickets

template <int MT>
__device__ __forceinline__ void kd_body(int M, int N, int K, float alpha, const float *__restrict__ A,
                                        const float *__restrict__ B, float beta, float *__restrict__ C,
                                        int splits, float *__restrict__ ws, unsigned *__restrict__ tickets) {
    // Shared memory: the staged chunk of A during the loop, then one k-group's sums per warp
    // (the loop's last barrier frees the chunk). 16-byte words, so float4 views are aligned.
    constexpr int AS_WORDS = KD_CH * (MT + 1), PARTIAL_WORDS = KD_WARPS * MT * KD_TX;
    __shared__ float4 kd_smem[AS_WORDS > PARTIAL_WORDS ? AS_WORDS : PARTIAL_WORDS];
    auto as = reinterpret_cast<float4 (*)[MT + 1]>(kd_smem);             // as[CH][MT + 1]
    auto partial = reinterpret_cast<float4 (*)[MT][KD_TX]>(kd_smem);     // partial[WARPS][MT][TX]
    // Block b: split b / tiles of K, output tile b % tiles = (column slab, row tile), the row
    // tiles of one slab adjacent (they read the same B).
    const int m_tiles = (M + MT - 1) / MT;
    const int tiles = (N + KD_BN - 1) / KD_BN * m_tiles;
    const int split = blockIdx.x / tiles, tile = blockIdx.x % tiles;
    const int slab = tile / m_tiles;
    const int m0 = (tile % m_tiles) * MT;
    const int tx = threadIdx.x % KD_TX, g = threadIdx.x / KD_TX;
    const int col = slab * KD_BN + 4 * tx;
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
    for (int c0 = k_begin; c0 < k4s; c0 += KD_CH) {  // the same in every thread: barriers uniform
        // A chunk wholly inside K, read by a thread whose columns are inside N, needs no guard:
        // the common case takes the unpredicated path.
        const bool whole = c0 + KD_CH <= k4s;
        float4 b[KD_UNROLL][4];
        const float *b_chunk = b_col + (size_t)4 * (c0 + g) * N;
#pragma unroll
        for (int u = 0; u < KD_UNROLL; ++u) {  // every B load of the chunk first: all in flight
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float4 *p = reinterpret_cast<const float4 *>(b_chunk + (size_t)(4 * KD_TG * u + j) * N);
                b[u][j] = (whole && col_ok) || (c0 + g + KD_TG * u < k4s && col_ok) ? __ldg(p) : zero;
            }
        }
#pragma unroll
        for (int i = 0; i < (MT * KD_CH + KD_THREADS - 1) / KD_THREADS; ++i) {
            const int e = threadIdx.x + KD_THREADS * i;
            const int m = e / KD_CH, q = e % KD_CH;  // q fastest: a row's float4 are contiguous
            if (e < MT * KD_CH)
                as[q][m] = (m < rows && (whole || c0 + q < k4s)) ? __ldg(a4 + (size_t)m * (K / 4) + c0 + q) : zero;
        }
        __syncthreads();
#pragma unroll
        for (int u = 0; u < KD_UNROLL; ++u) {
            const int q = g + KD_TG * u;
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
        for (int off = KD_TX; off < 32; off *= 2) {
            acc[m].x += __shfl_xor_sync(0xffffffffu, acc[m].x, off);
            acc[m].y += __shfl_xor_sync(0xffffffffu, acc[m].y, off);
            acc[m].z += __shfl_xor_sync(0xffffffffu, acc[m].z, off);
            acc[m].w += __shfl_xor_sync(0xffffffffu, acc[m].w, off);
        }
        if (lane < KD_TX) partial[warp][m][lane] = acc[m];
    }
    __syncthreads();
    // Then the warps, in order: thread t sums output (m, tx) = (t / TX, t % TX) over the warps.
    // One split of K: that is C. Several: each block leaves its sums in ws[split], and the
    // block of a tile that finishes last (an integer ticket; which block it is does not matter)
    // adds the splits in their order 0, 1, ...: the same sum whatever the order of arrival.
    for (int o = threadIdx.x; o < MT * KD_TX; o += KD_THREADS) {
        const int m = o / KD_TX, x = o % KD_TX;
        const int c = slab * KD_BN + 4 * x;
        if (m >= rows || c >= N) continue;
        float4 s = partial[0][m][x];
#pragma unroll
        for (int w = 1; w < KD_WARPS; ++w) {
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
    __threadfence();  // this block's sums are visible before its ticket is
    __syncthreads();
    if (threadIdx.x == 0) kd_last = atomicAdd(&tickets[tile], 1u) == (unsigned)splits - 1;
    __syncthreads();
    if (!kd_last) return;
    __threadfence();
    for (int o = threadIdx.x; o < MT * KD_TX; o += KD_THREADS) {
        const int m = o / KD_TX, x = o % KD_TX;
        const int c = slab * KD_BN + 4 * x;
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

// M = 1: the registered kernel (its SASS is the rung's in the tables)
extern "C" __global__ void __launch_bounds__(KD_THREADS) kd_gemv(KD_PARAMS) {
    kd_body<1>(M, N, K, alpha, A, B, beta, C, splits, ws, tickets);
}
#define KD_KERNEL(name, mt)                                                                     \
    extern "C" __global__ void __launch_bounds__(KD_THREADS) name(KD_PARAMS) {                    \
        kd_body<mt>(M, N, K, alpha, A, B, beta, C, splits, ws, tickets);                          \
    }
KD_KERNEL(kd_gemv_m2, 2)
KD_KERNEL(kd_gemv_m4, 4)
KD_KERNEL(kd_gemv_m8, 8)
KD_KERNEL(kd_gemv_m16, 16)
KD_KERNEL(kd_gemv_m32, 32)

// The splits of K for an M x N x K product on a GPU of `sms` SMs: enough blocks to give every
// SM BLOCKS_PER_SM of them, at least one staged chunk of A per split, at most MAX_SPLITS.
static int kd_splits(int tiles, int K, int sms) {
    int s = (KD_BLOCKS_PER_SM * sms + tiles - 1) / tiles;
    s = min(s, min(KD_MAX_SPLITS, sgemm_cdiv(K / 4, KD_CH)));
    return s < 1 ? 1 : s;
}

// Per device: the split sums (grown on demand) and one zeroed ticket per output tile (each launch
// leaves them zero again). One launch at a time per device: two streams running KD at once would
// share them.
struct KdWorkspace {
    float *ws = nullptr;
    size_t ws_bytes = 0;
    unsigned *tickets = nullptr;
    size_t n_tickets = 0;
    int sms = 0;
};
static KdWorkspace kd_workspace[64];

void launch_kd_gemv(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                    float *C, cudaStream_t stream) {
    int dev = 0;
    cudaGetDevice(&dev);
    KdWorkspace &w = kd_workspace[dev % 64];
    if (!w.sms) cudaDeviceGetAttribute(&w.sms, cudaDevAttrMultiProcessorCount, dev);
    int mt = 1;
    while (mt < M && mt < KD_MT_MAX) mt *= 2;
    const int tiles = sgemm_cdiv(N, KD_BN) * sgemm_cdiv(M, mt);
    const int splits = kd_splits(tiles, K, w.sms);
    if (splits > 1) {
        const size_t need = (size_t)splits * M * N * sizeof(float);
        if (need > w.ws_bytes) {
            cudaFree(w.ws);
            w.ws_bytes = cudaMalloc(&w.ws, need) == cudaSuccess ? need : 0;
        }
        if ((size_t)tiles > w.n_tickets) {
            cudaFree(w.tickets);
            w.n_tickets = cudaMalloc(&w.tickets, tiles * sizeof(unsigned)) == cudaSuccess ? tiles : 0;
            if (w.n_tickets) cudaMemsetAsync(w.tickets, 0, tiles * sizeof(unsigned), stream);
        }
        if (!w.ws_bytes || !w.n_tickets) return;  // out of memory: the caller sees C unwritten
    }
    const dim3 grid(tiles * splits), block(KD_THREADS);
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

// BM: the most rows of C a block computes (MT_MAX; the registered symbol is the MT = 1 kernel);
// BK 0: no shared K-tile of B.
SGEMM_REGISTER(kd_gemv, KD_MT_MAX, KD_BN, 0, KD_THREADS, SGEMM_VEC4)
