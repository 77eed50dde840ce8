// K8: K7 with warp tiling. The 128x128x8 block tile is split among 8 warps (4 down x 2 across),
// each owning a 32x64 warp tile; a warp's 32 lanes form a 4 x 8 grid and a lane (ly, lx) owns
// 8x8 outputs as 2x2 sub-blocks of 4x4: rows 16i + 4ly + 0..3 and columns 32j + 4lx + 0..3 of
// its warp tile (i, j = 0, 1). Per k-step a thread reads 2 LDS.128 of A and 2 of B for 64 FMAs,
// as in K7, but a warp's A load now touches 4 distinct 16-byte words (64 contiguous bytes) and its
// B load 8 (128 contiguous bytes): each fits the 32 banks once, so a warp's k-step needs 4
// 128-byte shared rows (bank passes) against K7's 10 (K7: A 1 each, B 16 words 32 bytes apart,
// 4-way conflicted: 4 each). The lane -> (ly, lx) map also meets the uniform-address packing rule
// (lanes n and n^1 read the same A word, lanes n and n^2 the same B word; NVIDIA documents it for
// cc 7.x, Nsight's shared-load wavefront count checks it on the H200), under which an LDS.128
// returns in 2 wavefronts instead of 4 (128 bytes per cycle): 8 wavefronts per warp k-step against
// K7's 12. As rows are padded by 4 floats so that the transposing A store (lanes 2q, 2q+1 write
// rows k and k + 4 of As) is conflict-free too.
// Global loads are K7's: per phase 1 LDG.128 of A, 1 of B (8 elements) for 512 FMAs.
// Needs N % 4 == 0 and K % 4 == 0 (and 16-byte aligned pointers), like K6.
#include "common.cuh"

#define K8_BM 128
#define K8_BN 128
#define K8_BK 8
#define K8_THREADS 256
#define K8_WARPS_M 4                    // warps down the block tile
#define K8_WARPS_N 2                    // warps across it
#define K8_WM (K8_BM / K8_WARPS_M)      // 32: rows of a warp tile
#define K8_WN (K8_BN / K8_WARPS_N)      // 64: columns of a warp tile
#define K8_LM 4                         // lane rows in a warp tile
#define K8_LN 8                         // lane columns
#define K8_TM 8                         // rows per thread: 2 sub-blocks of 4, K8_LM * 4 apart
#define K8_TN 8                         // columns per thread: 2 sub-blocks of 4, K8_LN * 4 apart
#define K8_PAD 4                        // As row padding (floats): conflict-free transposing store
#define K8_AS_LD (K8_BM + K8_PAD)       // As row length: 132 floats = 528 bytes (16-byte multiple)

static_assert(K8_WARPS_M * K8_WARPS_N * 32 == K8_THREADS, "8 warps");
static_assert(K8_LM * K8_LN == 32 && K8_LM * K8_TM == K8_WM && K8_LN * K8_TN == K8_WN,
              "lanes tile the warp tile");
static_assert(K8_BM * K8_BK / 4 == K8_THREADS && K8_BK * K8_BN / 4 == K8_THREADS,
              "one float4 of A and one of B per thread per phase");

