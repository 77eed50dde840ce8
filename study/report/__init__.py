"""The report: every table as Markdown, every figure as a seaborn PNG, from one run directory.

``render(out)`` reads the run's recorded rows and the tables ``study.derive`` wrote into
``<out>/data/``, and writes ``<out>/REPORT.md`` and ``<out>/figures/*.png``. It only reads and
formats: it never launches a kernel, never imports torch, and computes no figure (the derive step
does). A missing or malformed table makes its section say so; a section or figure that still fails
says why in its place, so the rest of the report is written.

Re-derive and re-render a recorded run without a GPU: ``python -m study.report reports``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from study.errors import first_line
from study.report.figures import FIGURES, PANEL_FIGURES, Skip, make_figures  # noqa: F401
from study.report.load import Run, load
from study.report.md import gpu_name
from study.report.sections.accuracy import section_accuracy
from study.report.sections.bounds import section_bounds
from study.report.sections.counters import section_counters
from study.report.sections.decode import section_decode
from study.report.sections.experiments import section_clocks, section_shapes, section_sizes
from study.report.sections.ledgers import section_ledgers, section_model
from study.report.sections.main import section_ladder, section_main, section_tile_gap, section_twins
from study.report.sections.meta import section_figures, section_reproduce
from study.report.sections.predict import section_predict
from study.report.sections.provenance import section_provenance
from study.report.sections.sass import section_counted, section_sass
from study.report.sections.seed import section_seed
from study.report.sections.strides import section_strides

# the figures are named ``study.report.<function>`` in the report: they live here too
globals().update({fn.__name__: fn for fn in (*FIGURES.values(), *PANEL_FIGURES.values())})


def sections(measured: bool) -> list[tuple[str, Callable[[Run], list[str] | None]]]:
    """The report's headings in order, each with the function that writes what follows it (None:
    a panel the run did not measure, whose heading is left out)."""
    return [
        ("## Provenance", lambda run: section_provenance(run, measured)),
        ("## Main table", section_main),
        ("## The ladder", section_ladder),
        ("## Triton twins", section_twins),
        ("## Triton vs hand-written tile", section_tile_gap),
        ("## Ledgers", section_ledgers),
        ("## Predicted from the SASS", section_predict),
        ("## Calibration and model", section_model),
        ("## Bound model", section_bounds),
        ("## Occupancy and SASS", section_sass),
        ("## Counted vs compiled", section_counted),
        ("## Experiments", lambda run: []),
        ("### E2 sizes", section_sizes),
        ("### E3 shapes", section_shapes),
        ("### E4 strides", section_strides),
        ("### E6 clocks", section_clocks),
        ("## Decode panel", section_decode),
        ("## Accuracy ledger", section_accuracy),
        ("## Hardware counters", section_counters),
        ("## Seed GPU replay", section_seed),
        ("## Figures", section_figures),
        ("## How to reproduce", section_reproduce),
    ]


def guarded(section: Callable[[Run], list[str] | None], run: Run) -> list[str] | None:
    try:
        return section(run)
    except Exception as e:  # an input no section foresaw costs that section, never the whole report
        return [f"*this section could not be rendered: {first_line(e)}*", ""]


def render(out_dir: Path, *, measured: bool = False) -> Path:
    """Write ``<out>/REPORT.md`` and ``<out>/figures/*.png`` from ``<out>/data/``; return the report path.

    ``measured`` says whether the rows were timed by the run that renders them (the CLI after a
    measurement); otherwise the report says it was re-rendered from recorded rows.
    """
    out = Path(out_dir)
    run = load(out)
    make_figures(run, out / "figures")
    lines = [f"# SGEMM ledgers on {gpu_name(run)}", ""]
    for heading, section in sections(measured):
        body = guarded(section, run)
        if body is not None:
            lines += [heading, "", *body]
    path = out / "REPORT.md"
    path.write_text("\n".join(lines).rstrip() + "\n")
    return path
