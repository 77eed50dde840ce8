// K6: K5 with 128-bit loads. Same 32x128 block tile and 128 threads; a thread owns rows
// i0..i0+7 (i0 = 8*ty) and the 4 adjacent columns 4tx..4tx+3. Per phase a thread issues
// 2 float4 loads of A and 8 of B; per k-step 3 LDS.128 feed 32 FMAs.
// Needs N % 4 == 0 and K % 4 == 0 (and 16-byte aligned pointers): then every float4 is
// either wholly inside the matrix or wholly outside, so one guard per float4 suffices.
#include "common.cuh"

#define K6_BM 32
#define K6_BN 128
#define K6_BK 32
#define K6_TM 8                        // rows per thread
#define K6_THREADS 128
#define K6_ROWS (K6_BM / K6_TM)        // blockDim.y = 4
#define K6_A_VECS (K6_BM * K6_BK / 4 / K6_THREADS)  // 2 float4 of A per thread per phase
#define K6_B_VECS (K6_BK * K6_BN / 4 / K6_THREADS)  // 8 float4 of B per thread per phase

extern "C" __global__ void k6_vectorized(SGEMM_KERNEL_PARAMS) {
    __shared__ __align__(16) float Ads[K6_BK][K6_BM];  // transposed: Ads[k][m]
    __shared__ __align__(16) float Bds[K6_BK][K6_BN];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * 32 + tx;
    const int row0 = blockIdx.y * K6_BM;
    const int col0 = blockIdx.x * K6_BN;
    const int i0 = ty * K6_TM;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    float acc[K6_TM][4];
#pragma unroll
    for (int r = 0; r < K6_TM; ++r)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[r][c] = 0.0f;

    for (int ph = 0; ph < K; ph += K6_BK) {
        // A: a tile row is 8 float4 along K; transpose A while storing it
#pragma unroll
        for (int i = 0; i < K6_A_VECS; ++i) {
            const int f = tid + K6_THREADS * i;
            const int m = f / (K6_BK / 4), kq = 4 * (f % (K6_BK / 4));
            const int am = row0 + m, ak = ph + kq;
            const float4 v = (am < M && ak < K)
                                 ? *reinterpret_cast<const float4 *>(A + am * K + ak)
                                 : zero;
            Ads[kq + 0][m] = v.x;
            Ads[kq + 1][m] = v.y;
            Ads[kq + 2][m] = v.z;
            Ads[kq + 3][m] = v.w;
        }
        // B: a tile row is 32 float4; lane tx takes columns 4tx..4tx+3 of rows ty + 4i
#pragma unroll
        for (int i = 0; i < K6_B_VECS; ++i) {
            const int k = ty + K6_ROWS * i;
            const int bk = ph + k, bn = col0 + 4 * tx;
            *reinterpret_cast<float4 *>(&Bds[k][4 * tx]) =
                (bk < K && bn < N) ? *reinterpret_cast<const float4 *>(B + bk * N + bn)
                                   : zero;
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < K6_BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4 *>(&Ads[k][i0]);      // broadcast
            const float4 a1 = *reinterpret_cast<const float4 *>(&Ads[k][i0 + 4]);  // broadcast
            const float4 b = *reinterpret_cast<const float4 *>(&Bds[k][4 * tx]);   // 32-way
            const float m[K6_TM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float n[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int r = 0; r < K6_TM; ++r)
#pragma unroll
                for (int c = 0; c < 4; ++c) acc[r][c] += m[r] * n[c];
        }
        __syncthreads();
    }

    const int col = col0 + 4 * tx;
    if (col < N) {
#pragma unroll
        for (int r = 0; r < K6_TM; ++r) {
            const int row = row0 + i0 + r;
            if (row < M) {
                float4 *out = reinterpret_cast<float4 *>(C + row * N + col);
                float4 v = make_float4(alpha * acc[r][0], alpha * acc[r][1],
                                       alpha * acc[r][2], alpha * acc[r][3]);
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

void launch_k6_vectorized(int M, int N, int K, float alpha, const float *A, const float *B,
                          float beta, float *C, cudaStream_t stream) {
    const dim3 block(32, K6_ROWS);
    const dim3 grid(sgemm_cdiv(N, K6_BN), sgemm_cdiv(M, K6_BM));
    k6_vectorized<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
}

SGEMM_REGISTER(k6_vectorized, K6_BM, K6_BN, K6_BK, K6_THREADS, SGEMM_VEC4)
