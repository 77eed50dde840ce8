"""What the Gluon twins G6, G10 and G12 share: the Triton-version gate, the barrier, operand checks.

Gluon (``triton.experimental.gluon``) is Triton's layout-explicit dialect: a kernel states
which thread holds which element of every tensor (``gl.BlockedLayout``,
``gl.DistributedLinearLayout``, ``gl.SliceLayout``), allocates shared memory itself
(``gl.allocate_shared_memory``) and moves tiles between registers and shared memory with
explicit loads and stores. The twins use that to reproduce the CUDA kernels' thread -> output
maps exactly, so that comparing a CUDA rung with its Gluon twin compares code generation on
one and the same tile layout.

Versions. The experimental API moves between Triton releases; what the twins need is checked
once here, by name (:func:`unsupported_reason`), so a version that lacks a piece is reported in
one line instead of failing inside the compiler. The one spelling that differs between the
versions the project runs is the CTA barrier: ``gl.thread_barrier()`` in Triton 3.6,
``gl.barrier()`` in 3.9 (:data:`cta_barrier` is whichever exists).

Neither the CPU interpreter (``TRITON_INTERPRET=1``) nor a CPU tensor can run a Gluon kernel:
the launchers refuse both before launch.
"""

from __future__ import annotations

import triton
from triton.experimental.gluon import _runtime as gluon_runtime
from triton.experimental.gluon import language as gl

# Gluon names the twins use; any one missing makes the version unsupported.
REQUIRED = (
    "BlockedLayout", "SliceLayout", "DistributedLinearLayout", "SwizzledSharedLayout",
    "PaddedSharedLayout", "allocate_shared_memory", "arange", "load", "store", "fma", "zeros",
    "static_range", "program_id",
)
# Offsets are computed in 32-bit integers: refuse operands with more elements than that.
MAX_ELEMENTS = 2**31 - 1
GRID_Y_MAX = 65535  # gridDim.y (the rows of C's tiles), as for the CUDA kernels


def builtin(module, *names):
    """The first of ``names`` (one builtin's spellings across the Triton versions the project
    runs) that ``module`` has; None where it has none (``unsupported_reason`` says so)."""
    for name in names:
        fn = getattr(module, name, None)
        if fn is not None:
            return fn
    return None


# __syncthreads(): a Gluon builtin, called inside the kernels as ``cta_barrier()`` (3.9 and 3.6
# spellings)
cta_barrier = builtin(gl, "barrier", "thread_barrier")


def linear_layout(bases: dict, shape: list[int]):
    """The distributed layout whose (register, lane, warp) bits add ``bases``' (row, column)
    offsets over ``shape``: a twin's thread -> outputs map (one CTA, no block bases)."""
    return gl.constexpr(gl.DistributedLinearLayout(
        reg_bases=bases["reg"], lane_bases=bases["lane"], warp_bases=bases["warp"], block_bases=[],
        shape=shape,
    ))


def unsupported_reason(extra: tuple[str, ...] = ()) -> str | None:
    """None when this Triton can build the Gluon twins, else one line naming what is missing."""
    missing = [n for n in REQUIRED + tuple(extra) if not hasattr(gl, n)]
    if cta_barrier is None:
        missing.append("barrier/thread_barrier")
    if not hasattr(gluon_runtime, "GluonASTSource"):  # the AOT compile's source class
        missing.append("GluonASTSource")
    if missing:
        return f"triton {triton.__version__}: triton.experimental.gluon lacks {', '.join(missing)}"
    return None


# K10's lane map (K12 keeps it), as bases of a DistributedLinearLayout: the (row, column) offset
# each bit of the register index and of the lane adds; the warp bases are each twin's own.
K10_LANE_MAP = dict(
    # a 4 x 4 sub-block (columns first: 128-bit stores), then j (32 columns), then i (16 rows)
    reg=[[0, 1], [0, 2], [1, 0], [2, 0], [0, 32], [16, 0], [32, 0]],
    # lane bits 0..4 -> lx bit 0 (4 columns), ly bit 0 (4 rows), lx bit 1, lx bit 2, ly bit 1
    lane=[[0, 4], [4, 0], [0, 8], [0, 16], [8, 0]],
)


