// K15: K12's block tile with B copied 16 bytes at a time. K12 copies B four bytes at a time so
// that any N and any 4-byte-aligned operand take its one path; where N and K are multiples of 4
// and the operands 16-byte aligned (SGEMM_VEC4), one LDGSTS.128 moves what four LDGSTS.32 move:
// per thread and phase 4 copies of B instead of 16, and each holds the path from the SM to L2 for
// one request rather than four. The main loop is otherwise K12's (k12_tile.cuh, K12_B_VEC 4),
// with fewer instructions around its copies:
//  - a thread copies 2 values of k from each of 4 rows of A (K12_A_KL 8) rather than one from each
//    of 8, so its copies of a row share one source pointer and differ by constants;
//  - a copy's source is its base at k = 0 plus the phase's k, formed at the copy into a register
//    pair (K12_COPY_ADDR 1), where 64-bit pointers advanced in halves needed moves to pair them;
//  - a register budget of 248 (K12_MAXNREG): with fewer address registers ptxas's own choice
//    loads some fragments a few instructions before their FFMAs, which two warps a scheduler
//    cannot hide; under this budget it keeps them a k-step ahead.
// The default is the fastest of `python -m study.sweep_cuda --kernel K15 --only
// A_KL,COPY_ADDR,PAD,MAXNREG`. What was tried past K12, kept or not, and what each predicted and
// measured: docs/notes/k15.md.
#ifndef K12_B_VEC
#define K12_B_VEC 4
#endif
#ifndef K12_A_KL
#define K12_A_KL 8
#endif
#ifndef K12_COPY_ADDR
#define K12_COPY_ADDR 1
#endif
#ifndef K12_MAXNREG
#define K12_MAXNREG 248
#endif
#include "k12_tile.cuh"

extern "C" __global__ void K12_BOUNDS k15_wide_copies(SGEMM_KERNEL_PARAMS) {
    extern __shared__ __align__(16) unsigned char k15_smem[];
    k12_block(M, N, K, alpha, A, B, beta, C, k15_smem);
}

void launch_k15_wide_copies(int M, int N, int K, float alpha, const float *A, const float *B,
                            float beta, float *C, cudaStream_t stream) {
    const size_t smem = K12_SMEM_BYTES;
    static int allowed[64];
    sgemm_allow_smem((const void *)k15_wide_copies, (int)smem, allowed);
    const dim3 block(K12_THREADS);
    const dim3 grid(sgemm_cdiv(N, K12_BN), sgemm_cdiv(M, K12_BM));
    k15_wide_copies<<<grid, block, smem, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k15_wide_copies, K12_BM, K12_BN, K12_BK, K12_THREADS, SGEMM_VEC4)
