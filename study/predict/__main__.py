"""``python -m study.predict``: a kernel's time predicted from its SASS and its launch, no GPU.

    python -m study.predict --kernel K12 --shape 4096,4096,4096 [--gpu GPU.json] [--arch sm_90] [--json]
    python -m study.predict --kernel TA --config JSON --shape M,N,K [...]
    python -m study.predict --cu FILE.cu --symbol NAME --grid X,Y[,Z] --block T --smem BYTES \\
        --shape M,N,K [--gpu GPU.json] [--arch sm_90] [--json]
    python -m study.predict --check DIR [--write] [--arch sm_90] [--json]
    python -m study.predict --fit DIR [--arch sm_90] [--json]
    python -m study.predict --compare A,B --shape M,N,K [--gpu GPU.json] [--arch sm_90] [--json]

A registered CUDA kernel is compiled as the SASS table compiles it and launched as its
registration says (a block per BM x BN tile of C), a tiled Triton kernel likewise (a program per
tile; an autotuned kernel at ``--config``, else at the configuration this process would
launch); a ``.cu`` file is compiled with ``nvcc -O3
-std=c++17 -arch=<arch>`` and its folder on the include path, and ``--symbol`` names a kernel in
it (its name or an unambiguous part of its mangled name) that computes C = A B in one launch of
the grid given. ``--gpu`` defaults to the committed H200 run's ``gpu.json``. One line per
prediction; ``--json`` one JSON object. ``--check DIR`` predicts every such kernel at every shape
the run directory DIR timed (and at every point of its decode panel, where it has one), with
DIR's gpu.json, and sets each beside the run's time (:mod:`study.predict.check`); ``--write``
puts those rows into DIR's ``predict_check.csv``, which the report renders. ``--compare
A,B`` sets two kernels' main loops side by side and predicts each with one cost of the model
switched off at a time (:mod:`study.predict.compare`). ``--fit DIR`` fits the model's constants
for DIR's GPU on a declared set of the kernels DIR timed at 4096³, with leave-one-kernel-out
(:mod:`study.predict.fit`). Every prediction uses the constants fitted for its GPU (by the name
in ``--gpu``'s or DIR's gpu.json), else the unfitted anchors.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pandas as pd

from study import arch as arches
from study import cli, kernels
from study.errors import InputError
from study.predict import check, model
from study.rundata.tables import T
from study.toolchain import sass, tools

DEFAULT_GPU = Path(__file__).resolve().parents[2] / "reports" / "data" / "gpu.json"


def _ints(text: str, flag: str, n: tuple[int, ...]) -> tuple[int, ...]:
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) not in n:
        raise InputError(f"{flag} {text}: expected {' or '.join(map(str, n))} comma-separated integers")
    vals = tuple(cli.positive_int(p, flag) for p in parts)
    return vals + (1,) * (3 - len(vals))


def registered(kid: str, shape, arch: str, child=None, config: dict | None = None, sms: int | None = None):
    """((the main loop, its L1 cycles), the launch, the configuration compiled) of a registered
    kernel at ``shape``; ``config`` (an autotuned kernel only) is the configuration to compile,
    e.g. the one a run tuned and timed, else the one this process would launch. A path whose
    launch splits K (``SGEMM_SPLIT_K``) is launched with the splits its rule gives on ``sms`` SMs,
    the GPU predicted for (an InputError without it)."""
    from study.toolchain import compile as tc

    try:
        k = kernels.get(kid)
    except (KeyError, InputError):
        raise InputError(f"--kernel {kid}: no such kernel") from None
    why = k.constraint_error(*shape)
    if why:
        raise InputError(f"--kernel {kid} at {'x'.join(map(str, shape))}: {why}")
    if config is not None and not k.tuned:
        raise InputError(f"--config: {kid} is not autotuned; its launch is its registration's")
    if check.tiled_triton(k):
        return triton_tiled(k, shape, arch, child, config)
    if k.precision != "fp32":
        raise InputError(f"--kernel {kid}: it multiplies on the tensor cores, and the model prices the FP32 "
                         "FMA units only")
    if not check.predictable(kid):
        raise InputError(f"--kernel {kid}: predicted so far for the CUDA kernels and the tiled Triton "
                         "kernels (use --cu for others)")
    M, N, K = shape
    path = k.path_for(M, N, K)
    reg = next(r for r in k.registrations if r.symbol == path.symbol)
    res = tc.resources_cuda(path, arch)
    grid = (math.ceil(N / reg.bn), math.ceil(M / reg.bm), 1)
    splits = None
    if reg.split is not None:  # a block per tile and split of K, in one dimension
        if sms is None:
            raise InputError(f"--kernel {kid}: {path.symbol} splits K by the GPU's SM count, which was not "
                             "given")
        splits = reg.split.count(grid[0] * grid[1], sms, K)
        grid = (grid[0] * grid[1] * splits, 1, 1)
    launch = model.Launch(grid=grid, threads=reg.threads, smem=res["smem_bytes"], registers=res["registers"],
                          compute_threads=path.compute_threads, tile=(reg.bm, reg.bn), balanced=reg.balanced)
    instrs = sass.dump_sass(tc.compile_cuda(path, arch), path.symbol)
    return (*_with_passes(instrs, model.sgemm_params(shape, splits), launch), None)


def _with_passes(instrs, params, launch):
    """((the main loop, its L1 cycles), ``launch`` with the loop's passes and the warps that run
    it, as the SASS tells them) for a kernel's ``instrs`` and arguments ``params``."""
    body, cycles, passes, _ = model.played_loop(instrs, params)
    return (body, cycles), model.with_loop_warps(replace(launch, passes=passes), instrs, body, params)


