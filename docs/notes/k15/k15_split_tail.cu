// The second design of K15, tried and not kept (docs/notes/k15.md): variants.py beside this file
// builds it with cuda_kernels/ on the include path and times its variants. As it was built:
// K15: K12's block tile with B copied 16 bytes at a time and the last, partial wave of tiles cut
// along K.
//  - B's copies (K12_B_VEC 4): a quarter of K12's copy instructions of B, each a 16-byte
//    LDGSTS.128 where K12 issues four LDGSTS.32; it needs N and K multiples of 4 and aligned
//    operands (SGEMM_VEC4).
//  - The tail: one block per tile of C (K12) leaves SMs idle for the last wave where the tiles do
//    not divide evenly among them (at 4096^3 512 tiles of 128 x 256 are 3.88 waves on 132 SMs,
//    run as 4). Here the tiles of the whole waves go one per block as in K12, and the `cut` tiles
//    of the last wave are each cut into `splits` parts along K (parts of one tile in adjacent
//    blocks), so that the parts fill the SMs in more, shorter waves: at 4096^3 116 tiles in 9
//    parts are 1044 blocks, 8 waves of a ninth of a tile's time. Each part leaves its sums in a
//    workspace slot of its own and the tile's last part to arrive (an integer ticket) adds the
//    slots in the order of K and stores (kd_common.cuh): no float atomics, the same bits every run,
//    no block waits for another.
//  - The grid is one-dimensional: blocks 0 .. tiles - cut - 1 are whole tiles, then the parts;
//    the kernel reads `cut` from the grid (gridDim.x = tiles + cut * (splits - 1)). There is no
//    loop around the tile: what is live across K12's main loop is what K12 keeps (a persistent
//    grid that walked several tiles or parts a block was tried and ran slower: docs/notes/k15.md).
// The host's rule for `splits` (k15_splits) weighs the waves of parts against a part's fixed cost.
// Registers: the parts' sum needs more of them than the main loop, and with the 255 a thread may
// have ptxas assigns the loop's registers otherwise than in K12: study.predict, from the SASS,
// put that assignment's register-bank reads at 70% issue (3.2 ms at 4096^3) and the assignment
// under a budget of 240 at 92% (2.42 ms), so K15 is built with 240 (docs/notes/k15.md).
#ifndef K12_B_VEC
#define K12_B_VEC 4
#endif
#ifndef K12_MAXNREG
#define K12_MAXNREG 240  // the register budget (k12_tile.cuh's K12_BOUNDS): see below
#endif
#include "k12_tile.cuh"
#include "kd_gemm_tiled.cuh"  // KD's ticket, the slots' moves and the workspace

#ifndef K15_MAX_SPLITS
#define K15_MAX_SPLITS 16  // the most parts a tile of the last wave is cut into
#endif
#ifndef K15_PART_COST
#define K15_PART_COST 2  // a part's fixed cost (its pipeline's start, its slot), in phases of K
#endif

#define K15_SLOT (K12_BM * K12_BN)  // floats of one workspace slot: a part's sums

