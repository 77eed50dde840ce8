"""What a registry entry is: a kernel, its counted ledger inputs, its launched functions (paths)
and its launcher.

A CUDA kernel's entry gives only what its ``.cu`` files do not say: each ``SGEMM_REGISTER(symbol,
BM, BN, BK, THREADS, FLAGS)`` line of them is one *path*, a function the kernel's launcher may
launch, with its block tile, threads and operand needs (``study.kernels.registration``). Most
kernels have one path. A kernel with several (the decode rung: a streaming GEMV for few rows, a
tiled GEMM on sm_90 beyond them) launches, at a shape, the path :meth:`Kernel.path_for` names:
among the paths the device can run, the one with the smallest row tile BM that holds M (the
largest BM where none does); at equal BM, the one from the earlier source. Nothing here reads a
file before a fact is asked for, and nothing touches a GPU before a launch.
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from study.errors import InputError
from study.kernels.registration import Registration, read_registrations

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, kw_only=True)
class Counted:
    """Per-thread counts read off a kernel's source, given by keyword (eight bare numbers in a
    row are too easy to misplace).

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
    ldg_bits: int = 32  # width of each global load (of A's, where B's differ: ldg_bits_b)
    ldg_bits_b: int | None = None  # width of B's global loads where it is not ldg_bits
    req_per_fma: float | None = None  # request ledger (K1/K2 only): transactions per FMA
    # shared-store bank conflicts: wavefronts one warp-wide 32-bit store of the A (and B) tile takes
    # (1: conflict-free; K5 stores A transposed with the lane on the row: 32-way)
    sts_ways_a: int = 1
    sts_ways_b: int = 1


@dataclass(frozen=True, kw_only=True)
class PathFacts:
    """What a registry entry says of one path of a kernel of several: its counted ledger inputs and
    the threads of a block that own outputs (``Kernel.compute_threads``), where they differ from
    path to path."""

    counted: Counted | None = None
    compute_threads: int | None = None


@dataclass(frozen=True, kw_only=True)
class TensorCore:
    """What a tensor-core kernel's ledger needs beyond its precision and tile: the operand parts its
    tiles carry into shared memory (2: high and low parts stored apart; 1: the operand as it is,
    split in registers where at all), the pass before the product ("split": A and B into high and
    low parts, B transposed; "b_kmajor": B copied K-major; "": none), and the MMA instruction's
    M, N, K where the source fixes it (None: the compiler's choice)."""

    parts: int
    prepass: str = ""
    mma: tuple[int, int, int] | None = None

    def prepass_bytes(self, M: int, N: int, K: int) -> int:
        """Bytes the pass before the product reads and writes: the split reads A and B and writes
        their two parts (4 + 8 bytes an element); B's K-major copy reads and writes B."""
        if self.prepass == "split":
            return 12 * (M * K + K * N)
        if self.prepass == "b_kmajor":
            return 8 * K * N
        return 0


@dataclass(frozen=True)
class KernelPath:
    """One function a kernel launches: the kernel's id, the file that holds the function, and what
    its ``SGEMM_REGISTER`` line states (CUDA) or what the registry states (Triton). It carries what
    compiling and reading the SASS need (``id``, ``source``, ``symbol``, ``needs_sm90``), so the
    toolchain takes a path where it takes a kernel."""

    id: str  # the kernel's registry id
    source: str
    symbol: str
    tile: tuple[int, int, int] | None
    threads: int | None
    multiple_of: tuple[int, int, int] = (1, 1, 1)
    needs_sm90: bool = False
    bm: int | None = None  # rows of C one block computes (CUDA: the registration's BM)
    counted: Counted | None = None
    compute_threads: int | None = None  # the threads that own outputs, where fewer than ``threads``

    @classmethod
    def of(cls, kid: str, reg: Registration, counted: Counted | None,
           compute_threads: int | None = None) -> KernelPath:
        return cls(kid, reg.source, reg.symbol, reg.tile, reg.threads, reg.multiple_of, reg.needs_sm90,
                   reg.bm, counted, compute_threads)

    def runs_on(self, cc: str | float | None) -> bool:
        """Whether a device of compute capability ``cc`` ("9.0") can run it; None: any device."""
        return not self.needs_sm90 or cc is None or float(cc) >= 9.0


class _FromSource:
    """A Kernel field that a CUDA kernel's ``.cu`` states. Given in the entry, it is that value;
    left out, it is the kernel's one path's (:attr:`Kernel.paths`), or what all its paths share
    where it has several (``Kernel._shared``); cuBLAS and Triton kernels keep ``default``. Not
    compared or hashed, so that comparing kernels never reads a file."""

    def __init__(self, default=None):
        self.default = default

    def __set_name__(self, owner, name):
        self.name, self.slot, self.derived = name, f"_given_{name}", f"_derived_{name}"

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__.get(self.slot)
        if value is not None:
            return value
        if self.derived in obj.__dict__:  # read once, like the registrations it comes from
            return obj.__dict__[self.derived]
        regs = obj.registrations
        if not regs:
            value = self.default
        else:
            value = getattr(regs[0], self.name) if len(regs) == 1 else obj._shared(self.name)
        obj.__dict__[self.derived] = value
        return value

    def __set__(self, obj, value):  # the dataclass __init__ (frozen: nothing else sets it)
        obj.__dict__[self.slot] = None if value is self else value

    def __repr__(self) -> str:  # the default, as signatures show it
        return f"<from the .cu, else {self.default!r}>"


