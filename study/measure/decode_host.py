"""``python -m study.measure.decode_host --out DIR``: the decode panel's host pass (GPU).

The host's cost of one call, at every point where the panel (``data/decode.csv``) holds a timed
row of a kernel in ``HOST_KERNELS``, measured in a process that times nothing else:
``python -m study.decode`` runs this module in a child process after its GPU timings, since a
process that has timed hundreds of Triton and cuBLAS launches reads the same call slower
(``docs/method.md#decode-panel``).

Each point is measured once in each of ``PASSES`` passes over the points: the panel's order of
shapes, then reversed, then the panel's order again (Ms ascending within a shape), so that a drift
of the process over the pass shows as a spread between passes and not as a trend over the shapes.
Per (shape, M, kernel, pass) a row of ``data/decode_host.csv``:

- ``host_us``: the median over ``BATCHES`` batches of the wall time (``time.perf_counter``) of
  ``CALLS`` calls enqueued while the device is held busy (``bench.hold_gpu``), over ``CALLS``: no
  call waits for the device, and a pause of the host inside one batch moves one batch, not the
  figure. ``host_min_us`` and ``host_max_us`` are the fastest and the slowest batch.
- ``cpu_us``: the same batches' CPU time of the calling thread (``time.thread_time``), median: a
  wall time above it is time the thread waited (a lock, another process on its CPU).
- Empty times and ``status`` "unheld" where a hold ended before its batch's last call returned
  ``HOLD_TRIES`` times over, each hold four times longer than the last (a launcher that waits for
  the device); "refused" where the call raised (``note`` says why).

No launcher in this process opens a profiler session to name its kernel
(``baseline.name_no_kernels``): a session can leave a cost on every later launch of its process.
Operands are drawn as the panel draws them (standard normal, float32); the results are not checked
again (the panel checked every point it timed). A file that holds rows already is continued: the
(shape, M, kernel, pass)es it holds are not measured again, and its rows must share this run's GPU,
versions and commit (``decode.MATCH``), else the command refuses with one line.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path

from study import cli
from study.errors import first_line
from study.measure import decode as panel
from study.rundata import tables
from study.rundata.tables import DECODE_OPERATOR

HOST_KERNELS = ("KD", DECODE_OPERATOR, "K0")  # what the report's per-call table shows
PASSES = 3
BATCHES = 9  # host_us: the median batch of this many
CALLS = 40  # calls per batch
PROBE = 10  # calls timed on the host first, to size the hold behind a batch
HOLD_TRIES = 3
COLUMNS = [*tables.T.decode_host.columns]  # declared in study.rundata.tables


def batches(call) -> list[tuple[float, float]] | None:
    """(wall, CPU) seconds per call of each of ``BATCHES`` batches of ``CALLS`` calls, each batch
    enqueued behind a hold of the device; None where a hold ended before its batch's last call
    returned, ``HOLD_TRIES`` times."""
    import torch

    from study.measure import bench

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(PROBE):
        call()
    hold = bench.HOLD_MARGIN * CALLS * (time.perf_counter() - t0) / PROBE
    torch.cuda.synchronize()
    per_call = []
    for _ in range(BATCHES):
        for _ in range(HOLD_TRIES):
            bench.hold_gpu(hold)
            held = torch.cuda.Event()
            held.record()
            c0, t0 = time.thread_time(), time.perf_counter()
            for _ in range(CALLS):
                call()
            wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
            still_held = not held.query()
            torch.cuda.synchronize()
            if still_held:
                per_call.append((wall / CALLS, cpu / CALLS))
                break
            hold *= 4
        else:
            return None
    return per_call


def host_seconds(call) -> float | None:
    """Wall seconds per call, the median batch of :func:`batches`; None where the device was not
    held."""
    got = batches(call)
    return None if got is None else statistics.median(w for w, _ in got)


def measure(call) -> dict:
    """The measured columns of one (point, pass)."""
    try:
        got = batches(call)
    except Exception as e:  # a launcher that refuses here: this point only
        panel.still_usable(e)
        return {"status": "refused", "note": first_line(e)}
    if got is None:
        return {"status": "unheld", "note": "the device was not held until a batch's last call returned"}
    wall = [w * 1e6 for w, _ in got]
    return {"status": "ok", "note": "", "host_us": statistics.median(wall), "host_min_us": min(wall),
            "host_max_us": max(wall), "cpu_us": statistics.median(c * 1e6 for _, c in got),
            "batches": len(got), "calls": CALLS}


def timed_points(decode_csv: Path, kernels: list[str]) -> dict[str, dict[int, list[str]]]:
    """shape -> M -> kernels of ``kernels`` that hold a timed ("ok") row there, in the panel's order
    of shapes, Ms ascending."""
    import pandas as pd

    if not decode_csv.is_file():
        return {}
    d = pd.read_csv(decode_csv, dtype=str, keep_default_na=False)
    ok = d[(d["status"] == "ok") & d["kernel"].isin(kernels) & (d["M"] != "")]
    held = {(s, int(m), k) for s, m, k in zip(ok["shape"], ok["M"], ok["kernel"])}
    return {p.name: {m: [k for k in kernels if (p.name, m, k) in held]
                     for m in sorted({m for s, m, _ in held if s == p.name})}
            for p in panel.PANEL if any(s == p.name for s, _, _ in held)}


def order(shapes: list[str], p: int) -> list[str]:
    """The shapes of pass ``p``: the panel's order, reversed in every second pass."""
    return shapes[::-1] if p % 2 else shapes


