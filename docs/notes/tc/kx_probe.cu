// A 3xTF32 SGEMM on Hopper's warp-group MMA (wgmma), standalone: the probe behind a CUDA tensor-core
// rung. C = A_hi B_hi + A_hi B_lo + A_lo B_hi with x = hi + lo, hi = tf32(x), lo = tf32(x - hi).
//  1. split: A (M x K, row-major) into A_hi, A_lo (the same layout, K-major); B (K x N, row-major)
//     into B_hi^T, B_lo^T (N x K, K-major: wgmma takes 32-bit operands K-major only).
//  2. multiply: a block of 128 x BN outputs, a producer warp group whose one thread issues the four
//     tensor copies of a stage (boxes of 32 k x rows, 128-byte swizzle: the layout wgmma reads),
//     two consumer warp groups of 64 rows each, three wgmma m64nBNk8 per 8 k, FP32 accumulators in
//     registers; stages released one group behind (wgmma.wait_group 1).
// Build: nvcc -O3 -std=c++17 -arch=sm_90a -I cuda_kernels docs/notes/tc/kx_probe.cu -o kx
// Run: ./kx [M N K] -> one JSON line: the check against float64 on sampled outputs, the times.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "tma.cuh"

#ifndef KX_BN
#define KX_BN 128
#endif
#ifndef KX_STAGES
#define KX_STAGES 3
#endif
#ifndef KX_PROMOTE
#define KX_PROMOTE 1  // k-tiles whose products a fresh accumulator takes before they are added to FP32 sums
#endif
#ifndef KX_DOUBLE_T
#define KX_DOUBLE_T 0  // 1: two fresh accumulators in turn, each added one group late
#endif
#ifndef KX_GROUP_M
#define KX_GROUP_M 8
#endif
#define KX_BM 128
#define KX_BK 32  // one 128-byte swizzle row of floats
#define KX_THREADS 384
constexpr int A_BYTES = KX_BM * KX_BK * 4;
constexpr int B_BYTES = KX_BN * KX_BK * 4;
constexpr int STAGE_BYTES = 2 * A_BYTES + 2 * B_BYTES;
constexpr int SMEM_BYTES = KX_STAGES * STAGE_BYTES + 1024 + 2 * KX_STAGES * 8;

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e = (x);                                                                     \
        if (e != cudaSuccess) {                                                                  \
            printf("{\"error\": \"%s at line %d\"}\n", cudaGetErrorString(e), __LINE__);         \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

__device__ __forceinline__ float tf32_round(float x) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return __uint_as_float(r & 0xFFFFE000u);
}

__global__ void split_rows(const float *__restrict__ x, float *__restrict__ hi, float *__restrict__ lo, size_t n4) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = reinterpret_cast<const float4 *>(x)[i], h, l;
        h.x = tf32_round(v.x), h.y = tf32_round(v.y), h.z = tf32_round(v.z), h.w = tf32_round(v.w);
        l.x = tf32_round(v.x - h.x), l.y = tf32_round(v.y - h.y), l.z = tf32_round(v.z - h.z),
        l.w = tf32_round(v.w - h.w);
        reinterpret_cast<float4 *>(hi)[i] = h;
        reinterpret_cast<float4 *>(lo)[i] = l;
    }
}

// B (K x N) -> hi^T, lo^T (N x K): 32 x 32 tiles through shared memory, 32 x 8 threads.
__global__ void split_transpose(const float *__restrict__ b, int K, int N, float *__restrict__ hi,
                                float *__restrict__ lo) {
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
            const float v = t[threadIdx.x][r], h = tf32_round(v);
            hi[(size_t)n * K + k] = h;
            lo[(size_t)n * K + k] = tf32_round(v - h);
        }
    }
}

