"""``python -m study.predict --fit DIR``: the constants of :mod:`study.predict.issue` that the SASS
does not state, fitted once for DIR's GPU on a declared set of kernels, with leave-one-kernel-out.

* The set: every kernel ``--check`` predicts (:func:`study.predict.check.predictable`) that DIR
  timed at 4096³ on contiguous operands, less those in :data:`LEFT_OUT`, each for the reason
  given there.
* The fields: those in :data:`GRID`, each over the values listed; every other field keeps its
  anchor (:data:`study.predict.issue.DEFAULT`). Moved one at a time from the anchors on the
  H200 run's set, ldg_latency moved the set's error most, barrier_latency and mio_queue next,
  lds_latency less than either; the shared-memory unit's rate is the one the lanes' wavefronts
  were checked against ncu's with, and bank_cycles 0 or 2 fit the set worse than 1. The fields in
  :data:`FIXED` take the values every fit that searched them chose (the instruction cache played,
  icache_lines 256; its geometry is not searched), and the register banks' rule is searched with
  the banks' count.
* Before the grid, where DIR has a decode panel: the launch's fixed cost and the DRAM stream's
  rate (:func:`stream_fit`, on the vendor's GEMV, which no candidate changes), which every
  candidate then takes.
* The objective: the mean of |log(predicted / measured)| over the set at 4096³, so that a
  kernel 10% fast and one 10% slow weigh alike whatever their times.
* The search: every candidate of the grid (the product of the fields' values, the anchors'
  values first) played once per kernel of the set, each kernel's loop and launch compiled and
  extracted once (a candidate re-runs only the simulation): a table kernel x candidate of
  predicted times. The fit is the candidate of least objective (ties: the first in grid order);
  each leave-one-out fit is the same over the set less one kernel, read from the same table,
  and predicts the kernel left out.

The measured times (the median of DIR's rows) are what the fit minimises against; the ncu issue
rates (DIR's ``ncu.csv``, where it has them) are only set beside the predicted ones.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from study import cli, kernels
from study.errors import InputError
from study.predict import check, issue, model
from study.toolchain import sass

MAIN = check.MAIN

# the fields searched and their values, the anchor's first: 96 candidates, each a simulation of
# the whole set; lg_queue moves only the kernels whose global loads hold the L1 (their lines known);
# banks and bank_rule together name which register reads conflict (sass.bank_conflicts_each):
# each count of banks with each rule, the anchors' (single registers, every source slot) and the
# one the H200's bank probe follows best (register pairs, the accumulator's slot left out;
# docs/notes/predict.md)
GRID: dict[str, tuple] = {
    "ldg_latency": (600, 800, 1000),
    "mio_queue": (8, 16),
    "lg_queue": (8, 16),
    "barrier_latency": (20, 60),
    "banks": (4, 2),
    "bank_rule": ("mod-extra", "pair-extra-ab"),
}
# fields every candidate takes, outside the grid: the values every fit that searched them chose
# (the instruction cache played; the mbarrier test's latency, which moves only the kernels whose
# loop tests one), kept out of the grid to halve it
FIXED: dict[str, object] = {"icache_lines": 256, "mbar_latency": 500}

# kernels --check predicts that the fit leaves out, and why
LEFT_OUT = {
    "K1": "its loop waits on the L1's global lines (lg_throttle), priced by the lanes, which the "
          "fitted fields barely move; its simulation is a fifth of the fit's time",
    "T1": "Triton 3.9 here gives its A loads other addresses than the SASS the run timed "
          "(ncu's sectors), so the loop played is not the one timed",
}

ISSUE_NCU = "ncu_issue_pct"


def stream_fit(decode) -> dict | None:
    """The launch's fixed cost and the DRAM stream's rate, {"launch_us", "stream_gbps", "points"}:
    time = launch_us + bytes / stream_gbps, least squares over the decode panel's (``decode``, a
    run's ``decode.csv``) shapes at M = 1, each timed by the faster of the registry's cuBLAS
    kernels there (a GEMV that streams A, B and C once; no kernel the model predicts); None where
    the panel has fewer than two sizes."""
    vendor = {k.id for k in kernels.by_impl("cublas")}
    d = decode[(decode["status"].astype(str).str.strip() == "ok") & decode["kernel"].astype(str).isin(vendor)]
    d = d.assign(M=pd.to_numeric(d["M"], errors="coerce"), us=pd.to_numeric(d["gpu_us"], errors="coerce"))
    d = d[d["M"] == 1].dropna(subset=["us"])
    best = d.groupby(["N", "K", "kernel"])["us"].median().groupby(level=["N", "K"]).min()
    if best.empty:
        return None
    nbytes = np.array([4.0 * (k + k * n + n) for n, k in best.index])
    if len(set(nbytes)) < 2:
        return None
    (launch, per_byte), *_ = np.linalg.lstsq(np.vstack([np.ones(len(nbytes)), nbytes]).T, best.to_numpy(),
                                             rcond=None)
    return {"launch_us": round(float(launch), 1), "stream_gbps": round(1e-3 / float(per_byte)),
            "points": len(nbytes)}


def candidates(grid: dict[str, Sequence] | None = None,
               base: issue.Constants = issue.DEFAULT) -> list[issue.Constants]:
    """The product of the fields' values (``grid``, default :data:`GRID`), the other fields at
    ``base``'s, in grid order."""
    grid = GRID if grid is None else grid
    names = list(grid)
    return [dataclasses.replace(base, **dict(zip(names, vals))) for vals in itertools.product(*grid.values())]


