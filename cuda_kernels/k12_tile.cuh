// K12's block tile: what k12_lean_issue.cu (K12) and k15_wide_copies.cu (K15, with B_VEC 4) run
// once per tile of C. K10 and K11 are held by how many instructions their FMA warps issue besides
// the FFMAs (docs/notes/k12.md), so the idea here is fewer and more regular ones around the FFMAs:
//  - shared memory is addressed with 32-bit shared-window addresses (ld.shared / cp.async
//    through PTX), so every fragment load is LDS.128 [R + constant];
//  - the two stages sit 2^n bytes apart from a 2^(n+1)-aligned base: switching stage is one XOR
//    of each address register, once per phase;
//  - the ragged end of K is taken first: phase 0 copies K - BK * (phases - 1) values of k (the
//    rest zero-filled) and every later phase is whole, so the main loop has no K guards and no
//    branch but its own, and the last phase is peeled (no copies, no barrier);
//  - copies are 4 bytes each for A (transposed on the way into As[k][m]) and K12_B_VEC floats
//    each for B: 1 (the default) lets any M, N, K and any 4-byte-aligned operands take the same
//    path (SGEMM_PLAIN), 4 needs N a multiple of 4 and B 16-byte aligned (SGEMM_VEC4) and issues
//    a quarter of B's copies; a copy for a row or column outside C reads the last one inside
//    instead (it feeds only outputs that are not stored), so no copy of the main loop is guarded;
//  - a phase's copies are spread over its first COPY_STEPS k-steps.
// Tile, thread tile, warp grid and lane map as K10/K11 (lanes n and n^1 read the same A words,
// n and n^2 the same B words: conflict-free LDS.128). Parameters (-D overrides): K12_BM, K12_BN,
// K12_BK, K12_TM, K12_TN, K12_WARPS_M, K12_WARPS_N, K12_PAD, K12_COPY_STEPS, K12_B_VEC, K12_MAXNREG,
// K12_FMA_ORDER, K12_A_KL, K12_COPY_ADDR, K12_B_RUN.
// Default: the fastest variant of `python -m study.sweep_cuda --kernel K12` at 4096^3 over tile,
// thread tile, warp grid, BK and COPY_STEPS (docs/notes/k12.md): 128 x 256 x 16, 16 x 8 outputs
// per thread, 2 x 4 warps, copies over the first 4 k-steps; and of `--only FMA_ORDER` (for K15,
// docs/notes/k15.md), the FFMAs row by row turning back at each row's end.
#pragma once

#include "common.cuh"
#include "k12_ptx.cuh"

#include <stdint.h>

#ifndef K12_BM
#define K12_BM 128
#endif
#ifndef K12_BN
#define K12_BN 256
#endif
#ifndef K12_BK
#define K12_BK 16
#endif
#ifndef K12_TM
#define K12_TM 16                       // rows per thread: TM / 4 sub-blocks, 4 * LM apart
#endif
#ifndef K12_TN
#define K12_TN 8                        // columns per thread: TN / 4 sub-blocks, 4 * LN apart
#endif
#ifndef K12_WARPS_M
#define K12_WARPS_M 2                   // warps down the block tile
#endif
#ifndef K12_WARPS_N
#define K12_WARPS_N 4                   // warps across it
#endif
#ifndef K12_PAD
#define K12_PAD 4                       // As row padding (floats), a multiple of 4
#endif
#ifndef K12_COPY_STEPS
#define K12_COPY_STEPS 4                // k-steps of a phase that issue its copies
#endif
#ifndef K12_B_VEC
#define K12_B_VEC 1                     // floats of B one copy moves: 1 (4 bytes) or 4 (16 bytes)
#endif
#ifndef K12_MAXNREG
#define K12_MAXNREG 0                   // registers a thread may use; 0: as many as one block an SM allows
#endif
// The order of a k-step's TM x TN FFMAs as the source states them: 0 row by row, 1 column by
// column, 2 row by row turning back at each row's end, 3 column by column turning back likewise.
// ptxas keeps much of it, and it sets which consecutive FFMAs read a register in the same operand
// slot (served by the reuse cache, not the register banks) and which registers ptxas assigns.
// Turning back at a row's end, a row's last FFMA and the next row's first read the same B value.
#ifndef K12_FMA_ORDER
#define K12_FMA_ORDER 2
#endif

