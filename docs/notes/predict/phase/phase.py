"""Residency and age on an SM: each multi-block rung timed with 1, 2, ... blocks per SM (dynamic
shared memory that the kernel does not use caps how many fit), then at its own residency with a
clock stamp at every barrier (stamped.cuh), which tells how fast each of an SM's blocks runs by its
age among them (stamps.py).

    python docs/notes/predict/phase/phase.py OUT_DIR
    python docs/notes/predict/phase/phase.py --once KID RESIDENCY   # one launch to profile (ncu.sh)

Every launch is checked against a float64 product first, its output poisoned with NaN; times are
CUDA events, 20 launches after 3 of warm-up, median with p20 / p80. Run from the repository's root,
on the GPU (cupy, nvcc)."""
import json
import subprocess
import sys
from pathlib import Path

import cupy as cp
import numpy as np

ROOT = Path.cwd()
SM_SMEM = 233472  # bytes of shared memory an sm_90 SM gives its blocks
BLOCK_RESERVED = 1024  # the runtime's share of each block's
M = N = K = 4096
# kernel: (source, symbol, block dims, tile BM x BN, residencies to time)
RUNGS = {
    "K2": ("k2_coalesced.cu", "k2_coalesced", (32, 32), (32, 32), (1, 2)),
    "K3": ("k3_smem_tile.cu", "k3_smem_tile", (32, 32), (32, 32), (1, 2)),
    "K4": ("k4_reg_tile_1d.cu", "k4_reg_tile_1d", (32, 4), (32, 32), (1, 2, 3, 5, 9)),
    "K5": ("k5_reg_tile_2d.cu", "k5_reg_tile_2d", (32, 4), (32, 128), (1, 2, 4, 8)),
    "K6": ("k6_vectorized.cu", "k6_vectorized", (32, 4), (32, 128), (1, 2, 4, 7)),
    "K7": ("k7_block_tile_8x8.cu", "k7_block_tile_8x8", (256, 1), (128, 128), (1, 2)),
    "K8": ("k8_warp_tile.cu", "k8_warp_tile", (256, 1), (128, 128), (1, 2)),
    "K9": ("k9_double_buffer.cu", "k9_double_buffer", (256, 1), (128, 128), (1, 2)),
}
# the rungs whose blocks are stamped at their own residency, and the K a trip of each covers
STAMPED = ("K3", "K4", "K5", "K6", "K7", "K8", "K9")
TRIP_K = {"K3": 32, "K4": 32, "K5": 32, "K6": 32, "K7": 8, "K8": 8, "K9": 8}


def dynamic_smem(static: int, residency: int) -> int:
    """The dynamic shared memory that leaves room for ``residency`` blocks of ``static`` bytes an SM."""
    return (SM_SMEM // residency) // 128 * 128 - BLOCK_RESERVED - static


def cubin(src: Path, out: Path, *include: Path) -> Path:
    extra = [a for d in include for a in ("-I", str(d))]
    subprocess.run(["nvcc", "-cubin", "-O3", "-std=c++17", "-arch=sm_90", "-I", str(ROOT / "cuda_kernels"), *extra,
                    "-o", str(out), str(src)], check=True)
    return out


def timed(launch, reps=20, warm=3):
    for _ in range(warm):
        launch()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        launch()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b))
    return float(np.median(ts)), float(np.percentile(ts, 20)), float(np.percentile(ts, 80))