def triton_tiled(k, shape, arch: str, child=None, config: dict | None = None):
    """A tiled Triton kernel (a twin, or TA at ``config``, else at its configuration for this
    process): one program per BM x BN tile of C, compiled here as the SASS table compiles it (in
    a child process)."""
    from study.toolchain import compile as tc
    from study.toolchain.compile import CompileError
    from study.toolchain.triton_child import TritonChild

    M, N, _ = shape
    try:
        if child is not None:
            t = tc.compile_triton(k, arch, config=config, shape=shape, child=child)
        else:
            with TritonChild() as own:
                t = tc.compile_triton(k, arch, config=config, shape=shape, child=own)
    except CompileError as e:
        raise InputError(f"--kernel {k.id}: {e}") from None
    bm, bn = (t["config"]["BM"], t["config"]["BN"]) if t["config"] else k.tile[:2]
    usage = sass.resources_cubin(t["cubin"], t["name"])
    launch = model.Launch(grid=(math.ceil(M / bm) * math.ceil(N / bn), 1, 1),
                          threads=t["threads"] or k.threads, smem=int(t["smem_bytes"] or 0),
                          registers=int(usage.get("REG", 0)), tile=(bm, bn))
    params = model.cubin_params(t["arguments"]) if t.get("arguments") else None
    return (*_with_passes(sass.dump_sass(t["cubin"], t["name"]), params, launch), t["config"])


