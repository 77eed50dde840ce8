// K1: naive SGEMM, one output per thread, row taken from threadIdx.x.
// Neighbouring lanes walk neighbouring rows of A (stride K floats apart): every warp
// load of A touches 32 different segments, while B[k*N + col] is one broadcast.
#include "common.cuh"

extern "C" __global__ void k1_naive(SGEMM_KERNEL_PARAMS) {
    const int row = blockIdx.x * 32 + threadIdx.x;  // uncoalesced on purpose
    const int col = blockIdx.y * 32 + threadIdx.y;
    if (row >= M || col >= N) return;

    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += A[row * K + k] * B[k * N + col];
    }
    sgemm_store(C, row * N + col, alpha, acc, beta);
}

void launch_k1_naive(int M, int N, int K, float alpha, const float *A, const float *B,
                     float beta, float *C, cudaStream_t stream) {
    const dim3 block(32, 32);
    const dim3 grid(sgemm_cdiv(M, 32), sgemm_cdiv(N, 32));  // x walks rows here
    k1_naive<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k1_naive, 32, 32, 0, 32 * 32, SGEMM_Y_WALKS_N)
