"""Spread across passes (`docs/method.md#spread`): a run measures its headline comparisons in
several passes (``experiments.PASSES``), and a margin is a result only where the passes agree.

``representatives`` keeps, per measurement, the row of its median pass (what the ledgers and
every table derived from them describe); ``comparisons`` gives each headline comparison (a
kernel against cuBLAS, a rung against the one before, a twin against its CUDA kernel) as the
median and the min–max over the passes both sides were timed in, paired pass by pass, and its
``verdict``: "faster" or "slower" only where the whole min–max interval lies on one side of 1,
"within noise" otherwise. A run of one pass (or made before runs had passes) has intervals of
one point: its verdicts say so ("one pass").
"""

from __future__ import annotations

import math

import pandas as pd

from study import kernels as registry
from study.derive.selection import order
from study.rundata.tables import T

NAN = math.nan
# what identifies one measurement across passes
KEY = ["experiment", "label", "kernel", "M", "N", "K", "ld"]


def _key(df: pd.DataFrame) -> list[str]:
    return [c for c in KEY if c in df.columns]


def passes_of(df: pd.DataFrame) -> pd.Series:
    """Each row's pass (1 where the run predates passes)."""
    if "pass" not in df.columns:
        return pd.Series(1, index=df.index)
    return pd.to_numeric(df["pass"], errors="coerce").fillna(1).astype(int)


def representatives(times: pd.DataFrame) -> pd.DataFrame:
    """One row per measurement: the row of its median pass by time (the lower median where the
    number of passes is even), with ``passes`` the number of passes it was timed in and
    ``ms_fastest`` / ``ms_slowest`` the least and greatest time over them."""
    if times.empty:
        return times.assign(passes=pd.Series(dtype=int), ms_fastest=pd.Series(dtype=float),
                            ms_slowest=pd.Series(dtype=float))
    df = times.assign(_pass=passes_of(times), _ms=pd.to_numeric(times["ms"], errors="coerce"))
    key = [c for c in _key(df)]
    keep, counts, fastest, slowest = [], [], [], []
    for _, g in df.groupby([df[c].astype(str) for c in key], sort=False, dropna=False):
        g = g.sort_values(["_ms", "_pass"], kind="stable")
        keep.append(g.index[(len(g) - 1) // 2])
        counts.append(len(g))
        fastest.append(g["_ms"].min())
        slowest.append(g["_ms"].max())
    out = df.loc[keep].drop(columns=["_pass", "_ms"]).assign(passes=counts, ms_fastest=fastest,
                                                                ms_slowest=slowest)
    return out.loc[sorted(out.index)]


def verdict(lo: float, hi: float, passes: int) -> str:
    """What an interval of ratios (above 1: the first is faster) says: "faster" or "slower" where
    it lies wholly on one side of 1, "within noise" where it holds 1; with one pass there is no
    interval to judge ("one pass")."""
    if passes < 2 or not (math.isfinite(lo) and math.isfinite(hi)):
        return "one pass"
    if lo > 1.0:
        return "faster"
    if hi < 1.0:
        return "slower"
    return "within noise"


def _by_pass(df: pd.DataFrame, kid: str, experiment: str, label: str) -> dict[int, float]:
    """Pass -> time (ms) of ``kid`` in one experiment point."""
    rows = df[(df["kernel"].astype(str) == kid) & (df["experiment"].astype(str) == experiment)
              & (df["label"].astype(str) == label)]
    if "ld" in rows.columns:
        rows = rows[pd.to_numeric(rows["ld"], errors="coerce").isna()]
    ms = pd.to_numeric(rows["ms"], errors="coerce")
    return {int(p): float(m) for p, m in zip(passes_of(rows), ms) if math.isfinite(m)}


def ratio(a: dict[int, float], b: dict[int, float]) -> tuple[float, float, float, int]:
    """(median, min, max, passes) of ``b``'s time over ``a``'s, pass by pass (above 1: ``a`` is
    faster), over the passes both were timed in; NaNs and 0 passes where they share none."""
    both = sorted(set(a) & set(b))
    if not both:
        return NAN, NAN, NAN, 0
    r = pd.Series([b[p] / a[p] for p in both])
    return float(r.median()), float(r.min()), float(r.max()), len(both)


VENDOR = "best vendor"  # the ``b`` of a comparison against the faster vendor kernel of each pass


def _vendor_by_pass(times: pd.DataFrame, experiment: str, label: str) -> dict[int, float]:
    """Pass -> the time of the fastest vendor kernel (cuBLAS's default, the best cuBLASLt
    algorithm) timed in that pass at one point."""
    best: dict[int, float] = {}
    for k in registry.KERNELS:
        if k.impl == "cublas":
            for p, ms in _by_pass(times, k.id, experiment, label).items():
                best[p] = min(best.get(p, ms), ms)
    return best


def _row(what: str, a: str, b: str, experiment: str, label: str, times: pd.DataFrame) -> dict:
    theirs = (_vendor_by_pass(times, experiment, label) if b == VENDOR
              else _by_pass(times, b, experiment, label))
    med, lo, hi, n = ratio(_by_pass(times, a, experiment, label), theirs)
    return {"comparison": what, "a": a, "b": b, "experiment": experiment, "label": label,
            "ratio": med, "ratio_lo": lo, "ratio_hi": hi, "passes": n, "verdict": verdict(lo, hi, n)}


def comparisons(times: pd.DataFrame) -> pd.DataFrame:
    """Every headline comparison of the run, over its passes: each kernel against the fastest
    vendor kernel of each pass at each repeated point (``vs_baseline``, b ``VENDOR``), each rung of
    the ladder against the rung before it in the main experiment (``step``), each Triton twin
    against its CUDA kernel there (``twin``). ``ratio`` is b's time over a's: above 1, a (the
    kernel, the later rung, the twin) is faster."""
    out = []
    points = times[["experiment", "label"]].astype(str).drop_duplicates()
    repeated = points[[bool((passes_of(times[(times["experiment"].astype(str) == e)
                                               & (times["label"].astype(str) == lab)]) > 1).any())
                       for e, lab in zip(points["experiment"], points["label"])]]
    if not len(repeated):  # a run of one pass: its main experiment, judged as one pass
        repeated = points[points["experiment"] == "main"]
    for e, lab in zip(repeated["experiment"], repeated["label"]):
        here = times[(times["experiment"].astype(str) == e) & (times["label"].astype(str) == lab)]
        for kid in sorted(set(here["kernel"].astype(str)), key=order):
            out.append(_row("vs_baseline", kid, VENDOR, e, lab, times))
    main = times[times["experiment"].astype(str) == "main"]
    timed = set(main["kernel"].astype(str))
    ladder = [k.id for k in registry.cuda_ladder() if k.id in timed]
    for prev, cur in zip(ladder, ladder[1:]):
        out.append(_row("step", cur, prev, "main", "main", times))
    for t in registry.KERNELS:
        if t.impl == "triton" and t.twin in timed and t.id in timed:
            out.append(_row("twin", t.id, t.twin, "main", "main", times))
    return pd.DataFrame(out, columns=[*T.comparisons.columns])
