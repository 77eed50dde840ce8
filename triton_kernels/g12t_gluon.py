"""G12T: G12's kernel on A transposed ahead of it, so that A's copies are B's (K12's tile and lane map).

G12 (``g12_gluon``) copies A's K-tile [128 x 16] from row-major A into As[k][m], transposing it on
the way, and in an unpadded As those copies meet the bank conflicts its module docstring describes;
Gluon cannot pad As, and the layouts that avoid the transposition cost more than they save (G15,
docs/notes/g15.md).

G12T takes the transposition out of the K loop. A first kernel writes At = A^T ([K, M], row-major)
through shared memory, tile by tile; then G12's kernel runs on the view At.T, whose stride along m
is 1, so that A is copied as B is:

* every lane of A's copy map along m: with :data:`VEC` = 4 (M and N multiples of 4) a lane copies
  16 bytes and a warp one row of As, 512 contiguous bytes, into 32 banks without conflict, as B's
  16-byte copies do (K15's copies of B); else 4 bytes a lane (:data:`A_LANES_K` = 1), also without
  conflict;
* one phase a loop iteration (:data:`INDEXED`): the two stages are one allocation indexed by the
  phase's parity, and each phase's last k-step, after its one barrier, copies the K-tile two phases
  on into the stage it has just freed. G12's loop runs two phases on two named stages, twice K12's
  code, and its warps wait on instruction fetch; the indexed loop is K12's size. Triton's
  shared-memory barrier analysis cannot tell the two indexed stages apart and puts a barrier after
  the copies (two a phase), which the copies right after the phase's own barrier make cheap: the
  warps arrive together.

The transposition reads and writes A once, 2 M K 4 bytes, outside the product's 2 M N K flops; its
time is part of every call's time. docs/notes/g12t.md has the measurements.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from triton_kernels import g12_gluon as g12
from triton_kernels import gluon_common as gc

NAME = "G12T"
MULTIPLE_OF = (1, 1, 1)  # any M, N, K, as G12
# lanes of a warp along k in A's copy map of 4-byte copies: 1, every lane along m, contiguous in At
A_LANES_K = 1
# G12's B_STEP: the k-step of a phase that issues B's copy on named stages (INDEXED = False); the
# indexed stages copy both operands at each phase's end
B_STEP = 8
AHEAD = True  # fragments read a k-step ahead (the indexed stages need it)
# the register cap the compile takes: ptxas assigns the loop's registers differently under each, and
# 248 ran fastest of None (255), 224, 232, 240 and 248 (docs/notes/g12t.md)
MAXNREG = 248
# 16-byte copies of both operands where M and N are multiples of 4 (else 4-byte ones, any shape)
VEC = 4
# one phase a loop iteration on stages indexed by its parity (half the code of two named stages)
INDEXED = True
# the transposition's tile [rows of A x columns of A] and its warps
TT_R, TT_C, TT_WARPS = 64, 64, 4


def unsupported_reason() -> str | None:
    """None when this Triton can build G12T (G12's needs; the transposition adds none)."""
    return g12.unsupported_reason()


@gluon.jit
def transpose_kernel(x_ptr, y_ptr, R, C, stride_xr, stride_xc,
                     TR: gl.constexpr, TC: gl.constexpr):
    """y[c, r] = x[r, c] for a [TR x TC] tile of x; y is [C, R], row-major. x's rows are read and
    y's rows written 16 bytes a lane; the layout conversion between the two goes through shared
    memory."""
    nw: gl.constexpr = gl.num_warps()
    LX: gl.constexpr = gl.BlockedLayout([1, 4], [32 * 4 // TC, TC // 4], [nw, 1], [1, 0])
    LY: gl.constexpr = gl.BlockedLayout([4, 1], [TR // 4, 32 * 4 // TR], [1, nw], [0, 1])
    pr = gl.program_id(1)
    pc = gl.program_id(0)
    r = pr * TR + gl.arange(0, TR, layout=gl.SliceLayout(1, LX))
    c = pc * TC + gl.arange(0, TC, layout=gl.SliceLayout(0, LX))
    x = gl.load(x_ptr + r[:, None] * stride_xr + c[None, :] * stride_xc,
                mask=(r[:, None] < R) & (c[None, :] < C))
    y = gl.convert_layout(x, LY)
    ry = pr * TR + gl.arange(0, TR, layout=gl.SliceLayout(1, LY))
    cy = pc * TC + gl.arange(0, TC, layout=gl.SliceLayout(0, LY))
    gl.store(y_ptr + cy[None, :] * R + ry[:, None], y, mask=(ry[:, None] < R) & (cy[None, :] < C))


def transpose(a, out=None):
    """A^T as a new row-major [K, M] tensor (``out`` if given), by :func:`transpose_kernel`."""
    import torch
    import triton

    M, K = a.shape
    if out is None:
        out = torch.empty((K, M), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(K, TT_C), triton.cdiv(M, TT_R))
    transpose_kernel[grid](a, out, M, K, a.stride(0), a.stride(1), TR=TT_R, TC=TT_C,
                           num_warps=TT_WARPS)
    return out


def _vec(M: int, N: int, b) -> int:
    """The copies' width in floats at this launch: :data:`VEC` where At's rows (M floats) and B's
    (its row stride) hold whole 16-byte pieces from an aligned start, else 1."""
    whole = M % VEC == 0 and N % VEC == 0 and b.stride(1) == 1 and b.stride(0) % VEC == 0
    return VEC if whole and b.data_ptr() % 16 == 0 else 1


def _options() -> dict:
    """The schedule's constexprs, as the module states them now (checked as G12's)."""
    return g12.check_schedule(NAME, B_STEP, A_LANES_K, INDEXED, AHEAD)


def matmul(a, b, out=None):
    """``out = a @ b`` (FP32, any strides): A transposed into a workspace, then G12's kernel on it."""
    why = unsupported_reason()
    gc.require_supported(NAME, why)
    out = gc.check_operands(a, b, out, name=NAME, multiple_of=MULTIPLE_OF, bm=g12.BM)
    at = transpose(a)
    return gc.launch(g12.g12_kernel, at.t(), b, out, name=NAME, why=why, multiple_of=MULTIPLE_OF,
                     tile=(g12.BM, g12.BN, g12.BK), num_warps=g12.NUM_WARPS, maxnreg=MAXNREG,
                     VEC=_vec(a.shape[0], b.shape[1], b), **_options())


def aot_spec(num_stages: int = 1, shape: tuple[int, int, int] | None = None):
    """G12's kernel as G12T launches it (on At.T: stride 1 along m, M along k; 16-byte copies) for
    ``aot.compile_sass_target``; ``num_stages`` other than 1 refused, as for G12."""
    spec = gc.aot_spec(g12.g12_kernel, num_stages, shape, name=NAME, why=unsupported_reason(),
                       refusal="writes its two stages itself", tile=(g12.BM, g12.BN, g12.BK),
                       num_warps=g12.NUM_WARPS, maxnreg=MAXNREG, VEC=VEC, **_options())
    spec.args.update(stride_am=1, stride_ak=spec.args["M"])
    return spec
