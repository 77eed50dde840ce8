// A third design past K12, built by two_kernels.py beside this file (cuda_kernels/ on the include
// path) and timed against K15: K15's tile in two kernels, one after the other on the stream.
//  - k15t_whole: the tiles of the whole waves, a block per tile as in K15 (the grid one-dimensional:
//    tile t is row tile t / tiles_n, column tile t % tiles_n, K15's order).
//  - k15t_tail: the remaining tiles (fewer than the SMs) as a Stream-K walk: their units (tile,
//    phase of K) shared evenly by one block per SM, block b taking units U b / G .. U (b + 1) / G - 1,
//    fewer than a tile's phases, so each block touches at most two tiles. A piece of a tile is left
//    in one of the block's two workspace slots (its first piece, its second); the block of the tile
//    that arrives last (an integer ticket) adds the tile's slots in the order of K and stores. No
//    float atomics: the same bits every run.
// The second design (k15_split_tail.cu) cut the last wave inside K15's function and the parts'
// code cost its main loop more than the cut saved at 4096^3; here the main loop's function is
// K15's own, and the walk's code lives in the tail's function only.
#ifndef K12_B_VEC
#define K12_B_VEC 4
#endif
#include "k12_tile.cuh"
#include "kd_gemm_tiled.cuh"  // the ticket, the slots' moves, the workspace

#ifndef K15T_TAIL_MAXNREG
#define K15T_TAIL_MAXNREG 0  // the tail's register budget; 0: K12_BOUNDS
#endif
#if K15T_TAIL_MAXNREG
#define K15T_TAIL_BOUNDS __maxnreg__(K15T_TAIL_MAXNREG)
#else
#define K15T_TAIL_BOUNDS K12_BOUNDS
#endif

#ifndef K15T_PDL
#define K15T_PDL 0  // 1: the tail is launched as the whole-tile kernel's programmatic dependent
#endif

#define K15T_SLOT (K12_BM * K12_BN)  // floats of one slot: a piece's sums

__device__ __forceinline__ void k15t_zero(float (&acc)[K12_TM][K12_TN]) {
#pragma unroll
    for (int r = 0; r < K12_TM; ++r)
#pragma unroll
        for (int c = 0; c < K12_TN; ++c) acc[r][c] = 0.0f;
}

extern "C" __global__ void K12_BOUNDS k15t_whole(SGEMM_KERNEL_PARAMS) {
    extern __shared__ __align__(16) unsigned char k15t_smem[];
#if K15T_PDL
    // The tail reads nothing this kernel writes: it may start on each SM as soon as that SM is
    // free, once every block of this grid has started (the trigger of the last one to start).
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
    const int tiles_n = sgemm_cdiv(N, K12_BN), t = blockIdx.x;
    const int row0 = (t / tiles_n) * K12_BM, col0 = (t % tiles_n) * K12_BN;
    float acc[K12_TM][K12_TN];
    k15t_zero(acc);
    k12_tile(acc, M, N, K, K, A, B, row0, col0, k15t_smem);
    k12_store(acc, M, N, alpha, beta, C, row0, col0);
}

