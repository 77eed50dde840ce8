"""KD against the vendor's kernels, repeated: Qwen2.5-7B's lm_head (152064 x 3584) at M = 1, 2 and
4096 x 4096 at M = 1, with B drawn and allocated anew three times and each kernel timed twice per
allocation (the order reversed every other round), as the decode panel times a point
(``bench.time_cuda``: CUDA events, L2 flushed before each repetition). ``kx`` as the argument: one
launch of KX at 4096^3 between cudaProfilerStart/Stop, for ``ncu --profile-from-start off``.

    PYTHONPATH=. python docs/notes/kd_repeat/probe.py          # the repeats (GPU)
    PYTHONPATH=. ncu --clock-control none --profile-from-start off --section SpeedOfLight ... \
        python docs/notes/kd_repeat/probe.py kx                 # KX's counters
"""

import sys

import torch

from study import kernels as registry
from study.measure import bench
from study.measure.decode import launchers

POINTS = [(152064, 3584, (1, 2)), (4096, 4096, (1,))]  # N, K, the Ms
ALLOCS, ROUNDS, TARGET_S = 3, 2, 0.15
L2_FLUSH_BYTES = 60 * 2**20  # the H200's L2


def kx_once() -> None:
    launch = registry.get("KX").launcher
    a, b = bench.random_inputs(4096, 4096, 4096, seed=1)
    out = bench.poisoned(4096, 4096)
    launch(a, b, out)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    launch(a, b, out)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def repeats() -> None:
    found = launchers(["KD", "K0", "K0L", "OP"])
    flush = bench.L2Flush(L2_FLUSH_BYTES)
    print("shape M alloc round " + " ".join(found))
    for N, K, ms in POINTS:
        for alloc in range(ALLOCS):
            g = torch.Generator(device="cuda").manual_seed(7 + alloc)
            b = torch.randn(K, N, generator=g, device="cuda")
            for M in ms:
                a = torch.randn(M, K, generator=g, device="cuda")
                out = bench.poisoned(M, N)
                for r in range(ROUNDS):
                    order = list(found) if (r + alloc) % 2 == 0 else list(reversed(found))
                    us = {}
                    for kid in order:
                        call = lambda f=found[kid][1], a=a, b=b, out=out: f(a, b, out)  # noqa: E731
                        us[kid] = bench.time_cuda(call, flush, target_s=TARGET_S).ms * 1e3
                    print(f"{N}x{K} {M} {alloc} {r} " + " ".join(f"{kid}={us[kid]:.1f}" for kid in found), flush=True)
            del b
            torch.cuda.empty_cache()


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = False
    kx_once() if sys.argv[1:] == ["kx"] else repeats()
