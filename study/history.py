"""``python -m study.history``: the run-to-run spread of the committed reference runs.

Every commit of the repository that changed a run's times file (``reports/data/results.csv`` by
default) holds one run. Per run: the commit it was measured at, cuBLAS's default (K0) at the main
shape, and the headline ratios (the top rung against the faster vendor kernel at the main shape,
the decode rung against it at the decode shapes), each from the run's own rows (the median where
a point has several). K0 is the same vendor code in every run, so the spread of its time across
the runs is the spread of the measurement; the ratios also move with the kernels' code.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pandas as pd

from study import cli
from study.errors import InputError

REPO = Path(__file__).resolve().parent.parent
DEFAULT_FILE = "reports/data/results.csv"
VENDOR = ("K0", "K0L")
# (column, kernel, experiment, label): the headline ratios, vendor time over the kernel's
RATIOS = (("K12 ÷ vendor, main", "K12", "main", "main"),
          ("KD ÷ vendor, decode_b1", "KD", "shapes", "decode_b1"),
          ("KD ÷ vendor, decode_b32", "KD", "shapes", "decode_b32"))
COLUMNS = ["report_commit", "run_commit", "rows", "K0 ms, main", *(r[0] for r in RATIOS)]


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise InputError(f"git {' '.join(args)} failed: {getattr(e, 'stderr', '') or e}".strip()) from None
    return out.stdout


def commits(path: str) -> list[str]:
    """The commits that changed ``path``, oldest first."""
    if _git("rev-parse", "--is-shallow-repository").strip() == "true":
        raise InputError("this clone is shallow: its history holds no earlier runs (git fetch --unshallow)")
    return _git("log", "--format=%h", "--reverse", "--", path).split()


def _median_ms(rows: pd.DataFrame, kernel: str, experiment: str, label: str) -> float:
    at = rows[(rows["kernel"] == kernel) & (rows["experiment"] == experiment) & (rows["label"] == label)]
    return float(pd.to_numeric(at["ms"], errors="coerce").median()) if len(at) else float("nan")


def run_row(commit: str, text: str) -> dict:
    """One committed run's figures from its times file's text."""
    rows = pd.read_csv(io.StringIO(text), dtype={"kernel": str, "experiment": str, "label": str})
    run_commits = sorted({str(c) for c in rows.get("commit", pd.Series(dtype=str)).dropna()})
    out = {"report_commit": commit, "run_commit": ", ".join(run_commits) or "–", "rows": len(rows),
           "K0 ms, main": _median_ms(rows, "K0", "main", "main")}
    for name, kernel, experiment, label in RATIOS:
        vendor = min(_median_ms(rows, v, experiment, label) for v in VENDOR)
        out[name] = vendor / _median_ms(rows, kernel, experiment, label)
    return out


def history(path: str = DEFAULT_FILE) -> pd.DataFrame:
    found = commits(path)
    if not found:
        raise InputError(f"no commit changed {path}")
    return pd.DataFrame([run_row(c, _git("show", f"{c}:{path}")) for c in found], columns=COLUMNS)


def table_lines(df: pd.DataFrame) -> list[str]:
    from study.report.md import md, num

    return md(COLUMNS, [[r["report_commit"], r["run_commit"], r["rows"],
                         *(num(r[c], "{:.4f}") for c in COLUMNS[3:])] for _, r in df.iterrows()])


def spread_lines(df: pd.DataFrame) -> list[str]:
    """The min-max of each figure over the runs that have it."""
    lines = []
    for col in COLUMNS[3:]:
        v = pd.to_numeric(df[col], errors="coerce").dropna()
        if len(v):
            lines.append(f"{col}: {v.min():.4g}–{v.max():.4g} over {len(v)} runs "
                         f"(max/min {v.max() / v.min():.4f})")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = cli.Parser(prog="python -m study.history", description=__doc__.splitlines()[0])
    p.add_argument(
        "--file", default=DEFAULT_FILE, help=f"the times file in the repository (default {DEFAULT_FILE})"
    )

    def body() -> int:
        a = p.parse_args(argv)
        df = history(a.file)
        print("\n".join(table_lines(df)))
        print("\n".join(spread_lines(df)))
        return 0

    return cli.main(body)


if __name__ == "__main__":
    sys.exit(main())
