"""Markdown and text helpers the sections share: formatting numbers, tables and notes.

They format values; they compute none (the figures come from the derived tables).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from study.report.load import NOT_IN_RUN, Run
from study.rundata.rows import by_kernel, experiment_rows  # noqa: F401

__all__ = [
    "BOUND_NAMES", "NOT_IN_RUN", "by_kernel", "col", "comparison", "config_text", "experiment_rows",
    "findings", "gpu_name", "md", "missing", "num", "op_name", "prov", "prov_col", "ratio_range", "shape",
    "short", "spaced", "spread_text", "truthy",
]

# the bound model's resources (model_errors.csv / bounds.csv ``bound``) as the report names them
BOUND_NAMES = {
    "fma": "FMA pipe",
    "issue": "issue",
    "smem": "shared memory",
    "l1": "L1 requests",
    "dram": "DRAM",
    "latency": "latency",
}


def col(df: pd.DataFrame, name: str) -> pd.Series:
    """Column ``name`` as numbers; all NaN where the table has no such column."""
    if name not in df.columns:
        return pd.Series(np.nan, index=df.index, dtype=float)
    return pd.to_numeric(df[name], errors="coerce")


def num(x, fmt: str = "{:.1f}") -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "–"
    return fmt.format(v) if math.isfinite(v) else "–"


def shape(M, N, K) -> str:
    return f"{int(M)}×{int(N)}×{int(K)}"


def md(header: list[str], rows: list[list]) -> list[str]:
    cell = lambda c: str(c).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return out + [""]


def missing(what: str, why: str) -> list[str]:
    return [f"*{what}: {why}.*", ""]


def prov(run: Run, column: str) -> str:
    if column not in run.results.columns:
        return ""
    vals = [str(v) for v in run.results[column].dropna().unique() if str(v).strip() and str(v) != "nan"]
    return ", ".join(vals)


def prov_col(df: pd.DataFrame, column: str) -> str:
    return ", ".join(str(v) for v in df[column].dropna().unique()) if column in df.columns else ""


def gpu_name(run: Run) -> str:
    return run.gpu.name if run.gpu else (prov(run, "gpu") or "unknown GPU")


def short(name: str) -> str:
    """'NVIDIA H200' -> 'H200'; 'NVIDIA GeForce RTX 4090' -> 'RTX 4090'."""
    return name.replace("NVIDIA ", "").replace("GeForce ", "").strip() or name


def ratio_range(vals: list[float], fmt: str = "{:.2f}×") -> str:
    vals = [v for v in vals if np.isfinite(v)]
    if not vals:
        return "–"
    lo, hi = min(vals), max(vals)
    return fmt.format(lo) if math.isclose(lo, hi) else f"{fmt.format(lo)}–{fmt.format(hi)}"


def spaced(label: str) -> str:
    """'n=4097' -> 'n = 4097' for prose."""
    return label.replace("=", " = ")


def config_text(cfg) -> str:
    if not isinstance(cfg, str) or not cfg.strip():
        return "not recorded"
    try:
        d = json.loads(cfg)
    except json.JSONDecodeError:
        return cfg
    return ", ".join(f"{k}={v}" for k, v in d.items()) if isinstance(d, dict) else str(d)


def op_name(column: str) -> str:
    for p in ("LDS", "LDG"):
        if column.startswith(p) and column[len(p):].isdigit():
            return f"{p}.{column[len(p):]}"
    return column


def truthy(v) -> bool:
    return str(v).strip().lower() in ("true", "1", "yes")


def comparison(run: Run, what: str, a: str, b: str | None = None, experiment: str = "main",
               label: str = "main"):
    """The row of comparisons.csv for ``a`` against ``b`` (``what``: vs_baseline, against the best
    vendor kernel, where ``b`` is left out; step; twin) at one point; None where the run has none."""
    c = run.tables.get("comparisons")
    if c is None:
        return None
    hit = c[(c["comparison"] == what) & (c["a"] == a) & (c["experiment"] == experiment)
            & (c["label"].astype(str) == label)]
    if b is not None:
        hit = hit[hit["b"] == b]
    return hit.iloc[0] if len(hit) else None


def spread_text(row, fmt: str = "{:.3f}×") -> str:
    """A comparison as text: its median ratio and, over several passes, their min–max and the
    verdict ("1.013× (1.009–1.016 over 3 passes: faster)")."""
    if row is None:
        return "–"
    med = num(row["ratio"], fmt)
    if not row["passes"] or row["passes"] < 2:
        return f"{med} (one pass)"
    return (f"{med} ({num(row['ratio_lo'], fmt)}–{num(row['ratio_hi'], fmt)} over {int(row['passes'])} "
            f"passes: {row['verdict']})")


def findings(run: Run, key: str, what: str, units: dict) -> list[str]:
    """A panel's findings table ``key`` as bullets: each finding, its value in its unit's format
    (``units``), where, over how many points and its note."""
    f = run.tables.get(key)
    if f is None:
        return missing(what, run.missing.get(key, f"{key}.csv has no rows"))
    out = []
    for r in f.itertuples():
        value = num(r.value, units.get(str(r.unit), "{:g}"))
        where = f" at {r.where}" if isinstance(r.where, str) and r.where.strip() else ""
        points = getattr(r, "points", math.nan)
        about = [f"over {int(points)} points"] if points == points else []
        about += [r.note] if isinstance(r.note, str) and r.note.strip() else []
        tail = f" ({'; '.join(about)})" if about else ""
        out.append(f"- **Finding:** {r.finding}: **{value}**{where}{tail}")
    return [*out, ""]
