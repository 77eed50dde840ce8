"""T4: Triton twin of K4 -- 32 x 32 x 32 block tile, 4 warps (128 threads).

K4 is 1-D register tiling: each of 128 threads computes 8 consecutive rows of one column,
reusing one B value from shared memory for 8 FMAs.

What a twin pins (the block tile and the warps) and what Triton chooses inside the tile
are described in :mod:`triton_kernels.tile`.
"""

from __future__ import annotations

from triton_kernels.tile import twin

BM, BN, BK = 32, 32, 32
NUM_WARPS = 4  # 128 threads per block, as in K4

matmul, aot_spec = twin(BM, BN, BK, NUM_WARPS)
