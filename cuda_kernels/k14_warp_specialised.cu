// K14: K13 with the warps specialised. K13's FMA warps also run the pipeline: thread 0 waits on
// a stage's empty barrier before it refills it, and its whole warp waits with it. Here a
// producer warp group of its own (warps 0-3) runs the pipeline and the two consumer warp groups
// (warps 4-11, K13's 8 warps and lane map) only multiply:
//  - producer: one thread waits for stage s to be released (empty[s]), arrives on full[s] with
//    the stage's byte count (expect_tx) and issues K13's two tensor copies into it, phase after
//    phase, STAGES ahead of the consumers; the rest of its warp group has nothing to do;
//  - consumers: wait for full[s], multiply (K13's 8 x 16 outputs per thread, A row-major in rows
//    of BK + PAD floats, one LDS.128 for four k-steps of one row), and release the stage on
//    empty[s] after their last load from it (one arrival per warp after __syncwarp, or one per
//    thread: ARRIVE_WARP).
//  - registers: 384 threads with one block per SM start at 168 registers each (64K / 384);
//    setmaxnreg (sm_90a) hands them over, the producer warp group decreasing to PRODUCER_REGS and
//    the consumer warp groups increasing to CONSUMER_REGS (128 x 24 + 256 x 240 <= 64K). Each
//    role is one branch of one if/else, as setmaxnreg needs, and ptxas allocates the consumer
//    branch within CONSUMER_REGS. Built for plain sm_90 the kernel has no setmaxnreg and its
//    consumers spill under the 168-register cap: it is meant for sm_90a, which the extension
//    builds on a Hopper GPU and the SASS tables use for SGEMM_SM90 kernels.
//  - stages: the consumers never wait on an empty barrier, so STAGES only sets how far ahead the
//    copies run (up to 8 of K13's 26 KB stages in shared memory).
//  - WAIT picks how a consumer waits on full[s]: 0 a test_wait loop of the source (as K13),
//    1 try_wait, whose retry ptxas places out of line (after the kernel's exit: in SASS a loop
//    around the main loop).
// A consumer's main loop holds, per phase, 2048 FFMA, 96 LDS.128, one barrier test and its
// branch, one arrival, the loop's count and the stage addresses: K13's refill by thread 0 is
// gone from the FMA warps. The variants tried and what they measured: docs/notes/k14.md.
// Edges, tensor maps and host code as K13 (tma.cuh): the copy engine zero-fills outside the
// matrices, so every shape takes the same path and only the stores are guarded. Needs N % 4 == 0,
// K % 4 == 0, 16-byte aligned operands and compute capability 9.0 (SGEMM_SM90).
// Parameters (-D overrides): K14_BM, K14_BN, K14_BK, K14_TM, K14_TN, K14_WARPS_M, K14_WARPS_N
// (the consumer warps), K14_STAGES, K14_PAD, K14_PRODUCER_REGS, K14_CONSUMER_REGS, K14_WAIT,
// K14_ARRIVE_WARP.
#include "common.cuh"
#include "tma.cuh"  // the TMA and mbarrier helpers, the tensor-map encoder

#include <stdint.h>

#ifndef K14_BM
#define K14_BM 128
#endif
#ifndef K14_BN
#define K14_BN 256
#endif
#ifndef K14_BK
#define K14_BK 16
#endif
#ifndef K14_TM
#define K14_TM 8                        // rows per thread, LM apart
#endif
#ifndef K14_TN
#define K14_TN 16                       // columns per thread: TN / 4 sub-blocks, 4 * LN apart
#endif
#ifndef K14_WARPS_M
#define K14_WARPS_M 4                   // consumer warps down the block tile
#endif
#ifndef K14_WARPS_N
#define K14_WARPS_N 2                   // consumer warps across it
#endif
#ifndef K14_STAGES
#define K14_STAGES 8                    // shared stages
#endif
#ifndef K14_PAD
#define K14_PAD 4                       // extra columns of the A box (floats)
#endif
#ifndef K14_PRODUCER_REGS
#define K14_PRODUCER_REGS 24            // registers per producer thread after setmaxnreg
#endif
#ifndef K14_CONSUMER_REGS
#define K14_CONSUMER_REGS 240           // registers per consumer thread after setmaxnreg
#endif
#ifndef K14_WAIT
#define K14_WAIT 0                      // consumers wait on full[s]: 0 test_wait loop, 1 try_wait
#endif
#ifndef K14_ARRIVE_WARP
#define K14_ARRIVE_WARP 0               // empty[s]: 0 one arrival per consumer thread, 1 per warp
#endif

