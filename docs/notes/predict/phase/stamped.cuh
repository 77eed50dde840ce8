// A clock stamp at every block-wide barrier, for a study kernel compiled through this header:
//     #include "stamped.cuh"
//     #include "k6_vectorized.cu"
// Thread (0, 0, 0) of each block writes the SM's clock64 after each __syncthreads (up to
// stamp_cap a block) and its SM id once; the host sets the four globals (phase.py). Co-resident
// blocks' stamps, on one SM's clock, tell how fast each runs beside the others (stamps.py).
#pragma once
#include "common.cuh"

__device__ long long *stamp_at;  // [blocks][stamp_cap]
__device__ int *stamp_count;     // [blocks]: the stamps written
__device__ int *stamp_sm;        // [blocks]
__device__ int stamp_cap;

__device__ __forceinline__ void stamped_sync() {
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
        const long long b = (long long)blockIdx.z * gridDim.y * gridDim.x + blockIdx.y * gridDim.x + blockIdx.x;
        const int n = stamp_count[b]++;  // only this thread of the block writes it
        if (n < stamp_cap) stamp_at[b * stamp_cap + n] = clock64();
        if (n == 0) {
            int id;
            asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
            stamp_sm[b] = id;
        }
    }
}
#define __syncthreads stamped_sync
