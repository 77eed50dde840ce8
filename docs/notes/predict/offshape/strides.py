"""The naive kernels' time against the row stride of A: what their L1 makes of it.

    python docs/notes/predict/offshape/strides.py OUT.jsonl

K1, T1 and K2 at M = N = 1024 and K from 4096 to 5120 (K is A's row stride, in floats): each
checked against float64 with a NaN-poisoned output, then timed the study's way (CUDA events, the
L2 read-flushed before each repetition, medians with p20 / p80), in two passes, the second in
the reverse order. One JSON row per point. Run from the repository's root, on the GPU."""
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path.cwd()))
from study import kernels  # noqa: E402
from study.measure import baseline, bench  # noqa: E402

KS = (4096, 4097, 4098, 4100, 4104, 4112, 4128, 4160, 4224, 4352, 4608, 5120)
IDS = ("K1", "T1", "K2")
M = N = 1024


def main() -> int:
    out = Path(sys.argv[1])
    baseline.pin_fp32()
    flush = bench.L2Flush(torch.cuda.get_device_properties(0).L2_cache_size)
    points = [(kid, K) for K in KS for kid in IDS]
    with out.open("a") as f:
        for p in (1, 2):
            for kid, K in points if p == 1 else points[::-1]:
                launch = kernels.get(kid).launcher
                err = bench.check(launch, M, N, K, seed=K)
                a, b = bench.random_inputs(M, N, K, seed=K + 1)
                c = torch.empty(M, N, device="cuda")
                t = bench.time_cuda(lambda f=launch, x=a, y=b, z=c: f(x, y, z), flush, target_s=0.1)
                row = dict(kernel=kid, M=M, N=N, K=K, rel_err=err, ms=t.ms, p20_ms=t.p20_ms,
                           p80_ms=t.p80_ms, reps=t.reps, passno=p, t=time.time())
                f.write(json.dumps(row) + "\n")
                f.flush()
                print(kid, K, f"{t.ms:.4f} ms", f"err {err:.1e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
