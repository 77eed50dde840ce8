"""T3: Triton twin of K3 -- 32 x 32 x 32 block tile, 32 warps (1024 threads).

K3 stages a 32 x 32 tile of A and of B in shared memory by hand (``Mds``, ``Nds``) and gives
each of its 32 x 32 threads one output: per k-step one broadcast and one 32-way shared load
feed one FMA.

What a twin pins (the block tile and the warps) and what Triton chooses inside the tile
are described in :mod:`triton_kernels.tile`.
"""

from __future__ import annotations

from triton_kernels.tile import twin

BM, BN, BK = 32, 32, 32
NUM_WARPS = 32  # 1024 threads per block, as in K3

matmul, aot_spec = twin(BM, BN, BK, NUM_WARPS)
