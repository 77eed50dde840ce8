"""Loading a run directory for rendering: the recorded rows and every derived table, typed.

Each table is read as ``study.rundata.tables`` declares it (its file, the columns it must have,
its text columns). A missing or malformed table is recorded with the reason (its section says so);
nothing here computes a figure: the numbers come from the tables ``study.derive`` wrote. What the
report needs to know of the kernels (their order, ideas, roles), of the experiments (their points)
and of the GPU comes from the run directory too (``kernels.csv``, ``points.csv``,
``gpu_figures.csv``), so a run is rendered in the terms of the derivation that wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from study.errors import first_line
from study.rundata import results as results_io
from study.rundata import rows
from study.rundata.rundir import RunDir
from study.rundata.tables import DERIVED, T, Table

NOT_IN_RUN = "not in this run"
# what sections read of the ledger table: without it, an empty table with these columns
LEDGER_FIGURES = (
    "impl",
    "gflops",
    "pct_peak",
    "pct_peak_sampled",
    "pct_cublas",
    "cadence",
    "cadence_sampled",
)
RESULTS_REQUIRED = ["experiment", "label", "kernel", "M", "N", "K", "ms"]
# the tables a report reads: every derived one and the measured ones it renders as they are
READ = (*DERIVED, T.sass, T.clocks, T.ncu, T.predict_check)


@dataclass(frozen=True)
class Point:
    """One point of an experiment, as ``points.csv`` records it."""

    experiment: str
    label: str
    M: int
    N: int
    K: int
    ld: int | None = None


@dataclass
class Run:
    out: Path
    results: pd.DataFrame  # every recorded row, failed checks included
    measured: pd.DataFrame  # the ledger table: rows with a time and every figure
    gpu: SimpleNamespace | None  # gpu_figures.csv's row: the constants and peaks of the run's GPU
    gpu_source: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # table name -> why it is absent
    figures: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # name -> (path, why skipped)

    def table(self, key: str) -> pd.DataFrame | None:
        return self.tables.get(key)

    # --- the kernels, as kernels.csv records them -----------------------------------------------
    @property
    def kernels(self) -> pd.DataFrame:
        k = self.tables.get("kernels")
        if k is None:  # no record of the registry: the kernels in the order the rows have them
            ids = list(dict.fromkeys(self.results["kernel"].astype(str)))
            return pd.DataFrame({"id": ids, "impl": "", "roles": "", "order": range(len(ids))})
        return k

    @property
    def ids(self) -> list[str]:
        return list(self.kernels["id"].astype(str))

    def with_role(self, role: str) -> list[str]:
        """The kernels with ``role`` (kernels.csv's ``roles``), in order."""
        roles = self.kernels.get("roles", pd.Series("", index=self.kernels.index)).fillna("").astype(str)
        return [kid for kid, r in zip(self.ids, roles) if role in r.split()]

    @property
    def baseline(self) -> str:
        found = self.with_role("baseline")
        return found[0] if found else ""

    @property
    def ladder(self) -> list[str]:
        """The CUDA rungs of the ladder, in order."""
        return self.with_role("rung")

    def top(self, among) -> str:
        """The last rung among the kernels ``among`` (the ladder's last where none is a rung)."""
        picked = [kid for kid in self.ladder if kid in among]
        return (picked or self.ladder or [""])[-1]

    def headline(self, among) -> list[str]:
        """The kernels the headline compares with the baseline, in this order: the tuned kernels,
        the pipelined twins of the top rung among ``among``, and that rung (last)."""
        top = self.top(among)
        twins = self.kernels.get("pipelined_twin_of", pd.Series("", index=self.kernels.index)).fillna("")
        piped = [kid for kid, of in zip(self.ids, twins.astype(str)) if top in of.split()]
        return list(dict.fromkeys([*self.with_role("tuned"), *piped, top]))

    def kernel(self, kid: str) -> pd.Series | None:
        k = self.kernels
        hit = k[k["id"].astype(str) == kid]
        return hit.iloc[0] if len(hit) else None

    # --- row selection in this run's order ------------------------------------------------------
    def order(self, kid: str) -> int:
        return rows.order(kid, self.ids)

    def in_order(self, df: pd.DataFrame) -> pd.DataFrame:
        return rows.in_order(df, self.ids)

    def main_rows(self, df: pd.DataFrame) -> pd.DataFrame:
        return rows.main_rows(df, self.ids)

    # --- the experiments' points, as points.csv records them ------------------------------------
    def points(self, experiment: str) -> list[Point]:
        p = self.tables.get("points")
        if p is None:
            return []
        p = p[p["experiment"].astype(str) == experiment]
        return [Point(str(r.experiment), str(r.label), int(r.M), int(r.N), int(r.K),
                      None if pd.isna(r.ld) else int(r.ld)) for r in p.itertuples()]

    def labels_in(self, df: pd.DataFrame, experiment: str) -> list[tuple[str, tuple[int, int, int]]]:
        return rows.labels_in(df, [(p.label, (p.M, p.N, p.K)) for p in self.points(experiment)])

    def stride_point(self, role: str) -> Point | None:
        """The stride experiment's point of ``role``: "a" and "b" the pair every comparison is made
        against (the power-of-two stride first), "c" the contiguous aligned shape, "d" the padded
        rows."""
        p = self.tables.get("points")
        if p is None:
            return None
        hit = p[(p["experiment"].astype(str) == "strides") & (p["role"].astype(str) == role)]
        if not len(hit):
            return None
        r = hit.iloc[0]
        return Point("strides", str(r["label"]), int(r["M"]), int(r["N"]), int(r["K"]),
                     None if pd.isna(r["ld"]) else int(r["ld"]))

    def stride_labels(self) -> tuple[str, str]:
        a, b = self.stride_point("a"), self.stride_point("b")
        return (a.label if a else "", b.label if b else "")


def typed(df: pd.DataFrame, t: Table) -> pd.DataFrame:
    """Kernel ids and labels as text, the declared text columns as text, every other column as
    numbers (a text cell there becomes NaN and prints as "–")."""
    df = df.copy()
    for c in df.columns:
        if c in ("kernel", "label", "id"):
            df[c] = df[c].astype(str)
        elif not t.is_text(c):
            df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def _gpu(tab: pd.DataFrame | None) -> SimpleNamespace | None:
    if tab is None or not len(tab):
        return None
    r = tab.iloc[0]
    values = {c: (None if pd.isna(v) else v) for c, v in r.items()}
    for c in ("sms", "fp32_lanes_per_sm", "bus_width_bits", "l2_bytes", "roof_buffer_bytes"):
        if values.get(c) is not None:
            values[c] = int(values[c])
    return SimpleNamespace(**values)


def load(out_dir: Path) -> Run:
    rd = RunDir(out_dir)
    res = typed(results_io.read(rd.file(T.results), required=RESULTS_REQUIRED), T.results)
    tables, missing = {}, {}
    for t in READ:
        path = rd.file(t)
        if not path.is_file():
            if not t.optional:  # a panel the run did not measure is no gap in it
                missing[t.name] = f"{t.file} {NOT_IN_RUN}"
            continue
        try:
            df = results_io.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
            missing[t.name] = f"{t.file} is not a readable CSV ({first_line(e)})"
            continue
        lacks = [c for c in t.required if c not in df.columns]
        if lacks:
            missing[t.name] = f"{t.file} lacks column{'s' * (len(lacks) > 1)} {', '.join(lacks)}"
        elif df.empty:
            missing[t.name] = f"{t.file} has no rows"
        else:
            tables[t.name] = typed(df, t)
    gpu = _gpu(tables.get("gpu_figures"))
    source = gpu.source if gpu is not None else missing.get("gpu_figures", f"gpu_figures.csv {NOT_IN_RUN}")
    empty = res.iloc[0:0].assign(
        **{c: pd.Series(dtype=float) for c in LEDGER_FIGURES if c not in res.columns}
    )
    measured = tables.get("ledgers", empty)
    return Run(Path(out_dir), res, measured, gpu, source, tables, missing)
