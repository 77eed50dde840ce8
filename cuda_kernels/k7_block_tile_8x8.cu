// K7: K6 with more outputs per thread and a bigger block tile. 256 threads cover a 128x128
// block tile with BK = 8; thread (ty, tx) = (tid / 16, tid % 16) owns the 8x8 outputs at rows
// 8ty..8ty+7 and columns 8tx..8tx+7 of the tile. Per phase a thread issues 1 float4 load of A
// (transposed into As[k][m] as it is stored) and 1 of B (Bs[k][n]): 2 LDG.128, 8 elements, for
// 512 FMAs. Per k-step it reads 2 LDS.128 of A (index 8ty: broadcast, a warp spans two ty) and
// 2 LDS.128 of B (index 8tx: 32-way) for 64 FMAs. Single stage, two __syncthreads per phase.
// Needs N % 4 == 0 and K % 4 == 0 (and 16-byte aligned pointers): then every float4 is wholly
// inside the matrix or wholly outside, so one guard per float4 suffices (the K tail included).
#include "common.cuh"

#define K7_BM 128
#define K7_BN 128
#define K7_BK 8
#define K7_TM 8                         // rows per thread
#define K7_TN 8                         // columns per thread
#define K7_THREADS 256
#define K7_TX (K7_BN / K7_TN)           // 16 threads across a tile row
#define K7_A_VECS (K7_BM * K7_BK / 4 / K7_THREADS)  // 1 float4 of A per thread per phase
#define K7_B_VECS (K7_BK * K7_BN / 4 / K7_THREADS)  // 1 float4 of B per thread per phase

static_assert(K7_TX * (K7_BM / K7_TM) == K7_THREADS, "one thread per 8x8 output block");
static_assert(K7_A_VECS == 1 && K7_B_VECS == 1, "one float4 of A and one of B per thread");

extern "C" __global__ void __launch_bounds__(K7_THREADS) k7_block_tile_8x8(SGEMM_KERNEL_PARAMS) {
    __shared__ __align__(16) float As[K7_BK][K7_BM];  // transposed: As[k][m]
    __shared__ __align__(16) float Bs[K7_BK][K7_BN];

    const int tid = threadIdx.x;
    const int tx = tid % K7_TX, ty = tid / K7_TX;
    const int row0 = blockIdx.y * K7_BM;
    const int col0 = blockIdx.x * K7_BN;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    // Loader coordinates. A: a tile row is BK / 4 = 2 float4 along K.
    const int a_m = tid / (K7_BK / 4), a_k = 4 * (tid % (K7_BK / 4));
    // B: a tile row is BN / 4 = 32 float4 along N.
    const int b_k = tid / (K7_BN / 4), b_n = 4 * (tid % (K7_BN / 4));
    const int am = row0 + a_m, bn = col0 + b_n;

    float acc[K7_TM][K7_TN];
#pragma unroll
    for (int r = 0; r < K7_TM; ++r)
#pragma unroll
        for (int c = 0; c < K7_TN; ++c) acc[r][c] = 0.0f;

    for (int ph = 0; ph < K; ph += K7_BK) {
        {
            const int ak = ph + a_k;
            const float4 v = (am < M && ak < K)
                                 ? *reinterpret_cast<const float4 *>(A + am * K + ak)
                                 : zero;
            As[a_k + 0][a_m] = v.x;
            As[a_k + 1][a_m] = v.y;
            As[a_k + 2][a_m] = v.z;
            As[a_k + 3][a_m] = v.w;
        }
        {
            const int bk = ph + b_k;
            *reinterpret_cast<float4 *>(&Bs[b_k][b_n]) =
                (bk < K && bn < N) ? *reinterpret_cast<const float4 *>(B + bk * N + bn) : zero;
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < K7_BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4 *>(&As[k][K7_TM * ty]);      // bcast
            const float4 a1 = *reinterpret_cast<const float4 *>(&As[k][K7_TM * ty + 4]);  // bcast
            const float4 b0 = *reinterpret_cast<const float4 *>(&Bs[k][K7_TN * tx]);      // 32-way
            const float4 b1 = *reinterpret_cast<const float4 *>(&Bs[k][K7_TN * tx + 4]);  // 32-way
            const float m[K7_TM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float n[K7_TN] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int r = 0; r < K7_TM; ++r)
#pragma unroll
                for (int c = 0; c < K7_TN; ++c) acc[r][c] += m[r] * n[c];
        }
        __syncthreads();
    }

    // Epilogue: per row two float4 stores; N % 4 == 0, so col < N means col + 3 < N.
#pragma unroll
    for (int r = 0; r < K7_TM; ++r) {
        const int row = row0 + K7_TM * ty + r;
        if (row >= M) break;
#pragma unroll
        for (int h = 0; h < K7_TN / 4; ++h) {
            const int col = col0 + K7_TN * tx + 4 * h;
            if (col < N) {
                float4 *out = reinterpret_cast<float4 *>(C + row * N + col);
                float4 v = make_float4(alpha * acc[r][4 * h + 0], alpha * acc[r][4 * h + 1],
                                       alpha * acc[r][4 * h + 2], alpha * acc[r][4 * h + 3]);
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

void launch_k7_block_tile_8x8(int M, int N, int K, float alpha, const float *A, const float *B,
                              float beta, float *C, cudaStream_t stream) {
    const dim3 block(K7_THREADS);
    const dim3 grid(sgemm_cdiv(N, K7_BN), sgemm_cdiv(M, K7_BM));
    k7_block_tile_8x8<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k7_block_tile_8x8, K7_BM, K7_BN, K7_BK, K7_THREADS, SGEMM_VEC4)
