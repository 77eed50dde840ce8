"""The report: every table as Markdown, every figure as a seaborn PNG, from the files of one run.

``render(out)`` reads ``<out>/data/`` (results.csv always; the ledgers, the model, the SASS, the
clock samples and the GPU description when present) and writes ``<out>/REPORT.md`` and
``<out>/figures/*.png``. It only reads: it never launches a kernel, never imports torch, never
touches a GPU. A missing or malformed input makes its section say so instead of failing (a table
without the columns it needs counts as missing; a figure or section that still fails says why in
its place), and every finding sentence is computed from the rows, so the same code reports on any GPU.

Re-render a recorded run without a GPU: ``python -m study.report reports``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from study import experiments
from study.derive import ledgers, model
from study import kernels as registry
from study import results as results_io
from study.errors import InputError
from study.errors import first_line as _first_line
from study.gpu import GPU, fp32_lanes_per_sm

REPO = Path(__file__).resolve().parent.parent
DATA_FILES = {  # optional inputs beside results.csv: key -> (file in <out>/data/, columns it must have)
    "ledgers": ("ledgers.csv", ("kernel", "impl", "M", "N", "K", "gflops", "cadence")),
    "model": ("model.csv", ("method", "p_ldg", "p_dist", "p_bcast")),
    "loo": ("loo.csv", ("kernel",)),
    "model_sass": ("model_sass.csv", ("kernel", "predicted_cadence")),
    "sass": ("sass.csv", ("kernel",)),
    "cvc": ("counted_vs_compiled.csv", ("kernel",)),
    "clocks": ("clocks.csv", ("kernel", "t_s", "sm_clock_mhz")),
    "ncu": ("ncu.csv", ("kernel", "M", "N", "K", "metric", "value")),
}
RESULTS_REQUIRED = ["experiment", "label", "kernel", "M", "N", "K", "ms"]
# every other column of every input is a number: a text cell there becomes NaN and prints as "–"
TEXT_COLUMNS = frozenset(
    {"experiment", "label", "kernel", "impl", "config", "method", "kernels", "arch", "symbol",
     "occupancy_limited_by", "error", "flag", "explanation", "metric", "unit", "ncu_kernel", "ncu"}
    | {"gpu", "cc", "torch", "triton", "cuda", "driver", "commit", "host", "run_id", "timestamp"}
)
SEED_TIMES, SEED_GPU = "rtx4090_seed.csv", "rtx4090_seed_gpu.json"
BAND_PCT = 10.0  # the model's "within" band, in percent
IMPLS = ("cuda", "triton", "cublas")
NOT_IN_RUN = "not in this run"


class Skip(Exception):
    """A figure or table that this run's data cannot support; the message says why."""


# ---------------------------------------------------------------------------------------------
# Loading


@dataclass
class Run:
    out: Path
    results: pd.DataFrame  # every recorded row, failed checks included
    measured: pd.DataFrame  # rows with a time, plus GFLOP/s, % peak, % cuBLAS, cadence (both calibers)
    gpu: GPU | None
    gpu_source: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # data key -> why it is absent
    seed: pd.DataFrame | None = None  # the seed GPU's replayed ledger table
    seed_gpu: GPU | None = None
    seed_prices: model.Prices | None = None
    seed_note: str = ""
    figures: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # name -> (path, why skipped)


def load(out_dir: Path, seed_dir: Path | None = None) -> Run:
    data = Path(out_dir) / "data"
    res = _typed(results_io.read(data / "results.csv", required=RESULTS_REQUIRED))
    tables, missing = {}, {}
    for key, (name, required) in DATA_FILES.items():
        path = data / name
        if not path.is_file():
            missing[key] = f"{name} {NOT_IN_RUN}"
            continue
        try:
            df = pd.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
            missing[key] = f"{name} is not a readable CSV ({_first_line(e)})"
            continue
        lacks = [c for c in required if c not in df.columns]
        if lacks:
            missing[key] = f"{name} lacks column{'s' * (len(lacks) > 1)} {', '.join(lacks)}"
        elif df.empty:
            missing[key] = f"{name} has no rows"
        else:
            tables[key] = _typed(df)
    gpu, source = _load_gpu(data, res)
    run = Run(Path(out_dir), res, _measure(res, gpu), gpu, source, tables, missing)
    _load_seed(run, seed_dir)
    return run


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """Kernel ids and labels as text, every column not in TEXT_COLUMNS as numbers."""
    df = df.copy()
    for c in df.columns:
        if c in ("kernel", "label"):
            df[c] = df[c].astype(str)
        elif c not in TEXT_COLUMNS:
            df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def _load_gpu(data: Path, res: pd.DataFrame) -> tuple[GPU | None, str]:
    gpu, source = None, f"gpu.json {NOT_IN_RUN}"
    path = data / "gpu.json"
    if path.is_file():
        try:
            gpu, source = GPU.from_json(path), "gpu.json"
        except InputError as e:
            source = f"gpu.json unusable ({e})"
    if gpu is None:
        try:
            r = res.iloc[0]
            gpu = GPU.from_dict(
                {
                    "name": str(r["gpu"]),
                    "sms": int(r["sms"]),
                    "cc": _cc_text(r["cc"]),
                    "fp32_lanes_per_sm": fp32_lanes_per_sm(_cc_text(r["cc"])),
                    "sm_clock_mhz": float(r["max_sm_clock_mhz"]),
                    "mem_clock_mhz": float(r["mem_clock_mhz"]),
                    "bus_width_bits": int(r["bus_width_bits"]),
                }
            )
            source += ": constants from the provenance columns of results.csv (no L2 size)"
        except (IndexError, KeyError, TypeError, ValueError, InputError) as e:
            return None, source + f", and the provenance columns are incomplete ({e})"
    if not gpu.sampled_sm_clock_mhz:
        clocks = _col(_main(res), "sm_clock_mhz")
        if clocks.gt(0).any():
            gpu = gpu.with_sampled_clock(float(clocks[clocks > 0].median()))
    return gpu, source


def _cc_text(cc) -> str:
    try:
        return f"{float(cc):.1f}"
    except (TypeError, ValueError):
        return str(cc)


def _measure(res: pd.DataFrame, gpu: GPU | None) -> pd.DataFrame:
    """The measured figures of every timed row (the one measured input is the median time)."""
    dims = res[["M", "N", "K"]]
    ok = dims.ge(1).all(axis=1) & dims.eq(dims.round()).all(axis=1) & np.isfinite(res["ms"])
    timed = res[ok & res["ms"].gt(0) & res["kernel"].isin(registry.IDS)].copy()
    if timed.empty:
        return timed.assign(gflops=pd.Series(dtype=float), pct_cublas=pd.Series(dtype=float))
    if gpu is not None:
        return ledgers.ledger_table(timed, gpu, match_on=("experiment", "label"))
    timed["impl"] = [registry.get(k).impl for k in timed["kernel"]]
    timed["gflops"] = [ledgers.gflops(m, n, k, t) for m, n, k, t in zip(timed.M, timed.N, timed.K, timed.ms)]
    base = timed[timed["impl"] == "cublas"].groupby(["experiment", "label"])["gflops"].median()
    ref = [base.get((e, lab), np.nan) for e, lab in zip(timed["experiment"], timed["label"])]
    timed["pct_cublas"] = ledgers.pct_cublas(timed["gflops"], np.array(ref, dtype=float))
    return timed


def _load_seed(run: Run, seed_dir: Path | None) -> None:
    """The seed GPU's published times, replayed through the same ledgers and model."""
    d = Path(seed_dir) if seed_dir is not None else REPO / "reports" / "data"
    tp, gp = d / SEED_TIMES, d / SEED_GPU
    if not (tp.is_file() and gp.is_file()):
        run.seed_note = f"seed files {SEED_TIMES} and {SEED_GPU} {NOT_IN_RUN} (looked in {d})"
        return
    try:
        sg = GPU.from_json(gp)
        times = pd.read_csv(tp)
        times = times[times["kernel"].astype(str).isin(registry.IDS)].assign(experiment="main", label="main")
        table = ledgers.ledger_table(times, sg)
        prices = model.calibrate_exact(table)
        run.seed, run.seed_gpu, run.seed_prices = model.apply(table, prices), sg, prices
    except (InputError, ValueError, KeyError, pd.errors.ParserError) as e:
        run.seed_note = f"the seed files in {d} could not be replayed ({e})"


# ---------------------------------------------------------------------------------------------
# Small helpers shared by tables and figures


def _order(kid: str) -> int:
    return registry.IDS.index(kid) if kid in registry.IDS else len(registry.IDS)


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.iloc[sorted(range(len(df)), key=lambda i: _order(str(df["kernel"].iloc[i])))]


def _main(df: pd.DataFrame) -> pd.DataFrame:
    """The main-experiment rows, one per kernel (the last recorded wins)."""
    if "experiment" in df.columns:
        df = df[df["experiment"].astype(str) == "main"]
    return _sorted(df.drop_duplicates("kernel", keep="last")) if len(df) else df


def _exp(df: pd.DataFrame, name: str) -> pd.DataFrame:
    return df[df["experiment"].astype(str) == name] if "experiment" in df.columns else df.iloc[0:0]


def _ledger_main(run: Run) -> pd.DataFrame:
    if "ledgers" not in run.tables:
        raise Skip(run.missing.get("ledgers", f"ledgers.csv {NOT_IN_RUN}"))
    return _main(run.tables["ledgers"])


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    """Column ``name`` as numbers; all NaN where the table has no such column."""
    if name not in df.columns:
        return pd.Series(np.nan, index=df.index, dtype=float)
    return pd.to_numeric(df[name], errors="coerce")


def _num(x, fmt: str = "{:.1f}") -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "–"
    return fmt.format(v) if math.isfinite(v) else "–"


def _shape(M, N, K) -> str:
    return f"{int(M)}×{int(N)}×{int(K)}"


def _md(header: list[str], rows: list[list]) -> list[str]:
    cell = lambda c: str(c).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return out + [""]


