"""``sgemm_ledgers.mm(a, b, out=None)``: the study's fastest FP32 kernel for a shape, as a PyTorch
operator.

``torch.ops.sgemm_ledgers.mm`` (and ``mm.out``) is registered in C++ with ``torch.library``
(``cuda_kernels/bindings.cpp``): it dispatches without Python between the call and the launch,
runs inside a CUDA graph, and traces under ``torch.compile`` (a Meta kernel gives its output's
shape). :func:`mm` calls that operator while ``torch.compile`` traces; eagerly it calls the same C++
checks and body through the extension's binding, which returns what is wrong instead of throwing,
so a call costs the host one Python-to-C++ crossing and no dispatcher (``host_us`` in the decode
panel, docs/method.md#decode-panel).

Which kernel it launches follows one rule, handed to the extension once per process
(:func:`configure`) from the kernel registry:

- M <= ``KD_MAX_M``, N and K multiples of 4, 16-byte aligned operands: the decode rung KD, on the
  path its registry entry picks for M (``Kernel.path_for``: the streaming GEMV up to M = 8, the
  tiled decode GEMM beyond on sm_90);
- M, N, K multiples of the top rung's tile (``TOP_RUNG``, 128 x 256 x 16), at least
  ``TOP_MIN_TILES_PER_SM`` of its tiles per SM and 16-byte aligned operands (its copies of B are
  16 bytes): the top rung;
- anything else: torch's own matmul (cuBLAS), with TF32 off whatever torch's switch says.

Operands are float32, 2-D, row-major (contiguous) and on one CUDA device; anything else raises a
RuntimeError that names the problem, before anything is written. The KD workspace is one per
device: one call at a time per device (two streams running KD at once would share it). Importing
this package builds nothing; the first call builds the extension (``cuda_kernels.load``).
"""

from __future__ import annotations

import threading

import torch

_F32 = torch.float32

# The decode rung up to this M: in the decode panel (``python -m study.decode``) it is ahead of the
# best vendor kernel below M = 64 but at one shape, and at M = 64 ahead on most shapes and behind on
# a few (docs/notes/kd.md, the panel and the committed runs)
KD_MAX_M = 64
# The top rung and how many of its tiles it needs per SM: K15 passes the best vendor kernel at
# 4096^3 and 8192^3 (512 and 2048 tiles on 132 SMs) and is level with it at 2048^3 (128 tiles,
# under one wave), where K12 falls behind (docs/notes/k15.md)
TOP_RUNG = "K15"
TOP_MIN_TILES_PER_SM = 2

_lock = threading.Lock()
_ops = None  # (mm, mm.out) once configured
_eager = None  # the extension's (mm_eager_new, mm_eager) once configured


def configure(device=None) -> None:
    """Build the extension and hand it the route table for ``device`` (the current CUDA device by
    default): KD's path for each M up to ``KD_MAX_M`` on that device's compute capability, the top
    rung's symbol and the tiles it needs there. Called by the first :func:`mm`; call it again for
    a device of another kind."""
    global _ops, _eager
    import cuda_kernels
    from study import kernels as registry

    with _lock:
        ext = cuda_kernels.load()
        dev = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
        major, minor = torch.cuda.get_device_capability(dev)
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        kd = registry.get("KD")
        symbols = [kd.path_for(m, cc=f"{major}.{minor}").symbol for m in range(1, KD_MAX_M + 1)]
        problem = ext.configure_mm(symbols, registry.get(TOP_RUNG).symbol, TOP_MIN_TILES_PER_SM * sms)
        if problem:
            raise RuntimeError(f"sgemm_ledgers: {problem}")
        _ops = (torch.ops.sgemm_ledgers.mm.default, torch.ops.sgemm_ledgers.mm.out)
        _eager = (ext.mm_eager_new, ext.mm_eager)


def _check(a, b, out) -> None:
    # Made here, before the operator is called while tracing, and to name the problem where the
    # eager binding refused: on some builds a C++ exception thrown inside an extension's operator
    # takes the interpreter down instead of reaching Python, so the operator's own C++ checks (the
    # same, in cuda_kernels/bindings.cpp) are only a backstop
    if a.dim() != 2 or b.dim() != 2:
        raise RuntimeError("sgemm_ledgers.mm: a and b must be 2-D, got "
                           f"{tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError("sgemm_ledgers.mm: inner dimensions differ: a is "
                           f"{tuple(a.shape)}, b is {tuple(b.shape)}")
    if a.dtype != _F32 or b.dtype != _F32:
        raise RuntimeError(f"sgemm_ledgers.mm: a and b must be float32, got {a.dtype} and {b.dtype}")
    if not (a.is_cuda and b.is_cuda and a.device == b.device):
        raise RuntimeError("sgemm_ledgers.mm: a and b must be on one CUDA device, got "
                           f"{a.device} and {b.device}")
    if not (a.is_contiguous() and b.is_contiguous()):
        raise RuntimeError("sgemm_ledgers.mm: a and b must be contiguous (row-major), got strides "
                           f"{a.stride()} and {b.stride()}")
    if out is None:
        return
    if (out.dtype != _F32 or out.device != a.device or not out.is_contiguous()
            or tuple(out.shape) != (a.shape[0], b.shape[1])):
        raise RuntimeError(f"sgemm_ledgers.mm: out must be a contiguous float32 {a.shape[0]} x {b.shape[1]} "
                           f"tensor on {a.device}, got {out.dtype} {tuple(out.shape)} on {out.device}")
    if out.numel() and any(_overlap(out, t) for t in (a, b)):
        raise RuntimeError("sgemm_ledgers.mm: out must not share memory with a or b")


def _overlap(x, y) -> bool:
    x0, y0 = x.data_ptr(), y.data_ptr()
    return x0 < y0 + y.numel() * y.element_size() and y0 < x0 + x.numel() * x.element_size()


def mm(a, b, out=None):
    """``a @ b`` in FP32 (``out`` written in place and returned where given) with the kernel the
    rule above picks for the shape; a RuntimeError that names the problem, with nothing written,
    for operands it does not take."""
    if _ops is None:
        configure()
    if torch.compiler.is_compiling():  # traced: the registered operator
        _check(a, b, out)
        return _ops[0](a, b) if out is None else _ops[1](a, b, out=out)
    if out is None:
        got = _eager[0](a, b)
        if got.__class__ is str:
            _refuse(a, b, out, got)
        return got
    problem = _eager[1](a, b, out)
    if problem is not None:
        _refuse(a, b, out, problem)
    return out


def _refuse(a, b, out, problem: str):
    _check(a, b, out)  # raises with the operands' shapes, dtypes or devices in the message
    raise RuntimeError(f"sgemm_ledgers.mm: {problem}")


def route(a, b, out=None) -> str:
    """The function :func:`mm` launches for these operands: a kernel's symbol (``kd_gemv_m1``,
    ``k15_wide_copies``, ...) or ``"vendor"`` (torch's matmul)."""
    import cuda_kernels

    if _ops is None:
        configure()
    if out is None:
        out = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    return cuda_kernels.load().mm_route(a, b, out)


__all__ = ["KD_MAX_M", "TOP_MIN_TILES_PER_SM", "TOP_RUNG", "configure", "mm", "route"]
