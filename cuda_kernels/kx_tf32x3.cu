// KX: SGEMM on Hopper's tensor cores at FP32-class error, by 3xTF32. Each operand is split as
// x = hi + lo, hi = tf32(x) and lo = tf32(x - hi) (TF32: 10 explicit mantissa bits, rounded to
// nearest), and C = A_hi B_hi + A_hi B_lo + A_lo B_hi: three TF32 products, the fourth (A_lo B_lo,
// about 2^-22 of the product) left out.
//  - split (two small kernels before the product): A (M x K, row-major) into A_hi and A_lo in the
//    same layout; B (K x N, row-major) into B_hi^T and B_lo^T (N x K) through 32 x 32 shared tiles.
//    Both come out K-major: Hopper's warp-group MMA (wgmma) reads 32-bit operands from shared memory
//    only K-major. They live in a workspace per device, grown on demand.
//  - product: one block of 128 x 128 outputs (the blocks in groups of KX_GROUP_M tile rows that walk
//    the columns together, so that B's panels are read again from the L2). A producer warp group,
//    one thread of it, issues a stage's four tensor copies (A_hi, A_lo, B_hi, B_lo: boxes of 32
//    values of k x 128 rows, 128-byte swizzle, the layout wgmma reads) against the stage's full
//    barrier, KX_STAGES stages ahead; two consumer warp groups of 64 rows each issue, per 8 values of
//    k, three wgmma m64n128k8 (lo hi, hi lo, hi hi) reading both operands from shared memory through
//    matrix descriptors (start address, 1024 bytes between 8-row groups, 128-byte swizzle; the next
//    8 values of k are 32 bytes on in the swizzled row).
//  - accumulation: the tensor cores add each product into their FP32 accumulator with truncation,
//    which over thousands of steps leaves an error far above FP32's. So a k-tile's twelve products
//    go into a fresh accumulator (its first product with scale-d 0), which is waited for and added
//    to the thread's FP32 sums with FADD (round to nearest); the stage is released then. While one
//    consumer warp group adds, the other's products keep the tensor cores busy.
//  - registers: setmaxnreg gives the producer warp group 40 and the consumers 232 (64 sums and 64
//    accumulators a thread).
// Needs N % 4 == 0, K % 4 == 0, 16-byte aligned operands (the split's float4 and the tensor maps'
// row strides) and wgmma, i.e. compute capability 9.0 built as sm_90a (SGEMM_SM90A): elsewhere the
// kernels are empty and the binding refuses to launch them. The variants tried and what they
// measured: docs/notes/tc.md.
#include "common.cuh"
#include "tma.cuh"

#include <stdint.h>

#define KX_BM 128
#define KX_BN 128
#define KX_BK 32  // one 128-byte swizzled row of floats per row of a box
#ifndef KX_STAGES
#define KX_STAGES 3
#endif
#ifndef KX_GROUP_M
#define KX_GROUP_M 8
#endif
#define KX_THREADS 384  // a producer warp group and two consumer warp groups
#define KX_A_BYTES (KX_BM * KX_BK * 4)
#define KX_B_BYTES (KX_BN * KX_BK * 4)
#define KX_STAGE_BYTES (2 * KX_A_BYTES + 2 * KX_B_BYTES)
#define KX_SMEM_BYTES (KX_STAGES * KX_STAGE_BYTES + 1024 + 2 * KX_STAGES * 8)
#define KX_ACC (KX_BN / 2)  // accumulators a consumer thread holds: 64 rows x BN over 128 threads

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// round to the nearest TF32 value (ties away from zero), its 13 low bits cleared
__device__ __forceinline__ float kx_tf32(float x) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return __uint_as_float(r & 0xFFFFE000u);
}
#endif

static __global__ void kx_split_rows(const float *__restrict__ x, float *__restrict__ hi, float *__restrict__ lo,
                                     size_t n4) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        const float4 v = reinterpret_cast<const float4 *>(x)[i];
        const float4 h = make_float4(kx_tf32(v.x), kx_tf32(v.y), kx_tf32(v.z), kx_tf32(v.w));
        reinterpret_cast<float4 *>(hi)[i] = h;
        reinterpret_cast<float4 *>(lo)[i] =
            make_float4(kx_tf32(v.x - h.x), kx_tf32(v.y - h.y), kx_tf32(v.z - h.z), kx_tf32(v.w - h.w));
    }
#endif
}

