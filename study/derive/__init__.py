"""Derive: the only place where arithmetic over recorded rows happens.

``derive(run_dir)`` reads a run directory's measured inputs (results, GPU constants, SASS,
counters), checks them (``validate``), and writes every derived table that
``study.rundata.tables`` declares: each is its declaration's producer applied to the values of a
:class:`Derivation` its ``inputs`` name (the ledger table, the model's prices, the SASS and
counter rows, the bound model, ...). A live run, a replay and the no-GPU path all end here, so
their tables cannot disagree.
"""

from __future__ import annotations

import importlib
import json
from functools import cached_property

import pandas as pd

from study.cli import say
from study.derive import counters as counters_
from study.derive import currency, ledgers, model, spread, validate
from study.errors import InputError
from study.rundata import results as results_io
from study.rundata import rundir as rd_files
from study.rundata.gpu import GPU, for_run
from study.rundata.rundir import RunDir
from study.rundata.tables import DERIVED, T, Table

# the model's steps, in order; each needs its kernels timed at one common shape
MODEL_STEPS = ("exact calibration", "least-squares fit", "SASS prices", "leave-one-out")
DEFAULT_MAIN_SHAPE = (4096, 4096, 4096)


def read_csv(path) -> pd.DataFrame | None:
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


def sampled_clock(rows: pd.DataFrame) -> float | None:
    """The run's sampled SM clock: the median of the main experiment's sampled clocks (its rows'
    ``sm_clock_mhz``), None where none was sampled."""
    if "sm_clock_mhz" not in rows.columns:
        return None
    main = rows[rows["experiment"].astype(str) == "main"] if "experiment" in rows.columns else rows
    clocks = pd.to_numeric(main["sm_clock_mhz"], errors="coerce")
    return float(clocks[clocks > 0].median()) if clocks.gt(0).any() else None


