"""T4: Triton twin of K4 -- 32 x 32 x 32 block tile, 4 warps (128 threads).

K4 is 1-D register tiling: each of 128 threads computes 8 consecutive rows of one column,
reusing one B value from shared memory for 8 FMAs.

The twin pins only what the CUDA kernel fixes *outside* the tile: the block tile
(BM x BN x BK) and the threads per block (``num_warps`` = threads / 32). Triton chooses
everything inside it itself -- which thread owns which outputs, the vector widths of global
and shared loads, the shared-memory layout and, with ``num_stages > 1``, a software pipeline
of asynchronous copies. ``num_stages=1`` is unpipelined, like the CUDA kernel. Products are
exact FP32 (``input_precision="ieee"``: FFMA, no TF32). The kernel is
:func:`triton_kernels.tile.tiled_matmul_kernel`.
"""

from __future__ import annotations

from triton_kernels.tile import twin

BM, BN, BK = 32, 32, 32
NUM_WARPS = 4  # 128 threads per block, as in K4

matmul, aot_spec = twin(BM, BN, BK, NUM_WARPS)