def _missing(what: str, why: str) -> list[str]:
    return [f"*{what}: {why}.*", ""]


def _prov(run: Run, col: str) -> str:
    if col not in run.results.columns:
        return ""
    vals = [str(v) for v in run.results[col].dropna().unique() if str(v).strip() and str(v) != "nan"]
    return ", ".join(vals)


def _gpu_name(run: Run) -> str:
    return run.gpu.name if run.gpu else (_prov(run, "gpu") or "unknown GPU")


def _short(name: str) -> str:
    """'NVIDIA H200' -> 'H200'; 'NVIDIA GeForce RTX 4090' -> 'RTX 4090'."""
    return name.replace("NVIDIA ", "").replace("GeForce ", "").strip() or name


def _by_kernel(df: pd.DataFrame) -> dict[str, pd.Series]:
    return {str(r["kernel"]): r for _, r in df.iterrows()}


def _ratio_range(vals: list[float], fmt: str = "{:.2f}×") -> str:
    vals = [v for v in vals if np.isfinite(v)]
    if not vals:
        return "–"
    lo, hi = min(vals), max(vals)
    return fmt.format(lo) if math.isclose(lo, hi) else f"{fmt.format(lo)}–{fmt.format(hi)}"


def _labels(experiment: str) -> list[tuple[str, tuple[int, int, int]]]:
    return [(p.label, (p.M, p.N, p.K)) for p in experiments.points(experiment)]


def _labels_in(df: pd.DataFrame, experiment: str) -> list[tuple[str, tuple[int, int, int]]]:
    """The labels ``df`` holds, in the experiment's order; labels it does not define follow, each
    with the shape of its first row."""
    known = [(lab, s) for lab, s in _labels(experiment) if lab in set(df["label"])]
    extra = df[~df["label"].isin([lab for lab, _ in known])].drop_duplicates("label")
    return known + [(str(r.label), (r.M, r.N, r.K)) for r in extra.itertuples()]


def _footprint(n: float) -> float:
    """Bytes of A, B and C at M = N = K = n in FP32: 3·n²·4."""
    return 3 * n * n * 4


def _fits_l2(l2_bytes: float) -> float:
    """The n whose footprint equals ``l2_bytes``."""
    return math.sqrt(l2_bytes / _footprint(1))


def _spaced(label: str) -> str:
    """'n=4097' -> 'n = 4097' for prose."""
    return label.replace("=", " = ")


# ---------------------------------------------------------------------------------------------
# Figures: one small function each; ``_finish`` titles and saves them all the same way.


def _figure(figsize: tuple[float, float], ncols: int = 1):
    """A figure of its own, outside pyplot: it needs no backend and nothing is left open."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(1, ncols)


def _finish(fig, run: Run, title: str, fig_dir: Path, name: str) -> Path:
    fig.suptitle(f"{title} — {_gpu_name(run)}", fontsize=11)
    fig.tight_layout()
    path = fig_dir / f"{name}.png"
    fig.savefig(path, dpi=110)
    return path


def fig_throughput(run: Run, fig_dir: Path) -> Path:
    df = _main(run.measured)
    if df.empty:
        raise Skip("no timed row in the main experiment")
    fig, ax = _figure((10, 4.5))
    sns.barplot(
        df,
        x="kernel",
        y="gflops",
        hue="impl",
        order=list(df["kernel"]),
        hue_order=[i for i in IMPLS if i in set(df["impl"])],
        dodge=False,
        ax=ax,
    )
    if run.gpu is not None:
        ax.axhline(
            run.gpu.peak_gflops(),
            ls="--",
            c="k",
            lw=1,
            label=f"FP32 peak at max clock ({run.gpu.peak_gflops():,.0f} GFLOP/s)",
        )
        ax.legend(fontsize=8)
    ax.set(xlabel="kernel", ylabel="throughput (GFLOP/s)")
    r = df.iloc[0]
    return _finish(fig, run, f"Throughput at {_shape(r.M, r.N, r.K)}", fig_dir, "throughput")


def fig_roofline(run: Run, fig_dir: Path) -> Path:
    led = _ledger_main(run)
    pts = led[led["ai"].notna() & led["gflops"].notna()] if "ai" in led.columns else led.iloc[0:0]
    if pts.empty or run.gpu is None:
        raise Skip("no kernel with an arithmetic intensity" if run.gpu else "no GPU constants")
    bw, peak = run.gpu.dram_gbps(), run.gpu.peak_gflops()
    x = np.logspace(np.log10(pts["ai"].min() / 2), np.log10(max(pts["ai"].max() * 2, 2 * peak / bw)), 200)
    fig, ax = _figure((8, 5.5))
    ax.plot(x, x * bw, c="0.3", lw=1.2, label=f"DRAM roof: AI × {bw:,.0f} GB/s")
    ax.axhline(peak, c="0.3", ls="--", lw=1.2, label=f"FP32 roof: {peak:,.0f} GFLOP/s (max clock)")
    cub = led[led["impl"] == "cublas"]["gflops"].dropna()
    if len(cub):
        ax.axhline(cub.iloc[0], c="tab:green", ls=":", lw=1, label=f"cuBLAS {cub.iloc[0]:,.0f} GFLOP/s")
    sns.scatterplot(pts, x="ai", y="gflops", hue="impl", style="impl", s=60, ax=ax)
    for _, r in pts.iterrows():
        ax.annotate(
            r["kernel"], (r["ai"], r["gflops"]), textcoords="offset points", xytext=(4, 3), fontsize=7
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="arithmetic intensity (FLOP/byte, byte ledger)",
        ylabel="throughput (GFLOP/s)",
    )
    ax.legend(fontsize=8)
    return _finish(fig, run, "Roofline (byte ledger)", fig_dir, "roofline")


def fig_model(run: Run, fig_dir: Path) -> Path:
    pts = (
        _model_rows(run)
        .melt(
            id_vars=["kernel", "measured"],
            value_vars=["exact", "lstsq", "sass"],
            var_name="prices",
            value_name="predicted",
        )
        .dropna()
    )
    pts = pts[(pts["measured"] > 0) & (pts["predicted"] > 0)]
    if pts.empty:
        raise Skip("no prediction beside a measured cadence")
    lo, hi = (
        pts[["measured", "predicted"]].min().min() / 1.5,
        pts[["measured", "predicted"]].max().max() * 1.5,
    )
    x = np.logspace(np.log10(lo), np.log10(hi), 50)
    fig, ax = _figure((7, 6))
    ax.fill_between(
        x, x * (1 - BAND_PCT / 100), x * (1 + BAND_PCT / 100), color="0.85", label=f"±{BAND_PCT:.0f}%"
    )
    ax.plot(x, x, c="0.3", lw=1, label="predicted = measured")
    sns.scatterplot(pts, x="measured", y="predicted", hue="prices", style="prices", s=50, ax=ax)
    for _, r in pts.drop_duplicates("kernel").iterrows():
        ax.annotate(
            r["kernel"],
            (r["measured"], r["predicted"]),
            textcoords="offset points",
            xytext=(4, -8),
            fontsize=7,
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlim=(lo, hi),
        ylim=(lo, hi),
        xlabel="measured cadence (cycles per warp-FMA per SM)",
        ylabel="predicted cadence (cycles per warp-FMA per SM)",
    )
    ax.legend(fontsize=8)
    return _finish(fig, run, "Instruction-ledger model: predicted vs measured", fig_dir, "model")


def fig_loads_per_fma(run: Run, fig_dir: Path) -> Path:
    counted = _counted_loads(run)
    sass = _sass_loads(run)
    if counted.empty and sass.empty:
        raise Skip("no counted kernel in this run and no SASS table")
    ids = sorted(set(counted.get("kernel", [])) | set(sass.get("kernel", [])), key=_order)
    pos = {k: i for i, k in enumerate(ids)}
    pal = sns.color_palette("deep")
    fig, ax = _figure((max(7, 0.7 * len(ids)), 4.8))
    w = 0.38
    for frame, dx, parts, hatch in (
        (counted, -w / 2, ("dist", "bcast", "ldg"), None),
        (sass, w / 2, ("lds", "ldg"), "//"),
    ):
        for _, r in frame.iterrows():
            bottom = 0.0
            for p in parts:
                color = pal[{"dist": 0, "bcast": 1, "ldg": 2, "lds": 4}[p]]
                ax.bar(
                    pos[r["kernel"]] + dx, r[p], w, bottom=bottom, color=color, hatch=hatch, edgecolor="white"
                )
                bottom += r[p]
    handles = [Rectangle((0, 0), 1, 1, color=pal[i]) for i in (0, 1, 2, 4)]
    ax.legend(
        handles,
        [
            "counted: 32-way LDS (dist)",
            "counted: broadcast LDS (bcast)",
            "LDG (counted / SASS)",
            "SASS: LDS of any width (hatched bars)",
        ],
        fontsize=8,
    )
    ax.set_xticks(range(len(ids)), ids)
    ax.set(
        xlabel="kernel (left bar: counted from code; right, hatched: SASS main loop)",
        ylabel="load instructions per FMA",
    )
    return _finish(fig, run, "Loads per FMA, counted vs compiled", fig_dir, "loads_per_fma")


def fig_shapes(run: Run, fig_dir: Path) -> Path:
    df = _exp(run.measured, "shapes")
    if df.empty:
        raise Skip(f"the shapes experiment (E3) is {NOT_IN_RUN}")
    order = [lab for lab, _ in _labels_in(df, "shapes")]
    fig, ax = _figure((11, 5))
    sns.barplot(_sorted(df), x="label", y="gflops", hue="kernel", order=order, palette="tab20", ax=ax)
    ax.set(yscale="log", xlabel="shape", ylabel="throughput (GFLOP/s, log scale)")
    ax.legend(fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    return _finish(fig, run, "Throughput per shape", fig_dir, "shapes")


def fig_strides(run: Run, fig_dir: Path) -> Path:
    tab = _stride_table(run)
    if tab.empty:
        raise Skip(f"the strides experiment (E4) is {NOT_IN_RUN}")
    (la, _), (lb, _) = _labels("strides")
    long = tab.melt(id_vars="kernel", value_vars=["ms_a", "ms_b"], var_name="n", value_name="ms")
    long["n"] = long["n"].map({"ms_a": la, "ms_b": lb})
    fig, (a1, a2) = _figure((12, 4.5), ncols=2)
    sns.barplot(long, x="kernel", y="ms", hue="n", ax=a1)
    a1.set(yscale="log", xlabel="kernel", ylabel="median time (ms, log scale)")
    a1.tick_params(axis="x", rotation=60)
    sns.barplot(tab, x="kernel", y="ratio", color="tab:purple", ax=a2)
    a2.axhline(1, c="k", lw=1)
    a2.set(xlabel="kernel", ylabel=f"time at {lb} ÷ time at {la}")
    a2.tick_params(axis="x", rotation=60)
    return _finish(fig, run, "Power-of-two stride", fig_dir, "strides")


def fig_sizes(run: Run, fig_dir: Path) -> Path:
    df = _exp(run.measured, "sizes")
    if df.empty:
        raise Skip(f"the sizes experiment (E2) is {NOT_IN_RUN}")
    fig, ax = _figure((9, 5))
    sns.lineplot(_sorted(df), x="M", y="gflops", hue="kernel", marker="o", palette="tab20", ax=ax)
    l2 = run.gpu.l2_bytes if run.gpu else None
    if l2:
        n = _fits_l2(l2)
        ax.axvline(n, c="k", ls="--", lw=1, label=f"3·n²·4 B = L2 ({l2 / 2**20:.0f} MiB) at n = {n:.0f}")
    ax.set_xscale("log", base=2)
    ns = sorted(set(int(n) for n in df["M"]))
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.set(yscale="log", xlabel="n (M = N = K)", ylabel="throughput (GFLOP/s, log scale)")
    ax.legend(fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    return _finish(fig, run, "Throughput vs size", fig_dir, "sizes")


def fig_clocks(run: Run, fig_dir: Path) -> Path:
    if "clocks" not in run.tables:
        raise Skip(run.missing.get("clocks", f"clocks.csv {NOT_IN_RUN}"))
    tr = _clock_trace(run.tables["clocks"])
    fig, ax = _figure((11, 4.5))
    sns.lineplot(
        tr,
        x="t",
        y="sm_clock_mhz",
        hue="kernel",
        palette="tab20",
        lw=1,
        ax=ax,
        sort=False,
        units="trace",
        estimator=None,
    )
    if run.gpu is not None:
        ax.axhline(
            run.gpu.sm_clock_mhz, c="k", ls="--", lw=1, label=f"max SM clock {run.gpu.sm_clock_mhz:.0f} MHz"
        )
    ax.set(
        xlabel="time (s; the timings laid end to end in the order measured)", ylabel="sampled SM clock (MHz)"
    )
    ax.legend(fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    return _finish(fig, run, "SM clock sampled during the timings", fig_dir, "clocks")


FIGURES: dict[str, Callable[[Run, Path], Path]] = {
    "throughput": fig_throughput,
    "roofline": fig_roofline,
    "model": fig_model,
    "loads_per_fma": fig_loads_per_fma,
    "shapes": fig_shapes,
    "strides": fig_strides,
    "sizes": fig_sizes,
    "clocks": fig_clocks,
}


def make_figures(run: Run, fig_dir: Path) -> None:
    """Draw every figure; one that fails is recorded as skipped with the reason, never fatal."""
    fig_dir.mkdir(parents=True, exist_ok=True)
    with matplotlib.rc_context():
        sns.set_theme(style="whitegrid", context="paper")
        for name, fn in FIGURES.items():
            try:
                path = fn(run, fig_dir)
                run.figures[name] = (f"figures/{path.name}", "")
            except Skip as e:
                run.figures[name] = (None, str(e))
            except Exception as e:  # an input this figure did not foresee costs that figure only
                run.figures[name] = (None, f"could not be drawn ({_first_line(e)})")


def _figref(run: Run, name: str) -> list[str]:
    path, why = run.figures.get(name, (None, "not drawn"))
    fn = f"`study.report.{FIGURES[name].__name__}`"
    if path is None:
        return [f"*Figure figures/{name}.png skipped ({fn}): {why}.*", ""]
    return [f"![{name}]({path})", "", f"*{path} — {fn}*", ""]


# ---------------------------------------------------------------------------------------------
# Derived tables shared by sections and figures


def _counted_loads(run: Run) -> pd.DataFrame:
    """Counted loads per FMA of the counted kernels this run timed (all of them if none was)."""
    timed = set(run.measured["kernel"])
    ks = [k for k in registry.KERNELS if k.counted is not None]
    ks = [k for k in ks if k.id in timed] or ks
    return pd.DataFrame(
        [
            {
                "kernel": k.id,
                "dist": ledgers.dist(k.counted),
                "bcast": ledgers.bcast(k.counted),
                "ldg": ledgers.ldg(k.counted),
            }
            for k in ks
        ]
    )


def _sass_loads(run: Run) -> pd.DataFrame:
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


def _clock_trace(clk: pd.DataFrame) -> pd.DataFrame:
    """Each timing's samples, laid end to end in the order they were recorded."""
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


