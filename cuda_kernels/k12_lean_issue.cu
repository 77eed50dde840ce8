// K12: the lean issue stream. One block per 128 x 256 tile of C runs K12's block tile
// (k12_tile.cuh: why its instruction stream is lean, its parameters and where the default comes
// from) over the whole of K and stores it.
#include "k12_tile.cuh"

extern "C" __global__ void K12_BOUNDS k12_lean_issue(SGEMM_KERNEL_PARAMS) {
    extern __shared__ __align__(16) unsigned char k12_smem[];
    const int row0 = blockIdx.y * K12_BM, col0 = blockIdx.x * K12_BN;
    float acc[K12_TM][K12_TN];
#pragma unroll
    for (int r = 0; r < K12_TM; ++r)
#pragma unroll
        for (int c = 0; c < K12_TN; ++c) acc[r][c] = 0.0f;
    k12_tile(acc, M, N, K, K, A, B, row0, col0, k12_smem);
    k12_store(acc, M, N, alpha, beta, C, row0, col0);
}

void launch_k12_lean_issue(int M, int N, int K, float alpha, const float *A, const float *B,
                           float beta, float *C, cudaStream_t stream) {
    const size_t smem = K12_SMEM_BYTES;
    static int allowed[64];
    sgemm_allow_smem((const void *)k12_lean_issue, (int)smem, allowed);
    const dim3 block(K12_THREADS);
    const dim3 grid(sgemm_cdiv(N, K12_BN), sgemm_cdiv(M, K12_BM));
    k12_lean_issue<<<grid, block, smem, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k12_lean_issue, K12_BM, K12_BN, K12_BK, K12_THREADS, SGEMM_PLAIN)
