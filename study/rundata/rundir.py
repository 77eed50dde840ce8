"""A run directory: every file of one run named once, and the rules that keep it whole.

Layout (``DIR`` is what ``--out`` names)::

    DIR/REPORT.md            the rendered report
    DIR/figures/*.png        its figures
    DIR/data/                the run: what was measured, then what was derived from it
    DIR/local/               SASS compiled on a machine other than the run's (never mixed in)

The contract, enforced by :meth:`RunDir.claim_measurement` and :meth:`RunDir.claim_copy` before
anything is written:

* a directory holds one GPU's run, and ``data/gpu.json`` says which;
* measured rows (``results.csv``, ``clocks.csv``, ``ncu.csv``, ``sweep.csv``, ``decode.csv``,
  ``decode_host.csv``) are only ever appended: no command replaces or drops them;
* a measurement into a directory that holds rows continues that run only with ``--resume`` and
  only on the same GPU;
* a replay, or a copy of a recorded run, goes into a directory that does not exist or is empty,
  or a run directory that holds exactly the same measured inputs (it then re-derives): anything
  else (another run, a file that is no part of a run directory) is refused and the directory is
  left as it was.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from study.errors import InputError
from study.rundata import tables

# every file is declared in study.rundata.tables; these names are the measured ones the tools
# write and read by name
RESULTS, CLOCKS, GPU, SASS, SASS_STRIDES, NCU, NCU_SOURCE, SWEEP, SWEEP_CUDA = (
    tables.get(n).file
    for n in ("results", "clocks", "gpu", "sass", "sass_strides", "ncu", "ncu_source", "sweep", "sweep_cuda")
)
MEASURED = tuple(t.file for t in tables.MEASURED)
APPEND_ONLY = tuple(t.file for t in tables.MEASURED if t.append_only)
DERIVED = tuple(t.file for t in tables.DERIVED)

REPORT = "REPORT.md"
FIGURES = "figures"
LOCAL = "local"

_READ_ONLY = "no permission to write, or a read-only file system"

# the seed GPU's published times and constants, kept beside the reference run
SEED_TIMES, SEED_GPU = (t.file for t in tables.SEED)


@dataclass(frozen=True)
class RunDir:
    root: Path

    def __post_init__(self):
        object.__setattr__(self, "root", Path(self.root))

    # --- paths -----------------------------------------------------------------------------------
    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def figures(self) -> Path:
        return self.root / FIGURES

    @property
    def report(self) -> Path:
        return self.root / REPORT

    @property
    def local(self) -> Path:
        return self.root / LOCAL

    def file(self, name: str | tables.Table) -> Path:
        """``data/<file>`` of a table declared in ``study.rundata.tables`` (the declaration or its
        file name)."""
        name = name.file if isinstance(name, tables.Table) else name
        if name not in tables.BY_FILE:
            raise ValueError(f"{name!r} is not a file of a run directory")
        return self.data / name

    def has(self, name: str) -> bool:
        p = self.file(name)
        return p.is_file() and p.stat().st_size > 0

    # --- what the directory holds ------------------------------------------------------------------
    def holds_rows(self) -> bool:
        """True when ``results.csv`` has at least one row below its header."""
        if not self.has(RESULTS):
            return False
        with self.file(RESULTS).open("rb") as f:
            return sum(1 for line in f if line.strip()) > 1

    def gpu_identity(self) -> str | None:
        """The GPU this directory's run belongs to, as ``name (cc X, N SMs)``; None if no run."""
        if self.has(GPU):
            try:
                g = json.loads(self.file(GPU).read_text())
                return identity(g.get("name"), g.get("cc"), g.get("sms"))
            except (ValueError, OSError, AttributeError):
                return "an unreadable gpu.json"
        if self.holds_rows():  # an interrupted run that predates gpu.json: its rows say
            import pandas as pd

            try:
                r = pd.read_csv(self.file(RESULTS), nrows=1).iloc[0]
                return identity(r.get("gpu"), r.get("cc"), r.get("sms"))
            except Exception:  # a row this old or this damaged names no GPU
                return "an unknown GPU"
        return None

    # --- the contract ------------------------------------------------------------------------------
    def claim_measurement(self, gpu_id: str, resume: bool) -> None:
        """May a measurement on ``gpu_id`` write here? InputError (one line) if not."""
        if not self.holds_rows():
            return
        held = self.gpu_identity()
        if held != gpu_id:
            raise InputError(
                f"--out {self.root} holds a run measured on {held}; this GPU is {gpu_id}: "
                "choose another --out (a directory holds one GPU's run)"
            )
        if not resume:
            raise InputError(
                f"--out {self.root} already holds measured rows of this GPU: add --resume to continue "
                "that run, or choose another --out (measured rows are never replaced)"
            )

    def claim_copy(self, files: dict[str, bytes], what: str) -> None:
        """May ``files`` (name -> content) be written here as ``what``? Only into a directory that
        does not exist or is empty, or a run directory holding exactly these measured inputs (then
        it re-derives): InputError (one line) for anything else, before anything is written."""
        if not self.root.is_dir():
            return
        if self.data.exists() and not self.data.is_dir():
            raise InputError(f"--out {self.root}: cannot create {self.data} (a file of that name is there)")
        hint = f"{what} goes into an empty directory or one holding the same inputs: choose another --out"
        try:
            present = [n for n in MEASURED if self.has(n)]
            if present:
                same = all(self.has(n) and self.file(n).read_bytes() == b for n, b in files.items())
                if not (same and set(present) <= set(files)):
                    held = self.gpu_identity() or "another run"
                    raise InputError(f"--out {self.root} holds a different run ({held}); {hint}")
            stray = self.stray()
            if stray:
                top = set(stray) & set(tables.BY_FILE)
                where = " at its top level (a run directory keeps them in data/)" if top else ""
                raise InputError(f"--out {self.root} holds {_some(stray)}{where}, no part of a run "
                                 f"directory; {hint}")
            held = [] if present else [str(p.relative_to(self.root)) for p in sorted(self.root.rglob("*"))
                                       if p.is_file()]
        except OSError as e:
            raise InputError(f"--out {self.root}: cannot read it ({e.strerror or e})") from None
        if held:  # a report or derived tables, but not the inputs they came from
            raise InputError(f"--out {self.root} holds {_some(held)} but no run's measured inputs; {hint}")

    def stray(self) -> list[str]:
        """What this directory holds that no command writes into a run directory: anything at its
        top level but data/, figures/, local/ and REPORT.md, and any file in data/ that is not a
        table of ``study.rundata.tables`` (as paths relative to the directory)."""
        layout = {"data": True, FIGURES: True, LOCAL: True, REPORT: False}  # name -> is a folder
        out = sorted(p.name for p in self.root.iterdir()
                     if p.name not in layout or p.is_dir() != layout[p.name])
        if self.data.is_dir():
            out += sorted(f"data/{p.name}" for p in self.data.iterdir()
                          if p.name not in tables.BY_FILE or not p.is_file())
        return out

    # --- writing -----------------------------------------------------------------------------------
    def check_writable(self, where: str | None = None) -> None:
        """InputError (one line, ``where`` first: default ``--out DIR``) unless every place a run,
        its derivation and its report write here can be written: the directory (or, where it does
        not exist yet, the nearest folder above it), data/, figures/, local/ and the files in them
        that are rewritten. Checked before anything is written, so a refusal leaves it as it was."""
        where = where or f"--out {self.root}"
        if not self.root.exists():
            above = next((p for p in self.root.absolute().parents if p.exists()), None)
            if above is not None and not os.access(above, os.W_OK | os.X_OK):
                raise InputError(f"{where}: cannot create {self.data}: {above} is not writable")
            return
        rewritten = [self.report, *(self.data / n for n in DERIVED)]
        for folder in (self.root, self.data, self.figures, self.local):
            if folder.is_dir():
                if not os.access(folder, os.W_OK | os.X_OK):
                    raise InputError(f"{where}: cannot write {folder} ({_READ_ONLY})")
                if folder in (self.figures, self.local):
                    rewritten += [p for p in folder.iterdir() if p.is_file()]
        for path in rewritten:
            if path.is_file() and not os.access(path, os.W_OK):
                raise InputError(f"{where}: cannot write {path} ({_READ_ONLY})")

    def create(self) -> None:
        self.check_writable()
        try:
            self.data.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(f"--out {self.root}: cannot create {self.data} ({e.strerror or e})") from None
        if not os.access(self.data, os.W_OK | os.X_OK):
            raise InputError(f"--out {self.root}: cannot write {self.data} ({_READ_ONLY})")

    def write_inputs(self, files: dict[str, bytes]) -> None:
        """Write measured inputs copied from elsewhere (after :meth:`claim_copy`)."""
        self.create()
        for name, content in files.items():
            path = self.file(name)
            if not (path.is_file() and path.read_bytes() == content):
                path.write_bytes(content)

    def remove(self, name: str | tables.Table) -> None:
        """Remove a derived table that this derivation could not compute (never a measured one)."""
        name = name.file if isinstance(name, tables.Table) else name
        if name not in DERIVED:
            raise ValueError(f"{name} is measured: it is never removed")
        self.file(name).unlink(missing_ok=True)


def _some(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def identity(name, cc, sms) -> str:
    def clean(v):
        s = str(v).strip() if v is not None else ""
        return "" if s in ("", "nan", "None") else s

    try:
        cc_text = f"{float(cc):.1f}" if clean(cc) else ""
    except ValueError:
        cc_text = clean(cc)
    try:
        sms_text = str(int(float(sms))) if clean(sms) else ""
    except ValueError:
        sms_text = clean(sms)
    return f"{clean(name) or 'unnamed GPU'} (cc {cc_text or '?'}, {sms_text or '?'} SMs)"