def _stride_table(run: Run) -> pd.DataFrame:
    (la, _), (lb, _) = _labels("strides")
    df = _exp(run.measured, "strides")
    a = _by_kernel(df[df["label"] == la])
    b = _by_kernel(df[df["label"] == lb])
    rows = []
    for kid in sorted(set(a) & set(b), key=_order):
        ra, rb = a[kid], b[kid]
        rows.append(
            {
                "kernel": kid,
                "impl": ra["impl"],
                "shape_a": _shape(ra.M, ra.N, ra.K),
                "ms_a": ra["ms"],
                "shape_b": _shape(rb.M, rb.N, rb.K),
                "n_b": int(rb.M),
                "ms_b": rb["ms"],
                "ratio": rb["ms"] / ra["ms"],
            }
        )
    return pd.DataFrame(rows)


def _model_rows(run: Run) -> pd.DataFrame:
    """Per kernel at the calibration shape: measured cadence and the cadence each price set predicts."""
    led = run.tables.get("ledgers")
    if led is None:
        cols = ["kernel", "measured", "exact", "exact_err", "lstsq", "lstsq_err", "sass", "sass_err"]
        return pd.DataFrame(columns=cols)
    mt = run.tables.get("model")
    base = led
    if mt is not None and all(c in mt.columns for c in "MNK"):
        r = mt.iloc[0]
        base = led[(led["M"] == r["M"]) & (led["N"] == r["N"]) & (led["K"] == r["K"])]
    base = _main(base) if len(_main(base)) else _sorted(base.drop_duplicates("kernel", keep="last"))
    out = pd.DataFrame(
        {"kernel": base["kernel"].to_numpy(), "measured": base["cadence"].to_numpy(dtype=float)}
    )
    for method in ("exact", "lstsq"):
        pred = err = np.full(len(out), np.nan)
        row = mt[mt["method"] == method] if mt is not None and "method" in mt.columns else None
        if row is not None and len(row):
            try:  # the model's own error: against the cadence rounded as the calibration was
                applied = model.apply(base, model.Prices.from_row(row.iloc[0]))
                pred = applied["predicted_cadence"].to_numpy(dtype=float)
                err = applied["model_error_pct"].to_numpy(dtype=float)
            except (InputError, KeyError, ValueError):
                pass
        elif method == "exact" and "predicted_cadence" in base.columns:
            pred = base["predicted_cadence"].to_numpy(dtype=float)
            err = pd.to_numeric(base.get("model_error_pct"), errors="coerce").to_numpy(dtype=float)
        out[method], out[f"{method}_err"] = pred, err
    ms = run.tables.get("model_sass")
    sass, sass_err = {}, {}
    if ms is not None and "predicted_cadence" in ms.columns:
        sass = dict(zip(ms["kernel"], pd.to_numeric(ms["predicted_cadence"], errors="coerce")))
        ecol = next((c for c in ("model_error_pct", "error_pct") if c in ms.columns), None)
        if ecol:
            sass_err = dict(zip(ms["kernel"], pd.to_numeric(ms[ecol], errors="coerce")))
    out["sass"] = [sass.get(k, np.nan) for k in out["kernel"]]
    out["sass_err"] = [sass_err.get(k, _err(sass.get(k), m)) for k, m in zip(out["kernel"], out["measured"])]
    return out[
        out["kernel"].map(lambda k: registry.BY_ID.get(k) is not None and registry.get(k).impl != "cublas")
    ]


def _role(kid: str) -> str:
    k = registry.BY_ID.get(kid)
    if k is None:
        return "–"
    if k.impl == "triton":
        return "transfer test (SASS prices only)"
    if k.calibrates == "ldg":
        return "calibrates P_ldg"
    if k.calibrates == "lds":
        return "calibrates P_dist, P_bcast"
    c = k.counted
    if c is None:
        return "–"
    if c.req_per_fma is not None and c.req_per_fma > model.REQUEST_BOUND_ABOVE:
        return f"expected failure: request-bound, {c.req_per_fma:g} requests per FMA"
    if c.lds_bits != 32 or c.ldg_bits != 32:
        return f"expected failure: {max(c.lds_bits, c.ldg_bits)}-bit loads priced at 32-bit rates"
    return "extrapolation"


def _err(pred, meas) -> float:
    try:
        return float(model.model_error_pct(float(pred), float(meas)))
    except (TypeError, ValueError, ZeroDivisionError):
        return math.nan


# ---------------------------------------------------------------------------------------------
# Sections: each returns Markdown lines and always exists, saying so when its data is missing


