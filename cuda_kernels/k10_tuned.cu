// K10: K9's scheme, parameterised and tuned. Block tile BM x BN x BK, WARPS_M x WARPS_N warps of
// (BM / WARPS_M) x (BN / WARPS_N) warp tiles, TM x TN outputs per thread as 4x4 sub-blocks strided
// across the warp tile, two shared stages filled through register prefetch, double-buffered
// register fragments, one __syncthreads per phase; every parameter can be overridden with -D
// (K10_BM, K10_BN, K10_BK, K10_TM, K10_TN, K10_WARPS_M, K10_WARPS_N, K10_PAD, and K10_THREADS,
// which must equal 32 * WARPS_M * WARPS_N) for a sweep.
// Default: a 256x128x8 block tile (cuBLAS's SIMT tile on the H200), 256 threads as 4 x 2 warps of
// 64x64, 16x8 outputs per thread (lanes 4 down x 8 across; rows 16i + 4ly + 0..3, columns
// 32j + 4lx + 0..3 of the warp tile, i = 0..3, j = 0..1), 255 registers: one block per SM. Per
// k-step a thread reads 4 LDS.128 of A (4 distinct 16-byte words per warp, lanes n and n^1 alike)
// and 2 of B (8 words, lanes n and n^2 alike): conflict-free, 6 LDS.128 for 128 FMAs (K9: 4 for
// 64). Per phase it issues 2 LDG.128 of A and 1 of B (12 elements) for 1024 FMAs. As rows are
// padded by 4 floats (conflict-free transposing store for BK = 8). The default was chosen by
// timing it against the other candidate tiles at 4096^3 (docs/notes/k10.md).
// Needs N % 4 == 0 and K % 4 == 0 (and 16-byte aligned pointers), like K6.
#include "common.cuh"

#ifndef K10_BM
#define K10_BM 256
#endif
#ifndef K10_BN
#define K10_BN 128
#endif
#ifndef K10_BK
#define K10_BK 8
#endif
#ifndef K10_TM
#define K10_TM 16                       // rows per thread: TM / 4 sub-blocks, 4 * LM apart
#endif
#ifndef K10_TN
#define K10_TN 8                        // columns per thread: TN / 4 sub-blocks, 4 * LN apart
#endif
#ifndef K10_WARPS_M
#define K10_WARPS_M 4                   // warps down the block tile
#endif
#ifndef K10_WARPS_N
#define K10_WARPS_N 2                   // warps across it
#endif
#ifndef K10_PAD
#define K10_PAD 4                       // As row padding (floats), a multiple of 4
#endif
#ifndef K10_THREADS
#define K10_THREADS 256                 // must equal K10_WARPS_M * K10_WARPS_N * 32
#endif

#define K10_WM (K10_BM / K10_WARPS_M)   // rows of a warp tile
#define K10_WN (K10_BN / K10_WARPS_N)   // columns of a warp tile
#define K10_LM (K10_WM / K10_TM)        // lane rows in a warp tile
#define K10_LN (K10_WN / K10_TN)        // lane columns
#define K10_AS_LD (K10_BM + K10_PAD)    // As row length (floats)
#define K10_A_VECS (K10_BM * K10_BK / 4 / K10_THREADS)  // float4 of A per thread per phase
#define K10_B_VECS (K10_BK * K10_BN / 4 / K10_THREADS)  // float4 of B per thread per phase
#define K10_STAGE_FLOATS (K10_BK * K10_AS_LD + K10_BK * K10_BN)
#define K10_SMEM_BYTES (2 * K10_STAGE_FLOATS * 4)

static_assert(K10_WARPS_M * K10_WARPS_N * 32 == K10_THREADS, "THREADS = 32 * warps");
static_assert(K10_BM % K10_WARPS_M == 0 && K10_BN % K10_WARPS_N == 0, "warps tile the block");
static_assert(K10_TM % 4 == 0 && K10_TN % 4 == 0, "4x4 sub-blocks");
static_assert(K10_WM % K10_TM == 0 && K10_WN % K10_TN == 0 && K10_LM * K10_LN == 32,
              "32 lanes tile the warp tile");
