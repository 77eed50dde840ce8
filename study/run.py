"""``python -m study.run``: measure, replay or re-derive a run, then derive and render it.

Three modes, each ending in the same derive step and report:

* **measure** (a CUDA device is present): check every kernel, time the experiments (rows appended
  as they complete), read the SASS with this machine's toolchain;
* **replay** (``--from-results TIMES.csv --gpu GPU.json``): recorded times of any GPU, no GPU
  needed; the directory becomes a full run directory of that GPU;
* **recorded** (no device): the reference run in ``reports/`` copied into ``--out`` and
  re-derived; the SASS compiled here goes to ``<out>/local/``, never into the run's tables.

Bad input: one line on stderr, exit 2.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from study import cli, experiments, kernels
from study.cli import say
from study.errors import InputError
from study.rundata import rundir
from study.rundata.rundir import RunDir

REPO = Path(__file__).resolve().parent.parent
RECORDED = REPO / "reports"  # the reference run, committed
DEFAULT_OUT = "out"  # ignored by git: no command dirties a clean checkout
TARGET_S = 0.3
MAX_PASSES = 9


def build_parser() -> cli.Parser:
    p = cli.Parser(prog="python -m study.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--kernels", help=f"comma-separated ids (default all): {','.join(kernels.IDS)}")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--size", help="square problem n (M = N = K = n) for the main table")
    g.add_argument("--shape", help="M,N,K for the main table (default 4096,4096,4096)")
    p.add_argument("--experiments", help=f"comma-separated, default all: {','.join(experiments.EXPERIMENTS)}")
    p.add_argument("--out", help=f"run directory to write (default {DEFAULT_OUT}/)")
    p.add_argument(
        "--resume", action="store_true", help="continue the run in --out: measure only what is missing"
    )
    p.add_argument("--from-results", metavar="TIMES.csv", help="replay recorded times, no GPU needed")
    p.add_argument("--gpu", metavar="GPU.json", help="GPU constants for --from-results")
    p.add_argument("--arch", help="SASS target, e.g. sm_90 (default: the present GPU, else sm_90)")
    p.add_argument("--no-sass", action="store_true", help="skip the SASS ledger")
    p.add_argument("--no-report", action="store_true", help="skip REPORT.md and the figures")
    p.add_argument("--target-s", help=f"timed seconds per measurement (default {TARGET_S})")
    p.add_argument("--passes", help=f"passes over the headline comparisons (default {experiments.PASSES}; "
                   "each its own kernel order)")
    return p


class Plan:
    """The values a mode needs, checked; nothing else travels into the steps."""

    def __init__(self, argv):
        a = build_parser().parse_args(argv)
        self.mode = "replay" if (a.from_results is not None or a.gpu is not None) else "run"
        self.kernels = kernels.select(
            ",".join(cli.nonempty_list(a.kernels, "--kernels", kernels.IDS))
            if a.kernels is not None
            else None
        )
        on_tc = [k.id for k in self.kernels if k.precision != "fp32"]
        if on_tc:
            raise InputError(f"{', '.join(on_tc)}: on the tensor cores, beside the FP32 study; "
                             "python -m study.accuracy measures their error and speed")
        if a.size is not None:
            n = cli.positive_int(a.size)
            self.main_shape = (n, n, n)
        elif a.shape is not None:
            self.main_shape = cli.parse_shape(a.shape)
        else:
            self.main_shape = (4096, 4096, 4096)
        self.experiments = experiments.parse(a.experiments)
        if (a.size or a.shape) and a.experiments is None:
            self.experiments = ["main"]  # a chosen problem size means: the main table at that size
        self.arch = None
        if a.arch is not None:
            from study import arch

            self.arch = arch.parse_sm(a.arch)
        self.target_s = cli.positive_float(a.target_s, "--target-s") if a.target_s is not None else TARGET_S
        self.passes = cli.positive_int(a.passes, "--passes") if a.passes is not None else experiments.PASSES
        if self.passes > MAX_PASSES:
            raise InputError(f"--passes {self.passes}: at most {MAX_PASSES}")
        self.resume, self.no_sass, self.no_report = a.resume, a.no_sass, a.no_report
        self.out = cli.out_dir(a.out if a.out is not None else DEFAULT_OUT)
        self.given = {
            "--kernels": a.kernels is not None,
            "--size": a.size is not None,
            "--shape": a.shape is not None,
            "--experiments": a.experiments is not None,
            "--resume": a.resume,
            "--arch": a.arch is not None,
            "--no-sass": a.no_sass,
            "--target-s": a.target_s is not None,
            "--passes": a.passes is not None,
        }
        if self.mode == "replay":
            if a.gpu is None:
                raise InputError("--from-results needs --gpu GPU.json (the constants of the GPU that ran it)")
            if a.from_results is None:
                raise InputError("--gpu goes with --from-results")
            self.times = cli.input_file(a.from_results, "--from-results")
            self.gpu_file = cli.input_file(a.gpu, "--gpu")
            if a.out is None:
                raise InputError("--from-results needs --out DIR (a replay is a run directory of its own)")
            cli.refuse_flags(self.given, "in a replay (--from-results)")
        elif "main" in self.experiments:
            for k in self.kernels:
                err = k.constraint_error(*self.main_shape)
                if err:
                    raise InputError(err + " (leave it out with --kernels, or pick another shape)")

    def offline(self) -> None:
        """No device: the flags that only a measurement uses mean nothing."""
        cli.refuse_flags(
            {f: self.given[f] for f in ("--size", "--shape", "--experiments", "--resume", "--target-s",
                                        "--passes")},
            "without a GPU (nothing is measured; the recorded run is re-derived)",
        )


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        plan = Plan(argv)
        if plan.mode == "replay":
            return replay(plan)
        import torch

        if not torch.cuda.is_available():
            plan.offline()
            return recorded(plan)
        return measure(plan)

    try:
        return cli.main(body)
    except RuntimeError as e:
        from study.measure.baseline import TF32Leak

        if isinstance(e, TF32Leak):
            print(f"error: {e}", file=sys.stderr)
            return 1
        raise


# --- the three modes ---------------------------------------------------------------------------


def replay(plan: Plan) -> int:
    """Ledgers and model from recorded times: pure arithmetic, no GPU; a full run directory."""
    from study import derive
    from study.rundata import results as results_io
    from study.rundata.gpu import GPU

    gpu = GPU.from_json(plan.gpu_file)
    rows = results_io.read(plan.times, required=["kernel", "M", "N", "K", "ms"])
    for col, value in (("experiment", "main"), ("label", "main")):
        if col not in rows.columns:
            rows.insert(0, col, value)
    derive.validate.check_rows(rows, gpu, str(plan.times))
    files = {
        rundir.RESULTS: rows.to_csv(index=False).encode(),
        rundir.GPU: (json.dumps(gpu.to_dict(), indent=2) + "\n").encode(),
    }
    rd = RunDir(plan.out)
    rd.claim_copy(files, "a replay")
    check_calibration(
        rows, gpu
    )  # the user asked for this replay: times that cannot be calibrated are refused
    rd.write_inputs(files)
    return finish(rd, f"replayed from {plan.times}", measured=False, require_calibration=True, plan=plan)


def check_calibration(rows, gpu) -> None:
    from study import derive
    from study.derive import ledgers, model

    model.calibrate_exact(ledgers.ledger_table(derive.with_tile_columns(derive.timed(rows)), gpu))


def recorded(plan: Plan) -> int:
    src = RunDir(RECORDED)
    if not src.holds_rows():
        raise InputError(f"no recorded run in {src.data}: nothing to re-derive")
    rd = RunDir(plan.out)
    files = None
    if rd.data.resolve() != src.data.resolve():
        files = {n: src.file(n).read_bytes() for n in rundir.MEASURED if src.has(n)}
        rd.claim_copy(files, "a copy of the recorded run")  # a refusal is its one line, nothing before
    rd.check_writable()  # the copy, the local SASS, the derived tables and the report all go here
    if files is not None:
        rd.write_inputs(files)
    say(
        "no CUDA device: measured nothing. Re-deriving the recorded run and computing what needs no GPU "
        "(the SASS of this machine's toolchain, beside the run)."
    )
    if not plan.no_sass:
        local_sass(plan, rd)
    return finish(
        rd, f"recorded rows from {src.file(rundir.RESULTS).relative_to(REPO)}", measured=False, plan=plan
    )


def measure(plan: Plan) -> int:
    import torch

    from study import derive
    from study.derive import ledgers as led
    from study.measure import baseline, bench, device
    from study.measure import plan as measuring
    from study.rundata import results

    baseline.pin_fp32()
    if "main" in plan.experiments:  # before anything is timed: a shape that cannot fit is refused
        free, _total = torch.cuda.mem_get_info()
        measuring.check_fits(plan.main_shape, free)
    gpu = device.from_device()
    rd = RunDir(plan.out)
    rd.claim_measurement(rundir.identity(gpu.name, gpu.cc, gpu.sms), plan.resume)
    rd.create()
    gpu = bandwidth_roofs(gpu, rd)
    if not rd.has(rundir.GPU):
        gpu.to_json(rd.file(rundir.GPU))  # which GPU this directory holds, before the first row
    run_id = results.new_run_id()
    prov = results.provenance(gpu, run_id)
    read = f", measured read {gpu.read_gbps / 1e3:.2f} TB/s" if gpu.read_gbps else ", read not measured"
    say(
        f"{gpu.name}: {gpu.sms} SMs, {gpu.sm_clock_mhz} MHz max SM clock, FP32 peak "
        f"{gpu.peak_gflops() / 1e3:.1f} TFLOP/s, DRAM {gpu.dram_gbps() / 1e3:.2f} TB/s (datasheet){read}; "
        f"run {run_id}"
    )

    failed = measuring.correctness_sweep(plan.kernels)
    for kid, msg in failed.items():
        say(f"{kid} FAILED its correctness check: {msg}; it will not be timed")
    live = [k for k in plan.kernels if k.id not in failed]

    rows_file = results.ResultsFile(rd.file(rundir.RESULTS))
    clocks_file = results.ResultsFile(rd.file(rundir.CLOCKS), results.CLOCK_COLUMNS)
    done = results.done_keys(rows_file.path)
    todo = [
        (p, k)
        for p, k in measuring.plan(live, plan.experiments, plan.main_shape, plan.passes)
        if measuring.key(p, k) not in done
    ]
    if done:
        say(f"--resume: {len(done)} rows already in {rows_file.path}; {len(todo)} measurements to go")
    measurer = measuring.Measurer(bench.L2Flush(gpu.l2_bytes), plan.target_s, gpu.cc)
    peak = gpu.peak_gflops()

    def guard(k, shape, row):
        if k.impl == "cublas":  # TF32 must not leak into the denominator of every % of cuBLAS
            speed = led.gflops(*shape, row["ms"]) if row["ms"] != "" else 0.0
            baseline.guard(row["rel_err"], speed, peak)

    t0 = time.time()
    try:
        measuring.run_plan(todo, measurer, rows_file, clocks_file, {**prov, "run_id": run_id}, guard)
    except KeyboardInterrupt:
        say(
            f"interrupted: the finished rows are kept in {rows_file.path}; rerun with --resume to measure "
            "only the rest"
        )
        return 130
    say(f"measured {len(todo)} rows in {time.time() - t0:.0f} s -> {rows_file.path}")
    if not plan.no_sass:
        rows = derive.read_results(rd)
        run_sass(plan, rd, plan.arch or f"sm_{gpu.cc.replace('.', '')}", measuring.tuned_configs(rows))
    code = finish(rd, f"measured on {gpu.name}, run {run_id}", measured=True, plan=plan)
    return 1 if failed else code


# --- steps ---------------------------------------------------------------------------------------


def bandwidth_roofs(gpu, rd: RunDir, measure_roofs=None):
    """``gpu`` with the run's measured bandwidth roofs (docs/method.md#bandwidth-roof), recorded in
    gpu.json before the first row. A run being continued keeps the roofs its gpu.json records: they
    are never re-measured into another value; one that records none measures them now and adds
    them. A device that cannot be measured (no CUDA, out of memory) leaves them unset, with one line."""
    from study.errors import first_line
    from study.rundata.gpu import GPU

    if measure_roofs is None:
        from study.measure.bench import bandwidth_roofs as measure_roofs

    path = rd.file(rundir.GPU)
    held = GPU.from_json(path) if rd.holds_rows() and rd.has(rundir.GPU) else None
    if held is not None and held.roofs():
        say(f"--resume: keeping the bandwidth roofs recorded in {path} (measured when the run started)")
        return gpu.with_roofs(held.roofs())
    t0 = time.time()
    try:
        read, copy = measure_roofs(gpu.l2_bytes)
    except (InputError, RuntimeError) as e:  # torch's out-of-memory and CUDA errors are RuntimeErrors
        say(f"bandwidth roofs not measured ({first_line(e)}): % of the read roof stays blank in this run")
        return gpu
    roofs = {
        "read_gbps": read.gbps, "read_p20_gbps": read.p20_gbps, "read_p80_gbps": read.p80_gbps,
        "copy_gbps": copy.gbps, "copy_p20_gbps": copy.p20_gbps, "copy_p80_gbps": copy.p80_gbps,
        "roof_buffer_bytes": read.nbytes,
    }
    say(
        f"bandwidth roofs ({read.nbytes / 2**30:.2f} GiB buffer, median of {read.reps}, "
        f"{time.time() - t0:.1f} s): read {read.gbps:,.0f} GB/s, copy {copy.gbps:,.0f} GB/s"
    )
    (held or gpu).with_roofs(roofs).to_json(path)  # recorded before the first row
    return gpu.with_roofs(roofs)


def sass_tables(plan: Plan, arch: str, configs: dict):
    """The SASS ledger (E5) of the chosen kernels and their load widths at the stride
    experiment's shapes: needs nvcc and cuobjdump, never a GPU; (None, None) with one line when
    a tool is missing."""
    from study.toolchain import table, tools
    from study.toolchain.triton_child import TritonChild

    chosen = [k for k in plan.kernels if k.impl != "cublas"]
    try:
        with TritonChild() as child:  # one child process compiles both tables' Triton kernels
            df = table.sass_table(chosen, arch, configs=configs, child=child)
            widths = table.stride_table(chosen, experiments.stride_shapes(chosen), arch, configs=configs,
                                        child=child)
    except tools.SassUnavailable as e:
        say(str(e))  # the message says "SASS skipped: ..." itself
        return None, None
    for kid, error in zip(df["kernel"], df["error"], strict=True):
        if error:  # its row says so too; the rest of the table and of the run go on
            say(f"{kid}: no SASS for {arch} ({error.removeprefix(f'{kid}: ')})")
    return df, widths


def run_sass(plan: Plan, rd: RunDir, arch: str, configs: dict) -> None:
    """The run's own SASS, compiled by the toolchain that built what was timed: an input of the run."""
    from study import console

    df, widths = sass_tables(plan, arch, configs)
    if df is not None:
        df.to_csv(rd.file(rundir.SASS), index=False)
        widths.to_csv(rd.file(rundir.SASS_STRIDES), index=False)
        console.print_sass(df, arch, "this run's toolchain")


