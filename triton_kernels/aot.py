"""Ahead-of-time compilation of the Triton kernels for a named GPU, with no GPU present.

``compile_sass_target(target, arch)`` compiles one kernel for ``GPUTarget("cuda", arch, 32)``
and returns its cubin (bytes), PTX, shared memory and kernel name. Reading the cubin
(``cuobjdump``) is the caller's business: this package finds no tools and imports nothing of
the study; what it needs of the study's registry (a kernel's module and pipeline depth)
comes in as arguments.

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

Gluon. A ``@gluon.jit`` kernel (``triton.experimental.gluon``, layouts written out in the
kernel) goes through the same path with ``GluonASTSource`` in place of ``ASTSource``; its
arguments are specialised by the same rule.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
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
    cubin: bytes = field(repr=False)
    ptx: str = field(repr=False)
    shared: int  # bytes of shared memory per block (Triton allocates it dynamically)
    num_warps: int
    num_stages: int
    # the kernel's runtime arguments in order, as its cubin takes them: ("*fp32", None) for a
    # pointer, ("i32", value) / ("i64", value) for an integer (the constexprs are compiled in)
    arguments: tuple = ()


# --------------------------------------------------------------------------------------------
# Compile
# --------------------------------------------------------------------------------------------


def compile_sass_target(target, arch: int = 90, num_stages: int | None = None, *,
                        shape: tuple[int, int, int] | None = None, config: dict | None = None,
                        **spec_kwargs) -> AotKernel:
    """Compile one Triton kernel for ``sm_<arch>`` without a GPU.

    ``target`` is a :class:`KernelSpec`, a kernel module of this package (anything with an
    ``aot_spec`` function) or its dotted name (``"triton_kernels.t5_reg_tile_2d"``, optionally
    with ``":matmul"``, as a registry entry's ``target`` holds it). ``num_stages`` None keeps
    the module's default; ``shape`` is the representative launch (4096^3); ``config`` picks
    the autotuned kernel's configuration; further keywords (``smem_limit`` for the autotuned
    kernel) go to the module's ``aot_spec``. The result carries the cubin as bytes: dumping
    it is left to the caller.
    """
    spec = resolve_spec(target, num_stages=num_stages, shape=shape, config=config, **spec_kwargs)
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
    src = _source_class(fn, ASTSource)(fn, signature, constexprs, attrs)
    options = {"num_warps": spec.num_warps, "num_stages": spec.num_stages, **spec.extra_options}
    compiled = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)

    meta = compiled.metadata
    return AotKernel(
        name=getattr(meta, "name", None) or fn.__name__,
        arch=arch,
        cubin=compiled.asm["cubin"],
        ptx=compiled.asm["ptx"],
        shared=int(getattr(meta, "shared", 0) or 0),
        num_warps=spec.num_warps,
        num_stages=spec.num_stages,
        arguments=tuple((kind, None if kind.startswith("*") else spec.args[name])
                        for name, kind in signature.items() if kind != "constexpr"),
    )


def specialize(fn, args: dict[str, Any]) -> tuple[dict, dict, dict]:
    """Signature, constexprs and attributes the runtime JIT would derive from ``args``.

    Mirrors Triton's rule: declared ``tl.constexpr`` parameters and integers equal to 1 are
    constants; integers get ``i32``/``i64`` and pointers ``*<dtype>``, each with
    ``tt.divisibility = 16`` when the value (address) is a multiple of 16. A constexpr parameter
    with a default takes it where ``args`` leaves it out, as at a launch.
    """
    names = list(fn.arg_names)
    defaults = {p.name: p.default for p in fn.params if p.is_constexpr and getattr(p, "has_default", False)}
    args = {**{n: v for n, v in defaults.items() if n not in args}, **args}
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


def _source_class(fn, ast_source):
    """``GluonASTSource`` for a ``@gluon.jit`` kernel (its layouts are explicit), else ``ast_source``.

    A Gluon kernel is built from its own source class, which sets the target, warps and
    threads per warp on the module before the layouts in the body are verified against them.
    """
    is_gluon = getattr(fn, "is_gluon", None)
    if not (callable(is_gluon) and is_gluon()):
        return ast_source
    from triton.experimental.gluon import _runtime  # exported at the package level only from 3.9

    return _runtime.GluonASTSource


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


def resolve_spec(target, **kwargs) -> KernelSpec:
    """The :class:`KernelSpec` ``compile_sass_target`` would compile for ``target`` and options.

    Cheap (nothing is compiled): it tells which launch a call would build, e.g. the
    configuration an autotuned kernel falls back to. Keywords that are None are left out;
    one the module's ``aot_spec`` does not take is a TypeError.
    """
    if isinstance(target, KernelSpec):
        return target
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
