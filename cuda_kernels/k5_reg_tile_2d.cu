// K5: 2-D register tiling. 128 threads (32 x 4) cover a 32x128 block tile; a thread owns
// rows i0..i0+7 (i0 = 8*ty) times columns tx + 32c (c = 0..3): 32 outputs. Per k-step it
// reads 8 A values (broadcasts) and 4 B values (32-way) into registers and does 32 FMAs.
// The A tile is stored transposed (Ads[k][m]) so a thread's 8 rows sit side by side.
#include "common.cuh"

#define K5_BM 32
#define K5_BN 128
#define K5_BK 32
#define K5_TM 8                        // rows per thread
#define K5_TN 4                        // columns per thread, 32 apart
#define K5_THREADS 128
#define K5_ROWS (K5_BM / K5_TM)        // blockDim.y = 4

extern "C" __global__ void k5_reg_tile_2d(SGEMM_KERNEL_PARAMS) {
    __shared__ float Ads[K5_BK][K5_BM];  // transposed: Ads[k][m]
    __shared__ float Bds[K5_BK][K5_BN];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * 32 + tx;
    const int row0 = blockIdx.y * K5_BM;
    const int col0 = blockIdx.x * K5_BN;
    const int i0 = ty * K5_TM;

    float acc[K5_TM][K5_TN];
#pragma unroll
    for (int r = 0; r < K5_TM; ++r)
#pragma unroll
        for (int c = 0; c < K5_TN; ++c) acc[r][c] = 0.0f;

    for (int ph = 0; ph < K; ph += K5_BK) {
        // A: 8 elements per thread, lanes along a row of A (coalesced), stored transposed
#pragma unroll
        for (int i = 0; i < K5_BM * K5_BK / K5_THREADS; ++i) {
            const int m = ty + K5_ROWS * i;
            const int am = row0 + m, ak = ph + tx;
            Ads[tx][m] = (am < M && ak < K) ? A[am * K + ak] : 0.0f;
        }
        // B: 32 elements per thread, one tile column per thread (coalesced across lanes)
#pragma unroll
        for (int k = 0; k < K5_BK; ++k) {
            const int bk = ph + k, bn = col0 + tid;
            Bds[k][tid] = (bk < K && bn < N) ? B[bk * N + bn] : 0.0f;
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < K5_BK; ++k) {
            float m[K5_TM], n[K5_TN];
#pragma unroll
            for (int r = 0; r < K5_TM; ++r) m[r] = Ads[k][i0 + r];  // broadcast
#pragma unroll
            for (int c = 0; c < K5_TN; ++c) n[c] = Bds[k][tx + 32 * c];  // 32-way
#pragma unroll
            for (int r = 0; r < K5_TM; ++r)
#pragma unroll
                for (int c = 0; c < K5_TN; ++c) acc[r][c] += m[r] * n[c];
        }
        __syncthreads();
    }

#pragma unroll
    for (int r = 0; r < K5_TM; ++r) {
        const int row = row0 + i0 + r;
#pragma unroll
        for (int c = 0; c < K5_TN; ++c) {
            const int col = col0 + tx + 32 * c;
            if (row < M && col < N) sgemm_store(C, row * N + col, alpha, acc[r][c], beta);
        }
    }
}

void launch_k5_reg_tile_2d(int M, int N, int K, float alpha, const float *A, const float *B,
                           float beta, float *C, cudaStream_t stream) {
    const dim3 block(32, K5_ROWS);
    const dim3 grid(sgemm_cdiv(N, K5_BN), sgemm_cdiv(M, K5_BM));
    k5_reg_tile_2d<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k5_reg_tile_2d, K5_BM, K5_BN, K5_BK, K5_THREADS, SGEMM_PLAIN)
