// K3c: K3 plus thread coarsening, COARSE = 4.
// A thread keeps one row and computes 4 outputs, one per 32-wide column tile, so the
// A tile (Mds) is loaded once per phase and reused for 4 B tiles: 5 global loads per
// phase instead of 8. The inner loop is exactly K3's.
#include "common.cuh"

#define K3C_TILE 32
#define K3C_COARSE 4

extern "C" __global__ void k3c_coarsened(SGEMM_KERNEL_PARAMS) {
    __shared__ float Mds[K3C_TILE][K3C_TILE];
    __shared__ float Nds[K3C_TILE][K3C_TILE];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * K3C_TILE + ty;
    const int col0 = blockIdx.x * (K3C_TILE * K3C_COARSE) + tx;  // column in tile c: col0 + 32c

    float acc[K3C_COARSE];
#pragma unroll
    for (int c = 0; c < K3C_COARSE; ++c) acc[c] = 0.0f;

    for (int ph = 0; ph < K; ph += K3C_TILE) {
        const int ak = ph + tx, bk = ph + ty;
        // the previous phase ended on a barrier, so Mds is free to overwrite
        Mds[ty][tx] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;

#pragma unroll
        for (int c = 0; c < K3C_COARSE; ++c) {
            const int col = col0 + c * K3C_TILE;
            Nds[ty][tx] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
            __syncthreads();

#pragma unroll
            for (int k = 0; k < K3C_TILE; ++k) {
                acc[c] += Mds[ty][k] * Nds[k][tx];  // broadcast, 32-way
            }
            __syncthreads();
        }
    }

    if (row < M) {
#pragma unroll
        for (int c = 0; c < K3C_COARSE; ++c) {
            const int col = col0 + c * K3C_TILE;
            if (col < N) sgemm_store(C, row * N + col, alpha, acc[c], beta);
        }
    }
}

void launch_k3c_coarsened(int M, int N, int K, float alpha, const float *A, const float *B,
                          float beta, float *C, cudaStream_t stream) {
    const dim3 block(K3C_TILE, K3C_TILE);
    const dim3 grid(sgemm_cdiv(N, K3C_TILE * K3C_COARSE), sgemm_cdiv(M, K3C_TILE));
    k3c_coarsened<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k3c_coarsened, K3C_TILE, K3C_TILE * K3C_COARSE, K3C_TILE, K3C_TILE * K3C_TILE,
               SGEMM_PLAIN)
