// K15: K12's block tile on a persistent grid, so that no SM waits out a last, partial wave. One
// block per tile of C (K12) leaves the SMs a whole wave's time where the tiles do not divide
// evenly among them: at 4096^3 K12's 512 tiles of 128 x 256 make 3.88 waves on 132 SMs, run as
// 4, so 3% of the SMs' time is idle; at 2048^3 128 tiles leave 4 SMs idle the whole run. Here the
// grid is one block per SM and the work is cut as Stream-K's hybrid cuts it (Osama et al., 2023):
//  - the tiles of all whole waves but the last go one per block, in K12's order (blocks side by
//    side on one row of tiles, A's rows shared in L2), a block taking tile b, b + G, ...;
//  - the rest, between one and two waves' worth, is cut into units of one phase of K (BK values of
//    k) of one tile, and block b of G takes units U b / G .. U (b + 1) / G - 1: every block gets
//    the same number of phases, give or take one;
//  - a tile a block covers whole is stored; a part of one goes to one of the block's two workspace
//    slots (its first tile and its last: a block's range can cut no other), and the block that
//    brings the tile's last part (an integer ticket) sums the slots in the order of K and stores
//    (kd_common.cuh): no float atomics, the same bits every run, and no block waits for another.
// Each tile or part runs K12's block tile (k12_tile.cuh) over its part of K, with one call site
// in the kernel, so the SASS holds K12's main loop once. B's copies are 16 bytes (K12_B_VEC 4: a
// quarter of K12's copy instructions of B), which needs N and K multiples of 4 and aligned
// operands (SGEMM_VEC4).
#ifndef K12_B_VEC
#define K12_B_VEC 4
#endif
#include "k12_tile.cuh"
#include "kd_common.cuh"  // the ticket, the slots' moves and the workspace

#ifndef K15_MIN_PHASES
#define K15_MIN_PHASES 8  // the fewest phases of K the launcher gives a block (fewer blocks below that)
#endif

#define K15_SLOT (K12_BM * K12_BN)  // floats of one workspace slot: a tile's sums

// Tiles that go one per block: every whole wave of G blocks but the last, all of them where the
// tiles divide evenly (then no tile is cut).
__host__ __device__ __forceinline__ int k15_whole_tiles(int tiles, int G) {
    if (tiles % G == 0) return tiles;
    const int waves = tiles / G;
    return waves >= 2 ? (waves - 1) * G : 0;
}

// The block's walk through its work, kept in local memory (volatile: stored before a tile's
// main loop and loaded after it) rather than in registers: K12's main loop needs all but a few of
// the 255 registers a thread may have, and what is live across it decides how ptxas assigns them
// (study.predict prices the register banks that assignment reads).
struct K15Walk {
    long long U, u, u1;   // units of the cut tiles; the block's next one, one past its last
    int w, whole, KT;     // the block's next whole tile; tiles that go whole; phases of a tile
    int t, p0, p1;        // the tile of the current part and its phases p0 .. p1 - 1
};

