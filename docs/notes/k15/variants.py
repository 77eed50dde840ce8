"""K15's variants timed beside K12 and cuBLAS on one GPU (docs/notes/k15.md).

    python docs/notes/k15/variants.py OUT.csv [M,N,K ...]

Each variant is docs/notes/k15/k15_split_tail.cu (the second design of K15, not kept: beside
this file; it includes cuda_kernels' headers) compiled with the -D overrides of VARIANTS
(nvcc -cubin, in parallel) and launched from its cubin (cupy) with the launcher's own grid rule
(k15_splits, restated here for the probe: the extension's launcher is what the study times).
Every variant is checked against float64 with a NaN-poisoned output, then the variants, K12
(the extension) and cuBLAS FP32 (torch, TF32 off) are timed in ROUNDS rounds, each in its own
order, with the study's timer (study.measure.bench.time_cuda: the L2 overwritten before every
repetition). Rows: variant, shape, round, median ms, p20, p80, relative error.
"""

from __future__ import annotations

import concurrent.futures as cf
import csv
import math
import subprocess
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from study.measure import baseline, bench  # noqa: E402

SRC = Path(__file__).resolve().parent / "k15_split_tail.cu"
INCLUDE = REPO / "cuda_kernels"
VARIANTS = {  # name -> -D overrides of the file's defaults
    "K15": {},
    "K15 255 registers": {"K12_MAXNREG": 0},
    "K15 248 registers": {"K12_MAXNREG": 248},
    "K15 no cut": {"K15_MAX_SPLITS": 1},
    "K15 part cost 1": {"K15_PART_COST": 1},
    "K15 4-byte B copies": {"K12_B_VEC": 1},
}
ROUNDS = 3
SMEM = 6 * 16384  # K12_SMEM_BYTES at the default tile


def splits(tiles: int, kt: int, sms: int, max_splits: int, cost: int) -> int:
    cut = tiles % sms
    if cut == 0:
        return 1
    best, best_len = 1, 0
    for s in range(1, min(max_splits, kt) + 1):
        length = -(-cut * s // sms) * (-(-kt // s) + (cost if s > 1 else 0))
        if s == 1 or length < best_len:
            best, best_len = s, length
    return best


def build(name: str, defines: dict, out: Path) -> Path:
    cubin = out / (name.replace(" ", "_") + ".cubin")
    cmd = ["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "-cubin", "-I", str(INCLUDE), "-o", str(cubin),
           str(SRC)]
    cmd += [f"-D{k}={v}" for k, v in defines.items()]
    subprocess.run(cmd, check=True, capture_output=True)
    return cubin


def launcher(cubin: Path, defines: dict, a, b, c):
    import cupy

    fn = cupy.RawModule(path=str(cubin)).get_function("k15_split_tail")
    fn.max_dynamic_shared_size_bytes = SMEM
    (M, K), N = a.shape, b.shape[1]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tiles, kt = math.ceil(M / 128) * math.ceil(N / 256), math.ceil(K / 16)
    s = splits(tiles, kt, sms, defines.get("K15_MAX_SPLITS", 16), defines.get("K15_PART_COST", 2))
    cut = tiles % sms if s > 1 else 0
    ws = torch.empty(max(1, cut * s) * 128 * 256, device="cuda")
    tickets = torch.zeros(max(1, cut), dtype=torch.int32, device="cuda")
    args = (cupy.int32(M), cupy.int32(N), cupy.int32(K), cupy.float32(1.0), cupy.asarray(a), cupy.asarray(b),
            cupy.float32(0.0), cupy.asarray(c), cupy.asarray(ws), cupy.asarray(tickets), cupy.int32(s))

    def launch():
        fn((tiles + cut * (s - 1),), (256,), args, shared_mem=SMEM,
           stream=cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream))

    launch.held = (ws, tickets)
    return launch


def main() -> None:
    out_csv = Path(sys.argv[1])
    shapes = [tuple(map(int, s.split(","))) for s in sys.argv[2:]] or [(4096, 4096, 4096)]
    baseline.pin_fp32()
    work = out_csv.parent / "k15_cubins"
    work.mkdir(parents=True, exist_ok=True)
    with cf.ThreadPoolExecutor(len(VARIANTS)) as pool:
        cubins = dict(zip(VARIANTS, pool.map(lambda kv: build(kv[0], kv[1], work), VARIANTS.items())))
    import cuda_kernels

    k12 = cuda_kernels.load().k12_lean_issue
    with out_csv.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["variant", "M", "N", "K", "round", "ms", "p20_ms", "p80_ms", "rel_err"])
        for M, N, K in shapes:
            a, b = bench.random_inputs(M, N, K, seed=7)
            ref = a.double() @ b.double()
            runs = {}
            for name, cubin in cubins.items():
                c = bench.poisoned(M, N)
                launcher(cubin, VARIANTS[name], a, b, c)()
                torch.cuda.synchronize()
                runs[name] = (launcher(cubin, VARIANTS[name], a, b, torch.empty(M, N, device="cuda")),
                              bench.relative_error(c, ref))
            c = bench.poisoned(M, N)
            k12(a, b, c, 1.0, 0.0)
            torch.cuda.synchronize()
            out = torch.empty(M, N, device="cuda")
            runs["K12"] = (lambda a=a, b=b, out=out: k12(a, b, out, 1.0, 0.0), bench.relative_error(c, ref))
            runs["cuBLAS"] = (lambda a=a, b=b, out=out: torch.matmul(a, b, out=out),
                              bench.relative_error(torch.matmul(a, b), ref))
            names, flush = list(runs), bench.L2Flush(None)
            for r in range(ROUNDS):
                order = names[r % len(names):] + names[:r % len(names)]
                for name in order:
                    launch, err = runs[name]
                    if not err <= bench.TOLERANCE:
                        w.writerow([name, M, N, K, r, "", "", "", err])
                        continue
                    t = bench.time_cuda(launch, flush, target_s=0.3)
                    w.writerow([name, M, N, K, r, t.ms, t.p20_ms, t.p80_ms, err])
                    fh.flush()
                    print(f"{name:>24} {M}x{N}x{K} round {r}: {t.ms:.4f} ms (err {err:.1e})", flush=True)


if __name__ == "__main__":
    main()
