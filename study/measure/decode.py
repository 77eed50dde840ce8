"""``python -m study.decode --out DIR``: the decode panel, LLM projections at small M, measured (GPU).

The panel (``PANEL``, ``MS``): the projections of three models as N x K (B is K x N, row-major; A
is M x K), each at M = 1 ... 64, for the decode rung (KD), its Triton twin (TD), the autotuned
Triton kernel (TA), cuBLAS's default (K0) and its fastest algorithm (K0L), all through the
registry's launchers, and the operator ``sgemm_ledgers.mm`` (OP, imported where it is installed).
A kernel that cannot run here (K0L without nvmath-python, OP without its package) is left out with
one line and the rest is measured.

Per shape B is drawn once (standard normal, float32), A per M. At each (shape, M) every kernel is
first checked on those operands against their float64 product, its output NaN-poisoned
(``bench.relative_error``, ``bench.TOLERANCE``): a wrong result is a row with status "wrong" and
no time. Then, per kernel (``docs/method.md#decode-panel``):

- ``gpu_us`` (with ``p20_us``, ``p80_us``, ``reps``): the median CUDA-event time of one call,
  ``bench.time_cuda`` with the L2 flushed before every repetition (``bench.L2Flush``), about
  ``TARGET_S`` of repetitions;
- ``e2e_us``: the end-to-end time of one call with the host in it, the wall time of ``CALLS``
  back-to-back calls on the same operands, synchronised once at the end, after ``E2E_WARMUP``
  calls, over ``CALLS``; no flush between them.

Per shape one more row, kernel ``read``: the time to read B's bytes with the read roof's reduction
(``bench.read_once`` over B's storage), L2 flushed before every repetition.

Then, in a child process that times nothing else, the host pass (``study.measure.decode_host``):
the host's cost of a call of KD, the operator and cuBLAS's default at every point timed, into
``DIR/data/decode_host.csv`` (``--no-host`` leaves it out).

Rows go to ``DIR/data/decode.csv`` as each is measured, with the provenance every results row
carries. A file that holds rows already is continued: the (shape, M, kernel)s it holds are not
measured again, and its rows must share this run's GPU, versions and commit (``MATCH``), else the
command refuses with one line. ``--budget-s`` stops starting new measurements after that many
seconds (run it again with the same ``--out`` to measure the rest).
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
from study.rundata import tables
from study.rundata.tables import DECODE_OPERATOR, DECODE_READ


@dataclass(frozen=True)
class Projection:
    """One projection of a model: B is K x N (``K`` the input features, ``N`` the outputs)."""

    name: str
    N: int
    K: int


PANEL: tuple[Projection, ...] = (
    Projection("llama3-8b.qkv", 6144, 4096),
    Projection("llama3-8b.o", 4096, 4096),
    Projection("llama3-8b.gate_up", 14336, 4096),
    Projection("llama3-8b.down", 4096, 14336),
    Projection("qwen2.5-7b.qkv", 4608, 3584),
    Projection("qwen2.5-7b.gate_up", 18944, 3584),
    Projection("qwen2.5-7b.down", 3584, 18944),
    Projection("qwen2.5-7b.lm_head", 152064, 3584),
    Projection("llama3-70b.qkv", 10240, 8192),
    Projection("llama3-70b.gate_up", 28672, 8192),
    Projection("llama3-70b.down", 8192, 28672),
)
BY_NAME = {p.name: p for p in PANEL}
MS = (1, 2, 4, 8, 16, 32, 64)
KERNELS = ("KD", "TD", "TA", "K0", "K0L", DECODE_OPERATOR)
TARGET_S = 0.04  # timed seconds per (kernel, point): the whole panel in a few minutes
CALLS = 200  # calls behind e2e_us
E2E_WARMUP = 10
PROBE_SHAPE = (1, 256, 256)  # a first launch of each kernel: one that cannot run here says so once
COLUMNS = [*tables.T.decode.columns]  # declared in study.rundata.tables
# what every row of one decode.csv shares: a continued file of another GPU, build or checkout is refused
MATCH = ("gpu", "sms", "cc", "torch", "triton", "cuda", "driver", "commit")


# --- the command line ------------------------------------------------------------------------------


def items(text: str, flag: str, example: str) -> list[str]:
    """The comma-separated items of ``flag``, each once in the order given; an empty list or an
    empty item ("1,,2", "KD,") is refused."""
    parts = [s.strip() for s in str(text).split(",")]
    if not any(parts):
        raise InputError(f"{flag} is empty; e.g. {flag} {example}")
    if not all(parts):
        raise InputError(f"{flag} {text!r}: an empty item; a comma-separated list, e.g. {flag} {example}")
    return list(dict.fromkeys(parts))


def parse_ms(text: str) -> list[int]:
    ms = []
    for s in items(text, "--ms", "1,8,32"):
        if not (s.isascii() and s.lstrip("+-").isdigit()):
            raise InputError(f"--ms takes integers (M, the rows of A); got {s!r}")
        if int(s) <= 0:
            raise InputError(f"--ms: M must be a positive integer; got {int(s)}")
        ms.append(int(s))
    return sorted(set(ms))


def parse_shapes(text: str) -> list[Projection]:
    names = items(text, "--shapes", PANEL[0].name)
    unknown = [s for s in names if s not in BY_NAME]
    if unknown:
        raise InputError(f"--shapes: unknown shape {unknown[0]!r}; known: {', '.join(BY_NAME)}")
    return [BY_NAME[s] for s in names]


def parse_kernels(text: str) -> list[str]:
    from study import kernels as registry

    ids = items(text, "--kernels", ",".join(KERNELS))
    for kid in ids:
        if kid != DECODE_OPERATOR and kid not in registry.BY_ID:
            raise InputError(f"--kernels: unknown kernel {kid!r}; known: {DECODE_OPERATOR} (the operator) "
                             f"and the registry's {', '.join(registry.IDS)}")
    return ids


def parser() -> cli.Parser:
    p = cli.Parser(prog="python -m study.decode", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="run directory: data/decode.csv gets the rows")
    p.add_argument("--kernels", default=",".join(KERNELS), help=f"default {','.join(KERNELS)}")
    p.add_argument("--shapes", default=",".join(BY_NAME), help="shape names (default: the whole panel)")
    p.add_argument("--ms", default=",".join(map(str, MS)), help=f"the Ms (default {','.join(map(str, MS))})")
    p.add_argument("--budget-s", default=None, help="start no measurement after this many seconds")
    p.add_argument("--no-host", action="store_true", help="leave the host pass out")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()

    def body() -> int:
        a = p.parse_args(argv)
        out = cli.out_dir(a.out)
        kernels, shapes, ms = parse_kernels(a.kernels), parse_shapes(a.shapes), parse_ms(a.ms)
        budget = None if a.budget_s is None else cli.positive_float(a.budget_s, "--budget-s")
        need_gpu("study.decode")
        t0 = time.monotonic()
        rc = run(out, kernels, shapes, ms, budget)
        if rc or a.no_host:
            return rc
        left = None if budget is None else budget - (time.monotonic() - t0)
        if left is not None and left <= 0:
            cli.say("--budget-s spent: no host pass; run again with the same --out")
            return rc
        return host_pass(out, kernels, left)

    return cli.main(body)


def need_gpu(tool: str) -> None:
    """TF32 pinned off before CUDA starts; InputError where no CUDA GPU is visible."""
    from study.measure import baseline

    baseline.pin_fp32()
    import torch

    if not torch.cuda.is_available():
        raise InputError(f"{tool} measures: it needs a CUDA GPU, and none is visible")


def host_pass(out: Path, kernels: list[str], budget_s: float | None) -> int:
    """The host pass (``study.measure.decode_host``) over the panel's points, in a child process:
    one that has timed nothing, the panel's kernels and libraries not yet loaded in it."""
    import subprocess

    from study.measure import decode_host

    ks = [k for k in kernels if k in decode_host.HOST_KERNELS]
    if not ks:
        return 0
    cmd = [sys.executable, "-m", "study.measure.decode_host", "--out", str(out), "--kernels", ",".join(ks)]
    if budget_s is not None:
        cmd += ["--budget-s", f"{budget_s:.0f}" if budget_s >= 1 else "1"]
    return subprocess.run(cmd).returncode


