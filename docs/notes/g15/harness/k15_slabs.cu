// Probe: K15 (K12's tile, B copied 16 bytes at a time) with A laid out as G15 lays it out: each
// stage holds A's K-tile as 4 row-major [128 x 4] slabs (one per 4 values of k), copied 16 bytes
// per lane untransposed, and a thread reads the 4 values of k of each of its 16 rows with one
// LDS.128 once every 4 k-steps. Everything else is K15's: lane map, B's copies and loads, copies
// spread over the first COPY_STEPS k-steps, the stage switch by XOR, the ragged end of K first.
// The question it answers: does a CUDA kernel whose FFMAs take a k-step's A operands from one
// element of 16 register quads wait on dispatch as G15 does (docs/notes/g15.md)?
// Built from the repository root: nvcc -cubin -O3 -std=c++17 -arch=sm_90 -I cuda_kernels ...
// N and K multiples of 4, 16-byte aligned operands, M any.
#define K12_B_VEC 4
#include "k12_tile.cuh"

#define S_KG 4                                   // values of k per slab
#define S_G (K12_BK / S_KG)                      // slabs per stage
#define S_A_COPIES (K12_BM * S_G / K12_THREADS)  // 16-byte copies of A per thread per phase

__device__ __forceinline__ void s_tile(float (&acc)[K12_TM][K12_TN], int M, int N, int K, int lda,
                                       const float *__restrict__ A, const float *__restrict__ B,
                                       int row0, int col0, unsigned char *smem) {
    const uint32_t raw = k12_saddr(smem);
    const uint32_t base = (raw + 2 * K12_STRIDE - 1) & ~uint32_t(2 * K12_STRIDE - 1);
    const uint32_t a_stage0 = base, b_stage0 = base + 2 * K12_STRIDE;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int lx = (lane & 1) | (((lane >> 2) & (K12_LN / 2 - 1)) << 1);
    const int ly = ((lane >> 1) & 1) | ((lane / (2 * K12_LN)) << 1);
    const int tm = (warp / K12_WARPS_N) * K12_WM + 4 * ly;
    const int tn = (warp % K12_WARPS_N) * K12_WN + 4 * lx;
    // slab g, row m at a_stage + 16 * (g * BM + m)
    uint32_t a_lds = a_stage0 + 16 * tm;
    uint32_t b_lds = b_stage0 + 4 * tn;
    // copy c of A: rows (lane & 7) + 8 * warp + 64 * c, slab lane >> 3 (8 lanes to a 128-byte line)
    const int a_g = lane >> 3, a_m = (lane & 7) + 8 * warp;
    constexpr int A_ROW_STEP = 8 * K12_THREADS / 32;
    uint32_t a_sts = a_stage0 + 16 * (a_g * K12_BM + a_m);
    constexpr int V = 4, BNV = K12_BN / V;
    constexpr int B_ROW_STEP = K12_THREADS / BNV;
    const int b_k = tid / BNV, b_n = V * (tid % BNV);
    uint32_t b_sts = b_stage0 + 4 * (b_k * K12_BN + b_n);

    const int phases = (K + K12_BK - 1) / K12_BK;
    const int k_first = K - K12_BK * (phases - 1);
    const float *a_src[S_A_COPIES];
#pragma unroll
    for (int c = 0; c < S_A_COPIES; ++c)
        a_src[c] = A + (size_t)min(row0 + a_m + A_ROW_STEP * c, M - 1) * lda + S_KG * a_g;
    const float *b_src = B + (size_t)b_k * N + min(col0 + b_n, N - V);

    auto issue = [&](int slot) {
#pragma unroll
        for (int c = 0; c < S_A_COPIES; ++c)
            if (c % K12_COPY_STEPS == slot) k12_copy16(a_sts + 16 * A_ROW_STEP * c, a_src[c], 16);
#pragma unroll
        for (int c = 0; c < K12_B_COPIES; ++c)
            if (c % K12_COPY_STEPS == slot)
                k12_copy16(b_sts + 4 * (B_ROW_STEP * c * K12_BN), b_src + (size_t)B_ROW_STEP * c * N, 16);
    };
    auto issue_first = [&]() {
#pragma unroll
        for (int c = 0; c < S_A_COPIES; ++c) {
            const bool in = S_KG * a_g < k_first;
            k12_copy16(a_sts + 16 * A_ROW_STEP * c, a_src[c] - (in ? 0 : S_KG * a_g), in ? 16 : 0);
        }
#pragma unroll
        for (int c = 0; c < K12_B_COPIES; ++c) {
            const bool in = b_k + B_ROW_STEP * c < k_first;
            k12_copy16(b_sts + 4 * (B_ROW_STEP * c * K12_BN),
                       b_src - (size_t)b_k * N + (in ? (size_t)(b_k + B_ROW_STEP * c) * N : 0), in ? 16 : 0);
        }
    };
    auto advance = [&](int dk) {
#pragma unroll
        for (int c = 0; c < S_A_COPIES; ++c) a_src[c] += dk;
        b_src += (size_t)dk * N;
    };

    float fa[K12_TM][S_KG], fb[2][K12_TN];
    auto load_slab = [&](int g) {
#pragma unroll
        for (int i = 0; i < K12_TM / 4; ++i)
#pragma unroll
            for (int r = 0; r < 4; ++r) k12_lds4(fa[4 * i + r], a_lds + 16 * (g * K12_BM + 4 * K12_LM * i + r));
    };
    auto load_b = [&](int buf, int k) {
#pragma unroll
        for (int j = 0; j < K12_TN / 4; ++j) k12_lds4(&fb[buf][4 * j], b_lds + 4 * (k * K12_BN + 4 * K12_LN * j));
    };
    auto fma_step = [&](int buf, int t) {
#pragma unroll
        for (int r = 0; r < K12_TM; ++r)
#pragma unroll
            for (int c = 0; c < K12_TN; ++c) acc[r][c] += fa[r][t] * fb[buf][c];
    };

    issue_first();
    advance(k_first);
    k12_copies_landed();
    __syncthreads();
    a_sts ^= K12_STRIDE;
    b_sts ^= K12_STRIDE;
    load_slab(0);
    load_b(0, 0);
    for (int p = 1; p < phases; ++p) {
#pragma unroll
        for (int k = 0; k < K12_BK; ++k) {
            if (k == K12_BK - 1) {
                k12_copies_landed();
                __syncthreads();
                a_lds ^= K12_STRIDE;
                b_lds ^= K12_STRIDE;
                a_sts ^= K12_STRIDE;
                b_sts ^= K12_STRIDE;
                advance(K12_BK);
            }
            load_b((k + 1) % 2, (k + 1) % K12_BK);
            if (k < K12_COPY_STEPS) issue(k);
            fma_step(k % 2, k % S_KG);
            if (k % S_KG == S_KG - 1) load_slab(((k + 1) % K12_BK) / S_KG);
        }
    }
#pragma unroll
    for (int k = 0; k < K12_BK; ++k) {
        if (k < K12_BK - 1) load_b((k + 1) % 2, k + 1);
        fma_step(k % 2, k % S_KG);
        if (k % S_KG == S_KG - 1 && k < K12_BK - 1) load_slab((k + 1) / S_KG);
    }
}

extern "C" __global__ void K12_BOUNDS k15_slabs(SGEMM_KERNEL_PARAMS) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int row0 = blockIdx.y * K12_BM, col0 = blockIdx.x * K12_BN;
    float acc[K12_TM][K12_TN];
#pragma unroll
    for (int r = 0; r < K12_TM; ++r)
#pragma unroll
        for (int c = 0; c < K12_TN; ++c) acc[r][c] = 0.0f;
    s_tile(acc, M, N, K, K, A, B, row0, col0, smem);
    k12_store(acc, M, N, alpha, beta, C, row0, col0);
}