#define K14_PRODUCERS 128               // the producer warp group
#define K14_CONSUMERS (K14_WARPS_M * K14_WARPS_N * 32)
#define K14_THREADS (K14_PRODUCERS + K14_CONSUMERS)
#define K14_WM (K14_BM / K14_WARPS_M)   // rows of a warp tile
#define K14_WN (K14_BN / K14_WARPS_N)   // columns of a warp tile
#define K14_LM (K14_WM / K14_TM)        // lane rows in a warp tile
#define K14_LN (K14_WN / K14_TN)        // lane columns
#define K14_AS_LD (K14_BK + K14_PAD)    // As row length (floats): the A box's width
#define K14_A_BYTES (K14_BM * K14_AS_LD * 4)
#define K14_B_BYTES (K14_BK * K14_BN * 4)
#define K14_STAGE_BYTES (K14_A_BYTES + K14_B_BYTES)
#define K14_SMEM_BYTES (K14_STAGES * K14_STAGE_BYTES + 16 * K14_STAGES + 128)  // + barriers, alignment

static_assert(K14_CONSUMERS % 128 == 0, "whole consumer warp groups (setmaxnreg acts per warp group)");
static_assert(K14_PRODUCERS * K14_PRODUCER_REGS + K14_CONSUMERS * K14_CONSUMER_REGS <= 65536,
              "the register file holds both roles");
static_assert(K14_PRODUCER_REGS % 8 == 0 && K14_CONSUMER_REGS % 8 == 0 && K14_PRODUCER_REGS >= 24 &&
                  K14_CONSUMER_REGS <= 256,
              "setmaxnreg counts: multiples of 8 in 24 .. 256");
static_assert(K14_BM % K14_WARPS_M == 0 && K14_BN % K14_WARPS_N == 0, "warps tile the block");
static_assert(K14_TM % 4 == 0 && K14_TN % 4 == 0, "TM rows over 4 k-steps, 4-column sub-blocks");
static_assert(K14_WM % K14_TM == 0 && K14_WN % K14_TN == 0 && K14_LM * K14_LN == 32,
              "32 lanes tile the warp tile");
static_assert(K14_BK % 8 == 0, "BK a multiple of 8: whole, double-buffered groups of 4 k-steps");
static_assert(K14_PAD % 4 == 0 && (K14_AS_LD / 4) % 2 == 1,
              "A rows an odd number of 16-byte units apart: consecutive rows in distinct bank groups");
static_assert(K14_BM <= 256 && K14_BN <= 256 && K14_AS_LD <= 256, "a box is at most 256 elements a side");
static_assert(K14_A_BYTES % 128 == 0 && K14_B_BYTES % 128 == 0, "boxes land 128-byte aligned");
static_assert(K14_STAGES >= 2, "at least two stages");
static_assert(K14_SMEM_BYTES <= 227 * 1024, "the stages fit in shared memory");

