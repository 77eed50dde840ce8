"""The figures: one function each, registered in FIGURES; each reads the run's tables and draws.

``draw_<name>(run)`` draws a figure and returns it (``bars``, ``points``, ``series``); ``fig_<name>(run,
fig_dir)`` saves it as ``fig_dir/<name>.png``. A figure whose data the run lacks raises Skip with the
reason; ``make_figures`` records it. A panel's figure (``PANEL_FIGURES``: the decode panel's, the
accuracy ledger's) is drawn, and listed, only where the run holds the panel's table (``figures_of``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from matplotlib.figure import Figure

from study.errors import first_line
from study.report.figures.accuracy import draw_accuracy
from study.report.figures.bars import draw_loads_per_fma, draw_shapes, draw_strides, draw_throughput
from study.report.figures.common import (  # noqa: F401
    BAND_PCT,
    IMPLS,
    Skip,
    clock_trace,
    counted_loads,
    ledger_main,
    sass_loads,
    save,
    table,
    theme,
)
from study.report.figures.decode import draw_decode
from study.report.figures.points import draw_bounds, draw_model, draw_roofline
from study.report.figures.predict import draw_predict
from study.report.figures.series import draw_clocks, draw_sizes
from study.report.load import NOT_IN_RUN, Run

DRAW: dict[str, Callable[[Run], Figure]] = {
    "throughput": draw_throughput,
    "roofline": draw_roofline,
    "model": draw_model,
    "bounds": draw_bounds,
    "loads_per_fma": draw_loads_per_fma,
    "shapes": draw_shapes,
    "strides": draw_strides,
    "sizes": draw_sizes,
    "clocks": draw_clocks,
}


def _saver(name: str, draw: Callable[[Run], Figure]) -> Callable[[Run, Path], Path]:
    """``fig_<name>(run, fig_dir)``: draw the figure and save it as ``<name>.png``."""
    def fig(run: Run, fig_dir: Path) -> Path:
        return save(draw(run), fig_dir, name)

    fig.__name__ = fig.__qualname__ = f"fig_{name}"
    return fig


# each figure's fig_<name>, the name the report cites (study.report exports them under it)
FIGURES: dict[str, Callable[[Run, Path], Path]] = {name: _saver(name, draw) for name, draw in DRAW.items()}
# a panel's figures: name -> (the table of the panel it needs, its drawing function)
PANEL_DRAW: dict[str, tuple[str, Callable[[Run], Figure]]] = {
    "decode": ("decode_summary", draw_decode), "accuracy": ("accuracy_summary", draw_accuracy),
    "predict": ("predict_check", draw_predict),
}
PANEL_FIGURES: dict[str, Callable[[Run, Path], Path]] = {
    name: _saver(name, draw) for name, (_, draw) in PANEL_DRAW.items()
}


def in_run(run: Run, key: str) -> bool:
    """Whether the run holds the table ``key`` or has one that could not be read (which its figure
    and section then say); False for a table the run never had."""
    return key in run.tables or not run.missing.get(key, NOT_IN_RUN).endswith(NOT_IN_RUN)


def figures_of(run: Run) -> dict[str, Callable[[Run, Path], Path]]:
    """The figures of this run: every one of ``FIGURES``, then the panels' whose table it holds."""
    panels = {name: PANEL_FIGURES[name] for name, (key, _) in PANEL_DRAW.items() if in_run(run, key)}
    return {**FIGURES, **panels}


def make_figures(run: Run, fig_dir: Path) -> None:
    """Draw every figure; one that fails is recorded as skipped with the reason, never fatal."""
    fig_dir.mkdir(parents=True, exist_ok=True)
    with theme():
        for name, fn in figures_of(run).items():
            try:
                path = fn(run, fig_dir)
                run.figures[name] = (f"figures/{path.name}", "")
            except Skip as e:
                run.figures[name] = (None, str(e))
            except Exception as e:  # an input this figure did not foresee costs that figure only
                run.figures[name] = (None, f"could not be drawn ({first_line(e)})")


def figref(run: Run, name: str) -> list[str]:
    path, why = run.figures.get(name, (None, "not drawn"))
    fn = f"`study.report.{(FIGURES.get(name) or PANEL_FIGURES[name]).__name__}`"
    if path is None:
        return [f"*Figure figures/{name}.png skipped ({fn}): {why}.*", ""]
    return [f"![{name}]({path})", "", f"*{path} — {fn}*", ""]
