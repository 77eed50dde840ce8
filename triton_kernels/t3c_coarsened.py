"""T3c: Triton twin of K3c -- 32 x 128 x 32 block tile, 32 warps (1024 threads).

K3c is K3 coarsened by 4: each thread computes four outputs of one row, one in each of four
32-column tiles across, reusing the A tile it staged in shared memory for four B tiles; one
block covers 32 x 128.

What a twin pins (the block tile and the warps) and what Triton chooses inside the tile
are described in :mod:`triton_kernels.tile`.
"""

from __future__ import annotations

from triton_kernels.tile import twin

BM, BN, BK = 32, 128, 32
NUM_WARPS = 32  # 1024 threads per block, as in K3c

matmul, aot_spec = twin(BM, BN, BK, NUM_WARPS)