// Lanes along k of A's copies: a thread copies k = q, q + A_KL, ... (BK / A_KL values) of each of
// its rows, so its copies of one row share a source pointer and differ by constants. 0 (the
// default) means BK: one value of k in each of A_COPIES rows, a pointer a copy.
#ifndef K12_A_KL
#define K12_A_KL 0
#endif
// How a main-loop copy finds its source. 0: each source pointer is advanced by a phase's k at the
// phase's end; ptxas adds a 64-bit pointer as two 32-bit halves it keeps in registers that are not
// a pair, and pairs them with two moves before each LDGSTS. 1: a source stays at k = 0 and the
// phase's k is added at the copy by one mad.wide.u32, whose result ptxas writes into a register
// pair (IMAD.WIDE, or IADD3 and IADD3.X where the factor is 1); one register of k per phase.
#ifndef K12_COPY_ADDR
#define K12_COPY_ADDR 0
#endif
// A thread's copies of B along one row (B_RUN of them, BN / (B_VEC * B_RUN) lanes apart) share one
// source pointer and differ by constants; a copy of a column past N is then zero-filled (the
// LDGSTS's ignore-src predicate: it reads nothing), where the offsets cannot follow a read from a
// tile width before. 0 (the default): BN / B_VEC / THREADS copies along a row, at least one.
#ifndef K12_B_RUN
#define K12_B_RUN 0
#endif
#define K12_THREADS (K12_WARPS_M * K12_WARPS_N * 32)
#define K12_WM (K12_BM / K12_WARPS_M)   // rows of a warp tile
#define K12_WN (K12_BN / K12_WARPS_N)   // columns of a warp tile
#define K12_LM (K12_WM / K12_TM)        // lane rows in a warp tile
#define K12_LN (K12_WN / K12_TN)        // lane columns
#define K12_AS_LD (K12_BM + K12_PAD)    // As row length (floats)
#define K12_A_COPIES (K12_BM * K12_BK / K12_THREADS)  // 4-byte copies of A per thread per phase
#define K12_A_LANES (K12_A_KL ? K12_A_KL : K12_BK)     // lanes along k of A's copies
#define K12_A_KJ (K12_BK / K12_A_LANES)                // values of k a thread copies from a row
#define K12_A_ROWS (K12_A_COPIES / K12_A_KJ)            // rows of A a thread copies from
#define K12_B_COPIES (K12_BK * K12_BN / (K12_THREADS * K12_B_VEC))  // copies of B per thread per phase
#define K12_A_BYTES (K12_BK * K12_AS_LD * 4)          // one stage of A
#define K12_B_BYTES (K12_BK * K12_BN * 4)             // one stage of B
// Stage stride: the smallest power of two holding a stage of A and one of B; the layout is
// [A0 | A1 | B0 | B1] at that stride from a base aligned to twice it, so bit log2(stride) is 0
// in every stage-0 address and XOR-ing it in gives the stage-1 address. (The next power of two
// of max(a, b) is one more than (a - 1) | (b - 1) with every bit below its top bit set.)
#define K12_SPAN ((K12_A_BYTES - 1) | (K12_B_BYTES - 1))
#define K12_SMEAR (K12_SPAN | K12_SPAN / 2 | K12_SPAN / 4 | K12_SPAN / 8 | K12_SPAN / 16 | K12_SPAN / 32 | \
                   K12_SPAN / 64 | K12_SPAN / 128 | K12_SPAN / 256 | K12_SPAN / 512 | K12_SPAN / 1024 |  \
                   K12_SPAN / 2048 | K12_SPAN / 4096 | K12_SPAN / 8192 | K12_SPAN / 16384)
#define K12_STRIDE (K12_SMEAR + 1)
#define K12_SMEM_BYTES (4 * K12_STRIDE + 2 * K12_STRIDE)  // + the slack that aligns the base

static_assert(K12_BM % K12_WARPS_M == 0 && K12_BN % K12_WARPS_N == 0, "warps tile the block");
static_assert(K12_TM % 4 == 0 && K12_TN % 4 == 0, "4x4 sub-blocks");
static_assert(K12_WM % K12_TM == 0 && K12_WN % K12_TN == 0 && K12_LM * K12_LN == 32,
              "32 lanes tile the warp tile");
