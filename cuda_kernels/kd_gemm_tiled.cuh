// KD's tiled decode GEMM (kd_gemm_tiled.cu): its #ifndef parameters, the layout of a stage in
// shared memory, and the device helpers of its consumers: the moves of a lane's sums (to shared
// memory or to a workspace slot), the (tile, stage of K) units of a block, a tile's end, and a
// group's FMAs of one stage.
#pragma once

#include "common.cuh"
#include "kd_common.cuh"  // the ticket and the workspace
#include "tma.cuh"        // tensor copies, mbarriers and the tensor-map encoder

#include <stdint.h>

#ifndef KD_SK_NW
#define KD_SK_NW 2  // consumer warps side by side along N
#endif
#ifndef KD_SK_KW
#define KD_SK_KW 4  // groups of SK_NW consumer warps along K (a stage's k split between them)
#endif
#ifndef KD_SK_GK
#define KD_SK_GK 16  // values of k a group multiplies per stage: a stage is SK_BK = GK * KW of them
#endif
#ifndef KD_SK_MIN_KTILES
#define KD_SK_MIN_KTILES 4  // the fewest stages of work a block is given
#endif
#ifndef KD_SK_STAGES
#define KD_SK_STAGES 4  // stages of the copy pipeline
#endif
#ifndef KD_SK_BLOCKS_PER_SM
#define KD_SK_BLOCKS_PER_SM 1  // the grid: this many blocks per SM (fewer where they do not fit)
#endif
#ifndef KD_SK_LR
#define KD_SK_LR 4  // lane rows of a consumer warp (TM = BM / LR adjacent rows a lane); 32 / LR lane columns
#endif
#ifndef KD_SK_TN
#define KD_SK_TN 9  // columns of C per consumer lane: TN / 4 sub-blocks of 4, 4 * LC apart, then TN % 4
#endif
#ifndef KD_SK_PRODUCER_REGS
#define KD_SK_PRODUCER_REGS 40  // registers of a producer thread after setmaxnreg
#endif
#ifndef KD_SK_REGS
#define KD_SK_REGS 224  // registers of a consumer thread after setmaxnreg (sm_90a); 0: no setmaxnreg
#endif
// ptxas fits the kernel to SK_BLOCKS_PER_SM blocks per SM (__launch_bounds__) only where
// setmaxnreg then gives the consumers their registers back (sm_90a); elsewhere to one block, so
// that the consumers do not spill (the launcher's grid then holds as many as fit).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !KD_SK_REGS
#define KD_SK_BOUND_BLOCKS KD_SK_BLOCKS_PER_SM
#else
#define KD_SK_BOUND_BLOCKS 1
#endif

#define KD_SK_WARPS (KD_SK_NW * KD_SK_KW)  // consumer warps
#define KD_SK_BK (KD_SK_GK * KD_SK_KW)     // values of k per stage
#define KD_SK_CONSUMERS (32 * KD_SK_WARPS)
#define KD_SK_GROUP (32 * KD_SK_NW)  // threads of a group along K
#define KD_SK_PRODUCERS 128          // a warp group
#define KD_SK_THREADS (KD_SK_PRODUCERS + KD_SK_CONSUMERS)  // the producers first
#define KD_SK_LC (32 / KD_SK_LR)              // lane columns of a consumer warp
#define KD_SK_TN4 (KD_SK_TN / 4)              // 4-column sub-blocks of a lane
#define KD_SK_TE (KD_SK_TN % 4)               // single columns after them: TE side by side a lane
#define KD_SK_WN (KD_SK_LC * KD_SK_TN)        // columns of a warp
#define KD_SK_BN (KD_SK_WN * KD_SK_NW)
#define KD_SK_BW (KD_SK_BN < 256 ? KD_SK_BN : 256)  // B's box: BK x BW, BN / BW of them a stage
#define KD_SK_LDA (KD_SK_BK + 4)  // As row length (floats): rows r .. r + 3 on distinct banks
#define KD_SK_A_BOX(bm) ((bm) * KD_SK_LDA * 4)                   // bytes of a stage's A as copied
#define KD_SK_A_BYTES(bm) ((KD_SK_A_BOX(bm) + 127) / 128 * 128)  // its room: At lands 128-byte aligned
#define KD_SK_AT_BYTES(bm) (KD_SK_BK * (bm) * 4)                 // At[BK][BM]: a multiple of 128 bytes
#define KD_SK_STAGE_BYTES(bm) (KD_SK_A_BYTES(bm) + KD_SK_AT_BYTES(bm) + KD_SK_BK * KD_SK_BN * 4)
// Bytes of dynamic shared memory of the kernel of BM rows: the stages, SK_KW + 2 barriers each,
// alignment.
#define KD_SK_SMEM(bm) (KD_SK_STAGES * KD_SK_STAGE_BYTES(bm) + 8 * (KD_SK_KW + 2) * KD_SK_STAGES + 128)

