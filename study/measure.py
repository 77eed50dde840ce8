"""Measuring: check every kernel, then time each (experiment point, kernel), one row on disk per
measurement as it ends. GPU only; the arithmetic over the rows is ``study.derive``'s.
"""

from __future__ import annotations

import json
import sys

from study import experiments, results
from study.cli import say
from study.errors import InputError, first_line


def key(p, k) -> tuple:
    shape = experiments.shape_for(k, p)
    return (p.experiment, p.label, k.id, *shape)


def footprint_bytes(M: int, N: int, K: int) -> int:
    """Device memory one measurement of M x N x K needs at once: the fp32 A, B and C, and the
    float64 copies of A and B and the float64 reference C that the correctness check builds."""
    elems = M * K + K * N + M * N
    return 4 * elems + 8 * elems


def check_fits(shape: tuple[int, int, int], free_bytes: int) -> None:
    """InputError when ``shape`` needs more device memory than ``free_bytes``."""
    need = footprint_bytes(*shape)
    if need > free_bytes:
        M, N, K = shape
        raise InputError(
            f"{M}x{N}x{K} needs {need / 2**30:.1f} GiB of device memory (fp32 A, B, C and their "
            f"float64 reference for the check); {free_bytes / 2**30:.1f} GiB are free"
        )


def plan(kernels, experiment_names, main_shape) -> list:
    """Every (point, kernel) the experiments ask for, in measuring order."""
    points = [p for e in experiment_names for p in experiments.points(e, main_shape)]
    return [(p, k) for p in points for k in kernels]


def run_plan(todo, measure_fn, rows_file, clocks_file, prov: dict, guard=None) -> None:
    """Measure each (point, kernel) of ``todo``, appending its row the moment it is done.

    ``measure_fn(kernel, shape) -> {"row": ..., "samples": [(t, MHz), ...]}``. A (kernel, shape)
    that several experiments share is measured once and recorded under each of them, also
    across a --resume (the rows already in ``rows_file`` count as measured).
    """
    from tqdm import tqdm

    memo = results.measured(rows_file.path)
    bar = tqdm(todo, desc="measuring", unit="run", file=sys.stderr, dynamic_ncols=True)
    for p, k in bar:
        shape = experiments.shape_for(k, p)
        bar.set_postfix_str(f"{p.experiment}:{p.label} {k.id} {shape[0]}x{shape[1]}x{shape[2]}")
        if (k.id, shape) not in memo:
            memo[(k.id, shape)] = measure_fn(k, shape)
        m = memo[(k.id, shape)]
        row = {
            **m["row"],
            "experiment": p.experiment,
            "label": p.label,
            **prov,
            "timestamp": results.timestamp(),
        }
        rows_file.append(row)
        if m["samples"] and not m.get("clocks_written"):
            clocks_file.append_many(
                {
                    "run_id": prov.get("run_id", ""),
                    "experiment": p.experiment,
                    "label": p.label,
                    "kernel": k.id,
                    "M": shape[0],
                    "N": shape[1],
                    "K": shape[2],
                    "t_s": round(t, 4),
                    "sm_clock_mhz": mhz,
                }
                for t, mhz in m["samples"]
            )
            m["clocks_written"] = True
        if guard:
            guard(k, shape, row)
    bar.close()


def correctness_sweep(chosen, bench) -> dict[str, str]:
    """Every kernel on small odd shapes against float64 before anything is timed."""
    failed = {}
    for k in chosen:
        for shape in experiments.CHECK_SHAPES:
            if k.constraint_error(*shape):
                continue
            try:
                err = bench.check(k.launcher, *shape, seed=sum(shape))
            except Exception as e:  # a launch failure is a failed check, reported with its reason
                failed[k.id] = first_line(e)
                break
            if not err <= experiments.TOLERANCE:
                failed[k.id] = f"relative error {err:.2e} at {shape[0]}x{shape[1]}x{shape[2]}"
                break
    return failed


def measure_one(k, shape, flush, target_s, bench, torch, gpu_mod) -> dict:
    M, N, K = shape
    launch = k.launcher
    rel_err = bench.check(launch, M, N, K, seed=M * 7 + N * 3 + K)
    row = {
        "kernel": k.id,
        "impl": k.impl,
        "M": M,
        "N": N,
        "K": K,
        "rel_err": rel_err,
        "ms": "",
        "p20_ms": "",
        "p80_ms": "",
        "reps": "",
        "sm_clock_mhz": "",
        "clock_samples": 0,
        "config": "",
    }
    if not rel_err <= experiments.TOLERANCE:
        say(f"{k.id} at {M}x{N}x{K}: relative error {rel_err:.2e} > {experiments.TOLERANCE:.0e}; not timed")
        return {"row": row, "samples": []}
    a, b = bench.random_inputs(M, N, K, seed=1 + M + N + K)
    out = torch.empty(M, N, device="cuda", dtype=torch.float32)
    with gpu_mod.ClockSampler() as clock:
        t = bench.time_cuda(lambda: launch(a, b, out), flush, target_s=target_s)
    med_clock = clock.median()
    row.update(
        ms=t.ms,
        p20_ms=t.p20_ms,
        p80_ms=t.p80_ms,
        reps=t.reps,
        sm_clock_mhz=med_clock if med_clock is not None else "",
        clock_samples=len(clock.samples),
    )
    cfg = k.tuned_config(M, N, K)
    row["config"] = json.dumps(cfg, sort_keys=True) if cfg else ""
    return {"row": row, "samples": clock.samples}


def tuned_configs(rows) -> dict[str, dict]:
    """The configuration each autotuned kernel ran with in the main experiment (from the rows just
    measured), so its SASS describes the kernel that was timed."""
    from study import kernels

    found = {}
    if rows is None or not {"kernel", "experiment", "config"} <= set(rows.columns):
        return found
    for r in rows[rows["experiment"].astype(str) == "main"].to_dict("records"):
        k = kernels.BY_ID.get(str(r["kernel"]))
        cfg = r["config"]
        if k is not None and k.tuned and isinstance(cfg, str) and cfg.startswith("{"):
            try:
                found[k.id] = json.loads(cfg)
            except ValueError:
                continue
    return found
