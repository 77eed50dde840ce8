"""A lead for G12's copies of A (docs/notes/g12.md, "A swizzled As read a period at a time"), on a CPU:

1. what a copy of A costs the shared-memory unit (global lines plus the wavefronts its bank
   conflicts add, study.toolchain.access's rule) for As[k][m] unswizzled and swizzled
   (SwizzledSharedLayout(vec=4, per_phase=1, max_phase=P): element (k, m) at
   k * BM + 4 * ((m / 4) XOR (k mod P)) + m mod 4), by the lanes along k of the copy map;
2. which slices of such an As along k the installed Triton compiles for sm_90: whole periods
   (P rows at a multiple of P) or fewer rows;
3. G12's k-steps with A's fragments read a period (4 k-steps) at a time: a slice of 4 rows loaded
   into registers ([BM, 4], 4 values of k per row of the thread), split into its k-steps in
   registers (gl.split) and multiplied into K12's accumulator map with B's row of each k-step:
   whether it compiles, and its instructions and registers (no copies, one stage: the fragments
   and the FMAs only).

    python docs/notes/g12/swizzle_lead.py      (from the repository root; Triton, nvcc's cuobjdump)
"""
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, os.getcwd())
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402

from study.toolchain import sass  # noqa: E402
from study.toolchain.access import copy_conflicts, lines  # noqa: E402
from triton_kernels import aot  # noqa: E402
from triton_kernels import gluon_common as gc  # noqa: E402
from triton_kernels.gluon_common import cta_barrier  # noqa: E402

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


# K12's accumulator map (G12's), and A's chunk [BM, 4]: 4 values of k in registers (fastest), then
# the thread's 16 rows of the accumulator; lanes and warps as its rows (its column bits broadcast)
ACC = gc.linear_layout(dict(**gc.K10_LANE_MAP, warp=[[0, 64], [0, 128], [64, 0]]), [128, 256])
A4 = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[0, 1], [0, 2], [1, 0], [2, 0], [16, 0], [32, 0]],
    lane_bases=[[0, 0], [4, 0], [0, 0], [0, 0], [8, 0]],
    warp_bases=[[0, 0], [0, 0], [64, 0]], block_bases=[], shape=[128, 4]))


@gluon.jit
def _chunks(a_ptr, b_ptr, c_ptr):
    """A K-tile of 16: As [16, 128] swizzled with period 4, Bs [16, 256]; A's fragments read 4
    k-steps at a time and split into k-steps, 16 x 8 FMAs a thread each k-step."""
    SA: gl.constexpr = gl.SwizzledSharedLayout(4, 1, 4, [1, 0])
    SB: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    L: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, 8], [1, 0])
    a_s = gl.allocate_shared_memory(gl.float32, [16, 128], SA)
    b_s = gl.allocate_shared_memory(gl.float32, [16, 256], SB)
    r = gl.arange(0, 16, layout=gl.SliceLayout(1, L))
    ca = gl.arange(0, 128, layout=gl.SliceLayout(0, L))
    cb = gl.arange(0, 256, layout=gl.SliceLayout(0, L))
    a_s.store(gl.load(a_ptr + r[:, None] * 128 + ca[None, :]))
    b_s.store(gl.load(b_ptr + r[:, None] * 256 + cb[None, :]))
    cta_barrier()
    acc = gl.zeros([128, 256], gl.float32, ACC)
    for k0 in gl.static_range(0, 16, 4):
        a4 = a_s.slice(k0, 4, dim=0).permute([1, 0]).load(A4)  # [BM, 4]
        even, odd = gl.split(a4.reshape([128, 2, 2]))  # k0 + {0, 2} and k0 + {1, 3}
        k02, k13 = gl.split(even), gl.split(odd)
        for j in gl.static_range(4):
            if j % 2 == 0:
                av = k02[j // 2]
            else:
                av = k13[j // 2]
            av = gl.convert_layout(av, gl.SliceLayout(1, ACC))
            bv = b_s.slice(k0 + j, 1, dim=0).load(ACC)
            acc = gl.fma(av[:, None], bv, acc)
    cm = gl.arange(0, 128, layout=gl.SliceLayout(1, ACC))
    cn = gl.arange(0, 256, layout=gl.SliceLayout(0, ACC))
    gl.store(c_ptr + cm[:, None] * 256 + cn[None, :], acc)


def chunk_probe() -> str:
    """What the period-at-a-time fragments compile to: registers and the counts of the
    instructions that matter, or why they do not compile."""
    spec = aot.KernelSpec(_chunks, dict(a_ptr=aot.Pointer(), b_ptr=aot.Pointer(), c_ptr=aot.Pointer()),
                          num_warps=8, num_stages=1)
    try:
        k = aot.compile_sass_target(spec)
    except Exception as e:
        return "refused: " + str(e).strip().splitlines()[-1][:200]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.cubin"
        path.write_bytes(k.cubin)
        regs = sass.resources_cubin(path, k.name).get("REG")
        instrs = sass.dump_sass(path, k.name)
    count = Counter(i.opcode for i in instrs)
    shown = ", ".join(f"{count[o]} {o}" for o in sorted(count) if o.split(".")[0] in
                      ("FFMA", "LDS", "STS", "SHFL", "PRMT", "MOV", "STL", "LDL"))
    return f"compiled: {regs} registers; {shown}"


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
    print(f"triton {triton.__version__}: A's fragments a period at a time, split in registers:",
          chunk_probe())
