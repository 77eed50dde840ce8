"""``python -m study.accuracy --out DIR``: the accuracy ledger, every kernel's error and speed (GPU).

Every kernel of the registry (the study's and the tensor-core kernels TT and TX) runs on inputs of
four distributions (``DISTRIBUTIONS``) at M = N = ``ERROR_MN`` and each K of ``KS``; its output,
NaN-poisoned first, is compared with the float64 product of the same inputs
(``docs/method.md#accuracy-ledger``):

- ``rel_err``: ‖C − C₆₄‖_F / ‖C₆₄‖_F (``bench.relative_error``; inf where an output is NaN or inf);
- ``max_ulp``: the largest |C − C₆₄| in units of the FP32 spacing at C₆₄ (``ulp32``), the ulp of
  the correctly rounded FP32 result.

Then the tensor-core kernels and the vendor's (every kernel with ``--speed-all``; the FP32 kernels'
speeds are the run's own, ``results.csv``, where the run measured them at the same shape) are
timed at ``SPEED_SHAPE`` on standard-normal inputs, after a check against float64 within their
precision's bound (``CHECK_BOUND``), in ``--passes`` passes over the kernels
(``experiments.PASSES``; the registry's order, then reversed, and so on: each pass its own order),
a ``speed`` row per kernel and pass (CUDA events, L2 flushed before each repetition,
``bench.time_cuda``): the speed side of the speed-against-accuracy figure, and the spread of each
kernel's speed-up over the passes.

A kernel that cannot run here (K0L without nvmath-python, a tensor-core kernel on a GPU without
TF32 tensor cores) is left out with one line. Rows go to ``DIR/data/accuracy.csv`` as they are
measured, with the provenance every results row carries; a file that holds rows already is
continued (``study.measure.decode.held_keys``: the same GPU, versions and commit, else refused);
``--budget-s`` starts no measurement after that many seconds (the same command again measures the
rest).
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from study import cli
from study.errors import InputError, first_line
from study.experiments import PASSES
from study.rundata import tables

# name -> what the values are (each drawn with the sign of a fair coin where not said otherwise)
DISTRIBUTIONS = {
    "randn": "standard normal: sums that cancel",
    "uniform": "uniform on [0, 1): every product positive, no cancellation",
    "wide": "2^u with u uniform on [-20, 20], random sign: forty binades of magnitude",
    "lowbits": "1 + u 2^-10 with u uniform on [0, 1), random sign: what sets them apart lies below "
               "TF32's ten mantissa bits",
}
WIDE_EXP = 20  # "wide": exponents uniform on [-WIDE_EXP, WIDE_EXP]
TF32_BITS = 10  # explicit mantissa bits of TF32: "lowbits" varies below them
KS = (256, 4096, 16384)
ERROR_MN = 1024  # rows of A and columns of B of the error points
SPEED_SHAPE = (4096, 4096, 4096)
TARGET_S = 0.2  # timed seconds of a speed row
# the check before timing: the relative error a kernel of each precision must be within
CHECK_BOUND = {"fp32": 1e-5, "tf32x3": 1e-5, "tf32": 1e-2}
COLUMNS = [*tables.T.accuracy.columns]
KEYS = ("kernel", "role", "dist", "K", "pass")  # what one row measures: a continued file skips these
PROBE_SHAPE = (128, 256, 256)  # a first launch of each kernel: one that cannot run here says so once


def draw(dist: str, rows: int, cols: int, g, device: str = "cuda"):
    """A ``rows`` x ``cols`` float32 matrix of the distribution ``dist``, from the generator ``g``."""
    import torch

    def sign():
        return torch.where(torch.rand(rows, cols, generator=g, device=device) < 0.5, -1.0, 1.0)

    def uniform():
        return torch.rand(rows, cols, generator=g, device=device, dtype=torch.float64)

    if dist == "randn":
        return torch.randn(rows, cols, generator=g, device=device, dtype=torch.float32)
    if dist == "uniform":
        return torch.rand(rows, cols, generator=g, device=device, dtype=torch.float32)
    if dist == "wide":
        return (sign() * torch.exp2((2 * uniform() - 1) * WIDE_EXP)).float()
    if dist == "lowbits":
        return (sign() * (1 + uniform() * 2.0 ** -TF32_BITS)).float()
    raise InputError(f"unknown distribution {dist!r}; known: {', '.join(DISTRIBUTIONS)}")


def ulp32(ref):
    """The spacing of float32 numbers at each element of ``ref`` (float64): the distance from the
    float32 nearest it, in magnitude, to the next float32 away from zero, as float64."""
    import torch

    x = ref.float().abs()
    return (torch.nextafter(x, torch.full_like(x, math.inf)) - x).double()


def max_ulp(out, ref) -> float:
    """The largest |out − ref| in units of ``ulp32(ref)``; inf where ``out`` is not finite."""
    import torch

    out64 = out.double()
    if not bool(torch.isfinite(out64).all()):
        return math.inf
    return float(((out64 - ref).abs() / ulp32(ref)).max())


def refusal(k, cc: str) -> str | None:
    """Why the hardware cannot run ``k`` (a tensor-core kernel without TF32 tensor cores, a wgmma
    kernel outside sm_90a); None where it can."""
    from study import arch

    if k is None or k.precision == "fp32":
        return None
    if not arch.has_tf32(cc):
        return (f"{k.id} multiplies on TF32 tensor cores, which compute capability {cc} lacks "
                "(sm_80 and later)")
    if any(r.has("SGEMM_SM90A") for r in k.registrations) and arch.cc_of(cc) != "9.0":
        return f"{k.id} multiplies with wgmma, which only compute capability 9.0 has (sm_90a); this is {cc}"
    return None


# --- the command line ------------------------------------------------------------------------------


def parser() -> cli.Parser:
    from study import kernels as registry

    p = cli.Parser(prog="python -m study.accuracy", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="run directory: data/accuracy.csv gets the rows")
    p.add_argument("--kernels", default=None, help=f"default every kernel: {','.join(registry.IDS)}")
    p.add_argument("--dists", default=",".join(DISTRIBUTIONS), help=f"default {','.join(DISTRIBUTIONS)}")
    p.add_argument("--ks", default=",".join(map(str, KS)), help=f"default {','.join(map(str, KS))}")
    p.add_argument("--passes", default=None, help=f"passes over the speed rows (default {PASSES})")
    p.add_argument("--no-speed", action="store_true", help="measure the errors only")
    p.add_argument("--speed-all", action="store_true",
                   help="time every kernel, not only the tensor-core and vendor kernels")
    p.add_argument("--budget-s", default=None, help="start no measurement after this many seconds")
    return p


@dataclass(frozen=True)
class Options:
    """What one command asks for, checked."""

    out: Path
    ids: list[str]
    dists: list[str]
    ks: list[int]
    passes: int  # passes over the speed rows; 0: none (--no-speed)
    speed_all: bool = False  # time every kernel, not only the tensor-core and vendor kernels
    budget_s: float | None = None  # start no measurement after this many seconds


def parse(argv) -> Options:
    from study import kernels as registry
    from study.measure.decode import items

    a = parser().parse_args(argv)
    out = cli.out_dir(a.out)
    ids = list(registry.IDS) if a.kernels is None else items(a.kernels, "--kernels", "K12,TX")
    for kid in ids:
        registry.get(kid)  # an unknown id: one line naming the known ones
    dists = items(a.dists, "--dists", "randn,wide")
    for d in dists:
        if d not in DISTRIBUTIONS:
            raise InputError(f"--dists: unknown distribution {d!r}; known: {', '.join(DISTRIBUTIONS)}")
    ks = [cli.positive_int(k) for k in items(a.ks, "--ks", "256,4096")]
    passes = cli.positive_int(a.passes, "--passes") if a.passes is not None else PASSES
    budget = None if a.budget_s is None else cli.positive_float(a.budget_s, "--budget-s")
    return Options(out, ids, dists, ks, 0 if a.no_speed else passes, a.speed_all, budget)


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        opts = parse(argv)
        from study.measure.decode import need_gpu

        need_gpu("study.accuracy")
        return run(opts)

    return cli.main(body)


# --- measuring -----------------------------------------------------------------------------------


def timed_here(k) -> bool:
    """Whether the ledger times ``k`` by default: a tensor-core kernel, or a vendor's (the
    speed-ups' denominator); the FP32 kernels' speeds are their run's."""
    return k.precision != "fp32" or k.impl == "cublas"