def _from_source(default=None):
    return field(default=_FromSource(default), compare=False)


@dataclass(frozen=True)
class Kernel:
    """One kernel of the study. For a CUDA kernel, ``symbol``, ``tile``, ``threads``,
    ``multiple_of``, ``needs_sm90`` and ``target`` come from its ``.cu`` files (``paths``) unless
    the entry gives them; Triton kernels and cuBLAS give theirs."""

    id: str
    impl: str  # "cublas" | "cuda" | "triton"
    idea: str
    target: str | None = _from_source()  # "module:attr" of the launcher, or "cuda:<symbol>"
    threads: int | None = _from_source()  # threads per block (CUDA) / num_warps*32 (Triton)
    tile: tuple[int, int, int] | None = _from_source()  # block tile BM, BN, BK; None: no K-tile
    counted: Counted | None = None  # the counted ledger inputs (of a kernel of one path)
    # the file that holds the kernel, relative to the repo root; a CUDA kernel of several paths
    # names its files in the order that breaks ties between paths (``path_for``)
    source: str | tuple[str, ...] | None = None
    symbol: str | None = _from_source()  # kernel function name as it appears in SASS
    twin: str | None = None  # the CUDA kernel a Triton kernel mirrors
    num_stages: int | None = None  # Triton software-pipelining depth
    multiple_of: tuple[int, int, int] = _from_source((1, 1, 1))  # alignment needed on (M, N, K)
    calibrates: str | None = None  # "ldg" or "lds": role in the exact price calibration
    tuned: str | None = None  # "module:attr" of best_config(M, N, K) for an autotuned kernel
    # "module:attr" of f(M, N, K) -> dict: what a launch at that shape ran, where the kernel
    # chooses it itself (a library's algorithm and kernel); recorded in the row's config
    launch_info: str | None = None
    notes: str = ""
    options: dict = field(default_factory=dict, hash=False, compare=False)
    needs_sm90: bool = _from_source(False)  # compute capability >= 9.0 (TMA, clusters, ...)
    # the shapes a kernel is written for, when not every shape: "decode" (small M). Such a kernel
    # is measured everywhere but is no rung of the square-shape ladder.
    meant_for: str | None = None
    gluon: bool = False  # a Triton kernel written in Gluon: the layouts (thread -> outputs) are explicit
    # the threads of a block that own outputs, where fewer than ``threads``: a warp-specialised
    # kernel's consumer warps (its producer warps issue the copies and own none). ``counted`` is
    # per such thread. None: every thread.
    compute_threads: int | None = None
    # a kernel of several paths: path symbol -> what the entry says of that path (``counted`` and
    # ``compute_threads`` then hold for the paths it does not name)
    per_path: dict[str, PathFacts] = field(default_factory=dict, hash=False, compare=False)
    # the launcher takes contiguous (row-major) operands only, so a padded point is not measured:
    # every CUDA kernel (``check_cuda_operands``), and a library path that plans one layout
    contiguous: bool = False
    # how it multiplies: "fp32" (FP32 FMA: the study's kernels), or on the tensor cores "tf32" (one
    # TF32 product) or "tf32x3" (three: the operands split in high and low TF32 parts)
    precision: str = "fp32"
    tensor_core: TensorCore | None = None  # a tensor-core kernel's ledger inputs

    @property
    def contiguous_only(self) -> bool:
        return self.contiguous or self.impl == "cuda"

    @property
    def sources(self) -> tuple[str, ...]:
        if self.source is None:
            return ()
        return (self.source,) if isinstance(self.source, str) else tuple(self.source)

    @functools.cached_property
    def registrations(self) -> tuple[Registration, ...]:
        """What this CUDA kernel's ``.cu`` files state in their ``SGEMM_REGISTER`` lines, in
        order (read on first use, then kept: a launch asks for them on every call); () for
        kernels without a ``.cu``."""
        if self.impl != "cuda" or not self.sources or not all(s.endswith(".cu") for s in self.sources):
            return ()
        return tuple(r for s in self.sources for r in read_registrations(s))

    @property
    def registration(self) -> Registration | None:
        """The registration of a CUDA kernel of one path; None for the others."""
        regs = self.registrations
        return regs[0] if len(regs) == 1 else None

    @functools.cached_property
    def paths(self) -> tuple[KernelPath, ...]:
        """The functions this kernel launches: one per registration of a CUDA kernel, the
        registry's symbol for a Triton kernel, none for cuBLAS."""
        regs = self.registrations
        if regs:
            unknown = sorted(set(self.per_path) - {r.symbol for r in regs})
            if unknown:
                raise InputError(f"{self.id}: facts given for {', '.join(unknown)}, which no "
                                 "SGEMM_REGISTER line of its sources names")
            own = PathFacts(counted=self.counted, compute_threads=self.compute_threads)
            facts = {r.symbol: self.per_path.get(r.symbol, own) for r in regs}
            return tuple(KernelPath.of(self.id, r, facts[r.symbol].counted, facts[r.symbol].compute_threads)
                         for r in regs)
        if self.impl == "triton" and self.symbol:
            return (KernelPath(self.id, self.sources[0] if self.sources else "", self.symbol, self.tile,
                               self.threads, self.multiple_of, False, self.tile[0] if self.tile else None,
                               self.counted, self.compute_threads),)
        return ()

    def path_for(self, M: int, N: int = 1, K: int = 1, cc: str | float | None = None) -> KernelPath | None:
        """The path this kernel launches at M x N x K on a device of compute capability ``cc``
        (None: any): among the paths the device runs, the smallest row tile BM >= M (the largest
        BM where none holds M), ties to the earlier path; None without paths, and an InputError
        where the device runs none of them."""
        paths = self.paths
        if len(paths) <= 1:
            return paths[0] if paths else None
        memo = self.__dict__.setdefault("_path_memo", {})  # a launch asks on every call
        key = (M, cc)
        if key not in memo:
            if len(memo) >= 4096:
                memo.clear()
            memo[key] = self._pick_path(M, cc)
        return memo[key]

    def _pick_path(self, M: int, cc) -> KernelPath:
        paths = self.paths
        ok = [(i, p) for i, p in enumerate(paths) if p.runs_on(cc)]
        if not ok:
            raise InputError(f"{self.id}: no path of it runs on compute capability {cc}")
        holding = [(p.bm, i, p) for i, p in ok if p.bm >= M]
        if holding:
            return min(holding, key=lambda t: t[:2])[2]
        return min(((-p.bm, i, p) for i, p in ok), key=lambda t: t[:2])[2]

    def _shared(self, name: str):
        """A fact of a kernel of several paths: what they all share (operand needs: each dimension's
        least common multiple; sm_90 only where every path needs it); the per-path facts (symbol,
        tile, threads) are each path's own (``paths``)."""
        regs = self.registrations
        if name == "multiple_of":
            return tuple(math.lcm(*(r.multiple_of[d] for r in regs)) for d in range(3))
        if name == "needs_sm90":
            return all(r.needs_sm90 for r in regs)
        if name == "target":
            return "cuda:" + "|".join(r.symbol for r in regs)
        return None

    @property
    def launcher(self) -> Callable:
        """``launch(a, b, out)`` writing ``out = a @ b``; resolved on first use."""
        return _resolve(self)

    def launcher_with(self, config: dict) -> Callable:
        """An autotuned kernel's ``launch(a, b, out)`` with ``config`` (``tuned_config``'s form), not
        tuned again: what the profile launches to read the counters of the configuration a run
        timed."""
        if not self.tuned:
            raise InputError(f"{self.id} is not autotuned: it takes no configuration")
        module, attr = self.target.split(":")
        fn = getattr(importlib.import_module(module), attr)
        return lambda a, b, out: fn(a, b, out=out, config=config)

    def tuned_config(self, M: int, N: int, K: int) -> dict | None:
        """The configuration an autotuned kernel picked for (M, N, K); None otherwise."""
        if not self.tuned:
            return None
        module, attr = self.tuned.split(":")
        return getattr(importlib.import_module(module), attr)(M, N, K)

    def launch_config(self, M: int, N: int, K: int) -> dict | None:
        """What this kernel's launch at M x N x K ran, as its results row records it (``config``):
        an autotuned kernel's winner, a library's choice (``launch_info``); None for the others."""
        if self.tuned:
            return self.tuned_config(M, N, K)
        if self.launch_info:
            module, attr = self.launch_info.split(":")
            return getattr(importlib.import_module(module), attr)(M, N, K)
        return None

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


@functools.cache
def _device_cc(index: int) -> str:
    import torch

    major, minor = torch.cuda.get_device_capability(index)
    return f"{major}.{minor}"


def _resolve(k: Kernel) -> Callable:
    if k.id in _CACHE:
        return _CACHE[k.id]
    if k.impl == "cuda":
        import cuda_kernels

        ext = cuda_kernels.load()
        bindings = {p.symbol: getattr(ext, p.symbol) for p in k.paths}

        def launch(a, b, out, _k=k, _bindings=bindings):
            check_cuda_operands(_k, a, b, out)
            p = _k.path_for(a.shape[0], b.shape[1], a.shape[1], _device_cc(a.device.index or 0))
            problem = _bindings[p.symbol](a, b, out, 1.0, 0.0)  # the C++ checks, returned not thrown
            if problem:
                raise ValueError(f"{_k.id} ({p.symbol}): {problem}; a {tuple(a.shape)}, b {tuple(b.shape)}")
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
    if k.needs_sm90:
        cc = _device_cc(a.device.index or 0)
        if float(cc) < 9.0:
            raise ValueError(f"{k.id} ({k.symbol}) needs compute capability 9.0 or newer; "
                             f"{a.device} has {cc}")
