"""The CLI: ``python -m study.run``.

On a GPU: check every kernel, measure the experiments (rows appended as they complete),
compute the ledgers and the model, read the SASS, write ``<out>/``. Without a GPU: the SASS
and the ledger arithmetic, and the report re-rendered from the recorded rows, saying plainly
that nothing was measured. Bad input: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

from study import experiments, kernels
from study.errors import InputError, first_line

REPO = Path(__file__).resolve().parent.parent
CHECK_SHAPES = ((1, 1, 1), (33, 65, 17), (67, 131, 97), (1, 4096, 4096))


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints the whole usage otherwise)
        raise InputError(message)


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise InputError(f"not an integer: {text!r}") from None
    if v <= 0:
        raise InputError(f"sizes must be positive integers; got {v}")
    return v


def parse_shape(text: str) -> tuple[int, int, int]:
    parts = text.split(",")
    if len(parts) != 3:
        raise InputError(f"--shape takes M,N,K (three integers); got {text!r}")
    return tuple(positive_int(p.strip()) for p in parts)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m study.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--kernels", help=f"comma-separated ids (default all): {','.join(kernels.IDS)}")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--size", help="square problem n (M = N = K = n) for the main table")
    g.add_argument("--shape", help="M,N,K for the main table (default 4096,4096,4096)")
    p.add_argument(
        "--experiments",
        help=f"comma-separated, default all: {','.join(experiments.EXPERIMENTS)}",
    )
    p.add_argument("--out", help="output directory (default reports/; required with --from-results)")
    p.add_argument("--resume", action="store_true", help="skip measurements already in <out>/data/")
    p.add_argument("--from-results", metavar="TIMES.csv", help="replay recorded times, no GPU needed")
    p.add_argument("--gpu", metavar="GPU.json", help="GPU constants for --from-results")
    p.add_argument("--arch", help="SASS target, e.g. sm_90 (default: the present GPU, else sm_90)")
    p.add_argument("--no-sass", action="store_true", help="skip the SASS ledger")
    p.add_argument("--no-report", action="store_true", help="skip REPORT.md and the figures")
    p.add_argument("--target-s", type=float, default=0.3, help="timed seconds per measurement")
    return p


def resolve_args(argv: list[str] | None):
    args = build_parser().parse_args(argv)
    args.kernel_list = kernels.select(args.kernels) if args.kernels is not None else kernels.select(None)
    if args.size is not None:
        n = positive_int(args.size)
        args.main_shape = (n, n, n)
    elif args.shape is not None:
        args.main_shape = parse_shape(args.shape)
    else:
        args.main_shape = (4096, 4096, 4096)
    args.experiment_list = experiments.parse(args.experiments)
    if (args.size or args.shape) and args.experiments is None:
        args.experiment_list = ["main"]  # a chosen problem size means: the main table at that size
    if "main" in args.experiment_list:
        for k in args.kernel_list:
            err = k.constraint_error(*args.main_shape)
            if err:
                raise InputError(err + " (leave it out with --kernels, or pick another shape)")
    if args.from_results and not args.gpu:
        raise InputError("--from-results needs --gpu GPU.json (the constants of the GPU that ran it)")
    if args.gpu and not args.from_results:
        raise InputError("--gpu goes with --from-results")
    if args.from_results and args.out is None:
        raise InputError("--from-results needs --out DIR (the default, reports/, holds the reference run)")
    if args.arch is not None and not (args.arch.startswith("sm_") and args.arch[3:].isdigit()):
        raise InputError(f"--arch must look like sm_90; got {args.arch!r}")
    if not (math.isfinite(args.target_s) and args.target_s > 0):
        raise InputError(f"--target-s must be a positive number of seconds; got {args.target_s}")
    if args.out is None:
        args.out = str(REPO / "reports")
    args.out = str(output_dir(args.out))
    return args


def output_dir(out: str) -> Path:
    """``out`` with its data/ folder created and writable; any failure is one line of bad input."""
    path = Path(out)
    data = path / "data"
    try:
        data.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"--out {out}: cannot create {data} ({e.strerror or e})") from None
    if not os.access(data, os.W_OK | os.X_OK):
        raise InputError(f"--out {out}: {data} is not writable")
    return path


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    try:
        args = resolve_args(argv)
        if args.from_results:
            return replay(args)
        import torch

        if not torch.cuda.is_available():
            return without_gpu(args)
        return measure(args)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        from study.baseline import TF32Leak

        if isinstance(e, TF32Leak):
            print(f"error: {e}", file=sys.stderr)
            return 1
        raise


# --- the three paths ---------------------------------------------------------------------------


def replay(args) -> int:
    """Ledgers and model from recorded times: pure arithmetic, no GPU."""
    from study import gpu as gpu_mod
    from study import results

    gpu = gpu_mod.GPU.from_json(args.gpu)
    rows = results.read(args.from_results, required=["kernel", "M", "N", "K", "ms"])
    out = Path(args.out)
    # the user asked for this replay: times that cannot be calibrated are bad input (exit 2)
    ledgers, model = derive(measured_rows(rows, note=True), gpu, out, sass_df=None, require_calibration=True)
    print_tables(ledgers, model, gpu, "replayed from " + str(args.from_results))
    return 0


def without_gpu(args) -> int:
    out = Path(args.out)
    say("no CUDA device: measured nothing. Computing what needs no GPU (SASS, ledger arithmetic) "
        "and re-rendering the report from the recorded rows.")
    recorded = REPO / "reports" / "data"
    rec_results, rec_gpu = recorded / "results.csv", recorded / "gpu.json"
    if not (rec_results.is_file() and rec_gpu.is_file()):
        sass_step(args, out, arch=args.arch or "sm_90")
        say(f"no recorded run in {recorded}: nothing to re-render")
        return 0
    from study import gpu as gpu_mod
    from study import results

    gpu = gpu_mod.GPU.from_json(rec_gpu)
    rows = results.read(rec_results)
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    if data.resolve() != recorded.resolve():
        copy_recorded(recorded, data)
    sass_df = sass_step(args, out, arch=args.arch or "sm_90")
    if sass_df is None:  # no fresh SASS: the recorded run's, so model.csv keeps its SASS row
        sass_df = read_optional_csv(data / "sass.csv")
    ledgers, model = derive(measured_rows(rows, note=True), gpu, out, sass_df=sass_df)
    print_tables(ledgers, model, gpu, f"recorded rows from {rec_results.relative_to(REPO)}")
    render(args, out, measured=False)
    return 0


def copy_recorded(recorded: Path, data: Path) -> None:
    """Every file of the recorded run into ``data``, overwriting: what ``data`` held before (another
    run) must not mix with it. The steps that follow overwrite what they recompute."""
    for f in sorted(recorded.iterdir()):
        if f.is_file():
            (data / f.name).write_bytes(f.read_bytes())


def read_optional_csv(path: Path):
    import pandas as pd

    if not path.is_file():
        return None
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        return None


def measure(args) -> int:
    import torch

    from study import baseline, bench, results
    from study import gpu as gpu_mod
    from study.derive import ledgers as led

    baseline.pin_fp32()
    if "main" in args.experiment_list:  # before anything is timed: a shape that cannot fit is refused
        free, _total = torch.cuda.mem_get_info()
        check_fits(args.main_shape, free)
    out = Path(args.out)
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    gpu = gpu_mod.from_device()
    arch = args.arch or f"sm_{gpu.cc.replace('.', '')}"
    run_id = results.new_run_id()
    prov = results.provenance(gpu, run_id)
    say(f"{gpu.name}: {gpu.sms} SMs, {gpu.sm_clock_mhz} MHz max SM clock, FP32 peak "
        f"{gpu.peak_gflops() / 1e3:.1f} TFLOP/s, DRAM {gpu.dram_gbps() / 1e3:.2f} TB/s; run {run_id}")

    chosen = args.kernel_list
    failed = correctness_sweep(chosen, bench)
    if failed:
        for kid, msg in failed.items():
            say(f"{kid} FAILED its correctness check: {msg}; it will not be timed")
    live = [k for k in chosen if k.id not in failed]

    rows_file = results.ResultsFile(data / "results.csv")
    clocks_file = results.ResultsFile(data / "clocks.csv", results.CLOCK_COLUMNS)
    if not args.resume:
        for f in (rows_file.path, clocks_file.path):
            f.unlink(missing_ok=True)
    done = results.done_keys(rows_file.path) if args.resume else set()
    points = [p for e in args.experiment_list for p in experiments.points(e, args.main_shape)]
    plan = [(p, k) for p in points for k in live]
    todo = [(p, k) for p, k in plan if key(p, k) not in done]
    if done:
        say(f"--resume: {len(plan) - len(todo)} of {len(plan)} measurements already in {rows_file.path}")

    flush = bench.L2Flush(gpu.l2_bytes)
    peak = gpu.peak_gflops()

    def measure_fn(k, shape):
        return measure_one(k, shape, flush, args.target_s, bench, torch, gpu_mod)

    def guard(k, shape, row):
        if k.impl == "cublas":  # TF32 must not leak into the denominator of every % of cuBLAS
            speed = led.gflops(*shape, row["ms"]) if row["ms"] != "" else 0.0
            baseline.guard(row["rel_err"], speed, peak)

    t0 = time.time()
    try:
        run_plan(todo, measure_fn, rows_file, clocks_file, {**prov, "run_id": run_id}, guard)
    except KeyboardInterrupt:
        kept = len(results.done_keys(rows_file.path))
        say(f"interrupted: the {kept} finished rows are kept in {rows_file.path}; "
            "rerun with --resume to measure only the rest")
        return 130
    say(f"measured {len(todo)} rows in {time.time() - t0:.0f} s -> {rows_file.path}")

    rows = results.read(rows_file.path)
    sampled = rows.loc[rows["experiment"] == "main", "sm_clock_mhz"].dropna()
    if len(sampled):
        gpu.sampled_sm_clock_mhz = float(sampled.median())
    gpu.to_json(data / "gpu.json")
    sass_df = sass_step(args, out, arch=arch)
    ledgers, model = derive(measured_rows(rows), gpu, out, sass_df=sass_df)
    print_tables(ledgers, model, gpu, f"measured on {gpu.name}, run {run_id}")
    render(args, out, measured=True)
    return 1 if failed else 0


# --- steps ---------------------------------------------------------------------------------------


def key(p, k) -> tuple:
    shape = experiments.shape_for(k, p)
    return (p.experiment, p.label, k.id, *shape)


def footprint_bytes(M: int, N: int, K: int) -> int:
    """Device memory one measurement of M x N x K needs at once: the fp32 A, B and C, and the
    float64 copies of A and B and the float64 reference C that the correctness check builds."""
    elems = M * K + K * N + M * N
    return 4 * elems + 8 * elems


def check_fits(shape: tuple[int, int, int], free_bytes: int) -> None:
    """InputError when ``shape`` needs more device memory than ``free_bytes``."""
    need = footprint_bytes(*shape)
    if need > free_bytes:
        M, N, K = shape
        raise InputError(
            f"{M}x{N}x{K} needs {need / 2**30:.1f} GiB of device memory (fp32 A, B, C and their "
            f"float64 reference for the check); {free_bytes / 2**30:.1f} GiB are free"
        )


def run_plan(todo, measure_fn, rows_file, clocks_file, prov: dict, guard=None) -> None:
    """Measure each (point, kernel) of ``todo``, appending its row the moment it is done.

    ``measure_fn(kernel, shape) -> {"row": ..., "samples": [(t, MHz), ...]}``. A (kernel, shape)
    that several experiments share is measured once and recorded under each of them, also
    across a --resume (the rows already in ``rows_file`` count as measured).
    """
    from tqdm import tqdm

    from study import results

    memo = results.measured(rows_file.path)
    bar = tqdm(todo, desc="measuring", unit="run", file=sys.stderr, dynamic_ncols=True)
    for p, k in bar:
        shape = experiments.shape_for(k, p)
        bar.set_postfix_str(f"{p.experiment}:{p.label} {k.id} {shape[0]}x{shape[1]}x{shape[2]}")
        if (k.id, shape) not in memo:
            memo[(k.id, shape)] = measure_fn(k, shape)
        m = memo[(k.id, shape)]
        row = {**m["row"], "experiment": p.experiment, "label": p.label, **prov,
               "timestamp": results.timestamp()}
        rows_file.append(row)
        if m["samples"] and not m.get("clocks_written"):
            clocks_file.append_many(
                {"run_id": prov.get("run_id", ""), "experiment": p.experiment, "label": p.label,
                 "kernel": k.id, "M": shape[0], "N": shape[1], "K": shape[2], "t_s": round(t, 4),
                 "sm_clock_mhz": mhz}
                for t, mhz in m["samples"]
            )
            m["clocks_written"] = True
        if guard:
            guard(k, shape, row)
    bar.close()


def correctness_sweep(chosen, bench) -> dict[str, str]:
    """Every kernel on small odd shapes against float64 before anything is timed."""
    failed = {}
    for k in chosen:
        for shape in CHECK_SHAPES:
            if k.constraint_error(*shape):
                continue
            try:
                err = bench.check(k.launcher, *shape, seed=sum(shape))
            except Exception as e:  # a launch failure is a failed check, reported with its reason
                failed[k.id] = first_line(e)
                break
            if not err <= bench.TOLERANCE:
                failed[k.id] = f"relative error {err:.2e} at {shape[0]}x{shape[1]}x{shape[2]}"
                break
    return failed


def measure_one(k, shape, flush, target_s, bench, torch, gpu_mod) -> dict:
    M, N, K = shape
    launch = k.launcher
    rel_err = bench.check(launch, M, N, K, seed=M * 7 + N * 3 + K)
    row = {"kernel": k.id, "impl": k.impl, "M": M, "N": N, "K": K, "rel_err": rel_err, "ms": "",
           "p20_ms": "", "p80_ms": "", "reps": "", "sm_clock_mhz": "", "clock_samples": 0, "config": ""}
    if not rel_err <= bench.TOLERANCE:
        say(f"{k.id} at {M}x{N}x{K}: relative error {rel_err:.2e} > {bench.TOLERANCE:.0e}; not timed")
        return {"row": row, "samples": []}
    a, b = bench.random_inputs(M, N, K, seed=1 + M + N + K)
    out = torch.empty(M, N, device="cuda", dtype=torch.float32)
    with gpu_mod.ClockSampler() as clock:
        t = bench.time_cuda(lambda: launch(a, b, out), flush, target_s=target_s)
    med_clock = clock.median()
    row.update(ms=t.ms, p20_ms=t.p20_ms, p80_ms=t.p80_ms, reps=t.reps,
               sm_clock_mhz=med_clock if med_clock is not None else "", clock_samples=len(clock.samples))
    cfg = k.tuned_config(M, N, K)
    row["config"] = json.dumps(cfg, sort_keys=True) if cfg else ""
    return {"row": row, "samples": clock.samples}


def measured_rows(rows, note: bool = False):
    """Rows with a time: a kernel that failed its check has an empty ``ms`` and is left out (with
    one line saying so when ``note``). A time that is there but not a number is kept, for the
    ledgers to refuse by name."""
    blank = rows["ms"].isna() | (rows["ms"].astype(str).str.strip() == "")
    if note and blank.any():
        counts = rows.loc[blank, "kernel"].astype(str).value_counts(sort=False)
        which = ", ".join(f"{k} ({n} row{'s' if n > 1 else ''})" for k, n in counts.items())
        say(f"left out {int(blank.sum())} row(s) without a time (a kernel that failed its check "
            f"has none): {which}")
    return rows[~blank].copy()


# the model's steps, in order; each needs its kernels timed at one common shape
MODEL_STEPS = ("exact calibration", "least-squares fit", "SASS prices", "leave-one-out")


def derive(times, gpu, out: Path, sass_df, require_calibration: bool = False):
    """Ledgers and model from times (pure arithmetic), written to <out>/data/.

    ledgers.csv is always written. Each model step runs when its kernels were timed, and is
    otherwise skipped with one line saying what it lacked (so a subset run still ends with its
    ledgers): model.csv then has fewer rows (or none), loo.csv and model_sass.csv are absent.
    With ``require_calibration`` (a replay the user asked for) times that cannot be calibrated
    are an InputError instead, raised before anything is written.
    """
    from study.derive import ledgers as led
    from study.derive import model

    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    table = led.ledger_table(with_tile_columns(times), gpu)
    skipped: dict[str, list[str]] = {}

    def attempt(step, fn):
        try:
            return fn()
        except InputError as e:  # the model's one complaint: too few kernels timed for this step
            skipped.setdefault(str(e).removeprefix("cannot calibrate: "), []).append(step)
            return None

    if require_calibration:
        exact = model.calibrate_exact(table)
    else:
        exact = attempt(MODEL_STEPS[0], lambda: model.calibrate_exact(table))
    lstsq = attempt(MODEL_STEPS[1], lambda: model.fit_lstsq(table))
    mtab = model.prices_table([p for p in (exact, lstsq) if p is not None])
    if exact is not None:
        table = model.apply(table, exact)
    if sass_df is not None and len(sass_df):
        sass_model = attempt(MODEL_STEPS[2], lambda: model.fit_sass(table, sass_df))
        if sass_model is not None:
            mtab = model.with_sass(mtab, sass_model)
            sass_model.predictions.to_csv(data / "model_sass.csv", index=False)
        else:  # not from another run's times
            (data / "model_sass.csv").unlink(missing_ok=True)
    loo = attempt(MODEL_STEPS[3], lambda: model.leave_one_out(table))
    if loo is not None:
        loo.to_csv(data / "loo.csv", index=False)
    else:
        (data / "loo.csv").unlink(missing_ok=True)
    table.to_csv(data / "ledgers.csv", index=False)
    mtab.to_csv(data / "model.csv", index=False)
    for reason, steps in skipped.items():
        say(f"model: skipped {', '.join(steps)} ({reason})")
    return table, mtab


def with_tile_columns(times):
    """BM/BN/BK of the autotune winner (the ``config`` JSON) so its byte ledger has a tile. A
    config that is not a JSON object is ignored: that row has no tile from it."""
    if "config" not in times.columns:
        return times
    times = times.copy()
    cfgs = [_config(c) for c in times["config"]]
    for dim in ("BM", "BN", "BK"):
        times[dim] = [c.get(dim) for c in cfgs]
    return times


def _config(text) -> dict:
    if not (isinstance(text, str) and text.startswith("{")):
        return {}
    try:
        cfg = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return cfg if isinstance(cfg, dict) else {}


def tuned_configs(results_csv: Path) -> dict[str, dict]:
    """The configuration each autotuned kernel ran with in the main experiment, from the rows on
    disk, so its SASS describes the kernel that was timed."""
    import pandas as pd

    if not results_csv.is_file():
        return {}
    rows = pd.read_csv(results_csv, dtype={"config": str})
    if not {"kernel", "experiment", "config"} <= set(rows.columns):
        return {}
    found = {}
    for r in rows[rows["experiment"] == "main"].to_dict("records"):
        k = kernels.BY_ID.get(str(r["kernel"]))
        cfg = r["config"]
        if k is not None and k.tuned and isinstance(cfg, str) and cfg.startswith("{"):
            try:
                found[k.id] = json.loads(cfg)
            except ValueError:
                continue
    return found


def sass_step(args, out: Path, arch: str):
    """The SASS ledger (E5): needs nvcc and cuobjdump, never a GPU."""
    if args.no_sass:
        return None
    from study import sass

    try:
        df = sass.sass_table([k for k in args.kernel_list if k.impl != "cublas"], arch,
                             configs=tuned_configs(out / "data" / "results.csv"))
    except sass.SassUnavailable as e:
        say(f"SASS skipped: {e}")
        return None
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    df.to_csv(data / "sass.csv", index=False)
    sass.counted_vs_compiled(df, args.kernel_list).to_csv(data / "counted_vs_compiled.csv", index=False)
    print(f"\nSASS ledger ({arch}), whole kernel and main loop body:")
    cols = [c for c in ("kernel", "FFMA", "LDS32", "LDS128", "LDG32", "LDG128", "LDGSTS", "total",
                        "loop_FFMA", "loop_LDS", "loop_LDG", "registers", "smem_bytes", "occupancy_pct")
            if c in df.columns]
    print(df[cols].to_string(index=False))
    return df


def render(args, out: Path, measured: bool) -> None:
    if args.no_report:
        return
    from study import report

    path = report.render(out, seed_dir=REPO / "reports" / "data", measured=measured)
    say(f"report: {path}" + ("" if measured else " (re-rendered from recorded rows: nothing measured)"))


FORMATS = {
    "ms": "{:.3f}", "p20_ms": "{:.3f}", "p80_ms": "{:.3f}", "gflops": "{:.1f}", "pct_peak": "{:.2f}",
    "pct_peak_sampled": "{:.2f}", "pct_cublas": "{:.1f}", "rel_err": "{:.1e}", "cadence": "{:.3f}",
    "cadence_sampled": "{:.3f}", "attainment_pct": "{:.1f}", "loads_per_fma": "{:.4f}",
    "cycles_per_load": "{:.2f}", "predicted_cadence": "{:.3f}", "model_error_pct": "{:+.1f}",
    "triton_over_cuda_gflops": "{:.2f}", "p_ldg": "{:.3f}", "p_dist": "{:.3f}", "p_bcast": "{:.3f}",
    "p_lds32": "{:.3f}", "p_lds128": "{:.3f}",
}


def formatted(df):
    """Numbers as the tables print them: one format per figure, blanks for NaN."""
    import pandas as pd

    df = df.copy()
    for c, fmt in FORMATS.items():
        if c in df.columns:
            v = pd.to_numeric(df[c], errors="coerce")
            df[c] = [fmt.format(x) if pd.notna(x) else "" for x in v]
    return df


def twin_pairs() -> dict[str, str]:
    """Triton kernel id -> the CUDA kernel it is compared with: one of ``kernels.twins_of``,
    its own ``twin`` field where it has one (T5 mirrors K5's tile but is K6's twin)."""
    pairs: dict[str, str] = {}
    for c in kernels.by_impl("cuda"):
        for t in kernels.twins_of(c.id):
            if t.twin == c.id or t.id not in pairs:
                pairs[t.id] = c.id
    return pairs


def main_table(ledgers):
    """The main-experiment rows; each Triton kernel with its CUDA twin and ``triton_over_cuda_gflops``
    (``ledgers.twin_ratio``: Triton GFLOP/s over the twin's at the same shape; > 1: Triton faster)."""
    import pandas as pd

    from study.derive import ledgers as led

    main = ledgers[ledgers["experiment"] == "main"] if "experiment" in ledgers.columns else ledgers
    main = (main if len(main) else ledgers).copy()
    speed = {(k, m, n, kk): g for k, m, n, kk, g in zip(
        main["kernel"], main["M"], main["N"], main["K"], pd.to_numeric(main["gflops"], errors="coerce"))}
    pairs = twin_pairs()
    main["twin"] = [pairs.get(k, "") for k in main["kernel"]]
    main["triton_over_cuda_gflops"] = [
        led.twin_ratio(speed[(k, m, n, kk)], speed[(t, m, n, kk)]) if (t, m, n, kk) in speed else float("nan")
        for k, t, m, n, kk in zip(main["kernel"], main["twin"], main["M"], main["N"], main["K"])
    ]
    return main


def print_tables(ledgers, model, gpu, origin: str) -> None:
    main = main_table(ledgers)
    cols = ["kernel", "impl", "M", "N", "K", "ms", "p20_ms", "p80_ms", "gflops", "pct_peak",
            "pct_peak_sampled", "pct_cublas", "rel_err", "cadence", "cadence_sampled", "attainment_pct",
            "loads_per_fma", "cycles_per_load", "predicted_cadence", "model_error_pct", "twin",
            "triton_over_cuda_gflops"]
    cols = [c for c in cols if c in main.columns]
    sampled = gpu.sampled_sm_clock_mhz
    print(f"\nMain table ({origin}); % of peak and cadence at {gpu.sm_clock_mhz:.0f} MHz (device max)"
          + (f", *_sampled at {sampled:.0f} MHz (median sampled)" if sampled else ""))
    print(formatted(main[cols]).to_string(index=False))
    if model.empty:
        print("\nUnit prices: none (the model was skipped; see above)")
        return
    print("\nUnit prices (cycles per load, per warp-FMA):")
    mcols = [c for c in ("method", "p_ldg", "p_dist", "p_bcast", "p_lds32", "p_lds128", "kernels")
             if c in model.columns]
    print(formatted(model[mcols]).to_string(index=False))


if __name__ == "__main__":
    sys.exit(main())
