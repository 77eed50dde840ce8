"""Measuring: check every kernel, then time each (experiment point, kernel), one row on disk per
measurement as it ends. GPU only; the arithmetic over the rows is ``study.derive``'s.
"""

from __future__ import annotations

import json
import math
import sys

from study import experiments
from study.cli import say
from study.errors import InputError, first_line
from study.measure import bench
from study.measure.device import ClockSampler
from study.rundata import results


def key(p, k) -> tuple:
    """The row key (``results.KEY``) of measuring ``k`` at ``p``; the label tells a padded point."""
    shape = experiments.shape_for(k, p)
    return (p.experiment, p.label, k.id, *shape, p.pass_no)


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


def plan(kernels, experiment_names, main_shape, passes: int = experiments.PASSES) -> list:
    """Every (point, kernel) the experiments ask for, in measuring order: pass 1 over every point
    in the experiments' order, then passes 2 .. ``passes`` over the headline points
    (``experiments.repeated``), each in its own kernel order (``experiments.pass_order``). A
    kernel that refuses a point's storage (``experiments.refusal``: the CUDA kernels at the padded
    point) is left out, and :func:`refused` names it."""
    from dataclasses import replace

    points = [p for e in experiment_names for p in experiments.all_points(e, main_shape)]
    todo = [(p, k) for p in points for k in kernels if experiments.refusal(k, p) is None]
    for n in range(2, passes + 1):
        order = experiments.pass_order(kernels, n)
        todo += [(replace(p, pass_no=n), k) for p in points if experiments.repeated(p) for k in order
                 if experiments.refusal(k, p) is None]
    return todo


def refused(kernels, experiment_names, main_shape=(4096, 4096, 4096)) -> list[tuple]:
    """The (point, kernel, why) that :func:`plan` leaves out because the kernel refuses the point's
    storage; the report's stride table shows each in its place ("contiguous operands only")."""
    points = [p for e in experiment_names for p in experiments.all_points(e, main_shape)]
    return [(p, k, why) for p in points for k in kernels if (why := experiments.refusal(k, p))]


