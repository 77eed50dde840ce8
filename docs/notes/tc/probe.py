"""Tensor-core tiles for TT (TF32) and TX (3xTF32) at 4096^3 on the H200: every candidate of
``triton_kernels.tc_autotuned`` timed alone, with B as given (N-major) and as a K-major copy.

python docs/notes/tc/probe.py OUT.jsonl   (GPU; the repository root on PYTHONPATH)

Per (precision, B layout, config): relative error against float64 on randn inputs (output
NaN-poisoned), then the median CUDA-event time with the L2 flushed (``study.measure.bench``); the
K-major copy of B is timed once on its own (``transpose`` row). cuBLAS FP32 (K0) is the baseline.
"""

import json
import sys
import time

from study.measure import baseline

baseline.pin_fp32()

import torch  # noqa: E402

from study.measure import bench  # noqa: E402
from triton_kernels import tc_autotuned, warm  # noqa: E402
from triton_kernels.tile import launch_tiled  # noqa: E402

M = N = K = 4096
out_path = sys.argv[1]
rows = []


def emit(row):
    row["t"] = time.strftime("%H:%M:%S")
    rows.append(row)
    with open(out_path, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


a, b = bench.random_inputs(M, N, K, seed=0)
ref = a.double() @ b.double()
flush = bench.L2Flush(60 * 2**20)
out = bench.poisoned(M, N)
t = bench.time_cuda(lambda: baseline.cublas_matmul(a, b, out), flush, target_s=0.3)
emit({"what": "K0", "ms": t.ms, "p20": t.p20_ms, "p80": t.p80_ms,
      "rel_err": bench.relative_error(out, ref), "tflops": 2 * M * N * K / t.ms / 1e9})
bt = b.t().contiguous().t()
t = bench.time_cuda(lambda: b.t().contiguous(), flush, target_s=0.2)
emit({"what": "transpose", "ms": t.ms, "p20": t.p20_ms, "p80": t.p80_ms})
for precision in ("tf32x3", "tf32"):
    for kmajor in (False, True):
        bb = bt if kmajor else b
        strides = (a.stride(0), a.stride(1), bb.stride(0), bb.stride(1), out.stride(0), out.stride(1))
        configs = tc_autotuned.CONFIGS[precision]
        t0 = time.monotonic()
        ok = warm.warm(f"triton_kernels.tc_autotuned:{precision}_kernel", ["float32"] * 3 + [M, N, K, *strides],
                       list(range(len(configs))), workers=14)
        emit({"what": "compiled", "precision": precision, "kmajor": kmajor, "children_ok": ok,
              "s": time.monotonic() - t0})
        for c in configs:
            kw = c.kwargs
            cfg = dict(BM=kw["BM"], BN=kw["BN"], BK=kw["BK"], num_warps=c.num_warps,
                       num_stages=c.num_stages)
            row = {"what": "tile", "precision": precision, "kmajor": kmajor, **cfg}
            try:
                def call(bb=bb, kw=kw, precision=precision, cfg=cfg):
                    return launch_tiled(a, bb, out, group_m=kw["GROUP_M"], precision=precision,
                                        **cfg)
                out.fill_(float("nan"))
                call()
                torch.cuda.synchronize()
                row["rel_err"] = bench.relative_error(out, ref)
                t = bench.time_cuda(call, flush, target_s=0.15)
                row.update(ms=t.ms, p20=t.p20_ms, p80=t.p80_ms, tflops=2 * M * N * K / t.ms / 1e9)
            except Exception as e:  # a config that does not compile or launch: its row says so
                row["error"] = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
                torch.cuda.synchronize()
            emit(row)

# which MMA the compiled tiles use: Triton's cache, every PTX of tiled_matmul_kernel
from pathlib import Path  # noqa: E402

cache = Path.home() / ".triton" / "cache"
for ptx in sorted(cache.rglob("tiled_matmul_kernel.ptx")):
    text = ptx.read_text()
    emit({"what": "ptx", "dir": ptx.parent.name, "wgmma": text.count("wgmma.mma_async"),
          "mma_sync": text.count("mma.sync"), "tf32": text.count(".tf32"), "fma": text.count("fma.rn.f32")})
