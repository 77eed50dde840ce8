"""Hardware counters (Nsight Compute) for chosen kernels at one shape: where the cycles go.

``python -m study.profile [--kernels K1,K2,K6,T5p,TA,K0] [--shape M,N,K] [--out DIR]`` runs,
for each kernel, one child process under ``ncu --clock-control none`` (the clocks are left
as they are). The child checks the kernel against float64 with a NaN-poisoned output,
launches it twice outside the profiled range (TA tunes there), then once inside it; ncu
reads the counters of that launch (several replay passes, each the same launch). Each value
becomes one row of ``DIR/data/ncu.csv``, appended as soon as that kernel is done, with the
GPU, commit and ncu version it came from. The report renders them (``Hardware counters``).

With ``--source`` the same child runs under ncu's SourceCounters and WarpStateStats sections with
the warps sampled at every cycle, and ncu's per-instruction page is summed per opcode into
``DIR/data/ncu_source.csv`` (:func:`by_opcode`): where in the code the shared-memory wavefronts and
the stalls fall (a copy whose bank conflicts cost wavefronts shows there and in no aggregate
counter).

The counters answer what the timings cannot: how often each scheduler issued an instruction
(``smsp__issue_active``), how busy the FMA pipe was, what share of the instructions were
FMA-pipe ones, shared loads per FMA, why warps waited (stall reasons per issued
instruction), and the global traffic behind the request ledger (L1 sectors per warp FMA).
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from study.cli import say
from study.errors import InputError
from study.rundata import rundir
from study.rundata.rundir import RunDir
from study.rundata.tables import SOURCE_STALLS, T
from study.toolchain.tools import find_ncu, ncu_version

STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"
METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "launch__registers_per_thread",
    "launch__grid_size",
    "launch__block_size",
    "launch__shared_mem_per_block_dynamic",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
    "smsp__inst_executed_pipe_fma.sum",
    "smsp__inst_executed_pipe_lsu.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    # stores' wavefronts (a transposing store's bank conflicts, which the lanes price) and the L2's
    # read hit rate (where a global load's latency lies between L2 and DRAM): for study.predict
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "lts__t_sector_op_read_hit_rate.pct",
    # the global loads' sectors that hit in the L1, and the L1's pace (a load whose lanes share a
    # bank in other lines holds it a cycle a lane: docs/notes/predict.md)
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "dram__bytes_read.sum",
    f"regex:{STALL_PREFIX}.*{STALL_SUFFIX.replace('.', chr(92) + '.')}",
)
COLUMNS = [*T.ncu.columns]  # declared in study.rundata.tables
SOURCE_COLUMNS = [*T.ncu_source.columns]
SOURCE_SECTIONS = ("SourceCounters", "WarpStateStats")
CHILD_TIMEOUT_S = 600


def parse_ncu_csv(text: str) -> list[dict]:
    """``ncu --csv`` output -> one dict per (launch, metric): launch, ncu_kernel, metric, unit, value.

    Lines before the CSV header (ncu's ``==PROF==`` notes, the program's own output) are
    skipped; ``value`` is a float (ncu writes thousands separators) or the text when it is
    not a number. Launches are numbered 0, 1, ... in the order ncu reports them.
    """
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    rows, ids = [], {}
    for r in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if not r.get("Metric Name"):
            continue
        launch = ids.setdefault(r["ID"], len(ids))
        raw = (r.get("Metric Value") or "").strip()
        try:
            value: float | str = float(raw.replace(",", ""))
        except ValueError:
            value = raw
        rows.append({"launch": launch, "ncu_kernel": r.get("Kernel Name", ""), "metric": r["Metric Name"],
                     "unit": r.get("Metric Unit", ""), "value": value})
    return rows


def parse_source_page(text: str) -> list[tuple[str, list[dict]]]:
    """ncu's per-instruction page (``ncu -i R --page source --csv --print-source sass``) -> one
    (function name, rows) per profiled launch: each block opens with a ``"Kernel Name"`` line, then
    a header and one row per SASS instruction."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith('"Kernel Name"'):
            cells = next(csv.reader([line]))
            blocks.append((cells[1] if len(cells) > 1 else "", []))
        elif blocks and line.strip():
            blocks[-1][1].append(line)
    return [(name, list(csv.DictReader(lines))) for name, lines in blocks if lines]


