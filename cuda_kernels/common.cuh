// Shared declarations for the SGEMM study kernels.
//
// Every kernel computes C = alpha * A @ B + beta * C on row-major matrices
// (A is M x K, B is K x N, C is M x N). Each .cu file holds one kernel, its host launcher
// and one SGEMM_REGISTER line: nothing else lists the kernels.
// Only CUDA headers here: every .cu must compile standalone with `nvcc -cubin`.
#pragma once

#include <cuda_runtime.h>

#define SGEMM_KERNEL_PARAMS                                                        \
    int M, int N, int K, float alpha, const float *__restrict__ A,                 \
        const float *__restrict__ B, float beta, float *__restrict__ C

// What a kernel needs of its operands and of the device; SGEMM_REGISTER's FLAGS is an OR of these.
#define SGEMM_PLAIN 0      // any shape, any float32 pointers
#define SGEMM_VEC4 1       // N and K multiples of 4, 16-byte aligned pointers: 128-bit loads
#define SGEMM_Y_WALKS_N 2  // gridDim.y walks the columns of C (K1), not its rows
#define SGEMM_SM90 4       // needs compute capability >= 9.0 (TMA, clusters, setmaxnreg)
#define SGEMM_BALANCED 8   // a 1-D grid whose blocks share the tiles' work so that the SMs finish together
#define SGEMM_SM90A 16     // needs wgmma: compute capability 9.0 exactly, built as sm_90a

// A kernel's host launcher, `void launch_<symbol>(...)`, written in the kernel's own .cu.
typedef void (*SgemmLaunch)(int M, int N, int K, float alpha, const float *A, const float *B,
                            float beta, float *C, cudaStream_t stream);

// One kernel as the bindings see it: the facts its SGEMM_REGISTER line states.
struct SgemmKernelInfo {
    const char *symbol;  // the extern "C" __global__ name, as in SASS; also the binding's name
    SgemmLaunch launch;
    int bm, bn;          // rows x columns of C one block computes
    int bk;              // K-tile staged in shared memory; 0 when there is none (K1, K2)
    int threads;         // threads per block
    int flags;           // SGEMM_PLAIN | SGEMM_VEC4 | SGEMM_Y_WALKS_N | SGEMM_SM90 | SGEMM_BALANCED | SGEMM_SM90A
};

// Adds a kernel to the list the bindings iterate (defined in bindings.cpp); returns its index.
int sgemm_register_kernel(const SgemmKernelInfo &info);

// SGEMM_REGISTER(symbol, BM, BN, BK, THREADS, FLAGS): once at the end of each .cu, after
// launch_<symbol>. study/kernels.py reads the same line (through the file's #defines), so this
// line is the only place these facts are written. Host pass: a static registration that runs
// when the extension loads. Device pass and `nvcc -cubin`: nothing.
#ifndef __CUDA_ARCH__
#define SGEMM_REGISTER(sym, bm, bn, bk, threads, flags)                                  \
    [[maybe_unused]] static const int sgemm_registered_##sym = sgemm_register_kernel(    \
        SgemmKernelInfo{#sym, launch_##sym, (bm), (bn), (bk), (threads), (flags)});
#else
#define SGEMM_REGISTER(sym, bm, bn, bk, threads, flags)
#endif

__host__ __device__ static inline int sgemm_cdiv(int a, int b) { return (a + b - 1) / b; }

// A launch that splits K across blocks so that the grid keeps enough loads in flight (KD's
// streaming GEMV): each output tile gets `splits` blocks along K, and the kernel takes
// SGEMM_SPLIT_K_PARAMS (the split count, then the workspace of the parts and the tiles' tickets).
// SGEMM_SPLIT_K(symbol, BLOCK_BYTES, INFLIGHT_BYTES, MAX_SPLITS, CHUNK_K), in the .cu before its
// launcher, states the rule's terms once: the launcher reads them from the constant it defines,
// and study/kernels/registration.py reads the same line so that a prediction launches the grid
// the launcher does (SplitK.count there is sgemm_split_count here; a CPU test compiles this one
// and compares them).
#define SGEMM_SPLIT_K_PARAMS \
    SGEMM_KERNEL_PARAMS, int splits, float *__restrict__ ws, unsigned *__restrict__ tickets

struct SgemmSplitK {
    long long block_bytes;     // bytes of loads one block keeps in flight
    long long inflight_bytes;  // bytes in flight per SM that the splits bring the grid to
    int max_splits;            // the most splits of K
    int chunk_k;               // the least K a split takes (one staged chunk of A)
};

// The splits for `tiles` output tiles on `sms` SMs at this K: the fewest whose blocks' loads in
// flight reach inflight_bytes per SM, at most max_splits and one chunk_k of K per split, at least 1.
static inline int sgemm_split_count(const SgemmSplitK &s, long long tiles, int sms, int K) {
    const long long want = (s.inflight_bytes * sms + s.block_bytes - 1) / s.block_bytes;
    long long splits = (want + tiles - 1) / tiles;
    const int most = s.max_splits < sgemm_cdiv(K, s.chunk_k) ? s.max_splits : sgemm_cdiv(K, s.chunk_k);
    if (splits > most) splits = most;
    return splits < 1 ? 1 : (int)splits;
}

#define SGEMM_SPLIT_K(sym, block_bytes, inflight_bytes, max_splits, chunk_k)      \
    [[maybe_unused]] static constexpr SgemmSplitK sgemm_split_##sym{(block_bytes), \
                                                                    (inflight_bytes), (max_splits), (chunk_k)};

// Lets `kernel` take `bytes` of dynamic shared memory on the current device: past the default
// 48 KiB a kernel must opt in, with a function attribute that lasts as long as the device's
// context. `allowed` is the calling launcher's record of what each device allows already, so the
// driver call is made once per device rather than on every launch, where it is a host cost of its
// own (a failed call is not recorded: the launch then fails and says why).
static inline void sgemm_allow_smem(const void *kernel, int bytes, int (&allowed)[64]) {
    if (bytes <= 48 * 1024) return;
    int dev = 0;
    cudaGetDevice(&dev);
    int &done = allowed[dev % 64];
    if (done < bytes &&
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) == cudaSuccess)
        done = bytes;
}

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

// The same for four consecutive outputs C[idx .. idx + 3] (idx a multiple of 4: one STG.128).
// K6-K10 keep their own copy of this epilogue: written with this function, ptxas schedules
// them differently and they run slower (docs/notes/common.md).
__device__ __forceinline__ void sgemm_store4(float *__restrict__ C, size_t idx, float alpha,
                                             float4 acc, float beta) {
    float4 v = make_float4(alpha * acc.x, alpha * acc.y, alpha * acc.z, alpha * acc.w);
    if (beta != 0.0f) {
        const float4 old = *reinterpret_cast<const float4 *>(C + idx);
        v.x += beta * old.x;
        v.y += beta * old.y;
        v.z += beta * old.z;
        v.w += beta * old.w;
    }
    *reinterpret_cast<float4 *>(C + idx) = v;
}
#endif
