"""``study.predict`` against the run (README, *study.predict*): each kernel's time predicted from its
SASS and its launch alone, beside the time the run measured, per shape and over the decode panel,
the binding resource per kernel at the main shape, and the ladder's steps and the twins' ratios.
Renders predict_check.csv, predict_shapes.csv, predict_main.csv and predict_ratios.csv; computes
nothing. A run on
which ``python -m study.predict --check DIR --write`` was not run has no such section (``None``)."""

from __future__ import annotations

import pandas as pd

from study.report.figures import figref, in_run
from study.report.figures.common import short_shape
from study.report.load import Run
from study.report.md import md, missing, num

CHECK, SHAPES, MAIN, RATIOS = "predict_check", "predict_shapes", "predict_main", "predict_ratios"


def _provenance(p: pd.DataFrame) -> str:
    def one(c: str) -> str:
        vals = sorted({str(v) for v in p[c].dropna()} - {""}) if c in p.columns else []
        return ", ".join(vals) or "–"

    return (f"predicted at commit {one('commit')} with Triton {one('triton_here')} compiling here (the run's "
            f"Triton rows: {one('triton_run')})")


def section_predict(run: Run) -> list[str] | None:
    if not in_run(run, CHECK):
        return None
    p = run.tables.get(CHECK)
    if p is None:
        return missing("the predictions", run.missing.get(CHECK, "predict_check.csv has no rows"))
    lines = [
        "`python -m study.predict --check DIR --write`: every kernel the model takes (the CUDA kernels "
        "and the tiled Triton kernels on the FP32 units), at every shape the run timed and every point "
        "of its decode panel, predicted from its compiled SASS and its launch alone: the main loop "
        "played on one SM's schedulers for the resident warps, times its trips, times the waves; "
        "DRAM as a floor. No counter and no time of the kernel predicted is an input; the measured "
        f"time (the median of the run's rows) is only compared with. Here {_provenance(p)}.",
        "",
    ]
    s = run.tables.get(SHAPES)
    if s is not None and len(s):
        run_rows = s[s["source"].astype(str) == "run"]
        band = num(run_rows["band_pct"].iloc[0], "{:g}") if len(run_rows) else "–"
        lines += [f"Per shape (error = predicted / measured − 1; the kernels outside ±{band}%):", ""]
        lines += md(["shape", "kernels", "mean \\|error\\|", "largest", f"outside ±{band}%"],
                    [[short_shape(r.M, r.N, r.K), int(r.kernels), num(r.mean_abs_error_pct, "{:.1f}%"),
                      f"{num(r.max_abs_error_pct, '{:.1f}%')} ({r.worst})", r.outside or "none"]
                     for r in run_rows.itertuples() if int(r.kernels) > 2])
        panel = s[s["source"].astype(str).str.startswith("panel")]
        if len(panel):
            lines += ["Over the decode panel, per kernel (the worst point's M×N×K):", ""]
            band = num(panel["band_pct"].iloc[0], "{:g}")
            lines += md(["kernel", "points", "mean \\|error\\|", "largest", f"outside ±{band}%"],
                        [[str(r.source).split(" ", 1)[1], int(r.kernels),
                          num(r.mean_abs_error_pct, "{:.1f}%"),
                          f"{num(r.max_abs_error_pct, '{:.1f}%')} ({r.worst})", r.outside]
                         for r in panel.itertuples()])
    at = run.tables.get(MAIN)
    held = at is not None and len(at) > 0
    where = short_shape(at["M"].iloc[0], at["N"].iloc[0], at["K"].iloc[0]) if held else ""
    if where:
        lines += [f"At {where}, per kernel: the predicted issue rate beside the one ncu read in "
                  "the run (counters.csv; only compared with) and the resource that binds in the model.", ""]
        lines += md(["kernel", "measured ms", "predicted ms", "error", "predicted issue %", "ncu issue %",
                     "bound"],
                    [[r.kernel, num(r.measured_ms, "{:.3f}"), num(r.ms, "{:.3f}"),
                      num(r.error_pct, "{:+.1f}%"), num(r.issue_pct), num(r.ncu_issue_pct),
                      r.bound if isinstance(r.bound, str) and r.bound else (r.note or "–")]
                     for r in at.itertuples()])
    ratios = run.tables.get(RATIOS)
    if ratios is not None and len(ratios):
        lines += [f"The ladder's steps (time of the earlier rung over the later's) and the twins' ratios "
                  f"(the CUDA kernel's time over the twin's) at {where or 'the main shape'}:", ""]
        lines += md(["", "ratio", "measured", "predicted", "error"],
                    [[r.kind, f"{r.b} / {r.a}", num(r.measured, "{:.3f}×"), num(r.predicted, "{:.3f}×"),
                      num(r.error_pct, "{:+.1f}%")] for r in ratios.itertuples()])
    return lines + figref(run, "predict")