def opcode(source: str) -> str:
    """The opcode of a SASS line as ncu prints it (``@P0 LDS.128 R4, [R2]`` -> ``LDS.128``)."""
    parts = source.split()
    if parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0].rstrip(";") if parts else ""


def _count(x) -> float:
    try:
        return float(str(x).replace(",", ""))
    except ValueError:
        return 0.0


def by_opcode(rows: list[dict]) -> list[dict]:
    """The rows of one launch's page summed per opcode: SASS instructions, warp-level instructions
    executed, shared wavefronts (and their conflict-free count), stall samples in all and per
    reason (``SOURCE_STALLS``; samples of a reason the page names and the table does not still
    count in ``samples``), in the page's order of first appearance."""
    out: dict[str, dict] = {}
    for r in rows:
        op = opcode(r.get("Source", ""))
        if not op:
            continue
        o = out.setdefault(op, {"opcode": op, "instructions": 0, "executed": 0.0, "wavefronts_shared": 0.0,
                                "wavefronts_shared_ideal": 0.0, "samples": 0.0,
                                **{f"stall_{s}": 0.0 for s in SOURCE_STALLS}})
        o["instructions"] += 1
        o["executed"] += _count(r.get("Instructions Executed"))
        o["wavefronts_shared"] += _count(r.get("L1 Wavefronts Shared"))
        o["wavefronts_shared_ideal"] += _count(r.get("L1 Wavefronts Shared Ideal"))
        for name, v in r.items():
            if name and name.startswith("stall_") and "(" not in name:
                o["samples"] += _count(v)
                if name[6:] in SOURCE_STALLS:
                    o[name] += _count(v)
    return list(out.values())


