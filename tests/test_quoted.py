"""Every figure README.md and docs/ quote from the committed run is checked against its data.

A quoted figure carries a marker naming the cell it comes from, invisible where the Markdown is
rendered:

    <!--q ledgers.csv pct_cublas kernel=K12 experiment=main-->101.3%

(the file under reports/data/, or a path from the repository's root for an experiment's data
under docs/, the column, and the key=value pairs that pick one row; ``scale=``
multiplies the cell, e.g. 1000 for ms printed in µs). The number right after the marker (after
any ``**``) must equal the cell at its printed rounding. Inside README's section on the
reference run every number with a decimal point carries a marker, so a figure cannot be quoted
there without one. CPU only.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "reports" / "data"
QUOTING = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARK = re.compile(r"<!--q (?P<file>\S+) (?P<column>\S+)(?P<keys>(?: [^=\s]+=\S+)*) ?-->\**"
                  r"(?P<number>[−+-]?[\d,]*\.?\d+(?:e[−+-]?\d+)?)")
README_RUN = ("<!-- reference run: start -->", "<!-- reference run: end -->")


def quotes(path: Path) -> list[tuple[int, re.Match]]:
    found = []
    for no, line in enumerate(path.read_text().splitlines(), 1):
        found += [(no, m) for m in MARK.finditer(line)]
    return found


ALL = [(p, no, m) for p in QUOTING for no, m in quotes(p)]


def printed(text: str) -> tuple[float, int]:
    """The number as printed and its decimals (of 1e-6 in 1.1e-6: 7)."""
    t = text.replace("−", "-").replace(",", "")
    mantissa, _, exponent = t.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return float(t), decimals - int(exponent or 0)


def cell(file: str, column: str, keys: str) -> float:
    df = pd.read_csv(REPO / file if "/" in file else DATA / file)
    pairs = dict(kv.split("=", 1) for kv in keys.split())
    scale = float(pairs.pop("scale", 1))
    for k, v in pairs.items():
        assert k in df.columns, f"{file} has no column {k}"
        try:
            df = df[pd.to_numeric(df[k], errors="coerce") == float(v)]
        except ValueError:
            df = df[df[k].astype(str) == v]
    assert column in df.columns, f"{file} has no column {column}"
    assert len(df) == 1, f"{file} {keys.strip()}: {len(df)} rows, not one"
    return float(df[column].iloc[0]) * scale


def test_there_are_quoted_figures_to_check():
    files = {p.name for p, _, _ in ALL}
    assert "README.md" in files and len(ALL) >= 20


@pytest.mark.parametrize("path,no,m", ALL, ids=[f"{p.name}:{no}" for p, no, _ in ALL])
def test_a_quoted_figure_equals_its_cell(path, no, m):
    want = cell(m["file"], m["column"], m["keys"])
    got, decimals = printed(m["number"])
    tol = 0.5 * 10**-decimals + 1e-9 * abs(want)
    assert math.isfinite(want) and abs(got - want) <= tol, (
        f"{path.name}:{no} quotes {m['number']} for {m['file']} {m['column']}{m['keys']}, "
        f"the data says {want:.6g}")


def test_every_figure_of_the_readmes_run_section_is_quoted_from_the_data():
    text = (REPO / "README.md").read_text()
    start, end = (text.index(s) for s in README_RUN)
    section = text[start:end]
    bare = MARK.sub("", section)
    # numbers with a decimal point (figures of the run), not inside a link target or code
    bare = re.sub(r"\([^)\s]*\)|`[^`]*`", "", bare)
    loose = re.findall(r"(?<![\w.])[−+-]?\d[\d,]*\.\d+", bare)
    assert not loose, f"README's reference-run section quotes {loose} without a marker"


def test_the_checker_catches_a_wrong_figure(tmp_path, monkeypatch):
    (tmp_path / "ledgers.csv").write_text(
        "kernel,experiment,pct_cublas\nK12,main,101.2843\nK12,shapes,100.5\n")
    monkeypatch.setattr(sys.modules[__name__], "DATA", tmp_path)
    line = "<!--q ledgers.csv pct_cublas kernel=K12 experiment=main-->**101.3%**"
    m = MARK.search(line)
    want = cell(m["file"], m["column"], m["keys"])
    assert printed(m["number"]) == (101.3, 1) and want == pytest.approx(101.2843)
    assert abs(printed("101.3")[0] - want) <= 0.05  # the cell at its printed rounding
    assert abs(printed("101.4")[0] - want) > 0.05  # one digit off is caught
    with pytest.raises(AssertionError, match="rows, not one"):
        cell("ledgers.csv", "pct_cublas", " kernel=K12")  # several experiments: ambiguous