def plan(opts: Options, found: dict, done: set) -> list[tuple]:
    """What is left to measure, in order: each (distribution, K) with the kernels of ``found``
    (id -> (entry, launch)) it lacks, as ("error", (dist, K, ids), None); then the speed rows, pass
    by pass (the kernels in ``found``'s order, reversed in every other pass), as ("speed", pass,
    id), of the kernels ``timed_here`` (every one with ``speed_all``). What ``done`` holds (its
    ``KEYS``, as the file's text) is left out."""
    todo: list[tuple] = []
    for dist in opts.dists:
        for K in opts.ks:
            kids = [kid for kid in found if (kid, "error", dist, str(K), "") not in done]
            if kids:
                todo.append(("error", (dist, K, kids), None))
    speed = [kid for kid, (k, _) in found.items() if opts.speed_all or timed_here(k)]
    for p in range(1, opts.passes + 1):
        for kid in speed if p % 2 else list(reversed(speed)):
            if (kid, "speed", "randn", str(SPEED_SHAPE[2]), str(p)) not in done:
                todo.append(("speed", p, kid))
    return todo


def run(opts: Options) -> int:
    import torch

    from study import kernels as registry
    from study.measure import bench, device
    from study.measure.decode import held_keys, launchers
    from study.rundata import results, rundir
    from study.rundata.rundir import RunDir

    gpu = device.from_device()
    rd = RunDir(opts.out)
    rd.claim_measurement(rundir.identity(gpu.name, gpu.cc, gpu.sms), resume=True)
    prov = results.provenance(gpu, results.new_run_id())
    path = rd.file(tables.T.accuracy)
    done = held_keys(path, prov, KEYS)
    rd.create()
    file = results.ResultsFile(path, COLUMNS)
    if done:
        cli.say(f"{path}: {len(done)} rows already there; measuring what is missing")
    runnable = []
    for kid in opts.ids:  # what the hardware lacks is said before anything is launched
        why = refusal(registry.get(kid), gpu.cc)
        if why:
            cli.say(f"{kid}: {why}; left out")
        else:
            runnable.append(kid)
    found = launchers(runnable, PROBE_SHAPE, "the accuracy ledger")
    t0 = time.monotonic()
    deadline = math.inf if opts.budget_s is None else t0 + opts.budget_s
    n = 0
    todo = plan(opts, found, done)
    flush = bench.L2Flush(gpu.l2_bytes) if opts.passes else None
    for role, a, b in todo:  # ("error", (dist, K, kernels), None) or ("speed", pass, kernel)
        if time.monotonic() >= deadline:
            cli.say(f"--budget-s {opts.budget_s:g}: stopped after {time.monotonic() - t0:.0f} s; run again "
                    f"with --out {opts.out} to measure the rest")
            break
        if role == "error":
            dist, K, kids = a
            rows = error_point(dist, K, kids, found, file, prov)
            n += len(rows)
            ok = [r for r in rows if r["status"] == "ok"]
            worst = max(ok, key=lambda r: r["rel_err"]) if ok else None
            cli.say(f"{dist} K={K}: {len(ok)} of {len(rows)} kernels measured"
                    + (f", largest error {worst['kernel']} {worst['rel_err']:.2e}" if worst else "")
                    + f" ({time.monotonic() - t0:.0f} s)")
            torch.cuda.empty_cache()
        else:
            row = speed_row(b, *found[b], flush, prov, a)
            file.append(row)
            n += 1
            cli.say(f"pass {a}: {b} at {'x'.join(map(str, SPEED_SHAPE))}: "
                    + (f"{row['ms']:.3f} ms" if row["status"] == "ok" else f"{row['status']}: {row['note']}"))
    cli.say(f"accuracy ledger: {n} rows in {time.monotonic() - t0:.0f} s -> {path}")
    return 0


