"""Labels beside the points they name, placed so that none collides with another, a marker or a legend.

A greedy search: the labels are taken in order of priority (then the most crowded point first, where
room is scarcest); each tries offsets at growing distances from its point (eight directions close
by; farther out, with a leader line, 24 starting from the direction away from the crowd) and takes
the first whose box stays inside the axes, clear of every label and leader line placed before it,
of every marker and of the legends, and whose leader line crosses no label. A first pass also keeps
clear of the lines drawn (the roofs, the diagonal), a second allows them. A label that finds no room
is left out. Points within a few pixels of each other share one label ("K1, T1").

The figure's layout must be final (``common.lay_out``): the search works in display coordinates.
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.text import Annotation

RADII_PT = (2, 6, 11, 17, 24, 32, 42, 54, 68, 84, 102, 122)
LEADER_FROM_PT = 10  # a label this far from its point gets a line to it
PAD_PX = 1.5  # the least gap between two boxes
CROWD_PX = 40  # the radius within which the neighbours of a point are counted


def _directions(n: int, outward: float = 0.0) -> list[float]:
    """n angles in order of preference: ``outward`` (degrees) first, then turning away from it both
    ways, alternating; the opposite direction last."""
    step = 360 / n
    order = [outward]
    for i in range(1, n // 2):
        order += [outward + i * step, outward - i * step]
    return [*order, outward + 180.0]


def _box(px: float, py: float, dx: float, dy: float, w: float, h: float, angle: float):
    """The label's box and alignment for an offset (dx, dy) px from the point at angle degrees."""
    c, s = np.cos(np.radians(angle)), np.sin(np.radians(angle))
    ha = "left" if c > 0.3 else "right" if c < -0.3 else "center"
    va = "bottom" if s > 0.3 else "top" if s < -0.3 else "center"
    x0 = px + dx - {"left": 0.0, "right": w, "center": w / 2}[ha]
    y0 = py + dy - {"bottom": 0.0, "top": h, "center": h / 2}[va]
    return (x0, y0, x0 + w, y0 + h), ha, va


def _hits(box, boxes: np.ndarray) -> bool:
    if not len(boxes):
        return False
    x0, y0, x1, y1 = box
    return bool(np.any((x0 - PAD_PX < boxes[:, 2]) & (boxes[:, 0] < x1 + PAD_PX)
                       & (y0 - PAD_PX < boxes[:, 3]) & (boxes[:, 1] < y1 + PAD_PX)))


def _covers(box, pts: np.ndarray) -> bool:
    if not len(pts):
        return False
    x0, y0, x1, y1 = box
    return bool(np.any((pts[:, 0] > x0 - PAD_PX) & (pts[:, 0] < x1 + PAD_PX)
                       & (pts[:, 1] > y0 - PAD_PX) & (pts[:, 1] < y1 + PAD_PX)))


