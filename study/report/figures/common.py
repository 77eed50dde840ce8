"""What the figures share: the tables they read, the figure they draw on, its title and saving.

Every figure is drawn for a Markdown page about 900 px wide: at most ``PAGE_IN`` inches wide at
``DPI`` (a wider PNG is shown scaled down to the page), no wider than twice its height, and no text
under 8 pt (the style's tick labels are 8.8 pt; labels and legends here are 8 pt or more).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import matplotlib
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from study.report.load import NOT_IN_RUN, Run
from study.report.md import gpu_name

IMPLS = ("cuda", "triton", "cublas")
BAND_PCT = 10.0  # the model's "within" band, in percent
PAGE_IN = 9.0  # the widest figure, inches
DPI = 110
SMALL = 8  # points: point labels, legends, value labels


class Skip(Exception):
    """A figure or table that this run's data cannot support; the message says why."""


def table(run: Run, key: str) -> pd.DataFrame:
    """A derived table of the run, or Skip naming why it is absent."""
    if key not in run.tables:
        raise Skip(run.missing.get(key, f"{key} {NOT_IN_RUN}"))
    return run.tables[key]


def ledger_main(run: Run) -> pd.DataFrame:
    return run.main_rows(table(run, "ledgers"))


def counted_loads(run: Run) -> pd.DataFrame:
    """Counted loads per FMA (dist, bcast, ldg) of the counted kernels in the main table."""
    led = run.tables.get("ledgers")
    if led is None or "dist" not in led.columns:
        return pd.DataFrame(columns=["kernel", "dist", "bcast", "ldg"])
    main = run.main_rows(led)
    return main[main["dist"].notna()][["kernel", "dist", "bcast", "ldg"]]


def sass_loads(run: Run) -> pd.DataFrame:
    s = run.tables.get("sass")
    if s is None or "loop_lds_per_ffma" not in s.columns:
        return pd.DataFrame(columns=["kernel", "lds", "ldg"])
    out = pd.DataFrame(
        {
            "kernel": s["kernel"],
            "lds": pd.to_numeric(s["loop_lds_per_ffma"], errors="coerce"),
            "ldg": pd.to_numeric(s.get("loop_ldg_per_ffma"), errors="coerce"),
        }
    )
    return out.dropna(subset=["lds"]).fillna(0.0)


def clock_trace(clk: pd.DataFrame) -> pd.DataFrame:
    """Each timing's samples laid end to end in the order they were recorded (x positions)."""
    if "experiment" in clk.columns and (clk["experiment"].astype(str) == "main").any():
        clk = clk[clk["experiment"].astype(str) == "main"]
    keys = [c for c in ("run_id", "experiment", "label", "kernel", "M", "N", "K") if c in clk.columns]
    parts, offset = [], 0.0
    for i, (_, g) in enumerate(clk.groupby(keys, sort=False)):
        t = pd.to_numeric(g["t_s"], errors="coerce")
        t = t - t.min()
        parts.append(g.assign(t=t + offset, trace=i))
        offset += float(t.max() if len(t) else 0) + 0.05
    return pd.concat(parts, ignore_index=True)


@contextmanager
def theme() -> Iterator[None]:
    """The figures' style, set for the figures drawn inside and undone after."""
    with matplotlib.rc_context():
        sns.set_theme(style="whitegrid", context="paper")
        yield


def impl_colors() -> dict[str, tuple]:
    """One colour per implementation, the same in every figure."""
    return dict(zip(IMPLS, sns.color_palette("deep")))


def new_figure(figsize: tuple[float, float], nrows: int = 1, ncols: int = 1, **kw):
    """A figure of its own, outside pyplot (it needs no backend and nothing is left open), on an Agg
    canvas (it hands out the renderer that measures text), laid out by constrained layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=figsize, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, **kw)


def lay_out(fig: Figure, run: Run, title: str) -> Figure:
    """The title, then the layout computed and fixed: what is placed after it (labels measured
    against the axes) stays where it is put."""
    fig.suptitle(f"{title} — {gpu_name(run)}", fontsize=11)
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    return fig


def save(fig: Figure, fig_dir: Path, name: str) -> Path:
    path = fig_dir / f"{name}.png"
    fig.savefig(path, dpi="figure")
    return path


def thousands(ax_axis) -> None:
    """Major ticks as plain numbers with thousands separators (a log axis's 10^3 reads 1,000), no
    labels on the minor ticks."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax_axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    ax_axis.set_minor_formatter(NullFormatter())


def legend_above(ax, handles, labels, ncol: int) -> None:
    """The legend over the axes, under the title: it covers nothing the axes show."""
    ax.legend(handles, labels, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=ncol, frameon=False,
              fontsize=SMALL, borderaxespad=0.2, handlelength=1.6, columnspacing=1.2)


def legend_right(ax, handles, labels) -> None:
    """The legend right of the axes, in one column."""
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, fontsize=SMALL,
              borderaxespad=0.0, handlelength=1.6)


def short_shape(M, N, K) -> str:
    """4096³ for a cube, else M×N×K."""
    M, N, K = int(M), int(N), int(K)
    return f"{M}³" if M == N == K else f"{M}×{N}×{K}"
