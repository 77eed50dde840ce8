"""What the Gluon twins G6 and G10 share: the Triton-version gate, the barrier, operand checks.

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


def _barrier():
    for name in ("barrier", "thread_barrier"):  # 3.9 and 3.6 spellings
        fn = getattr(gl, name, None)
        if fn is not None:
            return fn
    return None


# __syncthreads(): a Gluon builtin, called inside the kernels as ``cta_barrier()``.
cta_barrier = _barrier()


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
