"""``python -m study.predict --check DIR``: every registered kernel that ``--kernel`` takes,
predicted at every shape DIR's run timed on contiguous operands, beside the time it measured (the
median of its rows at that shape), and the ladder's steps and the twins' ratios at the main
shape, predicted beside measured; where DIR holds the decode panel (``decode.csv``), every
registered kernel at every point of it too, summed up per kernel. The measured times are only
compared with: no prediction reads them. One line per prediction as it is made, then the summary;
``--json`` one object per line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pandas as pd

from study import kernels
from study.errors import InputError

MAIN = (4096, 4096, 4096)
PANEL = "panel"  # the source of a time read from the decode panel
BAND_PCT = 10.0  # a kernel at a shape the run timed counts as predicted within this
PANEL_BAND_PCT = 15.0  # a panel point off the main shape counts as predicted within this


def config_of(text, flag: str = "config") -> dict | None:
    """An autotuned kernel's configuration as a run's rows record it (a JSON object: BM, BN, BK,
    GROUP_M, num_warps, num_stages, ...); None for an empty cell."""
    if text is None or (isinstance(text, float) and math.isnan(text)) or not str(text).strip():
        return None
    try:
        cfg = json.loads(str(text))
    except json.JSONDecodeError as e:
        raise InputError(f"{flag} {text}: not JSON ({e.msg})") from None
    if not isinstance(cfg, dict):
        raise InputError(f"{flag} {text}: expected a JSON object, e.g. {{\"BM\": 64, \"BN\": 128, ...}}")
    return cfg


def _by_point(df: pd.DataFrame) -> pd.DataFrame:
    """Median ms per (kernel, M, N, K, config): the configuration a tuned kernel was timed at
    travels with its time (an empty config for the others)."""
    df = df.assign(config=df["config"].fillna("").astype(str) if "config" in df.columns else "")
    return df.groupby(["kernel", "M", "N", "K", "config"], as_index=False)["ms"].median()


def measured_times(results: pd.DataFrame) -> pd.DataFrame:
    """Median ms per (kernel, M, N, K, configuration timed) over a run's rows on contiguous
    operands."""
    r = results
    if "ld" in r.columns:
        r = r[pd.to_numeric(r["ld"], errors="coerce").isna()]
    return _by_point(r.assign(ms=pd.to_numeric(r["ms"], errors="coerce")).dropna(subset=["ms"]))


def panel_times(decode: pd.DataFrame) -> pd.DataFrame:
    """The decode panel's timed points of registered kernels as ``measured_times`` gives a run's
    (ms, the median where a point was recorded twice), each marked ``source`` = ``PANEL``."""
    d = decode[decode["status"].astype(str).str.strip() == "ok"]
    d = d.assign(ms=pd.to_numeric(d["gpu_us"], errors="coerce") / 1e3,
                 M=pd.to_numeric(d["M"], errors="coerce")).dropna(subset=["ms", "M"])
    d = d[d["kernel"].astype(str).isin(kernels.BY_ID)]
    return _by_point(d).astype({"M": int, "N": int, "K": int}).assign(source=PANEL)


def predictable(kid: str) -> bool:
    """Whether ``--kernel`` takes the kernel: a CUDA kernel with a registered launch, or a tiled
    Triton kernel (a program per tile), on the FP32 FMA units (the model has no tensor cores)."""
    k = kernels.get(kid)
    return tiled_triton(k) or (k.impl == "cuda" and bool(k.registrations) and k.precision == "fp32")


def tiled_triton(k) -> bool:
    """A Triton kernel of a program per tile on the FP32 FMA units (the model has no tensor cores)."""
    return k.impl == "triton" and bool(k.tile or k.tuned) and k.precision == "fp32"


def sampled_clocks(clocks: pd.DataFrame) -> dict[tuple, float]:
    """The median SM clock (MHz) a run sampled while it timed each (kernel, M, N, K)
    (``clocks.csv``); none where the file lacks its columns."""
    if not {"kernel", "M", "N", "K", "sm_clock_mhz"} <= set(clocks.columns):
        return {}
    c = clocks.assign(mhz=pd.to_numeric(clocks["sm_clock_mhz"], errors="coerce")).dropna(subset=["mhz"])
    med = c.groupby(["kernel", "M", "N", "K"])["mhz"].median()
    return {(str(k), int(m), int(n), int(kk)): float(v) for (k, m, n, kk), v in med.items()}


def at_clock(p: dict, clock_mhz: float, max_mhz: float) -> float:
    """The ms of prediction ``p`` (made at the GPU's ``max_mhz``) had the SMs run at
    ``clock_mhz``: its loop's cycles take longer, DRAM's stream and the launch's fixed cost do not."""
    return p["launch_ms"] + max(p["compute_ms"] * max_mhz / clock_mhz, p["dram_ms"])


def run(times: pd.DataFrame, predict_one: Callable, emit: Callable[[dict], None],
        clocks: dict[tuple, float] | None = None, max_mhz: float | None = None) -> list[dict]:
    """Predict each (kernel, shape) of ``times`` with ``predict_one(kid, shape, loops, config)``
    (``config``: the configuration an autotuned kernel was timed at, else None; it returns
    :func:`study.predict.model.predict`'s dict or raises InputError); ``emit`` each row. Where
    ``clocks`` (:func:`sampled_clocks`) put a point's SM clock below 99% of the GPU's
    ``max_mhz`` (the clock the model predicts at: the GPU held it back, for power or heat), the
    row also gives that clock and the error at it (:func:`at_clock`): how much of the error is
    the clock, which the model does not predict."""
    rows = []
    loops: dict = {}
    for _, t in times.iterrows():
        kid, shape = str(t["kernel"]), (int(t["M"]), int(t["N"]), int(t["K"]))
        if kid not in kernels.BY_ID or not predictable(kid):
            continue
        config = config_of(t.get("config"))
        try:
            p = predict_one(kid, shape, loops, config)
        except InputError as e:
            row = {"kernel": kid, "shape": list(shape), "measured_ms": float(t["ms"]), "error": str(e)}
        else:
            row = {"kernel": kid, "shape": list(shape), "measured_ms": float(t["ms"]), "ms": p["ms"],
                   "error_pct": 100 * (p["ms"] / float(t["ms"]) - 1), "issue_pct": p["issue_pct"],
                   "bound": p["bound"]}
            clock = (clocks or {}).get((kid, *shape))
            if clock and max_mhz and clock < 0.99 * max_mhz:
                row["clock_mhz"] = clock
                row["error_at_clock_pct"] = 100 * (at_clock(p, clock, max_mhz) / float(t["ms"]) - 1)
        if config:
            row["config"] = config
        if t.get("source") == PANEL:
            row["source"] = PANEL
        rows.append(row)
        emit(row)
    return rows


def summary(rows: list[dict]) -> list[dict]:
    """Per shape: mean and largest |error| and the kernels outside ±``BAND_PCT``; at the main shape, each
    step of the CUDA ladder and each twin ratio, predicted beside measured."""
    ok = [r for r in rows if "ms" in r and r.get("source") != PANEL]
    out = []
    for shape in sorted({tuple(r["shape"]) for r in ok}):
        at = [r for r in ok if tuple(r["shape"]) == shape]
        errs = [abs(r["error_pct"]) for r in at]
        worst = max(at, key=lambda r: abs(r["error_pct"]))
        row = {"summary": "shape", "shape": list(shape), "kernels": len(at),
               "mean_abs_error_pct": sum(errs) / len(errs), "max_abs_error_pct": max(errs),
               "worst": worst["kernel"],
               "outside_10": [r["kernel"] for r in at if abs(r["error_pct"]) > BAND_PCT]}
        held = [r for r in at if "clock_mhz" in r]
        if held:  # the same with each kernel held back at its clock
            row["held_back"] = [r["kernel"] for r in held]
            row["mean_abs_error_at_clock_pct"] = sum(
                abs(r.get("error_at_clock_pct", r["error_pct"])) for r in at) / len(at)
        out.append(row)
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
    return out + panel_summary(rows)


def panel_summary(rows: list[dict]) -> list[dict]:
    """Per kernel over the decode panel's points: how many were predicted, the mean and largest
    |error| (and where), and how many lie outside ±``PANEL_BAND_PCT``."""
    out = []
    at = [r for r in rows if r.get("source") == PANEL]
    for kid in dict.fromkeys(r["kernel"] for r in at):
        mine = [r for r in at if r["kernel"] == kid]
        ok = [r for r in mine if "ms" in r]
        if not ok:
            out.append({"summary": PANEL, "kernel": kid, "points": len(mine), "predicted": 0})
            continue
        errs = [abs(r["error_pct"]) for r in ok]
        worst = max(ok, key=lambda r: abs(r["error_pct"]))
        out.append({"summary": PANEL, "kernel": kid, "points": len(mine), "predicted": len(ok),
                    "mean_abs_error_pct": sum(errs) / len(errs), "max_abs_error_pct": max(errs),
                    "worst": worst["shape"], "outside_15": sum(e > PANEL_BAND_PCT for e in errs)})
    return out


def toolchain(results: pd.DataFrame, here: str | None) -> dict | None:
    """Where the Triton this process compiles with (``here``) is not the one the run's Triton rows
    name: a row that says so, since the Triton kernels are then predicted from SASS that may not
    be the SASS the run timed; else None."""
    if "triton" not in results.columns or "impl" not in results.columns:
        return None
    run = sorted({str(v) for v in results.loc[results["impl"] == "triton", "triton"].dropna()})
    if not run or run == [here]:
        return None
    return {"summary": "toolchain", "triton_here": here, "triton_run": run}


def line(row: dict) -> str:
    """One row as a line of text."""
    shape = "x".join(map(str, row.get("shape", [])))
    if row.get("summary") == "toolchain":
        return (f"Triton here: {row['triton_here'] or 'none'}; the run's Triton rows: "
                f"{', '.join(row['triton_run'])}: its kernels are predicted from the SASS this "
                "Triton writes, which may not be the SASS the run timed")
    if row.get("summary") == "shape":
        out = ", ".join(row["outside_10"]) or "none"
        held = (f"; at the clock each ran at ({', '.join(row['held_back'])} held back), mean |error| "
                f"{row['mean_abs_error_at_clock_pct']:.1f}%" if row.get("held_back") else "")
        return (f"at {shape}: {row['kernels']} kernels, mean |error| {row['mean_abs_error_pct']:.1f}%, "
                f"largest {row['max_abs_error_pct']:.1f}% ({row['worst']}); outside ±{BAND_PCT:g}%: {out}"
                + held)
    if row.get("summary") == PANEL:
        if not row["predicted"]:
            return f"decode panel, {row['kernel']}: none of {row['points']} points predicted"
        worst = "x".join(map(str, row["worst"]))
        return (f"decode panel, {row['kernel']}: {row['predicted']} of {row['points']} points predicted, "
                f"mean |error| {row['mean_abs_error_pct']:.1f}%, largest {row['max_abs_error_pct']:.1f}% "
                f"(at {worst}); outside ±{PANEL_BAND_PCT:g}%: {row['outside_15']}")
    if row.get("summary") in ("step", "twin"):
        return (f"{row['summary']} {row['a']} / {row['b']}: measured {row['measured']:.3f}x, predicted "
                f"{row['predicted']:.3f}x ({row['error_pct']:+.1f}%)")
    if "error" in row:
        return f"{row['kernel']} at {shape}: not predicted: {row['error']}"
    held = (f"; the SMs ran at {row['clock_mhz']:.0f} MHz, at which {row['error_at_clock_pct']:+.1f}%"
            if "clock_mhz" in row else "")
    return (f"{row['kernel']} at {shape}: predicted {row['ms']:.4f} ms, measured {row['measured_ms']:.4f} "
            f"({row['error_pct']:+.1f}%), issue {row['issue_pct']:.1f}%, bound: {row['bound']}{held}")


def emitter(as_json: bool) -> Callable[[dict], None]:
    def emit(row: dict) -> None:
        print(json.dumps(row, sort_keys=True) if as_json else line(row), flush=True)
    return emit
