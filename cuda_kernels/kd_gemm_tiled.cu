// KD, the tiled decode GEMM: the decode rung for M of 9 and more on sm_90 (C = A B, A M x K a
// few token rows, B K x N large). B is still nearly all of the bytes, but each of its values now
// meets many rows of A: a tile of BM = 16 or 32 rows reads B once where the streaming GEMV
// (kd_gemv_stream.cu) would read it once per row tile of 8, and the FMAs run from shared memory
// while the copy engine keeps SK_STAGES stages of B in flight, one block per SM.
// - Tile: BM rows by BN = SK_NW * (32 / SK_LR) * SK_TN columns (144 by default), SK_BK = SK_KW *
//   SK_GK values of k a stage; larger M takes several row tiles.
// - A producer warp group (the first 128 threads): lane 0 of its warp 0 issues a stage's tensor
//   copies from block-uniform coordinates (A's BM x (BK + 4) box on one barrier, the GK x BN rows
//   of B of each group along K on the group's own barrier, in boxes of at most 256 columns);
//   warps 1-3 transpose the stage's A, as it lands (As[m][k]), into At[k][m]. setmaxnreg hands
//   the group's registers to the consumers (SK_PRODUCER_REGS and SK_REGS each, sm_90a).
// - SK_KW groups along K of SK_NW consumer warps multiply: group g takes values GK g .. GK g +
//   GK - 1 of k of every stage and waits only for its own rows of B; a lane holds BM / SK_LR
//   adjacent rows x SK_TN columns, read with LDS.128 from At and from B. The consumers release
//   each stage on an mbarrier and meet only at a tile's end (named barriers): there the groups'
//   sums are added in the tile's last stage and group 0 stores the tile, while the producers
//   keep copying.
// - The work, (tile, stage of K) units, is cut evenly over the blocks (stream-K: no wave
//   quantisation); a tile a block covers whole is stored, a part of one goes to a workspace slot
//   and the tile's last block adds the parts in the order of K (kd_common.cuh): no float atomics,
//   the same bits every run. The copy engine zero-fills past M, N and K: any M takes one path.
// Entry points kd_gemm_m16 and kd_gemm_m32 (BM = 16, 32); the registry picks 16 up to M = 16 and
// 32 above. Below sm_90 their bodies are empty (SGEMM_SM90: the bindings refuse them there). The
// launcher encodes the tensor maps (tma.cuh); where it cannot, it launches an empty grid, so
// that the launch fails with a CUDA error instead of quietly taking another path.
// Parameters (-D overrides) and device helpers: kd_gemm_tiled.cuh.
// Needs N % 4 == 0, K % 4 == 0 and 16-byte aligned operands (a tensor map's row strides are
// multiples of 16 bytes), and compute capability 9.0 (SGEMM_SM90).
#include "common.cuh"
#include "kd_common.cuh"     // the ticket and the workspace
#include "kd_gemm_tiled.cuh"  // parameters and device helpers
#include "tma.cuh"           // tensor copies, mbarriers and the tensor-map encoder

#include <stdint.h>