def local_sass(plan: Plan, rd: RunDir) -> None:
    """SASS compiled with this machine's toolchain for a run measured elsewhere: written beside
    the run (``local/``), labelled with its toolchain, and never mixed into the run's tables."""
    from study import console, derive
    from study.measure.plan import tuned_configs

    arch = plan.arch or "sm_90"
    df, widths = sass_tables(plan, arch, tuned_configs(derive.read_results(rd)))
    if df is None:
        return
    rd.local.mkdir(parents=True, exist_ok=True)
    df.to_csv(rd.local / f"sass_{arch}.csv", index=False)
    widths.to_csv(rd.local / f"sass_strides_{arch}.csv", index=False)
    console.print_sass(df, arch, f"this machine's toolchain, in {rd.local / f'sass_{arch}.csv'}")


def finish(rd: RunDir, origin: str, *, measured: bool, plan: Plan, require_calibration: bool = False) -> int:
    """Derive every table, print the console tables, render the report."""
    from study import console, derive

    d = derive.derive(rd, seed=RunDir(RECORDED), require_calibration=require_calibration)
    console.print_tables(rd, d, origin)
    if not plan.no_report:
        from study import report

        path = report.render(rd.root, measured=measured)
        say(f"report: {path}" + ("" if measured else " (re-rendered from recorded rows: nothing measured)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