def section_provenance(run: Run, measured: bool) -> list[str]:
    g = run.gpu
    stamps = sorted(str(t) for t in run.results.get("timestamp", pd.Series(dtype=str)).dropna())
    when = (
        (stamps[0] if stamps[0] == stamps[-1] else f"{stamps[0]} to {stamps[-1]}")
        if stamps
        else "not recorded"
    )
    status = (
        "measured: the rows below were timed in this run"
        if measured
        else "re-rendered from recorded rows: nothing was measured while writing this report"
    )
    lines = [
        f"- **Status:** {status}.",
        f"- **GPU:** {_gpu_name(run)}"
        + (f", compute capability {g.cc}" if g and g.cc else "")
        + (f", {g.sms} SMs × {g.fp32_lanes_per_sm} FP32 lanes" if g else "")
        + ".",
    ]
    if g is not None:
        sampled = g.sampled_sm_clock_mhz
        lines += [
            f"- **Clocks:** max SM clock {g.sm_clock_mhz:.0f} MHz (device-reported; main caliber)"
            + (
                f", sampled median {sampled:.0f} MHz (NVML during the timings)"
                if sampled
                else ", no sampled clock recorded"
            )
            + f"; memory clock {g.mem_clock_mhz:.0f} MHz, {g.bus_width_bits}-bit bus.",
            f"- **Peaks:** FP32 {g.peak_gflops():,.0f} GFLOP/s at the max clock"
            + (f", {g.peak_gflops(sampled):,.0f} GFLOP/s at the sampled clock" if sampled else "")
            + f"; DRAM {g.dram_gbps():,.1f} GB/s"
            + f"; cadence floor {g.cadence_floor():.3g} cycles per warp-FMA per SM"
            + (f"; L2 {g.l2_bytes / 2**20:.0f} MiB." if g.l2_bytes else "; L2 size not recorded."),
            f"- **GPU constants from:** {run.gpu_source}.",
        ]
    else:
        lines.append(
            f"- **GPU constants:** {run.gpu_source}; % of peak, cadence and roofs cannot be computed."
        )
    versions = ", ".join(
        f"{name} {_prov(run, col) or '?'}"
        for name, col in (("torch", "torch"), ("Triton", "triton"), ("CUDA", "cuda"), ("driver", "driver"))
    )
    lines += [
        f"- **Versions:** {versions}.",
        f"- **Commit:** `{_prov(run, 'commit') or 'not recorded'}`; "
        f"host {_prov(run, 'host') or 'not recorded'}.",
        f"- **Run id:** {_prov(run, 'run_id') or 'not recorded'}; rows recorded {when}.",
        f"- **Rows:** {len(run.results)} in data/results.csv ({len(run.measured)} timed).",
    ]
    absent = [why for why in run.missing.values()] + ([run.seed_note] if run.seed_note else [])
    if absent:
        lines += ["", "Inputs absent or unusable (their sections say so): " + "; ".join(absent) + "."]
    return lines + [""]


def section_main(run: Run) -> list[str]:
    lines = []
    main = _main(run.measured)
    failed = _main(run.results[run.results["ms"].isna()])
    if main.empty and failed.empty:
        return lines + _missing("the main experiment (E1)", "results.csv has no row with experiment = main")
    ref = main.iloc[0] if len(main) else failed.iloc[0]
    g = run.gpu
    lines += [
        f"FP32 C = A·B at {_shape(ref.M, ref.N, ref.K)}, row-major, α = 1, β = 0. Time: median of the timed "
        "repetitions (p20–p80 in brackets), L2 flushed before each. Two calibers: *% peak* and *cadence* use "
        + (
            f"the device-reported max SM clock ({g.sm_clock_mhz:.0f} MHz, {g.peak_gflops():,.0f} GFLOP/s)"
            if g
            else "the max SM clock (not known here)"
        )
        + "; the *sampled* columns use the median SM clock sampled during that timing, numerator and "
        "denominator switched together. % of cuBLAS does not depend on the clock. Cadence: cycles per "
        "warp-FMA per SM" + (f" (floor {g.cadence_floor():.3g})." if g else "."),
        "",
    ]
    rows = []
    for _, r in main.iterrows():
        rows.append(
            [
                r["kernel"],
                r["impl"],
                f"{r['ms']:.3f} ({_num(r.get('p20_ms'), '{:.3f}')}–{_num(r.get('p80_ms'), '{:.3f}')})",
                _num(r["gflops"]),
                _num(r.get("pct_peak"), "{:.1f}%"),
                _num(r.get("pct_peak_sampled"), "{:.1f}%"),
                _num(r.get("pct_cublas"), "{:.1f}%"),
                _num(r.get("cadence"), "{:.3f}"),
                _num(r.get("cadence_sampled"), "{:.3f}"),
                _num(r.get("rel_err"), "{:.1e}"),
            ]
        )
    for _, r in failed.iterrows():
        if r["kernel"] not in set(main["kernel"]):
            rows.append(
                [
                    r["kernel"],
                    r.get("impl", ""),
                    "failed its check",
                    "–",
                    "–",
                    "–",
                    "–",
                    "–",
                    "–",
                    _num(r.get("rel_err"), "{:.1e}"),
                ]
            )
    rows.sort(key=lambda r: _order(r[0]))
    lines += _md(
        [
            "kernel",
            "impl",
            "ms (p20–p80)",
            "GFLOP/s",
            "% peak",
            "% peak sampled",
            "% cuBLAS",
            "cadence",
            "cadence sampled",
            "rel err",
        ],
        rows,
    )
    cuda = main[main["impl"] == "cuda"].dropna(subset=["pct_cublas"])
    if len(cuda):
        best = cuda.loc[cuda["pct_cublas"].idxmax()]
        tri = main[main["impl"] == "triton"].dropna(subset=["pct_cublas"])
        tbest = tri.loc[tri["pct_cublas"].idxmax()] if len(tri) else None
        lines += [
            f"**Finding:** the fastest hand-written CUDA kernel, {best['kernel']}, reaches "
            f"{best['pct_cublas']:.1f}% of cuBLAS ({best['gflops']:,.0f} GFLOP/s)"
            + (
                f"; the fastest Triton kernel, {tbest['kernel']}, {tbest['pct_cublas']:.1f}%"
                if tbest is not None
                else ""
            )
            + ".",
            "",
        ]
    if len(failed):
        lines += [
            f"Kernels that failed their correctness check at this shape: {', '.join(failed['kernel'])} "
            "(not timed; their relative error is shown).",
            "",
        ]
    return lines + _figref(run, "throughput")


def _config_text(cfg) -> str:
    if not isinstance(cfg, str) or not cfg.strip():
        return "not recorded"
    try:
        d = json.loads(cfg)
    except json.JSONDecodeError:
        return cfg
    return ", ".join(f"{k}={v}" for k, v in d.items()) if isinstance(d, dict) else str(d)


def section_twins(run: Run) -> list[str]:
    lines = []
    main = _by_kernel(_main(run.measured))
    base = next((r for r in main.values() if r["impl"] == "cublas"), None)
    rows, unpiped, piped = [], [], []
    for c in registry.by_impl("cuda"):
        twins = registry.twins_of(c.id)
        if not twins or c.id not in main:
            continue
        u = next((t for t in twins if (t.num_stages or 1) == 1 and t.id in main), None)
        p = next((t for t in twins if (t.num_stages or 1) > 1 and t.id in main), None)
        cg = main[c.id]["gflops"]
        ru = ledgers.twin_ratio(main[u.id]["gflops"], cg) if u else math.nan
        rp = ledgers.twin_ratio(main[p.id]["gflops"], cg) if p else math.nan
        unpiped.append(ru)
        piped.append(rp)
        tile = f"{c.tile[0]}×{c.tile[1]}×{c.tile[2]}" if c.tile else "none"
        rows.append(
            [
                c.id,
                f"{tile}, {c.threads // 32} warps",
                _num(cg),
                f"{u.id}: {_num(main[u.id]['gflops'])}" if u else "–",
                f"{p.id}: {_num(main[p.id]['gflops'])}" if p else "–",
                _num(base["gflops"]) if base is not None else "–",
                _num(ru, "{:.2f}×"),
                _num(rp, "{:.2f}×"),
            ]
        )
    if not rows:
        return lines + _missing(
            "the Triton twins", "no CUDA kernel and its Triton twin were both timed in the main experiment"
        )
    lines += [
        "Each Triton twin keeps its CUDA kernel's block tile and threads per block "
        '(num_warps = threads ÷ 32) and computes in exact FP32 (`input_precision="ieee"`), so the '
        "ratio isolates who writes the code inside the tile. Unpipelined: `num_stages=1`, like the "
        "CUDA kernels; pipelined: Triton's software pipelining. Throughput in GFLOP/s at the main shape; "
        "Triton ÷ CUDA is the Triton twin's GFLOP/s over its CUDA kernel's (above 1: Triton is faster).",
        "",
    ]
    lines += _md(
        [
            "CUDA kernel",
            "block tile",
            "CUDA",
            "Triton unpipelined",
            "Triton pipelined",
            "cuBLAS",
            "Triton ÷ CUDA (unpipelined)",
            "Triton ÷ CUDA (pipelined)",
        ],
        rows,
    )
    tuned = [k for k in registry.KERNELS if k.tuned and k.id in main]
    ta = main[tuned[0].id] if tuned else None
    for k in tuned:
        r = main[k.id]
        lines += [
            f"Autotuned Triton ({k.id}): {r['gflops']:,.0f} GFLOP/s, "
            f"{_num(r.get('pct_cublas'), '{:.1f}%')} of cuBLAS; "
            f"winning config: {_config_text(r.get('config'))}.",
            "",
        ]
    for k in registry.KERNELS:
        if k.impl == "triton" and k.notes:
            lines += [f"{k.id} (twin of {k.twin}): {k.idea}. {k.notes}", ""]
    lines += [
        f"**Finding:** unpipelined Triton twins run at {_ratio_range(unpiped)} the throughput of their CUDA "
        f"kernel, pipelined ones at {_ratio_range(piped)}"
        + (
            f"; the autotuned kernel reaches {ta['pct_cublas']:.1f}% of cuBLAS"
            if ta is not None and np.isfinite(ta.get("pct_cublas", np.nan))
            else ""
        )
        + ".",
        "",
    ]
    return lines


