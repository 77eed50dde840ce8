"""The decode panel's heatmap: KD's speed-up over the best vendor kernel per shape (rows) and M
(columns), from decode_summary.csv.

A diverging colormap centred on 1.0, symmetric in log space (0.8× is as far from white as 1.25×):
blue where KD is faster, red where it is slower; every cell carries its value, in white on the
darkest cells; a point without both times is grey with a dash.
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from study.report.figures.common import PAGE_IN, SMALL, Skip, lay_out, new_figure, table
from study.report.load import Run

CMAP = "RdBu"  # red below 1 (KD slower), blue above (KD faster)
MISSING = "0.85"  # a cell without a speed-up
DARK = 0.28  # cells this far from the centre of the colormap (of 0.5) get white text


def speedup_grid(run: Run) -> tuple[list[str], list[int], np.ndarray]:
    """The shapes (in the table's order, each with its N×K), the Ms and the speed-up at each."""
    s = table(run, "decode_summary")
    shapes = list(dict.fromkeys(s["shape"].astype(str)))
    ms = sorted({int(m) for m in s["M"].dropna()})
    grid = np.full((len(shapes), len(ms)), np.nan)
    for r in s.itertuples():
        grid[shapes.index(str(r.shape)), ms.index(int(r.M))] = r.speedup
    if not np.isfinite(grid).any():
        raise Skip("decode_summary.csv has no point where both KD and a vendor kernel were timed")
    size = {str(r.shape): f"{int(r.N)}×{int(r.K)}" for r in s.itertuples()}
    return [f"{name}  {size[name]}" for name in shapes], ms, grid


def draw_decode(run: Run) -> Figure:
    labels, ms, grid = speedup_grid(run)
    finite = grid[np.isfinite(grid)]
    span = max(float(np.max(np.abs(np.log(finite)))), np.log(1.05))
    norm = TwoSlopeNorm(vcenter=1.0, vmin=float(np.exp(-span)), vmax=float(np.exp(span)))
    cmap = colormaps[CMAP].with_extremes(bad=MISSING)
    fig, ax = new_figure((PAGE_IN, max(PAGE_IN / 2, 1.6 + 0.36 * len(labels))))  # at most 2:1
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto")
    for (i, j), v in np.ndenumerate(grid):
        dark = np.isfinite(v) and abs(norm(v) - 0.5) > DARK
        ax.text(j, i, f"{v:.2f}×" if np.isfinite(v) else "–", ha="center", va="center", fontsize=SMALL,
                color="white" if dark else "0.1")
    ax.set_xticks(range(len(ms)), [f"M = {m}" for m in ms])
    ax.set_yticks(range(len(labels)), labels)
    ax.tick_params(length=0)
    ax.grid(False)
    ax.set(xlabel="M (rows of A: the batch)", ylabel="projection (N×K)")
    bar = fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label("best vendor time / KD time (above 1: KD faster)", fontsize=SMALL)
    bar.ax.tick_params(labelsize=SMALL)
    return lay_out(fig, run, "Decode panel: KD's speed-up over the best vendor kernel")
