"""T3: Triton twin of K3 -- 32 x 32 x 32 block tile, 32 warps (1024 threads).

K3 stages a 32 x 32 tile of A and of B in shared memory by hand (``Mds``, ``Nds``) and gives
each of its 32 x 32 threads one output: per k-step one broadcast and one 32-way shared load
feed one FMA.

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
NUM_WARPS = 32  # 1024 threads per block, as in K3

matmul, aot_spec = twin(BM, BN, BK, NUM_WARPS)