def section_ledgers(run: Run) -> list[str]:
    lines = []
    try:
        led = _ledger_main(run)
    except Skip as e:
        return (
            lines
            + _missing("the per-kernel ledgers", str(e))
            + _figref(run, "roofline")
            + _figref(run, "loads_per_fma")
        )
    led = led[led["impl"] != "cublas"]
    lines += [
        "Instruction ledger: load instructions per FMA (dist = 32-way shared, bcast = broadcast shared, "
        "ldg = global). Byte ledger: DRAM bytes per output element, AI = 2K ÷ bytes/out (FLOP/byte), "
        "roof = AI × DRAM peak (GFLOP/s), attainment = measured ÷ roof. Request ledger (uncoalesced vs "
        "coalesced naive kernels only): memory requests per FMA. Cycles per load and per request are "
        "diagnostics: cadence ÷ loads (or requests) per FMA.",
        "",
    ]
    rows = [
        [
            r["kernel"],
            r["impl"],
            _num(r.get("dist"), "{:.3f}"),
            _num(r.get("bcast"), "{:.3f}"),
            _num(r.get("ldg"), "{:.3f}"),
            _num(r.get("loads_per_fma"), "{:.3f}"),
            _num(r.get("bytes_per_out"), "{:.0f}"),
            _num(r.get("ai"), "{:.3f}"),
            _num(r.get("roof_gflops"), "{:,.0f}"),
            _num(r.get("attainment_pct"), "{:.1f}%"),
            _num(r.get("cycles_per_load"), "{:.2f}"),
            _num(r.get("req_per_fma"), "{:g}"),
            _num(r.get("cycles_per_request"), "{:.2f}"),
        ]
        for _, r in led.iterrows()
    ]
    lines += _md(
        [
            "kernel",
            "impl",
            "dist",
            "bcast",
            "ldg",
            "loads/FMA",
            "bytes/out",
            "AI",
            "roof GFLOP/s",
            "attainment",
            "cycles/load",
            "req/FMA",
            "cycles/request",
        ],
        rows,
    )
    att = led.dropna(subset=["attainment_pct"]) if "attainment_pct" in led.columns else led.iloc[0:0]
    if len(att):
        over = att[att["attainment_pct"] > 100]
        near = att.loc[(att["attainment_pct"] - 100).abs().idxmin()]
        lines += [
            f"**Finding:** {len(over)} of {len(att)} kernels exceed 100% of their DRAM roof"
            + (
                f" ({', '.join(f'{k} {v:.0f}%' for k, v in zip(over['kernel'], over['attainment_pct']))})"
                if len(over)
                else ""
            )
            + ", where the byte ledger is falsified (the bytes came from L2, not DRAM); the closest to the "
            f"roof is {near['kernel']} at {near['attainment_pct']:.1f}%.",
            "",
        ]
    return lines + _figref(run, "roofline") + _figref(run, "loads_per_fma")


def section_model(run: Run) -> list[str]:
    lines = []
    mt = run.tables.get("model")
    lines += [
        "Predicted cadence = P_dist·dist + P_bcast·bcast + P_ldg·ldg (cycles per warp-FMA per SM). "
        "*exact*: P_ldg from the kernel marked to calibrate it, then P_dist and P_bcast from two "
        "equations in two unknowns (cadences rounded to two decimals first); *lstsq*: least squares "
        "over every 32-bit, not request-bound kernel; *sass*: prices per compiled instruction class "
        "of the SASS main loop.",
        "",
    ]
    if mt is None:
        lines += _missing("unit prices", run.missing.get("model", "model.csv"))
    else:
        cols = [c for c in ("p_ldg", "p_dist", "p_bcast", "p_lds32", "p_lds128") if c in mt.columns]
        rows = [
            [
                r["method"],
                *[_num(r[c], "{:.3f}") for c in cols],
                r.get("kernels", "–"),
                _shape(r["M"], r["N"], r["K"]) if all(pd.notna(r.get(d)) for d in "MNK") else "–",
            ]
            for _, r in mt.iterrows()
        ]
        lines += _md(["method", *[c.replace("p_", "P_") for c in cols], "fitted on", "at shape"], rows)
        lines += _price_shift(mt)
    pr = _model_rows(run)
    if pr.empty:
        lines += _missing("per-kernel predictions", run.missing.get("ledgers", "ledgers.csv"))
    else:
        rows = []
        for _, r in pr.iterrows():
            rows.append(
                [
                    r["kernel"],
                    _role(r["kernel"]),
                    _num(r["measured"], "{:.3f}"),
                    *[
                        x
                        for m in ("exact", "lstsq", "sass")
                        for x in (_num(r[m], "{:.3f}"), _num(r[f"{m}_err"], "{:+.1f}%"))
                    ],
                ]
            )
        lines += _md(
            ["kernel", "role", "measured", "exact", "error", "lstsq", "error", "sass", "error"], rows
        )
        lines += _model_finding(pr)
    if "model_sass" in run.missing:
        lines += [f"*SASS-priced predictions: {run.missing['model_sass']}.*", ""]
    loo = run.tables.get("loo")
    lines += ["### Leave-one-out", ""]
    if loo is None:
        lines += _missing("leave-one-out errors", run.missing.get("loo", "loo.csv"))
    else:
        ecol = next((c for c in ("error_pct", "model_error_pct") if c in loo.columns), None)
        rows = [
            [
                r["kernel"],
                _num(r.get("measured_cadence"), "{:.3f}"),
                _num(r.get("predicted_cadence"), "{:.3f}"),
                _num(r[ecol], "{:+.1f}%") if ecol else "–",
            ]
            for _, r in _sorted(loo).iterrows()
        ]
        lines += ["Least squares refitted without each kernel, then used to predict it.", ""]
        lines += _md(["kernel left out", "measured", "predicted", "error"], rows)
        if ecol and loo[ecol].notna().any():
            worst = loo.loc[loo[ecol].abs().idxmax()]
            lines += [
                f"**Finding:** predicting each kernel from the others, the largest error is "
                f"{worst[ecol]:+.1f}% ({worst['kernel']}).",
                "",
            ]
    return lines + _figref(run, "model")


def _price_shift(mt: pd.DataFrame) -> list[str]:
    ex, ls = mt[mt["method"] == "exact"], mt[mt["method"] == "lstsq"]
    if ex.empty or ls.empty:
        return []
    e, q = ex.iloc[0], ls.iloc[0]
    moves = ", ".join(
        f"{n} {e[c]:.2f} → {q[c]:.2f} ({_err(q[c], e[c]):+.0f}%)"
        for n, c in (("P_dist", "p_dist"), ("P_bcast", "p_bcast"), ("P_ldg", "p_ldg"))
        if np.isfinite(e[c]) and np.isfinite(q[c])
    )
    return [f"**Finding:** least squares moves the prices {moves}.", ""] if moves else []


def _model_finding(pr: pd.DataFrame) -> list[str]:
    errs = [(r["kernel"], float(r["exact_err"])) for _, r in pr.iterrows()]
    extra = [(k, e) for k, e in errs if np.isfinite(e) and _role(k) == "extrapolation"]
    fails = [(k, e) for k, e in errs if np.isfinite(e) and _role(k).startswith("expected failure")]
    if not extra and not fails:
        return []
    fmt = lambda xs: ", ".join(f"{k} ({e:+.1f}%)" for k, e in xs) or "none"  # noqa: E731
    inside = [x for x in extra if abs(x[1]) <= BAND_PCT]
    outside = [x for x in extra if abs(x[1]) > BAND_PCT]
    lines = [
        f"**Finding:** with the exact prices, extrapolations within ±{BAND_PCT:.0f}%: {fmt(inside)}; "
        f"beyond it: {fmt(outside)}; expected failures: "
        + (", ".join(f"{k} ({e:+.1f}%, {_role(k).split(': ', 1)[1]})" for k, e in fails) or "none")
        + ".",
        "",
    ]
    # the same CUDA kernels priced on the ledger the compiler wrote instead of the hand count
    both = [(r["kernel"], float(r["exact_err"]), float(r["sass_err"])) for _, r in pr.iterrows()
            if _role(r["kernel"]) in ("extrapolation",) or _role(r["kernel"]).startswith("expected failure")]
    both = [(k, e, q) for k, e, q in both if np.isfinite(e) and np.isfinite(q)]
    if both:
        better = [k for k, e, q in both if abs(q) < abs(e)]
        lines += [
            "**Finding:** priced on the compiled (SASS) ledger instead of the hand count, "
            + ", ".join(f"{k} {e:+.1f}% → {q:+.1f}%" for k, e, q in both)
            + f"; the compiled ledger predicts {len(better)} of these {len(both)} kernels better"
            + (f" ({', '.join(better)})." if better else "."),
            "",
        ]
    return lines