def _base(kid: str, k, role: str, dist: str, M: int, N: int, K: int, prov: dict) -> dict:
    return {"kernel": kid, "precision": k.precision, "role": role, "dist": dist, "M": M, "N": N, "K": K,
            "status": "ok", "note": "", **prov}


def _run_once(k, launch, a, b, out) -> str | None:
    """Launch once into ``out``; why it could not (a refusal, a library's error), or None."""
    import torch

    from study.measure.decode import still_usable

    why = k.constraint_error(a.shape[0], b.shape[1], a.shape[1])
    if why is None:
        try:
            launch(a, b, out)
            torch.cuda.synchronize()
        except Exception as e:  # this kernel at this point only
            still_usable(e)
            why = first_line(e)
    return why


def error_point(dist: str, K: int, kids: list[str], found: dict, file, prov: dict) -> list[dict]:
    """The error rows of one (distribution, K), each appended to ``file`` as it is measured; the
    inputs seeded by the distribution's place in ``DISTRIBUTIONS`` and K, so that a subset of
    either draws the same matrices."""
    import torch

    from study.measure import bench
    from study.rundata.results import timestamp

    M = N = ERROR_MN
    g = torch.Generator(device="cuda").manual_seed(1009 * list(DISTRIBUTIONS).index(dist) + K)
    a, b = draw(dist, M, K, g), draw(dist, K, N, g)
    ref = a.double() @ b.double()
    rows = []
    for kid in kids:
        k, launch = found[kid]
        row = _base(kid, k, "error", dist, M, N, K, prov)
        out = bench.poisoned(M, N)
        why = _run_once(k, launch, a, b, out)
        if why is not None:
            row.update(status="refused", note=why)
        else:
            row.update(rel_err=bench.relative_error(out, ref), max_ulp=max_ulp(out, ref))
            if not math.isfinite(row["rel_err"]):
                row.update(status="wrong", note="an output is NaN or inf")
        file.append({**row, "timestamp": timestamp()})
        rows.append(row)
    return rows


