// Python bindings for the SGEMM study kernels: thin wrappers that check their tensors,
// launch on the current CUDA stream and check the launch.
//
// A failed check is *returned* as a message (empty string: success) rather than thrown: on
// some torch/compiler pairings a C++ exception crossing into Python crashes the interpreter,
// and a bad argument must be a readable error, never a crash. The Python side raises it.
#include <torch/extension.h>

#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <string>

#include "common.cuh"

namespace {

// Return a message naming the problem from the enclosing function when `cond` is false.
#define REQUIRE(cond, ...)                                   \
    do {                                                     \
        if (!(cond)) return c10::str(__VA_ARGS__);           \
    } while (0)

using Launch = void (*)(int, int, int, float, const float *, const float *, float, float *,
                        cudaStream_t);

struct KernelEntry {
    const char *name;      // binding name, as in study/kernels.py ("cuda:k3c")
    const char *symbol;    // kernel name in SASS
    Launch launch;
    bool vec4;             // 128-bit loads: N, K multiples of 4, 16-byte aligned pointers
};

#define SGEMM_ENTRY(name, sym, vec4) \
    KernelEntry { name, #sym, launch_##sym, vec4 }

const KernelEntry kKernels[] = {
    SGEMM_ENTRY("k1", k1_naive, false),
    SGEMM_ENTRY("k2", k2_coalesced, false),
    SGEMM_ENTRY("k3", k3_smem_tile, false),
    SGEMM_ENTRY("k3c", k3c_coarsened, false),
    SGEMM_ENTRY("k4", k4_reg_tile_1d, false),
    SGEMM_ENTRY("k5", k5_reg_tile_2d, false),
    SGEMM_ENTRY("k6", k6_vectorized, true),
};

std::string check_operand(const at::Tensor &t, const char *what, const char *kernel) {
    REQUIRE(t.is_cuda(), kernel, ": ", what, " must be a CUDA tensor, got device ",
                t.device());
    REQUIRE(t.scalar_type() == at::kFloat, kernel, ": ", what,
                " must be float32, got ", t.scalar_type());
    REQUIRE(t.dim() == 2, kernel, ": ", what, " must be 2-D, got ", t.dim(),
                "-D with shape ", t.sizes());
    REQUIRE(t.is_contiguous(), kernel, ": ", what,
                " must be contiguous (row-major), got strides ", t.strides());
    REQUIRE(t.numel() <= INT_MAX, kernel, ": ", what, " has ", t.numel(),
                " elements; the kernels index with 32-bit int (at most ", INT_MAX, ")");
    return "";
}

bool overlaps(const at::Tensor &x, const at::Tensor &y) {
    const auto *x0 = static_cast<const char *>(x.data_ptr());
    const auto *y0 = static_cast<const char *>(y.data_ptr());
    const auto *x1 = x0 + x.numel() * x.element_size();
    const auto *y1 = y0 + y.numel() * y.element_size();
    return x0 < y1 && y0 < x1;
}

// c = alpha * a @ b + beta * c, written in place on the current stream.
std::string run(const KernelEntry &k, const at::Tensor &a, const at::Tensor &b,
                const at::Tensor &c, double alpha, double beta) {
    const char *kn = k.name;
    for (const auto &[t, what] : {std::pair<const at::Tensor *, const char *>{&a, "a"},
                                  {&b, "b"}, {&c, "c (output)"}}) {
        const std::string problem = check_operand(*t, what, kn);
        if (!problem.empty()) return problem;
    }
    REQUIRE(a.device() == b.device() && a.device() == c.device(), kn,
                ": a, b and c must be on the same device, got ", a.device(), ", ",
                b.device(), ", ", c.device());

    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    REQUIRE(a.size(1) == b.size(0), kn, ": inner dimensions differ: a is MxK = ",
                a.size(0), "x", a.size(1), ", b is KxN = ", b.size(0), "x", b.size(1),
                " (a.size(1) must equal b.size(0))");
    REQUIRE(c.size(0) == M && c.size(1) == N, kn, ": c must be MxN = ", M, "x", N,
                ", got ", c.size(0), "x", c.size(1));
    REQUIRE(M >= 1 && N >= 1 && K >= 1, kn, ": M, N, K must all be >= 1, got M=", M,
                ", N=", N, ", K=", K);
    REQUIRE(!overlaps(c, a) && !overlaps(c, b), kn,
                ": c must not share memory with a or b (the kernels read a, b as __restrict__)");
    if (k.vec4) {
        REQUIRE(N % 4 == 0 && K % 4 == 0,
                    "K6 needs N and K to be multiples of 4 (128-bit loads); got N=", N,
                    ", K=", K);
        for (const at::Tensor *t : {&a, &b, &c}) {
            REQUIRE(reinterpret_cast<std::uintptr_t>(t->data_ptr()) % 16 == 0,
                        "K6 needs 16-byte aligned a, b, c (128-bit loads); a tensor starts at ",
                        t->data_ptr(), " (storage offset ", t->storage_offset(), ")");
        }
    }

    const c10::cuda::CUDAGuard guard(a.device());
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    k.launch(static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
             static_cast<float>(alpha), a.data_ptr<float>(), b.data_ptr<float>(),
             static_cast<float>(beta), c.data_ptr<float>(), stream);
    const cudaError_t err = cudaGetLastError();
    REQUIRE(err == cudaSuccess, kn, " (", k.symbol, ") launch failed for M=", M,
                ", N=", N, ", K=", K, ": ", cudaGetErrorString(err));
    return "";
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
             ", in place on the current CUDA stream; returns \"\" or what is wrong")
                .c_str(),
            py::arg("a"), py::arg("b"), py::arg("c"), py::arg("alpha") = 1.0,
            py::arg("beta") = 0.0);
    }
}
