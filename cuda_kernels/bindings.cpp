// Python bindings for the SGEMM study kernels: thin wrappers that check their tensors,
// launch on the current CUDA stream and check the launch.
//
// There is no list of kernels here: each .cu registers itself with one SGEMM_REGISTER line
// (common.cuh), and the module defines one binding per registered kernel, named after its
// symbol (`k6_vectorized`), plus `registered()`, the facts those lines state.
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
#include <vector>

#include "common.cuh"

// The kernels' SGEMM_REGISTER lines land here while the extension loads: static initialisers
// of the .cu objects, which all run before the module's init function. A function-local
// static, so that no order among those initialisers matters.
static std::vector<SgemmKernelInfo> &sgemm_registry() {
    static std::vector<SgemmKernelInfo> kernels;
    return kernels;
}

int sgemm_register_kernel(const SgemmKernelInfo &info) {
    std::vector<SgemmKernelInfo> &kernels = sgemm_registry();
    kernels.push_back(info);
    return static_cast<int>(kernels.size()) - 1;
}

namespace {

// Return a fixed description of the problem from the enclosing function when `cond` is false.
// Messages are string literals: nothing is formatted or allocated on the failure path.
#define REQUIRE(cond, msg)                       \
    do {                                         \
        if (!(cond)) return msg;                 \
    } while (0)

constexpr int64_t kMaxGridY = 65535;  // CUDA's cap on gridDim.y

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
const char *run(const SgemmKernelInfo &k, const at::Tensor &a, const at::Tensor &b,
                const at::Tensor &c, double alpha, double beta) {
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
    // gridDim.y holds cdiv(M, BM) blocks, or cdiv(N, BN) where y walks the columns of C
    if (k.flags & SGEMM_Y_WALKS_N) {
        REQUIRE((N + k.bn - 1) / k.bn <= kMaxGridY,
                "N exceeds what gridDim.y covers: cdiv(N, BN) must be <= 65535");
    } else {
        REQUIRE((M + k.bm - 1) / k.bm <= kMaxGridY,
                "M exceeds what gridDim.y covers: cdiv(M, BM) must be <= 65535");
    }
    if (k.flags & SGEMM_VEC4) {
        REQUIRE(N % 4 == 0 && K % 4 == 0, "N and K must be multiples of 4 (128-bit loads)");
        for (const at::Tensor *t : {&a, &b, &c}) {
            REQUIRE(reinterpret_cast<std::uintptr_t>(t->data_ptr()) % 16 == 0,
                    "a, b and c must be 16-byte aligned (128-bit loads)");
        }
    }
    if (k.flags & SGEMM_SM90) {
        int major = 0;
        REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                       a.get_device()) == cudaSuccess,
                "could not read the device's compute capability");
        REQUIRE(major >= 9, "this kernel needs compute capability 9.0 or newer (SGEMM_SM90)");
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
    for (const SgemmKernelInfo &k : sgemm_registry()) {
        m.def(
            k.symbol,
            [k](const at::Tensor &a, const at::Tensor &b, const at::Tensor &c, double alpha,
                double beta) { return run(k, a, b, c, alpha, beta); },
            (std::string("c = alpha * a @ b + beta * c with ") + k.symbol +
             ", in place on the current CUDA stream; returns None, or what is wrong")
                .c_str(),
            py::arg("a"), py::arg("b"), py::arg("c"), py::arg("alpha") = 1.0,
            py::arg("beta") = 0.0);
    }
    m.def(
        "registered",
        []() {
            py::list facts;
            for (const SgemmKernelInfo &k : sgemm_registry()) {
                facts.append(py::make_tuple(k.symbol, k.bm, k.bn, k.bk, k.threads, k.flags));
            }
            return facts;
        },
        "(symbol, BM, BN, BK, THREADS, FLAGS) of every kernel as its SGEMM_REGISTER line states "
        "them, in registration order");
}