// A shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row groups 1024 bytes apart.
__device__ __forceinline__ uint64_t desc(uint32_t saddr) {
    return (uint64_t)((saddr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
           ((uint64_t)1 << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

#define R8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#if KX_BN == 128
__device__ __forceinline__ void mma(float (&d)[64], uint64_t da, uint64_t db, int accumulate) {
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
        : R8(0), R8(8), R8(16), R8(24), R8(32), R8(40), R8(48), R8(56)
        : "l"(da), "l"(db), "r"(accumulate));
}
#else
#error "KX_BN: 128 only in this probe"
#endif
constexpr int ACC = KX_BN / 2;  // accumulators per thread: 64 rows x BN over 128 threads

// The tile (m0, n0) of block `pid`: GROUP_M rows of tiles walk the columns together (B's panels
// stay in the L2 while they are read again); 0: a plain row-major order of tiles.
__device__ __forceinline__ void tile_of(int pid, int M, int N, int &m0, int &n0) {
    const int tn = (N + KX_BN - 1) / KX_BN, tm = (M + KX_BM - 1) / KX_BM;
#if KX_GROUP_M > 0
    const int group = KX_GROUP_M * tn, first = (pid / group) * KX_GROUP_M;
    const int rows = min(tm - first, KX_GROUP_M);
    m0 = (first + (pid % group) % rows) * KX_BM;
    n0 = ((pid % group) / rows) * KX_BN;
#else
    m0 = (pid / tn) * KX_BM;
    n0 = (pid % tn) * KX_BN;
#endif
}

__global__ void __launch_bounds__(KX_THREADS, 1)
    kx_mma(int M, int N, int K, float *__restrict__ C, const __grid_constant__ CUtensorMap map_ah,
           const __grid_constant__ CUtensorMap map_al, const __grid_constant__ CUtensorMap map_bh,
           const __grid_constant__ CUtensorMap map_bl) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = tma_saddr(smem_raw);
    const uint32_t base = (raw + 1023) & ~1023u;  // swizzled tiles start on 1024 bytes
    const uint32_t bars = base + KX_STAGES * STAGE_BYTES;
    auto full = [&](int s) { return bars + 8 * s; };
    auto empty = [&](int s) { return bars + 8 * (KX_STAGES + s); };
    const int wg = threadIdx.x / 128;
    int m0, n0;
    tile_of(blockIdx.x, M, N, m0, n0);
    const int kt_n = (K + KX_BK - 1) / KX_BK;
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
                const uint32_t st = base + s * STAGE_BYTES;
                mbar_expect(full(s), STAGE_BYTES);
                tma_load_2d(st, &map_ah, kt * KX_BK, m0, full(s));
                tma_load_2d(st + A_BYTES, &map_al, kt * KX_BK, m0, full(s));
                tma_load_2d(st + 2 * A_BYTES, &map_bh, kt * KX_BK, n0, full(s));
                tma_load_2d(st + 2 * A_BYTES + B_BYTES, &map_bl, kt * KX_BK, n0, full(s));
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        // The tensor cores' sum of many products into one accumulator drops bits at every step
        // (truncation): a group of KX_PROMOTE tiles' products goes into a fresh accumulator t[h],
        // added to the FP32 sums d by FADD (round to nearest) once the next group is under way.
        float d[ACC], t[2][ACC];
#pragma unroll
        for (int i = 0; i < ACC; ++i) d[i] = 0.f;
        const uint32_t a_off = (wg - 1) * 64 * KX_BK * 4;  // this warp group's 64 rows
        auto issue = [&](int kt, float(&u)[ACC], bool acc) {
            const int s = kt % KX_STAGES;
            mbar_wait(full(s), (kt / KX_STAGES) & 1);
            const uint32_t st = base + s * STAGE_BYTES;
            const uint64_t ah = desc(st + a_off), al = desc(st + A_BYTES + a_off);
            const uint64_t bh = desc(st + 2 * A_BYTES), bl = desc(st + 2 * A_BYTES + B_BYTES);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < KX_BK / 8; ++kk) {  // 8 k: 32 bytes, 2 in the descriptor's units
                mma(u, al + 2 * kk, bh + 2 * kk, acc || kk > 0);
                mma(u, ah + 2 * kk, bl + 2 * kk, 1);
                mma(u, ah + 2 * kk, bh + 2 * kk, 1);
            }
            wg_commit();
        };
        auto add = [&](const float(&u)[ACC]) {
#pragma unroll
            for (int i = 0; i < ACC; ++i) d[i] += u[i];
        };
#if KX_DOUBLE_T
        for (int kt0 = 0; kt0 < kt_n; kt0 += 2 * KX_PROMOTE) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
#pragma unroll
                for (int q = 0; q < KX_PROMOTE; ++q) {
                    const int kt = kt0 + h * KX_PROMOTE + q;
                    if (kt < kt_n) {
                        issue(kt, t[h], q > 0);
                        wg_wait<1>();
                        if (kt > 0 && threadIdx.x % 32 == 0) mbar_arrive(empty((kt - 1) % KX_STAGES));
                        if (q == 0 && kt > 0) add(t[1 - h]);
                    }
                }
            }
        }
        wg_wait<0>();
        if (((kt_n - 1) / KX_PROMOTE) % 2 == 0) add(t[0]);
        else add(t[1]);
