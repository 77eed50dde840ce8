// An experiment, not a kernel of the study: the GEMV y = x B (x of K, B K x N row-major) with B
// streamed by the copy engine. One block per column slab of KB_BN columns over all of K (no
// split, no sum of parts); a producer warp issues tensor copies of KB_ROWS x KB_BN boxes of B into
// KB_STAGES shared stages, counted on each stage's full barrier; KB_THREADS consumer threads read
// a stage (float4 columns, row groups), multiply by x staged in shared memory, and arrive on the
// stage's empty barrier, which the producer waits on before refilling it. The row groups' sums
// meet in shared memory at the end, in a fixed order. Built by kd_bulk.py into a shared library
// with one C entry (kdb).
#include "tma.cuh"

#ifndef KB_BN
#define KB_BN 32
#endif
#ifndef KB_ROWS
#define KB_ROWS 128
#endif
#ifndef KB_STAGES
#define KB_STAGES 6
#endif
#ifndef KB_THREADS
#define KB_THREADS 256
#endif

constexpr int KB_CG = KB_BN / 4;              // float4 columns of a slab
constexpr int KB_RG = KB_THREADS / KB_CG;     // row groups
constexpr int KB_STAGE_FLOATS = KB_ROWS * KB_BN;
static_assert(KB_THREADS % KB_CG == 0 && KB_ROWS % KB_RG == 0, "whole row groups");

__global__ void __launch_bounds__(KB_THREADS + 32)
    kd_bulk(int N, int K, const float *__restrict__ x, const __grid_constant__ CUtensorMap map_b,
            float *__restrict__ y) {
    extern __shared__ __align__(128) float kb_smem[];
    __shared__ __align__(8) uint64_t bars[2 * KB_STAGES];
    float *stages = kb_smem;
    float *xs = kb_smem + KB_STAGES * KB_STAGE_FLOATS;
    const int tiles = (K + KB_ROWS - 1) / KB_ROWS;
    const int n0 = blockIdx.x * KB_BN;
    auto full = [&](int s) { return tma_saddr(&bars[s]); };
    auto empty = [&](int s) { return tma_saddr(&bars[KB_STAGES + s]); };
    if (threadIdx.x == 0) {
        for (int s = 0; s < KB_STAGES; ++s) {
            mbar_init(full(s), 1);
            mbar_init(empty(s), KB_THREADS);
        }
        mbar_init_fence();
    }
    __syncthreads();
    if (threadIdx.x >= KB_THREADS) {  // the producer warp: one thread issues every copy
        if (threadIdx.x == KB_THREADS) {
            for (int t = 0; t < tiles; ++t) {
                const int s = t % KB_STAGES;
                if (t >= KB_STAGES) mbar_wait(empty(s), ((t / KB_STAGES) - 1) & 1);
                mbar_expect(full(s), KB_STAGE_FLOATS * 4);
                tma_load_2d(tma_saddr(stages + s * KB_STAGE_FLOATS), &map_b, n0, t * KB_ROWS, full(s));
            }
        }
        return;
    }
    for (int i = threadIdx.x; i < tiles * KB_ROWS; i += KB_THREADS) xs[i] = i < K ? x[i] : 0.0f;
    asm volatile("bar.sync 1, %0;\n" ::"r"(KB_THREADS) : "memory");  // the consumers only
    const int cg = threadIdx.x % KB_CG, rg = threadIdx.x / KB_CG;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int t = 0; t < tiles; ++t) {
        const int s = t % KB_STAGES;
        mbar_wait(full(s), (t / KB_STAGES) & 1);
        const float *st = stages + s * KB_STAGE_FLOATS;
        const float *xt = xs + t * KB_ROWS;
#pragma unroll
        for (int r = rg; r < KB_ROWS; r += KB_RG) {
            const float4 b = *reinterpret_cast<const float4 *>(st + r * KB_BN + 4 * cg);
            const float a = xt[r];
            acc.x = fmaf(a, b.x, acc.x);
            acc.y = fmaf(a, b.y, acc.y);
            acc.z = fmaf(a, b.z, acc.z);
            acc.w = fmaf(a, b.w, acc.w);
        }
        mbar_arrive(empty(s));
    }
    // the row groups' sums, in order, through the first stage (every copy has landed and been read)
    asm volatile("bar.sync 1, %0;\n" ::"r"(KB_THREADS) : "memory");
    float4 *part = reinterpret_cast<float4 *>(stages);
    part[rg * KB_CG + cg] = acc;
    asm volatile("bar.sync 1, %0;\n" ::"r"(KB_THREADS) : "memory");
    if (rg == 0 && n0 + 4 * cg < N) {
        float4 s4 = part[cg];
        for (int g = 1; g < KB_RG; ++g) {
            const float4 p = part[g * KB_CG + cg];
            s4.x += p.x;
            s4.y += p.y;
            s4.z += p.z;
            s4.w += p.w;
        }
        *reinterpret_cast<float4 *>(y + n0 + 4 * cg) = s4;
    }
}

extern "C" int kdb(int N, int K, const float *x, const float *B, float *y, void *stream) {
    static TmaEncode encode = tma_encoder();
    CUtensorMap map_b;
    if (!encode || !tma_map(encode, &map_b, B, K, N, KB_ROWS, KB_BN)) return -2;
    const int tiles = (K + KB_ROWS - 1) / KB_ROWS;
    const size_t smem = (size_t)(KB_STAGES * KB_STAGE_FLOATS + tiles * KB_ROWS) * sizeof(float);
    if (cudaFuncSetAttribute(kd_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess)
        return -3;
    kd_bulk<<<(N + KB_BN - 1) / KB_BN, KB_THREADS + 32, smem, static_cast<cudaStream_t>(stream)>>>(N, K, x, map_b,
                                                                                                  y);
    return static_cast<int>(cudaGetLastError());
}