extern "C" __global__ void K15T_TAIL_BOUNDS k15t_tail(SGEMM_KERNEL_PARAMS, int whole, float *__restrict__ ws,
                                                     unsigned *__restrict__ tickets) {
    extern __shared__ __align__(16) unsigned char k15t_smem[];
    __shared__ bool last;
    const int tiles_n = sgemm_cdiv(N, K12_BN), tiles = sgemm_cdiv(M, K12_BM) * tiles_n;
    const int KT = sgemm_cdiv(K, K12_BK), k_first = K - K12_BK * (KT - 1);
    const long long U = (long long)(tiles - whole) * KT, G = gridDim.x, b = blockIdx.x;
    const long long u0 = U * b / G, u1 = U * (b + 1) / G;
    auto start_of = [&](long long blk) { return U * blk / G; };
    auto block_of = [&](long long u) { return ((u + 1) * G - 1) / U; };
    const int tid = threadIdx.x;
    constexpr int F = K12_TM * K12_TN, H = F / 4, V = KdFlat<F>::V;
    for (long long u = u0; u < u1;) {
        const int local = (int)(u / KT), t = whole + local;
        const int p0 = (int)(u % KT), p1 = (int)min((long long)KT, p0 + (u1 - u));
        const int k_lo = p0 == 0 ? 0 : k_first + K12_BK * (p0 - 1), k_hi = k_first + K12_BK * (p1 - 1);
        const int row0 = (t / tiles_n) * K12_BM, col0 = (t % tiles_n) * K12_BN;
        float acc[K12_TM][K12_TN];
        k15t_zero(acc);
        __syncthreads();  // the last piece's stages are read by every warp before they are refilled
        k12_tile(acc, M, N, k_hi - k_lo, K, A + k_lo, B + (size_t)k_lo * N, row0, col0, k15t_smem);
        const bool first = u == u0;
        u += p1 - p0;
        if (p0 == 0 && p1 == KT) {
            k12_store(acc, M, N, alpha, beta, C, row0, col0);
            continue;
        }
        float(&flat)[F] = reinterpret_cast<float(&)[F]>(acc);
        kd_flat_put(flat, ws + (size_t)(2 * b + (first ? 0 : 1)) * K15T_SLOT, K12_THREADS, tid, kd_put<V, true>);
        const long long t0 = (long long)local * KT, t1 = t0 + KT;  // the tile's units
        const long long bf = block_of(t0), bl = block_of(t1 - 1);
        __syncthreads();
        if (tid == 0) last = kd_ticket(&tickets[local], (unsigned)(bl - bf));
        __syncthreads();
        if (!last) continue;
        // The sum in the order of K, a quarter of a thread's values of a slot in flight at a time.
#pragma unroll
        for (int f = 0; f < F; ++f) flat[f] = 0.0f;
        for (long long bb = bf; bb <= bl; ++bb) {
            const float *part = ws + (size_t)(2 * bb + (start_of(bb) >= t0 ? 0 : 1)) * K15T_SLOT;
#pragma unroll
            for (int h = 0; h < F; h += H) {
                float v[H];
#pragma unroll
                for (int q = 0; q < H / V; ++q)
                    kd_get<V, true>(part + V * ((size_t)(h / V + q) * K12_THREADS + tid), v + V * q);
#pragma unroll
                for (int i = 0; i < H; ++i) flat[h + i] += v[i];
            }
        }
        k12_store(acc, M, N, alpha, beta, C, row0, col0);
        if (tid == 0) tickets[local] = 0;  // ready for the next launch
    }
}

// mode 0: every tile in k15t_whole (K15 with a one-dimensional grid); 1: the whole waves there and
// the rest in k15t_tail, where there are both.
extern "C" int k15t(int M, int N, int K, const float *A, const float *B, float *C, void *stream_, int mode) {
    cudaStream_t stream = static_cast<cudaStream_t>(stream_);
    const size_t smem = K12_SMEM_BYTES;
    static int allowed_w[64], allowed_t[64];
    sgemm_allow_smem((const void *)k15t_whole, (int)smem, allowed_w);
    sgemm_allow_smem((const void *)k15t_tail, (int)smem, allowed_t);
    KdWorkspace &w = kd_device();
    const int tiles = sgemm_cdiv(M, K12_BM) * sgemm_cdiv(N, K12_BN);
    const int whole = tiles / w.sms * w.sms, cut = tiles - whole;
    if (mode == 0 || cut == 0 || whole == 0) {
        k15t_whole<<<tiles, K12_THREADS, smem, stream>>>(M, N, K, 1.0f, A, B, 0.0f, C);
        return (int)cudaGetLastError();
    }
    if (!kd_reserve(w, (size_t)2 * w.sms * K15T_SLOT * sizeof(float), (size_t)cut, stream)) return -2;
    k15t_whole<<<whole, K12_THREADS, smem, stream>>>(M, N, K, 1.0f, A, B, 0.0f, C);
#if K15T_PDL
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(w.sms);
    cfg.blockDim = dim3(K12_THREADS);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    const float one = 1.0f, zero = 0.0f;
    cudaLaunchKernelEx(&cfg, k15t_tail, M, N, K, one, A, B, zero, C, whole, w.ws, w.tickets);
#else
    k15t_tail<<<w.sms, K12_THREADS, smem, stream>>>(M, N, K, 1.0f, A, B, 0.0f, C, whole, w.ws, w.tickets);
#endif
    return (int)cudaGetLastError();
}
