"""study.predict against a run in the report: ``--check DIR --write``'s rows (predict_check.csv), the
tables derived from them (predict_shapes, predict_ratios: per shape and per panel kernel, the steps
and the twins), and the report's section and figure; a run without the rows has neither. CPU only:
the rows are made here by hand, the figures below are worked out from them by hand."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from study import derive, report
from study.derive import predict as dp
from study.predict.__main__ import written
from study.rundata.rundir import RunDir
from study.rundata.tables import T

REPO = Path(__file__).resolve().parent.parent
REPORT_FIXTURE = REPO / "tests" / "fixtures" / "report"
MAIN = [4096, 4096, 4096]

# (source, kernel, shape, measured ms, predicted ms): K5 and K6 a step of the ladder at 4096^3, G6
# K6's Gluon twin; two kernels at 2048^3; KD at two panel points; K2 not predicted
ROWS = [
    ("run", "K5", MAIN, 5.0, 5.4),
    ("run", "K6", MAIN, 4.0, 3.4),
    ("run", "G6", MAIN, 4.0, 4.2),
    ("run", "K5", [2048] * 3, 0.70, 0.66),
    ("run", "K6", [2048] * 3, 0.50, 0.52),
    ("panel", "KD", [1, 4096, 4096], 0.020, 0.016),
    ("panel", "KD", [8, 4096, 4096], 0.025, 0.026),
]


def check_rows() -> list[dict]:
    """The rows as ``study.predict.check.run`` emits them (one not predicted: its ``error``)."""
    out = []
    for source, kid, shape, meas, ms in ROWS:
        r = {"kernel": kid, "shape": shape, "measured_ms": meas, "ms": ms, "error_pct": 100 * (ms / meas - 1),
             "issue_pct": 50.0, "bound": "issue"}
        if source == "panel":
            r["source"] = "panel"
        out.append(r)
    out.append({"kernel": "K2", "shape": MAIN, "measured_ms": 22.0, "error": "no main loop with FFMA"})
    return out


@pytest.fixture
def frame() -> pd.DataFrame:
    return written(check_rows(), {"summary": "toolchain", "triton_here": "3.9.0", "triton_run": ["3.6.0"]},
                   "3.9.0")


def test_the_written_rows_keep_each_prediction_and_why_one_is_missing(frame):
    assert list(frame.columns) == list(T.predict_check.columns) and len(frame) == len(ROWS) + 1
    k2 = frame[frame["kernel"] == "K2"].iloc[0]
    assert k2["note"] == "no main loop with FFMA" and pd.isna(k2["ms"]) and k2["source"] == "run"
    assert set(frame["source"]) == {"run", "panel"}
    assert set(frame["triton_here"]) == {"3.9.0"} and set(frame["triton_run"]) == {"3.6.0"}


def test_shapes_sum_the_errors_per_shape_and_per_panel_kernel(frame):
    s = dp.shapes(frame)
    main = s[(s["source"] == "run") & (s["M"] == 4096)].iloc[0]
    # |+8%|, |-15%|, |+5%| over three kernels (K2 has no prediction)
    assert main["kernels"] == 3 and main["mean_abs_error_pct"] == pytest.approx(28 / 3)
    assert main["max_abs_error_pct"] == pytest.approx(15.0)
    assert main["worst"] == "K6" and main["outside"] == "K6"
    small = s[(s["source"] == "run") & (s["M"] == 2048)].iloc[0]
    # |-5.7%| (0.66 for 0.70), |+4%|
    assert small["kernels"] == 2 and small["mean_abs_error_pct"] == pytest.approx((40 / 7 + 4) / 2)
    kd = s[s["source"] == "panel KD"].iloc[0]
    # -20% at 1x4096x4096 (outside ±15%), +4% at 8x4096x4096
    assert kd["kernels"] == 2 and kd["max_abs_error_pct"] == pytest.approx(20.0)
    assert kd["worst"] == "1x4096x4096" and kd["outside"] == "1 points"


def test_ratios_set_the_steps_and_twins_measured_beside_predicted(frame):
    r = dp.ratios(frame).set_index(["kind", "a", "b"])
    step = r.loc[("step", "K6", "K5")]  # K5's time over K6's: 5.0 / 4.0 measured, 5.4 / 3.4 predicted
    assert step["measured"] == pytest.approx(1.25) and step["predicted"] == pytest.approx(5.4 / 3.4)
    twin = r.loc[("twin", "G6", "K6")]  # K6's time over G6's: 1.0 measured, 3.4 / 4.2 predicted
    assert twin["measured"] == pytest.approx(1.0)
    assert twin["error_pct"] == pytest.approx(100 * (3.4 / 4.2 - 1))


def _run_dir(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    (out / "data").mkdir(parents=True)
    for name in ("results.csv", "gpu.json"):
        shutil.copy(REPORT_FIXTURE / name, out / "data" / name)
    return out


def test_the_section_and_figure_render_and_a_run_without_the_rows_has_neither(tmp_path, frame):
    out = _run_dir(tmp_path)
    derive.derive(RunDir(out), note=False)
    bare = report.render(out).read_text()
    assert "## Predicted from the SASS" not in bare and "predict.png" not in bare
    frame.to_csv(out / "data" / T.predict_check.file, index=False)
    derive.derive(RunDir(out), note=False)
    text = report.render(out).read_text()
    sec = text.split("\n## Predicted from the SASS\n", 1)[1].split("\n## ", 1)[0]
    assert "with Triton 3.9.0 compiling here (the run's Triton rows: 3.6.0)" in sec
    assert "| 4096³ | 3 | 9.3% | 15.0% (K6) | K6 |" in sec
    assert "| KD | 2 | 12.0% | 20.0% (1x4096x4096) | 1 points |" in sec
    assert "| K2 | 22.000 | – | – | – | – | no main loop with FFMA |" in sec  # no counters in the fixture
    assert "| step | K5 / K6 | 1.250× | 1.588× | +27.1% |" in sec
    assert (out / "figures" / "predict.png").is_file() and "![predict](figures/predict.png)" in sec


def test_write_without_check_is_refused_in_one_line():
    p = subprocess.run([sys.executable, "-m", "study.predict", "--write", "--shape", "1,1,1"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--write goes with --check DIR" in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_the_issue_rate_ncu_read_at_the_main_shape_stands_beside_the_predicted_one(frame):
    counters = pd.DataFrame({"kernel": ["K6", "K6", "G6"], "M": [4096, 2048, 4096],
                             "N": [4096, 2048, 4096], "K": [4096, 2048, 4096],
                             "issue_pct": [87.6, 80.0, 74.8]})
    m = dp.at_main(frame, counters).set_index("kernel")
    assert dict(m["ncu_issue_pct"].dropna()) == {"K6": 87.6, "G6": 74.8}
    assert math.isnan(m.loc["K5", "ncu_issue_pct"])  # ncu read no K5 row at the main shape
    assert dp.at_main(frame)["ncu_issue_pct"].isna().all()  # a run without counters
