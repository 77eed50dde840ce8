"""Derive: the only place where arithmetic over recorded rows happens.

``derive(run_dir)`` reads a run directory's measured inputs (results, GPU constants, SASS, counters),
checks them (``validate``), and writes every derived table the report renders: the ledgers, the
model's prices and predictions, leave-one-out, counted vs compiled, twin pairs, the experiments'
tables, the hardware counters, and the seed GPU's replay. A live run, a replay and the no-GPU path
all end here, so their tables cannot disagree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from study.cli import say
from study.derive import counters as counters_
from study.derive import ledgers, model, tables, validate
from study.errors import InputError
from study.rundata import results as results_io
from study.rundata import rundir as rd_files
from study.rundata.gpu import GPU, for_run
from study.rundata.rundir import RunDir

# the model's steps, in order; each needs its kernels timed at one common shape
MODEL_STEPS = ("exact calibration", "least-squares fit", "SASS prices", "leave-one-out")


@dataclass
class Derived:
    gpu: GPU
    gpu_source: str
    ledgers: pd.DataFrame
    model: pd.DataFrame
    skipped: dict[str, list[str]] = field(default_factory=dict)  # why -> model steps skipped


def read_csv(path: Path) -> pd.DataFrame | None:
    """A CSV of the run, None when absent, empty or unreadable (its consumer says so)."""
    if not path.is_file():
        return None
    try:
        df = results_io.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        return None
    return df if len(df) else None


def timed(rows: pd.DataFrame, note: bool = False) -> pd.DataFrame:
    """Rows with a time: a kernel that failed its check has an empty ``ms`` and is left out (with
    one line saying so when ``note``)."""
    blank = rows["ms"].isna() | (rows["ms"].astype(str).str.strip() == "")
    if note and blank.any():
        counts = rows.loc[blank, "kernel"].astype(str).value_counts(sort=False)
        which = ", ".join(f"{k} ({n} row{'s' if n > 1 else ''})" for k, n in counts.items())
        say(
            f"left out {int(blank.sum())} row(s) without a time (a kernel that failed its check "
            f"has none): {which}"
        )
    return rows[~blank].copy()


def with_tile_columns(times: pd.DataFrame) -> pd.DataFrame:
    """BM/BN/BK of the autotune winner (the ``config`` JSON) so its byte ledger has a tile. A
    config that is not a JSON object is ignored: that row has no tile from it."""
    if "config" not in times.columns:
        return times
    times = times.copy()
    cfgs = [config_of(c) for c in times["config"]]
    for dim in ("BM", "BN", "BK"):
        times[dim] = [c.get(dim) for c in cfgs]
    return times


def config_of(text) -> dict:
    if not (isinstance(text, str) and text.startswith("{")):
        return {}
    try:
        cfg = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return cfg if isinstance(cfg, dict) else {}


def read_results(rd: RunDir) -> pd.DataFrame:
    return results_io.read(rd.file(rd_files.RESULTS), required=["kernel", "M", "N", "K", "ms"])


def derive(
    rd: RunDir, seed: RunDir | None = None, *, require_calibration: bool = False, note: bool = True
) -> Derived:
    """Every derived table of ``rd`` from its measured inputs, written into ``rd``.

    The ledgers are always written. Each model step runs when its kernels were timed, and is
    otherwise skipped with one line saying what it lacked. With ``require_calibration`` (a replay
    the user asked for) times that cannot be calibrated are an InputError, raised before anything
    is written. ``seed`` holds the seed GPU's published times (``rundir.SEED_TIMES``/``SEED_GPU``).
    """
    rows = read_results(rd)
    gpu, source = for_run(rd.file(rd_files.GPU), rows)
    validate.check_rows(rows, gpu, str(rd.file(rd_files.RESULTS)))
    times = timed(rows, note=note)
    if times.empty:
        raise InputError(f"{rd.file(rd_files.RESULTS)}: no row has a time (every kernel failed its check)")
    table = ledgers.ledger_table(with_tile_columns(times), gpu)
    skipped: dict[str, list[str]] = {}

    def attempt(step, fn):
        try:
            return fn()
        except InputError as e:  # the model's one complaint: too few kernels timed for this step
            skipped.setdefault(str(e).removeprefix("cannot calibrate: "), []).append(step)
            return None

    exact = (
        model.calibrate_exact(table)
        if require_calibration
        else attempt(MODEL_STEPS[0], lambda: model.calibrate_exact(table))
    )
    lstsq = attempt(MODEL_STEPS[1], lambda: model.fit_lstsq(table))
    mtab = model.prices_table([p for p in (exact, lstsq) if p is not None])
    if exact is not None:
        table = model.apply(table, exact)
    sass_df = read_csv(rd.file(rd_files.SASS))
    sass_fit = None
    if sass_df is not None:
        sass_fit = attempt(MODEL_STEPS[2], lambda: model.fit_sass(table, sass_df))
        if sass_fit is not None:
            mtab = model.with_sass(mtab, sass_fit)
    loo = attempt(MODEL_STEPS[3], lambda: model.leave_one_out(table))

    write = _writer(rd)
    write(rd_files.LEDGERS, table)
    write(rd_files.MODEL, mtab)
    write(rd_files.LOO, loo)  # rewritten below with the bound model's rows appended
    write(rd_files.MODEL_SASS, sass_fit.predictions if sass_fit is not None else None)
    write(rd_files.COUNTED_VS_COMPILED, _counted_vs_compiled(sass_df))
    predictions = tables.predictions(table, mtab, sass_fit.predictions if sass_fit else None)
    write(rd_files.PREDICTIONS, predictions)
    write(rd_files.PRICE_SHIFT, tables.price_shift(mtab))
    write(rd_files.TWINS, tables.twins(table))
    write(rd_files.STRIDES, tables.strides(table))
    widths = read_csv(rd.file(rd_files.SASS_STRIDES))
    write(rd_files.STRIDE_LOADS, tables.stride_loads(widths) if widths is not None else None)
    write(rd_files.SHAPES, tables.shapes(table))
    write(rd_files.SIZES, tables.sizes(table, gpu.l2_bytes))
    write(rd_files.SIZE_STEP, tables.size_step(table, gpu.l2_bytes))
    ncu = read_csv(rd.file(rd_files.NCU))
    has_metrics = ncu is not None and {"metric", "value"} <= set(ncu.columns)
    counters = counters_.counters(ncu) if has_metrics else None
    write(rd_files.COUNTERS, counters)
    write(rd_files.LADDER, counters_.ladder(table, sass_df, counters))
    write(rd_files.CLOCK_SUMMARY, tables.clocks(rows, read_csv(rd.file(rd_files.CLOCKS)), gpu.sm_clock_mhz))
    seed_ledgers, seed_model = replay_seed(seed)
    write(rd_files.SEED_LEDGERS, seed_ledgers)
    write(rd_files.SEED_MODEL, seed_model)
    _write_bounds(write, table, ncu if has_metrics else None, sass_df, gpu, loo, seed_ledgers, predictions)
    for reason, steps in skipped.items():
        say(f"model: skipped {', '.join(steps)} ({reason})")
    return Derived(gpu, source, table, mtab, skipped)


def _write_bounds(write, table, ncu, sass_df, gpu, loo, seed_ledgers, predictions) -> None:
    """The bound model (``bounds``): its tables, model_errors.csv beside the seed's methods, and
    loo.csv with a ``method`` column (the seed's rows "lstsq") and the bound model's rows appended.
    ``ncu``: the run's counters with their metric and value columns, or None."""
    from study.derive import bound_tables, bounds

    bm = bounds.run(table, ncu, sass_df, gpu) if ncu is not None else None
    seed_loo = None if loo is None else loo.assign(method="lstsq", error_pct=loo["model_error_pct"])
    seed_rows = bound_tables.seed_rows(table, predictions)
    if bm is None:
        write(rd_files.LOO, seed_loo)
        for name in (rd_files.BOUNDS, rd_files.BOUND_CONSTANTS, rd_files.BOUND_STEPS):
            write(name, None)
        why = bounds.why_not(table, ncu, sass_df, gpu)
        write(rd_files.BOUND_FINDINGS, bound_tables.not_fitted(why))
        write(rd_files.MODEL_ERRORS, seed_rows if len(seed_rows) else None)
        inp = bounds.inputs(table, None, None, bounds.machine(gpu))
        write(rd_files.BOUND_TRAVEL, bound_tables.travel(table, inp, seed_ledgers))
        return
    errors = bound_tables.model_errors(bm.predictions, bm.constants, seed_rows)
    write(rd_files.LOO, pd.concat([x for x in (seed_loo, bm.loo) if x is not None], ignore_index=True))
    write(rd_files.BOUNDS, bm.predictions)
    write(rd_files.BOUND_CONSTANTS, bound_tables.constants_table(bm.constants, bounds.machine(gpu)))
    write(rd_files.BOUND_STEPS, bound_tables.steps(bm.predictions, bm.constants.shape))
    write(rd_files.BOUND_FINDINGS, bound_tables.findings(bm.predictions, bm.constants, bm.loo, errors))
    write(rd_files.BOUND_TRAVEL, bound_tables.travel(table, bm.inputs, seed_ledgers, bm.left_out))
    write(rd_files.MODEL_ERRORS, errors)


def _writer(rd: RunDir):
    def write(name: str, df: pd.DataFrame | None) -> None:
        if df is None:
            rd.remove(name)  # not from another derivation's inputs
        else:
            df.to_csv(rd.file(name), index=False)

    return write


def _counted_vs_compiled(sass_df: pd.DataFrame | None) -> pd.DataFrame | None:
    if sass_df is None or "kernel" not in sass_df.columns:
        return None
    from study.derive import compiled

    return compiled.counted_vs_compiled(sass_df)


def replay_seed(seed: RunDir | None) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """The seed GPU's published times through the same ledgers and exact calibration: its ledger
    table (model applied) and its prices. (None, None) when the seed files are not there."""
    if seed is None:
        return None, None
    times_path, gpu_path = seed.file(rd_files.SEED_TIMES), seed.file(rd_files.SEED_GPU)
    if not (times_path.is_file() and gpu_path.is_file()):
        return None, None
    sg = GPU.from_json(gpu_path)
    times = results_io.read(times_path, required=["kernel", "M", "N", "K", "ms"])
    validate.check_rows(times, sg, str(times_path))
    times = times.assign(experiment="main", label="main")
    table = ledgers.ledger_table(times, sg)
    prices = model.calibrate_exact(table)
    table = model.apply(table, prices)
    about = {"gpu": sg.name, "sms": sg.sms, "sm_clock_mhz": sg.sm_clock_mhz, "dram_gbps": sg.dram_gbps()}
    return table, model.prices_table([prices]).assign(**about)
