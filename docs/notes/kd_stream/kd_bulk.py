"""kd_bulk.cu's variants (B streamed by tensor copies, one block per column slab, no split of K)
timed at M = 1 on the decode panel's shapes beside the vendor's GEMV (K0, K0L) and KD as
registered, by the study's protocol (bench.time_cuda, the L2 read-flushed before every
repetition), each checked against float64 first (a NaN-poisoned output), three runs with the
order reversed every other run.

    python docs/notes/kd_stream/kd_bulk.py OUT.jsonl

Run from the repository root on the GPU (run_bulk.sh)."""
import concurrent.futures as cf
import ctypes
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, os.getcwd())
from study import kernels as registry  # noqa: E402
from study.measure import bench  # noqa: E402
from study.measure.decode import PANEL  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = Path(os.getcwd())
BUILD = Path("/tmp/kdb")
SMEM_MAX = 227 * 1024


def variants():
    vs = []
    for rows, stages, threads in itertools.product((128, 256), (4, 6, 8), (256, 512)):
        vs.append(dict(BN=32, ROWS=rows, STAGES=stages, THREADS=threads))
    for rows, stages in itertools.product((128, 256), (4, 6)):
        vs.append(dict(BN=16, ROWS=rows, STAGES=stages, THREADS=256))
    for rows, stages, threads in itertools.product((64, 128), (4, 6), (256, 512)):
        vs.append(dict(BN=64, ROWS=rows, STAGES=stages, THREADS=threads))
    return [v for v in vs if v["STAGES"] * v["ROWS"] * v["BN"] * 4 <= 160 * 1024]


def name(v):
    return "bn{BN}r{ROWS}s{STAGES}t{THREADS}".format(**v)


def build(v):
    so = BUILD / (name(v) + ".so")
    cmd = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared",
           f"-I{ROOT / 'cuda_kernels'}", *(f"-DKB_{k}={x}" for k, x in v.items()), "-o", str(so),
           str(HERE / "kd_bulk.cu")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return v, (so if r.returncode == 0 else None), r.stderr[-300:]


def main():
    out = Path(sys.argv[1])
    BUILD.mkdir(exist_ok=True)
    t0 = time.time()
    with cf.ThreadPoolExecutor(16) as ex:
        built = list(ex.map(build, variants()))
    print(f"built {sum(1 for _, so, _ in built if so)} of {len(built)} in {time.time() - t0:.0f} s", flush=True)
    libs = {}
    for v, so, err in built:
        if so is None:
            print("build failed", name(v), err, flush=True)
            continue
        lib = ctypes.CDLL(str(so))
        lib.kdb.restype = ctypes.c_int
        lib.kdb.argtypes = [ctypes.c_int] * 2 + [ctypes.c_void_p] * 4
        libs[name(v)] = (v, lib)
    torch.backends.cuda.matmul.allow_tf32 = False
    flush = bench.L2Flush(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", None))
    theirs = {}
    for kid in ("K0", "K0L", "KD"):
        try:
            k = registry.get(kid)
            bench.check(k.launcher, 1, 256, 256)
            theirs[kid] = k.launcher
        except Exception as e:
            print(kid, "cannot run:", str(e).splitlines()[0], flush=True)
    f = out.open("a")

    def emit(row):
        f.write(json.dumps(row) + "\n")
        f.flush()

    names = list(libs)
    s = torch.cuda.current_stream().cuda_stream
    for p in PANEL:
        g = torch.Generator(device="cuda").manual_seed(p.N * 7 + p.K)
        B = torch.randn(p.K, p.N, device="cuda", generator=g)
        A = torch.randn(1, p.K, device="cuda", generator=g)
        ref = A.double() @ B.double()
        base = dict(shape=p.name, N=p.N, K=p.K, M=1)
        ok = {}
        for n in names:
            v, lib = libs[n]
            o = bench.poisoned(1, p.N)
            rc = lib.kdb(p.N, p.K, A.data_ptr(), B.data_ptr(), o.data_ptr(), s)
            torch.cuda.synchronize()
            err = bench.relative_error(o, ref)
            if rc != 0 or not err <= bench.TOLERANCE:
                emit(dict(**base, kernel=n, us=None, err=err, rc=rc, **v))
                continue
            ok[n] = (v, lib, o, err)
        for rep in range(3):
            for kid, launch in theirs.items():
                o = bench.poisoned(1, p.N)
                launch(A, B, o)
                torch.cuda.synchronize()
                t = bench.time_cuda(lambda: launch(A, B, o), flush, target_s=0.04)
                emit(dict(**base, rep=rep, kernel=kid, us=t.ms * 1e3, p20=t.p20_ms * 1e3, p80=t.p80_ms * 1e3,
                          reps=t.reps, err=bench.relative_error(o, ref)))
            order = list(ok) if rep % 2 == 0 else list(ok)[::-1]
            for n in order:
                v, lib, o, err = ok[n]

                def call(lib=lib, o=o):
                    lib.kdb(p.N, p.K, A.data_ptr(), B.data_ptr(), o.data_ptr(), s)

                t = bench.time_cuda(call, flush, target_s=0.04)
                emit(dict(**base, rep=rep, kernel=n, us=t.ms * 1e3, p20=t.p20_ms * 1e3, p80=t.p80_ms * 1e3,
                          reps=t.reps, err=err, **v))
        print(f"{p.name} done at {time.time() - t0:.0f} s", flush=True)
        del B, ref
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