# --- measuring -----------------------------------------------------------------------------------


def held_keys(path: Path, prov: dict, keys: tuple[str, ...] = ("shape", "kernel", "M")) -> set[tuple]:
    """The ``keys`` of the rows already in ``path``, by default (shape, kernel, M) (M "" for a
    read-roof row); InputError where its rows were measured with another ``MATCH`` value than
    this run's (``prov``)."""
    import pandas as pd

    from study.rundata import results

    if not path.is_file() or path.stat().st_size == 0:
        return set()
    results.check_complete(path)
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    lacks = [c for c in (*keys, *MATCH) if c not in df.columns]
    if lacks:
        raise InputError(f"{path}: missing column {lacks[0]!r}; measure into another --out")
    for c in MATCH:
        held = sorted(set(df[c]))
        if held != [str(prov[c])]:
            raise InputError(f"{path} holds rows measured with {c} {', '.join(held) or '(none)'}; this run's "
                             f"is {prov[c]}: choose another --out (a file holds one GPU's, build's and "
                             "commit's rows)")
    return set(zip(*(df[c] for c in keys)))


def still_usable(e: BaseException) -> None:
    """Re-raise ``e`` unless the device still works after it (a CUDA error leaves the context
    broken: every later launch would fail, so the run stops there, its rows kept)."""
    import torch

    try:
        torch.cuda.synchronize()
    except RuntimeError:
        raise e from None