template <int BM>
__device__ __forceinline__ void kd_gemm_body(int M, int N, int K, float alpha, float beta, float *__restrict__ C,
                                             float *__restrict__ ws, unsigned *__restrict__ tickets,
                                             const CUtensorMap *map_a, const CUtensorMap *map_b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int TM = BM / KD_SK_LR, F = TM * KD_SK_TN, BN = KD_SK_BN, BW = KD_SK_BW, BK = KD_SK_BK;
    constexpr int S = KD_SK_STAGES, GK = KD_SK_GK, T = KD_SK_GROUP, LDA = KD_SK_LDA;
    constexpr int A_BYTES = KD_SK_A_BYTES(BM), AT_BYTES = KD_SK_AT_BYTES(BM), STAGE_BYTES = KD_SK_STAGE_BYTES(BM);
    extern __shared__ __align__(128) unsigned char kd_sk_smem[];
    __shared__ bool kd_sk_last;
    const uint32_t base = (tma_saddr(kd_sk_smem) + 127) & ~uint32_t(127);
    // Stage s at base + s STAGE_BYTES: As (A as copied), At, Bs. Its barriers: full + 8 (KW s + g)
    // (group g's rows of Bs landed and At written), empty + 8 s (the consumers are done with it),
    // a_full + 8 s (As landed).
    constexpr int KW = KD_SK_KW;
    const uint32_t full = base + S * STAGE_BYTES, empty = full + 8 * S * KW, a_full = empty + 8 * S;
    const KdUnits u(M, N, K, BM, BN, BK);
    const int n_units = (int)(u.u1 - u.u0);

    if (threadIdx.x == 0) {
        for (int s = 0; s < S; ++s) {
            // full: the copy's expect_tx and warps 1-3, plus the group's bytes of Bs; a_full: the
            // copy's expect_tx, plus As's bytes; empty: one arrival per consumer warp
            for (int g = 0; g < KW; ++g) mbar_init(full + 8 * (KW * s + g), 4);
            mbar_init(a_full + 8 * s, 1);
            mbar_init(empty + 8 * s, KD_SK_WARPS);
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (threadIdx.x < KD_SK_PRODUCERS) {
#if KD_SK_REGS && defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(KD_SK_PRODUCER_REGS));
#endif
        if (threadIdx.x == 0) {
            // ---- lane 0 of warp 0: unit n into stage n % S, once its last use is released; B's
            // rows of each group on the group's own barrier, in the groups' order (a group starts
            // on a stage as soon as its GK rows are in: the first stage's wait is shorter)
            int t = (int)(u.u0 / u.KT), kt = (int)(u.u0 % u.KT);
            for (int n = 0; n < n_units; ++n) {
                const unsigned s = (unsigned)n % S;
                const uint32_t stage = base + s * STAGE_BYTES;
                if (n >= S) mbar_try_wait(empty + 8 * s, (((unsigned)n / S) - 1) & 1);
                mbar_expect(a_full + 8 * s, KD_SK_A_BOX(BM));
                tma_load_2d(stage, map_a, kt * BK, (t / u.slabs) * BM, a_full + 8 * s);
#pragma unroll
                for (int g = 0; g < KW; ++g) {
                    const uint32_t bar = full + 8 * (KW * s + g);
                    mbar_expect(bar, GK * BN * 4);
#pragma unroll
                    for (int j = 0; j < BN / BW; ++j)
                        tma_load_2d(stage + A_BYTES + AT_BYTES + 4 * (j * (BK * BW) + g * (GK * BW)), map_b,
                                    (t % u.slabs) * BN + j * BW, kt * BK + g * GK, bar);
                }
                if (++kt == u.KT) kt = 0, ++t;
            }
        }
        if (threadIdx.x >= 32) {
            // ---- warps 1-3: stage n's As[m][k] into At[k][m], a 4 x 4 block at a time (four
            // LDS.128 of rows 4 mb .. + 3, four STS.128 of k 4 kb .. + 3; at BM = 32 a warp's 32
            // accesses of 16 bytes fall evenly on the 8 bank groups: 4 wavefronts, the fewest)
            constexpr int MB = BM / 4, BLOCKS = MB * (BK / 4);
            for (int n = 0; n < n_units; ++n) {
                const unsigned s = (unsigned)n % S;
                const uint32_t as = base + s * STAGE_BYTES, at = as + A_BYTES;
                mbar_try_wait(a_full + 8 * s, ((unsigned)n / S) & 1);
                for (int e = threadIdx.x - 32; e < BLOCKS; e += KD_SK_PRODUCERS - 32) {
                    const int mb = e % MB, kb = e / MB;
                    float v[4][4];
#pragma unroll
                    for (int r = 0; r < 4; ++r) tma_lds4(v[r], as + 4 * ((4 * mb + r) * LDA + 4 * kb));
#pragma unroll
                    for (int c = 0; c < 4; ++c) {
                        const uint32_t dst = at + 4 * ((4 * kb + c) * BM + 4 * mb);
                        asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "f"(v[0][c]),
                                     "f"(v[1][c]), "f"(v[2][c]), "f"(v[3][c])
                                     : "memory");
                    }
                }
                __syncwarp();
                if (threadIdx.x % 32 == 0)
                    for (int g = 0; g < KW; ++g) mbar_arrive(full + 8 * (KW * s + g));
            }
        }
        return;  // the consumers wait for every copy before they leave
    }

    // ---- the consumers: warp (kg, wn) = group kg along K, wn along N
#if KD_SK_REGS && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(KD_SK_REGS));
#endif
    const int ctid = threadIdx.x - KD_SK_PRODUCERS, lane = ctid % 32, kg = ctid / T, tid = ctid % T, wn = tid / 32;
    const int rg = lane % KD_SK_LR, cg = lane / KD_SK_LR;
    float acc[F];
#pragma unroll
    for (int f = 0; f < F; ++f) acc[f] = 0.0f;
    int ct = (int)(u.u0 / u.KT), ck = (int)(u.u0 % u.KT);
    const uint32_t a_lds0 = base + A_BYTES + 4 * (GK * kg * BM + TM * rg);
    // the warp's columns lie in box (wn WN) / BW, at (wn WN) % BW
    const uint32_t b_box =
        base + A_BYTES + AT_BYTES + 4 * ((wn * KD_SK_WN) / BW * (BK * BW) + GK * kg * BW + (wn * KD_SK_WN) % BW);
    const uint32_t b_lds0 = b_box + 4 * (4 * cg), b_lde0 = b_box + 4 * (4 * KD_SK_LC * KD_SK_TN4 + KD_SK_TE * cg);
    // The block's part of one tile at a time: units n .. n + seg - 1 of tile t, then its end. (The
    // tile's end outside this inner loop: inside it, ptxas moved the sums between registers every
    // stage.)
    for (int n = 0; n < n_units;) {
        const int t = ct, seg = min(n_units - n, u.KT - ck);
        const bool tile_done = ck + seg == u.KT;
        ck = 0, ++ct;
        for (const int n_end = n + seg; n < n_end; ++n) {
            const unsigned s = (unsigned)n % S;  // unsigned: % and / by S without a sign correction
            mbar_try_wait(full + 8 * (KW * s + kg), ((unsigned)n / S) & 1);
            kd_stage_fma<TM>(acc, a_lds0 + s * STAGE_BYTES, b_lds0 + s * STAGE_BYTES, b_lde0 + s * STAGE_BYTES);
            __syncwarp();
            // the warp is done with stage s (the tile's last stays held where the groups' sums meet in it)
            if (lane == 0 && (KD_SK_KW == 1 || n + 1 < n_end)) mbar_arrive(empty + 8 * s);
        }
        if (KD_SK_KW > 1) {
            // The groups' sums added in the tile's last stage, in rounds: the upper half of the
            // `active` groups leaves its sums there and the lower half adds them (a fixed order,
            // the same every run); the stage is released after.
            const unsigned s = (unsigned)(n - 1) % S;
            float *const rs = reinterpret_cast<float *>(kd_sk_smem + (base - tma_saddr(kd_sk_smem)) + s * STAGE_BYTES);
            kd_consumers_sync();  // every warp's loads of stage s are done
#pragma unroll
            for (int active = KD_SK_KW; active > 1; active = (active + 1) / 2) {
                const int half = (active + 1) / 2;
                if (kg >= half && kg < active)
                    kd_flat_put(acc, rs + (size_t)(kg - half) * (BM * BN), T, tid, kd_put<KdFlat<F>::V, false>);
                kd_consumers_sync();
                if (kg < active - half)
                    kd_flat_add(acc, rs + (size_t)kg * (BM * BN), T, tid, kd_get<KdFlat<F>::V, false>);
                if (half > 1) kd_consumers_sync();
            }
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // before the copy engine writes it again
            __syncwarp();
            if (lane == 0) mbar_arrive(empty + 8 * s);
        }
        if (kg == 0)
            kd_tile_end<BM>(acc, t, tile_done, u, M, N, alpha, beta, C, ws, tickets, tid, wn, rg, cg, &kd_sk_last);
#pragma unroll
        for (int f = 0; f < F; ++f) acc[f] = 0.0f;
    }
#endif
}

// One kernel per row tile BM.
#define KD_GEMM_KERNEL(name, bm)                                                                  \
    extern "C" __global__ void __launch_bounds__(KD_SK_THREADS, KD_SK_BOUND_BLOCKS)                \
        name(SGEMM_KERNEL_PARAMS, float *__restrict__ ws, unsigned *__restrict__ tickets,          \
             const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b) { \
        kd_gemm_body<bm>(M, N, K, alpha, beta, C, ws, tickets, &map_a, &map_b);                    \
    }
KD_GEMM_KERNEL(kd_gemm_m16, 16)
KD_GEMM_KERNEL(kd_gemm_m32, 32)

// The launch of the kernel of BM rows: the tensor maps of A (BM x (BK + 4) boxes) and B (GK x BW
// boxes, kd_maps); a grid of SK_BLOCKS_PER_SM blocks per SM (at most what fits: the occupancy query, made
// once per device), each given at least SK_MIN_KTILES stages of K; two workspace slots a block
// and a ticket a tile. Without the driver's encoder, or where a map cannot be encoded, the
// kernel is launched on an empty grid and the launch error says so; out of memory for the
// workspace, nothing is launched and the caller sees C unwritten.
typedef void (*KdGemmKernel)(SGEMM_KERNEL_PARAMS, float *, unsigned *, const CUtensorMap, const CUtensorMap);

// The tensor maps of the last KD_MAP_CACHE operand sets a host thread launched with, per row tile:
// a decode step multiplies the same weights and activation buffers again and again, and encoding
// two maps costs the host more than the launch does. A map holds only the address, the shape and
// the box, so a cached one is right for any tensor at that address and shape.
#define KD_MAP_CACHE 8
struct KdMaps {
    const float *a = nullptr, *b = nullptr;
    int M = 0, N = 0, K = 0;
    CUtensorMap map_a, map_b;
};
template <int BM>
static const KdMaps *kd_maps(const float *A, const float *B, int M, int N, int K) {
    thread_local KdMaps cache[KD_MAP_CACHE];
    thread_local int next = 0;
    for (const KdMaps &c : cache)
        if (c.a == A && c.b == B && c.M == M && c.N == N && c.K == K) return &c;
    const TmaEncode encode = tma_encoder();
    KdMaps &c = cache[next];
    if (!encode || !tma_map(encode, &c.map_a, A, M, K, BM, KD_SK_LDA) ||
        !tma_map(encode, &c.map_b, B, K, N, KD_SK_GK, KD_SK_BW)) {
        c.a = nullptr;  // nothing cached for a failed encode
        return nullptr;
    }
    c.a = A, c.b = B, c.M = M, c.N = N, c.K = K;
    next = (next + 1) % KD_MAP_CACHE;
    return &c;
}

template <int BM>
static void kd_gemm_launch(KdGemmKernel kernel, int M, int N, int K, float alpha, const float *A, const float *B,
                           float beta, float *C, cudaStream_t stream) {
    static int resident[64];  // blocks of this kernel that fit an SM, per device (0: not asked yet)
    constexpr int smem = KD_SK_SMEM(BM);
    int dev = 0;
    KdWorkspace &w = kd_device(&dev);
    int &fit = resident[dev % 64];
    if (!fit) {
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, KD_SK_THREADS, smem);
        if (fit < 1) fit = 1;
    }
    const KdMaps *maps = kd_maps<BM>(A, B, M, N, K);
    if (!maps) {
        CUtensorMap none{};
        kernel<<<dim3(0), KD_SK_THREADS, smem, stream>>>(M, N, K, alpha, A, B, beta, C, w.ws, w.tickets, none,
                                                         none);
        return;
    }
    const long long tiles = (long long)sgemm_cdiv(M, BM) * sgemm_cdiv(N, KD_SK_BN);
    const long long units = tiles * sgemm_cdiv(K, KD_SK_BK);
    long long grid = (long long)min(KD_SK_BLOCKS_PER_SM, fit) * w.sms;
    grid = min(grid, max(1LL, units / KD_SK_MIN_KTILES));
    if (!kd_reserve(w, (size_t)2 * grid * BM * KD_SK_BN * sizeof(float), (size_t)tiles, stream)) return;
    kernel<<<(unsigned)grid, KD_SK_THREADS, smem, stream>>>(M, N, K, alpha, A, B, beta, C, w.ws, w.tickets,
                                                            maps->map_a, maps->map_b);
}

void launch_kd_gemm_m16(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
                        cudaStream_t stream) {
    kd_gemm_launch<16>(kd_gemm_m16, M, N, K, alpha, A, B, beta, C, stream);
}
void launch_kd_gemm_m32(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
                        cudaStream_t stream) {
    kd_gemm_launch<32>(kd_gemm_m32, M, N, K, alpha, A, B, beta, C, stream);
}

// BM: the rows of C a tile holds; BN its columns; BK the values of k a stage brings.
SGEMM_REGISTER(kd_gemm_m16, 16, KD_SK_BN, KD_SK_BK, KD_SK_THREADS, SGEMM_VEC4 | SGEMM_SM90 | SGEMM_BALANCED)
SGEMM_REGISTER(kd_gemm_m32, 32, KD_SK_BN, KD_SK_BK, KD_SK_THREADS, SGEMM_VEC4 | SGEMM_SM90 | SGEMM_BALANCED)
