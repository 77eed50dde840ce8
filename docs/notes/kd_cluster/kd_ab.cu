// A/B probe for KD's streaming GEMV: the same kd_gemv_stream.cu built with its default (the splits of K
// summed in a cluster) or with -DKD_CLUSTER_MAX=0 (through the workspace and the ticket). Times every
// (N, K) of the decode panel at M = 1, 2, 4, 8 with CUDA events, the L2 overwritten before every
// repetition; prints one CSV row per point: variant, N, K, M, splits, median, p20, p80 (us), and a
// hash of C's bits (the two variants must agree bit for bit: the splits are added in one order).
#include "kd_gemv_stream.cu"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <vector>

int sgemm_register_kernel(const SgemmKernelInfo &) { return 0; }

__global__ void fill(float *p, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        p[i] = (float)(h & 0xffffff) / 16777216.0f - 0.5f;
    }
}
__global__ void scribble(float *p, size_t n, float v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}
__global__ void hash_bits(const float *c, size_t n, unsigned long long *out) {
    unsigned long long s = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        s += (unsigned long long)__float_as_uint(c[i]) * (i + 1);
    atomicAdd(out, s);
}

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main(int argc, char **argv) {
    const char *variant = argc > 1 ? argv[1] : "?";
    const int reps = argc > 2 ? atoi(argv[2]) : 40;
    const int NK[][2] = {{6144, 4096}, {4096, 4096}, {14336, 4096}, {4096, 14336}, {4608, 3584}, {18944, 3584},
                         {3584, 18944}, {152064, 3584}, {10240, 8192}, {28672, 8192}, {8192, 28672}};
    const int Ms[] = {1, 2, 4, 8};
    typedef void (*Launch)(int, int, int, float, const float *, const float *, float, float *, cudaStream_t);
    const Launch launch[] = {launch_kd_gemv_m1, launch_kd_gemv_m2, launch_kd_gemv_m4, launch_kd_gemv_m8};
    const size_t flush_n = (size_t)64 << 20;  // 256 MiB of floats: several times the L2
    float *flush, *A, *B, *C;
    unsigned long long *h;
    CK(cudaMalloc(&flush, flush_n * 4));
    CK(cudaMalloc(&h, 8));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    KdWorkspace &w = kd_device();
    for (auto &nk : NK) {
        const int N = nk[0], K = nk[1];
        CK(cudaMalloc(&B, (size_t)K * N * 4));
        CK(cudaMalloc(&A, (size_t)8 * K * 4));
        CK(cudaMalloc(&C, (size_t)8 * N * 4));
        fill<<<1024, 256>>>(B, (size_t)K * N, 7u * N + K);
        for (int mi = 0; mi < 4; ++mi) {
            const int M = Ms[mi];
            fill<<<64, 256>>>(A, (size_t)M * K, 11u * M + N);
            scribble<<<64, 256>>>(C, (size_t)M * N, nanf(""));
            for (int i = 0; i < 3; ++i) launch[mi](M, N, K, 1.f, A, B, 0.f, C, 0);
            CK(cudaDeviceSynchronize());
            CK(cudaMemset(h, 0, 8));
            hash_bits<<<64, 256>>>(C, (size_t)M * N, h);
            unsigned long long hv = 0;
            CK(cudaMemcpy(&hv, h, 8, cudaMemcpyDeviceToHost));
            std::vector<float> t;
            for (int r = 0; r < reps; ++r) {
                scribble<<<1024, 256>>>(flush, flush_n, (float)r);
                cudaEventRecord(e0);
                launch[mi](M, N, K, 1.f, A, B, 0.f, C, 0);
                cudaEventRecord(e1);
                CK(cudaEventSynchronize(e1));
                float ms;
                cudaEventElapsedTime(&ms, e0, e1);
                t.push_back(ms * 1000.f);
            }
            CK(cudaGetLastError());
            std::sort(t.begin(), t.end());
            // the launcher's split count, by its own rule (as kd_stream_launch computes it)
            const int MT = mi == 0 ? 1 : mi == 1 ? 2 : mi == 2 ? 4 : 8;
            const int unroll = MT <= 2 ? KD_UNROLL_FEW : KD_UNROLL_MANY;
            const int tiles = sgemm_cdiv(N, KD_BN) * sgemm_cdiv(M, MT);
            const long long bb = (long long)KD_THREADS * 4 * unroll * 16;
            const long long want = ((long long)KD_INFLIGHT_BYTES * w.sms + bb - 1) / bb;
            int splits = (int)((want + tiles - 1) / tiles);
            splits = std::min(splits, std::min(KD_MAX_SPLITS, sgemm_cdiv(K / 4, KD_TG * unroll)));
            if (splits < 1) splits = 1;
            printf("%s,%d,%d,%d,%d,%.3f,%.3f,%.3f,%llx\n", variant, N, K, M, splits, t[reps / 2], t[reps / 5],
                   t[4 * reps / 5], hv);
            fflush(stdout);
        }
        cudaFree(A); cudaFree(B); cudaFree(C);
    }
    return 0;
}
