// K13: the operand tiles are fetched by the copy engine (TMA), so the FMA warps issue no global
// loads at all. K12's FMA warps issue 24 LDGSTS per thread and phase and their address
// arithmetic besides the FFMAs (docs/notes/k13.md); here one thread issues two tensor copies per
// phase (cp.async.bulk.tensor, sm_90: the A box and the B box), and the copy engine counts the
// bytes it writes into the stage's mbarrier (mbarrier::complete_tx). A thread waits on that
// barrier for its stage to land, and arrives on the stage's second barrier once it has read it;
// the copies that refill a stage wait on that one. No __syncthreads in the main loop, and
// STAGES stages deep (the shared memory of one block per SM holds up to 8 of 26 KB).
//  - Refill: phase p refills the stage that phase p - LAG read (so STAGES - LAG phases are in
//    flight ahead of the one being multiplied), at its k-step REFILL_STEP, from thread 0.
//  - Edges: the tensor maps know M, N and K; box elements outside them arrive as zeros, so
//    every shape takes the same path: no guard, no ragged phase, only the stores are guarded.
//  - A tensor copy cannot transpose: A lands row-major. A box of BK + PAD columns (the PAD
//    extra are the next phase's first k, or zeros: never read) makes As[m][k] rows of 20
//    floats, and a thread reads A[m][4g .. 4g + 3] with one LDS.128 (four k-steps' worth of one
//    row): TM LDS.128 per four k-steps, the transposed layout's count. The 4 lane rows of a warp
//    read 4 consecutive rows, an odd number (5) of 16-byte units apart: 4 distinct bank groups,
//    one wavefront. B lands as Bs[k][n], read as in K10 (8 lane columns x 16 bytes: one wavefront).
//  - Thread tile 8 x 16 (TM x TN), not K12's 16 x 8: the A registers of four k-steps are TM x 4,
//    double-buffered 64, the B registers 2 x 16, beside 128 accumulators.
//  - setmaxnreg is not used: with one block of 256 threads per SM every thread may already
//    hold 255 registers; a separate producer warp group would leave the FMA warps fewer
//    (64K registers over 384 threads) unless setmaxnreg moved them back.
// The tensor maps are encoded by the launcher (cuTensorMapEncodeTiled, reached through the
// runtime's cudaGetDriverEntryPointByVersion: no driver library is linked) and passed by value.
// Needs N % 4 == 0, K % 4 == 0 and 16-byte aligned operands (a tensor map's row strides are
// multiples of 16 bytes), and compute capability 9.0 (SGEMM_SM90).
// Per phase and thread the main loop holds 2048 FFMA and 96 LDS.128 and no LDG, LDGSTS or
// barrier; LAG, REFILL_STEP and STAGES set where the single issuing thread's warp is held.
// Parameters (-D overrides): K13_BM, K13_BN, K13_BK, K13_TM, K13_TN, K13_WARPS_M, K13_WARPS_N,
// K13_STAGES, K13_LAG, K13_REFILL_STEP, K13_PAD.
#include "common.cuh"
#include "tma.cuh"  // the TMA and mbarrier helpers, the tensor-map encoder

#include <stdint.h>

#ifndef K13_BM
#define K13_BM 128
#endif
#ifndef K13_BN
#define K13_BN 256
#endif
#ifndef K13_BK
#define K13_BK 16
#endif
#ifndef K13_TM
#define K13_TM 8                        // rows per thread, LM apart
#endif
#ifndef K13_TN
#define K13_TN 16                       // columns per thread: TN / 4 sub-blocks, 4 * LN apart
#endif
#ifndef K13_WARPS_M
#define K13_WARPS_M 4                   // warps down the block tile
#endif
#ifndef K13_WARPS_N
#define K13_WARPS_N 2                   // warps across it
#endif
#ifndef K13_STAGES
#define K13_STAGES 4                    // shared stages
#endif
#ifndef K13_LAG
#define K13_LAG 1                       // phase p refills the stage of phase p - LAG
#endif
#ifndef K13_REFILL_STEP
#define K13_REFILL_STEP 8               // the k-step of a phase that issues its refill
#endif
#ifndef K13_PAD
#define K13_PAD 4                       // extra columns of the A box (floats)
#endif

#define K13_THREADS (K13_WARPS_M * K13_WARPS_N * 32)
#define K13_WM (K13_BM / K13_WARPS_M)   // rows of a warp tile
#define K13_WN (K13_BN / K13_WARPS_N)   // columns of a warp tile
#define K13_LM (K13_WM / K13_TM)        // lane rows in a warp tile
#define K13_LN (K13_WN / K13_TN)        // lane columns
#define K13_AS_LD (K13_BK + K13_PAD)    // As row length (floats): the A box's width
#define K13_A_BYTES (K13_BM * K13_AS_LD * 4)
#define K13_B_BYTES (K13_BK * K13_BN * 4)
#define K13_STAGE_BYTES (K13_A_BYTES + K13_B_BYTES)
#define K13_SMEM_BYTES (K13_STAGES * K13_STAGE_BYTES + 16 * K13_STAGES + 128)  // + barriers, alignment