def run(out: Path, kernels: list[str], budget_s: float | None) -> int:
    import torch

    from study.measure import device
    from study.rundata import results, rundir
    from study.rundata.results import timestamp
    from study.rundata.rundir import RunDir

    gpu = device.from_device()
    rd = RunDir(out)
    rd.claim_measurement(rundir.identity(gpu.name, gpu.cc, gpu.sms), resume=True)
    prov = results.provenance(gpu, results.new_run_id())
    points = timed_points(rd.file(tables.T.decode), kernels)
    if not points:
        cli.say(f"host pass: {rd.file(tables.T.decode)} holds no timed row of {', '.join(kernels)}; "
                "nothing to do")
        return 0
    path = rd.file(tables.T.decode_host)
    done = panel.held_keys(path, prov, keys=("shape", "kernel", "M", "pass"))
    rd.create()
    file = results.ResultsFile(path, COLUMNS)
    launch = {kid: f for kid, (_, f) in panel.launchers(kernels).items()}
    t0 = time.monotonic()
    deadline = math.inf if budget_s is None else t0 + budget_s
    written = 0
    for p in range(PASSES):
        for name in order(list(points), p):
            todo = [(m, k) for m, ks in points[name].items() for k in ks
                    if k in launch and (name, k, str(m), str(p)) not in done]
            if not todo:
                continue
            if time.monotonic() >= deadline:
                cli.say(f"host pass: --budget-s {budget_s:g} reached before pass {p + 1}, {name}; "
                        f"run again with --out {out} to measure the rest")
                return 0
            proj = panel.BY_NAME[name]
            b = torch.randn(proj.K, proj.N, device="cuda", dtype=torch.float32)
            for m in sorted({m for m, _ in todo}):
                a = torch.randn(m, proj.K, device="cuda", dtype=torch.float32)
                out_t = torch.empty(m, proj.N, device="cuda", dtype=torch.float32)
                for kid in [k for mm, k in todo if mm == m]:
                    row = measure(lambda f=launch[kid], a=a, b=b, o=out_t: f(a, b, o))
                    file.append({**panel.shape_columns(proj, prov), "M": m, "kernel": kid, "pass": p,
                                 **row, "timestamp": timestamp()})
                    written += 1
            del b
            torch.cuda.empty_cache()
        cli.say(f"host pass {p + 1}/{PASSES}: {written} rows in {time.monotonic() - t0:.0f} s")
    cli.say(f"host pass: {written} rows in {time.monotonic() - t0:.0f} s -> {path}")
    return 0


def parser() -> cli.Parser:
    p = cli.Parser(prog="python -m study.measure.decode_host", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="run directory whose data/decode.csv the panel wrote")
    p.add_argument("--kernels", default=",".join(HOST_KERNELS), help=f"default {','.join(HOST_KERNELS)}")
    p.add_argument("--budget-s", default=None, help="start no shape after this many seconds")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()

    def body() -> int:
        a = p.parse_args(argv)
        out = cli.out_dir(a.out)
        kernels = panel.parse_kernels(a.kernels)
        budget = None if a.budget_s is None else cli.positive_float(a.budget_s, "--budget-s")
        panel.need_gpu("the host pass")
        from study.measure import baseline

        baseline.name_no_kernels()  # no profiler session in this process: it can cost every later call
        return run(out, kernels, budget)

    return cli.main(body)


if __name__ == "__main__":
    sys.exit(main())
