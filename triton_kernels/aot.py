"""Ahead-of-time compilation of the Triton kernels for a named GPU, with no GPU present.

``compile_sass_target(module)`` compiles one kernel for ``GPUTarget("cuda", arch, 32)`` and
returns its cubin, PTX, register count, shared memory, spills and kernel name; ``sass()``
dumps the cubin with the ``cuobjdump`` that ships inside the Triton wheel.

Specialisation. At run time Triton compiles a kernel for the *values* it is launched with:
an integer argument equal to 1 becomes a compile-time constant, an integer divisible by 16 and
a 16-byte-aligned pointer get ``tt.divisibility = 16``. Those facts decide vector widths and
address arithmetic, so the AOT compile reproduces them from a representative launch:
contiguous row-major operands of a given shape (4096^3 by default). The unit strides
(``stride_ak``, ``stride_bn``, ``stride_cn``) are therefore constants 1 and the other strides
and sizes are 32-bit integers divisible by 16 -- the same code the runtime JIT builds for the
study's main 4096^3 run. Pass another ``shape`` (e.g. 4097^3) to see the unaligned variant.

Triton versions. Written against the ``ASTSource(fn, signature, constexprs, attrs)`` API of
Triton >= 3.3 (3.6 on the GPU machine, 3.9 in CI): constexpr parameters appear in the
signature as ``"constexpr"`` and their values go in ``constexprs``; attributes are
``{(index,): [["tt.divisibility", 16]]}``. Older Triton (``constants`` + ``AttrsDescriptor``)
is refused with a clear message rather than compiled differently.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

DEFAULT_SHAPE = (4096, 4096, 4096)
DIVISIBILITY = 16  # what the runtime checks on integers and pointers
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


# --------------------------------------------------------------------------------------------
# What to compile
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pointer:
    """Stands in for a tensor argument: its element type and whether it is 16-byte aligned."""

    dtype: str = "fp32"
    aligned: bool = True


@dataclass(frozen=True)
class KernelSpec:
    """One kernel, the argument values of a representative launch, and its launch options."""

    fn: Any  # the @triton.jit function (an autotuner or interpreter wrapper is unwrapped)
    args: dict[str, Any]  # every parameter by name: Pointer, int, or the constexpr value
    num_warps: int
    num_stages: int
    extra_options: dict = field(default_factory=dict)


def matmul_spec(fn, meta: dict, *, num_warps: int, num_stages: int,
                shape: tuple[int, int, int] | None = None) -> KernelSpec:
    """Spec for the kernels of this package: (a, b, c, M, N, K, six strides, **meta).

    The launch is contiguous row-major A[M, K], B[K, N], C[M, N] with aligned pointers.
    """
    M, N, K = shape or DEFAULT_SHAPE
    args = dict(
        a_ptr=Pointer(), b_ptr=Pointer(), c_ptr=Pointer(),
        M=M, N=N, K=K,
        stride_am=K, stride_ak=1, stride_bk=N, stride_bn=1, stride_cm=N, stride_cn=1,
        **meta,
    )
    return KernelSpec(fn, args, num_warps=num_warps, num_stages=num_stages)


# --------------------------------------------------------------------------------------------
# What comes back
# --------------------------------------------------------------------------------------------


@dataclass
class AotKernel:
    name: str  # the kernel symbol in the cubin
    arch: int
    cubin: bytes
    ptx: str
    shared: int  # bytes of shared memory per block (Triton allocates it dynamically)
    n_regs: int | None  # registers per thread (from cuobjdump; None without it)
    n_spills: int | None  # local-memory words per thread, the runtime's definition of spills
    num_warps: int
    num_stages: int
    ttgir: str = field(repr=False, default="")  # the TritonGPU IR: layouts chosen by the compiler
    signature: dict = field(repr=False, default_factory=dict)
    constexprs: dict = field(repr=False, default_factory=dict)

    def sass(self) -> str:
        """``cuobjdump -sass`` of the cubin."""
        return _cuobjdump(self.cubin, "-sass")

    def write_cubin(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        path.write_bytes(self.cubin)
        return path


# --------------------------------------------------------------------------------------------
# Compile
# --------------------------------------------------------------------------------------------


def compile_sass_target(target, arch: int = 90, num_stages: int | None = None, *,
                        shape: tuple[int, int, int] | None = None, config: dict | None = None,
                        **spec_kwargs) -> AotKernel:
    """Compile one Triton kernel for ``sm_<arch>`` without a GPU.

    ``target`` is a :class:`KernelSpec`, a kernel module of this package (anything with an
    ``aot_spec`` function), its dotted name (``"triton_kernels.t5_reg_tile_2d"``, optionally
    with ``":matmul"``), or a registry entry of ``study.kernels`` or its id (``"T5p"``): its
    ``target`` and ``num_stages`` are used. ``num_stages`` None keeps the module's (or the
    registry's) default; ``shape`` is the representative launch (4096^3); ``config`` picks
    the autotuned kernel's configuration.
    """
    spec = _resolve_spec(target, num_stages=num_stages, shape=shape, config=config, **spec_kwargs)
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if "constexprs" not in inspect.signature(ASTSource.__init__).parameters:
        raise RuntimeError(
            f"triton {triton.__version__} is too old for this AOT path: it needs "
            "ASTSource(fn, signature, constexprs, attrs) (triton >= 3.3)"
        )
    fn = _jit_function(spec.fn)
    signature, constexprs, attrs = specialize(fn, spec.args)
    src = ASTSource(fn, signature, constexprs, attrs)
    options = {"num_warps": spec.num_warps, "num_stages": spec.num_stages, **spec.extra_options}
    compiled = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)

    meta = compiled.metadata
    name = getattr(meta, "name", None) or fn.__name__
    cubin = compiled.asm["cubin"]
    usage = resource_usage(cubin).get(name, {}) if find_cuobjdump() else {}
    local = usage.get("LOCAL")
    return AotKernel(
        name=name,
        arch=arch,
        cubin=cubin,
        ptx=compiled.asm["ptx"],
        shared=int(getattr(meta, "shared", 0) or 0),
        n_regs=usage.get("REG"),
        n_spills=None if local is None else local // 4,
        num_warps=spec.num_warps,
        num_stages=spec.num_stages,
        ttgir=compiled.asm.get("ttgir", ""),
        signature=signature,
        constexprs=constexprs,
    )


def specialize(fn, args: dict[str, Any]) -> tuple[dict, dict, dict]:
    """Signature, constexprs and attributes the runtime JIT would derive from ``args``.

    Mirrors Triton's rule: declared ``tl.constexpr`` parameters and integers equal to 1 are
    constants; integers get ``i32``/``i64`` and pointers ``*<dtype>``, each with
    ``tt.divisibility = 16`` when the value (address) is a multiple of 16.
    """
    names = list(fn.arg_names)
    missing = [n for n in names if n not in args]
    unknown = [n for n in args if n not in names]
    if missing or unknown:
        raise ValueError(f"{fn.__name__}: arguments missing {missing}, unknown {unknown}")
    params = {p.name: p for p in fn.params}
    signature, constexprs, attrs = {}, {}, {}
    divisible = [["tt.divisibility", DIVISIBILITY]]
    for i, name in enumerate(names):
        value, p = args[name], params[name]
        # @triton.jit(do_not_specialize=[...]) opts a parameter out of value specialisation
        by_value = not getattr(p, "do_not_specialize", False)
        by_alignment = by_value and not getattr(p, "do_not_specialize_on_alignment", False)
        if p.is_constexpr or (by_value and type(value) is int and value == 1):
            signature[name] = "constexpr"
            constexprs[name] = value
        elif isinstance(value, Pointer):
            signature[name] = "*" + value.dtype
            if value.aligned and by_alignment:
                attrs[(i,)] = divisible
        elif type(value) is int:
            signature[name] = "i32" if INT32_MIN <= value <= INT32_MAX else "i64"
            if value % DIVISIBILITY == 0 and by_alignment:
                attrs[(i,)] = divisible
        else:
            raise TypeError(f"{fn.__name__}: argument {name}={value!r} is neither Pointer nor int")
    return signature, constexprs, attrs


def _jit_function(fn):
    """The JITFunction under autotuner/heuristics wrappers (re-made when interpreting)."""
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(fn, JITFunction) and hasattr(fn, "fn") and seen < 8:
        inner = fn.fn
        if inspect.isfunction(inner):
            # TRITON_INTERPRET=1 wraps the Python function instead of jitting it
            return JITFunction(inner)
        fn, seen = inner, seen + 1
    if not isinstance(fn, JITFunction):
        raise TypeError(f"not a Triton kernel: {fn!r}")
    return fn


def _resolve_spec(target, **kwargs) -> KernelSpec:
    if isinstance(target, KernelSpec):
        return target
    if isinstance(target, str) and "." not in target and ":" not in target:
        from study.kernels import get  # a registry id such as "T5p"

        target = get(target)
    if hasattr(target, "target") and hasattr(target, "impl"):  # a study.kernels.Kernel
        if target.impl != "triton":
            raise ValueError(f"{target.id} is a {target.impl} kernel, not a Triton one")
        if kwargs.get("num_stages") is None:
            kwargs["num_stages"] = target.num_stages
        target = target.target
    if isinstance(target, str):
        target = importlib.import_module(target.split(":", 1)[0])
    if not isinstance(target, ModuleType) or not hasattr(target, "aot_spec"):
        raise TypeError(f"cannot compile {target!r}: expected a KernelSpec or a module with aot_spec()")
    accepted = inspect.signature(target.aot_spec).parameters
    call = {k: v for k, v in kwargs.items() if v is not None}
    refused = [k for k in call if k not in accepted]
    if refused:
        raise TypeError(f"{target.__name__}.aot_spec() takes no {', '.join(refused)}")
    return target.aot_spec(**call)


# --------------------------------------------------------------------------------------------
# cuobjdump
# --------------------------------------------------------------------------------------------


def find_cuobjdump() -> str | None:
    """Path of a usable ``cuobjdump``: $TRITON_CUOBJDUMP_PATH, the Triton wheel's, PATH, CUDA_HOME."""
    candidates = [os.environ.get("TRITON_CUOBJDUMP_PATH", "")]
    try:
        import triton

        candidates.append(str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"))
    except ImportError:
        pass
    candidates.append(shutil.which("cuobjdump") or "")
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(str(Path(home) / "bin" / "cuobjdump"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def _cuobjdump(cubin: bytes, *flags: str) -> str:
    tool = find_cuobjdump()
    if tool is None:
        raise FileNotFoundError("cuobjdump not found (Triton wheel, PATH, CUDA_HOME, TRITON_CUOBJDUMP_PATH)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run([tool, *flags, str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"cuobjdump {' '.join(flags)} failed: {done.stderr.strip()}")
    return done.stdout


_USAGE = re.compile(r"Function\s+(\S+?):\s*\n\s*((?:[A-Z_]+(?:\[\d+\])?:\d+\s*)+)")


def resource_usage(cubin: bytes) -> dict[str, dict[str, int]]:
    """``cuobjdump -res-usage`` per function: {"REG": .., "STACK": .., "SHARED": .., "LOCAL": ..}."""
    out = {}
    for fname, fields in _USAGE.findall(_cuobjdump(cubin, "-res-usage")):
        out[fname] = {k: int(v) for k, v in re.findall(r"([A-Z_]+(?:\[\d+\])?):(\d+)", fields)}
    return out
