// K11: K10's tile and lane map with the operands copied global -> shared by the asynchronous
// copy engine (cp.async, sm_80+), STAGES shared stages deep. The copies need no registers and
// no shared stores: K10's prefetch registers (12 floats) and its 8 transposing STS.32 + 1
// STS.128 per phase leave the FMA warps' instruction stream, and the next STAGES - 1 tiles are
// in flight while this one is multiplied. A is copied 4 bytes at a time into As[k][m]
// (transposed on the way: lanes of a warp cover 4 rows x BK values, one 32-byte sector per row,
// and the stores hit 32 distinct banks with the 4-float row padding), B 16 bytes at a time.
// The copies of a phase are spread over its first BK / 2 k-steps (one commit group per phase),
// so even with 2 stages they land before the barrier that ends the phase; out-of-range
// elements are zero-filled by the copy itself (src-size 0). One __syncthreads per phase.
// Every parameter can be overridden with -D (K11_BM, K11_BN, K11_BK, K11_TM, K11_TN,
// K11_WARPS_M, K11_WARPS_N, K11_STAGES, K11_PAD) for a sweep (python -m study.sweep_cuda).
// Default: the fastest variant of `python -m study.sweep_cuda --kernel K11` at 4096^3 over tile,
// thread tile, warp grid, BK and stages: 128 x 256 x 16, 16 x 8 outputs per thread, 4 x 2 warps,
// 2 stages. What the rung costs: the copies' addresses and guards are issued by the FMA warps
// themselves, so their stream holds more instructions per FFMA than K10's (docs/notes/k11.md).
// Needs N % 4 == 0 and K % 4 == 0 (and 16-byte aligned pointers), like K6.
#include "common.cuh"

#ifndef K11_BM
#define K11_BM 128
#endif
#ifndef K11_BN
#define K11_BN 256
#endif
#ifndef K11_BK
#define K11_BK 16
#endif
#ifndef K11_TM
#define K11_TM 16                       // rows per thread: TM / 4 sub-blocks, 4 * LM apart
#endif
#ifndef K11_TN
#define K11_TN 8                        // columns per thread: TN / 4 sub-blocks, 4 * LN apart
#endif
#ifndef K11_WARPS_M
#define K11_WARPS_M 4                   // warps down the block tile
#endif
#ifndef K11_WARPS_N
#define K11_WARPS_N 2                   // warps across it
#endif
#ifndef K11_STAGES
#define K11_STAGES 2                    // shared stages (>= 2): STAGES - 1 tiles in flight
#endif
#ifndef K11_PAD
#define K11_PAD 4                       // As row padding (floats), a multiple of 4
#endif

#define K11_THREADS (K11_WARPS_M * K11_WARPS_N * 32)
#define K11_WM (K11_BM / K11_WARPS_M)   // rows of a warp tile
#define K11_WN (K11_BN / K11_WARPS_N)   // columns of a warp tile
#define K11_LM (K11_WM / K11_TM)        // lane rows in a warp tile
#define K11_LN (K11_WN / K11_TN)        // lane columns
#define K11_AS_LD (K11_BM + K11_PAD)    // As row length (floats)
#define K11_A_COPIES (K11_BM * K11_BK / K11_THREADS)      // 4-byte copies of A per thread per phase
#define K11_B_COPIES (K11_BK * K11_BN / 4 / K11_THREADS)  // 16-byte copies of B per thread per phase
#define K11_ISSUE_STEPS (K11_BK / 2)    // k-steps of a phase that issue its copies
#define K11_STAGE_FLOATS (K11_BK * K11_AS_LD + K11_BK * K11_BN)
#define K11_SMEM_BYTES (K11_STAGES * K11_STAGE_FLOATS * 4)

static_assert(K11_BM % K11_WARPS_M == 0 && K11_BN % K11_WARPS_N == 0, "warps tile the block");
static_assert(K11_TM % 4 == 0 && K11_TN % 4 == 0, "4x4 sub-blocks");
static_assert(K11_WM % K11_TM == 0 && K11_WN % K11_TN == 0 && K11_LM * K11_LN == 32,
              "32 lanes tile the warp tile");
static_assert(K11_LM >= 2 && K11_LN >= 2 && (K11_LN & (K11_LN - 1)) == 0,
              "the lane map needs power-of-two lane rows and columns, at least 2 of each");
static_assert(K11_BK % 2 == 0 && K11_BK >= 2 && K11_PAD % 4 == 0, "even BK, float4 rows");
static_assert(K11_STAGES >= 2, "at least two stages");
static_assert(K11_A_COPIES >= 1 && K11_A_COPIES * K11_THREADS == K11_BM * K11_BK,
              "A tile splits evenly into 4-byte copies per thread");
