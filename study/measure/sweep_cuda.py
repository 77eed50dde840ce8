"""A CUDA kernel's compile-time parameters searched at one shape, against cuBLAS.

``python -m study.sweep_cuda --kernel K11 --out DIR`` takes the parameters the kernel's ``.cu``
leaves overridable (``#ifndef K11_BM`` ... : block tile, thread tile, warp grid, K-tile,
stages), compiles every variant of :func:`space` with ``nvcc -cubin -DK11_BM=...`` in parallel
(``--jobs``), then one at a time loads each cubin through the CUDA driver, checks it against
float64 with a NaN-poisoned output (at the shape and at a small odd one), and times it as the
study times kernels (:func:`study.measure.bench.time_cuda`, L2 overwritten before every repetition).
cuBLAS FP32 (TF32 off) is timed before, between and after; every row carries its time as a
fraction of the nearest cuBLAS timing. A second round re-times the fastest variants for
longer, each just after a cuBLAS timing. It is to the hand-written template what
``python -m study.sweep`` is to Triton's: the evidence behind the defaults its ``.cu`` states.

Rows go to ``DIR/data/sweep_cuda.csv`` as they are measured; a variant that does not compile
(a ``static_assert`` of the file refuses it), does not launch or computes a wrong result gets a
row that says so. ``--budget-s`` stops starting new work after that many seconds.
"""

from __future__ import annotations

import concurrent.futures as cf
import ctypes
import itertools
import multiprocessing
import re
import sys
import time
from pathlib import Path

from study import arch
from study import kernels as registry
from study.cli import say
from study.errors import InputError, first_line
from study.kernels.registration import define_value, source_text, with_overrides
from study.measure.sweep import SweepBench, ranked
from study.rundata import rundir
from study.rundata.rundir import RunDir

PARAMS = ("BM", "BN", "BK", "TM", "TN", "WARPS_M", "WARPS_N", "STAGES", "COPY_STEPS", "B_VEC", "MAXNREG",
          "FMA_ORDER", "PAD", "A_KL", "COPY_ADDR", "B_RUN")
TILES = ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256))
THREAD_TILES = ((16, 8), (8, 16), (8, 8))  # TM x TN outputs per thread
WARP_GRIDS = ((4, 2), (2, 4), (2, 2), (4, 1), (1, 4), (8, 1), (1, 8))  # warps down x across
BKS = (8, 16)
STAGES = (2, 3, 4)
COPY_STEPS = (1, 2, 4)  # k-steps of a phase that issue its asynchronous copies (K12)
B_VEC = (1, 4)  # floats of B one copy moves (K12's tile)
MAXNREG = (0, 224, 232, 240, 248)  # registers a thread may use (0: what one block an SM allows)
FMA_ORDER = (0, 1, 2, 3)  # the order of a k-step's FFMAs in the source (K12's tile)
PAD = (4, 8)  # floats that pad a row of A's stage (K10, K11, K12's tile)
A_KL = (0, 2, 4, 8)  # lanes along k of A's copies, 0: BK (K12's tile)
COPY_ADDR = (0, 1)  # how a copy finds its source: its own pointer, or its base plus k (K12's tile)
B_RUN = (0, 2, 4)  # a thread's copies of B along one row, 0: as the tile's lanes fall (K12's tile)
# searched where the .cu leaves them open; those of EXPLICIT only where --only names them
OPTIONAL = {"STAGES": STAGES, "COPY_STEPS": COPY_STEPS, "B_VEC": B_VEC, "MAXNREG": MAXNREG,
            "FMA_ORDER": FMA_ORDER, "PAD": PAD, "A_KL": A_KL, "COPY_ADDR": COPY_ADDR, "B_RUN": B_RUN}
EXPLICIT = ("B_VEC", "MAXNREG", "FMA_ORDER", "PAD", "A_KL", "COPY_ADDR", "B_RUN")
THREADS = (128, 256)
CHECK_SHAPE = (67, 132, 100)  # odd M, partial tiles everywhere; N, K multiples of 4
COLUMNS = ["round", "kernel", *PARAMS, "threads", "smem", "status", "regs", "spills", "ms",
           "p20_ms", "p80_ms", "reps", "rel_err", "tflops", "cublas_ms", "pct_cublas", "M", "N",
           "K", "gpu", "commit", "timestamp"]


def prefix(kernel) -> str:
    """The prefix of the kernel's parameters: ``<ID>`` of ``#ifndef <ID>_BM`` in its ``.cu`` or a
    header it includes (a kernel that runs another's tile takes that one's: K15 K12's)."""
    text = source_text(kernel.source)
    if re.search(rf"^\s*#\s*ifndef\s+{kernel.id}_BM\b", text, re.M):
        return kernel.id
    found = re.findall(r"^\s*#\s*ifndef\s+(\w+)_BM\b", text, re.M)
    return found[0] if len(set(found)) == 1 else kernel.id


