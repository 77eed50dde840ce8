"""A wide sweep of the tiled Triton kernel's configurations at one shape, against cuBLAS.

``python -m study.sweep --shape 4096,4096,4096 --out DIR`` compiles every configuration of
:func:`space` in parallel (``--jobs`` processes filling Triton's on-disk cache), then, one
at a time, checks each against float64 with a NaN-poisoned output and times it exactly as
the study times kernels (:func:`study.measure.bench.time_cuda`, L2 overwritten before every
repetition). cuBLAS FP32 (TF32 off) is timed before, between and after, and every row
carries its time as a fraction of the nearest cuBLAS timing. A second round varies the
program order (``GROUP_M``) and the register cap (``maxnreg``) of the fastest tiles, and a
final round re-times the leaders for longer, each beside a cuBLAS timing.

It is the evidence behind TA's configuration space (:mod:`triton_kernels.ta_autotuned`):
which tiles, depths and warp counts are worth autotuning over on this GPU. Rows go to
``DIR/data/sweep.csv`` as they are measured (an interrupted sweep keeps them); a configuration
that does not compile, does not fit or computes a wrong result gets a row that says so.
``--budget-s`` stops starting new work after that many seconds.
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import multiprocessing
import sys
import time
from pathlib import Path

from study import arch
from study.cli import say
from study.errors import InputError, first_line
from study.rundata import rundir
from study.rundata.rundir import RunDir
from study.rundata.tables import T

# (BM, BN) block tiles; every warp count that gives MIN..MAX outputs per thread is tried
TILES = ((64, 64), (64, 128), (128, 64), (128, 128), (32, 128), (128, 32), (32, 64), (64, 32),
         (32, 256), (256, 32), (64, 256), (256, 64), (128, 256), (256, 128))
WARPS = (2, 4, 8)
MIN_OUT_PER_THREAD, MAX_OUT_PER_THREAD = 16, 128
# the families a person would try first get every depth; the others a few
CORE_TILES = ((64, 64), (64, 128), (128, 64), (128, 128))
CORE_BK, CORE_STAGES = (8, 16, 32, 64), (1, 2, 3, 4, 5)
OTHER_BK, OTHER_STAGES = (16, 32), (1, 3)
MAX_LOOP_FFMA = 8192  # FFMAs per thread in one unrolled K step: larger bodies take minutes to compile
COLUMNS = [*T.sweep.columns]  # declared in study.rundata.tables


def space(smem_limit: int | None = None) -> list[tuple]:
    """(BM, BN, BK, num_warps, num_stages) to try, the likeliest first.

    ``smem_limit``: the shared memory one block may have, in bytes; None reads it from the arch
    table for the present device (an InputError without one).
    """
    if smem_limit is None:
        smem_limit = arch.of_device().smem_per_block
    out = []
    for bm, bn in TILES:
        core = (bm, bn) in CORE_TILES
        for warps in WARPS:
            per_thread = bm * bn // (32 * warps)
            if not MIN_OUT_PER_THREAD <= per_thread <= MAX_OUT_PER_THREAD:
                continue
            depths = (CORE_BK, CORE_STAGES) if core else (OTHER_BK, OTHER_STAGES)
            for bk, stages in itertools.product(*depths):
                if per_thread * bk > MAX_LOOP_FFMA:
                    continue
                if (bm + bn) * bk * 4 * max(1, stages) > smem_limit:
                    continue
                out.append((bm, bn, bk, warps, stages))
    return out


# --------------------------------------------------------------------------------------------
# Compilation (worker processes) and measurement
# --------------------------------------------------------------------------------------------

_W: dict = {}


def _operands(M: int, N: int, K: int):
    import torch

    from study.measure.bench import random_inputs

    a, b = random_inputs(M, N, K, seed=0)
    return a, b, torch.empty((M, N), device="cuda", dtype=torch.float32)


def _compile(job: tuple) -> tuple:
    """Compile one configuration into Triton's cache; (job, status, regs, spills)."""
    shape, (bm, bn, bk, warps, stages, group_m, maxnreg) = job
    from triton_kernels.tile import even_k, tiled_matmul_kernel

    if "ops" not in _W or _W["shape"] != shape:
        _W["ops"], _W["shape"] = _operands(*shape), shape
    a, b, c = _W["ops"]
    M, N, K = shape
    extra = {"maxnreg": maxnreg} if maxnreg else {}
    try:
        k = tiled_matmul_kernel.warmup(
            a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
            BM=bm, BN=bn, BK=bk, GROUP_M=group_m, EVEN_K=even_k(K, bk), num_warps=warps,
            num_stages=stages, grid=(1,), **extra)
        try:
            k._init_handles()
        except Exception as e:  # resources over the limit show here
            return job, f"does not fit: {first_line(e)[:160]}", "", ""
        return job, "compiled", getattr(k, "n_regs", ""), getattr(k, "n_spills", "")
    except Exception as e:
        return job, f"compile error: {first_line(e)[:160]}", "", ""