def launchers(kernels: list[str], probe: tuple[int, int, int] = PROBE_SHAPE, what: str = "the panel") -> dict:
    """Kernel id -> (registry entry or None for the operator, ``launch(a, b, out)``) for those that
    run here: each launched once at ``probe``; one that cannot is left out of ``what`` with one
    line."""
    import importlib

    from study import kernels as registry
    from study.measure import bench

    found = {}
    for kid in kernels:
        try:
            if kid == DECODE_OPERATOR:
                op = importlib.import_module("sgemm_ledgers")
                k, launch = None, (lambda a, b, out, _mm=op.mm: _mm(a, b, out=out))
            else:
                k = registry.get(kid)
                launch = k.launcher
            bench.check(launch, *probe)
        except Exception as e:  # a missing library, a build that fails: this kernel only
            if not isinstance(e, ImportError):
                still_usable(e)
            cli.say(f"{kid}: cannot run here ({first_line(e)}); left out of {what}")
            continue
        found[kid] = (k, launch)
    return found


def e2e_seconds(call) -> float:
    """Wall seconds per call of ``CALLS`` back-to-back calls, synchronised at the end, after
    ``E2E_WARMUP`` calls."""
    import torch

    for _ in range(E2E_WARMUP):
        call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(CALLS):
        call()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / CALLS


def _launch_facts(k, a, b, out, cc: str) -> dict:
    """What the launch ran: the function (``symbol``) and a library's or a tuner's choice (``config``)."""
    M, K = a.shape
    N = b.shape[1]
    try:
        if k is None:
            import sgemm_ledgers

            return {"symbol": sgemm_ledgers.route(a, b, out), "config": ""}
        from study.measure.plan import launched_symbol

        cfg = k.launch_config(M, N, K)
        return {"symbol": launched_symbol(k, (M, N, K), cc),
                "config": json.dumps(cfg, sort_keys=True) if cfg else ""}
    except Exception as e:  # what the launch ran is provenance, never a reason to lose the row
        return {"symbol": "", "config": f"not recorded ({first_line(e)})"}


def measure_point(kid: str, k, launch, a, b, ref, flush, cc: str) -> dict:
    """The measured columns of one (kernel, shape, M): checked, then timed twice (GPU, end to end)."""
    import torch

    from study.measure import bench

    M, K = a.shape
    N = b.shape[1]
    row = {"kernel": kid, "M": M, "status": "ok", "note": "", "rel_err": ""}
    why = k.constraint_error(M, N, K) if k is not None else None
    out = bench.poisoned(M, N)
    if why is None:
        try:
            launch(a, b, out)
            torch.cuda.synchronize()
        except Exception as e:  # a refusal, a library's error, a compile that fails: this point only
            still_usable(e)
            why = first_line(e)
    if why is not None:
        return {**row, "status": "refused", "note": why}
    err = bench.relative_error(out, ref)
    row["rel_err"] = err
    if not err <= bench.TOLERANCE:
        return {**row, "status": "wrong", "note": f"relative error {err:.2e} > {bench.TOLERANCE:.0e}"}
    call = lambda: launch(a, b, out)  # noqa: E731
    t = bench.time_cuda(call, flush, target_s=TARGET_S)
    row.update(gpu_us=t.ms * 1e3, p20_us=t.p20_ms * 1e3, p80_us=t.p80_ms * 1e3, reps=t.reps,
               e2e_us=e2e_seconds(call) * 1e6, calls=CALLS, **_launch_facts(k, a, b, out, cc))
    return row


def measure_read(b, flush) -> dict:
    """The shape's read-roof row: B's storage read by ``bench.read_once``."""
    import torch

    from study.measure import bench

    flat, acc = b.reshape(-1), torch.empty((), device=b.device, dtype=torch.float32)
    t = bench.time_cuda(lambda: bench.read_once(flat, acc), flush, target_s=TARGET_S)
    return {"kernel": DECODE_READ, "M": "", "status": "ok", "note": f"{flat.numel() * 4} bytes read",
            "gpu_us": t.ms * 1e3, "p20_us": t.p20_ms * 1e3, "p80_us": t.p80_ms * 1e3, "reps": t.reps}


