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
//
// It also defines the operator sgemm_ledgers::mm (and mm.out), registered with torch.library so
// that it dispatches from C++ (no Python between the call and the launch), runs inside a CUDA
// graph and traces under torch.compile (its Meta kernel gives the output's shape). Which kernel
// it launches for a shape is a table the Python package sgemm_ledgers hands over once
// (configure_mm): the decode rung's path for each M up to a bound, the top rung and the tile
// multiples and tile count it needs; every other shape goes to torch's own matmul, FP32.
#include <torch/extension.h>
#include <torch/library.h>
#include <ATen/Context.h>

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
    // gridDim.y holds cdiv(M, BM) blocks, or cdiv(N, BN) where y walks the columns of C (a
    // balanced grid is one-dimensional)
    if (k.flags & SGEMM_BALANCED) {
    } else if (k.flags & SGEMM_Y_WALKS_N) {
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
    if (k.flags & SGEMM_SM90A) {
        int major = 0, minor = 0;
        REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, a.get_device()) ==
                        cudaSuccess &&
                    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, a.get_device()) ==
                        cudaSuccess,
                "could not read the device's compute capability");
        REQUIRE(major == 9 && minor == 0,
                "this kernel needs wgmma, which only compute capability 9.0 has (sm_90a: SGEMM_SM90A)");
    }

    const c10::cuda::CUDAGuard guard(a.device());
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    k.launch(static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
             static_cast<float>(alpha), a.data_ptr<float>(), b.data_ptr<float>(),
             static_cast<float>(beta), c.data_ptr<float>(), stream);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}


// --- the operator ---------------------------------------------------------------------------
// The route table (configure_mm): kd[M - 1] the decode rung's function for M = 1 .. kd.size(),
// top the top rung's, launched where M, N and K are multiples of its tile, its tiles number at
// least top_min_tiles and, for a rung of 128-bit copies (SGEMM_VEC4), the operands are 16-byte
// aligned; everything else goes to at::mm (the vendor's kernel), TF32 off.
struct MmRoutes {
    std::vector<const SgemmKernelInfo *> kd;
    const SgemmKernelInfo *top = nullptr;
    int64_t top_min_tiles = 0;
    bool ready = false;
};
MmRoutes &mm_routes() {
    static MmRoutes routes;
    return routes;
}

const SgemmKernelInfo *by_symbol(const std::string &symbol) {
    for (const SgemmKernelInfo &k : sgemm_registry())
        if (symbol == k.symbol) return &k;
    return nullptr;
}

bool aligned16(const at::Tensor &t) { return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0; }

// The function the operator launches for these operands, nullptr for the vendor's.
const SgemmKernelInfo *route(const at::Tensor &a, const at::Tensor &b, const at::Tensor &c) {
    const MmRoutes &r = mm_routes();
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    if (M < 1 || N < 1 || K < 1) return nullptr;
    if (M <= static_cast<int64_t>(r.kd.size())) {
        const SgemmKernelInfo *k = r.kd[M - 1];
        const bool vec4_ok = N % 4 == 0 && K % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(c);
        return k && (!(k->flags & SGEMM_VEC4) || vec4_ok) ? k : nullptr;
    }
    const SgemmKernelInfo *t = r.top;
    const bool top_vec4_ok = !(t && (t->flags & SGEMM_VEC4)) || (aligned16(a) && aligned16(b) && aligned16(c));
    if (t && M % t->bm == 0 && N % t->bn == 0 && K % t->bk == 0 &&
        (M / t->bm) * (N / t->bn) >= r.top_min_tiles && top_vec4_ok)
        return t;
    return nullptr;
}

// FP32 whatever torch's TF32 switch says, for the vendor's path; restored on the way out.
struct NoTf32 {
    bool was;
    NoTf32() : was(at::globalContext().allowTF32CuBLAS()) {
        if (was) at::globalContext().setAllowTF32CuBLAS(false);
    }
    ~NoTf32() {
        if (was) at::globalContext().setAllowTF32CuBLAS(true);
    }
};

// What is wrong with a and b as the operator's operands, nullptr where nothing is.
const char *check_mm_ab(const at::Tensor &a, const at::Tensor &b) {
    REQUIRE(a.dim() == 2 && b.dim() == 2, "a and b must be 2-D");
    REQUIRE(a.size(1) == b.size(0), "inner dimensions differ: a.size(1) must equal b.size(0)");
    REQUIRE(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat, "a and b must be float32");
    REQUIRE(a.is_cuda() && b.is_cuda() && a.device() == b.device(), "a and b must be on one CUDA device");
    REQUIRE(a.is_contiguous() && b.is_contiguous(), "a and b must be contiguous (row-major)");
    return nullptr;
}

// The same, and what is wrong with out as the place of their product.
const char *check_mm_out(const at::Tensor &a, const at::Tensor &b, const at::Tensor &out) {
    const char *problem = check_mm_ab(a, b);
    if (problem) return problem;
    REQUIRE(out.scalar_type() == at::kFloat && out.device() == a.device() && out.is_contiguous() &&
                out.dim() == 2 && out.size(0) == a.size(0) && out.size(1) == b.size(1),
            "out must be a contiguous float32 M x N tensor on a's device");
    REQUIRE(out.numel() == 0 || (!overlaps(out, a) && !overlaps(out, b)), "out must not share memory with a or b");
    return nullptr;
}

