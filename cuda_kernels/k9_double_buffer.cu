// K9: K8 with double buffering. Two shared stages: while a block multiplies the tile in one,
// the next tile's global loads are in flight, issued into registers (1 float4 of A, 1 of B per
// thread) before the FMAs and stored into the other stage after them; one __syncthreads per
// phase. Register prefetch rather than cp.async: A is transposed on its way into shared memory
// (As[k][m]) and cp.async copies 4-16 contiguous bytes unchanged, so it would take 4 scalar
// copies per float4 of A; through registers the transpose costs 4 STS and 4 registers.
// The register fragments are double-buffered too: k-step k's FMAs run on fragments read during
// k-step k-1, and the last k-step of a phase stores the prefetched tile, crosses the barrier and
// reads the next stage's first fragments before its FMAs, so no k-step waits on shared memory.
// Block/warp/thread tiles are K8's (128x128x8; 32x64 warp tiles; 8x8 per thread as 4x4
// sub-blocks): per k-step 2 LDS.128 of A and 2 of B for 64 FMAs, per phase 2 LDG.128.
// Needs N % 4 == 0 and K % 4 == 0 (and 16-byte aligned pointers), like K6.
#include "common.cuh"

#define K9_BM 128
#define K9_BN 128
#define K9_BK 8
#define K9_THREADS 256
#define K9_WARPS_M 4                    // warps down the block tile
#define K9_WARPS_N 2                    // warps across it
#define K9_WM (K9_BM / K9_WARPS_M)      // 32: rows of a warp tile
#define K9_WN (K9_BN / K9_WARPS_N)      // 64: columns of a warp tile
#define K9_LM 4                         // lane rows in a warp tile
#define K9_LN 8                         // lane columns
#define K9_TM 8                         // rows per thread: 2 sub-blocks of 4, K9_LM * 4 apart
#define K9_TN 8                         // columns per thread: 2 sub-blocks of 4, K9_LN * 4 apart
#define K9_PAD 4                        // As row padding (floats): conflict-free transposing store
#define K9_AS_LD (K9_BM + K9_PAD)       // As row length: 132 floats = 528 bytes (16-byte multiple)

static_assert(K9_WARPS_M * K9_WARPS_N * 32 == K9_THREADS, "8 warps");
static_assert(K9_LM * K9_LN == 32 && K9_LM * K9_TM == K9_WM && K9_LN * K9_TN == K9_WN,
              "lanes tile the warp tile");
static_assert(K9_BM * K9_BK / 4 == K9_THREADS && K9_BK * K9_BN / 4 == K9_THREADS,
              "one float4 of A and one of B per thread per phase");
static_assert(K9_BK >= 2, "the fragment pipeline needs two k-steps per phase");