static_assert(K11_THREADS % K11_BK == 0, "a warp's A copies cover whole rows of the tile");
static_assert(K11_B_COPIES >= 1 && K11_B_COPIES * K11_THREADS * 4 == K11_BK * K11_BN,
              "B tile splits evenly into 16-byte copies per thread");
static_assert(K11_SMEM_BYTES <= 227 * 1024, "the stages fit in shared memory");

// cp.async of 4 / 16 bytes; src_bytes 0 writes zeros and reads nothing.
__device__ __forceinline__ void k11_copy4(float *dst, const float *src, int src_bytes) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void k11_copy16(float *dst, const float *src, int src_bytes) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void k11_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void k11_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

extern "C" __global__ void __launch_bounds__(K11_THREADS, 1) k11_async_stages(SGEMM_KERNEL_PARAMS) {
    // STAGES stages, each As[BK][AS_LD] (transposed: As[k][m]) then Bs[BK][BN]; a stage is
    // named by its first float, so that every address inside it is a constant offset.
    extern __shared__ __align__(16) float k11_smem[];
    auto as = [&](float *st, int k, int m) -> float * { return st + k * K11_AS_LD + m; };
    auto bs = [&](float *st, int k, int n) -> float * { return st + K11_BK * K11_AS_LD + k * K11_BN + n; };
    auto following = [&](float *st) -> float * {  // the stage after st, cyclically
        return st + K11_STAGE_FLOATS == k11_smem + K11_STAGES * K11_STAGE_FLOATS ? k11_smem
                                                                               : st + K11_STAGE_FLOATS;
    };

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    // K10's lane map: lanes n and n^1 share ly (same A words), n and n^2 share lx (same B words)
    const int lx = (lane & 1) | (((lane >> 2) & (K11_LN / 2 - 1)) << 1);
    const int ly = ((lane >> 1) & 1) | ((lane / (2 * K11_LN)) << 1);
    const int tm = (warp / K11_WARPS_N) * K11_WM + 4 * ly;
    const int tn = (warp % K11_WARPS_N) * K11_WN + 4 * lx;
    const int row0 = blockIdx.y * K11_BM;
    const int col0 = blockIdx.x * K11_BN;

    // Copy c of A: element e = tid + THREADS * c of the tile, row e / BK = a_m + A_ROW_STEP * c,
    // column e % BK = a_k (the same for every c because THREADS % BK == 0). Copy c of B: float4
    // f = tid + THREADS * c, row f / (BN / 4) = b_k + B_ROW_STEP * c, column 4 * (f % (BN / 4)).
    constexpr int A_ROW_STEP = K11_THREADS / K11_BK, B_ROW_STEP = K11_THREADS / (K11_BN / 4);
    const int a_m = tid / K11_BK, a_k = tid % K11_BK;
    const int b_k = tid / (K11_BN / 4), b_n = 4 * (tid % (K11_BN / 4));
    unsigned a_rows_ok = 0;  // bit c: copy c's row of A is inside M
#pragma unroll
    for (int c = 0; c < K11_A_COPIES; ++c) a_rows_ok |= (row0 + a_m + A_ROW_STEP * c < M) << c;
    const bool b_col_ok = col0 + b_n < N;  // N % 4 == 0: a float4 is all in or out
    // Tile 0's first copies. A copy that is not ok has src-size 0: it reads nothing (its address
    // may lie outside the operand) and writes zeros.
    const float *a_src = A + (size_t)(row0 + a_m) * K + a_k;
    const float *b_src = B + (size_t)b_k * N + col0 + b_n;
    // Issue the copies of the tile at column `ph` into stage st whose slot is `step` of
    // ISSUE_STEPS (all of them for step < 0).
    auto issue = [&](float *st, int ph, int step) {
#pragma unroll
        for (int c = 0; c < K11_A_COPIES; ++c) {
            if (step >= 0 && c % K11_ISSUE_STEPS != step) continue;
            const bool ok = ((a_rows_ok >> c) & 1) && ph + a_k < K;
            k11_copy4(as(st, a_k, a_m + A_ROW_STEP * c),
                      a_src + (size_t)A_ROW_STEP * c * K + ph, ok ? 4 : 0);
        }
#pragma unroll
        for (int c = 0; c < K11_B_COPIES; ++c) {
            if (step >= 0 && c % K11_ISSUE_STEPS != step) continue;
            const int k = b_k + B_ROW_STEP * c;
            const bool ok = b_col_ok && ph + k < K;
            k11_copy16(bs(st, k, b_n), b_src + (size_t)(ph + B_ROW_STEP * c) * N, ok ? 16 : 0);
        }
    };

    float fa[2][K11_TM], fb[2][K11_TN];  // fragments: two k-steps' worth
    auto load_frag = [&](int buf, float *st, int k) {
#pragma unroll
        for (int i = 0; i < K11_TM / 4; ++i) {
            const float4 a = *reinterpret_cast<const float4 *>(as(st, k, tm + 4 * K11_LM * i));
            fa[buf][4 * i + 0] = a.x;
            fa[buf][4 * i + 1] = a.y;
            fa[buf][4 * i + 2] = a.z;
            fa[buf][4 * i + 3] = a.w;
        }
#pragma unroll
        for (int j = 0; j < K11_TN / 4; ++j) {
            const float4 b = *reinterpret_cast<const float4 *>(bs(st, k, tn + 4 * K11_LN * j));
            fb[buf][4 * j + 0] = b.x;
            fb[buf][4 * j + 1] = b.y;
            fb[buf][4 * j + 2] = b.z;
            fb[buf][4 * j + 3] = b.w;
        }
    };

    float acc[K11_TM][K11_TN];
#pragma unroll
    for (int r = 0; r < K11_TM; ++r)
#pragma unroll
        for (int c = 0; c < K11_TN; ++c) acc[r][c] = 0.0f;

    // Prologue: tiles 0 .. STAGES - 2 in flight, one commit group each (empty past K, so that
    // the group count stays the same in every thread and every phase).
    float *ws = k11_smem;  // the stage being filled
#pragma unroll
    for (int s = 0; s < K11_STAGES - 1; ++s) {
        if (s * K11_BK < K) issue(ws, s * K11_BK, -1);
        k11_commit();
        ws += K11_STAGE_FLOATS;
    }
    k11_wait<K11_STAGES - 2>();  // tile 0 has landed
    __syncthreads();
    float *st = k11_smem;  // the stage being multiplied; ws is the one read in the previous phase
    load_frag(0, st, 0);

    for (int ph = 0; ph < K; ph += K11_BK) {
        const int next = ph + (K11_STAGES - 1) * K11_BK;  // the tile this phase copies
        const bool more = ph + K11_BK < K;  // the same in every thread: barriers stay uniform
#pragma unroll
        for (int k = 0; k < K11_BK; ++k) {
            if (k < K11_ISSUE_STEPS) {
                // Stage ws was last read before the barrier that ended the previous phase.
                if (next < K) issue(ws, next, k);
                if (k == K11_ISSUE_STEPS - 1) k11_commit();
            }
            if (k < K11_BK - 1) {
                load_frag((k + 1) % 2, st, k + 1);
            } else if (more) {
                k11_wait<K11_STAGES - 2>();  // the next tile has landed (for this thread) ...
                __syncthreads();             // ... and for every thread; stage st is free
                load_frag((k + 1) % 2, following(st), 0);
            }
#pragma unroll
            for (int r = 0; r < K11_TM; ++r)
#pragma unroll
                for (int c = 0; c < K11_TN; ++c) acc[r][c] += fa[k % 2][r] * fb[k % 2][c];
        }
        st = following(st);
        ws = following(ws);
    }
    k11_wait<0>();  // no copy outlives the block (they are all empty or consumed by now)

    // Epilogue: float4 stores; N % 4 == 0, so col < N means col + 3 < N.
#pragma unroll
    for (int r = 0; r < K11_TM; ++r) {
        const int row = row0 + tm + 4 * K11_LM * (r / 4) + r % 4;
        if (row < M) {
#pragma unroll
            for (int j = 0; j < K11_TN / 4; ++j) {
                const int col = col0 + tn + 4 * K11_LN * j;
                if (col < N)
                    sgemm_store4(C, (size_t)row * N + col, alpha,
                                 make_float4(acc[r][4 * j + 0], acc[r][4 * j + 1], acc[r][4 * j + 2],
                                             acc[r][4 * j + 3]),
                                 beta);
            }
        }
    }
}

void launch_k11_async_stages(int M, int N, int K, float alpha, const float *A, const float *B,
                             float beta, float *C, cudaStream_t stream) {
    const size_t smem = K11_SMEM_BYTES;
    static int allowed[64];
    sgemm_allow_smem((const void *)k11_async_stages, (int)smem, allowed);
    const dim3 block(K11_THREADS);
    const dim3 grid(sgemm_cdiv(N, K11_BN), sgemm_cdiv(M, K11_BM));
    k11_async_stages<<<grid, block, smem, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k11_async_stages, K11_BM, K11_BN, K11_BK, K11_THREADS, SGEMM_VEC4)
