// Python bindings for the SGEMM study kernels: thin wrappers that check their tensors,
// launch on the current CUDA stream and check the launch.
//
// A failed check is *returned* as a fixed description (None: success) rather than thrown or
// formatted: on the GPU image a C++ exception, and even a formatted std::string, on the failure
// path crashed the interpreter, and a bad argument must be a readable error, never a crash.
// The Python side (study.kernels) raises it with the kernel and the shapes.
#include <torch/extension.h>

#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <string>
#include <utility>

#include "common.cuh"

namespace {

// Return a fixed description of the problem from the enclosing function when `cond` is false.
// Messages are string literals: nothing is formatted or allocated on the failure path.
#define REQUIRE(cond, msg)                       \
    do {                                         \
        if (!(cond)) return msg;                 \
    } while (0)

using Launch = void (*)(int, int, int, float, const float *, const float *, float, float *,
                        cudaStream_t);

struct KernelEntry {
    const char *name;      // binding name, as in study/kernels.py ("cuda:k3c")
    const char *symbol;    // kernel name in SASS
    Launch launch;
    bool vec4;             // 128-bit loads: N, K multiples of 4, 16-byte aligned pointers
    bool y_walks_n;        // gridDim.y covers the columns of C (K1), else its rows
};

#define SGEMM_ENTRY(name, sym, vec4, y_walks_n) \
    KernelEntry { name, #sym, launch_##sym, vec4, y_walks_n }

const KernelEntry kKernels[] = {
    SGEMM_ENTRY("k1", k1_naive, false, true),
    SGEMM_ENTRY("k2", k2_coalesced, false, false),
    SGEMM_ENTRY("k3", k3_smem_tile, false, false),
    SGEMM_ENTRY("k3c", k3c_coarsened, false, false),
    SGEMM_ENTRY("k4", k4_reg_tile_1d, false, false),
    SGEMM_ENTRY("k5", k5_reg_tile_2d, false, false),
    SGEMM_ENTRY("k6", k6_vectorized, true, false),
};

// Every launcher gives each block 32 rows (K1: 32 columns) along gridDim.y, which CUDA caps
// at 65535 blocks: the largest extent that dimension can cover.
constexpr int64_t kGridYRows = 32;
constexpr int64_t kMaxGridY = 65535;

const char *check_operand(const at::Tensor &t) {
    REQUIRE(t.is_cuda(), "every tensor must be on a CUDA device");
    REQUIRE(t.scalar_type() == at::kFloat, "every tensor must be float32");
    REQUIRE(t.dim() == 2, "every tensor must be 2-D");
    REQUIRE(t.is_contiguous(), "every tensor must be contiguous (row-major)");
    REQUIRE(t.numel() <= INT_MAX, "a tensor has more elements than 32-bit indices reach");
    return nullptr;
}

bool overlaps(const at::Tensor &x, const at::Tensor &y) {
    const auto *x0 = static_cast<const char *>(x.data_ptr());
    const auto *y0 = static_cast<const char *>(y.data_ptr());
    const auto *x1 = x0 + x.numel() * x.element_size();
    const auto *y1 = y0 + y.numel() * y.element_size();
    return x0 < y1 && y0 < x1;
}

// c = alpha * a @ b + beta * c, written in place on the current stream; nullptr when it ran,
// else what is wrong with the arguments (or the launch).
const char *run(const KernelEntry &k, const at::Tensor &a, const at::Tensor &b, const at::Tensor &c,
                double alpha, double beta) {
    for (const at::Tensor *t : {&a, &b, &c}) {
        const char *problem = check_operand(*t);
        if (problem) return problem;
    }
    REQUIRE(a.device() == b.device() && a.device() == c.device(),
            "a, b and c must be on the same device");
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    REQUIRE(b.size(0) == K, "inner dimensions differ: a.size(1) must equal b.size(0)");
    REQUIRE(c.size(0) == M && c.size(1) == N, "c must be M x N");
    REQUIRE(M >= 1 && N >= 1 && K >= 1, "M, N and K must all be >= 1");
    REQUIRE(!overlaps(c, a) && !overlaps(c, b),
            "c must not share memory with a or b (the kernels read them as __restrict__)");
    REQUIRE(k.y_walks_n || (M + kGridYRows - 1) / kGridYRows <= kMaxGridY,
            "M exceeds 2097120: this kernel's grid puts 32 rows of C per block on gridDim.y, "
            "which CUDA caps at 65535 blocks");
    REQUIRE(!k.y_walks_n || (N + kGridYRows - 1) / kGridYRows <= kMaxGridY,
            "N exceeds 2097120: this kernel's grid puts 32 columns of C per block on gridDim.y, "
            "which CUDA caps at 65535 blocks");
    if (k.vec4) {
        REQUIRE(N % 4 == 0 && K % 4 == 0, "N and K must be multiples of 4 (128-bit loads)");
        for (const at::Tensor *t : {&a, &b, &c}) {
            REQUIRE(reinterpret_cast<std::uintptr_t>(t->data_ptr()) % 16 == 0,
                    "a, b and c must be 16-byte aligned (128-bit loads)");
        }
    }

    const c10::cuda::CUDAGuard guard(a.device());
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    k.launch(static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
             static_cast<float>(alpha), a.data_ptr<float>(), b.data_ptr<float>(),
             static_cast<float>(beta), c.data_ptr<float>(), stream);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "SGEMM study kernels: c = alpha * a @ b + beta * c (float32, row-major)";
    for (const auto &k : kKernels) {
        const KernelEntry *entry = &k;
        m.def(
            k.name,
            [entry](const at::Tensor &a, const at::Tensor &b, const at::Tensor &c, double alpha,
                    double beta) { return run(*entry, a, b, c, alpha, beta); },
            (std::string("c = alpha * a @ b + beta * c with ") + k.symbol +
             ", in place on the current CUDA stream; returns None, or what is wrong")
                .c_str(),
            py::arg("a"), py::arg("b"), py::arg("c"), py::arg("alpha") = 1.0,
            py::arg("beta") = 0.0);
    }
}
