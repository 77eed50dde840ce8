// K3: shared-memory tiling, TILE = 32, one output per thread.
// Each phase stages a 32x32 tile of A (Mds) and of B (Nds); every element fetched from
// global memory is then reused 32 times from shared memory.
#include "common.cuh"

#define K3_TILE 32

extern "C" __global__ void k3_smem_tile(SGEMM_KERNEL_PARAMS) {
    __shared__ float Mds[K3_TILE][K3_TILE];
    __shared__ float Nds[K3_TILE][K3_TILE];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * K3_TILE + ty;
    const int col = blockIdx.x * K3_TILE + tx;

    float acc = 0.0f;
    for (int ph = 0; ph < K; ph += K3_TILE) {
        // one A and one B element per thread; zeros outside the matrices
        const int ak = ph + tx, bk = ph + ty;
        Mds[ty][tx] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
        Nds[ty][tx] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
        __syncthreads();

#pragma unroll
        for (int k = 0; k < K3_TILE; ++k) {
            acc += Mds[ty][k] * Nds[k][tx];  // broadcast, 32-way
        }
        __syncthreads();
    }
    if (row < M && col < N) sgemm_store(C, row * N + col, alpha, acc, beta);
}

void launch_k3_smem_tile(int M, int N, int K, float alpha, const float *A, const float *B,
                         float beta, float *C, cudaStream_t stream) {
    const dim3 block(K3_TILE, K3_TILE);
    const dim3 grid(sgemm_cdiv(N, K3_TILE), sgemm_cdiv(M, K3_TILE));
    k3_smem_tile<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k3_smem_tile, K3_TILE, K3_TILE, K3_TILE, K3_TILE * K3_TILE, SGEMM_PLAIN)