def run(out: Path, kernels: list[str], shapes: list[Projection], ms: list[int],
        budget_s: float | None) -> int:
    import torch

    from study.measure import bench, device
    from study.rundata import results, rundir
    from study.rundata.rundir import RunDir

    gpu = device.from_device()
    rd = RunDir(out)
    rd.claim_measurement(rundir.identity(gpu.name, gpu.cc, gpu.sms), resume=True)  # one GPU per directory
    run_id = results.new_run_id()
    prov = results.provenance(gpu, run_id)
    path = rd.file(tables.T.decode)
    done = held_keys(path, prov)
    rd.create()
    file = results.ResultsFile(path, COLUMNS)
    if done:
        cli.say(f"{path}: {len(done)} rows already there; measuring what is missing")
    found = launchers(kernels)
    flush = bench.L2Flush(gpu.l2_bytes)
    t0 = time.monotonic()
    deadline = math.inf if budget_s is None else t0 + budget_s
    written = 0
    for i, proj in enumerate(shapes, 1):
        todo = [(kid, m) for m in ms for kid in found if (proj.name, kid, str(m)) not in done]
        need_read = (proj.name, DECODE_READ, "") not in done
        if not todo and not need_read:
            cli.say(f"[{i}/{len(shapes)}] {proj.name}: measured already")
            continue
        if time.monotonic() >= deadline:
            cli.say(f"--budget-s {budget_s:g}: stopped after {time.monotonic() - t0:.0f} s, before "
                    f"{proj.name}; run again with --out {out} to measure the rest")
            break
        rows = measure_shape(proj, todo, need_read, found, flush, file, prov, gpu.cc, deadline)
        torch.cuda.empty_cache()  # the shape's B is gone with measure_shape's frame
        written += len(rows)
        roof = next((f"; read roof {r['gpu_us']:.1f} µs" for r in rows if r["kernel"] == DECODE_READ), "")
        cli.say(f"[{i}/{len(shapes)}] {proj.name} ({proj.N}x{proj.K}): {len(rows)} rows in "
                f"{sum(r['_s'] for r in rows):.1f} s{roof}")
    cli.say(f"decode panel: {written} rows in {time.monotonic() - t0:.0f} s -> {path}")
    if rd.holds_rows():
        cli.say(f"python -m study.report {out} re-derives and renders the run with the panel")
    return 0


def shape_columns(proj: Projection, prov: dict) -> dict:
    """What every row of a shape carries beside its measurement: the shape and the provenance
    (``results.provenance``; each row adds its own ``timestamp``)."""
    return {"shape": proj.name, "N": proj.N, "K": proj.K, **prov}


def measure_shape(proj: Projection, todo: list[tuple[str, int]], need_read: bool, found: dict, flush, file,
                  prov: dict, cc: str, deadline: float) -> list[dict]:
    """The rows of one shape, each appended to ``file`` as it is measured (``_s``: the seconds it
    took): the read roof where ``need_read``, then each (kernel, M) of ``todo`` until ``deadline``.
    B is drawn once (seeded by the shape), A per M (seeded by the shape and M)."""
    import torch

    from study.rundata.results import timestamp

    g = torch.Generator(device="cuda").manual_seed(3 * proj.N + proj.K)
    b = torch.randn(proj.K, proj.N, device="cuda", dtype=torch.float32, generator=g)
    b64 = b.double()  # the float64 reference's B, once per shape
    common = shape_columns(proj, prov)
    rows: list[dict] = []

    def record(measure, *args) -> dict:
        s0 = time.monotonic()
        row = measure(*args)
        file.append({**common, **row, "timestamp": timestamp()})
        rows.append({**row, "_s": time.monotonic() - s0})
        return row

    if need_read:
        record(measure_read, b, flush)
    for m in sorted({m for _, m in todo}):
        g.manual_seed(7 * m + 3 * proj.N + proj.K)
        a = torch.randn(m, proj.K, device="cuda", dtype=torch.float32, generator=g)
        ref = a.double() @ b64
        for kid in [kid for kid, mm in todo if mm == m]:
            if time.monotonic() >= deadline:
                return rows
            row = record(measure_point, kid, *found[kid], a, b, ref, flush, cc)
            if row["status"] != "ok":
                cli.say(f"{kid} at {proj.name} M={m}: {row['status']}: {row['note']}")
    return rows


if __name__ == "__main__":
    sys.exit(main())