static_assert(K10_LM >= 2 && K10_LN >= 2 && (K10_LN & (K10_LN - 1)) == 0,
              "the lane map needs power-of-two lane rows and columns, at least 2 of each");
static_assert(K10_BK % 4 == 0 && K10_BK >= 4 && K10_PAD % 4 == 0, "float4 rows");
static_assert(K10_A_VECS >= 1 && K10_A_VECS * K10_THREADS * 4 == K10_BM * K10_BK,
              "A tile splits evenly into float4 per thread");
static_assert(K10_B_VECS >= 1 && K10_B_VECS * K10_THREADS * 4 == K10_BK * K10_BN,
              "B tile splits evenly into float4 per thread");
static_assert(K10_SMEM_BYTES <= 227 * 1024, "two stages fit in shared memory");

extern "C" __global__ void __launch_bounds__(K10_THREADS, 1) k10_tuned(SGEMM_KERNEL_PARAMS) {
    // Two stages, each As[BK][AS_LD] (transposed: As[k][m]) then Bs[BK][BN]; dynamic so that
    // variants over 48 KB launch too.
    extern __shared__ __align__(16) float k10_smem[];
    auto as = [&](int st, int k, int m) -> float * {
        return k10_smem + st * K10_STAGE_FLOATS + k * K10_AS_LD + m;
    };
    auto bs = [&](int st, int k, int n) -> float * {
        return k10_smem + st * K10_STAGE_FLOATS + K10_BK * K10_AS_LD + k * K10_BN + n;
    };

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    // lane bits: 0 -> lx bit 0, 1 -> ly bit 0, then the rest of lx, then the rest of ly; so lanes
    // n and n^1 share ly (same A words) and lanes n and n^2 share lx (same B words)
    const int lx = (lane & 1) | (((lane >> 2) & (K10_LN / 2 - 1)) << 1);
    const int ly = ((lane >> 1) & 1) | ((lane / (2 * K10_LN)) << 1);
    const int tm = (warp / K10_WARPS_N) * K10_WM + 4 * ly;  // first row of the thread in the tile
    const int tn = (warp % K10_WARPS_N) * K10_WN + 4 * lx;  // first column
    const int row0 = blockIdx.y * K10_BM;
    const int col0 = blockIdx.x * K10_BN;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    // Loader: float4 number f = tid + THREADS * i of a tile, rows of BK / 4 (A) or BN / 4 (B).
    float4 pa[K10_A_VECS], pb[K10_B_VECS];  // the prefetched tile
    auto load_tile = [&](int ph) {  // global -> registers; zero beyond M, N and K
#pragma unroll
        for (int i = 0; i < K10_A_VECS; ++i) {
            const int f = tid + K10_THREADS * i;
            const int am = row0 + f / (K10_BK / 4), ak = ph + 4 * (f % (K10_BK / 4));
            pa[i] = (am < M && ak < K) ? *reinterpret_cast<const float4 *>(A + am * K + ak) : zero;
        }
#pragma unroll
        for (int i = 0; i < K10_B_VECS; ++i) {
            const int f = tid + K10_THREADS * i;
            const int bk = ph + f / (K10_BN / 4), bn = col0 + 4 * (f % (K10_BN / 4));
            pb[i] = (bk < K && bn < N) ? *reinterpret_cast<const float4 *>(B + bk * N + bn) : zero;
        }
    };
    auto store_tile = [&](int st) {  // registers -> stage st; A transposed
#pragma unroll
        for (int i = 0; i < K10_A_VECS; ++i) {
            const int f = tid + K10_THREADS * i;
            const int m = f / (K10_BK / 4), k = 4 * (f % (K10_BK / 4));
            *as(st, k + 0, m) = pa[i].x;
            *as(st, k + 1, m) = pa[i].y;
            *as(st, k + 2, m) = pa[i].z;
            *as(st, k + 3, m) = pa[i].w;
        }
#pragma unroll
        for (int i = 0; i < K10_B_VECS; ++i) {
            const int f = tid + K10_THREADS * i;
            *reinterpret_cast<float4 *>(bs(st, f / (K10_BN / 4), 4 * (f % (K10_BN / 4)))) = pb[i];
        }
    };
    float fa[2][K10_TM], fb[2][K10_TN];  // fragments: two k-steps' worth
    auto load_frag = [&](int buf, int st, int k) {  // stage st, k-step k -> fragment buffer buf
#pragma unroll
        for (int i = 0; i < K10_TM / 4; ++i) {
            const float4 a = *reinterpret_cast<const float4 *>(as(st, k, tm + 4 * K10_LM * i));
            fa[buf][4 * i + 0] = a.x;
            fa[buf][4 * i + 1] = a.y;
            fa[buf][4 * i + 2] = a.z;
            fa[buf][4 * i + 3] = a.w;
        }
#pragma unroll
        for (int j = 0; j < K10_TN / 4; ++j) {
            const float4 b = *reinterpret_cast<const float4 *>(bs(st, k, tn + 4 * K10_LN * j));
            fb[buf][4 * j + 0] = b.x;
            fb[buf][4 * j + 1] = b.y;
            fb[buf][4 * j + 2] = b.z;
            fb[buf][4 * j + 3] = b.w;
        }
    };

    float acc[K10_TM][K10_TN];
#pragma unroll
    for (int r = 0; r < K10_TM; ++r)
#pragma unroll
        for (int c = 0; c < K10_TN; ++c) acc[r][c] = 0.0f;

    // Prologue: tile 0 into stage 0, its first fragments into buffer 0.
    load_tile(0);
    store_tile(0);
    __syncthreads();
    load_frag(0, 0, 0);

    int st = 0;  // the stage being multiplied
    for (int ph = 0; ph < K; ph += K10_BK) {
        const bool more = ph + K10_BK < K;  // the same in every thread: barriers stay uniform
        if (more) load_tile(ph + K10_BK);   // in flight during this phase's FMAs
#pragma unroll
        for (int k = 0; k < K10_BK; ++k) {
            if (k < K10_BK - 1) {
                load_frag((k + 1) % 2, st, k + 1);
            } else if (more) {
                // Stage st ^ 1 was last read before the previous barrier; stage st's last
                // fragments are already in registers, so one barrier orders both stages.
                store_tile(st ^ 1);
                __syncthreads();
                load_frag((k + 1) % 2, st ^ 1, 0);
            }
#pragma unroll
            for (int r = 0; r < K10_TM; ++r)
#pragma unroll
                for (int c = 0; c < K10_TN; ++c) acc[r][c] += fa[k % 2][r] * fb[k % 2][c];
        }
        st ^= 1;
    }

    // Epilogue: float4 stores; N % 4 == 0, so col < N means col + 3 < N.
#pragma unroll
    for (int r = 0; r < K10_TM; ++r) {
        const int row = row0 + tm + 4 * K10_LM * (r / 4) + r % 4;
        if (row < M) {
#pragma unroll
            for (int j = 0; j < K10_TN / 4; ++j) {
                const int col = col0 + tn + 4 * K10_LN * j;
                if (col < N) {
                    float4 *out = reinterpret_cast<float4 *>(C + row * N + col);
                    float4 v = make_float4(alpha * acc[r][4 * j + 0], alpha * acc[r][4 * j + 1],
                                           alpha * acc[r][4 * j + 2], alpha * acc[r][4 * j + 3]);
                    if (beta != 0.0f) {  // with beta == 0 the old C is never read
                        const float4 old = *out;
                        v.x += beta * old.x;
                        v.y += beta * old.y;
                        v.z += beta * old.z;
                        v.w += beta * old.w;
                    }
                    *out = v;
                }
            }
        }
    }
}

void launch_k10_tuned(int M, int N, int K, float alpha, const float *A, const float *B,
                      float beta, float *C, cudaStream_t stream) {
    const size_t smem = K10_SMEM_BYTES;
    static int allowed[64];
    sgemm_allow_smem((const void *)k10_tuned, (int)smem, allowed);
    const dim3 block(K10_THREADS);
    const dim3 grid(sgemm_cdiv(N, K10_BN), sgemm_cdiv(M, K10_BM));
    k10_tuned<<<grid, block, smem, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k10_tuned, K10_BM, K10_BN, K10_BK, K10_THREADS, SGEMM_VEC4)