#else
        // one accumulator: a group's tiles one behind another, then all of it waited for and
        // added (the other consumer warp group's products keep the tensor cores busy meanwhile)
        for (int kt0 = 0; kt0 < kt_n; kt0 += KX_PROMOTE) {
#pragma unroll
            for (int q = 0; q < KX_PROMOTE; ++q) {
                const int kt = kt0 + q;
                if (kt < kt_n) {
                    issue(kt, t[0], q > 0);
                    if (q + 1 < KX_PROMOTE && kt + 1 < kt_n) {
                        wg_wait<1>();
                        if (kt > kt0 && threadIdx.x % 32 == 0) mbar_arrive(empty((kt - 1) % KX_STAGES));
                    }
                }
            }
            wg_wait<0>();
            if (threadIdx.x % 32 == 0) {
                const int last = min(kt0 + KX_PROMOTE, kt_n) - 1;
                for (int kt = (KX_PROMOTE > 1 ? last - 1 : last); kt <= last; ++kt)
                    if (kt >= kt0) mbar_arrive(empty(kt % KX_STAGES));
            }
            add(t[0]);
        }
#endif
        // the accumulator layout of wgmma m64nN: warp w of the group rows 16w + lane / 4 (+ 8),
        // columns 8j + 2 (lane % 4) (+ 1)
        const int w = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
        const int row = m0 + (wg - 1) * 64 + 16 * w + lane / 4;
#pragma unroll
        for (int j = 0; j < KX_BN / 8; ++j) {
            const int col = n0 + 8 * j + 2 * (lane % 4);
            if (col < N) {
                if (row < M) *reinterpret_cast<float2 *>(C + (size_t)row * N + col) = make_float2(d[4 * j], d[4 * j + 1]);
                if (row + 8 < M)
                    *reinterpret_cast<float2 *>(C + (size_t)(row + 8) * N + col) = make_float2(d[4 * j + 2], d[4 * j + 3]);
            }
        }
    }
}

