"""The Triton twins' co-resident programs by age: the twins' tiled loop (triton_kernels.tile, at
EVEN_K with masked M / N loads and row-major tile order, as the twins launch at 4096³) with a clock
stamp a trip (an inline ``%clock64`` read after the trip's dot, stored by the program) and its SM id,
for T3 and T3p (32 x 32 x 32, 32 warps; 1 and 3 stages) and T5 / T5p (32 x 128 x 32, 4 warps).
Each build is timed stamped and unstamped (STAMP=False: the same loop without the clock reads and
stores); stamps.py gives the cycles a trip by the program's age among those on
its SM.

    python docs/notes/predict/phase/twins.py OUT.jsonl

Every launch is checked against a float64 product first, its output poisoned with NaN; times are
CUDA events, 20 launches after 3 of warm-up. Run from the repository's root, on the GPU."""
import json
import sys
from pathlib import Path

import numpy as np
import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import stamps as by_age  # noqa: E402

M = N = K = 4096
# twin: (BM, BN, BK, warps, stages)
TWINS = {"T3": (32, 32, 32, 32, 1), "T3p": (32, 32, 32, 32, 3), "T5": (32, 128, 32, 4, 1), "T5p": (32, 128, 32, 4, 3)}


@triton.jit
def stamped_kernel(a_ptr, b_ptr, c_ptr, st_ptr, sm_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr, STAMP: tl.constexpr = True):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BN)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    trips = tl.cdiv(K, BK)
    for k0 in range(0, trips):
        a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        if STAMP:
            t = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [k0], dtype=tl.int64, is_pure=False,
                                          pack=1)
            tl.store(st_ptr + pid * trips + k0, t)
        a_ptrs += BK
        b_ptrs += BK * N
    if STAMP:
        sm = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r,r", [pid], dtype=tl.int32, is_pure=False, pack=1)
        tl.store(sm_ptr + pid, sm)
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def timed(launch, reps=20, warm=3):
    for _ in range(warm):
        launch()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        launch()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return float(np.median(ts)), float(np.percentile(ts, 20)), float(np.percentile(ts, 80))


def main() -> int:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    A = torch.randn(M, K, device="cuda")
    B = torch.randn(K, N, device="cuda")
    ref = A.double() @ B.double()
    scale = float(ref.abs().max())
    C = torch.empty(M, N, device="cuda")
    gpu = torch.cuda.get_device_name()
    with open(sys.argv[1], "a") as f:
        for twin, (bm, bn, bk, warps, stages) in TWINS.items():
            grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
            trips = K // bk
            st = torch.zeros(grid[0] * trips, dtype=torch.int64, device="cuda")
            sm = torch.full((grid[0],), -1, dtype=torch.int32, device="cuda")

            def launch(stamp=True):
                stamped_kernel[grid](A, B, C, st, sm, M, N, K, BM=bm, BN=bn, BK=bk, STAMP=stamp, num_warps=warps,
                                     num_stages=stages)

            C.fill_(float("nan"))
            launch(False)
            plain_err = float((C.double() - ref).abs().max()) / scale
            plain = timed(lambda: launch(False))

            C.fill_(float("nan"))
            launch()
            err = float((C.double() - ref).abs().max()) / scale
            ms, p20, p80 = timed(launch)
            launch()  # the stamps kept
            torch.cuda.synchronize()
            s = st.view(grid[0], trips).cpu().numpy()
            table = by_age.by_rank(sm.cpu().numpy(), s, np.full(grid[0], trips), trips)
            row = dict(kernel=f"{twin} stamped", ms=ms, p20=p20, p80=p80, max_rel_err=err, ok=bool(err < 1e-5),
                       unstamped_ms=plain[0], unstamped_p20=plain[1], unstamped_p80=plain[2],
                       unstamped_max_rel_err=plain_err,
                       trips=trips, gpu=gpu,
                       by_rank={str(r): {"cycles_a_trip": c, "trips": n} for r, (c, n) in table.items()})
            print(json.dumps(row), flush=True)
            f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