def parameters(kernel) -> list[str]:
    """The PARAMS the kernel's ``.cu`` leaves overridable (``#ifndef <prefix>_<PARAM>``)."""
    if kernel.impl != "cuda" or not kernel.source:
        raise InputError(f"{kernel.id} is not a CUDA kernel with a .cu: nothing to sweep")
    text = source_text(kernel.source)
    if not re.search(rf"\b{re.escape(kernel.symbol)}\s*\(\s*SGEMM_KERNEL_PARAMS\s*\)", text):
        raise InputError(f"{kernel.id}: its kernel {kernel.symbol} takes more than SGEMM_KERNEL_PARAMS "
                         "(the sweep launches a cubin with the 8 SGEMM arguments only)")
    pre = prefix(kernel)
    found = set(re.findall(rf"^\s*#\s*ifndef\s+{pre}_(\w+)", text, re.M))
    names = [p for p in PARAMS if p in found]
    missing = [p for p in PARAMS[:7] if p not in found]
    if missing:
        raise InputError(f"{kernel.id}: its .cu does not leave {', '.join(missing)} overridable "
                         f"(#ifndef {pre}_{missing[0]}); the sweep needs {', '.join(PARAMS[:7])}")
    return names


def default_kernel():
    """The last rung of the CUDA ladder that the sweep can search (``parameters`` accepts it)."""
    for k in reversed(registry.cuda_ladder()):
        try:
            parameters(k)
        except InputError:
            continue
        return k
    raise InputError("no rung of the CUDA ladder leaves the sweep's parameters overridable: name one "
                     "with --kernel")


def lane_map_ok(bm: int, bn: int, tm: int, tn: int, warps_m: int, warps_n: int) -> bool:
    """Whether 32 lanes of TM x TN outputs tile each warp's tile as the K10/K11 lane map needs
    (lane rows x columns = 32, at least 2 of each, a power-of-two count of lane columns)."""
    if bm % warps_m or bn % warps_n:
        return False
    wm, wn = bm // warps_m, bn // warps_n
    if wm % tm or wn % tn:
        return False
    lm, ln = wm // tm, wn // tn
    return lm * ln == 32 and lm >= 2 and ln >= 2 and ln & (ln - 1) == 0


def defines(kernel, values: dict) -> dict:
    """``-D`` overrides of ``values`` (PARAM -> int) for ``kernel``'s ``.cu``."""
    pre = prefix(kernel)
    d = {f"{pre}_{p}": v for p, v in values.items()}
    text = source_text(kernel.source)
    if re.search(rf"^\s*#\s*ifndef\s+{pre}_THREADS\b", text, re.M):  # K10 states it apart
        d[f"{pre}_THREADS"] = 32 * values["WARPS_M"] * values["WARPS_N"]
    return d


def smem_bytes(kernel, values: dict) -> int:
    """The dynamic shared memory the variant launches with: the file's ``<ID>_SMEM_BYTES``."""
    return define_value(kernel.source, f"{prefix(kernel)}_SMEM_BYTES", defines(kernel, values))


def space(kernel, smem_limit: int | None = None, only: tuple[str, ...] | None = None) -> list[dict]:
    """Variants to try (PARAM -> value), the file's defaults first; ``only``: vary just these
    parameters (the tile as one, "TILE": BM, BN, TM, TN and the warp grid), the rest at the
    file's defaults."""
    if smem_limit is None:
        smem_limit = arch.of_device().smem_per_block
    names = parameters(kernel)
    pre = prefix(kernel)
    default = {p: define_value(kernel.source, f"{pre}_{p}") for p in names}
    if only is not None:
        unknown = [p for p in only if p != "TILE" and p not in names]
        if unknown:
            raise InputError(f"--only {','.join(only)}: {kernel.id} leaves no {unknown[0]} to vary "
                             f"(it has TILE, {', '.join(names)})")
    out = [default]
    optional = [p for p in OPTIONAL if p in names]
    keep = (lambda p: p in only) if only is not None else (lambda p: p not in EXPLICIT)
    d = default
    tiles = [(t, tt, wg) for t in TILES for tt in THREAD_TILES for wg in WARP_GRIDS] if keep("TILE") else [
        ((d["BM"], d["BN"]), (d["TM"], d["TN"]), (d["WARPS_M"], d["WARPS_N"]))]
    grid = itertools.product(tiles, BKS if keep("BK") else (d["BK"],),
                             itertools.product(*(OPTIONAL[p] if keep(p) else (d[p],) for p in optional)))
    for ((bm, bn), (tm, tn), (wy, wx)), bk, extra in grid:
        if 32 * wy * wx not in THREADS or not lane_map_ok(bm, bn, tm, tn, wy, wx):
            continue
        v = dict(BM=bm, BN=bn, BK=bk, TM=tm, TN=tn, WARPS_M=wy, WARPS_N=wx, **dict(zip(optional, extra)))
        if v == default or smem_bytes(kernel, v) > smem_limit:
            continue
        out.append(v)
    return out


