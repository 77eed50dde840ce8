// One variant of KD's streaming GEMV as a shared library: kd_gemv_stream.cu built with the -D
// parameters of the sweep, its launchers behind one C entry (kdv) that ctypes calls.
#include "common.cuh"
#undef SGEMM_REGISTER
#define SGEMM_REGISTER(...)
#ifndef KDV_HINT
#define KDV_HINT 0
#endif
#if KDV_HINT == 1  // no L1 allocation, 256-byte L2 prefetch
#define KDV_LD "ld.global.nc.L1::no_allocate.L2::256B.v4.f32"
#elif KDV_HINT == 2  // no L1 allocation only
#define KDV_LD "ld.global.nc.L1::no_allocate.v4.f32"
#endif
#ifdef KDV_LD
__device__ __forceinline__ float4 kdv_load(const float4 *p) {
    float4 v;
    asm(KDV_LD " {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}
#define KD_LOAD_B(p) kdv_load(p)
#endif
#include "kd_gemv_stream.cu"

extern "C" int kdv(int mt, int M, int N, int K, const float *A, const float *B, float *C, void *stream) {
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (mt) {
        case 1: launch_kd_gemv_m1(M, N, K, 1.0f, A, B, 0.0f, C, s); break;
        case 2: launch_kd_gemv_m2(M, N, K, 1.0f, A, B, 0.0f, C, s); break;
        case 4: launch_kd_gemv_m4(M, N, K, 1.0f, A, B, 0.0f, C, s); break;
        case 8: launch_kd_gemv_m8(M, N, K, 1.0f, A, B, 0.0f, C, s); break;
        default: return -1;
    }
    return static_cast<int>(cudaGetLastError());
}