def section_sass(run: Run) -> list[str]:
    lines = []
    s = run.tables.get("sass")
    if s is None:
        return lines + _missing("the SASS histogram and occupancy", run.missing.get("sass", "sass.csv"))
    s = _sorted(s)
    arch = _prov_col(s, "arch")
    lines += [
        f"Compiled for {arch or 'the recorded target'} and read back with cuobjdump. Registers per thread, "
        "static shared memory per block, theoretical occupancy (resident warps ÷ max warps per SM), then the "
        "whole-kernel opcode histogram and the main loop's loads per FFMA.",
        "",
    ]
    res_cols = [
        ("registers", "{:.0f}"),
        ("smem_bytes", "{:.0f}"),
        ("spills", "{:.0f}"),
        ("threads", "{:.0f}"),
        ("occupancy_pct", "{:.1f}%"),
    ]
    rows = [
        [
            r["kernel"],
            r.get("impl", ""),
            *[_num(r.get(c), f) for c, f in res_cols],
            r.get("occupancy_limited_by", "") if isinstance(r.get("occupancy_limited_by"), str) else "",
            r.get("error", "") if isinstance(r.get("error"), str) else "",
        ]
        for _, r in s.iterrows()
    ]
    lines += _md(
        [
            "kernel",
            "impl",
            "registers",
            "smem bytes",
            "spills",
            "threads",
            "occupancy",
            "limited by",
            "error",
        ],
        rows,
    )
    ops = [
        c
        for c in (
            "FFMA",
            "LDS32",
            "LDS64",
            "LDS128",
            "LDG32",
            "LDG64",
            "LDG128",
            "LDGSTS",
            "STS",
            "BAR",
            "HMMA",
            "HGMMA",
            "total",
        )
        if c in s.columns
    ]
    rows = [
        [
            r["kernel"],
            *[_num(r.get(c), "{:.0f}") for c in ops],
            _num(r.get("loop_lds_per_ffma"), "{:.3f}"),
            _num(r.get("loop_ldg_per_ffma"), "{:.3f}"),
        ]
        for _, r in s.iterrows()
    ]
    lines += _md(["kernel", *[_op_name(c) for c in ops], "loop LDS/FFMA", "loop LDG/FFMA"], rows)
    occ = s.dropna(subset=["occupancy_pct"]) if "occupancy_pct" in s.columns else s.iloc[0:0]
    tc = [c for c in ("HMMA", "HGMMA") if c in s.columns]
    tensor = s[(s[tc].fillna(0).sum(axis=1) > 0)]["kernel"].tolist() if tc else []
    if len(occ):
        lines += [
            "**Finding:** theoretical occupancy "
            + ", ".join(f"{k} {v:.1f}%" for k, v in zip(occ["kernel"], occ["occupancy_pct"]))
            + (
                "; tensor-core instructions appear in " + ", ".join(tensor)
                if tensor
                else "; no kernel issues a tensor-core instruction (HMMA/HGMMA)"
            )
            + ".",
            "",
        ]
    return lines


def _prov_col(df: pd.DataFrame, col: str) -> str:
    return ", ".join(str(v) for v in df[col].dropna().unique()) if col in df.columns else ""


def _op_name(col: str) -> str:
    for p in ("LDS", "LDG"):
        if col.startswith(p) and col[len(p) :].isdigit():
            return f"{p}.{col[len(p) :]}"
    return col


def section_counted(run: Run) -> list[str]:
    lines = []
    c = run.tables.get("cvc")
    if c is None:
        return lines + _missing(
            "the counted-vs-compiled check", run.missing.get("cvc", "counted_vs_compiled.csv")
        )
    c = _sorted(c)
    lines += [
        "Loads per FMA counted from the source beside the SASS main loop (instructions of any width per "
        "FFMA); flagged where they differ by more than 10%, with the reason read off the histogram.",
        "",
    ]
    rows = [
        [
            r["kernel"],
            _num(r.get("counted_lds_per_fma"), "{:.3f}"),
            _num(r.get("sass_lds_per_fma"), "{:.3f}"),
            _num(r.get("counted_ldg_per_fma"), "{:.3f}"),
            _num(r.get("sass_ldg_per_fma"), "{:.3f}"),
            "yes" if _truthy(r.get("flag")) else "no",
            r.get("explanation", ""),
        ]
        for _, r in c.iterrows()
    ]
    lines += _md(
        [
            "kernel",
            "counted LDS/FMA",
            "SASS LDS/FMA",
            "counted LDG/FMA",
            "SASS LDG/FMA",
            "differs",
            "explanation",
        ],
        rows,
    )
    flagged = [r["kernel"] for _, r in c.iterrows() if _truthy(r.get("flag"))]
    lines += [
        f"**Finding:** {len(flagged)} of {len(c)} kernels compile to a load mix more than 10% off their "
        f"count" + (f" ({', '.join(flagged)})" if flagged else "") + ".",
        "",
    ]
    return lines


def _truthy(v) -> bool:
    return str(v).strip().lower() in ("true", "1", "yes")


def section_sizes(run: Run) -> list[str]:
    lines = []
    df = _exp(run.measured, "sizes")
    if df.empty:
        return (
            lines
            + _missing("the size sweep", "results.csv has no row with experiment = sizes")
            + _figref(run, "sizes")
        )
    ns = sorted(set(int(n) for n in df["M"]))
    l2 = run.gpu.l2_bytes if run.gpu else None
    piv = df.pivot_table(index="kernel", columns="M", values="gflops", aggfunc="median")
    rows = [
        [k, *[_num(piv.at[k, n]) if n in piv.columns else "–" for n in ns]]
        for k in sorted(piv.index, key=_order)
    ]
    lines += ["GFLOP/s per square size n (M = N = K); the footprint of A, B and C is 3·n²·4 bytes.", ""]
    lines += _md(["kernel", *[f"n = {n} ({_footprint(n) / 1e6:.1f} MB)" for n in ns]], rows)
    if not l2:
        lines += ["*Where the footprint leaves the L2: the L2 size is " + NOT_IN_RUN + " (gpu.json).*", ""]
    else:
        inside, outside = [n for n in ns if _footprint(n) <= l2], [n for n in ns if _footprint(n) > l2]
        if inside and outside:
            a, b = max(inside), min(outside)
            chg = (
                (piv[b] / piv[a]).dropna()
                if a in piv.columns and b in piv.columns
                else pd.Series(dtype=float)
            )
            cub = [k for k in chg.index if registry.BY_ID.get(k) and registry.get(k).impl == "cublas"]
            most = chg.index[np.argmax(np.abs(np.log(chg.to_numpy())))] if len(chg) else None
            steps = (
                [
                    f"cuBLAS goes from {piv.at[cub[0], a]:,.0f} to {piv.at[cub[0], b]:,.0f} GFLOP/s "
                    f"({chg[cub[0]]:.2f}×)"
                ]
                if cub
                else []
            )
            if most is not None and (not cub or most != cub[0]):
                steps.append(
                    f"{most} changes most, {piv.at[most, a]:,.0f} to {piv.at[most, b]:,.0f} GFLOP/s "
                    f"({chg[most]:.2f}×)"
                )
            lines += [
                f"**Finding:** the footprint leaves the {l2 / 2**20:.0f} MiB L2 between n = {a} "
                f"({_footprint(a) / 1e6:.1f} MB) and n = {b} ({_footprint(b) / 1e6:.1f} MB)"
                + (f"; across that step {' and '.join(steps)}" if steps else "")
                + ".",
                "",
            ]
        else:
            where = "inside" if inside else "outside"
            lines += [
                f"**Finding:** every measured size lies {where} the {l2 / 2**20:.0f} MiB L2 "
                f"(footprints {_footprint(ns[0]) / 1e6:.1f}–{_footprint(ns[-1]) / 1e6:.1f} MB).",
                "",
            ]
    return lines + _figref(run, "sizes")


def section_shapes(run: Run) -> list[str]:
    lines = []
    df = _exp(run.measured, "shapes")
    if df.empty:
        return (
            lines
            + _missing("the shape sweep", "results.csv has no row with experiment = shapes")
            + _figref(run, "shapes")
        )
    labels = _labels_in(df, "shapes")
    piv = df.pivot_table(index="kernel", columns="label", values="gflops", aggfunc="median")
    rows = [
        [k, *[_num(piv.at[k, lab]) if lab in piv.columns else "–" for lab, _ in labels]]
        for k in sorted(piv.index, key=_order)
    ]
    lines += [
        "GFLOP/s per shape (M×N×K); prefill and decode use the Qwen2.5-7B FFN (N = 18944, K = 3584).",
        "",
    ]
    lines += _md(["kernel", *[f"{lab} ({_shape(*s)})" for lab, s in labels]], rows)
    cuda = [k.id for k in registry.by_impl("cuda")]
    first, last = cuda[0], cuda[-1]
    msp = df.pivot_table(index="kernel", columns="label", values="ms", aggfunc="median")
    ups = [
        (lab, msp.at[first, lab] / msp.at[last, lab])
        for lab, _ in labels
        if first in msp.index
        and last in msp.index
        and lab in msp.columns
        and pd.notna(msp.at[first, lab])
        and pd.notna(msp.at[last, lab])
    ]
    base = registry.BASELINE.id
    cub = [(lab, piv.at[base, lab]) for lab, _ in labels if base in piv.index and pd.notna(piv.at[base, lab])]
    if ups or cub:
        lines += [
            "**Finding:** "
            + (
                f"the {first} → {last} speed-up is " + ", ".join(f"{u:.1f}× ({lab})" for lab, u in ups)
                if ups
                else f"{first} and {last} were not both timed"
            )
            + ("; cuBLAS runs at " + ", ".join(f"{v:,.0f} GFLOP/s ({lab})" for lab, v in cub) if cub else "")
            + ".",
            "",
        ]
    return lines + _figref(run, "shapes")


def section_strides(run: Run) -> list[str]:
    (la, _), (lb, _) = _labels("strides")
    lines = []
    tab = _stride_table(run)
    if tab.empty:
        return (
            lines
            + _missing("the stride experiment", "results.csv has no row with experiment = strides")
            + _figref(run, "strides")
        )
    lines += [
        f"Median time at {_spaced(la)} (a power-of-two row stride) and {_spaced(lb)}; "
        "a kernel that needs aligned sizes runs at the next aligned size, named in its row.",
        "",
    ]
    rows = [
        [
            r["kernel"],
            r["shape_a"],
            f"{r['ms_a']:.3f}",
            r["shape_b"],
            f"{r['ms_b']:.3f}",
            f"{r['ratio']:.3f}",
            f"{(r['ratio'] - 1) * 100:+.1f}%",
        ]
        for _, r in tab.iterrows()
    ]
    lines += _md(["kernel", f"shape ({la})", "ms", f"shape ({lb})", "ms", "time ratio", "change"], rows)
    for s in _stride_findings(tab, la, lb):
        lines += [f"**Finding:** {s}", ""]
    return lines + _figref(run, "strides")