def ncu_error(text: str) -> str:
    """The first ``==ERROR==`` line of ncu's output or ``error:`` line of the child's, else the
    last non-empty line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(("==ERROR==", "error:"))]
    return (errors or lines or ["no output"])[0 if errors else -1][:200]


# --------------------------------------------------------------------------------------------
# The child: one kernel, one profiled launch
# --------------------------------------------------------------------------------------------


def child(kid: str, shape: tuple[int, int, int], config: dict | None = None) -> int:
    import torch

    from study import kernels
    from study.measure import baseline, bench

    k = kernels.get(kid)
    baseline.pin_fp32()
    M, N, K = shape
    # an autotuned kernel runs the configuration the run timed (no tuning of its own here)
    launch = k.launcher_with(config) if config else k.launcher
    err = bench.check(launch, M, N, K, seed=M * 7 + N * 3 + K)
    if not err <= bench.TOLERANCE:
        print(f"error: {kid} at {M}x{N}x{K}: relative error {err:.2e} > {bench.TOLERANCE:.0e}; "
              "not profiled", file=sys.stderr)
        return 1
    a, b = bench.random_inputs(M, N, K, seed=1 + M + N + K)
    out = torch.empty(M, N, device="cuda", dtype=torch.float32)
    for _ in range(2):  # compiles, tunes (TA without a config), warms: outside the profiled range
        launch(a, b, out)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    launch(a, b, out)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    if k.tuned:  # the configuration profiled, for the parent to record beside the counters
        print(CONFIG_LINE + json.dumps(config or k.tuned_config(M, N, K), sort_keys=True), file=sys.stderr)
    return 0


CONFIG_LINE = "profiled config: "


def launched_config(stderr: str) -> dict | None:
    """The configuration a child reported it profiled (``CONFIG_LINE``), None where it reported none."""
    for line in reversed(stderr.splitlines()):
        if line.startswith(CONFIG_LINE):
            try:
                return json.loads(line[len(CONFIG_LINE):])
            except ValueError:
                return None
    return None


# --------------------------------------------------------------------------------------------
# The parent: one ncu run per kernel, rows appended as each ends
# --------------------------------------------------------------------------------------------


def timed_configs(rd: RunDir, shape) -> dict[str, dict]:
    """Kernel id -> the configuration each autotuned kernel was timed with at ``shape`` in the run
    directory (its contiguous rows' ``config``), for the profile to launch the same one."""

    from study.rundata import results

    path = rd.file(rundir.RESULTS)
    if not path.is_file():
        return {}
    try:
        rows = results.read(path)
    except InputError:
        return {}
    return results.timed_configs(rows, shape)


def _child_cmd(k, shape, config) -> list[str]:
    return [sys.executable, "-m", "study.profile", "--child", k.id, "--shape", ",".join(map(str, shape)),
            *(["--config", json.dumps(config, sort_keys=True)] if config else [])]


def _each(chosen, shape, out: Path, ncu: str, file: str, columns: list[str], what: str, read) -> int:
    """What both modes share: per kernel, ``read(k, config, env)`` runs ncu on its child (an
    autotuned kernel with the configuration the run timed at ``shape``) and returns (rows, text):
    the rows to append to ``file`` (none where ncu failed) and what ncu and the child printed;
    each row gets the provenance, the kernel's launch and the shape."""
    from study.measure import device
    from study.rundata.results import ResultsFile, new_run_id, provenance, timestamp

    gpu = device.from_device()
    prov = provenance(gpu, new_run_id())
    common = {"ncu": ncu_version(ncu), "gpu": prov["gpu"], "driver": prov["driver"], "board": prov["board"],
              "commit": prov["commit"], "run_id": prov["run_id"]}
    rows_file = ResultsFile(RunDir(out).file(file), columns)
    repo = Path(__file__).resolve().parents[2]
    path = os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    failed = []
    timed = timed_configs(RunDir(out), shape)
    for i, k in enumerate(chosen, 1):
        config = timed.get(k.id) if k.tuned else None
        say(f"[{i}/{len(chosen)}] {k.id}: {what} at {shape[0]}x{shape[1]}x{shape[2]}"
            + (f", the timed configuration {json.dumps(config, sort_keys=True)}" if config else ""))
        try:
            rows, text = read(k, config, env)
        except subprocess.TimeoutExpired:
            failed.append(f"{k.id} (ncu ran past {CHILD_TIMEOUT_S} s)")
            continue
        if not rows:
            failed.append(f"{k.id} ({ncu_error(text)})")
            continue
        path = k.path_for(*shape, gpu.cc)
        ran = config or launched_config(text)
        launch = {"symbol": path.symbol if path is not None else "",
                  "config": json.dumps(ran, sort_keys=True) if k.tuned and ran else "",
                  "kernel": k.id, "M": shape[0], "N": shape[1], "K": shape[2], "timestamp": timestamp()}
        rows_file.append_many({**r, **common, **launch} for r in rows)
    if failed:
        say("not profiled: " + "; ".join(failed))
    say(f"{what}: {out / 'data' / file}")
    return 1 if failed else 0


def profile(chosen, shape, out: Path, ncu: str) -> int:
    """One ncu run of ``METRICS`` per kernel, its rows appended to ``ncu.csv``."""
    def read(k, config, env):
        cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--csv",
               "--print-units", "base", "--metrics", ",".join(METRICS), *_child_cmd(k, shape, config)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_S)
        rows = parse_ncu_csv(done.stdout) if done.returncode == 0 else []
        return rows, done.stderr + done.stdout

    return _each(chosen, shape, out, ncu, rundir.NCU, COLUMNS, "counters", read)