def _anchors(c: issue.Constants) -> bool:
    """Whether ``c`` holds the anchors in every field the grid searches."""
    return all(getattr(c, f) == getattr(issue.DEFAULT, f) for f in GRID)


def log_errors(predicted: np.ndarray, measured: Sequence[float]) -> np.ndarray:
    """log(predicted / measured) per kernel (rows) and candidate (columns)."""
    return np.log(np.asarray(predicted, float) / np.asarray(measured, float)[:, None])


def best(logs: np.ndarray, rows: Sequence[int]) -> int:
    """The candidate (column of ``logs``) of least mean |log error| over ``rows``; ties: the first."""
    return int(np.argmin(np.abs(logs[list(rows)]).mean(axis=0)))


def leave_one_out(kids: Sequence[str], fit_on: Callable[[list[str]], int]) -> dict[str, int]:
    """For each kernel, what ``fit_on`` gives for the set less that kernel."""
    return {k: fit_on([o for o in kids if o != k]) for k in kids}


def fit_table(logs: np.ndarray, kids: Sequence[str]) -> tuple[int, dict[str, int]]:
    """(the in-sample fit, each kernel's leave-one-out fit), as columns of ``logs`` (rows in the
    order of ``kids``)."""
    row = {k: i for i, k in enumerate(kids)}
    return best(logs, range(len(kids))), leave_one_out(kids, lambda ks: best(logs, [row[k] for k in ks]))


def pct(ratio: float) -> float:
    return 100 * (ratio - 1)


class _Decoded(sass.Instr):
    """An instruction whose scheduling word, base opcode and width are decoded once: the
    simulation reads them on every cycle, and the fit plays each loop once per candidate."""

    control = functools.cached_property(sass.Instr.control.fget)
    base = functools.cached_property(sass.Instr.base.fget)
    width = functools.cached_property(sass.Instr.width.fget)


def decoded(body: Sequence[sass.Instr]) -> list[sass.Instr]:
    return [_Decoded(i.addr, i.opcode, i.operands, i.pred, i.words) for i in body]


def ncu_issue(run) -> dict[str, float]:
    """Each kernel's issue rate at 4096³ from the run's latest ncu profile of it, where it has one."""
    from study.derive.counters import counters

    if not run.has("ncu.csv"):
        return {}
    c = counters(pd.read_csv(run.file("ncu.csv")))
    c = c[(c["M"] == MAIN[0]) & (c["N"] == MAIN[1]) & (c["K"] == MAIN[2])]
    return {str(r.kernel): float(r.issue_pct) for r in c.itertuples() if math.isfinite(r.issue_pct)}


