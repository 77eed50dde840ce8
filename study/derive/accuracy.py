"""The accuracy ledger's derived tables (`docs/method.md#accuracy-ledger`) from its measured rows
(``accuracy.csv``, written by ``python -m study.accuracy``).

``ledger``: per kernel, distribution and K its relative error and largest error in ulps, beside the
baseline's (cuBLAS FP32, ``registry.BASELINE``) at the same point and its ratio to it.
``summary``: per kernel its time and TFLOP/s at the speed shape (the median of its passes), its
speed-up over the best vendor kernel there (the fastest of the registry's cuBLAS kernels in each
pass), the median, least and greatest over the passes and the verdict they give
(``spread.verdict``), where its time comes from (``speed_from``: "ledger", its own speed rows, the
vendor's from the same rows; "run", the run's main experiment at the same shape, ``results.csv``,
the vendor's from there too: the FP32 kernels, which the ledger does not time again unless asked),
its relative error on standard-normal
inputs at the middle K, its worst ratio to the baseline's error and where, its largest ulp error
on uniform inputs (``ULP_DIST``: no sum cancels there, so no output lies near zero, where an ulp
is tiny and any error is millions of them), and whether it is *FP32-class*: at every
(distribution, K) both measured, its relative error at most ``FP32_CLASS_FACTOR`` times the
baseline's. ``findings``: the FP32 FMA peak and the TF32
tensor-core peak at the GPU's clock (the figure's limits), which kernels are FP32-class, the
fastest FP32-class kernel and its speed-up over the best vendor kernel.

``tc_ledger``: per tensor-core kernel with a speed row (``Kernel.tensor_core``), the time its
products take at the TF32 peak (``GPU.tf32_peak_gflops``; three products for 3xTF32) and that
floor's share of its time, its MMA instructions per output where the source fixes their shape, the
bytes of the pass before the product (``TensorCore.prepass_bytes``) and their time at the copy roof
(``copy_gbps``), and the bytes its tiles carry into shared memory (every tile's operand parts over
every k-tile) with their rate over the time the pass leaves.

Only rows with status "ok" count; where a point was measured twice the last row wins.
"""

from __future__ import annotations

import math

import pandas as pd

from study import kernels as registry
from study.derive import spread
from study.errors import InputError
from study.rundata.tables import T

FP32_CLASS_FACTOR = 4.0  # FP32-class: never more than this many times the baseline's error
ULP_DIST = "uniform"  # the distribution whose ulp errors the summary states
NAN = math.nan


def _ok(accuracy: pd.DataFrame, role: str) -> pd.DataFrame:
    lacks = [c for c in T.accuracy.required if c not in accuracy.columns]
    if lacks:
        raise InputError(f"{T.accuracy.file}: missing column{'s' * (len(lacks) > 1)} "
                         + ", ".join(map(repr, lacks)))
    d = accuracy.copy()
    for c in ("kernel", "precision", "role", "dist", "status"):
        d[c] = d[c].astype(str).str.strip()
    for c in ("K", "rel_err", "max_ulp", "ms", "M", "N"):
        if c in d.columns:
            d[c] = pd.to_numeric(d[c], errors="coerce")
    d = d.assign(pass_no=spread.passes_of(d))
    d = d[(d["role"] == role) & (d["status"] == "ok")]
    keys = ["kernel", "dist", "K"] if role == "error" else ["kernel", "pass_no"]
    return d.drop_duplicates(keys, keep="last")


def _order(kids) -> list[str]:
    known = {k: i for i, k in enumerate(registry.IDS)}
    return sorted(dict.fromkeys(kids), key=lambda k: (known.get(k, len(known)), k))


def ledger(accuracy: pd.DataFrame) -> pd.DataFrame:
    d = _ok(accuracy, "error")
    base = {(r.dist, r.K): r.rel_err for r in d[d["kernel"] == registry.BASELINE.id].itertuples()}
    dists = list(dict.fromkeys(d["dist"]))
    rows = []
    for kid in _order(d["kernel"]):
        mine = d[d["kernel"] == kid]
        for r in sorted(mine.itertuples(), key=lambda r: (dists.index(r.dist), r.K)):
            b = base.get((r.dist, r.K), NAN)
            rows.append({"kernel": kid, "precision": r.precision, "dist": r.dist, "K": int(r.K),
                         "rel_err": r.rel_err, "max_ulp": r.max_ulp, "baseline_rel_err": b,
                         "vs_baseline": r.rel_err / b if b and math.isfinite(b) else NAN})
    return pd.DataFrame(rows, columns=[*T.accuracy_ledger.columns])


