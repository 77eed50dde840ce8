"""T5: Triton twin of K5 and K6 -- 32 x 128 x 32 block tile, 4 warps (128 threads).

K5 is 2-D register tiling: each of 128 threads computes an 8 x 4 block of outputs from 8 A
and 4 B values per k-step. K6 is the same tile with 128-bit (float4) global and shared loads
chosen by hand; Triton picks its load widths itself, so one twin stands for both.

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
NUM_WARPS = 4  # 128 threads per block, as in K5 and K6

matmul, aot_spec = twin(BM, BN, BK, NUM_WARPS)