// B (K x N) into hi^T and lo^T (N x K), a 32 x 32 tile a block of 32 x 8 threads
static __global__ void kx_split_cols(const float *__restrict__ b, int K, int N, float *__restrict__ hi,
                                     float *__restrict__ lo) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    __shared__ float t[32][33];
    const int n0 = blockIdx.x * 32, k0 = blockIdx.y * 32;
    for (int r = threadIdx.y; r < 32; r += 8) {
        const int k = k0 + r, n = n0 + threadIdx.x;
        t[r][threadIdx.x] = (k < K && n < N) ? b[(size_t)k * N + n] : 0.f;
    }
    __syncthreads();
    for (int r = threadIdx.y; r < 32; r += 8) {
        const int n = n0 + r, k = k0 + threadIdx.x;
        if (n < N && k < K) {
            const float v = t[threadIdx.x][r], h = kx_tf32(v);
            hi[(size_t)n * K + k] = h;
            lo[(size_t)n * K + k] = kx_tf32(v - h);
        }
    }
#endif
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// a shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row groups 1024 bytes apart
__device__ __forceinline__ uint64_t kx_desc(uint32_t saddr) {
    return (uint64_t)((saddr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
           ((uint64_t)1 << 62);
}
__device__ __forceinline__ void kx_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void kx_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void kx_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

#define KX_R8(i) \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
// d (+)= A B over 8 values of k: A 64 x 8 and B 128 x 8 (both K-major) in shared memory
__device__ __forceinline__ void kx_mma(float (&d)[KX_ACC], uint64_t da, uint64_t db, int accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1;\n"
        "}\n"
        : KX_R8(0), KX_R8(8), KX_R8(16), KX_R8(24), KX_R8(32), KX_R8(40), KX_R8(48), KX_R8(56)
        : "l"(da), "l"(db), "r"(accumulate));
}
#endif

extern "C" __global__ void __launch_bounds__(KX_THREADS, 1)
    kx_tf32x3(int M, int N, int K, float alpha, float beta, float *__restrict__ C,
              const __grid_constant__ CUtensorMap map_ah, const __grid_constant__ CUtensorMap map_al,
              const __grid_constant__ CUtensorMap map_bh, const __grid_constant__ CUtensorMap map_bl) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t base = (tma_saddr(smem_raw) + 1023) & ~1023u;  // swizzled boxes start on 1024 bytes
    const uint32_t bars = base + KX_STAGES * KX_STAGE_BYTES;
    auto full = [&](int s) { return bars + 8 * s; };
    auto empty = [&](int s) { return bars + 8 * (KX_STAGES + s); };
    // the block's tile: KX_GROUP_M tile rows walk the tile columns together
    const int tn = (N + KX_BN - 1) / KX_BN, tm = (M + KX_BM - 1) / KX_BM;
    const int group = KX_GROUP_M * tn, first = (blockIdx.x / group) * KX_GROUP_M;
    const int rows = min(tm - first, KX_GROUP_M);
    const int m0 = (first + (blockIdx.x % group) % rows) * KX_BM, n0 = ((blockIdx.x % group) / rows) * KX_BN;
    const int kt_n = (K + KX_BK - 1) / KX_BK;
    const int wg = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < KX_STAGES; ++s) {
            mbar_init(full(s), 1);
            mbar_init(empty(s), 8);  // one arrival per consumer warp
        }
        mbar_init_fence();
    }
    __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < kt_n; ++kt) {
                const int s = kt % KX_STAGES;
                if (kt >= KX_STAGES) mbar_wait(empty(s), ((kt / KX_STAGES) - 1) & 1);
                const uint32_t st = base + s * KX_STAGE_BYTES;
                mbar_expect(full(s), KX_STAGE_BYTES);
                tma_load_2d(st, &map_ah, kt * KX_BK, m0, full(s));
                tma_load_2d(st + KX_A_BYTES, &map_al, kt * KX_BK, m0, full(s));
                tma_load_2d(st + 2 * KX_A_BYTES, &map_bh, kt * KX_BK, n0, full(s));
                tma_load_2d(st + 2 * KX_A_BYTES + KX_B_BYTES, &map_bl, kt * KX_BK, n0, full(s));
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        float d[KX_ACC], t[KX_ACC];  // the FP32 sums; the tensor cores' accumulator of one k-tile
#pragma unroll
        for (int i = 0; i < KX_ACC; ++i) d[i] = 0.f;
        const uint32_t a_off = (wg - 1) * 64 * KX_BK * 4;  // this warp group's 64 rows of A
        for (int kt = 0; kt < kt_n; ++kt) {
            const int s = kt % KX_STAGES;
            mbar_wait(full(s), (kt / KX_STAGES) & 1);
            const uint32_t st = base + s * KX_STAGE_BYTES;
            const uint64_t ah = kx_desc(st + a_off), al = kx_desc(st + KX_A_BYTES + a_off);
            const uint64_t bh = kx_desc(st + 2 * KX_A_BYTES), bl = kx_desc(st + 2 * KX_A_BYTES + KX_B_BYTES);
            kx_fence();
#pragma unroll
            for (int kk = 0; kk < KX_BK / 8; ++kk) {  // 8 values of k: 32 bytes, 2 in the descriptor's units
                kx_mma(t, al + 2 * kk, bh + 2 * kk, kk > 0);
                kx_mma(t, ah + 2 * kk, bl + 2 * kk, 1);
                kx_mma(t, ah + 2 * kk, bh + 2 * kk, 1);
            }
            kx_commit();
            kx_wait_all();
            if (threadIdx.x % 32 == 0) mbar_arrive(empty(s));
#pragma unroll
            for (int i = 0; i < KX_ACC; ++i) d[i] += t[i];
        }
        // wgmma m64nN's accumulator layout: warp w of the group holds rows 16 w + lane / 4 (and 8
        // below), columns 8 j + 2 (lane % 4) and the one after
        const int w = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
        const int row = m0 + (wg - 1) * 64 + 16 * w + lane / 4;
#pragma unroll
        for (int j = 0; j < KX_BN / 8; ++j) {
            const int col = n0 + 8 * j + 2 * (lane % 4);
            if (col >= N) continue;  // N % 4 == 0: a pair is wholly in or out
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = row + 8 * h;
                if (r >= M) continue;
                float2 *p = reinterpret_cast<float2 *>(C + (size_t)r * N + col);
                float2 v = make_float2(alpha * d[4 * j + 2 * h], alpha * d[4 * j + 2 * h + 1]);
                if (beta != 0.f) {
                    const float2 c = *p;
                    v.x += beta * c.x, v.y += beta * c.y;
                }
                *p = v;
            }
        }
    }