static_assert(K12_LM >= 2 && K12_LN >= 2 && (K12_LN & (K12_LN - 1)) == 0,
              "the lane map needs power-of-two lane rows and columns, at least 2 of each");
static_assert(K12_BK >= 2 && K12_PAD % 4 == 0, "BK >= 2, float4 rows");
static_assert(K12_THREADS % K12_BK == 0 && K12_A_COPIES >= 1 &&
              K12_A_COPIES * K12_THREADS == K12_BM * K12_BK && K12_BK % K12_A_LANES == 0 &&
              K12_A_COPIES % K12_A_KJ == 0,
              "A tile splits evenly into 4-byte copies, A_KL lanes along k");
static_assert((K12_B_VEC == 1 || K12_B_VEC == 4) && K12_BN % K12_B_VEC == 0, "B copies of 4 or 16 bytes");
static_assert((K12_THREADS % (K12_BN / K12_B_VEC) == 0 || (K12_BN / K12_B_VEC) % K12_THREADS == 0) &&
                  K12_B_COPIES >= 1 && K12_B_COPIES * K12_THREADS * K12_B_VEC == K12_BK * K12_BN,
              "B tile splits evenly into copies");
static_assert(K12_COPY_STEPS >= 1 && K12_COPY_STEPS < K12_BK, "copies issued before the last k-step");
static_assert(K12_FMA_ORDER >= 0 && K12_FMA_ORDER <= 3, "FMA orders 0 .. 3");
static_assert(K12_COPY_ADDR == 0 || K12_COPY_ADDR == 1, "copy addressing 0 or 1");
static_assert(K12_B_RUN == 0 || (K12_BN / K12_B_VEC % K12_B_RUN == 0 &&
                                 K12_THREADS % (K12_BN / K12_B_VEC / K12_B_RUN) == 0 &&
                                 K12_B_COPIES % K12_B_RUN == 0),
              "B_RUN copies of a row split its BN / B_VEC copies evenly over whole lanes");
static_assert(K12_STRIDE >= K12_A_BYTES && K12_STRIDE >= K12_B_BYTES && K12_STRIDE <= 32768 &&
                  (K12_STRIDE & (K12_STRIDE - 1)) == 0, "a power-of-two stride holds a stage of A and of B");
static_assert(K12_SMEM_BYTES <= 227 * 1024, "the stages fit in shared memory");

// The launch bounds of a kernel that runs this tile: one block of THREADS per SM, which lets ptxas
// use up to 255 registers a thread, or K12_MAXNREG of them. Which registers hold what, and so
// which register banks each FFMA reads, follows from that budget.
#if K12_MAXNREG
#define K12_BOUNDS __maxnreg__(K12_MAXNREG)
#else
#define K12_BOUNDS __launch_bounds__(K12_THREADS, 1)
#endif

// The row and column of a k-step's x-th FFMA (K12_FMA_ORDER).
__device__ __forceinline__ constexpr int k12_fma_row(int x) {
    return K12_FMA_ORDER == 0 || K12_FMA_ORDER == 2 ? x / K12_TN
           : K12_FMA_ORDER == 1 || (x / K12_TM) % 2 == 0 ? x % K12_TM
                                                          : K12_TM - 1 - x % K12_TM;
}
__device__ __forceinline__ constexpr int k12_fma_col(int x) {
    return K12_FMA_ORDER == 1 || K12_FMA_ORDER == 3 ? x / K12_TM
           : K12_FMA_ORDER == 0 || (x / K12_TN) % 2 == 0 ? x % K12_TN
                                                          : K12_TN - 1 - x % K12_TN;
}

