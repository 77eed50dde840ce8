"""Does a torch.profiler session cost the host on every later launch of its process? The host
pass's host_seconds (study.measure.decode_host) for the operator, KD's registry launcher and
torch.matmul at two panel points, first in a process that has opened no profiler session, then
after 1, 4, 16 and 64 sessions, each session profiling one torch.matmul at a shape of its own (as
the cuBLAS launcher does at a shape's first launch). With --teardown, TEARDOWN_CUPTI=1 is set
before torch is imported (Kineto then detaches CUPTI when a session ends); with --teardown-late,
after torch is imported and before the first session (as a module of the study could set it).
Usage, from the repository root:
    python docs/notes/kd_stream/profiler_cost.py OUT.jsonl [--teardown | --teardown-late]"""
import json
import os
import sys

MODE = "before" if "--teardown" in sys.argv else "late" if "--teardown-late" in sys.argv else "none"
if MODE == "before":
    os.environ["TEARDOWN_CUPTI"] = "1"
sys.path.insert(0, os.getcwd())
import torch  # noqa: E402

import sgemm_ledgers  # noqa: E402
from study import kernels  # noqa: E402
from study.measure import baseline, decode_host  # noqa: E402

baseline.pin_fp32()
kd = kernels.get("KD").launcher
points = [(1, 4096, 4096), (32, 18944, 3584)]
operands = {}
for M, N, K in points:
    a, b = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    operands[(M, N, K)] = (a, b, torch.empty(M, N, device="cuda"))
f = open(sys.argv[1], "a")
sessions = 0


def measure():
    for (M, N, K), (a, b, out) in operands.items():
        calls = {"OP": lambda a=a, b=b, out=out: sgemm_ledgers.mm(a, b, out=out),
                 "KD": lambda a=a, b=b, out=out: kd(a, b, out),
                 "matmul": lambda a=a, b=b, out=out: torch.matmul(a, b, out=out)}
        for name, call in calls.items():
            for _ in range(3):
                h = decode_host.host_seconds(call)
                f.write(json.dumps(dict(teardown=MODE, sessions=sessions, M=M, N=N, K=K,
                                        call=name, host_us=None if h is None else h * 1e6)) + "\n")
    f.flush()


measure()
if MODE == "late":
    os.environ["TEARDOWN_CUPTI"] = "1"
for target in (1, 4, 16, 64):
    while sessions < target:
        sessions += 1
        x = torch.randn(sessions, 64, device="cuda")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]):
            torch.matmul(x, x.T)
            torch.cuda.synchronize()
    measure()
print("done", sessions, "sessions", flush=True)