extern "C" __global__ void K12_BOUNDS
    k15_stream_k(SGEMM_KERNEL_PARAMS, float *__restrict__ ws, unsigned *__restrict__ tickets) {
    extern __shared__ __align__(16) unsigned char k15_smem[];
    __shared__ bool last;
    const int G = gridDim.x, b = blockIdx.x, tid = threadIdx.x;
    volatile K15Walk walk;
    {
        const int tiles = sgemm_cdiv(M, K12_BM) * sgemm_cdiv(N, K12_BN), KT = sgemm_cdiv(K, K12_BK);
        const int whole = k15_whole_tiles(tiles, G);
        // The units: (tile whole + u / KT, phase u % KT) for u < U; this block's are U b / G ..
        // U (b + 1) / G - 1.
        const long long U = (long long)(tiles - whole) * KT;
        walk.U = U, walk.u = U * b / G, walk.u1 = U * (b + 1) / G;
        walk.w = b, walk.whole = whole, walk.KT = KT;
    }
    for (;;) {
        {
            const int w = walk.w, whole = walk.whole, KT = walk.KT;
            const long long u = walk.u, u1 = walk.u1;
            if (w < whole) {
                walk.t = w, walk.p0 = 0, walk.p1 = KT;
                walk.w = w + G;
            } else if (u < u1) {
                const int p0 = (int)(u % KT), p1 = (int)min((long long)KT, p0 + (u1 - u));
                walk.t = whole + (int)(u / KT), walk.p0 = p0, walk.p1 = p1;
                walk.u = u + (p1 - p0);
            } else {
                break;
            }
        }
        float acc[K12_TM][K12_TN];
        {
            const int t = walk.t, p0 = walk.p0, p1 = walk.p1, KT = walk.KT, tiles_n = sgemm_cdiv(N, K12_BN);
            const int k_first = K - K12_BK * (KT - 1);  // values of k in a tile's phase 0
            const int k_lo = p0 == 0 ? 0 : k_first + K12_BK * (p0 - 1), k_hi = k_first + K12_BK * (p1 - 1);
#pragma unroll
            for (int r = 0; r < K12_TM; ++r)
#pragma unroll
                for (int c = 0; c < K12_TN; ++c) acc[r][c] = 0.0f;
            k12_tile(acc, M, N, k_hi - k_lo, K, A + k_lo, B + (size_t)k_lo * N, (t / tiles_n) * K12_BM,
                     (t % tiles_n) * K12_BN, k15_smem);
        }
        const int t = walk.t, p0 = walk.p0, p1 = walk.p1, KT = walk.KT, tiles_n = sgemm_cdiv(N, K12_BN);
        const int row0 = (t / tiles_n) * K12_BM, col0 = (t % tiles_n) * K12_BN;
        if (p0 == 0 && p1 == KT) {
            k12_store(acc, M, N, alpha, beta, C, row0, col0);
            __syncthreads();  // the next tile's first copies overwrite the stage this one read last
            continue;
        }
        // A part: into slot 2 b (the block's first tile) or 2 b + 1 (its last), in the threads'
        // order; the tile's last block to arrive sums its parts, one slot per block, in K's order.
        const long long U = walk.U;
        auto start_of = [&](long long blk) { return U * blk / G; };
        auto block_of = [&](long long u) { return ((u + 1) * G - 1) / U; };  // start_of <= u < next
        float(&flat)[K12_TM * K12_TN] = reinterpret_cast<float(&)[K12_TM * K12_TN]>(acc);
        constexpr int V = KdFlat<K12_TM * K12_TN>::V;
        const int local = t - walk.whole;
        float *slot = ws + (size_t)(2 * b + (local == start_of(b) / KT ? 0 : 1)) * K15_SLOT;
        kd_flat_put(flat, slot, K12_THREADS, tid, kd_put<V, true>);
        const long long t_begin = (long long)local * KT;
        const long long first = block_of(t_begin), final_ = block_of(t_begin + KT - 1);
        __syncthreads();
        if (tid == 0) last = kd_ticket(&tickets[local], (unsigned)(final_ - first));
        __syncthreads();
        if (!last) continue;
#pragma unroll
        for (int f = 0; f < K12_TM * K12_TN; ++f) flat[f] = 0.0f;
        for (long long p = first; p <= final_; ++p) {
            const float *part = ws + (size_t)(2 * p + (start_of(p) / KT == local ? 0 : 1)) * K15_SLOT;
            kd_flat_add(flat, part, K12_THREADS, tid, kd_get<V, true>);
        }
        k12_store(acc, M, N, alpha, beta, C, row0, col0);
        if (tid == 0) tickets[local] = 0;  // ready for the next launch
    }
}

// One block per SM (K12's tile holds an SM: 225 registers a thread), fewer where the units would
// give a block fewer than K15_MIN_PHASES phases; two workspace slots a block and a ticket a cut
// tile. Where the workspace cannot be had, nothing is launched but an empty grid, whose error the
// caller reads, and C is left unwritten.
void launch_k15_stream_k(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                         float *C, cudaStream_t stream) {
    const size_t smem = K12_SMEM_BYTES;
    static int allowed[64];
    sgemm_allow_smem((const void *)k15_stream_k, (int)smem, allowed);
    KdWorkspace &w = kd_device();
    const int tiles = sgemm_cdiv(M, K12_BM) * sgemm_cdiv(N, K12_BN);
    const long long units = (long long)tiles * sgemm_cdiv(K, K12_BK);
    const int G = (int)(units / K15_MIN_PHASES < w.sms ? (units / K15_MIN_PHASES > 0 ? units / K15_MIN_PHASES : 1)
                                                        : w.sms);
    const int cut = tiles - k15_whole_tiles(tiles, G);
    if (!kd_reserve(w, cut ? 2 * (size_t)G * K15_SLOT * sizeof(float) : 0, (size_t)(cut ? cut : 0), stream)) {
        k15_stream_k<<<dim3(0), K12_THREADS, smem, stream>>>(M, N, K, alpha, A, B, beta, C, w.ws, w.tickets);
        return;
    }
    k15_stream_k<<<G, K12_THREADS, smem, stream>>>(M, N, K, alpha, A, B, beta, C, w.ws, w.tickets);
}

SGEMM_REGISTER(k15_stream_k, K12_BM, K12_BN, K12_BK, K12_THREADS, SGEMM_VEC4 | SGEMM_PERSISTENT)