def from_file(path: Path, symbol: str, grid, block: int, smem: int, arch: str, shape=None):
    """((the loop played, its L1 cycles), the launch, None) of the kernel ``symbol`` of a ``.cu``
    file. Its arguments are not declared: the SASS's compares are played for SGEMM's usual ones
    at ``shape`` (int M, N, K, float alpha, A, B, float beta, C: :func:`model.sgemm_params`), and
    what they give is kept where the loop's passes then account for the shape's multiply-adds
    (each of the grid's threads doing the loop's FFMAs each pass, within 1%); else the main loop
    is played without them and the trip count comes from the FFMAs."""
    nvcc = tools.find_nvcc()
    if nvcc is None:
        raise InputError("--cu needs nvcc on PATH")
    sm = arches.get(arch).sm
    with tempfile.TemporaryDirectory() as d:
        cubin = Path(d) / "k.cubin"
        cmd = [nvcc, "-O3", "-std=c++17", f"-arch={sm}", "-cubin", "-I", str(path.parent), "-o", str(cubin),
               str(path)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            lines = (out.stderr or out.stdout).strip().splitlines() or ["no output"]
            first = next((ln for ln in lines if "error" in ln), lines[0])
            raise InputError(f"--cu {path}: nvcc failed: {first.strip()}")
        funcs = sass.parse_sass(tools.run_cuobjdump(str(cubin), "-sass"))
        names = [f for f in funcs if f == symbol] or [f for f in funcs if symbol in f]
        if len(names) != 1:
            held = ", ".join(funcs) or "none"
            why = "names none" if not names else f"is ambiguous ({', '.join(names)})"
            raise InputError(f"--symbol {symbol} {why} of the kernels in {path.name}: {held}")
        name = names[0]
        usage = sass.resources_cubin(cubin, name)
    static = max(0, int(usage.get("SHARED", 0)) - (1024 if sm.startswith("sm_9") else 0))
    launch = model.Launch(grid=grid, threads=block, smem=static + smem, registers=int(usage.get("REG", 0)))
    if shape is not None:
        body, cycles, passes, _ = model.played_loop(funcs[name], model.sgemm_params(shape))
        work = passes * sum(i.base == "FFMA" for i in body) * launch.blocks * block if passes else 0
        if abs(work - math.prod(shape)) <= 0.01 * math.prod(shape):
            launch = model.with_loop_warps(replace(launch, passes=passes), funcs[name], body,
                                           model.sgemm_params(shape))
            return (body, cycles), launch, None
    return model.main_loop_of(funcs[name]), launch, None


def check_dir(root: str, arch: str, as_json: bool, write: bool = False) -> int:
    """``--check DIR``: :mod:`study.predict.check` over the run directory ``root``; with ``write``,
    its rows into DIR's ``predict_check.csv`` (replaced whole), for the report."""
    from study.rundata import results
    from study.rundata.gpu import GPU
    from study.rundata.rundir import RunDir
    from study.toolchain.triton_child import TritonChild

    run = RunDir(Path(root))
    if not run.has("results.csv"):
        raise InputError(f"--check {root}: no data/results.csv there (not a run directory)")
    rows = results.read(run.file("results.csv"))
    times = check.measured_times(rows)
    if run.has("decode.csv"):
        times = pd.concat([times, check.panel_times(pd.read_csv(run.file("decode.csv")))], ignore_index=True)
    gpu = GPU.from_json(run.file("gpu.json") if run.has("gpu.json") else DEFAULT_GPU)
    emit = check.emitter(as_json)
    note = check.toolchain(rows, tools.triton_version() or None)
    if note:
        emit(note)
    with TritonChild() as child:
        def one(kid, shape, loops, config):
            loop, launch, _ = registered(kid, shape, arch, child, config, sms=gpu.sms)
            try:
                return model.predict(loop[0], launch, shape, gpu, arch, l1_cycles=loop[1], loops=loops)
            except ValueError as e:
                raise InputError(str(e)) from None

        clocks = check.sampled_clocks(pd.read_csv(run.file("clocks.csv"))) if run.has("clocks.csv") else None
        rows = check.run(times, one, emit, clocks, gpu.sm_clock_mhz)
    for row in check.summary(rows):
        emit(row)
    if write:
        path = run.file(T.predict_check)
        written(rows, note, tools.triton_version() or "").to_csv(path, index=False)
        cli.say(f"{len(rows)} predictions -> {path}; python -m study.report {root} renders them")
    return 0


def written(rows: list[dict], note: dict | None, triton_here: str) -> pd.DataFrame:
    """``--check``'s rows as ``predict_check.csv`` holds them, each with the Triton that compiled
    here and the one the run's rows name, and the commit of the code that predicted."""
    from study.rundata import results

    run_triton = " ".join(note["triton_run"]) if note else triton_here
    stamp, commit = results.timestamp(), results.git_commit()
    out = []
    for r in rows:
        M, N, K = r["shape"]
        out.append({"source": r.get("source", "run"), "kernel": r["kernel"], "M": M, "N": N, "K": K,
                    "config": json.dumps(r["config"], sort_keys=True) if r.get("config") else "",
                    "measured_ms": r["measured_ms"], "ms": r.get("ms"), "error_pct": r.get("error_pct"),
                    "issue_pct": r.get("issue_pct"), "bound": r.get("bound", ""), "note": r.get("error", ""),
                    "triton_here": triton_here, "triton_run": run_triton, "commit": commit,
                    "timestamp": stamp})
    return pd.DataFrame(out, columns=[*T.predict_check.columns])


def compare_kernels(spec: str, shape, arch: str, a, as_json: bool) -> int:
    """``--compare A,B``: :mod:`study.predict.compare` of two registered kernels at ``shape``."""
    from study.predict import compare
    from study.rundata.gpu import GPU

    names = [s.strip() for s in str(spec).split(",") if s.strip()]
    if len(names) != 2:
        raise InputError(f"--compare {spec}: give two kernel ids, e.g. K12,G12")
    gpu = GPU.from_json(cli.input_file(a.gpu, "--gpu") if a.gpu else DEFAULT_GPU)
    loaded = {}
    for n in names:
        loop, launch, _ = registered(n, shape, arch, sms=gpu.sms)
        loaded[n] = (loop, launch)
    try:
        rows = compare.compare(loaded, shape, gpu, arch)
    except ValueError as e:
        raise InputError(str(e)) from None
    for out in ([json.dumps(r, sort_keys=True) for r in rows] if as_json else compare.lines(rows)):
        print(out)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = cli.Parser(prog="python -m study.predict", description=__doc__.splitlines()[0])
    p.add_argument("--kernel", help="a registered CUDA kernel id, e.g. K12")
    p.add_argument("--cu", help="a .cu file holding the kernel")
    p.add_argument("--symbol", help="with --cu: the kernel's name, or an unambiguous part of it")
    p.add_argument("--grid", help="with --cu: X,Y[,Z] blocks")
    p.add_argument("--block", help="with --cu: threads per block")
    p.add_argument("--smem", default="0",
                   help="with --cu: dynamic shared memory per block, bytes (default 0)")
    p.add_argument("--config", metavar="JSON", help="with --kernel of an autotuned kernel (TA): the "
                   "configuration to compile, as a run's rows record it, e.g. "
                   "'{\"BM\": 256, \"BN\": 64, \"BK\": 32, \"num_warps\": 8, \"num_stages\": 3}'")
    p.add_argument("--shape", help="M,N,K")
    p.add_argument("--check", metavar="DIR", help="every kernel at every shape of the run directory DIR, "
                   "beside its measured time")
    p.add_argument("--fit", metavar="DIR", help="fit the model's constants for the GPU of the run "
                   "directory DIR, with leave-one-kernel-out")
    p.add_argument("--compare", metavar="A,B", help="two registered kernels' main loops side by side, "
                   "and what each cost of the model puts on the gap")
    p.add_argument("--gpu", help=f"GPU constants (default {DEFAULT_GPU.relative_to(DEFAULT_GPU.parents[2])})")
    p.add_argument("--arch", default="sm_90", help="SASS target (default sm_90)")
    p.add_argument("--json", action="store_true", help="one JSON object per prediction")
    p.add_argument("--write", action="store_true", help="with --check DIR: the predictions into "
                   "DIR/data/predict_check.csv, which the report renders")

    def body() -> int:
        from study.rundata.gpu import GPU

        a = p.parse_args(argv)
        arch = arches.get(a.arch).sm
        if a.fit:
            if a.kernel or a.cu or a.shape or a.check or a.compare or a.gpu or a.config:
                raise InputError("--fit DIR takes no --kernel, --cu, --shape, --check, --compare, --gpu "
                                 "or --config")
            from study.predict import fit

            return fit.run_dir(a.fit, arch, a.json, registered)
        if a.write and not a.check:
            raise InputError("--write goes with --check DIR (it writes DIR's predict_check.csv)")
        if a.check:
            if a.kernel or a.cu or a.shape or a.config:
                raise InputError("--check DIR takes no --kernel, --cu, --shape or --config (it compiles "
                                 "each autotuned kernel at the configuration the run timed)")
            return check_dir(a.check, arch, a.json, a.write)
        if not a.shape:
            raise InputError("--shape M,N,K is needed (or --check DIR)")
        shape = _ints(a.shape, "--shape", (3,))
        if a.compare:
            if a.kernel or a.cu or a.config:
                raise InputError("--compare A,B takes no --kernel, --cu or --config")
            return compare_kernels(a.compare, shape, arch, a, a.json)
        gpu = GPU.from_json(cli.input_file(a.gpu, "--gpu") if a.gpu else DEFAULT_GPU)
        if bool(a.kernel) == bool(a.cu):
            raise InputError("give --kernel ID, or --cu FILE with --symbol, --grid and --block")
        if a.config is not None and not a.kernel:
            raise InputError("--config goes with --kernel (an autotuned kernel)")
        if a.kernel:
            loop, launch, config = registered(a.kernel, shape, arch, sms=gpu.sms,
                                              config=check.config_of(a.config, "--config"))
            name = a.kernel
        else:
            given = (("--symbol", a.symbol), ("--grid", a.grid), ("--block", a.block))
            missing = [f for f, v in given if not v]
            if missing:
                raise InputError(f"--cu needs {', '.join(missing)}")
            path = cli.input_file(a.cu, "--cu")
            smem = int(a.smem) if str(a.smem).isdigit() else cli.positive_int(a.smem, "--smem")
            loop, launch, config = from_file(path, a.symbol, _ints(a.grid, "--grid", (2, 3)),
                                     cli.positive_int(a.block, "--block"), smem, arch, shape)
            name = a.symbol
        try:
            r = model.predict(loop[0], launch, shape, gpu, arch, l1_cycles=loop[1])
        except ValueError as e:
            raise InputError(f"{name}: {e}") from None
        if a.json:
            extra = {"config": config} if config else {}
            print(json.dumps({"kernel": name, "shape": list(shape), **extra, **r}, sort_keys=True))
        else:
            stalls = ", ".join(f"{k} {v:.2f}" for k, v in r["stalls"].items())
            cfg = f" (configuration {json.dumps(config, sort_keys=True)})" if config else ""
            print(f"{name}{cfg} at {'x'.join(map(str, shape))}: {r['ms']:.3f} ms, "
                  f"{r['gflops']:,.0f} GFLOP/s, issue {r['issue_pct']:.1f}%, bound: {r['bound']}; "
                  f"stalls {stalls}; not modelled: {', '.join(r['missing'])}")
        return 0

    return cli.main(body)


if __name__ == "__main__":
    sys.exit(main())
