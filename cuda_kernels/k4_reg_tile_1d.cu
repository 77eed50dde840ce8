// K4: 1-D register tiling. 128 threads (32 x 4) cover a 32x32 block tile; a thread owns
// 8 consecutive rows (i0 = 8*ty) of column tx. Per k-step one Nds value is read once and
// reused from a register for 8 FMAs; the 8 Mds values are warp-wide broadcasts.
#include "common.cuh"

#define K4_BM 32
#define K4_BN 32
#define K4_BK 32
#define K4_TM 8                       // rows per thread
#define K4_ROWS (K4_BM / K4_TM)       // blockDim.y = 4

extern "C" __global__ void k4_reg_tile_1d(SGEMM_KERNEL_PARAMS) {
    __shared__ float Mds[K4_BM][K4_BK];
    __shared__ float Nds[K4_BK][K4_BN];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * K4_BM;
    const int col = blockIdx.x * K4_BN + tx;
    const int i0 = ty * K4_TM;

    float acc[K4_TM];
#pragma unroll
    for (int r = 0; r < K4_TM; ++r) acc[r] = 0.0f;

    for (int ph = 0; ph < K; ph += K4_BK) {
        // 8 A + 8 B elements per thread: tile row ty + 4i, lanes along the row
#pragma unroll
        for (int i = 0; i < K4_TM; ++i) {
            const int t = ty + K4_ROWS * i;
            const int am = row0 + t, ak = ph + tx;
            Mds[t][tx] = (am < M && ak < K) ? A[am * K + ak] : 0.0f;
            const int bk = ph + t;
            Nds[t][tx] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < K4_BK; ++k) {
            const float n = Nds[k][tx];  // 32-way, reused 8 times
#pragma unroll
            for (int r = 0; r < K4_TM; ++r) {
                acc[r] += Mds[i0 + r][k] * n;  // broadcast
            }
        }
        __syncthreads();
    }

    if (col < N) {
#pragma unroll
        for (int r = 0; r < K4_TM; ++r) {
            const int row = row0 + i0 + r;
            if (row < M) sgemm_store(C, row * N + col, alpha, acc[r], beta);
        }
    }
}

void launch_k4_reg_tile_1d(int M, int N, int K, float alpha, const float *A, const float *B,
                           float beta, float *C, cudaStream_t stream) {
    const dim3 block(K4_BN, K4_ROWS);
    const dim3 grid(sgemm_cdiv(N, K4_BN), sgemm_cdiv(M, K4_BM));
    k4_reg_tile_1d<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k4_reg_tile_1d, K4_BM, K4_BN, K4_BK, K4_BN * K4_ROWS, SGEMM_PLAIN)