def _stride_findings(tab: pd.DataFrame, la: str, lb: str) -> list[str]:
    t = tab.set_index("kernel")
    cuda = [k.id for k in registry.by_impl("cuda")]
    out = []
    k1, k2 = cuda[0], cuda[1]
    if k1 in t.index:
        r = t.at[k1, "ms_a"] / t.at[k1, "ms_b"]
        word, f = ("faster", r) if r >= 1 else ("slower", 1 / r)
        out.append(
            f"{k1} runs {f:.2f}× {word} at {_spaced(lb)} than at {_spaced(la)} "
            f"({t.at[k1, 'ms_a']:.3f} → {t.at[k1, 'ms_b']:.3f} ms)."
        )
        if k2 in t.index:
            x, y = t.at[k1, "ms_a"] / t.at[k2, "ms_a"], t.at[k1, "ms_b"] / t.at[k2, "ms_b"]
            if x > y:
                out.append(
                    f"The {k1}/{k2} time ratio is {x:.3f}× at {_spaced(la)} and {y:.3f}× at {_spaced(lb)}: "
                    f"a factor {x / y:.2f} of {k1}'s deficit at {_spaced(la)} comes with the power-of-two "
                    "stride, not with coalescing."
                )
            else:
                out.append(
                    f"The {k1}/{k2} time ratio is {x:.3f}× at {_spaced(la)} and {y:.3f}× at {_spaced(lb)}: "
                    f"the power-of-two stride adds nothing to {k1}'s deficit."
                )
    odd = [k for k in t.index if int(t.at[k, "n_b"]) != int(tab["n_b"].min())]
    rest = [k for k in cuda[2:] if k in t.index and k not in odd]
    parts = []
    if rest:
        change = _ratio_range([(t.at[k, "ratio"] - 1) * 100 for k in rest], "{:+.1f}%")
        parts.append(f"{', '.join(rest)} changes by {change}")
    tri = [k for k in t.index if t.at[k, "impl"] == "triton" and k not in odd]
    if tri:
        parts.append(
            f"the Triton kernels' by {_ratio_range([(t.at[k, 'ratio'] - 1) * 100 for k in tri], '{:+.1f}%')}"
        )
    base = registry.BASELINE.id
    if base in t.index:
        parts.append(f"cuBLAS's by {(t.at[base, 'ratio'] - 1) * 100:+.1f}%")
    parts += [f"{k}'s (at {t.at[k, 'shape_b']}) by {(t.at[k, 'ratio'] - 1) * 100:+.1f}%" for k in odd]
    if parts:
        out.append(f"From {_spaced(la)} to {_spaced(lb)} the time of " + "; ".join(parts) + ".")
    return out


def section_clocks(run: Run) -> list[str]:
    lines = []
    main = _main(run.results)
    main = main[_col(main, "sm_clock_mhz") > 0]
    if main.empty:
        lines += _missing("sampled SM clocks", "results.csv records no sampled clock for the main experiment")
        return lines + _figref(run, "clocks")
    mx = run.gpu.sm_clock_mhz if run.gpu else math.nan
    samples = run.tables.get("clocks")
    span = {}
    if samples is not None:
        s = (
            samples[samples["experiment"].astype(str) == "main"]
            if "experiment" in samples.columns
            else samples
        )
        span = {k: (g["sm_clock_mhz"].min(), g["sm_clock_mhz"].max()) for k, g in s.groupby("kernel")}
    rows = [
        [
            r["kernel"],
            f"{r['sm_clock_mhz']:.0f}",
            _num(100 * r["sm_clock_mhz"] / mx, "{:.1f}%"),
            _num(r.get("clock_samples"), "{:.0f}"),
            (f"{span[r['kernel']][0]:.0f}–{span[r['kernel']][1]:.0f}" if r["kernel"] in span else "–"),
        ]
        for _, r in main.iterrows()
    ]
    lines += [
        "Median SM clock sampled through NVML during each main-table timing, against the "
        f"device-reported max ({_num(mx, '{:.0f}')} MHz)."
        + ("" if samples is not None else f" Per-sample traces: {run.missing.get('clocks', 'clocks.csv')}."),
        "",
    ]
    lines += _md(["kernel", "median sampled MHz", "% of max", "samples", "sample range MHz"], rows)
    med = float(main["sm_clock_mhz"].median())
    lo, hi = main.loc[main["sm_clock_mhz"].idxmin()], main.loc[main["sm_clock_mhz"].idxmax()]
    lines += [
        f"**Finding:** the median sampled SM clock over the main table is {med:.0f} MHz"
        + (
            f", {100 * med / mx:.1f}% of the {mx:.0f} MHz max (at that clock a % of peak reads "
            f"{mx / med:.3f}× its max-clock value)"
            if np.isfinite(mx)
            else ""
        )
        + f"; per kernel it ranges from {lo['sm_clock_mhz']:.0f} MHz ({lo['kernel']}) to "
        f"{hi['sm_clock_mhz']:.0f} MHz ({hi['kernel']}).",
        "",
    ]
    return lines + _figref(run, "clocks")


# ncu metric names the counters section reads (study/profile.py asks for them)
_NCU = {
    "time": "gpu__time_duration.sum",
    "regs": "launch__registers_per_thread",
    "warps": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "issue": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "fma_pipe": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "inst": "smsp__inst_executed.sum",
    "inst_fma": "smsp__inst_executed_pipe_fma.sum",
    "lds": "smsp__inst_executed_op_shared_ld.sum",
    "wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
}
_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(.+)_per_issue_active\.ratio$")
_TIME_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
            "s": 1e9, "second": 1e9}


def _counters(run: Run) -> pd.DataFrame:
    """One row per (kernel, shape): the latest ncu run's counters, launches combined.

    Counts (``.sum``) add over launches; rates and ratios are weighted by each launch's
    duration. ``time`` is in ns whatever unit ncu printed.
    """
    df = run.tables["ncu"].copy()
    df["metric"] = df["metric"].astype(str)
    if "launch" not in df.columns:
        df["launch"] = 0
    if "unit" in df.columns:
        is_time = df["metric"] == _NCU["time"]
        scale = df["unit"].astype(str).map(_TIME_NS).fillna(1.0)
        df.loc[is_time, "value"] = df.loc[is_time, "value"] * scale[is_time]
    if "run_id" in df.columns:  # several profiles of one kernel and shape: the latest wins
        last = df.groupby(["kernel", "M", "N", "K"])["run_id"].transform(lambda r: r.astype(str).max())
        df = df[df["run_id"].astype(str) == last]
    rows = []
    for (kid, M, N, K), g in df.groupby(["kernel", "M", "N", "K"], sort=False):
        wide = g.pivot_table(index="launch", columns="metric", values="value", aggfunc="last")
        dur = _col(wide, _NCU["time"])
        even = pd.Series(1 / len(wide), index=wide.index)
        w = dur / dur.sum() if dur.notna().all() and dur.sum() > 0 else even
        row = {"kernel": kid, "M": M, "N": N, "K": K, "launches": len(wide)}
        for name in wide.columns:
            col = _col(wide, name)
            row[name] = col.sum() if name.endswith(".sum") else float((col * w).sum(min_count=1))
        rows.append(row)
    return _sorted(pd.DataFrame(rows)) if rows else pd.DataFrame()


def _div(a: float, b: float) -> float:
    """a / b, NaN where b is 0 or either is missing (a kernel with no shared loads, say)."""
    return a / b if np.isfinite(a) and np.isfinite(b) and b != 0 else math.nan


def _ncu_getter(r: pd.Series) -> Callable[[str], float]:
    """``g(key)``: the value of metric ``_NCU[key]`` in row ``r``, NaN when it was not read."""
    return lambda key: float(r.get(_NCU[key], np.nan))


def _top_stalls(r: pd.Series, n: int = 3) -> str:
    """The ``n`` largest stall reasons per issued instruction.

    'selected' is the cycle of issuing and 'not_selected' a ready warp passed over for another:
    neither is a wait, so neither is listed.
    """
    stalls = []
    for name, v in r.items():
        m = _STALL.match(str(name))
        if m and m.group(1) not in ("selected", "not_selected") and np.isfinite(v) and v > 0:
            stalls.append((float(v), m.group(1)))
    return ", ".join(f"{s} {v:.2f}" for v, s in sorted(stalls, reverse=True)[:n]) or "–"


def section_counters(run: Run) -> list[str]:
    if "ncu" not in run.tables:
        why = run.missing.get("ncu", f"ncu.csv {NOT_IN_RUN}")
        how = "`python -m study.profile` reads them with Nsight Compute"
        return _missing("hardware counters", f"{why}; {how}")
    tab = _counters(run)
    if tab.empty:
        return _missing("hardware counters", "ncu.csv holds no kernel's metrics")
    lines = [
        "Nsight Compute counters of one launch per kernel (`python -m study.profile`, clocks left "
        "as they are). A *warp FMA* is M·N·K/32, the multiply-adds of the problem counted by "
        "warps (independent of the code); `issue` is the share of scheduler cycles that issued an "
        "instruction; stalls are cycles per issued instruction, largest first (waits only: a ready "
        "warp passed over for another is not counted).",
        "",
    ]
    src, where = run.tables["ncu"], []
    for what, col in (("commit", "commit"), ("run", "run_id"), ("ncu", "ncu")):
        vals = sorted({str(v) for v in src.get(col, pd.Series(dtype=str)).dropna() if str(v).strip()})
        if vals:
            where.append(f"{what} {', '.join(vals)}")
    if where:
        lines += [f"Read at {'; '.join(where)}.", ""]
    header = ["kernel", "shape", "ms", "regs", "warps active %", "issue %", "FMA pipe %",
              "FMA-pipe share of instr.", "instr. / warp FMA", "LDS / warp FMA", "bank conflicts / wavefront",
              "global sectors / warp FMA", "top stalls"]
    rows = []
    for _, r in tab.iterrows():
        wfma = r["M"] * r["N"] * r["K"] / 32
        g = _ncu_getter(r)
        rows.append([
            r["kernel"], _shape(r["M"], r["N"], r["K"]), _num(g("time") / 1e6, "{:.3f}"),
            _num(g("regs"), "{:.0f}"),
            _num(g("warps")), _num(g("issue")), _num(g("fma_pipe")),
            _num(_div(g("inst_fma"), g("inst")), "{:.3f}"), _num(g("inst") / wfma, "{:.3f}"),
            _num(g("lds") / wfma, "{:.3f}"), _num(_div(g("conflicts"), g("wavefronts")), "{:.3f}"),
            _num(g("sectors") / wfma, "{:.2f}"), _top_stalls(r),
        ])
    lines += _md(header, rows)
    lines += _counter_findings(tab)
    return lines