def require_supported(name: str, why: str | None) -> None:
    """RuntimeError naming the twin when ``why`` (its ``unsupported_reason()``) says it cannot be built."""
    if why:
        raise RuntimeError(f"{name} cannot be built: {why}")


def check_operands(a, b, out, *, name: str, multiple_of: tuple[int, int, int], bm: int):
    """Validate ``a @ b -> out`` for a Gluon twin; return ``out`` (allocated when None).

    What :func:`triton_kernels.tile.check_operands` checks of every Triton kernel (FP32 2-D
    tensors of matching shapes on one device, every dimension >= 1, 32-bit offsets; any stride),
    and then what a Gluon twin adds: CUDA tensors (Gluon has no CPU interpreter), M/N/K multiples
    of ``multiple_of`` (the CUDA twin's 128-bit-load constraint) and at most ``GRID_Y_MAX`` tile
    rows of ``bm``.
    """
    from triton_kernels.tile import check_operands as check_triton_operands

    two_d = all(getattr(t, "dim", lambda: 0)() == 2 for t in (a, b))
    if two_d and a.shape[1] == b.shape[0]:  # the twin's own constraint first: it names the cause
        for dim, size, mult in zip("MNK", (a.shape[0], b.shape[1], a.shape[1]), multiple_of):
            if size % mult:
                raise ValueError(f"{name}: {dim} must be a multiple of {mult} (128-bit loads, as its "
                                 f"CUDA twin), got {dim}={size}")
    out = check_triton_operands(a, b, out)
    if a.device.type != "cuda":  # also under TRITON_INTERPRET=1, which tile's check lets through
        raise ValueError(f"{name}: Gluon kernels need CUDA tensors (no CPU interpreter for Gluon), "
                         f"got {a.device}")
    M = a.shape[0]
    if -(-M // bm) > GRID_Y_MAX:
        raise ValueError(f"{name}: M={M} needs {-(-M // bm)} tile rows; gridDim.y allows {GRID_Y_MAX}")
    return out


def strides(a, b, out) -> tuple[int, ...]:
    """The six strides the kernels take, in the order of ``aot.matmul_spec``."""
    return (a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))


def _maxnreg(maxnreg: int | None) -> dict:
    return {} if maxnreg is None else {"maxnreg": maxnreg}


def launch(kernel, a, b, out, *, name: str, why: str | None, multiple_of: tuple[int, int, int],
           tile: tuple[int, int, int], num_warps: int, maxnreg: int | None = None, **constexprs):
    """``out = a @ b`` by a twin's kernel: refused (``require_supported``, ``check_operands``)
    before launch, then one program per (BN columns, BM rows) tile of C; returns out. ``maxnreg``:
    the register cap the compile takes (None: the compiler's choice)."""
    import triton

    require_supported(name, why)
    bm, bn, bk = tile
    out = check_operands(a, b, out, name=name, multiple_of=multiple_of, bm=bm)
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, bn), triton.cdiv(M, bm))
    kernel[grid](a, b, out, M, N, K, *strides(a, b, out), BM=bm, BN=bn, BK=bk, **constexprs,
                 num_warps=num_warps, num_stages=1, **_maxnreg(maxnreg))
    return out


def aot_spec(kernel, num_stages: int, shape, *, name: str, why: str | None, refusal: str,
             tile: tuple[int, int, int], num_warps: int, maxnreg: int | None = None, **constexprs):
    """A twin's ``aot_spec``: the kernel, representative arguments and options for
    ``aot.compile_sass_target``. A twin writes its stages itself (Triton's software pipeliner does
    not touch Gluon kernels): ``num_stages`` other than 1 is refused, ``refusal`` saying why."""
    from triton_kernels.aot import matmul_spec

    require_supported(name, why)
    if num_stages != 1:
        raise ValueError(f"{name} {refusal}; num_stages={num_stages} is not offered")
    bm, bn, bk = tile
    spec = matmul_spec(kernel, dict(BM=bm, BN=bn, BK=bk, **constexprs), num_warps=num_warps,
                       num_stages=1, shape=shape)
    spec.extra_options.update(_maxnreg(maxnreg))
    return spec