static bool map128(CUtensorMap *m, const float *p, int rows, int cols, int box_rows) {
    const cuuint64_t dim[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t stride[1] = {(cuuint64_t)cols * 4};
    const cuuint32_t box[2] = {KX_BK, (cuuint32_t)box_rows}, step[2] = {1, 1};
    return tma_encoder()(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)p, dim, stride, box, step,
                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

__global__ void flush_read(const float4 *p, size_t n, float *sink) {
    float s = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = p[i];
        s += v.x + v.y + v.z + v.w;
    }
    if (s == 12345.f) *sink = s;
}

int main(int argc, char **argv) {
    const int M = argc > 3 ? atoi(argv[1]) : 4096, N = argc > 3 ? atoi(argv[2]) : 4096, K = argc > 3 ? atoi(argv[3]) : 4096;
    const size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    std::vector<float> ha(na), hb(nb), hc(nc);
    std::mt19937 gen(7);
    std::normal_distribution<float> nd;
    for (auto &x : ha) x = nd(gen);
    for (auto &x : hb) x = nd(gen);
    float *a, *b, *c, *ah, *al, *bh, *bl, *fl, *sink;
    const size_t nfl = (size_t)64 << 20;  // 256 MB read between repetitions
    CK(cudaMalloc(&a, na * 4)); CK(cudaMalloc(&b, nb * 4)); CK(cudaMalloc(&c, nc * 4));
    CK(cudaMalloc(&ah, na * 4)); CK(cudaMalloc(&al, na * 4)); CK(cudaMalloc(&bh, nb * 4)); CK(cudaMalloc(&bl, nb * 4));
    CK(cudaMalloc(&fl, nfl * 4)); CK(cudaMalloc(&sink, 4));
    CK(cudaMemset(fl, 0, nfl * 4));
    CK(cudaMemcpy(a, ha.data(), na * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, hb.data(), nb * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(c, 0xff, nc * 4));  // NaN
    CUtensorMap mah, mal, mbh, mbl;
    if (!map128(&mah, ah, M, K, KX_BM) || !map128(&mal, al, M, K, KX_BM) || !map128(&mbh, bh, N, K, KX_BN) ||
        !map128(&mbl, bl, N, K, KX_BN)) {
        printf("{\"error\": \"tensor map\"}\n");
        return 1;
    }
    CK(cudaFuncSetAttribute(kx_mma, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
    auto split = [&] {
        split_rows<<<132 * 8, 256>>>(a, ah, al, na / 4);
        split_transpose<<<dim3((N + 31) / 32, (K + 31) / 32), dim3(32, 8)>>>(b, K, N, bh, bl);
    };
    const int tiles = ((M + KX_BM - 1) / KX_BM) * ((N + KX_BN - 1) / KX_BN);
    auto mult = [&] { kx_mma<<<tiles, KX_THREADS, SMEM_BYTES>>>(M, N, K, c, mah, mal, mbh, mbl); };
    split();
    mult();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hc.data(), c, nc * 4, cudaMemcpyDeviceToHost));
    std::vector<float> hah(na), hal(na), hbh(nb), hbl(nb);  // the split, as the device wrote it
    CK(cudaMemcpy(hah.data(), ah, na * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hal.data(), al, na * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hbh.data(), bh, nb * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hbl.data(), bl, nb * 4, cudaMemcpyDeviceToHost));
    // check on 2048 sampled outputs against float64, beside a sequential FP32 sum of the same and
    // the three products of the device's split summed in float64 (what 3xTF32 can reach)
    double num = 0, den = 0, num32 = 0, num3 = 0;
    uint32_t lowbits = 0;
    int bad = 0;
    std::mt19937 pick(3);
    for (int t = 0; t < 2048; ++t) {
        const int i = pick() % M, j = pick() % N;
        double r = 0, r3 = 0;
        float r32 = 0;
        for (int k = 0; k < K; ++k) {
            r += (double)ha[(size_t)i * K + k] * hb[(size_t)k * N + j];
            r32 = fmaf(ha[(size_t)i * K + k], hb[(size_t)k * N + j], r32);
            const double xh = hah[(size_t)i * K + k], xl = hal[(size_t)i * K + k];
            const double yh = hbh[(size_t)j * K + k], yl = hbl[(size_t)j * K + k];
            r3 += xh * yh + xh * yl + xl * yh;
            uint32_t u;
            memcpy(&u, &hah[(size_t)i * K + k], 4);
            lowbits |= u & 0x1FFF;
        }
        num3 += (r3 - r) * (r3 - r);
        const double v = hc[(size_t)i * N + j];
        if (!std::isfinite(v)) ++bad;
        num += (v - r) * (v - r), den += r * r, num32 += ((double)r32 - r) * ((double)r32 - r);
    }
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    auto timeit = [&](auto fn, int reps) {
        std::vector<float> t;
        for (int r = 0; r < reps + 2; ++r) {
            flush_read<<<132 * 4, 512>>>(reinterpret_cast<const float4 *>(fl), nfl / 4, sink);
            CK(cudaEventRecord(e0));
            fn();
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r >= 2) t.push_back(ms);
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    };
    const float ms_split = timeit(split, 20), ms_mult = timeit(mult, 20), ms_all = timeit([&] { split(); mult(); }, 20);
    const double fl2 = 2.0 * M * N * K;
    printf("{\"M\": %d, \"N\": %d, \"K\": %d, \"BN\": %d, \"stages\": %d, \"nonfinite\": %d, \"rel_err\": %.3e, "
           "\"rel_err_fp32_seq\": %.3e, \"rel_err_split_f64\": %.3e, \"hi_low_bits\": %u, \"promote\": %d, \"double_t\": %d, \"group_m\": %d, \"ms_split\": %.4f, \"ms_mma\": %.4f, \"ms\": %.4f, \"tflops_mma\": %.1f, "
           "\"tflops\": %.1f}\n",
           M, N, K, KX_BN, KX_STAGES, bad, sqrt(num / den), sqrt(num32 / den), sqrt(num3 / den), lowbits, KX_PROMOTE,
           KX_DOUBLE_T, KX_GROUP_M, ms_split, ms_mult, ms_all,
           fl2 / ms_mult / 1e9, fl2 / ms_all / 1e9);
    return 0;
}