// acc = A[row0 .. row0 + BM, 0 .. K) x B[0 .. K, col0 .. col0 + BN), with the block's dynamic
// shared memory `smem` (K12_SMEM_BYTES); A's rows are lda floats apart (a part of K of a wider A
// is A advanced to its first k, with lda that A's K), B's N. acc holds the thread's TM x TN
// outputs of the tile (see k12_row, k12_col). K is taken in phases: phase 0 holds the ragged
// k_first = K - BK * (phases - 1) values of k (1 .. BK), phase p >= 1 the BK values from
// k_first + BK * (p - 1); taking the ragged end first leaves every later phase whole, so the main
// loop has no K guard.
__device__ __forceinline__ void k12_tile(float (&acc)[K12_TM][K12_TN], int M, int N, int K, int lda,
                                         const float *__restrict__ A, const float *__restrict__ B,
                                         int row0, int col0, unsigned char *smem) {
    const uint32_t raw = k12_saddr(smem);
    const uint32_t base = (raw + 2 * K12_STRIDE - 1) & ~uint32_t(2 * K12_STRIDE - 1);
    const uint32_t a_stage0 = base, b_stage0 = base + 2 * K12_STRIDE;

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    // K10's lane map: lanes n and n^1 share ly (same A words), n and n^2 share lx (same B words)
    const int lx = (lane & 1) | (((lane >> 2) & (K12_LN / 2 - 1)) << 1);
    const int ly = ((lane >> 1) & 1) | ((lane / (2 * K12_LN)) << 1);
    const int tm = (warp / K12_WARPS_N) * K12_WM + 4 * ly;  // first row of the thread in the tile
    const int tn = (warp % K12_WARPS_N) * K12_WN + 4 * lx;  // first column

    // Fragment addresses in stage 0 (k-step k adds k rows, sub-block i a constant).
    uint32_t a_lds = a_stage0 + 4 * tm;
    uint32_t b_lds = b_stage0 + 4 * tn;

    // Copy c of A: row a_m + A_ROW_STEP * (c / A_KJ) of the BM x BK tile, column a_k + A_LANES *
    // (c % A_KJ); into As[column][row], a_dst(c) bytes from a_sts.
    constexpr int A_ROW_STEP = K12_THREADS / K12_A_LANES;
    const int a_m = tid / K12_A_LANES, a_k = tid % K12_A_LANES;
    auto a_dst = [](int c) {
        return 4 * (K12_A_LANES * (c % K12_A_KJ) * K12_AS_LD + A_ROW_STEP * (c / K12_A_KJ));
    };
    uint32_t a_sts = a_stage0 + 4 * (a_k * K12_AS_LD + a_m);
    // Copy c of B: V = B_VEC floats, group tid + THREADS * c of the BK x BN / V groups of the
    // tile: row b_k + b_row(c), columns from b_n + b_col(c); into Bs[row][column].
    constexpr int V = K12_B_VEC, BNV = K12_BN / K12_B_VEC;  // B's copies per row of the tile
    constexpr int B_PER_ROW = K12_B_RUN ? K12_B_RUN : BNV >= K12_THREADS ? BNV / K12_THREADS : 1;
    constexpr int B_LANES = BNV / B_PER_ROW;  // threads along a row of the tile
    constexpr int B_ROW_STEP = K12_THREADS / B_LANES;
    constexpr bool B_ZFILL = K12_B_RUN > 0;
    const int b_k = B_LANES >= K12_THREADS ? 0 : tid / B_LANES;
    const int b_n = V * (B_LANES >= K12_THREADS ? tid : tid % B_LANES);
    auto b_row = [](int c) { return (c / B_PER_ROW) * B_ROW_STEP; };
    auto b_col = [](int c) { return V * (c % B_PER_ROW) * B_LANES; };
    uint32_t b_sts = b_stage0 + 4 * (b_k * K12_BN + b_n);

    // Source pointers, one per row of A and per column of B. A row past M reads row M - 1, and
    // a column past N the column a tile width before it (the last V columns where there is no
    // tile before), or with B_RUN nothing (b_in): every copy reads valid memory or nothing and is
    // whole, so the main loop's copies carry no guard; what they bring only feeds outputs outside
    // C, which are never stored. The columns keep a word each: clamped onto one column, a warp's
    // copy of B would hand one word to all its lanes in every pass of the last column's blocks,
    // which slows them, and they are in every wave (docs/notes/predict.md, "Where K12's time goes
    // at 4097³").
    const int phases = (K + K12_BK - 1) / K12_BK;
    const int k_first = K - K12_BK * (phases - 1);  // values of k in phase 0
    const float *a_src[K12_A_ROWS], *b_src[B_PER_ROW];
#pragma unroll
    for (int g = 0; g < K12_A_ROWS; ++g)
        a_src[g] = A + (size_t)min(row0 + a_m + A_ROW_STEP * g, M - 1) * lda + a_k;
    bool b_in[B_PER_ROW];
#pragma unroll
    for (int c = 0; c < B_PER_ROW; ++c) {
        const int col = col0 + b_n + b_col(c);
        b_in[c] = !B_ZFILL || col < N;
        b_src[c] = B + (size_t)b_k * N + (col < N || B_ZFILL ? col : col >= K12_BN ? col - K12_BN : N - V);
    }
    // with B_RUN, every copy of a row from the first one's pointer
    auto b_base = [&](int c) { return B_ZFILL ? b_src[0] + b_col(c) : b_src[c % B_PER_ROW]; };
    const size_t b_row_step = (size_t)N;
    // K12_COPY_ADDR 1: k_bytes is 4 times the k the copies have reached (a_src and b_src stay at
    // k = 0); with at most 4 copies of B a thread, each keeps its own row's source (b_at).
    constexpr int B_OWN = K12_COPY_ADDR == 1 && K12_B_COPIES <= 4 && !B_ZFILL ? K12_B_COPIES : 1;
    uint32_t k_bytes = 0;
    const float *b_at[B_OWN];
#pragma unroll
    for (int c = 0; c < B_OWN; ++c) b_at[c] = b_src[c % B_PER_ROW] + b_row(c) * b_row_step;
    auto a_from = [&](int c) {
        const float *row = a_src[c / K12_A_KJ];
        return (K12_COPY_ADDR ? k12_at(row, k_bytes, 1) : row) + K12_A_LANES * (c % K12_A_KJ);
    };
    auto b_from = [&](int c) {
        const int r = b_row(c);
        if constexpr (K12_COPY_ADDR == 0) return b_base(c) + r * b_row_step;
        else if constexpr (B_OWN > 1) return k12_at(b_at[c], k_bytes, (uint32_t)N);
        else if constexpr (B_ZFILL) return k12_at(b_src[0], k_bytes + 4 * r, (uint32_t)N) + b_col(c);
        else return k12_at(b_src[c % B_PER_ROW], k_bytes + 4 * r, (uint32_t)N);
    };

    // The copies of k-step slot `slot` of a whole phase.
    auto issue = [&](int slot) {
#pragma unroll
        for (int c = 0; c < K12_A_COPIES; ++c)
            if (c % K12_COPY_STEPS == slot) k12_copy4(a_sts + a_dst(c), a_from(c), 4);
#pragma unroll
        for (int c = 0; c < K12_B_COPIES; ++c) {
            if (c % K12_COPY_STEPS != slot) continue;
            k12_copy<V>(b_sts + 4 * (b_row(c) * K12_BN + b_col(c)), b_from(c), b_in[c % B_PER_ROW]);
        }
    };
    // Phase 0's copies: k = a_k (A) or b_k + row (B) below k_first is copied, the rest is
    // zero-filled (src-size 0, its address that of k = 0: valid memory, or a B_RUN column past N).
    auto issue_first = [&]() {
#pragma unroll
        for (int c = 0; c < K12_A_COPIES; ++c) {
            const int j = K12_A_LANES * (c % K12_A_KJ);
            const bool in = a_k + j < k_first;
            k12_copy4(a_sts + a_dst(c), a_src[c / K12_A_KJ] + (in ? j : -a_k), in ? 4 : 0);
        }
#pragma unroll
        for (int c = 0; c < K12_B_COPIES; ++c) {
            const int r = b_row(c);
            const bool in = b_k + r < k_first && b_in[c % B_PER_ROW];
            const float *col = b_base(c) - (size_t)b_k * N;  // k = 0
            k12_copy<V>(b_sts + 4 * (r * K12_BN + b_col(c)), col + (in ? (size_t)(b_k + r) * N : 0), in);
        }
    };
    auto advance = [&](int dk) {
        if constexpr (K12_COPY_ADDR == 1) {
            k_bytes += 4 * dk;
        } else {
#pragma unroll
            for (int g = 0; g < K12_A_ROWS; ++g) a_src[g] += dk;
#pragma unroll
            for (int c = 0; c < (B_ZFILL ? 1 : B_PER_ROW); ++c) b_src[c] += dk * b_row_step;
        }
    };

    float fa[2][K12_TM], fb[2][K12_TN];  // fragments: two k-steps' worth
    auto load_frag = [&](int buf, int k) {
#pragma unroll
        for (int i = 0; i < K12_TM / 4; ++i)
            k12_lds4(&fa[buf][4 * i], a_lds + 4 * (k * K12_AS_LD + 4 * K12_LM * i));
#pragma unroll
        for (int j = 0; j < K12_TN / 4; ++j)
            k12_lds4(&fb[buf][4 * j], b_lds + 4 * (k * K12_BN + 4 * K12_LN * j));
    };
    auto fma_step = [&](int buf) {
#pragma unroll
        for (int x = 0; x < K12_TM * K12_TN; ++x) {
            const int r = k12_fma_row(x), c = k12_fma_col(x);
            acc[r][c] += fa[buf][r] * fb[buf][c];
        }
    };

    // Phase 0 into stage 0.
    issue_first();
    advance(k_first);
    k12_copies_landed();
    __syncthreads();
    a_sts ^= K12_STRIDE;
    b_sts ^= K12_STRIDE;
    load_frag(0, 0);

    // Phases 1 .. phases - 1: multiply the stage of the phase before while this one's copies
    // land in the other; the barrier at the last k-step both publishes them and frees the stage
    // that was just read.
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
            load_frag((k + 1) % 2, (k + 1) % K12_BK);
            if (k < K12_COPY_STEPS) issue(k);
            fma_step(k % 2);
        }
    }
    // The last phase: nothing left to copy.
