"""T12p: Triton twin of K12 -- 128 x 256 x 16 block tile, 8 warps (256 threads), 2 stages.

K12 computes 16 x 8 outputs per thread from 4 + 2 LDS.128 per k-step, with asynchronous 4-byte
copies in two shared stages; what makes it K12 (the copies' addresses, where they sit in the
k-loop, the XOR stage switch) is below what Triton exposes. The twin pins the block tile, the
warps and the stages; everything inside the tile is Triton's (:mod:`triton_kernels.tile`).
"""

from __future__ import annotations

from triton_kernels.tile import twin

BM, BN, BK = 128, 256, 16
NUM_WARPS = 8  # 256 threads per block, as in K12

matmul, aot_spec = twin(BM, BN, BK, NUM_WARPS)
