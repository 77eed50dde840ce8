"""The figures read at the size of a Markdown page: no two texts collide, no legend covers data, the
aspect and the type fit a page ~900 px wide, and what each figure is about can be told apart. Drawn
from the reference run (reports/, read only), from a copy of it whose counters are taken as current
(the bound model drawn) and from the synthetic fixture run. CPU only."""

from __future__ import annotations

import itertools
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import reference_with_current_counters
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

from study import derive, report
from study.report import figures
from study.rundata.rundir import RunDir

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "report"
FIXTURE_FILES = ["results.csv", "sass.csv", "sass_strides.csv", "clocks.csv", "gpu.json", "ncu.csv"]
PAGE_PX = 900  # a Markdown page's width: a wider PNG is shown scaled down to it
CSS_PX_PER_PT = 96 / 72
MIN_PT = 8.0  # the smallest text, in points as the page shows it
MAX_ASPECT = 2.0  # width : height
RUNS = ("reference", "fixture", "current")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    fixture = tmp_path_factory.mktemp("fixture")
    (fixture / "data").mkdir()
    for name in FIXTURE_FILES:
        shutil.copy(FIXTURE / name, fixture / "data" / name)
    derive.derive(RunDir(fixture), seed=RunDir(REPO / "reports"), note=False)
    current = reference_with_current_counters(tmp_path_factory.mktemp("current"), decode=True)
    return {"reference": report.load(REPO / "reports"), "fixture": report.load(fixture),
            "current": report.load(current)}


@pytest.fixture(scope="module")
def drawn(runs, tmp_path_factory):
    """(run, figure) -> (the Figure, drawn and laid out as saved; the saved PNG's width in pixels)."""
    out, saved = tmp_path_factory.mktemp("figures"), {}
    with figures.theme():
        for (rn, run), name in itertools.product(runs.items(), figures.DRAW):
            try:
                fig = figures.DRAW[name](run)
            except figures.Skip:
                continue
            png = figures.save(fig, out, f"{rn}_{name}")
            FigureCanvasAgg(fig).draw()  # the layout as saved, on a canvas that hands out a renderer
            saved[rn, name] = (fig, struct.unpack(">I", png.read_bytes()[16:20])[0])
    return saved


def figure(drawn, rn: str, name: str):
    if (rn, name) not in drawn:
        pytest.skip(f"{name} is not drawn from the {rn} run")
    return drawn[rn, name][0]


def texts(fig) -> list[Text]:
    """Every text the saved figure shows: tick labels only where their tick is in view."""
    ticks, shown = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            pad = 1e-9 * max(abs(lo), abs(hi), 1.0)
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                ticks |= {id(tick.label1), id(tick.label2)}
                if lo - pad <= tick.get_loc() <= hi + pad and tick.get_visible():
                    shown += [t for t in (tick.label1, tick.label2) if t.get_visible()]
    shown += [t for t in fig.findobj(Text) if id(t) not in ticks and t.get_visible()]
    return [t for t in shown if t.get_text().strip()]


def extent(artist, fig) -> Bbox:
    """The artist's box in display pixels; a label's text alone, without its leader line."""
    get = Text.get_window_extent if isinstance(artist, Annotation) else type(artist).get_window_extent
    return get(artist, fig.canvas.get_renderer())


def overlap(a: Bbox, b: Bbox, tol: float = 0.5) -> bool:
    return a.x0 + tol < b.x1 and b.x0 + tol < a.x1 and a.y0 + tol < b.y1 and b.y0 + tol < a.y1


def inside(a: Bbox, b: Bbox, tol: float = 1.0) -> bool:
    return a.x0 >= b.x0 - tol and a.x1 <= b.x1 + tol and a.y0 >= b.y0 - tol and a.y1 <= b.y1 + tol


def colliding(boxes: list[tuple[str, Bbox]]) -> list[tuple[str, str]]:
    return [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if overlap(ba, bb)]


def legends(fig) -> list:
    return [*(ax.get_legend() for ax in fig.axes if ax.get_legend()), *fig.legends]


# --- every figure ----------------------------------------------------------------------------------


def test_every_figure_has_a_drawing_function():
    assert list(figures.DRAW) == list(figures.FIGURES)


@pytest.mark.parametrize("rn", RUNS)
@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_figure_fits_a_page(drawn, rn, name):
    fig = figure(drawn, rn, name)
    w, h = fig.get_size_inches()
    assert w / h <= MAX_ASPECT, f"{name}: {w:.1f} x {h:.1f} in"
    png_px = drawn[rn, name][1]
    page_pt = lambda t: t.get_fontsize() * min(png_px, PAGE_PX) / (w * 72 * CSS_PX_PER_PT)  # noqa: E731
    small = sorted({(t.get_text(), round(page_pt(t), 1)) for t in texts(fig) if page_pt(t) < MIN_PT})
    assert small == [], f"{name}: text under {MIN_PT} pt on the page: {small[:5]}"
    outside = [t.get_text() for t in texts(fig) if not inside(extent(t, fig), fig.bbox)]
    assert outside == [], f"{name}: text cut off at the edge: {outside[:5]}"


@pytest.mark.parametrize("rn", RUNS)
@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_no_two_texts_collide(drawn, rn, name):
    fig = figure(drawn, rn, name)
    hits = colliding([(t.get_text(), extent(t, fig)) for t in texts(fig)])
    assert hits == [], f"{name}: {len(hits)} overlapping texts, e.g. {hits[:5]}"