def once(kid: str, residency: int) -> int:
    """One rung at ``residency`` blocks an SM: checked against float64, then launched once more
    (the launch to profile: ``ncu --launch-skip 1 --launch-count 1``)."""
    src, sym, block, (bm, bn), _ = RUNGS[kid]
    rng = np.random.default_rng(0)
    A = cp.asarray(rng.standard_normal((M, K), dtype=np.float32))
    B = cp.asarray(rng.standard_normal((K, N), dtype=np.float32))
    C = cp.full((M, N), cp.nan, dtype=cp.float32)
    fn = cp.RawModule(path=str(cubin(ROOT / "cuda_kernels" / src, Path(f"/tmp/{kid}.cubin")))).get_function(sym)
    dyn = dynamic_smem(fn.attributes["shared_size_bytes"], residency)
    fn.max_dynamic_shared_size_bytes = dyn
    args = (np.int32(M), np.int32(N), np.int32(K), np.float32(1.0), A, B, np.float32(0.0), C)
    grid = (-(-N // bn), -(-M // bm))
    fn(grid, block, args, shared_mem=dyn)
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    err = float(cp.abs(C.astype(cp.float64) - ref).max()) / float(cp.abs(ref).max())
    if not err < 1e-5:
        print(f"{kid} at {residency} an SM: wrong result ({err})", file=sys.stderr)
        return 1
    fn(grid, block, args, shared_mem=dyn)
    cp.cuda.Device().synchronize()
    return 0


def main() -> int:
    if sys.argv[1] == "--once":
        return once(sys.argv[2], int(sys.argv[3]))
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rows = out / "residency.jsonl"
    rng = np.random.default_rng(0)
    A = cp.asarray(rng.standard_normal((M, K), dtype=np.float32))
    B = cp.asarray(rng.standard_normal((K, N), dtype=np.float32))
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    scale = float(cp.abs(ref).max())
    C = cp.empty((M, N), dtype=cp.float32)
    args = (np.int32(M), np.int32(N), np.int32(K), np.float32(1.0), A, B, np.float32(0.0), C)
    gpu = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    for kid, (src, sym, block, (bm, bn), residencies) in RUNGS.items():
        mod = cp.RawModule(path=str(cubin(ROOT / "cuda_kernels" / src, out / f"{kid}.cubin")))
        fn = mod.get_function(sym)
        static = fn.attributes["shared_size_bytes"]
        grid = (-(-N // bn), -(-M // bm))
        for r in residencies:
            dyn = dynamic_smem(static, r)
            fn.max_dynamic_shared_size_bytes = dyn
            C.fill(cp.nan)
            fn(grid, block, args, shared_mem=dyn)
            err = float(cp.abs(C.astype(cp.float64) - ref).max()) / scale
            ok = bool(np.isfinite(err) and err < 1e-5)
            ms, p20, p80 = timed(lambda: fn(grid, block, args, shared_mem=dyn)) if ok else (None,) * 3
            row = dict(kernel=kid, symbol=sym, residency=r, dynamic_smem=dyn, static_smem=static,
                       registers=fn.attributes["num_regs"], ms=ms, p20=p20, p80=p80, max_rel_err=err, ok=ok,
                       gpu=gpu)
            print(json.dumps(row), flush=True)
            with open(rows, "a") as f:
                f.write(json.dumps(row) + "\n")
    # each rung again at its own residency, through stamped.cuh: a clock stamp at every barrier
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    import stamps as by_age

    for kid in STAMPED:
        src, sym, block, (bm, bn), _ = RUNGS[kid]
        wrapper = out / f"{kid}_stamped.cu"
        wrapper.write_text(f'#include "stamped.cuh"\n#include "{src}"\n')
        mod = cp.RawModule(path=str(cubin(wrapper, out / f"{kid}_stamped.cubin", here)))
        fn = mod.get_function(sym)
        grid = (-(-N // bn), -(-M // bm))
        blocks, trips = grid[0] * grid[1], K // TRIP_K[kid]
        cap = 4 * trips + 4
        at = cp.zeros(blocks * cap, dtype=cp.int64)
        count = cp.zeros(blocks, dtype=cp.int32)
        sm = cp.full(blocks, -1, dtype=cp.int32)
        for name, val, dt in (("stamp_at", at.data.ptr, cp.uint64), ("stamp_count", count.data.ptr, cp.uint64),
                              ("stamp_sm", sm.data.ptr, cp.uint64), ("stamp_cap", cap, cp.int32)):
            cp.ndarray((1,), dtype=dt, memptr=mod.get_global(name))[...] = val
        C.fill(cp.nan)
        fn(grid, block, args)
        err = float(cp.abs(C.astype(cp.float64) - ref).max()) / scale
        ms, p20, p80 = timed(lambda: fn(grid, block, args))  # past stamp_cap a block writes no stamp
        count.fill(0)
        fn(grid, block, args)  # the stamps kept: a launch after the timed ones
        cp.cuda.Device().synchronize()
        st = cp.asnumpy(at).reshape(blocks, cap)
        n, ids = np.minimum(cp.asnumpy(count), cap), cp.asnumpy(sm)
        table = by_age.by_rank(ids, st, n, trips)
        row = dict(kernel=f"{kid} stamped", ms=ms, p20=p20, p80=p80, max_rel_err=err, ok=bool(err < 1e-5),
                   trips=trips, barriers_a_block=float(np.median(n)), gpu=gpu,
                   by_rank={str(r): {"cycles_a_trip": c, "trips": k} for r, (c, k) in table.items()})
        print(json.dumps(row), flush=True)
        with open(rows, "a") as f:
            f.write(json.dumps(row) + "\n")
        if kid == "K3":
            base = np.array([st[ids == i, 0].min() if (ids == i).any() else 0 for i in range(ids.max() + 1)])
            np.savez_compressed(out / "k3_stamps.npz", sm=ids, count=n, trips=trips,
                                stamps=(st - base[ids][:, None]).astype(np.int32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