#pragma unroll
    for (int k = 0; k < K12_BK; ++k) {
        if (k < K12_BK - 1) load_frag((k + 1) % 2, k + 1);
        fma_step(k % 2);
    }
}

// Row and column of C (within the block tile) of the thread's accumulator acc[r][c].
__device__ __forceinline__ int k12_row(int r) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int ly = ((lane >> 1) & 1) | ((lane / (2 * K12_LN)) << 1);
    return (warp / K12_WARPS_N) * K12_WM + 4 * ly + 4 * K12_LM * (r / 4) + r % 4;
}
__device__ __forceinline__ int k12_col(int c) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int lx = (lane & 1) | (((lane >> 2) & (K12_LN / 2 - 1)) << 1);
    return (warp % K12_WARPS_N) * K12_WN + 4 * lx + 4 * K12_LN * (c / 4) + c % 4;
}

// C[row0 + .., col0 + ..] = alpha * acc + beta * C for the outputs inside C: float4 stores where
// N and C allow them, else one element at a time.
__device__ __forceinline__ void k12_store(const float (&acc)[K12_TM][K12_TN], int M, int N, float alpha,
                                          float beta, float *__restrict__ C, int row0, int col0) {
    const bool vec = N % 4 == 0 && (reinterpret_cast<uintptr_t>(C) & 15) == 0;
#pragma unroll
    for (int r = 0; r < K12_TM; ++r) {
        const int row = row0 + k12_row(r);
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < K12_TN / 4; ++j) {
            const int col = col0 + k12_col(4 * j);
            const size_t idx = (size_t)row * N + col;
            if (vec) {
                if (col < N)
                    sgemm_store4(C, idx, alpha,
                                 make_float4(acc[r][4 * j + 0], acc[r][4 * j + 1], acc[r][4 * j + 2],
                                             acc[r][4 * j + 3]),
                                 beta);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (col + q < N) sgemm_store(C, idx + q, alpha, acc[r][4 * j + q], beta);
            }
        }
    }
}

// One block's tile of C, the block's (blockIdx.x across N, blockIdx.y down M), over the whole of
// K, stored: the body of a kernel that runs this tile a block per tile.
__device__ __forceinline__ void k12_block(SGEMM_KERNEL_PARAMS, unsigned char *smem) {
    const int row0 = blockIdx.y * K12_BM, col0 = blockIdx.x * K12_BN;
    float acc[K12_TM][K12_TN];
#pragma unroll
    for (int r = 0; r < K12_TM; ++r)
#pragma unroll
        for (int c = 0; c < K12_TN; ++c) acc[r][c] = 0.0f;
    k12_tile(acc, M, N, K, K, A, B, row0, col0, smem);
    k12_store(acc, M, N, alpha, beta, C, row0, col0);
}