def _compile(kernel, values: dict, sm: str) -> tuple:
    from study.toolchain.compile import CompileError, compile_cuda, parse_ptxas

    try:
        cubin = compile_cuda(kernel, sm, defines(kernel, values))
    except CompileError as e:
        msg = str(e)
        assert_msg = re.search(r"static assertion failed with \"([^\"]+)\"", msg)
        status = f"refused: {assert_msg.group(1)}" if assert_msg else f"compile error: {msg[:160]}"
        return None, status, "", ""
    usage = parse_ptxas(cubin.with_suffix(".ptxas.txt").read_text(errors="replace"), kernel.symbol)
    return cubin, "compiled", usage["registers"], usage["spill_stores"] + usage["spill_loads"]


# --------------------------------------------------------------------------------------------
# Launching a cubin through the CUDA driver (the context is the one torch made current)
# --------------------------------------------------------------------------------------------

_SMEM_ATTR = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


class Cubin:
    """One kernel of a cubin, launched on torch's current stream with SGEMM's arguments."""

    def __init__(self, path: Path, symbol: str):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self._image = Path(path).read_bytes()
        self.mod, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self.lib.cuModuleLoadData(ctypes.byref(self.mod), self._image), "load")
        self._check(self.lib.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, symbol.encode()), symbol)

    def _check(self, code: int, what: str) -> None:
        if code:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorString(code, ctypes.byref(text))
            raise RuntimeError(f"CUDA driver, {what}: {(text.value or b'error').decode()} ({code})")

    def launcher(self, a, b, c, grid: tuple[int, int], threads: int, smem: int):
        import torch

        if smem > 48 * 1024:
            self._check(self.lib.cuFuncSetAttribute(self.fn, _SMEM_ATTR, smem), "smem attribute")
        M, K = a.shape
        N = b.shape[1]
        args = [ctypes.c_int(M), ctypes.c_int(N), ctypes.c_int(K), ctypes.c_float(1.0),
                ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()), ctypes.c_float(0.0),
                ctypes.c_void_p(c.data_ptr())]
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in args])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

        def launch(_args=args, _params=params):
            self._check(self.lib.cuLaunchKernel(self.fn, grid[0], grid[1], 1, threads, 1, 1, smem,
                                                stream, _params, None), "launch")

        return launch

    def close(self) -> None:
        if self.mod:
            self.lib.cuModuleUnload(self.mod)
            self.mod = ctypes.c_void_p()