def compile_all(shape, configs, jobs: int, deadline: float) -> dict:
    """Compile ``configs`` with ``jobs`` processes; config -> (status, regs, spills)."""
    done = {}
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = [pool.submit(_compile, (shape, c)) for c in configs]
        for i, f in enumerate(cf.as_completed(futures), 1):
            job, status, regs, spills = f.result()
            done[job[1]] = (status, regs, spills)
            if i % 20 == 0 or i == len(futures):
                say(f"compiled {i}/{len(futures)}")
            if time.monotonic() > deadline:
                for g in futures:
                    g.cancel()
                break
    return done


class SweepBench:
    """What a parameter sweep holds at its shape: the operands (random, seed 0), the NaN-poisoned
    output, the float64 reference, the results file, and cuBLAS FP32 (TF32 off) timed as the
    study times kernels, one row per timing. Both sweeps (Triton's here, the CUDA template's in
    :mod:`study.sweep_cuda`) measure on it; ``common`` is what every row of theirs carries."""

    def __init__(self, shape, path: Path, columns: list[str], target_s: float, common: dict):
        from study.measure import baseline, bench, device
        from study.rundata.results import ResultsFile, git_commit

        self.shape, self.target_s = shape, target_s
        baseline.pin_fp32()
        self.gpu = device.from_device()
        self.flush = bench.L2Flush(self.gpu.l2_bytes)
        self.a, self.b = bench.random_inputs(*shape, seed=0)
        self.c = bench.poisoned(shape[0], shape[1])
        self.ref = self.a.double() @ self.b.double()
        self.file = ResultsFile(path, columns)
        self.common = {"M": shape[0], "N": shape[1], "K": shape[2], **common, "gpu": self.gpu.name,
                       "commit": git_commit()}
        self.cublas_ms = None

    def flops(self) -> float:
        M, N, K = self.shape
        return 2.0 * M * N * K

    def time_cublas(self, target_s: float | None = None, **label) -> float:
        """Time cuBLAS at the shape; its row (``label`` added) and the time the next rows compare to."""
        import torch

        from study.measure import bench
        from study.rundata.results import timestamp

        t = bench.time_cuda(lambda: torch.matmul(self.a, self.b, out=self.c), self.flush,
                            target_s=target_s or self.target_s)
        self.cublas_ms = t.ms
        self.file.append({**self.common, **label, "round": "cublas", "status": "ok", "ms": t.ms,
                          "p20_ms": t.p20_ms, "p80_ms": t.p80_ms, "reps": t.reps,
                          "tflops": self.flops() / t.ms / 1e9, "cublas_ms": t.ms, "pct_cublas": 100.0,
                          "timestamp": timestamp()})
        return t.ms

    def timed(self, row: dict, launch, target_s: float | None = None) -> None:
        """``row`` gains the time of ``launch`` (already checked against the reference)."""
        from study.measure import bench

        t = bench.time_cuda(launch, self.flush, target_s=target_s or self.target_s)
        row.update(status="ok", ms=t.ms, p20_ms=t.p20_ms, p80_ms=t.p80_ms, reps=t.reps,
                   tflops=self.flops() / t.ms / 1e9, cublas_ms=self.cublas_ms,
                   pct_cublas=100.0 * self.cublas_ms / t.ms)