def run_plan(todo, measure_fn, rows_file, clocks_file, prov: dict, guard=None) -> None:
    """Measure each (point, kernel) of ``todo``, appending its row the moment it is done.

    ``measure_fn(kernel, shape) -> {"row": ..., "samples": [(t, MHz), ...]}``; ``shape`` is an
    ``experiments.Shape``, whose ``ld`` says the storage (None: contiguous). A (kernel, shape)
    that several experiments share is measured once per pass and recorded under each of them,
    also across a --resume (the rows already in ``rows_file`` count as measured). The memo is keyed
    by (kernel, Shape, pass): a measurement on padded storage is never reused for the contiguous
    shape, nor the other way round, and no pass reuses another's.
    """
    from tqdm import tqdm

    memo = results.measured(rows_file.path)
    bar = tqdm(todo, desc="measuring", unit="run", file=sys.stderr, dynamic_ncols=True)
    for p, k in bar:
        shape = experiments.shape_for(k, p)
        bar.set_postfix_str(f"{p.experiment}:{p.label} {k.id} {shape[0]}x{shape[1]}x{shape[2]}"
                            + ("" if shape.ld is None else f" ld={shape.ld}"))
        memo_key = (k.id, shape, p.pass_no)  # an experiments.Shape: equal only on the same storage
        if memo_key not in memo:
            memo[memo_key] = measure_fn(k, shape)
        m = memo[memo_key]
        row = {
            **m["row"],
            "ld": "" if shape.ld is None else shape.ld,
            "experiment": p.experiment,
            "label": p.label,
            "pass": p.pass_no,
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
                    "pass": p.pass_no,
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


def correctness_sweep(chosen) -> dict[str, str]:
    """Every kernel on small odd shapes against float64 before anything is timed: kernel id -> why
    it failed, for those that did."""
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


def padded_rows(t, ld: int, fill: float = float("nan")):
    """``t`` (2-D) copied into storage whose rows are ``ld`` elements apart: the view
    ``torch.empty(rows, ld)[:, :cols]`` of a buffer whose padding holds ``fill`` (NaN: a kernel
    that reads or writes past a row's end shows in the check)."""
    import torch

    rows, cols = t.shape
    if ld < cols:
        raise InputError(f"ld = {ld} is shorter than a row of {cols} elements")
    buf = torch.full((rows, ld), fill, dtype=t.dtype, device=t.device)
    view = buf[:, :cols]
    view.copy_(t)
    return view


def operands(shape, seed: int, device="cuda"):
    """A, B (random, ``bench.random_inputs``) and a NaN-poisoned C for ``shape`` on its storage:
    contiguous, or padded rows of ``shape.ld`` elements."""
    M, N, K = shape
    a, b = bench.random_inputs(M, N, K, seed, device)
    out = bench.poisoned(M, N, device)
    ld = getattr(shape, "ld", None)
    if ld is not None:
        a, b, out = (padded_rows(t, ld) for t in (a, b, out))
    return a, b, out


def check(launch, shape, seed: int, device="cuda") -> float:
    """``bench.check`` on the storage of ``shape``: the relative error of ``launch(a, b, out)``
    against a float64 product of the same A and B, inf where an output is NaN or inf. On padded
    storage the padding of C must also still hold its NaN poison (inf otherwise: the kernel
    wrote past the end of a row)."""
    ld = getattr(shape, "ld", None)
    if ld is None:
        return bench.check(launch, *shape, seed=seed, device=device)
    import torch

    a, b, out = operands(shape, seed, device)
    launch(a, b, out)
    if device == "cuda":
        torch.cuda.synchronize()
    M, N = out.shape
    padding = out.as_strided((M, ld - N), (ld, 1), out.storage_offset() + N) if ld > N else None
    if padding is not None and not bool(torch.isnan(padding).all()):
        return math.inf
    return bench.relative_error(out, a.double() @ b.double())


# what a launcher raises when it refuses a launch before anything runs on the device; a CUDA error
# (the context may be lost) is not among them and stops the run
REFUSALS = (InputError, ValueError, ImportError)


class Measurer:
    """Checks and times one (kernel, shape): ``measurer(k, shape) -> {"row": ..., "samples": ...}``,
    the row's measured columns (``results.MEASURED``) and the SM clock samples of its timing.

    The kernel is checked first against float64 on its own random inputs (NaN-poisoned output);
    one that fails is not timed and its row has no time. So is one whose launcher refuses the
    operands (``REFUSALS``: a shape or storage it does not take, a library that is missing): its
    row has an infinite error, the reason is one line, and the run goes on. ``flush`` runs before
    every timed repetition (``bench.L2Flush``); ``target_s`` is the timed seconds per measurement;
    ``cc`` the device's compute capability, which names the function a kernel launches
    (``path_for``)."""

    def __init__(self, flush, target_s: float, cc: str | None = None):
        self.flush, self.target_s, self.cc = flush, target_s, cc

    def __call__(self, k, shape) -> dict:
        M, N, K = shape
        ld = getattr(shape, "ld", None)
        launch = k.launcher
        where = f"{M}x{N}x{K}" + ("" if ld is None else f" ld={ld}")
        refused = False
        try:
            rel_err = check(launch, shape, M * 7 + N * 3 + K)
        except REFUSALS as e:
            say(f"{k.id} at {where}: {first_line(e)}; not timed")
            rel_err, refused = math.inf, True
        row = {
            "kernel": k.id, "impl": k.impl, "M": M, "N": N, "K": K, "ld": "" if ld is None else ld,
            "rel_err": rel_err, "ms": "", "p20_ms": "", "p80_ms": "", "reps": "", "sm_clock_mhz": "",
            "clock_samples": 0, "config": "", "symbol": launched_symbol(k, shape, self.cc),
        }
        if not rel_err <= experiments.TOLERANCE:
            if not refused:
                say(f"{k.id} at {where}: relative error {rel_err:.2e} > {experiments.TOLERANCE:.0e}; "
                    "not timed")
            return {"row": row, "samples": []}
        a, b, out = operands(shape, 1 + M + N + K)
        with ClockSampler() as clock:
            t = bench.time_cuda(lambda: launch(a, b, out), self.flush, target_s=self.target_s)
        med_clock = clock.median()
        row.update(
            ms=t.ms, p20_ms=t.p20_ms, p80_ms=t.p80_ms, reps=t.reps,
            sm_clock_mhz=med_clock if med_clock is not None else "", clock_samples=len(clock.samples),
        )
        cfg = k.launch_config(M, N, K)
        row["config"] = json.dumps(cfg, sort_keys=True) if cfg else ""
        return {"row": row, "samples": clock.samples}


def launched_symbol(k, shape, cc: str | None) -> str:
    """The function ``k`` launches at ``shape`` on a device of capability ``cc``: its path's
    symbol; "" for cuBLAS (the library picks)."""
    path = k.path_for(*shape, cc)
    return path.symbol if path is not None else ""


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