def _middle_k(led: pd.DataFrame) -> int | None:
    ks = sorted(set(led["K"]))
    return ks[len(ks) // 2] if ks else None


def _vendor(by_pass: dict[str, dict[int, float]]) -> dict[int, float]:
    """Pass -> the fastest of the registry's cuBLAS kernels timed in it."""
    best: dict[int, float] = {}
    for v in (k.id for k in registry.by_impl("cublas") if k.id in by_pass):
        for p, ms in by_pass[v].items():
            best[p] = min(best.get(p, ms), ms)
    return best


def _run_speeds(times: pd.DataFrame | None, shape) -> dict[str, dict[int, float]]:
    """Kernel -> pass -> ms of the run's main experiment (``results.csv``) where it was measured at
    ``shape``: the FP32 kernels' speeds, which the ledger does not time again by default."""
    if times is None or shape is None or not len(times):
        return {}
    main = times[times["experiment"].astype(str) == "main"]
    at = (pd.to_numeric(main["M"]) == shape[0]) & (pd.to_numeric(main["N"]) == shape[1]) & (
        pd.to_numeric(main["K"]) == shape[2])
    main = main[at]
    kids = dict.fromkeys(main["kernel"].astype(str))
    return {kid: spread._by_pass(main, kid, "main", "main") for kid in kids}


def summary(accuracy: pd.DataFrame, gpu, times: pd.DataFrame | None = None) -> pd.DataFrame:
    led = ledger(accuracy)
    timed = _ok(accuracy, "speed")
    own = {kid: dict(zip(g["pass_no"], g["ms"])) for kid, g in timed.groupby("kernel", sort=False)}
    shape = next(((int(r.M), int(r.N), int(r.K)) for r in timed.itertuples()), None)
    run = _run_speeds(times, shape)
    vendors = {"ledger": _vendor(own), "run": _vendor(run)}
    mid = _middle_k(led)
    rows = []
    precisions = dict(zip(timed["kernel"], timed["precision"]))
    for kid in _order([*led["kernel"], *own]):
        mine = led[led["kernel"] == kid]
        source = "ledger" if kid in own else ("run" if run.get(kid) else "")
        by_pass = own.get(kid) or run.get(kid) or {}
        ms = float(pd.Series(list(by_pass.values())).median()) if by_pass else NAN
        med, lo, hi, n = spread.ratio(by_pass, vendors.get(source, {}))
        ratios = mine.dropna(subset=["vs_baseline"])
        worst = ratios.loc[ratios["vs_baseline"].idxmax()] if len(ratios) else None
        randn = mine[(mine["dist"] == "randn") & (mine["K"] == mid)]["rel_err"]
        precision = mine["precision"].iloc[0] if len(mine) else precisions[kid]
        rows.append({
            "kernel": kid, "precision": precision, "ms": ms,
            "tflops": 2.0 * math.prod(shape) / ms / 1e9 if shape and ms > 0 else NAN,
            "speedup_vs_vendor": med, "speedup_lo": lo, "speedup_hi": hi, "passes": n,
            "verdict": spread.verdict(lo, hi, n) if n else "", "speed_from": source,
            "rel_err_randn": float(randn.iloc[0]) if len(randn) else NAN,
            "worst_vs_baseline": float(worst["vs_baseline"]) if worst is not None else NAN,
            "worst_dist": str(worst["dist"]) if worst is not None else "",
            "worst_K": int(worst["K"]) if worst is not None else NAN,
            "max_ulp_uniform": float(mine[mine["dist"] == ULP_DIST]["max_ulp"].max()) if len(mine) else NAN,
            "fp32_class": _fp32_class(ratios, led),
        })
    return pd.DataFrame(rows, columns=[*T.accuracy_summary.columns])


PRODUCTS = {"tf32": 1, "tf32x3": 3}  # tensor-core products per multiply-add of the problem


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def tc_ledger(accuracy: pd.DataFrame, gpu) -> pd.DataFrame:
    from study.derive import config_of

    timed = _ok(accuracy, "speed")
    rows = []
    for kid in _order(timed["kernel"]):
        k = registry.BY_ID.get(kid)
        if k is None or k.tensor_core is None:
            continue
        tc, mine = k.tensor_core, timed[timed["kernel"] == kid]
        r = mine.iloc[-1]
        M, N, K = int(r["M"]), int(r["N"]), int(r["K"])
        ms = float(mine["ms"].median())
        if k.tile:
            bm, bn, bk = k.tile
        else:  # an autotuned kernel: the tile it ran, from the row's configuration
            cfg = config_of(r.get("config"))  # {} where it is not a JSON object
            bm, bn, bk = (cfg.get(d) for d in ("BM", "BN", "BK"))
        products = PRODUCTS[k.precision]
        floor = products * 2.0 * M * N * K / gpu.tf32_peak_gflops() / 1e6
        pre = tc.prepass_bytes(M, N, K)
        pre_ms = pre / gpu.copy_gbps / 1e6 if gpu.copy_gbps else NAN
        tile_b = (_cdiv(M, bm) * _cdiv(N, bn) * _cdiv(K, bk) * (bm + bn) * bk * 4 * tc.parts) if bm else NAN
        rest = ms - (pre_ms if pre_ms == pre_ms else 0.0)
        mma = (products * _cdiv(K, tc.mma[2]) / (tc.mma[0] * tc.mma[1])) if tc.mma else NAN
        rows.append({"kernel": kid, "precision": k.precision, "M": M, "N": N, "K": K,
                     "tile": f"{bm}x{bn}x{bk}" if bm else "", "products": products, "ms": ms,
                     "tc_floor_ms": floor, "tc_share_pct": 100.0 * floor / ms, "mma_per_output": mma,
                     "prepass": tc.prepass, "prepass_mb": pre / 1e6, "prepass_floor_ms": pre_ms,
                     "tile_gb": tile_b / 1e9, "tile_tbps": tile_b / rest / 1e9 if rest > 0 else NAN})
    return pd.DataFrame(rows, columns=[*T.accuracy_tc.columns])


def _fp32_class(ratios: pd.DataFrame, led: pd.DataFrame) -> str:
    """"yes" where the kernel was measured at every point the baseline was, never over the factor;
    "no" where it went over; "" where it misses a point the rule needs."""
    if ratios.empty:
        return ""
    if (ratios["vs_baseline"] > FP32_CLASS_FACTOR).any():
        return "no"
    base_points = set(zip(*(led[led["kernel"] == registry.BASELINE.id][c] for c in ("dist", "K"))))
    return "yes" if base_points <= set(zip(ratios["dist"], ratios["K"])) else ""


def findings(accuracy: pd.DataFrame, gpu, times: pd.DataFrame | None = None) -> pd.DataFrame:
    s = summary(accuracy, gpu, times)
    fp32, tf32 = gpu.peak_gflops(), gpu.tf32_peak_gflops()
    clock = f"{gpu.sm_clock_mhz:.0f} MHz"
    cls = s[s["fp32_class"] == "yes"]
    out = [
        ("fp32_peak", "the FP32 FMA peak", fp32 / 1e3, "TFLOP/s", clock, "SMs x FP32 lanes x 2 x clock"),
        ("tf32_peak", "the dense TF32 tensor-core peak", tf32 / 1e3, "TFLOP/s", clock,
         "SMs x TF32 multiply-adds per SM per clock x 2 x clock (study.arch.TF32_SOURCES)"),
        ("fp32_class", "kernels whose error is FP32-class", float(len(cls)), "kernels",
         " ".join(cls["kernel"]), f"at most {FP32_CLASS_FACTOR:g}x the baseline's error at every point"),
    ]
    fast = cls.dropna(subset=["tflops"])
    if len(fast):
        best = fast.loc[fast["tflops"].idxmax()]
        out.append(("fastest_fp32_class", "the fastest FP32-class kernel's speed-up over the best vendor "
                    "kernel", float(best["speedup_vs_vendor"]), "×", str(best["kernel"]),
                    f"{best['tflops']:.1f} TFLOP/s; {best['speedup_lo']:.2f}–{best['speedup_hi']:.2f}× over "
                    f"{int(best['passes'])} passes: {best['verdict']}"))
    return pd.DataFrame([dict(zip(T.accuracy_findings.columns, r)) for r in out],
                        columns=[*T.accuracy_findings.columns])