def run_dir(root: str, arch: str, as_json: bool, load: Callable) -> int:
    """``--fit DIR``: the fit on the run directory ``root``; ``load(kid, shape, arch, child, config)``
    gives a kernel's ((loop body, L1 cycles), launch, configuration) as ``--kernel`` compiles it (an
    autotuned one at the configuration the run timed)."""
    run, gpu, timed, configs, commits = read_run(root)
    loaded, failed = compile_all(timed, arch, functools.partial(load, sms=gpu.sms), configs)
    stream = stream_fit(pd.read_csv(run.file("decode.csv"))) if run.has("decode.csv") else None
    # every candidate takes the launch and the stream as the panel gives them
    base = dataclasses.replace(issue.DEFAULT, **FIXED)
    cands = candidates(base=base if stream is None else dataclasses.replace(
        base, launch_us=stream["launch_us"], stream_gbps=float(stream["stream_gbps"])))
    loops: dict = {}

    def predict(kid: str, c: issue.Constants) -> dict:
        body, cycles, launch = loaded[kid]
        return model.predict(body, launch, MAIN, gpu, arch, c=c, l1_cycles=cycles, loops=loops)

    done = [0]

    def progress(j: int, start: float) -> None:
        done[0] += 1
        fields = ", ".join(f"{f} {getattr(cands[j], f)}" for f in GRID)
        cli.say(f"candidate {done[0]}/{len(cands)} ({fields}): {time.monotonic() - start:.0f} s in")

    # the first candidate also finds the kernels whose SASS has no loop to play
    start, fitted_on, first = time.monotonic(), [], []
    for kid in timed:
        if kid in loaded and kid not in LEFT_OUT:
            try:
                first.append(predict(kid, cands[0])["ms"])
            except ValueError as e:
                failed[kid] = str(e)
                continue
            fitted_on.append(kid)
    if len(fitted_on) < len(GRID) + 2:
        raise InputError(f"--fit {root}: {len(fitted_on)} kernels of the declared set predicted at "
                         f"{'x'.join(map(str, MAIN))}; the fit needs at least {len(GRID) + 2}")
    progress(0, start)
    table = np.empty((len(fitted_on), len(cands)))
    table[:, 0] = first
    for j, column in columns(lambda j: [predict(kid, cands[j])["ms"] for kid in fitted_on], len(cands)):
        table[:, j] = column
        progress(j, start)
    logs = log_errors(table, [timed[k] for k in fitted_on])
    chosen, loo = fit_table(logs, fitted_on)
    c = cands[chosen]
    objective = np.abs(logs).mean(axis=0)
    header = {"fit": "constants", "gpu": gpu.name, "run": commits, "shape": list(MAIN),
              "kernels": fitted_on, "left_out": {k: LEFT_OUT[k] for k in timed if k in LEFT_OUT},
              "not_predicted": failed, "grid": {f: list(v) for f, v in GRID.items()}, "fixed": FIXED,
              "candidates": len(cands), "stream": stream, "constants": c.as_dict(),
              "objective": float(objective[chosen]),
              "objectives": [{**{f: getattr(k, f) for f in GRID}, "objective": float(v)}
                             for k, v in zip(cands, objective)],
              "anchors_objective": float(objective[0]) if _anchors(cands[0]) else None,
              "on_edge": [f for f, v in GRID.items() if getattr(c, f) in (v[0], v[-1])]}

    ncu = ncu_issue(run)
    rows = []
    for i, kid in enumerate(fitted_on):
        j = loo[kid]
        rows.append({**row(kid, predict(kid, c), timed[kid], ncu.get(kid), True),
                     "loo_ms": float(table[i, j]), "loo_error_pct": pct(table[i, j] / timed[kid]),
                     "loo_constants": {f: getattr(cands[j], f) for f in GRID},
                     "anchors_error_pct": pct(table[i, 0] / timed[kid])})
    for kid in timed:
        if kid in LEFT_OUT and kid in loaded:
            cli.say(f"predicting {kid} (left out of the fit) with the fitted constants")
            try:
                rows.append(row(kid, predict(kid, c), timed[kid], ncu.get(kid), False))
            except ValueError as e:
                failed[kid] = str(e)
    summary = fit_summary(rows, header["anchors_objective"] is not None)
    if as_json:
        for r in [header, *rows, summary]:
            print(json.dumps(r, sort_keys=True), flush=True)
    else:
        for text in header_lines(header) + table_lines(rows) + summary_lines(summary):
            print(text, flush=True)
    emit = check.emitter(as_json)
    for r in check.summary(rows):  # the ladder's steps and the twins' ratios, as --check gives them
        emit(r)
    return 0