def speed_row(kid: str, k, launch, flush, prov: dict, pass_no: int) -> dict:
    """The speed row of one kernel in pass ``pass_no``: checked within ``CHECK_BOUND`` on randn,
    then timed."""
    from study.measure import bench
    from study.rundata.results import timestamp

    M, N, K = SPEED_SHAPE
    row = {**_base(kid, k, "speed", "randn", M, N, K, prov), "pass": pass_no, "timestamp": timestamp()}
    a, b = bench.random_inputs(M, N, K, seed=11)
    out = bench.poisoned(M, N)
    why = _run_once(k, launch, a, b, out)
    if why is not None:
        return {**row, "status": "refused", "note": why}
    err = bench.relative_error(out, a.double() @ b.double())
    row["rel_err"] = err
    bound = CHECK_BOUND[k.precision]
    if not err <= bound:
        return {**row, "status": "wrong", "note": f"relative error {err:.2e} > {bound:.0e}"}
    t = bench.time_cuda(lambda: launch(a, b, out), flush, target_s=TARGET_S)
    cfg = k.launch_config(M, N, K)
    return {**row, "ms": t.ms, "p20_ms": t.p20_ms, "p80_ms": t.p80_ms, "reps": t.reps,
            "config": json.dumps(cfg, sort_keys=True) if cfg else ""}


if __name__ == "__main__":
    sys.exit(main())
