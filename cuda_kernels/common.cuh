// Shared declarations for the SGEMM study kernels.
//
// Every kernel computes C = alpha * A @ B + beta * C on row-major matrices
// (A is M x K, B is K x N, C is M x N). Each .cu file holds one kernel and its host
// launcher.
// Only CUDA headers here: every .cu must compile standalone with `nvcc -cubin`.
#pragma once

#include <cuda_runtime.h>

#define SGEMM_KERNEL_PARAMS                                                        \
    int M, int N, int K, float alpha, const float *__restrict__ A,                 \
        const float *__restrict__ B, float beta, float *__restrict__ C

// Host side of one kernel: launch it on `stream`.
#define SGEMM_DECLARE(sym)                                                         \
    void launch_##sym(int M, int N, int K, float alpha, const float *A,            \
                      const float *B, float beta, float *C, cudaStream_t stream);

SGEMM_DECLARE(k1_naive)
SGEMM_DECLARE(k2_coalesced)
SGEMM_DECLARE(k3_smem_tile)
SGEMM_DECLARE(k3c_coarsened)
SGEMM_DECLARE(k4_reg_tile_1d)
SGEMM_DECLARE(k5_reg_tile_2d)
SGEMM_DECLARE(k6_vectorized)

static inline int sgemm_cdiv(int a, int b) { return (a + b - 1) / b; }

#ifdef __CUDACC__
// Epilogue for one output: with beta == 0 the old C is never read (BLAS rule; it may
// hold NaN).
__device__ __forceinline__ void sgemm_store(float *__restrict__ C, int idx, float alpha,
                                            float acc, float beta) {
    if (beta == 0.0f) {
        C[idx] = alpha * acc;
    } else {
        C[idx] = alpha * acc + beta * C[idx];
    }
}
#endif
