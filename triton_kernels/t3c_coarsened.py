"""T3c: Triton twin of K3c -- 32 x 128 x 32 block tile, 32 warps (1024 threads).

K3c is K3 coarsened by 4: each thread computes four outputs of one row, one in each of four
32-column tiles across, reusing the A tile it staged in shared memory for four B tiles; one
block covers 32 x 128.

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

BM, BN, BK = 32, 128, 32
NUM_WARPS = 32  # 1024 threads per block, as in K3c

matmul, aot_spec = twin(BM, BN, BK, NUM_WARPS)