_COLUMN: list = []  # the function columns() computes, for the processes it forks


def _column(j: int) -> tuple[int, list]:
    return j, _COLUMN[0](j)


def columns(column: Callable[[int], list], n: int, workers: int | None = None):
    """``(j, column(j))`` for j in 1 .. n - 1, as they come: in processes forked from this one
    (they inherit what ``column`` reads; each keeps its own cache of played loops), one per CPU
    (``workers``), where the platform forks and there is more than one; else here, in order."""
    workers = workers or os.cpu_count() or 1
    if workers < 2 or n < 3 or "fork" not in multiprocessing.get_all_start_methods():
        yield from ((j, column(j)) for j in range(1, n))
        return
    _COLUMN[:] = [column]
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, n - 1)) as pool:
            yield from pool.imap_unordered(_column, range(1, n))
    finally:
        _COLUMN.clear()


def read_run(root: str):
    """(the run directory, its GPU, the median ms at 4096³ of each kernel ``--check`` predicts in
    the registry's order, the configuration each autotuned one was timed at, the commits of the
    declared set's rows)."""
    from study.rundata import results
    from study.rundata.gpu import GPU
    from study.rundata.rundir import RunDir

    run = RunDir(Path(root))
    if not run.has("results.csv"):
        raise InputError(f"--fit {root}: no data/results.csv there (not a run directory)")
    if not run.has("gpu.json"):
        raise InputError(f"--fit {root}: no data/gpu.json there (the fit is for the GPU it names)")
    gpu = GPU.from_json(run.file("gpu.json"))
    rows = results.read(run.file("results.csv"))
    times = check.measured_times(rows)
    at = times[(times["M"] == MAIN[0]) & (times["N"] == MAIN[1]) & (times["K"] == MAIN[2])]
    ms = {str(k): float(v) for k, v in zip(at["kernel"], at["ms"])}
    timed = {k: ms[k] for k in kernels.BY_ID if k in ms and check.predictable(k)}
    configs = {k: c for k, c in results.timed_configs(rows, MAIN).items() if k in timed}
    declared = [k for k in timed if k not in LEFT_OUT]
    if len(declared) < len(GRID) + 2:
        raise InputError(f"--fit {root}: {len(declared)} kernels of the declared set timed at "
                         f"{'x'.join(map(str, MAIN))}; the fit needs at least {len(GRID) + 2}")
    commits = sorted({str(c) for c in rows.loc[rows["kernel"].astype(str).isin(declared), "commit"].dropna()}
                     if "commit" in rows.columns else set())
    return run, gpu, timed, configs, commits


def compile_all(kids, arch: str, load: Callable, configs: dict | None = None) -> tuple[dict, dict]:
    """({kernel: (its loop body decoded, L1 cycles, launch)}, {kernel: why it did not compile}),
    each compiled once at 4096³ (an autotuned one at its configuration in ``configs``)."""
    from study.toolchain.triton_child import TritonChild

    loaded, failed = {}, {}
    with TritonChild() as child:
        for n, kid in enumerate(kids, 1):
            cli.say(f"compiling {kid} ({n}/{len(kids)})")
            try:
                (body, cycles), launch, _ = load(kid, MAIN, arch, child, (configs or {}).get(kid))
            except InputError as e:
                failed[kid] = str(e)
                continue
            loaded[kid] = (decoded(body), cycles, launch)
    return loaded, failed


def row(kid: str, p: dict, measured_ms: float, ncu_pct: float | None, in_set: bool) -> dict:
    """One kernel's line at 4096³: ``p`` (:func:`study.predict.model.predict`) beside the run's time
    and ncu's issue rate."""
    return {"kernel": kid, "shape": list(MAIN), "in_set": in_set, "measured_ms": measured_ms, "ms": p["ms"],
            "error_pct": pct(p["ms"] / measured_ms), "issue_pct": p["issue_pct"], ISSUE_NCU: ncu_pct,
            "bound": p["bound"]}


