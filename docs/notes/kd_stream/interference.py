"""Does a kernel timed earlier in the process move KD's or the vendor's time? In one process, at
M = 1 on two panel shapes: KD, K0 and K0L timed (pass 0); then one of kd_bulk.cu's variants, which
asks for most of the SM's shared memory, timed at the same shape (pass 1 times it, then the
three again); then the three once more with nothing between (pass 2). The study's protocol
(bench.time_cuda, the L2 read-flushed before every repetition), every output checked against
float64 first.

    python docs/notes/kd_stream/interference.py OUT.jsonl

Run from the repository root on the GPU (run_interference.sh)."""
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, os.getcwd())
sys.path.insert(0, str(Path(__file__).resolve().parent))
import kd_bulk  # noqa: E402
from study import kernels as registry  # noqa: E402
from study.measure import bench  # noqa: E402
from study.measure.decode import PANEL  # noqa: E402

SHAPES = ("llama3-8b.o", "qwen2.5-7b.lm_head")
BULK = dict(BN=16, ROWS=256, STAGES=6, THREADS=256)


def main():
    out = Path(sys.argv[1])
    kd_bulk.BUILD.mkdir(exist_ok=True)
    v, so, err = kd_bulk.build(BULK)
    if so is None:
        sys.exit(f"build failed: {err}")
    import ctypes
    lib = ctypes.CDLL(str(so))
    lib.kdb.restype = ctypes.c_int
    lib.kdb.argtypes = [ctypes.c_int] * 2 + [ctypes.c_void_p] * 4
    torch.backends.cuda.matmul.allow_tf32 = False
    flush = bench.L2Flush(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", None))
    theirs = {kid: registry.get(kid).launcher for kid in ("KD", "K0", "K0L")}
    s = torch.cuda.current_stream().cuda_stream
    f = out.open("a")
    for p in (q for q in PANEL if q.name in SHAPES):
        g = torch.Generator(device="cuda").manual_seed(p.N * 7 + p.K)
        B = torch.randn(p.K, p.N, device="cuda", generator=g)
        A = torch.randn(1, p.K, device="cuda", generator=g)
        ref = A.double() @ B.double()

        def timed(kid, launch, pass_):
            o = bench.poisoned(1, p.N)
            launch(o)
            torch.cuda.synchronize()
            err = bench.relative_error(o, ref)
            row = dict(shape=p.name, N=p.N, K=p.K, M=1, kernel=kid, **{"pass": pass_}, err=err)
            if err <= bench.TOLERANCE:
                t = bench.time_cuda(lambda: launch(o), flush, target_s=0.04)
                row.update(us=t.ms * 1e3, p20=t.p20_ms * 1e3, p80=t.p80_ms * 1e3, reps=t.reps)
            f.write(json.dumps(row) + "\n")
            f.flush()

        def three(pass_):
            for kid, launch in theirs.items():
                timed(kid, lambda o, launch=launch: launch(A, B, o), pass_)

        three(0)
        timed("bulk", lambda o: lib.kdb(p.N, p.K, A.data_ptr(), B.data_ptr(), o.data_ptr(), s), 1)
        three(1)
        three(2)
        print(p.name, "done", flush=True)
        del B, ref
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
