"""The board (device UUID) every measured row names: provenance gives it, no reader requires it
(tables written before it existed), and the report's provenance line lists the boards a run's
rows were timed on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from study import derive, report
from study.rundata import results, tables
from study.rundata.gpu import GPU
from study.rundata.rundir import RunDir

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "report"


def commit_line(out: Path) -> str:
    text = report.render(out, measured=False).read_text()
    return next(ln for ln in text.split("## Provenance", 1)[1].splitlines() if "**Commit:**" in ln)


def test_provenance_names_the_boards_that_timed_the_rows(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("results.csv", "gpu.json"):
        shutil.copy(FIXTURE / name, data / name)
    derive.derive(RunDir(tmp_path), note=False)
    path = data / "results.csv"
    assert "board" not in commit_line(tmp_path)  # rows written before the column existed: nothing said
    rows = pd.read_csv(path)
    n = len(rows)
    # a run resumed on a second machine: the first 3 rows timed on one board, the rest on another
    rows.assign(board=["GPU-b"] * 3 + ["GPU-a"] * (n - 3)).to_csv(path, index=False)
    assert f"; 2 boards: GPU-a ({n - 3} rows), GPU-b (3 rows)." in commit_line(tmp_path)
    rows.assign(board="GPU-a").to_csv(path, index=False)
    assert commit_line(tmp_path).endswith("; board GPU-a.")


def test_every_row_provenance_is_a_column_of_the_results():
    gpu = GPU(name="NVIDIA H200", sms=132, fp32_lanes_per_sm=128, sm_clock_mhz=1980.0, mem_clock_mhz=3201.0,
              bus_width_bits=6016, cc="9.0")
    prov = results.provenance(gpu, "20260101T000000")
    # timestamp is stamped per row; the rest is what provenance() gives, the board among them
    assert sorted([*prov, "timestamp"]) == sorted(tables.RESULTS_PROVENANCE)
    assert "board" in prov
    # a table written before the board column existed is still whole to a reader
    assert "board" not in tables.T.results.required and "board" not in tables.T.decode_host.required
