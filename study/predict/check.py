"""``python -m study.predict --check DIR``: every registered kernel that ``--kernel`` takes,
predicted at every shape DIR's run timed on contiguous operands, beside the time it measured (the
median of its rows at that shape), and the ladder's steps and the twins' ratios at the main
shape, predicted beside measured. The measured times are only compared with: no prediction reads
them. One line per prediction as it is made, then the summary; ``--json`` one object per line.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd

from study import kernels
from study.errors import InputError

MAIN = (4096, 4096, 4096)


def measured_times(results: pd.DataFrame) -> pd.DataFrame:
    """Median ms per (kernel, M, N, K) over a run's rows on contiguous operands."""
    r = results
    if "ld" in r.columns:
        r = r[pd.to_numeric(r["ld"], errors="coerce").isna()]
    r = r.assign(ms=pd.to_numeric(r["ms"], errors="coerce")).dropna(subset=["ms"])
    return r.groupby(["kernel", "M", "N", "K"], as_index=False)["ms"].median()


def predictable(kid: str) -> bool:
    """Whether ``--kernel`` takes the kernel: a CUDA kernel with a registered launch, or a tiled
    Triton kernel (a program per tile)."""
    k = kernels.get(kid)
    return tiled_triton(k) or (k.impl == "cuda" and bool(k.registrations))


def tiled_triton(k) -> bool:
    return k.impl == "triton" and bool(k.tile or k.tuned)


def run(times: pd.DataFrame, predict_one: Callable, emit: Callable[[dict], None]) -> list[dict]:
    """Predict each (kernel, shape) of ``times`` with ``predict_one(kid, shape, loops)`` (which
    returns :func:`study.predict.model.predict`'s dict or raises InputError); ``emit`` each row."""
    rows = []
    loops: dict = {}
    for _, t in times.iterrows():
        kid, shape = str(t["kernel"]), (int(t["M"]), int(t["N"]), int(t["K"]))
        if kid not in kernels.BY_ID or not predictable(kid):
            continue
        try:
            p = predict_one(kid, shape, loops)
        except InputError as e:
            row = {"kernel": kid, "shape": list(shape), "measured_ms": float(t["ms"]), "error": str(e)}
        else:
            row = {"kernel": kid, "shape": list(shape), "measured_ms": float(t["ms"]), "ms": p["ms"],
                   "error_pct": 100 * (p["ms"] / float(t["ms"]) - 1), "issue_pct": p["issue_pct"],
                   "bound": p["bound"]}
        rows.append(row)
        emit(row)
    return rows


def summary(rows: list[dict]) -> list[dict]:
    """Per shape: mean and largest |error| and the kernels outside ±10%; at the main shape, each
    step of the CUDA ladder and each twin ratio, predicted beside measured."""
    ok = [r for r in rows if "ms" in r]
    out = []
    for shape in sorted({tuple(r["shape"]) for r in ok}):
        at = [r for r in ok if tuple(r["shape"]) == shape]
        errs = [abs(r["error_pct"]) for r in at]
        worst = max(at, key=lambda r: abs(r["error_pct"]))
        out.append({"summary": "shape", "shape": list(shape), "kernels": len(at),
                    "mean_abs_error_pct": sum(errs) / len(errs), "max_abs_error_pct": max(errs),
                    "worst": worst["kernel"],
                    "outside_10": [r["kernel"] for r in at if abs(r["error_pct"]) > 10]})
    main = {r["kernel"]: r for r in ok if tuple(r["shape"]) == MAIN}

    def ratio(a: str, b: str, what: str) -> dict | None:
        if a not in main or b not in main:
            return None
        meas = main[b]["measured_ms"] / main[a]["measured_ms"]
        pred = main[b]["ms"] / main[a]["ms"]
        return {"summary": what, "a": a, "b": b, "measured": meas, "predicted": pred,
                "error_pct": 100 * (pred / meas - 1)}

    ladder = [k.id for k in kernels.cuda_ladder()]
    for b, a in zip(ladder, ladder[1:]):
        r = ratio(a, b, "step")
        if r:
            out.append(r)
    for c in kernels.by_impl("cuda"):
        for twin in kernels.twins_of(c.id):
            r = ratio(twin.id, c.id, "twin")
            if r:
                out.append(r)
    return out


def line(row: dict) -> str:
    """One row as a line of text."""
    shape = "x".join(map(str, row.get("shape", [])))
    if row.get("summary") == "shape":
        out = ", ".join(row["outside_10"]) or "none"
        return (f"at {shape}: {row['kernels']} kernels, mean |error| {row['mean_abs_error_pct']:.1f}%, "
                f"largest {row['max_abs_error_pct']:.1f}% ({row['worst']}); outside ±10%: {out}")
    if row.get("summary") in ("step", "twin"):
        return (f"{row['summary']} {row['a']} / {row['b']}: measured {row['measured']:.3f}x, predicted "
                f"{row['predicted']:.3f}x ({row['error_pct']:+.1f}%)")
    if "error" in row:
        return f"{row['kernel']} at {shape}: not predicted: {row['error']}"
    return (f"{row['kernel']} at {shape}: predicted {row['ms']:.4f} ms, measured {row['measured_ms']:.4f} "
            f"({row['error_pct']:+.1f}%), issue {row['issue_pct']:.1f}%, bound: {row['bound']}")


def emitter(as_json: bool) -> Callable[[dict], None]:
    def emit(row: dict) -> None:
        print(json.dumps(row, sort_keys=True) if as_json else line(row), flush=True)
    return emit
