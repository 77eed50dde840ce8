"""The CLI: ``python -m study.run``.

On a GPU: check every kernel, measure the experiments (rows appended as they complete),
compute the ledgers and the model, read the SASS, write ``<out>/``. Without a GPU: the SASS
and the ledger arithmetic, and the report re-rendered from the recorded rows, saying plainly
that nothing was measured. Bad input: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from study import experiments, kernels
from study.errors import InputError

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
    p.add_argument("--out", default=str(REPO / "reports"), help="output directory (default reports/)")
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
    if args.arch is not None and not (args.arch.startswith("sm_") and args.arch[3:].isdigit()):
        raise InputError(f"--arch must look like sm_90; got {args.arch!r}")
    return args


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
    except KeyError as e:  # registry lookups name the unknown id
        print(f"error: {e.args[0]}", file=sys.stderr)
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
    times = results.read(args.from_results, required=["kernel", "M", "N", "K", "ms"])
    out = Path(args.out)
    ledgers, model = derive(times, gpu, out, sass_df=None)
    print_tables(ledgers, model, gpu, "replayed from " + str(args.from_results))
    return 0


def without_gpu(args) -> int:
    out = Path(args.out)
    say("no CUDA device: measured nothing. Computing what needs no GPU (SASS, ledger arithmetic) "
        "and re-rendering the report from the recorded rows.")
    sass_df = sass_step(args, out, arch=args.arch or "sm_90")
    recorded = REPO / "reports" / "data"
    rec_results, rec_gpu = recorded / "results.csv", recorded / "gpu.json"
    if rec_results.is_file() and rec_gpu.is_file():
        from study import gpu as gpu_mod
        from study import results

        gpu = gpu_mod.GPU.from_json(rec_gpu)
        rows = results.read(rec_results)
        data = out / "data"
        data.mkdir(parents=True, exist_ok=True)
        if data.resolve() != recorded.resolve():
            for f in recorded.glob("*"):
                if f.is_file() and not (data / f.name).exists():
                    (data / f.name).write_bytes(f.read_bytes())
        ledgers, model = derive(measured_rows(rows), gpu, out, sass_df=sass_df)
        print_tables(ledgers, model, gpu, f"recorded rows from {rec_results.relative_to(REPO)}")
        render(args, out, measured=False)
    else:
        say(f"no recorded run in {recorded}: nothing to re-render")
    return 0


def measure(args) -> int:
    import torch

    from study import baseline, bench, results
    from study import gpu as gpu_mod

    baseline.pin_fp32()
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
            speed = gflops_of(shape, row["ms"]) if row["ms"] != "" else 0.0
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


def gflops_of(shape, ms) -> float:
    from study import ledgers

    return ledgers.gflops(*shape, ms)


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
                failed[k.id] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
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


def measured_rows(rows):
    """Rows with a time (failed checks carry none)."""
    import pandas as pd

    ms = pd.to_numeric(rows["ms"], errors="coerce")
    return rows[ms.notna()].copy()


def derive(times, gpu, out: Path, sass_df):
    """Ledgers and model from times (pure arithmetic), written to <out>/data/."""
    from study import ledgers as led
    from study import model

    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    table = led.ledger_table(with_tile_columns(times), gpu)
    mtab = model.model_table(table)
    table = model.apply(table, model.calibrate_exact(table))
    if sass_df is not None and len(sass_df):
        sass_model = model.fit_sass(table, sass_df)
        mtab = model.with_sass(mtab, sass_model)
        sass_model.predictions.to_csv(data / "model_sass.csv", index=False)
    loo = model.leave_one_out(table)
    loo.to_csv(data / "loo.csv", index=False)
    table.to_csv(data / "ledgers.csv", index=False)
    mtab.to_csv(data / "model.csv", index=False)
    return table, mtab


def with_tile_columns(times):
    """BM/BN of the autotune winner (the ``config`` JSON) so its byte ledger has a tile."""
    if "config" not in times.columns:
        return times
    times = times.copy()
    cfgs = [json.loads(c) if isinstance(c, str) and c.startswith("{") else {} for c in times["config"]]
    for dim in ("BM", "BN"):
        times[dim] = [c.get(dim) for c in cfgs]
    return times


def sass_step(args, out: Path, arch: str):
    """The SASS ledger (E5): needs nvcc and cuobjdump, never a GPU."""
    if args.no_sass:
        return None
    from study import sass

    try:
        df = sass.sass_table([k for k in args.kernel_list if k.impl != "cublas"], arch)
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
    "triton_over_cuda": "{:.2f}", "p_ldg": "{:.3f}", "p_dist": "{:.3f}", "p_bcast": "{:.3f}",
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


def main_table(ledgers):
    """The main-experiment rows, with each Triton twin's time over its CUDA kernel's."""
    import pandas as pd

    main = ledgers[ledgers["experiment"] == "main"] if "experiment" in ledgers.columns else ledgers
    main = (main if len(main) else ledgers).copy()
    ms = dict(zip(main["kernel"], pd.to_numeric(main["ms"], errors="coerce")))
    main["twin"] = [kernels.BY_ID[k].twin or "" if k in kernels.BY_ID else "" for k in main["kernel"]]
    # < 1: the Triton twin is faster than the hand-written kernel with the same tile
    main["triton_over_cuda"] = [ms[k] / ms[t] if t in ms else float("nan")
                                for k, t in zip(main["kernel"], main["twin"])]
    return main


def print_tables(ledgers, model, gpu, origin: str) -> None:
    main = main_table(ledgers)
    cols = ["kernel", "impl", "M", "N", "K", "ms", "p20_ms", "p80_ms", "gflops", "pct_peak",
            "pct_peak_sampled", "pct_cublas", "rel_err", "cadence", "cadence_sampled", "attainment_pct",
            "loads_per_fma", "cycles_per_load", "predicted_cadence", "model_error_pct", "twin",
            "triton_over_cuda"]
    cols = [c for c in cols if c in main.columns]
    sampled = gpu.sampled_sm_clock_mhz
    print(f"\nMain table ({origin}); % of peak and cadence at {gpu.sm_clock_mhz:.0f} MHz (device max)"
          + (f", *_sampled at {sampled:.0f} MHz (median sampled)" if sampled else ""))
    print(formatted(main[cols]).to_string(index=False))
    print("\nUnit prices (cycles per load, per warp-FMA):")
    mcols = [c for c in ("method", "p_ldg", "p_dist", "p_bcast", "p_lds32", "p_lds128", "kernels")
             if c in model.columns]
    print(formatted(model[mcols]).to_string(index=False))


if __name__ == "__main__":
    sys.exit(main())
