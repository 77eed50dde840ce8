"""The point labels' placement (``study.report.figures.labels``) on synthetic points: no label
collides with another or with a marker, each stays inside its axes, points on top of each other
share one label, the first in priority are placed. CPU only."""

from __future__ import annotations

import itertools

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from study.report.figures import labels


def box(t: Text) -> Bbox:
    """A label's text alone, without its leader line, in display pixels."""
    return Text.get_window_extent(t, t.figure.canvas.get_renderer())


def overlap(a: Bbox, b: Bbox, tol: float = 0.5) -> bool:
    return a.x0 + tol < b.x1 and b.x0 + tol < a.x1 and a.y0 + tol < b.y1 and b.y0 + tol < a.y1


def inside(a: Bbox, b: Bbox, tol: float = 1.0) -> bool:
    return a.x0 >= b.x0 - tol and a.x1 <= b.x1 + tol and a.y0 >= b.y0 - tol and a.y1 <= b.y1 + tol


def cluster(seed: int = 0, n: int = 36, spread: float = 0.06):
    """A figure with n points in a tight cluster, two more on top of each other above it and two
    outliers; their names and priorities (the outliers first)."""
    rng = np.random.default_rng(seed)
    fig = Figure(figsize=(6, 5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    x = np.concatenate([rng.normal(1.0, spread, n), [1.0, 1.0], [0.3, 1.7]])
    y = np.concatenate([rng.normal(1.0, spread, n), [1.2, 1.2], [0.3, 1.7]])
    ax.scatter(x, y, s=30)
    ax.set(xlim=(0, 2), ylim=(0, 2))
    return fig, ax, x, y, [f"P{i}" for i in range(len(x))], np.r_[np.zeros(n + 2), [5, 4]]


def test_placed_labels_never_collide():
    fig, ax, x, y, names, priority = cluster()
    placed = labels.place(ax, x, y, names, priority=priority, fontsize=8)
    fig.canvas.draw()
    boxes = [(t.get_text(), box(t)) for t in placed]
    assert [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if overlap(ba, bb)] == []
    texts = {t for t, _ in boxes}
    assert "P36, P37" in texts and not {"P36", "P37"} & texts  # the two on one spot: one label
    assert {"P38", "P39"} <= texts  # the outliers, first in priority
    spots = labels.groups(ax.transData.transform(np.column_stack([x, y])), names, list(range(len(x))), 4.0)
    assert len(placed) >= 2 / 3 * len(spots)  # most of the crowd too
    marks = ax.collections[0].get_offset_transform().transform(ax.collections[0].get_offsets())
    r = np.sqrt(30) / 2 * fig.dpi / 72
    for text, bb in boxes:
        assert inside(bb, ax.bbox), f"{text} outside the axes"
        assert not any(bb.x0 < mx + r and mx - r < bb.x1 and bb.y0 < my + r and my - r < bb.y1
                       for mx, my in marks), f"{text} covers a marker"


def test_a_label_with_no_room_is_left_out():
    """In axes too small for them, fewer labels, none colliding: never one drawn over another."""
    fig, ax, x, y, names, priority = cluster(n=36, spread=0.3)
    fig.set_size_inches(2.0, 1.6)
    placed = labels.place(ax, x, y, names, priority=priority, fontsize=8)
    fig.canvas.draw()
    boxes = [box(t) for t in placed]
    assert 0 < len(placed) < len(names)
    assert not any(overlap(a, b) for a, b in itertools.combinations(boxes, 2))