class Sweep(SweepBench):
    def __init__(self, kernel, shape, out: Path, target_s: float):
        from study.measure import bench

        super().__init__(shape, RunDir(out).file(rundir.SWEEP_CUDA), COLUMNS, target_s, {"kernel": kernel.id})
        self.kernel = kernel
        self.small = bench.random_inputs(*CHECK_SHAPE, seed=1)
        self.small_ref = self.small[0].double() @ self.small[1].double()

    def time_cublas(self, target_s: float | None = None) -> float:
        return super().time_cublas(target_s, kernel=registry.BASELINE.id)

    def _launch(self, cubin: Cubin, reg, smem: int, a, b, c):
        """The variant's launch on these operands: a block per BM x BN tile of C."""
        grid = (-(-b.shape[1] // reg.bn), -(-a.shape[0] // reg.bm))
        return cubin.launcher(a, b, c, grid, reg.threads, smem)

    def _error(self, cubin: Cubin, reg, smem: int, a, b, ref) -> float:
        import torch

        from study.measure import bench

        c = bench.poisoned(a.shape[0], b.shape[1])
        self._launch(cubin, reg, smem, a, b, c)()
        torch.cuda.synchronize()
        return bench.relative_error(c, ref)

    def measure(self, rnd: str, values: dict, compiled: tuple, target_s: float | None = None) -> dict:
        from study.measure import bench
        from study.rundata.results import timestamp

        path, status, regs, spills = compiled
        k = self.kernel
        reg = with_overrides(k.source, defines(k, values))
        smem = smem_bytes(k, values)
        row = {**self.common, "round": rnd, **values, "threads": reg.threads, "smem": smem,
               "status": status, "regs": regs, "spills": spills, "timestamp": timestamp()}
        if status != "compiled":
            self.file.append(row)
            return row
        cubin = None
        try:
            cubin = Cubin(path, reg.symbol)
            err = max(self._error(cubin, reg, smem, *self.small, self.small_ref),
                      self._error(cubin, reg, smem, self.a, self.b, self.ref))
            row["rel_err"] = err
            if not err <= bench.TOLERANCE:
                row["status"] = "wrong result"
            else:
                self.timed(row, self._launch(cubin, reg, smem, self.a, self.b, self.c), target_s)
        except Exception as e:  # a variant that fails to load or launch is a row, not the end
            row["status"] = f"launch error: {first_line(e)[:160]}"
        finally:
            if cubin is not None:
                cubin.close()
        self.file.append(row)
        return row


def run(kernel, shape, out: Path, jobs: int, budget_s: float, target_s: float, top: int,
        only: tuple[str, ...] | None = None) -> int:
    t0 = time.monotonic()
    deadline = t0 + budget_s
    sm = arch.of_device().sm
    variants = space(kernel, only=only)
    say(f"{kernel.id}: {len(variants)} variants of {', '.join(parameters(kernel))} at {shape}")
    compiled: dict[int, tuple] = {}
    with cf.ThreadPoolExecutor(max_workers=jobs) as pool:  # nvcc runs in its own processes
        futures = {pool.submit(_compile, kernel, v, sm): i for i, v in enumerate(variants)}
        for f in cf.as_completed(futures):
            compiled[futures[f]] = f.result()
    say(f"compiled in {time.monotonic() - t0:.0f} s "
        f"({sum(c[1] == 'compiled' for c in compiled.values())} of {len(variants)} build)")
    sw = Sweep(kernel, shape, out, target_s)
    sw.time_cublas()
    rows = []
    for i, v in enumerate(variants):
        if time.monotonic() > deadline:
            say("budget spent: round 1 cut short")
            break
        rows.append(sw.measure("1", v, compiled[i]))
        if (i + 1) % 10 == 0:
            sw.time_cublas()
            best = ranked(rows)[:1]
            say(f"measured {i + 1}/{len(variants)}, best "
                + (f"{best[0]['pct_cublas']:.1f}% of cuBLAS" if best else "none ok"))
    for r in ranked(rows)[:top]:
        if time.monotonic() > deadline:
            break
        values = {p: r[p] for p in parameters(kernel)}
        sw.time_cublas(target_s=4 * target_s)
        sw.measure("2", values, compiled[variants.index(values)], target_s=4 * target_s)
    sw.time_cublas()
    say(f"sweep done in {time.monotonic() - t0:.0f} s: {RunDir(out).file(rundir.SWEEP_CUDA)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from study import cli

    p = cli.Parser(prog="python -m study.sweep_cuda", description=__doc__.split("\n\n")[0])
    p.add_argument("--kernel", default=None, help="the CUDA kernel whose parameters are searched "
                   "(default: the last rung of the ladder the sweep can launch)")
    p.add_argument("--shape", default="4096,4096,4096", help="M,N,K (default 4096,4096,4096)")
    p.add_argument("--out", help="run directory (its data/sweep_cuda.csv; required)")
    p.add_argument("--jobs", type=int, default=max(1, multiprocessing.cpu_count() or 1),
                   help="parallel nvcc processes")
    p.add_argument("--budget-s", type=float, default=300.0, help="start no new work after this many seconds")
    p.add_argument("--target-s", type=float, default=0.1, help="timed seconds per variant")
    p.add_argument("--top", type=int, default=6, help="fastest variants re-timed in round 2")
    p.add_argument("--only", help="vary just these parameters, comma-separated (TILE for the block "
                   "and thread tiles and the warp grid; " + ", ".join(EXPLICIT) + " are varied only "
                   "when named)")

    def body() -> int:
        args = p.parse_args(argv)
        if args.out is None:
            raise InputError("--out DIR is required: the run directory whose data/sweep_cuda.csv the rows "
                             "go into")
        kernel = registry.get(args.kernel) if args.kernel else default_kernel()
        parameters(kernel)
        shape = cli.parse_shape(args.shape)
        err = kernel.constraint_error(*shape)
        if err:
            raise InputError(err)
        cli.check_sweep_flags(args)
        out = cli.sweep_dir(args.out)
        only = tuple(p.strip() for p in args.only.split(",") if p.strip()) if args.only else None
        if only is not None:
            space(kernel, smem_limit=1 << 30, only=only)  # names it cannot vary: refused before any work
        return run(kernel, shape, out, args.jobs, args.budget_s, args.target_s, args.top, only)

    return cli.main(body)


if __name__ == "__main__":
    sys.exit(main())