extern "C" __global__ void __launch_bounds__(K9_THREADS) k9_double_buffer(SGEMM_KERNEL_PARAMS) {
    __shared__ __align__(16) float As[2][K9_BK][K9_AS_LD];  // transposed: As[stage][k][m]
    __shared__ __align__(16) float Bs[2][K9_BK][K9_BN];

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    // lane bits: 0 -> lx bit 0, 1 -> ly bit 0, 2-3 -> lx bits 1-2, 4 -> ly bit 1 (K8's map)
    const int lx = (lane & 1) | ((lane >> 1) & 6);
    const int ly = ((lane >> 1) & 1) | ((lane >> 3) & 2);
    const int tm = (warp / K9_WARPS_N) * K9_WM + 4 * ly;  // first row of the thread in the tile
    const int tn = (warp % K9_WARPS_N) * K9_WN + 4 * lx;  // first column
    const int row0 = blockIdx.y * K9_BM;
    const int col0 = blockIdx.x * K9_BN;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    // Loader coordinates (K7's). A: a tile row is BK / 4 = 2 float4; B: BN / 4 = 32 float4.
    const int a_m = tid / (K9_BK / 4), a_k = 4 * (tid % (K9_BK / 4));
    const int b_k = tid / (K9_BN / 4), b_n = 4 * (tid % (K9_BN / 4));
    const int am = row0 + a_m, bn = col0 + b_n;

    float4 pa, pb;  // the prefetched float4 of A and of B
    auto load_tile = [&](int ph) {  // global -> registers; zero beyond M, N and K
        const int ak = ph + a_k, bk = ph + b_k;
        pa = (am < M && ak < K) ? *reinterpret_cast<const float4 *>(A + am * K + ak) : zero;
        pb = (bk < K && bn < N) ? *reinterpret_cast<const float4 *>(B + bk * N + bn) : zero;
    };
    auto store_tile = [&](int st) {  // registers -> stage st; A transposed
        As[st][a_k + 0][a_m] = pa.x;
        As[st][a_k + 1][a_m] = pa.y;
        As[st][a_k + 2][a_m] = pa.z;
        As[st][a_k + 3][a_m] = pa.w;
        *reinterpret_cast<float4 *>(&Bs[st][b_k][b_n]) = pb;
    };
    float fa[2][K9_TM], fb[2][K9_TN];  // fragments: two k-steps' worth
    auto load_frag = [&](int buf, int st, int k) {  // stage st, k-step k -> fragment buffer buf
#pragma unroll
        for (int i = 0; i < K9_TM / 4; ++i) {
            const float4 a = *reinterpret_cast<const float4 *>(&As[st][k][tm + 4 * K9_LM * i]);
            fa[buf][4 * i + 0] = a.x;
            fa[buf][4 * i + 1] = a.y;
            fa[buf][4 * i + 2] = a.z;
            fa[buf][4 * i + 3] = a.w;
        }
#pragma unroll
        for (int j = 0; j < K9_TN / 4; ++j) {
            const float4 b = *reinterpret_cast<const float4 *>(&Bs[st][k][tn + 4 * K9_LN * j]);
            fb[buf][4 * j + 0] = b.x;
            fb[buf][4 * j + 1] = b.y;
            fb[buf][4 * j + 2] = b.z;
            fb[buf][4 * j + 3] = b.w;
        }
    };

    float acc[K9_TM][K9_TN];
#pragma unroll
    for (int r = 0; r < K9_TM; ++r)
#pragma unroll
        for (int c = 0; c < K9_TN; ++c) acc[r][c] = 0.0f;

    // Prologue: tile 0 into stage 0, its first fragments into buffer 0.
    load_tile(0);
    store_tile(0);
    __syncthreads();
    load_frag(0, 0, 0);

    int st = 0;  // the stage being multiplied
    for (int ph = 0; ph < K; ph += K9_BK) {
        const bool more = ph + K9_BK < K;  // the same in every thread: barriers stay uniform
        if (more) load_tile(ph + K9_BK);   // in flight during this phase's FMAs
#pragma unroll
        for (int k = 0; k < K9_BK; ++k) {
            if (k < K9_BK - 1) {
                load_frag((k + 1) % 2, st, k + 1);
            } else if (more) {
                // Stage st ^ 1 was last read before the previous barrier; stage st's last
                // fragments are already in registers, so one barrier orders both stages.
                store_tile(st ^ 1);
                __syncthreads();
                load_frag((k + 1) % 2, st ^ 1, 0);
            }
#pragma unroll
            for (int r = 0; r < K9_TM; ++r)
#pragma unroll
                for (int c = 0; c < K9_TN; ++c) acc[r][c] += fa[k % 2][r] * fb[k % 2][c];
        }
        st ^= 1;
    }

    // Epilogue (K8's): float4 stores; N % 4 == 0, so col < N means col + 3 < N.
#pragma unroll
    for (int r = 0; r < K9_TM; ++r) {
        const int row = row0 + tm + 4 * K9_LM * (r / 4) + r % 4;
        if (row < M) {
#pragma unroll
            for (int j = 0; j < K9_TN / 4; ++j) {
                const int col = col0 + tn + 4 * K9_LN * j;
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

void launch_k9_double_buffer(int M, int N, int K, float alpha, const float *A, const float *B,
                             float beta, float *C, cudaStream_t stream) {
    const dim3 block(K9_THREADS);
    const dim3 grid(sgemm_cdiv(N, K9_BN), sgemm_cdiv(M, K9_BM));
    k9_double_buffer<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k9_double_buffer, K9_BM, K9_BN, K9_BK, K9_THREADS, SGEMM_VEC4)
