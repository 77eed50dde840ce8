"""Does the host cost of a call depend on the shape or on when it is measured? The panel's host_us
(study.measure.decode.host_seconds) for the operator, KD's registry launcher and torch.matmul at
every panel shape, M = 1 and 32, in the panel's order, then reversed, then in order again; beside
each wall figure, the thread's CPU time over the same calls (time.thread_time: time the thread did
not run, another process's, is not in it). Usage: python host_order.py OUTJSONL"""
import json, os, sys, time, statistics
import torch
sys.path.insert(0, os.getcwd())
import sgemm_ledgers
from study import kernels
from study.measure import bench, decode as dec

sgemm_ledgers.configure()
torch.backends.cuda.matmul.allow_tf32 = False
kd = kernels.get("KD").launcher
f = open(sys.argv[1], "a")


def cpu_per_call(call, n=40, batches=5):
    """Median over batches of the thread's CPU seconds per call, each batch behind a hold."""
    per = []
    for _ in range(batches):
        bench.hold_gpu(2e-3)
        t0 = time.thread_time()
        for _ in range(n):
            call()
        per.append((time.thread_time() - t0) / n)
        torch.cuda.synchronize()
    return statistics.median(per)


order = list(dec.PANEL)
t_start = time.time()
for sweep, shapes in enumerate((order, order[::-1], order)):
    for proj in shapes:
        N, K = proj.N, proj.K
        b = torch.randn(K, N, device="cuda")
        for M in (1, 32):
            a = torch.randn(M, K, device="cuda")
            out = torch.empty(M, N, device="cuda")
            calls = {"OP": lambda: sgemm_ledgers.mm(a, b, out=out), "KD": lambda: kd(a, b, out),
                     "K0": lambda: torch.matmul(a, b, out=out)}
            for c in calls.values():
                c()
            torch.cuda.synchronize()
            for name, c in calls.items():
                h = dec.host_seconds(c)
                cpu = cpu_per_call(c)
                f.write(json.dumps(dict(sweep=sweep, shape=proj.name, N=N, K=K, M=M, call=name,
                                        host_us=None if h is None else h * 1e6, cpu_us=cpu * 1e6,
                                        t=time.time() - t_start)) + "\n")
        f.flush()
        del b
    print("sweep", sweep, "done", round(time.time() - t_start, 1), "s", flush=True)