def profile_source(chosen, shape, out: Path, ncu: str) -> int:
    """``--source``: per kernel, one ncu run of its child with ``SOURCE_SECTIONS`` and warp-state
    samples at every cycle into a report in a temporary directory, its per-instruction page summed
    per opcode (:func:`by_opcode`) into ``ncu_source.csv``."""
    import tempfile

    sections = [a for name in SOURCE_SECTIONS for a in ("--section", name)]
    with tempfile.TemporaryDirectory(prefix="study-source-") as tmp:
        def read(k, config, env):
            rep = Path(tmp) / k.id
            cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", *sections,
                   "--warp-sampling-interval", "0", "--force-overwrite", "-o", str(rep),
                   *_child_cmd(k, shape, config)]
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_S)
            if done.returncode != 0:
                return [], done.stderr + done.stdout
            page = subprocess.run([ncu, "-i", f"{rep}.ncu-rep", "--page", "source", "--csv", "--print-source",
                                   "sass"], capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
            rows = [{**r, "ncu_kernel": name} for name, block in parse_source_page(page.stdout)
                    for r in by_opcode(block)]
            return rows, done.stderr + page.stderr + page.stdout[-2000:]

        return _each(chosen, shape, out, ncu, rundir.NCU_SOURCE, SOURCE_COLUMNS, "per-instruction counters",
                     read)


def main(argv: list[str] | None = None) -> int:
    from study import cli, kernels
    from study.run import DEFAULT_OUT

    p = cli.Parser(prog="python -m study.profile", description=__doc__.split("\n\n")[0])
    default = ",".join(k.id for k in kernels.default_profile())
    source = ",".join(k.id for k in kernels.source_profile())
    p.add_argument("--kernels", help=f"comma-separated ids (default {default}; with --source {source})")
    p.add_argument("--shape", default="4096,4096,4096", help="M,N,K (default 4096,4096,4096)")
    p.add_argument("--out", default=DEFAULT_OUT,
                   help=f"run directory the counters join (default {DEFAULT_OUT}/)")
    p.add_argument("--source", action="store_true",
                   help="read per-instruction counters instead (SourceCounters, warps sampled every cycle): "
                        "data/ncu_source.csv, summed per opcode")
    p.add_argument("--child", help=cli.HIDDEN)  # internal: profile this kernel in this process
    p.add_argument("--config", help=cli.HIDDEN)  # internal: the autotuned configuration to launch

    def body() -> int:
        args = p.parse_args(argv)
        shape = cli.parse_shape(args.shape)
        if args.child is not None:
            k = kernels.get(args.child)
            import torch

            if not torch.cuda.is_available():
                raise InputError(f"--child {k.id} launches the kernel under ncu: it needs a CUDA GPU, "
                                 "and none is visible")
            return child(k.id, shape, json.loads(args.config) if args.config else None)
        named = args.kernels if args.kernels is not None else (source if args.source else default)
        chosen = kernels.select(",".join(cli.nonempty_list(named, "--kernels", kernels.IDS)))
        for k in chosen:
            err = k.constraint_error(*shape)
            if err:
                raise InputError(err + " (leave it out with --kernels, or pick another shape)")
        out = cli.out_dir(args.out)
        ncu = find_ncu()
        if ncu is None:
            raise InputError("ncu (Nsight Compute) is not on PATH nor in $CUDA_HOME/bin: "
                             "nothing to read counters with")
        import torch

        if not torch.cuda.is_available():
            raise InputError("hardware counters need a CUDA GPU, and none is visible: measured nothing")
        from study.measure import device

        gpu = device.from_device()
        rd = RunDir(out)
        rd.claim_measurement(rundir.identity(gpu.name, gpu.cc, gpu.sms), resume=True)  # one GPU per directory
        rd.create()
        if not rd.has(rundir.GPU):
            gpu.to_json(rd.file(rundir.GPU))
        return (profile_source if args.source else profile)(chosen, shape, out, ncu)

    return cli.main(body)


if __name__ == "__main__":
    sys.exit(main())