// The product into an out that check_mm_out has passed: the route's kernel (`k`, left nullptr for
// the vendor's) or the vendor's; nullptr when out was written, else what is wrong.
const char *mm_body(const at::Tensor &a, const at::Tensor &b, at::Tensor &out, const SgemmKernelInfo *&k) {
    REQUIRE(mm_routes().ready, "not configured (call it through the sgemm_ledgers package)");
    k = route(a, b, out);
    if (!k) {
        const NoTf32 fp32;
        at::mm_out(out, a, b);
        return nullptr;
    }
    return run(*k, a, b, out, 1.0, 0.0);
}

// The registered operator's refusal: a thrown error with the operands in it (the package's Python
// checks come first, so these are a backstop).
void refuse_if(const char *problem, const at::Tensor &a, const at::Tensor &b) {
    TORCH_CHECK(!problem, "sgemm_ledgers.mm: ", problem, "; got a ", a.scalar_type(), " ", a.sizes(), " on ",
                a.device(), ", b ", b.scalar_type(), " ", b.sizes(), " on ", b.device());
}

at::Tensor &mm_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) {
    refuse_if(check_mm_out(a, b, out), a, b);
    const SgemmKernelInfo *k = nullptr;
    const char *problem = mm_body(a, b, out, k);
    TORCH_CHECK(!problem, "sgemm_ledgers.mm", k ? " (" : "", k ? k->symbol : "", k ? ")" : "", ": ", problem);
    return out;
}

at::Tensor mm(const at::Tensor &a, const at::Tensor &b) {
    refuse_if(check_mm_ab(a, b), a, b);
    at::Tensor out = at::empty({a.size(0), b.size(1)}, a.options());
    return mm_out(a, b, out);
}

at::Tensor mm_meta(const at::Tensor &a, const at::Tensor &b) {
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0),
                "sgemm_ledgers.mm: a and b must be 2-D with a.size(1) == b.size(0), got ", a.sizes(), " and ",
                b.sizes());
    return at::empty({a.size(0), b.size(1)}, a.options());
}

at::Tensor &mm_out_meta(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) { return out; }

// The eager entry of sgemm_ledgers.mm (the package calls it outside torch.compile's tracing): the
// operator's checks and body without the dispatcher between the call and the launch, and without
// throwing; nullptr when out was written, else what is wrong (a fixed description, nothing written).
const char *mm_eager(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) {
    const char *problem = check_mm_out(a, b, out);
    if (problem) return problem;
    const SgemmKernelInfo *k = nullptr;
    return mm_body(a, b, out, k);
}

// Hands over the route table; returns None, or what is wrong with it (an unknown symbol).
const char *configure_mm(const std::vector<std::string> &kd, const std::string &top, int64_t top_min_tiles) {
    MmRoutes fresh;
    for (const std::string &s : kd) {
        const SgemmKernelInfo *k = by_symbol(s);
        REQUIRE(k, "configure_mm: a decode symbol names no registered kernel");
        fresh.kd.push_back(k);
    }
    fresh.top = top.empty() ? nullptr : by_symbol(top);
    REQUIRE(top.empty() || fresh.top, "configure_mm: the top rung's symbol names no registered kernel");
    REQUIRE(!fresh.top || fresh.top->bk > 0, "configure_mm: the top rung must state its K-tile");
    fresh.top_min_tiles = top_min_tiles;
    fresh.ready = true;
    mm_routes() = fresh;
    return nullptr;
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
    m.def("configure_mm", &configure_mm,
          "sgemm_ledgers.mm's route table: the decode rung's symbol for M = 1, 2, ..., the top rung's "
          "symbol and the tiles it needs; returns None, or what is wrong",
          py::arg("kd"), py::arg("top"), py::arg("top_min_tiles"));
    m.def("mm_eager", &mm_eager,
          "sgemm_ledgers.mm into out, outside the dispatcher; returns None, or what is wrong (nothing "
          "written)",
          py::arg("a"), py::arg("b"), py::arg("out"));
    m.def(
        "mm_eager_new",
        [](const at::Tensor &a, const at::Tensor &b) -> py::object {
            const char *problem = check_mm_ab(a, b);
            if (problem) return py::str(problem);
            at::Tensor out = at::empty({a.size(0), b.size(1)}, a.options());
            problem = mm_eager(a, b, out);
            if (problem) return py::str(problem);
            return py::cast(out);
        },
        "sgemm_ledgers.mm into a new tensor, outside the dispatcher; returns it, or (a str) what is "
        "wrong",
        py::arg("a"), py::arg("b"));
    m.def(
        "mm_route",
        [](const at::Tensor &a, const at::Tensor &b, const at::Tensor &out) -> std::string {
            const SgemmKernelInfo *k = route(a, b, out);
            return k ? k->symbol : "vendor";
        },
        "the function sgemm_ledgers.mm launches for these operands ('vendor': torch's matmul)");
}

TORCH_LIBRARY(sgemm_ledgers, m) {
    m.def("mm(Tensor a, Tensor b) -> Tensor");
    m.def("mm.out(Tensor a, Tensor b, *, Tensor(a!) out) -> Tensor(a!)");
}
TORCH_LIBRARY_IMPL(sgemm_ledgers, CUDA, m) {
    m.impl("mm", &mm);
    m.impl("mm.out", &mm_out);
}
TORCH_LIBRARY_IMPL(sgemm_ledgers, CPU, m) {  // only to say why not: the checks refuse CPU tensors
    m.impl("mm", &mm);
    m.impl("mm.out", &mm_out);
}
TORCH_LIBRARY_IMPL(sgemm_ledgers, Meta, m) {
    m.impl("mm", &mm_meta);
    m.impl("mm.out", &mm_out_meta);
}