def _segment(a, b, skip: float) -> np.ndarray:
    """Points every 2 px along the segment a -> b, less the first ``skip`` px (the marker)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    n = int(np.hypot(*(b - a)) // 2) + 2
    pts = np.linspace(a, b, n)
    return pts[np.hypot(*(pts - a).T) > skip]


def _markers(ax: Axes) -> np.ndarray:
    """The box of every marker the axes holds, in display pixels: (x0, y0, x1, y1) rows."""
    rows = [np.empty((0, 4))]
    px_per_pt = ax.figure.dpi / 72
    for c in ax.collections:
        if not isinstance(c, PathCollection) or not len(c.get_offsets()):
            continue
        xy = c.get_offset_transform().transform(np.asarray(c.get_offsets(), float))
        sizes = np.resize(c.get_sizes() if len(c.get_sizes()) else [36.0], len(xy))
        r = np.sqrt(sizes) / 2 * px_per_pt
        rows.append(np.column_stack([xy[:, 0] - r, xy[:, 1] - r, xy[:, 0] + r, xy[:, 1] + r]))
    out = np.vstack(rows)
    return out[np.isfinite(out).all(axis=1)]


def _line_points(ax: Axes) -> np.ndarray:
    pts = [np.empty((0, 2))]
    for line in ax.lines:
        xy = line.get_transform().transform(np.column_stack(line.get_data()).astype(float))
        for a, b in zip(xy, xy[1:]):
            if np.isfinite([*a, *b]).all():
                pts.append(_segment(a, b, 0.0))
    out = np.vstack(pts)
    return out[[ax.bbox.contains(*p) for p in out]] if len(out) else out


def _legend_boxes(ax: Axes, renderer) -> list:
    legs = [ax.get_legend(), *ax.figure.legends]
    return [tuple(leg.get_window_extent(renderer).extents) for leg in legs if leg is not None]


def groups(xy: np.ndarray, texts: list[str], order: list[int], merge_px: float) -> list[tuple[int, str]]:
    """Points within ``merge_px`` of a point earlier in ``order`` join its label: (point, text)."""
    out: list[tuple[int, list[str]]] = []
    for i in order:
        for j, names in out:
            if np.hypot(*(xy[i] - xy[j])) <= merge_px:
                if texts[i] not in names:
                    names.append(texts[i])
                break
        else:
            out.append((i, [texts[i]]))
    return [(i, ", ".join(names)) for i, names in out]


def _spot(p, w: float, h: float, px_per_pt: float, frame, taken, others, own, lines, leaders, outward):
    """The first offset (dx, dy px, ha, va, radius pt, box) that leaves the label clear, or None.
    Close to the point every direction is tried from the right; farther, with a leader line, from
    ``outward`` (away from the crowd the point is in)."""
    skip = (own[:, 2] - own[:, 0]).max() / 2 if len(own) else 0.0
    for avoid_lines in (True, False):
        for r in RADII_PT:
            for angle in _directions(8) if r <= LEADER_FROM_PT else _directions(24, outward):
                dx, dy = r * px_per_pt * np.cos(np.radians(angle)), r * px_per_pt * np.sin(np.radians(angle))
                box, ha, va = _box(*p, dx, dy, w, h, angle)
                if box[0] < frame[0] or box[1] < frame[1] or box[2] > frame[2] or box[3] > frame[3]:
                    continue
                if _hits(box, taken) or _hits(box, others) or _hits(box, own) or _covers(box, leaders):
                    continue
                if avoid_lines and _covers(box, lines):
                    continue
                if r > LEADER_FROM_PT:
                    end = (np.clip(p[0], box[0], box[2]), np.clip(p[1], box[1], box[3]))
                    if any(_hits((qx, qy, qx, qy), taken) for qx, qy in _segment(p, end, skip)):
                        continue
                return dx, dy, ha, va, r, box
    return None


def place(ax: Axes, x, y, texts: list[str], *, priority=None, fontsize: float = 8, merge_px: float = 4.0,
          color: str = "0.15") -> list[Annotation]:
    """Label the points (x, y) (data coordinates) with ``texts``; higher ``priority`` first. Returns
    the annotations placed."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    x, y = np.asarray(x, float), np.asarray(y, float)
    xy = ax.transData.transform(np.column_stack([x, y]))
    prio = np.zeros(len(xy)) if priority is None else np.asarray(priority, float)
    dist = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1))
    crowd = (dist < CROWD_PX).sum(axis=1)
    shown = [i for i, p in enumerate(xy) if np.isfinite(p).all() and ax.bbox.contains(*p)]
    order = sorted(shown, key=lambda i: (-prio[i], -crowd[i], i))
    markers, lines = _markers(ax), _line_points(ax)
    taken = np.array(_legend_boxes(ax, renderer)
                     + [tuple(t.get_window_extent(renderer).extents) for t in ax.texts]).reshape(-1, 4)
    frame = ax.bbox.extents + np.array([2, 2, -2, -2])
    px_per_pt = fig.dpi / 72
    placed, leaders = [], np.empty((0, 2))
    for i, text in groups(xy, list(texts), order, merge_px):
        probe = fig.text(0, 0, text, fontsize=fontsize)
        bb = probe.get_window_extent(renderer)
        probe.remove()
        mine = _hits_rows(markers, xy[i])
        near = (dist[i] < 2 * CROWD_PX) & np.isfinite(dist[i])
        away = xy[i] - xy[near].mean(axis=0)
        outward = float(np.degrees(np.arctan2(away[1], away[0]))) if np.hypot(*away) > 1 else 0.0
        found = _spot(xy[i], bb.width, bb.height, px_per_pt, frame, taken, markers[~mine], markers[mine],
                      lines, leaders, outward)
        if found is None:
            continue
        dx, dy, ha, va, r, box = found
        leader = dict(arrowstyle="-", color="0.45", lw=0.6, shrinkA=0, shrinkB=3)
        placed.append(ax.annotate(text, (x[i], y[i]), xytext=(dx / px_per_pt, dy / px_per_pt),
                                  textcoords="offset points", ha=ha, va=va, fontsize=fontsize, color=color,
                                  arrowprops=leader if r > LEADER_FROM_PT else None, annotation_clip=False))
        taken = np.vstack([taken, box])
        if r > LEADER_FROM_PT:
            end = (np.clip(xy[i][0], box[0], box[2]), np.clip(xy[i][1], box[1], box[3]))
            leaders = np.vstack([leaders, _segment(xy[i], end, 3 * px_per_pt)])
    return placed


def _hits_rows(boxes: np.ndarray, p) -> np.ndarray:
    """Which of ``boxes`` hold the point p (the point's own marker)."""
    if not len(boxes):
        return np.zeros(0, bool)
    return (boxes[:, 0] <= p[0]) & (p[0] <= boxes[:, 2]) & (boxes[:, 1] <= p[1]) & (p[1] <= boxes[:, 3])
