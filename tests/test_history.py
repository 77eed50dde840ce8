"""study.history: the committed reference runs read back from git, and docs/notes/spread.md
holding its output. CPU only; skipped where the clone has no history."""

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from study import history

REPO = Path(__file__).resolve().parent.parent
NOTE = REPO / "docs" / "notes" / "spread.md"


def _deep() -> bool:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--is-shallow-repository"],
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return False
    return out == "false"


needs_history = pytest.mark.skipif(not _deep(), reason="no git history in this checkout")

TIMES = """experiment,label,kernel,M,N,K,ms,commit
main,main,K0,4096,4096,4096,2.0,abc
main,main,K0L,4096,4096,4096,1.8,abc
main,main,K12,4096,4096,4096,1.9,abc
shapes,decode_b1,K0,1,18944,3584,0.080,abc
shapes,decode_b1,KD,1,18944,3584,0.064,abc
shapes,decode_b1,KD,1,18944,3584,0.060,abc
"""


def test_a_run_is_judged_against_the_faster_vendor_kernel():
    r = history.run_row("c0ffee", TIMES)
    assert r["run_commit"] == "abc" and r["rows"] == 6
    assert r["K0 ms, main"] == 2.0
    assert r["K12 ÷ vendor, main"] == pytest.approx(1.8 / 1.9)  # K0L is the faster vendor kernel
    assert r["KD ÷ vendor, decode_b1"] == pytest.approx(0.080 / 0.062)  # KD's median of two rows
    assert pd.isna(r["KD ÷ vendor, decode_b32"])  # no point there


@needs_history
def test_the_note_holds_the_history_of_the_committed_runs():
    df = history.history()
    text = NOTE.read_text()
    table = re.search(r"<!-- study.history: start -->\n(.*?)<!-- study.history: end -->", text, re.S)[1]
    want = "\n".join(history.table_lines(df) + history.spread_lines(df))
    assert table.strip() == want.strip()
    # the first committed run (1f39e36): cuBLAS's default at 4096^3 took 2.6866 ms there
    first = df.iloc[0]
    assert first["report_commit"] == "1f39e36" and round(first["K0 ms, main"], 4) == 2.6866
