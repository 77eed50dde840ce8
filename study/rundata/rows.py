"""Selecting rows of a run's tables: kernel order, the main experiment, one row per kernel.

Selection only (no figure is computed here): the derive step and the report both use it, so a
table and its rendering pick the same rows. The order of kernels and the experiments' points are
arguments: derive passes the registry's, the report those the run directory records
(``kernels.csv``, ``points.csv``), so that a run is rendered in its own terms.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd


def order(kid: str, ids: Sequence[str]) -> int:
    """The place of kernel ``kid`` among ``ids`` (kernels not among them last)."""
    return ids.index(kid) if kid in ids else len(ids)


def in_order(df: pd.DataFrame, ids: Sequence[str]) -> pd.DataFrame:
    return df.iloc[sorted(range(len(df)), key=lambda i: order(str(df["kernel"].iloc[i]), ids))]


def main_rows(df: pd.DataFrame, ids: Sequence[str]) -> pd.DataFrame:
    """The main-experiment rows, one per kernel (the last recorded wins), in the order of ``ids``."""
    if "experiment" in df.columns:
        df = df[df["experiment"].astype(str) == "main"]
    return in_order(df.drop_duplicates("kernel", keep="last"), ids) if len(df) else df


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


def labels_in(df: pd.DataFrame, defined: Sequence[tuple[str, tuple[int, int, int]]]
              ) -> list[tuple[str, tuple[int, int, int]]]:
    """The labels ``df`` holds, in the order of ``defined`` (an experiment's (label, shape) pairs);
    labels it does not define follow, each with the shape of its first row."""
    present = set(df["label"].astype(str))
    known = [(lab, s) for lab, s in defined if lab in present]
    extra = df[~df["label"].astype(str).isin([lab for lab, _ in known])].drop_duplicates("label")
    return known + [(str(r.label), (int(r.M), int(r.N), int(r.K))) for r in extra.itertuples()]
