"""Selecting rows of a run's tables: registry order, the main experiment, one row per kernel.

Selection only (no figure is computed here): the derive step and the report both use it, so a
table and its rendering pick the same rows.
"""

from __future__ import annotations

import pandas as pd

from study import experiments
from study import kernels as registry


def order(kid: str) -> int:
    return registry.IDS.index(kid) if kid in registry.IDS else len(registry.IDS)


def in_order(df: pd.DataFrame) -> pd.DataFrame:
    return df.iloc[sorted(range(len(df)), key=lambda i: order(str(df["kernel"].iloc[i])))]


def main_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The main-experiment rows, one per kernel (the last recorded wins), in registry order."""
    if "experiment" in df.columns:
        df = df[df["experiment"].astype(str) == "main"]
    return in_order(df.drop_duplicates("kernel", keep="last")) if len(df) else df


def at_main_shapes(df: pd.DataFrame, main: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``df`` (rows per kernel and shape, e.g. counters read at several shapes) at the
    shape each kernel's main row (``main``, from :func:`main_rows`) was measured at: what stands
    beside a kernel's main-experiment time is read at that time's shape."""
    if df is None or not len(df) or main is None or not len(main):
        return df.iloc[0:0] if df is not None else df
    def keys(t: pd.DataFrame) -> list[tuple]:
        return [(str(k), int(m), int(n), int(kk)) for k, m, n, kk in zip(t["kernel"], t["M"], t["N"], t["K"])]

    at = set(keys(main))
    return df[[key in at for key in keys(df)]]


def one_shape(df: pd.DataFrame, main: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``df`` (per kernel and shape) at one shape, for comparing kernels with each
    other: the main rows' shapes (:func:`at_main_shapes`) where ``df`` has rows there, else the
    shape with the most kernels (the first such, in ``df``'s order)."""
    at = at_main_shapes(df, main)
    if len(at) or df is None or not len(df):
        return at
    counts = df.drop_duplicates(["kernel", "M", "N", "K"]).groupby(["M", "N", "K"], sort=False).size()
    M, N, K = counts.idxmax()
    return df[(df["M"] == M) & (df["N"] == N) & (df["K"] == K)]


def experiment_rows(df: pd.DataFrame, name: str) -> pd.DataFrame:
    return df[df["experiment"].astype(str) == name] if "experiment" in df.columns else df.iloc[0:0]


def by_kernel(df: pd.DataFrame) -> dict[str, pd.Series]:
    return {str(r["kernel"]): r for _, r in df.iterrows()}


def labels_in(df: pd.DataFrame, experiment: str) -> list[tuple[str, tuple[int, int, int]]]:
    """The labels ``df`` holds, in the experiment's order; labels it does not define follow, each
    with the shape of its first row."""
    defined = [(p.label, (p.M, p.N, p.K)) for p in experiments.points(experiment)]
    present = set(df["label"].astype(str))
    known = [(lab, s) for lab, s in defined if lab in present]
    extra = df[~df["label"].astype(str).isin([lab for lab, _ in known])].drop_duplicates("label")
    return known + [(str(r.label), (int(r.M), int(r.N), int(r.K))) for r in extra.itertuples()]


def stride_labels() -> tuple[str, str]:
    a, b = experiments.points("strides")
    return a.label, b.label