static_assert(KD_SK_GK % 4 == 0 && KD_SK_GK >= 4, "whole float4 of k per group and stage");
static_assert(KD_SK_STAGES >= 2, "at least two stages");
static_assert(KD_SK_TN >= 1 && KD_SK_TN <= 32, "1 to 32 columns a lane");
static_assert(KD_SK_BN % KD_SK_BW == 0 && KD_SK_BW % KD_SK_WN == 0 && KD_SK_LDA <= 256 && (KD_SK_BW * 4) % 16 == 0,
              "a tensor copy's box is at most 256 elements a side, whole 16-byte rows, and holds whole warps' columns");
static_assert((KD_SK_LDA / 4) % 2 == 1, "A rows an odd number of 16-byte units apart: distinct bank groups");
static_assert(KD_SK_LR == 2 || KD_SK_LR == 4, "2 or 4 lane rows: the row tiles 16 and 32 give a lane whole float4 of rows");
static_assert(KD_SK_SMEM(32) <= 227 * 1024, "the stages fit in shared memory");
static_assert(KD_SK_KW / 2 * 32 * KD_SK_BN * 4 <= KD_SK_STAGE_BYTES(32), "half the groups' sums fit in a stage");
static_assert(KD_SK_REGS == 0 || (KD_SK_WARPS % 4 == 0 && KD_SK_REGS % 8 == 0 && KD_SK_REGS <= 256 &&
                                  KD_SK_BLOCKS_PER_SM * (KD_SK_PRODUCERS * KD_SK_PRODUCER_REGS +
                                                         KD_SK_CONSUMERS * KD_SK_REGS) <= 65536),
              "setmaxnreg: whole warp groups, multiples of 8 up to 256, the blocks' registers in the file");

__device__ __forceinline__ float4 kd_f4(const float *v) { return make_float4(v[0], v[1], v[2], v[3]); }

