// The PTX K12's tile (k12_tile.cuh) issues through: shared-window addresses, asynchronous copies
// of 4 or 16 bytes and their wait, 16-byte shared loads, and a 64-bit address formed by one
// mad.wide.u32.
#pragma once
#include <stdint.h>

// 32-bit shared-window address of a generic pointer into shared memory.
__device__ __forceinline__ uint32_t k12_saddr(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// cp.async of 4 bytes (through L1) or 16 (L2 only); src_bytes 0 writes zeros and reads nothing.
__device__ __forceinline__ void k12_copy4(uint32_t dst, const float *src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void k12_copy16(uint32_t dst, const float *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
template <int V>
__device__ __forceinline__ void k12_copy(uint32_t dst, const float *src, bool in) {
    if constexpr (V == 4) k12_copy16(dst, src, in ? 16 : 0);
    else k12_copy4(dst, src, in ? 4 : 0);
}
// base + a * b bytes, a and b unsigned 32-bit, as one mad.wide.u32 (exact: the product is 64-bit).
__device__ __forceinline__ const float *k12_at(const float *base, uint32_t a, uint32_t b) {
    const float *p;
    asm("mad.wide.u32 %0, %1, %2, %3;\n" : "=l"(p) : "r"(a), "r"(b), "l"(base));
    return p;
}
__device__ __forceinline__ void k12_copies_landed() {
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}
__device__ __forceinline__ void k12_lds4(float *v, uint32_t addr) {
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
                 : "r"(addr));
}