extern "C" __global__ void K12_BOUNDS k15_split_tail(SGEMM_KERNEL_PARAMS, float *__restrict__ ws,
                                                      unsigned *__restrict__ tickets, int splits) {
    extern __shared__ __align__(16) unsigned char k15_smem[];
    __shared__ bool last;
    const int tiles_n = sgemm_cdiv(N, K12_BN), tiles = sgemm_cdiv(M, K12_BM) * tiles_n;
    const int KT = sgemm_cdiv(K, K12_BK);  // phases of a tile; phase 0 the ragged one
    const int cut = splits > 1 ? (int)(gridDim.x - tiles) / (splits - 1) : 0, whole = tiles - cut;
    const int b = blockIdx.x, j = b - whole;  // j: the part, where b >= whole
    const int t = b < whole ? b : whole + j / splits;
    const int p0 = b < whole ? 0 : KT * (j % splits) / splits, p1 = b < whole ? KT : KT * (j % splits + 1) / splits;
    const int k_first = K - K12_BK * (KT - 1);  // values of k in phase 0
    const int k_lo = p0 == 0 ? 0 : k_first + K12_BK * (p0 - 1), k_hi = k_first + K12_BK * (p1 - 1);
    const int row0 = (t / tiles_n) * K12_BM, col0 = (t % tiles_n) * K12_BN;
    float acc[K12_TM][K12_TN];
#pragma unroll
    for (int r = 0; r < K12_TM; ++r)
#pragma unroll
        for (int c = 0; c < K12_TN; ++c) acc[r][c] = 0.0f;
    k12_tile(acc, M, N, k_hi - k_lo, K, A + k_lo, B + (size_t)k_lo * N, row0, col0, k15_smem);
    if (b < whole) {
        k12_store(acc, M, N, alpha, beta, C, row0, col0);
        return;
    }
    // A part: its sums into slot j in the threads' order; the tile's last part to arrive adds the
    // tile's slots in the order of K.
    const int tid = threadIdx.x, local = j / splits;
    float(&flat)[K12_TM * K12_TN] = reinterpret_cast<float(&)[K12_TM * K12_TN]>(acc);
    constexpr int V = KdFlat<K12_TM * K12_TN>::V;
    kd_flat_put(flat, ws + (size_t)j * K15_SLOT, K12_THREADS, tid, kd_put<V, true>);
    __syncthreads();
    if (tid == 0) last = kd_ticket(&tickets[local], (unsigned)(splits - 1));
    __syncthreads();
    if (!last) return;
    // The sum, a quarter of a thread's values of a part in flight at a time: all of them at once
    // (as KD adds its parts) would hold 256 values in registers, past what a thread has.
    constexpr int F = K12_TM * K12_TN, H = F / 4;
#pragma unroll
    for (int f = 0; f < F; ++f) flat[f] = 0.0f;
    for (int p = 0; p < splits; ++p) {
        const float *part = ws + (size_t)(local * splits + p) * K15_SLOT;
#pragma unroll
        for (int h = 0; h < F; h += H) {
            float v[H];
#pragma unroll
            for (int q = 0; q < H / V; ++q) kd_get<V, true>(part + V * ((size_t)(h / V + q) * K12_THREADS + tid), v + V * q);
#pragma unroll
            for (int i = 0; i < H; ++i) flat[h + i] += v[i];
        }
    }
    k12_store(acc, M, N, alpha, beta, C, row0, col0);
    if (tid == 0) tickets[local] = 0;  // ready for the next launch
}

// The parts each tile of the last wave is cut into, for `tiles` tiles of `KT` phases on `sms` SMs
// (one block each): the fewest that minimise the run's length in phases, the whole waves' plus,
// for the parts, their waves times a part's phases and its fixed cost; 1 where the tiles divide
// evenly or no cut pays.
static inline int k15_splits(int tiles, int KT, int sms) {
    const int cut = tiles % sms;
    if (cut == 0) return 1;
    int best = 1;
    long long best_len = 0;
    for (int s = 1; s <= K15_MAX_SPLITS && s <= KT; ++s) {
        const long long waves = ((long long)cut * s + sms - 1) / sms;
        const long long len = waves * ((KT + s - 1) / s + (s > 1 ? K15_PART_COST : 0));
        if (s == 1 || len < best_len) best = s, best_len = len;
    }
    return best;
}

// The grid: the whole tiles, then the last wave's tiles in `splits` parts each, with a workspace
// slot a part and a ticket a cut tile. Where the workspace cannot be had, nothing is launched but an
// empty grid, whose error the caller reads, and C is left unwritten.
void launch_k15_split_tail(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                           float *C, cudaStream_t stream) {
    const size_t smem = K12_SMEM_BYTES;
    static int allowed[64];
    sgemm_allow_smem((const void *)k15_split_tail, (int)smem, allowed);
    KdWorkspace &w = kd_device();
    const int tiles = sgemm_cdiv(M, K12_BM) * sgemm_cdiv(N, K12_BN);
    const int splits = k15_splits(tiles, sgemm_cdiv(K, K12_BK), w.sms);
    const int cut = splits > 1 ? tiles % w.sms : 0;
    if (!kd_reserve(w, (size_t)cut * splits * K15_SLOT * sizeof(float), (size_t)cut, stream)) {
        k15_split_tail<<<dim3(0), K12_THREADS, smem, stream>>>(M, N, K, alpha, A, B, beta, C, w.ws, w.tickets,
                                                                splits);
        return;
    }
    const unsigned grid = (unsigned)(tiles + cut * (splits - 1));
    k15_split_tail<<<grid, K12_THREADS, smem, stream>>>(M, N, K, alpha, A, B, beta, C, w.ws, w.tickets, splits);
}

SGEMM_REGISTER(k15_split_tail, K12_BM, K12_BN, K12_BK, K12_THREADS, SGEMM_VEC4 | SGEMM_BALANCED)