extern "C" __global__ void __launch_bounds__(K14_THREADS, 1)
    k14_warp_specialised(SGEMM_KERNEL_PARAMS, const __grid_constant__ CUtensorMap map_a,
                         const __grid_constant__ CUtensorMap map_b) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char k14_smem[];
    // [stage 0: As | Bs][stage 1] ... [full barriers][empty barriers]
    const uint32_t base = (tma_saddr(k14_smem) + 127) & ~uint32_t(127);
    const uint32_t full = base + K14_STAGES * K14_STAGE_BYTES;  // full[s] at full + 8 s
    const uint32_t empty = full + 8 * K14_STAGES;                // empty[s] at empty + 8 s
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * K14_BM, col0 = blockIdx.x * K14_BN;
    const int phases = (K + K14_BK - 1) / K14_BK;

    if (tid == 0) {
        for (int s = 0; s < K14_STAGES; ++s) {
            mbar_init(full + 8 * s, 1);  // the producer's expect_tx, plus the bytes
            mbar_init(empty + 8 * s, K14_ARRIVE_WARP ? K14_CONSUMERS / 32 : K14_CONSUMERS);
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (tid < K14_PRODUCERS) {
        // ---- producer warp group
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(K14_PRODUCER_REGS));
#endif
        if (tid == 0) {
            int s = 0;
            uint32_t parity = 0;  // of the empty[s] phase that frees stage s for phase q
            for (int q = 0; q < phases; ++q) {
                const uint32_t stage = base + s * K14_STAGE_BYTES;
                if (q >= K14_STAGES) mbar_try_wait(empty + 8 * s, parity);
                mbar_expect(full + 8 * s, K14_STAGE_BYTES);
                tma_load_2d(stage, &map_a, q * K14_BK, row0, full + 8 * s);
                tma_load_2d(stage + K14_A_BYTES, &map_b, col0, q * K14_BK, full + 8 * s);
                if (++s == K14_STAGES) {
                    s = 0;
                    if (q >= K14_STAGES) parity ^= 1;
                }
            }
        }
    } else {
        // ---- consumer warp groups
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(K14_CONSUMER_REGS));
#endif
        auto wait_full = [&](int s, uint32_t parity) {
#if K14_WAIT == 1
            mbar_try_wait(full + 8 * s, parity);
#else
            mbar_wait(full + 8 * s, parity);
#endif
        };
        auto release = [&](int s) {
#if K14_ARRIVE_WARP
            __syncwarp();
            if (tid % 32 == 0) mbar_arrive(empty + 8 * s);
#else
            mbar_arrive(empty + 8 * s);
#endif
        };

        // The thread's outputs: rows ly + LM i (i < TM) and columns 4 lx + 4 LN j + (0 .. 3) of
        // its warp's tile.
        const int ct = tid - K14_PRODUCERS;
        const int warp = ct / 32, lane = ct % 32;
        const int ly = lane / K14_LN, lx = lane % K14_LN;
        const int tm = (warp / K14_WARPS_N) * K14_WM + ly;
        const int tn = (warp % K14_WARPS_N) * K14_WN + 4 * lx;
        const uint32_t a_lds = base + 4 * tm * K14_AS_LD;  // stage 0; stage s adds s * STAGE_BYTES
        const uint32_t b_lds = base + K14_A_BYTES + 4 * tn;

        float acc[K14_TM][K14_TN];
#pragma unroll
        for (int i = 0; i < K14_TM; ++i)
#pragma unroll
            for (int c = 0; c < K14_TN; ++c) acc[i][c] = 0.0f;

        constexpr int G = K14_BK / 4;        // groups of 4 k-steps per phase
        constexpr int RPS = K14_TM / 4;      // A rows loaded per k-step (a group's rows over its 4)
        float fa[2][K14_TM][4], fb[2][K14_TN];  // A: two groups' worth; B: two k-steps'
        auto load_a = [&](int buf, uint32_t stage, int g, int i) {
            tma_lds4(fa[buf][i], a_lds + stage + 4 * (K14_LM * i * K14_AS_LD + 4 * g));
        };
        auto load_b = [&](int buf, uint32_t stage, int k) {
#pragma unroll
            for (int j = 0; j < K14_TN / 4; ++j)
                tma_lds4(&fb[buf][4 * j], b_lds + stage + 4 * (k * K14_BN + 4 * K14_LN * j));
        };
        auto fma_step = [&](int k) {
            const int g = k / 4, kk = k % 4;
#pragma unroll
            for (int i = 0; i < K14_TM; ++i)
#pragma unroll
                for (int c = 0; c < K14_TN; ++c) acc[i][c] += fa[g % 2][i][kk] * fb[k % 2][c];
        };

        wait_full(0, 0);
#pragma unroll
        for (int i = 0; i < K14_TM; ++i) load_a(0, 0, 0, i);
        load_b(0, 0, 0);

        // Phases 0 .. phases - 2: the next stage is waited for at the last group's first k-step
        // (that group's k-steps load the next stage's first A group), and this one is released
        // at the last k-step, after its last load.
        uint32_t cur = 0;
        for (int p = 0; p < phases - 1; ++p) {
            const int sn = (p + 1) % K14_STAGES;
            const uint32_t nxt = sn * K14_STAGE_BYTES;
#pragma unroll
            for (int k = 0; k < K14_BK; ++k) {
                const int g = k / 4, kk = k % 4;
                if (k == K14_BK - 4) wait_full(sn, ((p + 1) / K14_STAGES) & 1);
                if (k == K14_BK - 1) release(p % K14_STAGES);
#pragma unroll
                for (int i = kk * RPS; i < (kk + 1) * RPS; ++i) {
                    if (g + 1 < G) load_a((g + 1) % 2, cur, g + 1, i);
                    else load_a(0, nxt, 0, i);
                }
                if (k + 1 < K14_BK) load_b((k + 1) % 2, cur, k + 1);
                else load_b(0, nxt, 0);
                fma_step(k);
            }
            cur = nxt;
        }
        // The last phase: nothing left to wait for or to release (the producer is done).
#pragma unroll
        for (int k = 0; k < K14_BK; ++k) {
            const int g = k / 4, kk = k % 4;
#pragma unroll
            for (int i = kk * RPS; i < (kk + 1) * RPS; ++i)
                if (g + 1 < G) load_a((g + 1) % 2, cur, g + 1, i);
            if (k + 1 < K14_BK) load_b((k + 1) % 2, cur, k + 1);
            fma_step(k);
        }

        // C = alpha * acc + beta * C where inside C (N % 4 == 0: a float4 is wholly in or out).
#pragma unroll
        for (int i = 0; i < K14_TM; ++i) {
            const int row = row0 + tm + K14_LM * i;
            if (row >= M) continue;
#pragma unroll
            for (int j = 0; j < K14_TN / 4; ++j) {
                const int col = col0 + tn + 4 * K14_LN * j;
                if (col < N)
                    sgemm_store4(C, (size_t)row * N + col, alpha,
                                 make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2],
                                             acc[i][4 * j + 3]),
                                 beta);
            }
        }
    }