#endif
}

// The split operands, per device: grown on demand (one launch at a time per device).
struct KxWorkspace {
    float *p = nullptr;
    size_t bytes = 0;
};
static KxWorkspace kx_workspace[64];

static bool kx_map(const TmaEncode encode, CUtensorMap *map, const float *p, int rows, int cols) {
    const cuuint64_t dim[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t stride[1] = {(cuuint64_t)cols * sizeof(float)};
    const cuuint32_t box[2] = {KX_BK, KX_BM}, step[2] = {1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float *>(p), dim, stride, box, step,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

void launch_kx_tf32x3(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
                      cudaStream_t stream) {
    // The bindings have refused what this cannot run (N, K not multiples of 4, unaligned operands,
    // a device other than sm_90). A workspace or tensor map that cannot be had launches nothing
    // but an empty grid, whose error (or cudaMalloc's) the binding reads.
    int dev = 0;
    cudaGetDevice(&dev);
    KxWorkspace &w = kx_workspace[dev % 64];
    const size_t na = (size_t)M * K, nb = (size_t)N * K, bytes = 2 * (na + nb) * sizeof(float);
    if (bytes > w.bytes) {
        cudaFree(w.p);
        if (cudaMalloc(&w.p, bytes) != cudaSuccess) w.p = nullptr;
        w.bytes = w.p ? bytes : 0;
    }
    const size_t smem = KX_SMEM_BYTES;
    static int allowed[64];
    sgemm_allow_smem((const void *)kx_tf32x3, (int)smem, allowed);
    const dim3 block(KX_THREADS);
    const dim3 grid(sgemm_cdiv(M, KX_BM) * sgemm_cdiv(N, KX_BN));
    CUtensorMap ah, al, bh, bl;
    const TmaEncode encode = tma_encoder();
    float *a_hi = w.p, *a_lo = w.p + na, *b_hi = w.p + 2 * na, *b_lo = w.p + 2 * na + nb;
    if (!w.p || !encode || !kx_map(encode, &ah, a_hi, M, K) || !kx_map(encode, &al, a_lo, M, K) ||
        !kx_map(encode, &bh, b_hi, N, K) || !kx_map(encode, &bl, b_lo, N, K)) {
        kx_tf32x3<<<dim3(0), block, smem, stream>>>(M, N, K, alpha, beta, C, ah, al, bh, bl);
        return;
    }
    kx_split_rows<<<1056, 256, 0, stream>>>(A, a_hi, a_lo, na / 4);
    kx_split_cols<<<dim3(sgemm_cdiv(N, 32), sgemm_cdiv(K, 32)), dim3(32, 8), 0, stream>>>(B, K, N, b_hi, b_lo);
    kx_tf32x3<<<grid, block, smem, stream>>>(M, N, K, alpha, beta, C, ah, al, bh, bl);
}

SGEMM_REGISTER(kx_tf32x3, KX_BM, KX_BN, KX_BK, KX_THREADS, SGEMM_VEC4 | SGEMM_SM90 | SGEMM_SM90A)