class Derivation:
    """The values a run's derived tables are computed from, each computed once, on first use.

    The model steps (exact calibration, least squares, SASS prices, leave-one-out) run in order
    when the derivation starts; a step whose kernels were not timed is skipped, and ``skipped``
    says why (with ``require_calibration`` the exact calibration is an InputError instead)."""

    def __init__(self, rd: RunDir, seed: RunDir | None = None, *, require_calibration: bool = False,
                 note: bool = True):
        self.rd, self.seed = rd, seed
        self._values: dict[str, pd.DataFrame | None] = {}
        # a measured file cut short is refused before any table is written, not when first read
        inputs = [rd.file(n) for n in rd_files.MEASURED if n.endswith(".csv")]
        if seed is not None:
            inputs.append(seed.file(rd_files.SEED_TIMES))
        for path in inputs:
            if path.is_file():
                results_io.check_complete(path)
        self.rows = read_results(rd)
        gpu, self.gpu_source = for_run(rd.file(rd_files.GPU), self.rows)
        if not gpu.sampled_sm_clock_mhz:  # derived from the rows, never written into gpu.json
            gpu = gpu.with_sampled_clock(sampled_clock(self.rows))
        self.gpu = gpu
        validate.check_rows(self.rows, gpu, str(rd.file(rd_files.RESULTS)))
        self.times = timed(self.rows, note=note)
        if self.times.empty:
            raise InputError(f"{rd.file(rd_files.RESULTS)}: no row has a time "
                             "(every kernel failed its check)")
        self.skipped: dict[str, list[str]] = {}
        # the ledgers describe each measurement by its median pass; the spread over the passes is
        # the comparisons table's (spread.py)
        raw = ledgers.ledger_table(with_tile_columns(spread.representatives(self.times)), gpu)
        if require_calibration:
            self.exact = model.calibrate_exact(raw)
        else:
            self.exact = self._attempt(MODEL_STEPS[0], lambda: model.calibrate_exact(raw))
        self.lstsq = self._attempt(MODEL_STEPS[1], lambda: model.fit_lstsq(raw))
        self.ledger = model.apply(raw, self.exact) if self.exact is not None else raw
        prices = model.prices_table([p for p in (self.exact, self.lstsq) if p is not None])
        self.sass_fit = None
        if self.sass is not None:
            self.sass_fit = self._attempt(MODEL_STEPS[2], lambda: model.fit_sass(self.ledger, self.sass))
        self.model = model.with_sass(prices, self.sass_fit) if self.sass_fit is not None else prices
        self.seed_loo = self._attempt(MODEL_STEPS[3], lambda: model.leave_one_out(self.ledger))

    def _attempt(self, step: str, fn):
        try:
            return fn()
        except InputError as e:  # the model's one complaint: too few kernels timed for this step
            self.skipped.setdefault(str(e).removeprefix("cannot calibrate: "), []).append(step)
            return None

    # --- the measured inputs ------------------------------------------------------------------
    def _measured(self, t: Table) -> pd.DataFrame | None:
        return read_csv(self.rd.file(t.file))

    @cached_property
    def sass(self) -> pd.DataFrame | None:
        return self._measured(T.sass)

    @cached_property
    def sass_strides(self) -> pd.DataFrame | None:
        return self._measured(T.sass_strides)

    @cached_property
    def clocks(self) -> pd.DataFrame | None:
        return self._measured(T.clocks)

    @cached_property
    def decode(self) -> pd.DataFrame | None:
        """The decode panel's rows (``python -m study.decode``); None in a run without the panel."""
        return self._measured(T.decode)

    @cached_property
    def decode_host(self) -> pd.DataFrame | None:
        """The decode panel's host pass (``study.measure.decode_host``); None where it was not run."""
        return self._measured(T.decode_host)

    @cached_property
    def accuracy(self) -> pd.DataFrame | None:
        """The accuracy ledger's rows (``python -m study.accuracy``); None in a run without them."""
        return self._measured(T.accuracy)

    @cached_property
    def predict_check(self) -> pd.DataFrame | None:
        """``study.predict --check DIR --write``'s rows; None where it was not run on this run."""
        return self._measured(T.predict_check)

    @cached_property
    def _counters_split(self) -> tuple[pd.DataFrame | None, pd.DataFrame]:
        ncu = self._measured(T.ncu)
        ncu = ncu if ncu is not None and {"metric", "value"} <= set(ncu.columns) else None
        return currency.split(ncu, self.times)

    @property
    def ncu(self) -> pd.DataFrame | None:
        """The run's counters that describe its timed rows (read at their commit, with their launch:
        ``currency``), where they have their metric and value columns; None where none do."""
        return self._counters_split[0]

    @cached_property
    def ncu_source(self) -> pd.DataFrame | None:
        """The run's per-instruction counters (``study.profile --source``) that describe its timed
        rows, by the same rule as the counters (``currency``); None where none do."""
        src = self._measured(T.ncu_source)
        if src is None or not {"opcode", "executed"} <= set(src.columns):
            return None
        return currency.split(src, self.times)[0]

    @property
    def stale_counters(self) -> pd.DataFrame:
        """The (kernel, shape)s whose counters were read at another commit or launch, with why."""
        return self._counters_split[1]

    @property
    def prices(self) -> pd.DataFrame:
        return self.model

    @property
    def ledgers(self) -> pd.DataFrame:
        """The ledger table (ledgers.csv): every timed row with its figures, the model applied."""
        return self.ledger

    @property
    def l2_bytes(self) -> int | None:
        return self.gpu.l2_bytes

    @property
    def max_mhz(self) -> float:
        return self.gpu.sm_clock_mhz

    @cached_property
    def main_shape(self) -> tuple[int, int, int]:
        rows = self.rows
        main = rows[rows["experiment"].astype(str) == "main"] if "experiment" in rows else rows
        if not len(main):
            return DEFAULT_MAIN_SHAPE
        r = main.iloc[0]
        return int(r["M"]), int(r["N"]), int(r["K"])

    # --- values several tables share -----------------------------------------------------------
    @cached_property
    def model_sass(self) -> pd.DataFrame | None:
        return self.sass_fit.predictions if self.sass_fit is not None else None

    @cached_property
    def counters(self) -> pd.DataFrame | None:
        return counters_.counters(self.ncu) if self.ncu is not None else None

    @cached_property
    def seed_tables(self) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
        return replay_seed(self.seed)

    @property
    def seed_ledgers(self) -> pd.DataFrame | None:
        return self.seed_tables[0]

    @property
    def seed_model(self) -> pd.DataFrame | None:
        return self.seed_tables[1]

    @cached_property
    def bound(self) -> dict[str, pd.DataFrame | None]:
        """The bound model's tables (``bounds``), loo.csv with the seed's rows ("lstsq") and the
        bound model's, and model_errors.csv beside the seed's methods."""
        from study.derive import bound_tables

        return bound_tables.tables(self.ledger, self.ncu, self.sass, self.gpu, self.seed_loo,
                                   self.seed_ledgers, self.value(T.predictions), self.stale_counters)

    def value(self, t: Table):
        """The table ``t`` of this derivation: its producer applied to its inputs (None where an
        input it needs is absent), or, without a producer, the derivation's value of its name.
        Computed once."""
        if t.name not in self._values:
            self._values[t.name] = self._compute(t)
        return self._values[t.name]

    def _compute(self, t: Table):
        if not t.producer:
            return self.bound[t.name] if t.name in BOUND_TABLES else getattr(self, t.name)
        args = []
        for name in t.inputs:
            v = getattr(self, name.rstrip("?"))
            if v is None and not name.endswith("?"):
                return None
            args.append(v)
        module, fn = t.producer.rsplit(".", 1)
        return getattr(importlib.import_module(f"study.derive.{module}"), fn)(*args)


# the tables the bound model writes together (``Derivation.bound``)
BOUND_TABLES = ("loo", "bounds", "bound_constants", "bound_steps", "bound_findings", "bound_travel",
                "model_errors")


def derive(rd: RunDir, seed: RunDir | None = None, *, require_calibration: bool = False,
           note: bool = True) -> Derivation:
    """Every derived table of ``rd`` (``study.rundata.tables.DERIVED``) from its measured inputs,
    written into ``rd``; a table that cannot be computed from them is removed, never left over
    from another derivation.

    The ledgers are always written. Each model step runs when its kernels were timed, and is
    otherwise skipped with one line saying what it lacked. With ``require_calibration`` (a replay
    the user asked for) times that cannot be calibrated are an InputError, raised before anything
    is written. ``seed`` holds the seed GPU's published times (``rundir.SEED_TIMES``/``SEED_GPU``).
    """
    d = Derivation(rd, seed, require_calibration=require_calibration, note=note)
    for t in DERIVED:
        df = d.value(t)
        if df is None:
            rd.remove(t.file)
        else:
            df.to_csv(rd.file(t.file), index=False)
    for reason, steps in d.skipped.items():
        say(f"model: skipped {', '.join(steps)} ({reason})")
    return d


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
