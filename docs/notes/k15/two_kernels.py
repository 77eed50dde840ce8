"""The third design's variants (k15_two_kernels.cu: the whole waves in K15's tile, the rest as a
Stream-K walk in a second kernel) timed beside K15, K12 and the vendor's kernels (docs/notes/k15.md).

    python docs/notes/k15/two_kernels.py OUT.jsonl [M,N,K ...]

Each variant is k15_two_kernels.cu built by nvcc with its -D overrides into a shared library whose
C entry (k15t) launches it; the references are the study's registry launchers. Every kernel is
checked against float64 with a NaN-poisoned output first, then all are timed in ROUNDS rounds,
each in its own order, with the study's timer (bench.time_cuda: the L2 read-flushed before every
repetition). Run from the repository root on the GPU (run_two_kernels.sh)."""
import concurrent.futures as cf
import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, os.getcwd())
from study import kernels as registry  # noqa: E402
from study.measure import bench  # noqa: E402

HERE = Path(__file__).resolve().parent
BUILD = Path("/tmp/k15t")
ROUNDS = 3
# name -> (mode, -D overrides): mode 0 every tile in the whole-tile kernel, 1 the tail walked apart
VARIANTS = {"1d": (0, {}), "1d w248": (0, {"K12_MAXNREG": 248})}
for w in (0, 240, 248):
    for t in (0, 240, 248):
        VARIANTS[f"two w{w} t{t}"] = (1, {"K12_MAXNREG": w, "K15T_TAIL_MAXNREG": t})
for t in (0, 248):  # the tail as the whole-tile kernel's programmatic dependent
    VARIANTS[f"two w248 t{t} pdl"] = (1, {"K12_MAXNREG": 248, "K15T_TAIL_MAXNREG": t, "K15T_PDL": 1})
REFERENCES = ("K15", "K12", "K0", "K0L")
if os.environ.get("K15T_ONLY"):  # a comma-separated choice of variants and references
    only = os.environ["K15T_ONLY"].split(",")
    VARIANTS = {k: v for k, v in VARIANTS.items() if k in only}
    REFERENCES = tuple(k for k in REFERENCES if k in only)


def build(item):
    name, (mode, defs) = item
    so = BUILD / (name.replace(" ", "_") + ".so")
    cmd = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared",
           "-I", str(Path.cwd() / "cuda_kernels"), *(f"-D{k}={v}" for k, v in defs.items()), "-o", str(so),
           str(HERE / "k15_two_kernels.cu")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return name, mode, (so if r.returncode == 0 else None), r.stderr[-300:]


def main():
    out = Path(sys.argv[1])
    shapes = [tuple(map(int, s.split(","))) for s in sys.argv[2:]] or [(4096, 4096, 4096)]
    BUILD.mkdir(exist_ok=True)
    with cf.ThreadPoolExecutor(len(VARIANTS)) as ex:
        built = list(ex.map(build, VARIANTS.items()))
    torch.backends.cuda.matmul.allow_tf32 = False
    flush = bench.L2Flush(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", None))
    s = torch.cuda.current_stream().cuda_stream
    runs = {}
    for name, mode, so, err in built:
        if so is None:
            print("build failed", name, err, flush=True)
            continue
        lib = ctypes.CDLL(str(so))
        lib.k15t.restype = ctypes.c_int
        lib.k15t.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 4 + [ctypes.c_int]
        runs[name] = (lambda a, b, c, lib=lib, mode=mode: lib.k15t(a.shape[0], b.shape[1], a.shape[1], a.data_ptr(),
                                                                   b.data_ptr(), c.data_ptr(), s, mode))
    for kid in REFERENCES:
        try:
            runs[kid] = registry.get(kid).launcher
        except Exception as e:
            print(kid, "cannot run:", str(e).splitlines()[0], flush=True)
    f = out.open("a")
    for M, N, K in shapes:
        a, b = bench.random_inputs(M, N, K, seed=7)
        ref = a.double() @ b.double()
        errs = {}
        for name, launch in runs.items():
            c = bench.poisoned(M, N)
            launch(a, b, c)
            torch.cuda.synchronize()
            errs[name] = bench.relative_error(c, ref)
        del ref
        c = torch.empty(M, N, device="cuda")
        names = list(runs)
        for r in range(ROUNDS):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                row = dict(variant=name, M=M, N=N, K=K, round=r, rel_err=errs[name])
                if errs[name] <= bench.TOLERANCE:
                    t = bench.time_cuda(lambda name=name: runs[name](a, b, c), flush, target_s=0.3)
                    row.update(ms=t.ms, p20_ms=t.p20_ms, p80_ms=t.p80_ms, reps=t.reps)
                f.write(json.dumps(row) + "\n")
                f.flush()
                print(name, M, N, K, r, row.get("ms"), errs[name], flush=True)


if __name__ == "__main__":
    main()
