"""TAT: Triton's ``tl.dot`` (FP32, ``input_precision="ieee"``) on A transposed first.

The tiled kernel of the twins and TA (:func:`triton_kernels.tile.tiled_matmul_kernel`) takes any
strides. Given A^T's view (stride 1 along m) rather than row-major A, its A tile arrives contiguous
along m, as K12 holds A in shared memory (As[k][m]), and a thread's 16-byte shared loads of A then
hold 4 rows at one k rather than 4 values of k of one row: the same instructions, fewer registers
(docs/notes/g12t.md has the counts and the times). The transposition is G12T's
kernel (:func:`triton_kernels.g12t_gluon.transpose`, 2 M K 4 bytes moved), part of every call's
time; under the CPU interpreter (``TRITON_INTERPRET=1``), where Gluon does not run, torch transposes.

The tile: 128 x 128 x 32 on 8 warps, 3 stages, GROUP_M = 8, the fastest of the tiles tried on A^T
(docs/notes/g12t.md).
"""

from __future__ import annotations

from triton_kernels.tile import aot_spec as tile_aot_spec
from triton_kernels.tile import check_operands, interpreting, launch_tiled

BM, BN, BK = 128, 128, 32
NUM_WARPS, NUM_STAGES, GROUP_M = 8, 3, 8


def matmul(a, b, out=None):
    """``out = a @ b`` (FP32, any strides): A transposed into a workspace, then ``tl.dot`` on its
    view."""
    out = check_operands(a, b, out)  # CUDA tensors, or CPU ones under TRITON_INTERPRET=1
    if interpreting():  # Gluon has no CPU interpreter: torch transposes, the product is interpreted
        at = a.t().contiguous()
    else:
        from triton_kernels import g12t_gluon

        at = g12t_gluon.transpose(a)
    return launch_tiled(at.t(), b, out, BM, BN, BK, NUM_WARPS, NUM_STAGES, group_m=GROUP_M)


def aot_spec(num_stages: int = NUM_STAGES, shape: tuple[int, int, int] | None = None):
    """The product's kernel as TAT launches it (on At.T: stride 1 along m, M along k) for
    ``aot.compile_sass_target``."""
    spec = tile_aot_spec(BM=BM, BN=BN, BK=BK, num_warps=NUM_WARPS, num_stages=num_stages, shape=shape,
                         group_m=GROUP_M)
    spec.args.update(stride_am=1, stride_ak=spec.args["M"])
    return spec