// A lane's TM x TN sums as a flat array f = TN i + j, moved in the threads' order: value group q
// of thread `tid` of T at dst[q T + tid], groups of 4 floats (one 16-byte access) where TM TN is a
// multiple of 4, of 1 elsewhere. `put(p, v)` and `get(p, v)` do the access (shared or global).
template <int F>
struct KdFlat {
    static constexpr int V = F % 4 == 0 ? 4 : 1;  // floats an access
    static constexpr int Q = F / V;              // accesses a thread
};
template <int F, class Put>
__device__ __forceinline__ void kd_flat_put(const float (&acc)[F], float *dst, int T, int tid, Put put) {
    constexpr int V = KdFlat<F>::V;
#pragma unroll
    for (int q = 0; q < KdFlat<F>::Q; ++q) put(dst + V * ((size_t)q * T + tid), acc + V * q);
}
template <int F, class Get>
__device__ __forceinline__ void kd_flat_add(float (&acc)[F], const float *src, int T, int tid, Get get) {
    constexpr int V = KdFlat<F>::V;
    float v[F];
#pragma unroll
    for (int q = 0; q < KdFlat<F>::Q; ++q) get(src + V * ((size_t)q * T + tid), v + V * q);  // all in flight
#pragma unroll
    for (int f = 0; f < F; ++f) acc[f] += v[f];
}
// One access of V floats (4: 16 bytes) at p: in global memory through the L2 only (the slots), or
// in shared memory (the groups' sums).
template <int V, bool GLOBAL>
__device__ __forceinline__ void kd_put(float *p, const float *v) {
    if constexpr (V == 4 && GLOBAL) __stcg(reinterpret_cast<float4 *>(p), kd_f4(v));
    else if constexpr (V == 4) *reinterpret_cast<float4 *>(p) = kd_f4(v);
    else if constexpr (GLOBAL) __stcg(p, v[0]);
    else *p = v[0];
}
template <int V, bool GLOBAL>
__device__ __forceinline__ void kd_get(const float *p, float *v) {
    if constexpr (V == 4) {
        const float4 x = GLOBAL ? __ldcg(reinterpret_cast<const float4 *>(p)) : *reinterpret_cast<const float4 *>(p);
        v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else {
        v[0] = GLOBAL ? __ldcg(p) : *p;
    }
}

// A tile of C is BM = LR * TM rows by BN = WN * SK_NW columns; a warp owns WN = LC * TN of them,
// lane (rg, cg) = (lane % LR, lane / LR) the rows TM rg .. TM rg + TM - 1, the columns
// 4 cg + 4 LC h .. + 3 (h < TN / 4) of the warp's WN and, where TN % 4 = TE > 0, the TE columns
// 4 LC (TN / 4) + TE cg .. + TE - 1. The default (LR = 4, TN = 9, BN = 144): per value of k, TM / 4
// LDS.128 of At (four distinct 16-byte words a warp) and 2 LDS.128 and an LDS.32 of B (eight
// distinct float4 a warp, 128 contiguous bytes, then 32) feed 9 TM FFMA. The work is the list of
// units (tile, stage of K), tile t the column slab t % slabs of row tile t / slabs (the blocks that
// read one slab for different row tiles run at once: B is re-read from L2); block b of G takes
// units U b / G .. U (b + 1) / G - 1, the same share of B for every block (no wave quantisation),
// one continuous pipeline across the tiles it touches. A tile the block covers whole is stored; a
// part of one goes to one of the block's two workspace slots (its first tile, its last), and the
// block of the tile that finishes last (an integer ticket) adds the tile's slots in the order of
// K. No float atomics: the same bits every run. At decode N = 18944 on 132 SMs the 132 slabs of
// 144 columns give every block one whole tile: no slots, no tickets.
struct KdUnits {
    int m_tiles, slabs, KT;  // row tiles; column slabs; stages of K per tile
    long long U, G, u0, u1;  // units; blocks; this block's first unit and one past its last
    __device__ KdUnits(int M, int N, int K, int BM, int BN, int BK)
        : m_tiles((M + BM - 1) / BM), slabs((N + BN - 1) / BN), KT((K + BK - 1) / BK),
          U((long long)m_tiles * slabs * KT), G(gridDim.x), u0(U * blockIdx.x / G), u1(U * (blockIdx.x + 1) / G) {}
    __device__ long long start_of(long long blk) const { return U * blk / G; }
    __device__ long long block_of(long long u) const { return ((u + 1) * G - 1) / U; }  // start_of <= u < next
};

// Named barriers (0 is __syncthreads, which the producers would have to join): 1 for every
// consumer, 2 for group 0's.
__device__ __forceinline__ void kd_consumers_sync() {
    asm volatile("bar.sync 1, %0;\n" ::"n"(KD_SK_CONSUMERS) : "memory");
}
__device__ __forceinline__ void kd_group0_sync() { asm volatile("bar.sync 2, %0;\n" ::"n"(KD_SK_GROUP) : "memory"); }

// The end of this block's part of tile t (the last unit of t, or of the block), by group 0 (its
// thread tid, lane (rg, cg) of its warp `warp`), whose acc holds every group's sum: acc is stored,
// or left in a slot and, by the tile's last block, summed with the others; `last` is a shared flag.
template <int BM, int TM = BM / KD_SK_LR>
__device__ __forceinline__ void kd_tile_end(float (&acc)[TM * KD_SK_TN], int t, bool tile_done, const KdUnits &u,
                                            int M, int N, float alpha, float beta, float *__restrict__ C,
                                            float *__restrict__ ws, unsigned *__restrict__ tickets, int tid,
                                            int warp, int rg, int cg, bool *last) {
    constexpr int T = KD_SK_GROUP, TN = KD_SK_TN, LC = KD_SK_LC, F = TM * TN;
    const long long t_begin = (long long)t * u.KT, t_end = t_begin + u.KT;
    const int row0 = (t / u.slabs) * BM, wcol = (t % u.slabs) * KD_SK_BN + warp * KD_SK_WN;
    auto store = [&]() {
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = row0 + TM * rg + i;
            if (row >= M) continue;
#pragma unroll
            for (int h = 0; h < KD_SK_TN4; ++h) {
                const int col = wcol + 4 * cg + 4 * LC * h;
                if (col < N) sgemm_store4(C, (size_t)row * N + col, alpha, kd_f4(acc + TN * i + 4 * h), beta);
            }
#pragma unroll
            for (int e = 0; e < KD_SK_TE; ++e) {
                const int col = wcol + 4 * LC * KD_SK_TN4 + KD_SK_TE * cg + e;
                if (col < N) sgemm_store(C, row * N + col, alpha, acc[TN * i + 4 * KD_SK_TN4 + e], beta);
            }
        }
    };
    if (u.u0 <= t_begin && tile_done) {
        store();
        return;
    }
    // Slot 2 b: the block's first tile; 2 b + 1: its last. A slot is BM x BN floats in the
    // threads' order: a warp's accesses are contiguous.
    constexpr int V = KdFlat<F>::V;
    const long long b = blockIdx.x;
    float *slot = ws + (2 * b + (t == u.u0 / u.KT ? 0 : 1)) * (BM * KD_SK_BN);
    kd_flat_put(acc, slot, T, tid, kd_put<V, true>);
    const long long first = u.block_of(t_begin), final_ = u.block_of(t_end - 1);
    kd_group0_sync();
    if (tid == 0) *last = kd_ticket(&tickets[t], (unsigned)(final_ - first));
    kd_group0_sync();
    if (!*last) return;
    // acc (stored) becomes the sum over the slots, in the order of K; a slot's loads fly together.
#pragma unroll
    for (int f = 0; f < F; ++f) acc[f] = 0.0f;
    for (long long p = first; p <= final_; ++p) {
        const long long sl = 2 * p + (u.start_of(p) / u.KT == t ? 0 : 1);
        kd_flat_add(acc, ws + sl * (BM * KD_SK_BN), T, tid, kd_get<V, true>);
    }
    store();
    if (tid == 0) tickets[t] = 0;  // ready for the next launch
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900  // tma.cuh's helpers: the tiled path only
__device__ __forceinline__ float kd_lds1(uint32_t addr) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
    return v;
}
// One group's share of a stage's FMAs: At of the stage at a_lds (the group's first k, the lane's
// first row TM rg), Bs at b_lds (the group's first row, the lane's first column) and b_lde (its
// single columns). The FMAs of one k go column by column: one value of B meets the TM values of A
// in turn (B's in the operand reuse cache, A's value and the sum read from the register file).
template <int TM>
__device__ __forceinline__ void kd_stage_fma(float (&acc)[TM * KD_SK_TN], uint32_t a_lds, uint32_t b_lds,
                                             uint32_t b_lde) {
    constexpr int BW = KD_SK_BW, TN = KD_SK_TN, LC = KD_SK_LC, BM = TM * KD_SK_LR;
    static_assert(TM % 4 == 0, "a lane's rows of one k in whole LDS.128 of At");
#pragma unroll
    for (int k = 0; k < KD_SK_GK; ++k) {
        float a[TM];
#pragma unroll
        for (int q = 0; q < TM / 4; ++q) tma_lds4(a + 4 * q, a_lds + 4 * (k * BM + 4 * q));
        const uint32_t row = 4 * (k * BW);
        float bv[TN];
#pragma unroll
        for (int h = 0; h < KD_SK_TN4; ++h) tma_lds4(bv + 4 * h, b_lds + row + 4 * (4 * LC * h));
#pragma unroll
        for (int e = 0; e < KD_SK_TE; ++e) bv[4 * KD_SK_TN4 + e] = kd_lds1(b_lde + row + 4 * e);
#pragma unroll
        for (int j = 0; j < TN; ++j)
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[TN * i + j] = fmaf(a[i], bv[j], acc[TN * i + j]);
    }
}
#endif
