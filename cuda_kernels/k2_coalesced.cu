// K2: naive SGEMM with the column taken from threadIdx.x.
// A warp now reads one A value (broadcast) and 32 consecutive B values (one request).
#include "common.cuh"

extern "C" __global__ void k2_coalesced(SGEMM_KERNEL_PARAMS) {
    const int col = blockIdx.x * 32 + threadIdx.x;  // lanes walk a row of B and C
    const int row = blockIdx.y * 32 + threadIdx.y;
    if (row >= M || col >= N) return;

    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += A[row * K + k] * B[k * N + col];
    }
    sgemm_store(C, row * N + col, alpha, acc, beta);
}

void launch_k2_coalesced(int M, int N, int K, float alpha, const float *A, const float *B,
                         float beta, float *C, cudaStream_t stream) {
    const dim3 block(32, 32);
    const dim3 grid(sgemm_cdiv(N, 32), sgemm_cdiv(M, 32));
    k2_coalesced<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k2_coalesced, 32, 32, 0, 32 * 32, SGEMM_PLAIN)
