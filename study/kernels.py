"""The one registry of kernels.

Every other module reads kernel ids, tiles, constraints and counted ledger inputs from here
and nowhere else. Launchers are resolved lazily: importing this module builds nothing,
compiles nothing and never touches a GPU.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from study.errors import InputError


@dataclass(frozen=True)
class Counted:
    """Per-thread counts read off a kernel's source (STUDY.md §3, steps 1-4).

    A *k-step* is one iteration of the innermost loop over k; a *phase* is one K-tile
    (``phase_k`` values of k: 32 for the tiled kernels, 1 for K1/K2 which have no tiles).
    """

    lds_dist: int  # 32-way shared loads per k-step (index holds tx with coefficient 1)
    lds_bcast: int  # broadcast shared loads per k-step (index without tx)
    fma_per_k: int  # FMAs per k-step
    ldg_per_phase: int  # global load *instructions* per thread per phase
    elems_per_phase: int  # global *elements* per thread per phase (float4 counts 4)
    fma_per_phase: int  # FMAs per thread per phase
    outputs: int  # outputs per thread
    phase_k: int  # K covered by one phase
    lds_bits: int = 32  # width of each shared load
    ldg_bits: int = 32  # width of each global load
    req_per_fma: float | None = None  # request ledger (K1/K2 only): transactions per FMA


@dataclass(frozen=True)
class Kernel:
    id: str
    impl: str  # "cublas" | "cuda" | "triton"
    idea: str
    target: str  # "module:attr" resolved lazily to the launcher, or "cuda:<binding>"
    threads: int | None = None  # threads per block (CUDA) / num_warps*32 (Triton)
    tile: tuple[int, int, int] | None = None  # block tile BM, BN, BK
    counted: Counted | None = None
    source: str | None = None  # file that holds the kernel, relative to the repo root
    symbol: str | None = None  # kernel function name as it appears in SASS
    twin: str | None = None  # the CUDA kernel a Triton kernel mirrors
    num_stages: int | None = None  # Triton software-pipelining depth
    multiple_of: tuple[int, int, int] = (1, 1, 1)  # alignment needed on (M, N, K)
    calibrates: str | None = None  # "ldg" or "lds": role in the exact price calibration
    tuned: str | None = None  # "module:attr" of best_config(M, N, K) for an autotuned kernel
    notes: str = ""
    options: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def launcher(self) -> Callable:
        """``launch(a, b, out)`` writing ``out = a @ b``; resolved on first use."""
        return _resolve(self)

    def tuned_config(self, M: int, N: int, K: int) -> dict | None:
        """The configuration an autotuned kernel picked for (M, N, K); None otherwise."""
        if not self.tuned:
            return None
        module, attr = self.tuned.split(":")
        return getattr(importlib.import_module(module), attr)(M, N, K)

    def constraint_error(self, M: int, N: int, K: int) -> str | None:
        """Why this kernel refuses (M, N, K), or None when it accepts the shape."""
        for name, value, mult in zip("MNK", (M, N, K), self.multiple_of):
            if value < 1:
                return f"{name} = {value}: every dimension must be a positive integer"
            if value % mult:
                return (
                    f"{self.id} needs {name} to be a multiple of {mult} "
                    f"(128-bit loads); got {name} = {value}"
                )
        return None


_CACHE: dict[str, Callable] = {}


def _resolve(k: Kernel) -> Callable:
    if k.id in _CACHE:
        return _CACHE[k.id]
    if k.target.startswith("cuda:"):
        binding = k.target.split(":", 1)[1]
        import cuda_kernels

        ext = cuda_kernels.load()
        fn = getattr(ext, binding)

        def launch(a, b, out, _fn=fn, _k=k):
            check_cuda_operands(_k, a, b, out)
            problem = _fn(a, b, out, 1.0, 0.0)  # the C++ wrapper's own checks, returned not thrown
            if problem:
                raise ValueError(f"{_k.id} ({_k.symbol}): {problem}; a {tuple(a.shape)}, b {tuple(b.shape)}")
            return out

    else:
        module, attr = k.target.split(":")
        fn = getattr(importlib.import_module(module), attr)
        kwargs = dict(k.options)

        def launch(a, b, out, _fn=fn, _kw=kwargs):
            return _fn(a, b, out=out, **_kw)

    _CACHE[k.id] = launch
    return launch


def check_cuda_operands(k: Kernel, a, b, out) -> None:
    """The host wrapper's checks, made in Python first so a bad call is a ValueError that names
    the problem (the C++ wrapper repeats them as a backstop)."""
    for name, t in (("a", a), ("b", b), ("out", out)):
        if not t.is_cuda:
            raise ValueError(f"{k.id}: {name} must be a CUDA tensor, got device {t.device}")
        if str(t.dtype) != "torch.float32":
            raise ValueError(f"{k.id}: {name} must be float32, got {t.dtype}")
        if t.dim() != 2:
            raise ValueError(f"{k.id}: {name} must be 2-D, got shape {tuple(t.shape)}")
        if not t.is_contiguous():
            raise ValueError(f"{k.id}: {name} must be contiguous (row-major), got strides {t.stride()}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{k.id}: inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    M, K = a.shape
    N = b.shape[1]
    if tuple(out.shape) != (M, N):
        raise ValueError(f"{k.id}: out must be {M}x{N}, got {tuple(out.shape)}")
    err = k.constraint_error(M, N, K)
    if err:
        raise ValueError(err)
    if k.multiple_of != (1, 1, 1) and any(t.data_ptr() % 16 for t in (a, b, out)):
        raise ValueError(f"{k.id} needs 16-byte aligned a, b and out (128-bit loads)")


def _t(bm, bn, bk=32):
    return (bm, bn, bk)


KERNELS: tuple[Kernel, ...] = (
    Kernel(
        "K0", "cublas", "cuBLAS FP32 through torch.matmul, TF32 off",
        target="study.baseline:cublas_matmul",
    ),
    Kernel(
        "K1", "cuda", "naive; row from threadIdx.x (uncoalesced)",
        target="cuda:k1", threads=1024, tile=None, source="cuda_kernels/k1_naive.cu",
        symbol="k1_naive",
        counted=Counted(0, 0, 1, 2, 2, 1, 1, 1, req_per_fma=33),
    ),
    Kernel(
        "K2", "cuda", "naive; column from threadIdx.x (coalesced)",
        target="cuda:k2", threads=1024, tile=None, source="cuda_kernels/k2_coalesced.cu",
        symbol="k2_coalesced", calibrates="ldg",
        counted=Counted(0, 0, 1, 2, 2, 1, 1, 1, req_per_fma=2),
    ),
    Kernel(
        "K3", "cuda", "shared-memory tiling, TILE = 32",
        target="cuda:k3", threads=1024, tile=_t(32, 32), source="cuda_kernels/k3_smem_tile.cu",
        symbol="k3_smem_tile", calibrates="lds",
        counted=Counted(1, 1, 1, 2, 2, 32, 1, 32),
    ),
    Kernel(
        "K3c", "cuda", "K3 + thread coarsening, COARSE = 4 (one row, 4 tiles across)",
        target="cuda:k3c", threads=1024, tile=_t(32, 128),
        source="cuda_kernels/k3c_coarsened.cu", symbol="k3c_coarsened",
        counted=Counted(1, 1, 1, 5, 5, 128, 4, 32),
    ),
    Kernel(
        "K4", "cuda", "1-D register tiling: 8 rows of one column per thread",
        target="cuda:k4", threads=128, tile=_t(32, 32), source="cuda_kernels/k4_reg_tile_1d.cu",
        symbol="k4_reg_tile_1d", calibrates="lds",
        counted=Counted(1, 8, 8, 16, 16, 256, 8, 32),
    ),
    Kernel(
        "K5", "cuda", "2-D register tiling: 8 rows x 4 columns per thread",
        target="cuda:k5", threads=128, tile=_t(32, 128), source="cuda_kernels/k5_reg_tile_2d.cu",
        symbol="k5_reg_tile_2d",
        counted=Counted(4, 8, 32, 40, 40, 1024, 32, 32),
    ),
    Kernel(
        "K6", "cuda", "K5 with 128-bit (float4) global and shared loads",
        target="cuda:k6", threads=128, tile=_t(32, 128), source="cuda_kernels/k6_vectorized.cu",
        symbol="k6_vectorized", multiple_of=(1, 4, 4),
        counted=Counted(1, 2, 32, 10, 40, 1024, 32, 32, lds_bits=128, ldg_bits=128),
    ),
    # Triton twins (STUDY.md §6): same block tile and threads per block as their CUDA kernel.
    Kernel(
        "T1", "triton", "no on-chip reuse: every output element loads its own A and B values",
        target="triton_kernels.t1_naive:matmul", threads=128, tile=_t(32, 32, 1),
        source="triton_kernels/t1_naive.py", symbol="t1_naive_kernel", twin="K2", num_stages=1,
        options={"num_stages": 1},
        # K2's byte ledger (K1's is the same): no on-chip reuse, so each output loads its own A
        # and B value per k (its SASS loop: 16 LDG per 8 FFMA); which of the two request
        # patterns it gets is the compiler's choice (notes). The counts are per output element;
        # Triton gives each of its 128 threads 8 outputs, which leaves every ratio unchanged.
        # Its (32, 32, 1) tile is the launch grid's, not a shared-memory tile.
        counted=Counted(0, 0, 1, 2, 2, 1, 1, 1),
        notes="Triton has no way to say which thread owns which element: the compiler picks the "
        "mapping, so neither K1's nor K2's can be asked for. On the H200 with Triton 3.6 it picked "
        "K1's: Nsight Compute reads 33.00 32-byte sectors per warp FMA (K1's 32 + 1; K2 reads "
        "5.00) and T1 runs in K1's time (`python -m study.profile --kernels T1,K1,K2`).",
    ),
    Kernel(
        "T3", "triton", "twin of K3: 32x32x32 tile, 32 warps, unpipelined",
        target="triton_kernels.t3_smem_tile:matmul", threads=1024, tile=_t(32, 32),
        source="triton_kernels/tile.py", symbol="tiled_matmul_kernel", twin="K3",
        num_stages=1, options={"num_stages": 1},
    ),
    Kernel(
        "T3p", "triton", "twin of K3, software-pipelined",
        target="triton_kernels.t3_smem_tile:matmul", threads=1024, tile=_t(32, 32),
        source="triton_kernels/tile.py", symbol="tiled_matmul_kernel", twin="K3",
        num_stages=3, options={"num_stages": 3},
    ),
    Kernel(
        "T3c", "triton", "twin of K3c: 32x128x32 tile, 32 warps, unpipelined",
        target="triton_kernels.t3c_coarsened:matmul", threads=1024, tile=_t(32, 128),
        source="triton_kernels/tile.py", symbol="tiled_matmul_kernel", twin="K3c",
        num_stages=1, options={"num_stages": 1},
    ),
    Kernel(
        "T3cp", "triton", "twin of K3c, software-pipelined",
        target="triton_kernels.t3c_coarsened:matmul", threads=1024, tile=_t(32, 128),
        source="triton_kernels/tile.py", symbol="tiled_matmul_kernel", twin="K3c",
        num_stages=3, options={"num_stages": 3},
    ),
    Kernel(
        "T4", "triton", "twin of K4: 32x32x32 tile, 4 warps, unpipelined",
        target="triton_kernels.t4_reg_tile_1d:matmul", threads=128, tile=_t(32, 32),
        source="triton_kernels/tile.py", symbol="tiled_matmul_kernel", twin="K4",
        num_stages=1, options={"num_stages": 1},
    ),
    Kernel(
        "T4p", "triton", "twin of K4, software-pipelined",
        target="triton_kernels.t4_reg_tile_1d:matmul", threads=128, tile=_t(32, 32),
        source="triton_kernels/tile.py", symbol="tiled_matmul_kernel", twin="K4",
        num_stages=3, options={"num_stages": 3},
    ),
    Kernel(
        "T5", "triton", "twin of K5/K6: 32x128x32 tile, 4 warps, unpipelined",
        target="triton_kernels.t5_reg_tile_2d:matmul", threads=128, tile=_t(32, 128),
        source="triton_kernels/tile.py", symbol="tiled_matmul_kernel", twin="K6",
        num_stages=1, options={"num_stages": 1},
    ),
    Kernel(
        "T5p", "triton", "twin of K5/K6, software-pipelined",
        target="triton_kernels.t5_reg_tile_2d:matmul", threads=128, tile=_t(32, 128),
        source="triton_kernels/tile.py", symbol="tiled_matmul_kernel", twin="K6",
        num_stages=3, options={"num_stages": 3},
    ),
    Kernel(
        "TA", "triton", "autotuned Triton SGEMM (ieee), keyed on (M, N, K)",
        target="triton_kernels.ta_autotuned:matmul", source="triton_kernels/tile.py",
        symbol="tiled_matmul_kernel", tuned="triton_kernels.ta_autotuned:best_config",
    ),
)

BY_ID: dict[str, Kernel] = {k.id: k for k in KERNELS}
IDS: tuple[str, ...] = tuple(BY_ID)
BASELINE: Kernel = next(k for k in KERNELS if k.impl == "cublas")


def get(kid: str) -> Kernel:
    """The kernel with id ``kid``; an unknown id is an InputError naming the known ones."""
    try:
        return BY_ID[kid]
    except KeyError:
        raise InputError(f"unknown kernel id {kid!r}; known: {', '.join(IDS)}") from None


def select(spec: str | None) -> list[Kernel]:
    """Kernels named in a comma-separated spec ("K1,K6"), all of them for None.

    A kernel named twice is taken once, where it first appears. The baseline is always
    included: every % of cuBLAS needs it.
    """
    if not spec:
        return list(KERNELS)
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    if not wanted:
        raise InputError("--kernels is empty; known: " + ", ".join(IDS))
    picked = []
    for s in wanted:
        k = get(s)
        if k not in picked:
            picked.append(k)
    if BASELINE not in picked:
        picked.insert(0, BASELINE)
    return picked


def twins_of(cuda_kernel_id: str) -> list[Kernel]:
    """The Triton kernels that mirror a CUDA kernel: those naming it as their ``twin`` and those
    with its block tile and threads per block (so K5 gets T5/T5p, whose ``twin`` is K6)."""
    c = get(cuda_kernel_id)
    return [
        t for t in KERNELS
        if t.impl == "triton"
        and (t.twin == c.id or (c.tile is not None and t.tile == c.tile and t.threads == c.threads))
    ]


def by_impl(impl: str) -> list[Kernel]:
    return [k for k in KERNELS if k.impl == impl]