def fit_summary(rows: list[dict], anchors: bool) -> dict:
    """Over the kernels of the set: mean and largest |error| in sample and left out, the kernels
    outside ±10% each way; with the anchors' mean where the grid holds them."""
    ins = [r for r in rows if r.get("in_set")]

    def stats(key: str) -> dict:
        errs = [abs(r[key]) for r in ins]
        worst = max(ins, key=lambda r: abs(r[key]))
        return {"mean_abs_error_pct": sum(errs) / len(errs), "max_abs_error_pct": max(errs),
                "worst": worst["kernel"], "outside_10": [r["kernel"] for r in ins if abs(r[key]) > 10]}

    out = {"summary": "fit", "kernels": len(ins), "in_sample": stats("error_pct"),
           "leave_one_out": stats("loo_error_pct")}
    if anchors:
        out["anchors"] = stats("anchors_error_pct")
    return out


def header_lines(h: dict) -> list[str]:
    fields = ", ".join(f"{f} {h['constants'][f]}" for f in GRID)
    run = ", ".join(h["run"]) or "unknown"
    lines = [f"fitted for {h['gpu']} on the run of {run} at {'x'.join(map(str, h['shape']))}, "
             f"{len(h['kernels'])} kernels, {h['candidates']} candidates: {fields}",
             "constants: " + ", ".join(f"{k} {v}" for k, v in h["constants"].items()),
             "the set: " + " ".join(h["kernels"]),
             ("launch and stream: none (the run has no decode panel)" if not h["stream"] else
              f"launch and stream, from the vendor's GEMV at M = 1 on {h['stream']['points']} shapes of the "
              f"decode panel: {h['stream']['launch_us']} µs + bytes at {h['stream']['stream_gbps']} GB/s"),
             f"mean |log(predicted / measured)| over the set: {h['objective']:.4f}"
             + ("" if h["anchors_objective"] is None else f" (the anchors: {h['anchors_objective']:.4f})")]
    lines += ["candidate " + ", ".join(f"{f} {o[f]}" for f in GRID) + f": {o['objective']:.4f}"
              for o in h["objectives"]]
    lines += [f"left out: {k}: {why}" for k, why in h["left_out"].items()]
    lines += [f"not predicted: {k}: {why}" for k, why in h["not_predicted"].items()]
    if h["on_edge"]:
        lines.append("on the grid's edge: " + ", ".join(h["on_edge"]))
    return lines


def table_lines(rows: list[dict]) -> list[str]:
    def num(v, fmt):
        return "-" if v is None else format(v, fmt)

    lines = [f"{'kernel':8s} {'measured ms':>11s} {'predicted ms':>12s} {'error':>7s} {'LOO error':>9s} "
             f"{'issue %':>7s} {'ncu issue %':>11s}  bound"]
    for r in rows:
        name = r["kernel"] + ("" if r["in_set"] else "*")
        loo = f"{r['loo_error_pct']:+.1f}%" if r["in_set"] else "-"
        lines.append(f"{name:8s} {r['measured_ms']:11.3f} {r['ms']:12.3f} {r['error_pct']:+6.1f}% {loo:>9s} "
                     f"{r['issue_pct']:7.1f} {num(r.get(ISSUE_NCU), '11.2f'):>11s}  {r['bound']}")
    if any(not r["in_set"] for r in rows):
        lines.append("* left out of the fit, predicted with the fitted constants")
    return lines


def summary_lines(s: dict) -> list[str]:
    def one(name: str, d: dict) -> str:
        out = ", ".join(d["outside_10"]) or "none"
        return (f"{name}: mean |error| {d['mean_abs_error_pct']:.1f}%, largest {d['max_abs_error_pct']:.1f}% "
                f"({d['worst']}); outside ±10%: {out}")

    lines = [one(f"in sample ({s['kernels']} kernels)", s["in_sample"]),
             one("leave one out", s["leave_one_out"])]
    if "anchors" in s:
        lines.append(one("the anchors (DEFAULT)", s["anchors"]))
    return lines