class Sweep(SweepBench):
    def __init__(self, shape, out: Path, target_s: float):
        import triton

        super().__init__(shape, RunDir(out).file(rundir.SWEEP), COLUMNS, target_s,
                         {"triton": triton.__version__})

    def measure(self, rnd: str, cfg: tuple, compiled: tuple, target_s: float | None = None) -> dict:
        import torch

        from study.measure import bench
        from study.rundata.results import timestamp
        from triton_kernels.tile import even_k, tiled_matmul_kernel

        bm, bn, bk, warps, stages, group_m, maxnreg = cfg
        status, regs, spills = compiled
        row = {**self.common, "round": rnd, "BM": bm, "BN": bn, "BK": bk, "num_warps": warps,
               "num_stages": stages, "GROUP_M": group_m, "maxnreg": maxnreg or "", "status": status,
               "regs": regs, "spills": spills, "timestamp": timestamp()}
        if status == "compiled":
            M, N, K = self.shape
            a, b, c = self.a, self.b, self.c
            extra = {"maxnreg": maxnreg} if maxnreg else {}
            grid = (-(-M // bm) * -(-N // bn),)

            def launch():
                tiled_matmul_kernel[grid](
                    a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                    c.stride(1), BM=bm, BN=bn, BK=bk, GROUP_M=group_m, EVEN_K=even_k(K, bk),
                    num_warps=warps, num_stages=stages, **extra)

            try:
                c.fill_(float("nan"))
                launch()
                torch.cuda.synchronize()
                err = bench.relative_error(c, self.ref)
                row["rel_err"] = err
                if not err <= bench.TOLERANCE:
                    row["status"] = "wrong result"
                else:
                    self.timed(row, launch, target_s)
            except Exception as e:  # a launch that fails is a row, not the end of the sweep
                row["status"] = f"launch error: {first_line(e)[:160]}"
        self.file.append(row)
        return row


def ranked(rows: list[dict]) -> list[dict]:
    return sorted((r for r in rows if r["status"] == "ok"), key=lambda r: r["ms"])


def run(shape, out: Path, jobs: int, budget_s: float, target_s: float, top: int) -> int:
    t0 = time.monotonic()
    deadline = t0 + budget_s
    import triton_kernels.ta_autotuned as ta

    base = [(*c, ta.GROUP_M, None) for c in space()]
    say(f"round 1: {len(base)} configurations at {shape}")
    compiled = compile_all(shape, base, jobs, deadline)
    say(f"compiled in {time.monotonic() - t0:.0f} s")
    sw = Sweep(shape, out, target_s)
    sw.time_cublas()
    rows = []
    for i, cfg in enumerate(base):
        if time.monotonic() > deadline:
            say("budget spent: round 1 cut short")
            break
        if cfg not in compiled:
            continue
        rows.append(sw.measure("1", cfg, compiled[cfg]))
        if (i + 1) % 25 == 0:
            sw.time_cublas()
            best = ranked(rows)[:1]
            lead = f"{best[0]['pct_cublas']:.1f}% of cuBLAS" if best else "none ok"
            say(f"measured {i + 1}/{len(base)}, best {lead}")
    sw.time_cublas()
    # round 2: the program order and register cap of the fastest tiles of round 1
    leaders = [tuple(r[k] for k in ("BM", "BN", "BK", "num_warps", "num_stages")) for r in ranked(rows)[:top]]
    variants = [(*c, g, None) for c in leaders for g in (1, 4, 16)]
    variants += [(*c, ta.GROUP_M, r) for c in leaders for r in (96, 128, 168, 232)]
    if time.monotonic() < deadline and variants:
        say(f"round 2: {len(variants)} variants of the {len(leaders)} fastest")
        compiled2 = compile_all(shape, variants, jobs, deadline)
        for cfg in variants:
            if time.monotonic() > deadline:
                break
            if cfg in compiled2:
                rows.append(sw.measure("2", cfg, compiled2[cfg]))
    # round 3: the leaders again, longer, each just after a cuBLAS timing
    final = ranked(rows)[:max(3, top // 2)]
    for r in final:
        if time.monotonic() > deadline:
            break
        cfg = tuple(r[k] for k in ("BM", "BN", "BK", "num_warps", "num_stages", "GROUP_M"))
        cfg += (r["maxnreg"] or None,)
        sw.time_cublas(target_s=4 * target_s)
        sw.measure("3", cfg, (r["status"] if r["status"] != "ok" else "compiled", r["regs"], r["spills"]),
                   target_s=4 * target_s)
    say(f"sweep done in {time.monotonic() - t0:.0f} s: {RunDir(out).file(rundir.SWEEP)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from study import cli

    p = cli.Parser(prog="python -m study.sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="4096,4096,4096", help="M,N,K (default 4096,4096,4096)")
    # required, checked after parsing: argparse would name a missing --out before an unknown flag
    p.add_argument("--out", help="run directory (its data/sweep.csv; required)")
    p.add_argument("--jobs", type=int, default=max(1, (multiprocessing.cpu_count() or 2) - 1),
                   help="compile processes")
    p.add_argument("--budget-s", type=float, default=480.0, help="start no new work after this many seconds")
    p.add_argument("--target-s", type=float, default=0.1, help="timed seconds per configuration")
    p.add_argument("--top", type=int, default=8, help="fastest configurations varied in round 2")

    def body() -> int:
        args = p.parse_args(argv)
        if args.out is None:
            raise InputError("--out DIR is required: the run directory whose data/sweep.csv the rows go into")
        shape = cli.parse_shape(args.shape)
        cli.check_sweep_flags(args)
        out = cli.sweep_dir(args.out)
        return run(shape, out, args.jobs, args.budget_s, args.target_s, args.top)

    return cli.main(body)


if __name__ == "__main__":
    sys.exit(main())
