"""The tidy results table: one CSV row per measurement, appended (and flushed) as it completes.

Every row carries where it came from (GPU, clocks, versions, commit), so a figure can always
be traced back to the run that produced it. An interrupted run keeps every finished row;
``--resume`` skips the rows already there.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import os
import platform
import subprocess
from pathlib import Path

import pandas as pd

from study.errors import InputError
from study.rundata import tables

# the measured columns, then the provenance columns every row carries (study.rundata.tables)
MEASURED = [*tables.RESULTS_MEASURED]
PROVENANCE = [*tables.RESULTS_PROVENANCE]
COLUMNS = MEASURED + PROVENANCE
KEY = ["experiment", "label", "kernel", "M", "N", "K", "pass"]
CLOCK_COLUMNS = [*tables.T.clocks.columns]


def git_commit(root: Path | None = None) -> str:
    """The checkout's commit (``+dirty`` with uncommitted changes to tracked files).

    Where the tree travels without its .git (a copy on a GPU machine), ``SGEMM_COMMIT`` names it.
    """
    if os.environ.get("SGEMM_COMMIT"):
        return os.environ["SGEMM_COMMIT"]
    root = root or Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True,
            text=True, timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not sha:
        return "unknown"
    return sha + ("+dirty" if dirty else "")


def provenance(gpu, run_id: str) -> dict:
    """The columns that say where a row came from."""
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = ""
    driver = ""
    try:
        import pynvml

        pynvml.nvmlInit()
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
    except Exception:  # NVML is optional provenance, never a reason to stop
        pass
    return {
        "gpu": gpu.name, "sms": gpu.sms, "max_sm_clock_mhz": gpu.sm_clock_mhz,
        "mem_clock_mhz": gpu.mem_clock_mhz, "bus_width_bits": gpu.bus_width_bits, "cc": gpu.cc,
        "torch": torch.__version__, "triton": triton_version, "cuda": torch.version.cuda or "",
        "driver": driver, "commit": git_commit(), "host": platform.node(), "board": board(),
        "run_id": run_id,
    }


def board() -> str:
    """The UUID of the CUDA device rows are measured on ("" without one): boards of one GPU model
    differ, and a run resumed on another machine says so row by row."""
    import torch

    try:
        if torch.cuda.is_available():
            return str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
    except Exception:  # optional provenance, like the driver's version
        pass
    return ""


def new_run_id() -> str:
    return _dt.datetime.now().strftime("%Y%m%dT%H%M%S")


class ResultsFile:
    """Append-only CSV: a header once, then one flushed row per completed measurement."""

    def __init__(self, path: Path, columns: list[str] = COLUMNS):
        self.path = Path(path)
        self.columns = columns
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, row: dict) -> None:
        self.append_many([row])

    def append_many(self, rows) -> None:
        """Append ``rows`` (any iterable of dicts) with one open and one fsync for the batch."""
        rows = list(rows)
        if not rows:
            return
        new = not self.path.exists() or self.path.stat().st_size == 0
        columns = self.columns if new else self._columns_for(rows)
        with self.path.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
            if new:
                w.writeheader()
            w.writerows({c: row.get(c, "") for c in columns} for row in rows)
            f.flush()
            os.fsync(f.fileno())


    def _columns_for(self, rows: list[dict]) -> list[str]:
        """The columns of the header already in the file. A file written before a column existed
        (``ld``) keeps its header; a row with a value for a column the file lacks is refused,
        since writing it would lose that value."""
        with self.path.open(newline="") as f:
            header = next(csv.reader(f), [])
        if header == self.columns:
            return self.columns
        lost = sorted({c for row in rows for c in self.columns
                       if c not in header and str(row.get(c, "")).strip() not in ("", "None")})
        if lost:
            raise InputError(f"{self.path}: its header has no column {', '.join(map(repr, lost))}, which "
                             "this row needs; measure into a new run directory")
        return header


def check_complete(path: Path) -> None:
    """InputError (one line) where ``path`` may have been cut short: a CSV that does not end in a
    newline, or whose last row has fewer fields than its header. Every writer of a run's CSVs
    ends each row with a newline, so either is a file stopped mid-row (a killed copy, a full disk),
    whose last number can read as another. An empty file is left to the reader."""
    path = Path(path)
    with path.open("rb") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) != b"\n":
            raise InputError(f"{path}: does not end in a newline: it may be truncated (its last row cut "
                             "short); restore the whole file")
    header = last = None
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as f:
            for row in csv.reader(f):
                if any(cell.strip() for cell in row):  # blank lines are no rows
                    header = row if header is None else header
                    last = row
    except csv.Error:  # not a CSV at all: the reader's own error names it
        return
    if header is not None and last is not header and len(last) < len(header):
        raise InputError(f"{path}: its last row has {len(last)} fields, its header {len(header)}: it may be "
                         "truncated (its last row cut short); restore the whole file")


def read_csv(path: Path) -> pd.DataFrame:
    """A CSV of a run, numbers read back with the digits they were written with (round trip), so
    a table derived twice from the same rows is the same bytes on any machine (pandas' default
    float parser has not always been exact). A file that may have been cut short
    (:func:`check_complete`) is an InputError."""
    import warnings

    check_complete(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # newer pandas deprecates the option its default now equals
        return pd.read_csv(path, float_precision="round_trip")


def read(path: Path, required: list[str] | None = None) -> pd.DataFrame:
    """Read a results CSV; a missing file or column is an InputError naming it."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        df = read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not a readable CSV ({str(e).splitlines()[0]})") from None
    for c in required or []:
        if c not in df.columns:
            raise InputError(f"{path}: missing column {c!r}")
    return df