def _counter_findings(tab: pd.DataFrame) -> list[str]:
    """Sentences computed from the counters: the issue gap to cuBLAS, the request ledger check."""
    out = []
    by = _by_kernel(tab)
    base = registry.BASELINE.id
    if base in by:
        gb = _ncu_getter(by[base])
        for kid in ("TA", "T5p", "K6"):
            if kid not in by or kid == base:
                continue
            r, g = by[kid], _ncu_getter(by[kid])
            wb, wr = (x["M"] * x["N"] * x["K"] / 32 for x in (by[base], r))
            per_fma = _num(g("inst") / wr, "{:.3f}"), _num(gb("inst") / wb, "{:.3f}")
            out.append(
                f"**Finding ({kid} vs cuBLAS):** {kid} executes {per_fma[0]} instructions per warp FMA "
                f"against cuBLAS's {per_fma[1]}, and issues on {_num(g('issue'))}% of scheduler cycles "
                f"against {_num(gb('issue'))}%; its FMA pipe is busy {_num(g('fma_pipe'))}% of cycles "
                f"against {_num(gb('fma_pipe'))}% (top stalls: {_top_stalls(r)})."
            )
            out.append("")
    for k in registry.KERNELS:
        if k.counted is None or k.counted.req_per_fma is None or k.id not in by:
            continue
        r = by[k.id]
        wfma = r["M"] * r["N"] * r["K"] / 32
        out.append(
            f"**Request ledger ({k.id}):** counted {k.counted.req_per_fma:g} requests per warp FMA; "
            f"measured {r.get(_NCU['sectors'], np.nan) / wfma:.2f} 32-byte sectors and "
            f"{r.get(_NCU['requests'], np.nan) / wfma:.2f} load instructions per warp FMA (the "
            "ledger counts a warp's coalesced 128-byte load as one request; it spans 4 sectors)."
        )
        out.append("")
    return out


def section_seed(run: Run) -> list[str]:
    lines = []
    if run.seed is None:
        return lines + _missing("the seed replay", run.seed_note)
    sg, s = run.seed_gpu, _main(run.seed)
    try:
        here = _ledger_main(run)
        note = ""
    except Skip as e:
        here, note = _main(run.measured), f" (model error on the {_gpu_name(run)}: {e})"
    a, b = _short(sg.name), _short(_gpu_name(run))
    lines += [
        f"The seed report's published times on the {sg.name} ({sg.sms} SMs, {sg.sm_clock_mhz:.0f} MHz, "
        f"{sg.dram_gbps():,.0f} GB/s) replayed through the same ledgers and the same exact calibration, "
        f"beside this run's {_gpu_name(run)}{note}. Cadence in cycles per warp-FMA per SM at each GPU's max "
        "clock; model error with each GPU's own exact prices.",
        "",
    ]
    h = _by_kernel(here)
    rows = []
    for _, r in s.iterrows():
        o = h.get(r["kernel"])
        g = lambda col, fmt, o=o: _num(o.get(col), fmt) if o is not None else "–"  # noqa: E731
        rows.append(
            [
                r["kernel"],
                _num(r["gflops"]),
                g("gflops", "{:.1f}"),
                _num(r["pct_cublas"], "{:.1f}%"),
                g("pct_cublas", "{:.1f}%"),
                _num(r["cadence"], "{:.2f}"),
                g("cadence", "{:.2f}"),
                _num(r["attainment_pct"], "{:.1f}%"),
                g("attainment_pct", "{:.1f}%"),
                _num(r["model_error_pct"], "{:+.1f}%"),
                g("model_error_pct", "{:+.1f}%"),
            ]
        )
    hdr = ["kernel"] + [
        f"{m} {x}" for m in ("GFLOP/s", "% cuBLAS", "cadence", "attainment", "model error") for x in (a, b)
    ]
    lines += _md(hdr, rows)
    p = run.seed_prices
    cuda = s[s["impl"] == "cuda"].dropna(subset=["pct_cublas"])
    if len(cuda):
        best = cuda.loc[cuda["pct_cublas"].idxmax()]
        mine = h.get(best["kernel"])
        lines += [
            f"**Finding:** {best['kernel']} reaches {best['pct_cublas']:.1f}% of cuBLAS on the {a}"
            + (f" and {mine['pct_cublas']:.1f}% on the {b}" if mine is not None else "")
            + f"; the {a}'s exact prices are P_dist {p.p_dist:.2f}, P_bcast {p.p_bcast:.2f}, "
            f"P_ldg {p.p_ldg:.2f}" + _here_prices(run) + ".",
            "",
        ]
    return lines


def _here_prices(run: Run) -> str:
    mt = run.tables.get("model")
    ex = mt[mt["method"] == "exact"] if mt is not None and "method" in mt.columns else None
    if ex is None or ex.empty:
        return ""
    e = ex.iloc[0]
    prices = ", ".join(_num(e[c], "{:.2f}") for c in ("p_dist", "p_bcast", "p_ldg"))
    return f" against {prices} on the {_short(_gpu_name(run))}"


def section_figures(run: Run) -> list[str]:
    lines = [
        "Every figure, the file it is in and the function that drew it from data/.",
        "",
    ]
    rows = [
        [
            f"figures/{name}.png",
            f"`study.report.{fn.__name__}`",
            "drawn"
            if run.figures.get(name, (None,))[0]
            else f"skipped: {run.figures.get(name, (None, '?'))[1]}",
        ]
        for name, fn in FIGURES.items()
    ]
    return lines + _md(["file", "made by", "status"], rows)


def section_reproduce(run: Run) -> list[str]:
    commit = (_prov(run, "commit") or "").split(",")[0].replace("+dirty", "").strip()
    try:
        out = str(run.out.resolve().relative_to(REPO))
    except ValueError:  # written outside the checkout (e.g. on a GPU machine): name no local path
        out = "DIR"
    # the subset example names real ids: the baseline and the last hand-written kernel
    example = ",".join([registry.BASELINE.id] + [k.id for k in registry.by_impl("cuda")[-1:]])
    return [
        "```bash",
        'pip install -e ".[dev]"',
        *(
            [f"git checkout {commit}   # the commit these rows came from"]
            if commit and commit != "unknown"
            else []
        ),
        "python -m study.run                # measure every kernel and experiment here -> reports/",
        f"python -m study.run --kernels {example} --experiments main,strides --out out   # a subset",
        f"python -m study.report {out}      # re-render from {out}/data/ (no GPU needed)"
        + ("; DIR holds this REPORT.md" if out == "DIR" else ""),
        "```",
        "",
    ]


# ---------------------------------------------------------------------------------------------


def render(out_dir: Path, seed_dir: Path | None = None, *, measured: bool = False) -> Path:
    """Write ``<out>/REPORT.md`` and ``<out>/figures/*.png`` from ``<out>/data/``; return the report path.

    ``seed_dir`` holds the seed GPU's times and constants (default: the repository's reports/data).
    ``measured`` says whether the rows were timed by the run that renders them (the CLI after a
    measurement); otherwise the report says it was re-rendered from recorded rows.
    """
    out = Path(out_dir)
    run = load(out, seed_dir)
    make_figures(run, out / "figures")
    lines = [f"# SGEMM ledgers on {_gpu_name(run)}", ""]
    for heading, section in _sections(measured):
        lines += [heading, "", *_guarded(section, run)]
    path = out / "REPORT.md"
    path.write_text("\n".join(lines).rstrip() + "\n")
    return path


def _sections(measured: bool) -> list[tuple[str, Callable[[Run], list[str]]]]:
    """The report's headings in order, each with the function that writes what follows it."""
    return [
        ("## Provenance", lambda run: section_provenance(run, measured)),
        ("## Main table", section_main),
        ("## Triton twins", section_twins),
        ("## Ledgers", section_ledgers),
        ("## Calibration and model", section_model),
        ("## Occupancy and SASS", section_sass),
        ("## Counted vs compiled", section_counted),
        ("## Experiments", lambda run: []),
        ("### E2 sizes", section_sizes),
        ("### E3 shapes", section_shapes),
        ("### E4 strides", section_strides),
        ("### E6 clocks", section_clocks),
        ("## Hardware counters", section_counters),
        ("## Seed GPU replay", section_seed),
        ("## Figures", section_figures),
        ("## How to reproduce", section_reproduce),
    ]


def _guarded(section: Callable[[Run], list[str]], run: Run) -> list[str]:
    try:
        return section(run)
    except Exception as e:  # an input no section foresaw costs that section, never the whole report
        return [f"*this section could not be rendered: {_first_line(e)}*", ""]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m study.report",
        description="Re-render REPORT.md and the figures from <out>/data/ (reads files only; no GPU).",
    )
    p.add_argument(
        "out", nargs="?", default=str(REPO / "reports"), help="run directory holding data/ (default reports/)"
    )
    p.add_argument(
        "--seed-dir", help="directory with the seed GPU's times and constants (default reports/data)"
    )
    args = p.parse_args(argv)
    try:
        path = render(Path(args.out), Path(args.seed_dir) if args.seed_dir else None, measured=False)
    except (InputError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
