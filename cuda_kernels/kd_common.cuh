// What KD's two paths share: the integer ticket by which the last block of an output tile adds
// the tile's parts of K, and the per-device workspace that holds those parts and tickets. The
// streaming GEMV (kd_gemv_stream.cu) and the tiled decode GEMM (kd_gemm_tiled.cu) both split K
// across blocks where the output tiles alone would leave SMs idle; each block leaves its part in
// the workspace and the block that brings a tile's last part sums them in the order of K, so the
// result is the same bit for bit from run to run (no float atomics).
#pragma once

#include "common.cuh"

#include <stddef.h>

#ifdef __CUDACC__
// The ticket of a tile whose parts are summed by the block that brings the last one: one thread
// of the block takes it after a barrier that follows the block's stores of its part, and the
// block's loads of the other parts follow a barrier after it. The release fence before the count
// makes the block's part (ordered before it by the barrier) visible before the count is; the
// acquire fence after it, the other blocks' parts before this block loads them: a release /
// acquire pair at GPU scope in one thread, where __threadfence in every thread would be a
// sequentially consistent fence (fence.sc.gpu) each. True for the block that brings part
// `last` + 1 of them.
__device__ __forceinline__ bool kd_ticket(unsigned *ticket, unsigned last) {
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
    const bool is_last = atomicAdd(ticket, 1u) == last;
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
    return is_last;
}
#endif

// Per device: the parts of K (grown on demand), one zeroed ticket per output tile (each launch
// leaves them zero again) and the SM count. One workspace per device for every KD kernel (an
// inline variable: the files that include this share it), so one launch at a time per device:
// two streams running KD at once would share it.
struct KdWorkspace {
    float *ws = nullptr;
    size_t ws_bytes = 0;
    unsigned *tickets = nullptr;
    size_t n_tickets = 0;
    int sms = 0;
};
inline KdWorkspace kd_workspace[64];

// The current device's workspace, its SM count read once.
static inline KdWorkspace &kd_device(int *dev_out = nullptr) {
    int dev = 0;
    cudaGetDevice(&dev);
    KdWorkspace &w = kd_workspace[dev % 64];
    if (!w.sms) cudaDeviceGetAttribute(&w.sms, cudaDevAttrMultiProcessorCount, dev);
    if (dev_out) *dev_out = dev;
    return w;
}

// Room for `bytes` of parts and `tiles` tickets; false when the device has no memory left
// (cudaMalloc's error is then the one the binding reads; the freed buffer is forgotten, so a later
// call allocates afresh).
static inline bool kd_reserve(KdWorkspace &w, size_t bytes, size_t tiles, cudaStream_t stream) {
    if (bytes > w.ws_bytes) {
        cudaFree(w.ws);
        if (cudaMalloc(&w.ws, bytes) != cudaSuccess) w.ws = nullptr;
        w.ws_bytes = w.ws ? bytes : 0;
    }
    if (tiles > w.n_tickets) {
        cudaFree(w.tickets);
        if (cudaMalloc(&w.tickets, tiles * sizeof(unsigned)) != cudaSuccess) w.tickets = nullptr;
        w.n_tickets = w.tickets ? tiles : 0;
        if (w.n_tickets) cudaMemsetAsync(w.tickets, 0, tiles * sizeof(unsigned), stream);
    }
    return w.ws_bytes >= bytes && w.n_tickets >= tiles;
}
