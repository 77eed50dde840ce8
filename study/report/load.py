"""Loading a run directory for rendering: the recorded rows and every derived table, typed.

A missing or malformed table is recorded with the reason (its section says so); nothing here
computes a figure: the numbers come from the tables ``study.derive`` wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from study.errors import InputError, first_line
from study.rundata import results as results_io
from study.rundata import rundir as files
from study.rundata.gpu import GPU, for_run
from study.rundata.rundir import RunDir

NOT_IN_RUN = "not in this run"
# what sections read of the ledger table: without it, an empty table with these columns
LEDGER_FIGURES = (
    "impl",
    "gflops",
    "pct_peak",
    "pct_peak_sampled",
    "pct_cublas",
    "cadence",
    "cadence_sampled",
)
RESULTS_REQUIRED = ["experiment", "label", "kernel", "M", "N", "K", "ms"]
# key -> (file in <out>/data/, columns it must have)
TABLES = {
    "ledgers": (files.LEDGERS, ("kernel", "impl", "M", "N", "K", "gflops", "cadence")),
    "model": (files.MODEL, ("method", "p_ldg", "p_dist", "p_bcast")),
    "loo": (files.LOO, ("kernel",)),
    "model_sass": (files.MODEL_SASS, ("kernel", "predicted_cadence")),
    "predictions": (files.PREDICTIONS, ("kernel", "measured")),
    "sass": (files.SASS, ("kernel",)),
    "cvc": (files.COUNTED_VS_COMPILED, ("kernel",)),
    "clocks": (files.CLOCKS, ("kernel", "t_s", "sm_clock_mhz")),
    "price_shift": (files.PRICE_SHIFT, ("price", "change_pct")),
    "twins": (files.TWINS, ("cuda",)),
    "ladder": (files.LADDER, ("kernel", "speedup", "moved")),
    "clock_summary": (files.CLOCK_SUMMARY, ("kernel", "median_mhz", "run_median_mhz")),
    "strides": (files.STRIDES, ("kernel", "ratio")),
    "stride_loads": (files.STRIDE_LOADS, ("kernel", "loads_128", "loads_32")),
    "shapes": (files.SHAPES, ("label", "speedup")),
    "sizes": (files.SIZES, ("n", "footprint_bytes")),
    "size_step": (files.SIZE_STEP, ("kernel", "change")),
    "ncu": (files.NCU, ("kernel", "M", "N", "K", "metric", "value")),
    "counters": (files.COUNTERS, ("kernel", "M", "N", "K", "inst_per_wfma")),
    "seed_ledgers": (files.SEED_LEDGERS, ("kernel", "gflops", "cadence")),
    "seed_model": (files.SEED_MODEL, ("method", "p_ldg", "gpu")),
    "bounds": (files.BOUNDS, ("kernel", "measured_cadence", "predicted_cadence", "bound")),
    "bound_constants": (files.BOUND_CONSTANTS, ("constant", "value")),
    "bound_steps": (files.BOUND_STEPS, ("from", "to", "moved")),
    "bound_findings": (files.BOUND_FINDINGS, ("finding", "value")),
    "bound_travel": (files.BOUND_TRAVEL, ("where", "applied")),
    "model_errors": (files.MODEL_ERRORS, ("method", "kernel", "error_pct")),
}
# every other column of every input is a number: a text cell there becomes NaN and prints as "–"
TEXT_COLUMNS = frozenset(
    {
        "experiment",
        "label",
        "kernel",
        "impl",
        "config",
        "method",
        "kernels",
        "arch",
        "symbol",
        "occupancy_limited_by",
        "error",
        "flag",
        "explanation",
        "metric",
        "unit",
        "ncu_kernel",
        "ncu",
        "role",
        "cuda",
        "tile",
        "unpipelined",
        "pipelined",
        "gluon",
        "first",
        "last",
        "top_stalls",
        "twin",
        "inside_l2",
        "nvcc",
        "price",
        "pair",
        "at_other_shape",
        "idea",
        "moved",
        "specialised",
        "async",
    }
    | {
        "bound",
        "warps_from",
        "exposed",
        "constant",
        "meaning",
        "fitted",
        "from",
        "to",
        "from_bound",
        "to_bound",
        "changed",
        "finding",
        "note",
        "where",
        "applied",
        "why",
        "unit",
    }
    | {"gpu", "cc", "torch", "triton", "cuda", "driver", "commit", "host", "run_id", "timestamp"}
)


@dataclass
class Run:
    out: Path
    results: pd.DataFrame  # every recorded row, failed checks included
    measured: pd.DataFrame  # the ledger table: rows with a time and every figure
    gpu: GPU | None
    gpu_source: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # table key -> why it is absent
    figures: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # name -> (path, why skipped)

    def table(self, key: str) -> pd.DataFrame | None:
        return self.tables.get(key)


def typed(df: pd.DataFrame) -> pd.DataFrame:
    """Kernel ids and labels as text, every column not in TEXT_COLUMNS as numbers."""
    df = df.copy()
    for c in df.columns:
        if c in ("kernel", "label"):
            df[c] = df[c].astype(str)
        elif c not in TEXT_COLUMNS:
            df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def load(out_dir: Path) -> Run:
    rd = RunDir(out_dir)
    res = typed(results_io.read(rd.file(files.RESULTS), required=RESULTS_REQUIRED))
    tables, missing = {}, {}
    for key, (name, required) in TABLES.items():
        path = rd.file(name)
        if not path.is_file():
            missing[key] = f"{name} {NOT_IN_RUN}"
            continue
        try:
            df = results_io.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
            missing[key] = f"{name} is not a readable CSV ({first_line(e)})"
            continue
        lacks = [c for c in required if c not in df.columns]
        if lacks:
            missing[key] = f"{name} lacks column{'s' * (len(lacks) > 1)} {', '.join(lacks)}"
        elif df.empty:
            missing[key] = f"{name} has no rows"
        else:
            tables[key] = typed(df)
    try:
        gpu, source = for_run(rd.file(files.GPU), res)
    except InputError as e:
        gpu, source = None, str(e)
    empty = res.iloc[0:0].assign(
        **{c: pd.Series(dtype=float) for c in LEDGER_FIGURES if c not in res.columns}
    )
    measured = tables.get("ledgers", empty)
    return Run(Path(out_dir), res, measured, gpu, source, tables, missing)