def done_keys(path: Path) -> set[tuple]:
    """Keys of the rows already in ``path`` (for --resume); empty if there is no file yet."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return set()
    check_complete(path)  # rows appended after a cut-short one would be glued onto it
    df = pd.read_csv(path, dtype={"label": str})
    return {key_of(r) for r in df.to_dict("records")}


def row_ld(row: dict) -> int | None:
    """The leading dimension a row was measured with; None for contiguous operands (an empty
    ``ld``, or a file written before the column existed)."""
    v = row.get("ld", "")
    if v is None or (isinstance(v, float) and v != v) or str(v).strip() in ("", "nan"):
        return None
    return int(float(v))


def measured(path: Path) -> dict[tuple, dict]:
    """(kernel, Shape, pass) -> the measured part of a row already in ``path``, for reuse. The
    shape is an ``experiments.Shape`` carrying the row's ``ld``: equal to the plain (M, N, K) for a
    contiguous row, and never for a padded one."""
    from study.experiments import Shape

    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return {}
    check_complete(path)
    df = pd.read_csv(path, dtype={"label": str, "config": str})
    memo = {}
    for r in df.to_dict("records"):
        shape = Shape(int(r["M"]), int(r["N"]), int(r["K"]), row_ld(r))
        row = {c: ("" if pd.isna(r[c]) else r[c]) for c in MEASURED
               if c in r and c not in ("experiment", "label", "pass")}
        memo[(str(r["kernel"]), shape, row_pass(r))] = {"row": row, "samples": [], "clocks_written": True}
    return memo


def row_pass(row: dict) -> int:
    """The pass a row was measured in; 1 for a row written before runs had passes."""
    v = row.get("pass", "")
    if v is None or (isinstance(v, float) and v != v) or str(v).strip() in ("", "nan"):
        return 1
    return int(float(v))


def key_of(row: dict) -> tuple:
    return (str(row["experiment"]), str(row["label"]), str(row["kernel"]),
            int(row["M"]), int(row["N"]), int(row["K"]), row_pass(row))


def timestamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def timed_configs(rows: pd.DataFrame, shape) -> dict[str, dict]:
    """Kernel id -> the configuration each autotuned kernel was timed with at ``shape`` in a run's
    ``rows`` (its rows on contiguous operands: their ``config``; a cell that is not a JSON object
    is left out)."""
    found = {}
    M, N, K = shape
    at = rows[(rows["M"] == M) & (rows["N"] == N) & (rows["K"] == K)]
    if "ld" in at.columns:  # the shape on its natural strides
        at = at[pd.to_numeric(at["ld"], errors="coerce").isna()]
    for kid, cfg in zip(at.get("kernel", []), at.get("config", [])):
        if isinstance(cfg, str) and cfg.startswith("{"):
            try:
                found[str(kid)] = json.loads(cfg)
            except ValueError:
                continue
    return found