extern "C" __global__ void __launch_bounds__(K8_THREADS) k8_warp_tile(SGEMM_KERNEL_PARAMS) {
    __shared__ __align__(16) float As[K8_BK][K8_AS_LD];  // transposed: As[k][m]
    __shared__ __align__(16) float Bs[K8_BK][K8_BN];

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    // lane bits: 0 -> lx bit 0, 1 -> ly bit 0, 2-3 -> lx bits 1-2, 4 -> ly bit 1
    const int lx = (lane & 1) | ((lane >> 1) & 6);
    const int ly = ((lane >> 1) & 1) | ((lane >> 3) & 2);
    const int tm = (warp / K8_WARPS_N) * K8_WM + 4 * ly;  // first row of the thread in the tile
    const int tn = (warp % K8_WARPS_N) * K8_WN + 4 * lx;  // first column
    const int row0 = blockIdx.y * K8_BM;
    const int col0 = blockIdx.x * K8_BN;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    // Loader coordinates (K7's). A: a tile row is BK / 4 = 2 float4; B: BN / 4 = 32 float4.
    const int a_m = tid / (K8_BK / 4), a_k = 4 * (tid % (K8_BK / 4));
    const int b_k = tid / (K8_BN / 4), b_n = 4 * (tid % (K8_BN / 4));
    const int am = row0 + a_m, bn = col0 + b_n;

    float acc[K8_TM][K8_TN];
#pragma unroll
    for (int r = 0; r < K8_TM; ++r)
#pragma unroll
        for (int c = 0; c < K8_TN; ++c) acc[r][c] = 0.0f;

    for (int ph = 0; ph < K; ph += K8_BK) {
        {
            const int ak = ph + a_k;
            const float4 v = (am < M && ak < K)
                                 ? *reinterpret_cast<const float4 *>(A + am * K + ak)
                                 : zero;
            As[a_k + 0][a_m] = v.x;
            As[a_k + 1][a_m] = v.y;
            As[a_k + 2][a_m] = v.z;
            As[a_k + 3][a_m] = v.w;
        }
        {
            const int bk = ph + b_k;
            *reinterpret_cast<float4 *>(&Bs[b_k][b_n]) =
                (bk < K && bn < N) ? *reinterpret_cast<const float4 *>(B + bk * N + bn) : zero;
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < K8_BK; ++k) {
            float m[K8_TM], n[K8_TN];
#pragma unroll
            for (int i = 0; i < K8_TM / 4; ++i) {
                const float4 a = *reinterpret_cast<const float4 *>(&As[k][tm + 4 * K8_LM * i]);
                m[4 * i + 0] = a.x;
                m[4 * i + 1] = a.y;
                m[4 * i + 2] = a.z;
                m[4 * i + 3] = a.w;
            }
#pragma unroll
            for (int j = 0; j < K8_TN / 4; ++j) {
                const float4 b = *reinterpret_cast<const float4 *>(&Bs[k][tn + 4 * K8_LN * j]);
                n[4 * j + 0] = b.x;
                n[4 * j + 1] = b.y;
                n[4 * j + 2] = b.z;
                n[4 * j + 3] = b.w;
            }
#pragma unroll
            for (int r = 0; r < K8_TM; ++r)
#pragma unroll
                for (int c = 0; c < K8_TN; ++c) acc[r][c] += m[r] * n[c];
        }
        __syncthreads();
    }

    // Epilogue: float4 stores; N % 4 == 0, so col < N means col + 3 < N.
#pragma unroll
    for (int r = 0; r < K8_TM; ++r) {
        const int row = row0 + tm + 4 * K8_LM * (r / 4) + r % 4;
        if (row < M) {
#pragma unroll
            for (int j = 0; j < K8_TN / 4; ++j) {
                const int col = col0 + tn + 4 * K8_LN * j;
                if (col < N) {
                    float4 *out = reinterpret_cast<float4 *>(C + row * N + col);
                    float4 v = make_float4(alpha * acc[r][4 * j + 0], alpha * acc[r][4 * j + 1],
                                           alpha * acc[r][4 * j + 2], alpha * acc[r][4 * j + 3]);
                    if (beta != 0.0f) {  // with beta == 0 the old C is never read
                        const float4 old = *out;
                        v.x += beta * old.x;
                        v.y += beta * old.y;
                        v.z += beta * old.z;
                        v.w += beta * old.w;
                    }
                    *out = v;
                }
            }
        }
    }
}

void launch_k8_warp_tile(int M, int N, int K, float alpha, const float *A, const float *B,
                         float beta, float *C, cudaStream_t stream) {
    const dim3 block(K8_THREADS);
    const dim3 grid(sgemm_cdiv(N, K8_BN), sgemm_cdiv(M, K8_BM));
    k8_warp_tile<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k8_warp_tile, K8_BM, K8_BN, K8_BK, K8_THREADS, SGEMM_VEC4)
