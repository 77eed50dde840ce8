"""What the figures share: the tables they read, the figure they draw on, its title and saving."""

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


def new_figure(figsize: tuple[float, float], ncols: int = 1):
    """A figure of its own, outside pyplot: it needs no backend and nothing is left open."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(1, ncols)


def finish(fig: Figure, run: Run, title: str) -> Figure:
    """The title and the layout: the figure as it is saved."""
    fig.suptitle(f"{title} — {gpu_name(run)}", fontsize=11)
    fig.tight_layout()
    return fig


def save(fig: Figure, fig_dir: Path, name: str) -> Path:
    path = fig_dir / f"{name}.png"
    fig.savefig(path, dpi=110)
    return path