#endif
}

void launch_k14_warp_specialised(int M, int N, int K, float alpha, const float *A, const float *B,
                                 float beta, float *C, cudaStream_t stream) {
    // The bindings have refused what a tensor map cannot describe (N, K not multiples of 4,
    // unaligned operands, a device before sm_90). Without the driver's encoder nothing is
    // launched, and the launch error below says so.
    const TmaEncode encode = tma_encoder();
    CUtensorMap map_a, map_b;
    const size_t smem = K14_SMEM_BYTES;
    static int allowed[64];
    sgemm_allow_smem((const void *)k14_warp_specialised, (int)smem, allowed);
    const dim3 block(K14_THREADS);
    const dim3 grid(sgemm_cdiv(N, K14_BN), sgemm_cdiv(M, K14_BM));
    if (!encode || !tma_map(encode, &map_a, A, M, K, K14_BM, K14_AS_LD) ||
        !tma_map(encode, &map_b, B, K, N, K14_BK, K14_BN)) {
        k14_warp_specialised<<<dim3(0), block, smem, stream>>>(M, N, K, alpha, A, B, beta, C, map_a, map_b);
        return;
    }
    k14_warp_specialised<<<grid, block, smem, stream>>>(M, N, K, alpha, A, B, beta, C, map_a, map_b);
}

SGEMM_REGISTER(k14_warp_specialised, K14_BM, K14_BN, K14_BK, K14_THREADS, SGEMM_VEC4 | SGEMM_SM90)
