// K12: the lean issue stream. One block per 128 x 256 tile of C runs K12's block tile
// (k12_tile.cuh: why its instruction stream is lean, its parameters and where the default comes
// from) over the whole of K and stores it.
#include "k12_tile.cuh"

extern "C" __global__ void K12_BOUNDS k12_lean_issue(SGEMM_KERNEL_PARAMS) {
    extern __shared__ __align__(16) unsigned char k12_smem[];
    k12_block(M, N, K, alpha, A, B, beta, C, k12_smem);
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
