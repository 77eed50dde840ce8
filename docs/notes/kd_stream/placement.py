"""Does where B lies in memory move the decode panel's ratios? KD, K0 and K0L at M = 1 on a few
panel shapes, each timed with B at PLACEMENTS fresh allocations in one process: before each, a
pad of a different size is allocated (and kept) so that B lands on other pages. The study's
protocol otherwise (bench.time_cuda, the L2 read-flushed before every repetition), each output
checked against float64 first; the kernels' order reversed every other placement.

    python docs/notes/kd_stream/placement.py OUT.jsonl

Run from the repository root on the GPU (run_placement.sh)."""
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, os.getcwd())
from study import kernels as registry  # noqa: E402
from study.measure import bench  # noqa: E402
from study.measure.decode import PANEL  # noqa: E402

SHAPES = ("llama3-8b.o", "qwen2.5-7b.lm_head", "llama3-8b.gate_up", "qwen2.5-7b.qkv")
PLACEMENTS = 6
PAD_MB = (0, 37, 202, 611, 1030, 2999)  # MiB allocated before B, one per placement


def main():
    out = Path(sys.argv[1])
    torch.backends.cuda.matmul.allow_tf32 = False
    flush = bench.L2Flush(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", None))
    kids = [k for k in ("KD", "K0", "K0L")]
    launch = {}
    for kid in kids:
        k = registry.get(kid)
        bench.check(k.launcher, 1, 256, 256)
        launch[kid] = k.launcher
    f = out.open("a")
    t0 = time.time()
    for p in (q for q in PANEL if q.name in SHAPES):
        g = torch.Generator(device="cuda").manual_seed(p.N * 7 + p.K)
        B0 = torch.randn(p.K, p.N, device="cuda", generator=g)
        A = torch.randn(1, p.K, device="cuda", generator=g)
        ref = A.double() @ B0.double()
        for i in range(PLACEMENTS):
            pad = torch.empty(PAD_MB[i] * 2**20 // 4 + 1, device="cuda")
            B = B0.clone()  # the same values on other pages
            order = kids if i % 2 == 0 else kids[::-1]
            for kid in order:
                o = bench.poisoned(1, p.N)
                launch[kid](A, B, o)
                torch.cuda.synchronize()
                err = bench.relative_error(o, ref)
                if not err <= bench.TOLERANCE:
                    f.write(json.dumps(dict(shape=p.name, placement=i, kernel=kid, us=None, err=err)) + "\n")
                    continue
                t = bench.time_cuda(lambda kid=kid, o=o, B=B: launch[kid](A, B, o), flush, target_s=0.04)
                f.write(json.dumps(dict(shape=p.name, N=p.N, K=p.K, M=1, placement=i, pad_mb=PAD_MB[i],
                                        b_ptr=B.data_ptr(), kernel=kid, us=t.ms * 1e3, p20=t.p20_ms * 1e3,
                                        p80=t.p80_ms * 1e3, reps=t.reps, err=err)) + "\n")
                f.flush()
            del B, pad
            torch.cuda.empty_cache()
        print(f"{p.name} done at {time.time() - t0:.0f} s", flush=True)
        del B0, ref
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