static_assert(K13_BM % K13_WARPS_M == 0 && K13_BN % K13_WARPS_N == 0, "warps tile the block");
static_assert(K13_TM % 4 == 0 && K13_TN % 4 == 0, "TM rows over 4 k-steps, 4-column sub-blocks");
static_assert(K13_WM % K13_TM == 0 && K13_WN % K13_TN == 0 && K13_LM * K13_LN == 32,
              "32 lanes tile the warp tile");
static_assert(K13_BK % 8 == 0, "BK a multiple of 8: whole, double-buffered groups of 4 k-steps");
static_assert(K13_PAD % 4 == 0 && (K13_AS_LD / 4) % 2 == 1,
              "A rows an odd number of 16-byte units apart: consecutive rows in distinct bank groups");
static_assert(K13_BM <= 256 && K13_BN <= 256 && K13_AS_LD <= 256, "a box is at most 256 elements a side");
static_assert(K13_A_BYTES % 128 == 0 && K13_B_BYTES % 128 == 0, "boxes land 128-byte aligned");
static_assert(K13_STAGES >= 2 && K13_LAG >= 1 && K13_LAG < K13_STAGES, "1 <= LAG < STAGES");
static_assert(K13_REFILL_STEP >= 0 && K13_REFILL_STEP < K13_BK, "refill inside the phase");
static_assert(K13_SMEM_BYTES <= 227 * 1024, "the stages fit in shared memory");

extern "C" __global__ void __launch_bounds__(K13_THREADS, 1)
    k13_tma_stages(SGEMM_KERNEL_PARAMS, const __grid_constant__ CUtensorMap map_a,
                   const __grid_constant__ CUtensorMap map_b) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char k13_smem[];
    // [stage 0: As | Bs][stage 1] ... [full barriers][empty barriers]
    const uint32_t base = (tma_saddr(k13_smem) + 127) & ~uint32_t(127);
    const uint32_t full = base + K13_STAGES * K13_STAGE_BYTES;  // full[s] at full + 8 s
    const uint32_t empty = full + 8 * K13_STAGES;                // empty[s] at empty + 8 s
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * K13_BM, col0 = blockIdx.x * K13_BN;
    const int phases = (K + K13_BK - 1) / K13_BK;

    if (tid == 0) {
        for (int s = 0; s < K13_STAGES; ++s) {
            mbar_init(full + 8 * s, 1);             // thread 0's expect_tx, plus the bytes
            mbar_init(empty + 8 * s, K13_THREADS);  // every thread, once it has read the stage
        }
        mbar_init_fence();
    }
    __syncthreads();

    // Phase q's two boxes into stage q % STAGES (thread 0 only).
    auto issue = [&](int q) {
        const int s = q % K13_STAGES;
        const uint32_t stage = base + s * K13_STAGE_BYTES;
        mbar_expect(full + 8 * s, K13_STAGE_BYTES);
        tma_load_2d(stage, &map_a, q * K13_BK, row0, full + 8 * s);
        tma_load_2d(stage + K13_A_BYTES, &map_b, col0, q * K13_BK, full + 8 * s);
    };
    if (tid == 0) {
        const int prologue = min(K13_STAGES, phases);
        for (int q = 0; q < prologue; ++q) issue(q);
    }
    // Phase p's refill: phase p - LAG + STAGES into the stage phase p - LAG has released.
    auto refill = [&](int p) {
        const int q = p - K13_LAG + K13_STAGES;
        if (tid != 0 || p < K13_LAG || q >= phases) return;
        mbar_wait(empty + 8 * (q % K13_STAGES), ((p - K13_LAG) / K13_STAGES) & 1);
        issue(q);
    };

    // The thread's outputs: rows ly + LM i (i < TM) and columns 4 lx + 4 LN j + (0 .. 3) of
    // its warp's tile.
    const int warp = tid / 32, lane = tid % 32;
    const int ly = lane / K13_LN, lx = lane % K13_LN;
    const int tm = (warp / K13_WARPS_N) * K13_WM + ly;
    const int tn = (warp % K13_WARPS_N) * K13_WN + 4 * lx;
    const uint32_t a_lds = base + 4 * tm * K13_AS_LD;  // stage 0; stage s adds s * STAGE_BYTES
    const uint32_t b_lds = base + K13_A_BYTES + 4 * tn;

    float acc[K13_TM][K13_TN];
#pragma unroll
    for (int i = 0; i < K13_TM; ++i)
