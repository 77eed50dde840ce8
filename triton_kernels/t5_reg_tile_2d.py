"""T5: Triton twin of K5 and K6 -- 32 x 128 x 32 block tile, 4 warps (128 threads).

K5 is 2-D register tiling: each of 128 threads computes an 8 x 4 block of outputs from 8 A
and 4 B values per k-step. K6 is the same tile with 128-bit (float4) global and shared loads
chosen by hand; Triton picks its load widths itself, so one twin stands for both.

What a twin pins (the block tile and the warps) and what Triton chooses inside the tile
are described in :mod:`triton_kernels.tile`.
"""

from __future__ import annotations

from triton_kernels.tile import twin

BM, BN, BK = 32, 128, 32
NUM_WARPS = 4  # 128 threads per block, as in K5 and K6

matmul, aot_spec = twin(BM, BN, BK, NUM_WARPS)