def data_points(ax, fig) -> np.ndarray:
    """Display positions of what the axes shows: markers, line vertices (every few pixels along
    each line) and the corners and top edge of every bar; within the axes only."""
    pts = [np.empty((0, 2))]
    for c in ax.collections:
        if isinstance(c, PathCollection) and len(c.get_offsets()):
            pts.append(c.get_offset_transform().transform(c.get_offsets()))
    for line in ax.lines:
        xy = line.get_transform().transform(np.column_stack(line.get_data()).astype(float))
        for a, b in zip(xy, xy[1:]):
            if not np.isfinite([*a, *b]).all():
                continue
            n = int(np.hypot(*(b - a)) // 3) + 2
            pts.append(np.linspace(a, b, n))
    for p in ax.patches:
        bb = extent(p, fig)
        if np.isfinite(bb.bounds).all() and bb.width > 0 and bb.height > 0:
            xs = np.linspace(bb.x0, bb.x1, 5)
            pts.append(np.column_stack([xs, np.full(5, bb.y1)]))
    xy = np.vstack(pts)
    xy = xy[np.isfinite(xy).all(axis=1)]
    return xy[[ax.bbox.contains(*p) for p in xy]] if len(xy) else xy


@pytest.mark.parametrize("rn", RUNS)
@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_no_legend_covers_data(drawn, rn, name):
    fig = figure(drawn, rn, name)
    for leg, ax in itertools.product(legends(fig), fig.axes):
        box = extent(leg, fig)
        covered = [p for p in data_points(ax, fig) if box.contains(*p)]
        assert not covered, f"{name}: the legend covers {len(covered)} data points, e.g. {covered[0]}"
        hidden = [t.get_text() for t in ax.texts if overlap(box, extent(t, fig))]
        assert not hidden, f"{name}: the legend covers the labels {hidden}"


def look(h) -> tuple | None:
    """What tells a legend entry apart: its colour, marker and line style (None: it draws nothing,
    a heading)."""
    if isinstance(h, Line2D) and h.get_marker() in ("", "None", None) and h.get_linestyle() in ("None", ""):
        return None
    if isinstance(h, Line2D):
        return ("line", h.get_color(), h.get_marker(), h.get_linestyle())
    if isinstance(h, PathCollection):
        return ("marker", tuple(np.round(h.get_facecolor()[0], 3)), path_key(h.get_paths()[0]))
    if isinstance(h, Patch):
        return ("patch", tuple(np.round(h.get_facecolor(), 3)), h.get_hatch())
    return (type(h).__name__, id(h))


def path_key(path) -> tuple:
    return tuple(np.round(path.vertices, 2).ravel())


@pytest.mark.parametrize("rn", RUNS)
@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_legend_entries_look_different(drawn, rn, name):
    fig = figure(drawn, rn, name)
    for leg in legends(fig):
        seen: dict[tuple, str] = {}
        for h, t in zip(leg.legend_handles, leg.get_texts()):
            if look(h) is None:
                continue
            assert look(h) not in seen, f"{name}: '{t.get_text()}' looks like '{seen[look(h)]}'"
            seen[look(h)] = t.get_text()


# --- one figure each -------------------------------------------------------------------------------


@pytest.mark.parametrize("rn", RUNS)
def test_throughput_reads_every_bar(drawn, runs, rn):
    fig = figure(drawn, rn, "throughput")
    (ax,) = fig.axes
    assert ax.get_yscale() == "log"  # 500 beside 50,000 GFLOP/s
    bars = [p for p in ax.patches if p.get_height() > 0]
    main = runs[rn].main_rows(runs[rn].measured).dropna(subset=["gflops"])
    assert len(bars) == len(main)
    centres = [(extent(t, fig).x0 + extent(t, fig).x1) / 2 for t in ax.texts]
    for bar in bars:
        bb = extent(bar, fig)
        assert sum(bb.x0 <= c <= bb.x1 for c in centres) == 1, f"a bar without its value at x={bb.x0:.0f}"
    peak = runs[rn].gpu.peak_gflops
    lo, hi = ax.get_ylim()
    assert lo < peak < hi  # the peak line in view (the legend test holds that nothing covers it)
    assert any(f"{peak:,.0f}" in t.get_text() for leg in legends(fig) for t in leg.get_texts())


def bound_rows(run):
    pts = run.tables["model_errors"]
    return pts[(pts["method"] == "bound") & (pts["measured_cadence"] > 0) & (pts["predicted_cadence"] > 0)]


def test_bounds_marks_each_shape(drawn, runs):
    fig = figure(drawn, "current", "bounds")
    ax = fig.axes[0]
    ours = bound_rows(runs["current"])
    shapes = {f"{r.M}×{r.N}×{r.K}" for r in ours.itertuples()}
    assert len(shapes) > 1  # with the decode counters added the bound model has three shapes
    markers = {path_key(p) for c in ax.collections if isinstance(c, PathCollection) for p in c.get_paths()}
    assert len(markers) == len(shapes)
    named = [t.get_text() for leg in legends(fig) for t in leg.get_texts()]
    assert all(any(s in t for t in named) for s in shapes), (shapes, named)
    several = {k for k, n in ours.groupby("kernel").size().items() if n > 1}  # K0 at four shapes
    point_labels = [t.get_text() for t in ax.texts]
    bare = [t for t in point_labels if set(t.replace(",", " ").split()) & several and "@" not in t]
    assert bare == [], f"labels of a kernel drawn at several shapes that name no shape: {bare}"
    assert len(point_labels) == len(set(point_labels))


@pytest.mark.parametrize("name", ["roofline", "model", "bounds"])
def test_point_labels_name_distinct_points(drawn, name):
    """Each point named once (a kernel at several shapes once a shape); points drawn on top of each
    other share one label; and most points are named, not left out to keep the labels apart."""
    fig = figure(drawn, "current", name)
    names = [k for t in fig.axes[0].texts for k in t.get_text().split(", ")]
    assert len(names) == len(set(names)), sorted(names)
    assert len(names) >= 10