#pragma unroll
        for (int c = 0; c < K13_TN; ++c) acc[i][c] = 0.0f;

    constexpr int G = K13_BK / 4;        // groups of 4 k-steps per phase
    constexpr int RPS = K13_TM / 4;      // A rows loaded per k-step (a group's rows over its 4)
    float fa[2][K13_TM][4], fb[2][K13_TN];  // A: two groups' worth; B: two k-steps'
    auto load_a = [&](int buf, uint32_t stage, int g, int i) {
        tma_lds4(fa[buf][i], a_lds + stage + 4 * (K13_LM * i * K13_AS_LD + 4 * g));
    };
    auto load_b = [&](int buf, uint32_t stage, int k) {
#pragma unroll
        for (int j = 0; j < K13_TN / 4; ++j)
            tma_lds4(&fb[buf][4 * j], b_lds + stage + 4 * (k * K13_BN + 4 * K13_LN * j));
    };
    auto fma_step = [&](int k) {
        const int g = k / 4, kk = k % 4;
#pragma unroll
        for (int i = 0; i < K13_TM; ++i)
#pragma unroll
            for (int c = 0; c < K13_TN; ++c) acc[i][c] += fa[g % 2][i][kk] * fb[k % 2][c];
    };

    mbar_wait(full, 0);
#pragma unroll
    for (int i = 0; i < K13_TM; ++i) load_a(0, 0, 0, i);
    load_b(0, 0, 0);

    // Phases 0 .. phases - 2: the next stage is waited for at the last group's first k-step
    // (that group's k-steps load the next stage's first A group), and this one is released at
    // the last k-step, after its last load.
    uint32_t cur = 0;
    for (int p = 0; p < phases - 1; ++p) {
        const int sn = (p + 1) % K13_STAGES;
        const uint32_t nxt = sn * K13_STAGE_BYTES;
#pragma unroll
        for (int k = 0; k < K13_BK; ++k) {
            const int g = k / 4, kk = k % 4;
            if (k == K13_REFILL_STEP) refill(p);
            if (k == K13_BK - 4) mbar_wait(full + 8 * sn, ((p + 1) / K13_STAGES) & 1);
            if (k == K13_BK - 1) mbar_arrive(empty + 8 * (p % K13_STAGES));
#pragma unroll
            for (int i = kk * RPS; i < (kk + 1) * RPS; ++i) {
                if (g + 1 < G) load_a((g + 1) % 2, cur, g + 1, i);
                else load_a(0, nxt, 0, i);
            }
            if (k + 1 < K13_BK) load_b((k + 1) % 2, cur, k + 1);
            else load_b(0, nxt, 0);
            fma_step(k);
        }
        cur = nxt;
    }
    // The last phase: nothing left to wait for or to release.
#pragma unroll
    for (int k = 0; k < K13_BK; ++k) {
        const int g = k / 4, kk = k % 4;
#pragma unroll
        for (int i = kk * RPS; i < (kk + 1) * RPS; ++i)
            if (g + 1 < G) load_a((g + 1) % 2, cur, g + 1, i);
        if (k + 1 < K13_BK) load_b((k + 1) % 2, cur, k + 1);
        fma_step(k);
    }

    // C = alpha * acc + beta * C where inside C (N % 4 == 0: a float4 is wholly in or out).
#pragma unroll
    for (int i = 0; i < K13_TM; ++i) {
        const int row = row0 + tm + K13_LM * i;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < K13_TN / 4; ++j) {
            const int col = col0 + tn + 4 * K13_LN * j;
            if (col < N)
                sgemm_store4(C, (size_t)row * N + col, alpha,
                             make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]),
                             beta);
        }
    }
#endif
}

void launch_k13_tma_stages(int M, int N, int K, float alpha, const float *A, const float *B,
                           float beta, float *C, cudaStream_t stream) {
    // The bindings have refused what a tensor map cannot describe (N, K not multiples of 4,
    // unaligned operands, a device before sm_90). Without the driver's encoder nothing is
    // launched, and the launch error below says so.
    const TmaEncode encode = tma_encoder();
    CUtensorMap map_a, map_b;
    const size_t smem = K13_SMEM_BYTES;
    static int allowed[64];
    sgemm_allow_smem((const void *)k13_tma_stages, (int)smem, allowed);
    const dim3 block(K13_THREADS);
    const dim3 grid(sgemm_cdiv(N, K13_BN), sgemm_cdiv(M, K13_BM));
    if (!encode || !tma_map(encode, &map_a, A, M, K, K13_BM, K13_AS_LD) ||
        !tma_map(encode, &map_b, B, K, N, K13_BK, K13_BN)) {
        k13_tma_stages<<<dim3(0), block, smem, stream>>>(M, N, K, alpha, A, B, beta, C, map_a, map_b);
        return;
    }
    k13_tma_stages<<<grid, block, smem, stream>>>(M, N, K, alpha, A, B, beta, C, map_a, map_b);
}

SGEMM_REGISTER(k13_tma_stages, K13_BM, K13_BN, K13_BK, K13_THREADS, SGEMM_VEC4 | SGEMM_SM90)
