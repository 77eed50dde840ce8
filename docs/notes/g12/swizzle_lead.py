"""A lead for G12's copies of A (docs/notes/g12.md, "A swizzled As read a period at a time"), on a CPU:

1. what a copy of A costs the shared-memory unit (global lines plus the wavefronts its bank
   conflicts add, study.toolchain.access's rule) for As[k][m] unswizzled and swizzled
   (SwizzledSharedLayout(vec=4, per_phase=1, max_phase=P): element (k, m) at
   k * BM + 4 * ((m / 4) XOR (k mod P)) + m mod 4), by the lanes along k of the copy map;
2. which slices of such an As along k the installed Triton compiles for sm_90: whole periods
   (P rows at a multiple of P) or fewer rows.

    python docs/notes/g12/swizzle_lead.py      (from the repository root; Triton installed)
"""
import os
import sys

sys.path.insert(0, os.getcwd())
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402

from study.toolchain.access import copy_conflicts, lines  # noqa: E402
from triton_kernels import aot  # noqa: E402

K, BM, BK = 4096, 128, 16


def copy_cost(period: int, along_k: int) -> tuple[int, int]:
    """(lines, extra wavefronts) of one 4-byte copy instruction of A: lane l copies A[m][k],
    k = l mod along_k, m = l / along_k, into As[k][m]."""
    src, dst = [], []
    for lane in range(32):
        k, m = lane % along_k, lane // along_k
        src.append(4 * (m * K + k))
        dst.append(4 * (k * BM + 4 * ((m >> 2) ^ (k % period)) + (m & 3)))
    return lines(src, 32), copy_conflicts(dst, 32)


@gluon.jit
def _probe(a_ptr, c_ptr, R: gl.constexpr, P: gl.constexpr):
    """As [BK, BM] swizzled with period P, filled, then read R rows at a time."""
    SM: gl.constexpr = gl.SwizzledSharedLayout(4, 1, P, [1, 0])
    L: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, 8], [1, 0])
    s = gl.allocate_shared_memory(gl.float32, [16, 128], SM)
    r = gl.arange(0, 16, layout=gl.SliceLayout(1, L))
    c = gl.arange(0, 128, layout=gl.SliceLayout(0, L))
    s.store(gl.load(a_ptr + r[:, None] * 128 + c[None, :]))
    LR: gl.constexpr = gl.BlockedLayout([R, 4], [1, 32], [1, 8], [0, 1])
    acc = gl.zeros([R, 128], gl.float32, LR)
    for k0 in gl.static_range(0, 16, R):
        acc = acc + s.slice(k0, R, dim=0).load(LR)
    rr = gl.arange(0, R, layout=gl.SliceLayout(1, LR))
    cr = gl.arange(0, 128, layout=gl.SliceLayout(0, LR))
    gl.store(c_ptr + rr[:, None] * 128 + cr[None, :], acc)


def compiles(rows: int, period: int) -> bool:
    spec = aot.KernelSpec(_probe, dict(a_ptr=aot.Pointer(), c_ptr=aot.Pointer(), R=rows, P=period),
                          num_warps=8, num_stages=1)
    try:
        aot.compile_sass_target(spec)
    except Exception:
        return False
    return True


if __name__ == "__main__":
    for period, along_k in [(1, 4), (1, 8), (1, 16), (4, 4), (4, 8), (4, 16), (8, 8), (8, 16)]:
        n, extra = copy_cost(period, along_k)
        print(f"period {period}, {along_k:2d} lanes along k: {n} lines + {extra} = {n + extra} wavefronts")
    import triton
    for rows, period in [(1, 1), (4, 4), (8, 8), (2, 4), (4, 8)]:
        print(f"triton {triton.__version__}: slices of {rows} rows of As swizzled with period {period}:",
              "compiled" if compiles(rows, period) else "refused")
