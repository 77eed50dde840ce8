"""SASS: compile each kernel for a named arch (no GPU needed), dump it, count what the compiler wrote.

compile (nvcc -cubin / Triton ahead of time) -> cubin -> ``cuobjdump -sass`` -> instructions ->
opcode histogram for the whole kernel and for its main loop -> loads per FFMA, the instruction
ledger as the compiler actually wrote it (STUDY.md §3, E5).

Conventions, fixed here once:

* ``total`` counts every instruction of the kernel except ``NOP`` (the alignment padding after
  the final ``EXIT``/``BRA`` self-loop); ``EXIT`` and that trailing ``BRA`` are counted.
* Widths: ``LDS``/``LDG`` with a ``.64``, ``.128`` or ``.256`` modifier are 64/128/256-bit loads
  (``LDG.E.ENL2.256`` is the 256-bit global load of newer archs); every other ``LDS``/``LDG``
  (no width, or a sub-word ``.U8``/``.S16``...) falls in the 32 bucket. Only a modifier that
  is exactly ``64``/``128``/``256`` is a width: ``.LTC128B`` is an L2 prefetch hint, and
  ``.U``/``.E``/``.ENL2``/``.CONSTANT``/``.EF``... say nothing about width.
* The main loop is the range [target, branch] of a backward ``BRA`` (to an earlier address of the
  same function; the trailing ``BRA`` to itself is not a loop) holding the most ``FFMA``; ties go to
  the shortest range. For the tiled kernels that is the phase loop with the k loop fully unrolled
  inside, for K1/K2 the (unrolled) k loop.
* Spills: ``spills`` is the local memory a kernel reserves, in bytes per thread: STACK + LOCAL of
  ``cuobjdump -res-usage`` on its cubin, read the same way for CUDA and Triton kernels. ptxas
  puts register spill slots in the stack frame (Triton's T5p under Triton 3.9: STACK 24); a
  local array indexed at run time would also live there, and none of the project's kernels
  has one. The instructions that move data to and from local memory are counted as ``LDL``
  and ``STL`` (``loop_LDL``/``loop_STL`` in the main loop): for these kernels spills > 0 exactly
  when LDL/STL occur, and the loop counts say whether the spill traffic is in the hot loop.
  (ptxas ``-v``'s "bytes spill stores/loads" add up the widths of the spill instructions it
  wrote, not the memory reserved, and a Triton compile leaves no ptxas log to read, so the
  table does not use them.)
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from study.errors import InputError
from triton_kernels.aot import find_cuobjdump, resource_usage, run_cuobjdump  # imports no triton

REPO = Path(__file__).resolve().parent.parent
NVCC_FLAGS = ("-cubin", "-O3", "-Xptxas", "-v")


class SassUnavailable(RuntimeError):
    """A tool the SASS step needs is missing; ``str(e)`` is a one-line skip message."""


class CompileError(RuntimeError):
    """One kernel failed to compile or to dump; the table records it and carries on."""


# ---------------------------------------------------------------------------------------------
# tools


def find_nvcc() -> str | None:
    """nvcc from PATH, else $CUDA_HOME/bin/nvcc; None when there is none."""
    hit = shutil.which("nvcc")
    if hit:
        return hit
    for env in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(env)
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    return None


def _require_cuobjdump() -> str:
    """``find_cuobjdump`` (triton_kernels.aot: $TRITON_CUOBJDUMP_PATH, PATH, the triton wheel,
    $CUDA_HOME), or SassUnavailable."""
    tool = find_cuobjdump()
    if tool is None:
        raise SassUnavailable("SASS skipped: no cuobjdump ($TRITON_CUOBJDUMP_PATH, PATH, "
                              "the triton wheel, $CUDA_HOME)")
    return tool


def _require_nvcc() -> str:
    tool = find_nvcc()
    if tool is None:
        raise SassUnavailable("SASS skipped: no nvcc on PATH")
    return tool


@functools.cache
def _nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout.strip()


def nvcc_version() -> str:
    """The version of the nvcc ``find_nvcc`` picks, e.g. "13.0.88"; "" when there is none."""
    nvcc = find_nvcc()
    if nvcc is None:
        return ""
    try:
        text = _nvcc_version(nvcc)
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"\bV(\d+(?:\.\d+)+)", text) or re.search(r"release (\d+(?:\.\d+)+)", text)
    return m.group(1) if m else (text.splitlines()[-1] if text else "")


def triton_version() -> str:
    """``triton.__version__`` of the triton this process compiles with; "" when there is none."""
    mod = sys.modules.get("triton")
    if mod is not None and getattr(mod, "__version__", None):
        return str(mod.__version__)
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("triton")
    except (ImportError, PackageNotFoundError):
        return ""


def _arch(arch: str | int) -> str:
    """'sm_90', 'sm_90a', '90', 90, '9.0' -> 'sm_90' / 'sm_90a'."""
    s = str(arch).strip().lower()
    m = re.fullmatch(r"(?:sm_?|compute_?)?(\d+)\.?(\d*)([a-z]?)", s)
    if not m:
        raise InputError(f"arch {arch!r} is not an sm_XX name (e.g. sm_90)")
    major, minor, suffix = m.groups()
    digits = major + minor if minor else major
    if len(digits) == 1:
        digits += "0"
    return f"sm_{digits}{suffix}"


def _cc(arch: str | int) -> int:
    """'sm_90a' -> 90."""
    return int(re.sub(r"\D", "", _arch(arch)))


# ---------------------------------------------------------------------------------------------
# cache


def cache_dir() -> Path:
    """$SGEMM_SASS_CACHE, else ~/.cache/sgemm-ledgers/sass (never inside the repository)."""
    env = os.environ.get("SGEMM_SASS_CACHE")
    path = Path(env).expanduser() if env else Path.home() / ".cache" / "sgemm-ledgers" / "sass"
    path.mkdir(parents=True, exist_ok=True)
    return path


_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def _source_closure(src: Path) -> list[Path]:
    """The source and every local ``#include "..."`` it pulls in, recursively."""
    seen: list[Path] = []
    todo = [src.resolve()]
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.append(path)
        for name in _INCLUDE.findall(path.read_text(errors="replace")):
            todo.append((path.parent / name).resolve())
    return seen


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# CUDA


def _source_path(kernel) -> Path:
    if not kernel.source:
        raise CompileError(f"{kernel.id} has no source file in the registry")
    path = REPO / kernel.source
    if not path.is_file():
        raise CompileError(f"{kernel.id}: source {kernel.source} not found")
    return path


def compile_cuda(kernel, arch: str = "sm_90") -> Path:
    """The kernel's .cu compiled with ``nvcc -cubin -O3 -arch=<arch>``; the cached cubin's path.

    Cached by the hash of the source (with its local includes), the arch, the nvcc version and
    the flags; the ptxas ``-v`` report is kept beside the cubin (``.ptxas.txt``).
    """
    nvcc = _require_nvcc()
    arch = _arch(arch)
    src = _source_path(kernel)
    h = hashlib.sha256()
    for part in (arch, _nvcc_version(nvcc), " ".join(NVCC_FLAGS)):
        h.update(part.encode() + b"\0")
    for path in _source_closure(src):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    stem = f"{src.stem}-{arch}-{h.hexdigest()[:20]}"
    cubin = cache_dir() / f"{stem}.cubin"
    log = cubin.with_suffix(".ptxas.txt")
    if cubin.is_file() and log.is_file():
        return cubin
    tmp = cubin.with_name(f".{stem}.{os.getpid()}.cubin")
    cmd = [nvcc, *NVCC_FLAGS, f"-arch={arch}", "-I", str(src.parent), "-o", str(tmp), str(src)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired as e:
        raise CompileError(f"{kernel.id}: nvcc timed out after {e.timeout:.0f} s") from None
    if out.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        msg = (out.stderr or out.stdout).strip().splitlines()
        first = next((ln for ln in msg if "error" in ln), msg[0] if msg else "no output")
        raise CompileError(f"{kernel.id}: nvcc failed ({out.returncode}): {first.strip()}")
    _write_atomic(log, (out.stdout + out.stderr).encode())
    os.replace(tmp, cubin)
    return cubin


_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'")


def parse_ptxas(log: str, symbol: str | None = None) -> dict:
    """Registers, static smem, stack and spill bytes for ``symbol`` from ``ptxas -v`` output.

    With ``symbol=None`` the first entry function is read. Missing fields are 0 (ptxas leaves
    ``smem`` out when a kernel has none); a log without the function raises ``CompileError``.
    """
    blocks = _PTXAS_ENTRY.split(log)  # [pre, name1, body1, name2, body2, ...]
    found = {name: body for name, body in zip(blocks[1::2], blocks[2::2], strict=False)}
    if symbol is None and found:
        symbol = next(iter(found))
    body = found.get(symbol)
    regs = re.search(r"Used (\d+) registers", body or "")
    if body is None or regs is None:
        raise CompileError(f"ptxas report has no register count for {symbol!r}")

    def grab(pattern: str) -> int:
        m = re.search(pattern, body)
        return int(m.group(1)) if m else 0

    return {
        "registers": int(regs.group(1)),
        "smem_bytes": grab(r"(\d+) bytes smem"),
        "stack_bytes": grab(r"(\d+) bytes stack frame"),
        "spill_stores": grab(r"(\d+) bytes spill stores"),
        "spill_loads": grab(r"(\d+) bytes spill loads"),
    }


def resources_cuda(kernel, arch: str = "sm_90") -> dict:
    """``parse_ptxas`` of the kernel's compile: registers, smem_bytes (static, without the 1 KB
    reservation), stack/spill bytes as ptxas reports them."""
    cubin = compile_cuda(kernel, arch)
    log = cubin.with_suffix(".ptxas.txt").read_text(errors="replace")
    return parse_ptxas(log, kernel.symbol)


def resources_cubin(cubin: Path | str, symbol: str | None = None) -> dict:
    """``cuobjdump -res-usage`` for one function (``triton_kernels.aot.resource_usage``): REG,
    STACK, SHARED, LOCAL, ... as read; ``symbol`` None reads the only function.

    Note: for sm_90 cubins SHARED includes the 1 KB the driver reserves per block (ptxas says
    8192 B smem, cuobjdump says SHARED:9216), unlike sm_80 cubins; Triton's dynamic shared
    memory is not in it. ``theoretical_occupancy`` wants the ptxas / Triton figure (it adds
    the reservation itself).
    """
    _require_cuobjdump()
    try:
        funcs = resource_usage(Path(cubin))
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        raise CompileError(str(e)) from None
    if symbol is None and len(funcs) == 1:
        symbol = next(iter(funcs))
    if symbol not in funcs:
        raise CompileError(f"{symbol!r} not in {Path(cubin).name}; it holds {', '.join(funcs) or 'none'}")
    return funcs[symbol]


def spill_bytes(usage: dict) -> int:
    """Local memory per thread, in bytes: STACK + LOCAL of a ``resources_cubin`` record (the
    module docstring says why this is the spill figure)."""
    return int(usage.get("STACK", 0)) + int(usage.get("LOCAL", 0))


# ---------------------------------------------------------------------------------------------
# Triton


CONFIG_KEYS = ("BM", "BN", "BK", "GROUP_M", "num_warps", "num_stages")


def compile_triton(kernel, arch: str = "sm_90", config: dict | None = None) -> dict:
    """Ahead-of-time compile of a Triton kernel for ``arch`` (no GPU needed).

    Goes through ``triton_kernels.aot`` with the registry entry (its module's ``aot_spec`` at
    the registry's ``num_stages``, the 4096^3 representative launch). ``config`` (autotuned
    kernels only; keys ``CONFIG_KEYS``) picks the configuration to compile; without it TA takes
    the winner its autotuner holds in this process for 4096^3, else its module's
    ``DEFAULT_CONFIG``. Returns ``{"cubin": Path, "name", "smem_bytes", "threads",
    "num_stages", "config"}`` with the cubin written to the cache directory; ``config`` is the
    configuration actually compiled (a dict with ``CONFIG_KEYS``) for an autotuned kernel,
    None for the others.

    Compiles are remembered per (kernel id, arch, resolved launch): the configuration and
    every argument value the compile specialises on, so a different config, or a tuning
    result that arrives later, compiles anew.
    """
    aot = _triton_aot(kernel)
    arch = _arch(arch)
    try:
        spec = aot.resolve_spec(kernel, config=dict(config) if config else None)
    except Exception as e:
        why = f"{type(e).__name__}: {e}"
        raise CompileError(f"{kernel.id}: no AOT launch for config {config}: {why}") from None
    used = None
    if kernel.tuned:
        used = {k: spec.args[k] for k in ("BM", "BN", "BK", "GROUP_M") if k in spec.args}
        used.update(num_warps=spec.num_warps, num_stages=spec.num_stages)
    key = (kernel.id, arch, spec.num_warps, spec.num_stages, tuple(sorted(spec.args.items())),
           tuple(sorted(spec.extra_options.items())))
    hit = _TRITON_COMPILED.get(key)
    if hit is None:
        hit = _TRITON_COMPILED[key] = _compile_triton(aot, kernel, arch, spec)
    return {**hit, "config": dict(used) if used else None}


_TRITON_COMPILED: dict[tuple, dict] = {}


def _triton_aot(kernel):
    import importlib

    try:
        return importlib.import_module("triton_kernels.aot")
    except Exception as e:  # triton missing or broken
        why = f"{type(e).__name__}: {e}"
        raise CompileError(f"{kernel.id}: cannot import triton_kernels.aot: {why}") from None


def _compile_triton(aot, kernel, arch: str, spec) -> dict:
    try:
        res = aot.compile_sass_target(spec, arch=_cc(arch))
    except Exception as e:
        msg = str(e).strip().splitlines()
        raise CompileError(f"{kernel.id}: Triton AOT compile failed: {type(e).__name__}: "
                           f"{msg[0] if msg else ''}") from None
    if not res.cubin:
        raise CompileError(f"{kernel.id}: Triton AOT returned no cubin")
    digest = hashlib.sha256(res.cubin).hexdigest()[:20]
    path = cache_dir() / f"triton-{kernel.id}-{arch}-{digest}.cubin"
    if not path.is_file():
        _write_atomic(path, bytes(res.cubin))
    return {
        "cubin": path,
        "name": res.name,
        "smem_bytes": res.shared,
        "threads": 32 * res.num_warps,
        "num_stages": res.num_stages,
    }


# ---------------------------------------------------------------------------------------------
# SASS parsing


@dataclass(frozen=True)
class Instr:
    """One SASS instruction: address, guard predicate, opcode with modifiers, operands."""

    addr: int
    opcode: str  # e.g. "LDG.E.128.CONSTANT"
    operands: str = ""
    pred: str = ""  # e.g. "@!P0"

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]

    @property
    def mods(self) -> tuple[str, ...]:
        return tuple(self.opcode.split(".")[1:])

    @property
    def width(self) -> int:
        """Access width in bits for loads/stores: 64, 128 or 256 when named, else 32."""
        for m in self.mods:
            if m in ("64", "128", "256"):
                return int(m)
        return 32

    def __str__(self) -> str:
        pred = f"{self.pred} " if self.pred else ""
        return f"/*{self.addr:04x}*/ {pred}{self.opcode} {self.operands}".rstrip()


_LINE = re.compile(
    r"^\s*/\*(?P<addr>[0-9a-fA-F]+)\*/\s+(?:(?P<pred>@!?U?P[T0-9]+)\s+)?"
    r"(?P<op>[A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*(?P<args>[^;]*?)\s*;"
)
_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")


def parse_sass(text: str) -> dict[str, list[Instr]]:
    """``cuobjdump -sass`` text -> {function name: instructions in address order}.

    Text that has instruction lines but no ``Function :`` header lands under ``""``.
    """
    funcs: dict[str, list[Instr]] = {}
    current: list[Instr] | None = None
    for line in text.splitlines():
        f = _FUNC.match(line)
        if f:
            current = funcs.setdefault(f.group(1), [])
            continue
        m = _LINE.match(line)
        if m:
            if current is None:
                current = funcs.setdefault("", [])
            current.append(Instr(int(m["addr"], 16), m["op"], m["args"], m["pred"] or ""))
    return funcs


@functools.lru_cache(maxsize=64)
def _sass_text(cubin: str, mtime: float) -> str:
    return _cuobjdump("-sass", cubin)


def _cuobjdump(flag: str, cubin: str) -> str:
    """``triton_kernels.aot.run_cuobjdump`` (every cuobjdump found, in search order, until one
    reads the cubin); its failures become CompileError."""
    _require_cuobjdump()
    try:
        return run_cuobjdump(cubin, flag)
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        raise CompileError(str(e)) from None


def dump_sass(cubin: Path | str, symbol: str | None = None) -> list[Instr]:
    """The instructions of function ``symbol`` in ``cubin`` (the only function when None)."""
    path = Path(cubin)
    funcs = parse_sass(_sass_text(str(path), path.stat().st_mtime))
    if symbol is None and len(funcs) == 1:
        return next(iter(funcs.values()))
    if symbol not in funcs:
        raise CompileError(f"{symbol!r} not in {path.name}; it holds {', '.join(funcs) or 'no code'}")
    return funcs[symbol]


# ---------------------------------------------------------------------------------------------
# histograms and loops

HIST_KEYS = (
    "FFMA", "LDS32", "LDS64", "LDS128", "LDS", "LDG32", "LDG64", "LDG128", "LDG256", "LDG",
    "LDGSTS", "STS", "STG", "BAR", "HMMA", "HGMMA", "LDSM", "STSM", "LDL", "STL", "total",
)


def histogram(instrs: Iterable[Instr]) -> dict[str, int]:
    """Opcode counts (see the module docstring for widths and what ``total`` holds).

    ``LDS``/``LDG`` are the sums over widths; ``LDGSTS`` (cp.async), ``STS``, ``LDSM``/``STSM``
    (ldmatrix/stmatrix, which Triton uses to move FP32 tiles too) any width; ``BAR`` every
    barrier flavour; ``LDL``/``STL`` local-memory loads and stores (spills). A width with no key
    of its own (``LDS.256``) gets one in the returned dict.
    """
    h = dict.fromkeys(HIST_KEYS, 0)
    for ins in instrs:
        base = ins.base
        if base == "NOP":
            continue
        h["total"] += 1
        if base in ("LDS", "LDG"):
            key = f"{base}{ins.width}"
            h[key] = h.get(key, 0) + 1
            h[base] += 1
        elif base in h:
            h[base] += 1
    return h


def _branch_target(ins: Instr) -> int | None:
    if ins.base not in ("BRA", "JMP"):
        return None
    hexes = re.findall(r"0x([0-9a-fA-F]+)", ins.operands)
    return int(hexes[-1], 16) if hexes else None


def find_loops(instrs: Sequence[Instr]) -> list[tuple[int, int]]:
    """Loops as (start, end) instruction indices, inclusive: one per backward-branch target.

    A backward branch jumps to an earlier address of the same function; the trailing
    ``BRA`` to itself (the end-of-kernel trap) is not a loop. Several back edges to one
    header make one loop reaching to the last of them.
    """
    index = {ins.addr: i for i, ins in enumerate(instrs)}
    loops: dict[int, int] = {}
    for i, ins in enumerate(instrs):
        target = _branch_target(ins)
        if target is None or target >= ins.addr or target not in index:
            continue
        start = index[target]
        loops[start] = max(loops.get(start, i), i)
    return sorted(loops.items())


def main_loop(instrs: Sequence[Instr]) -> list[Instr]:
    """The body of the loop with the most FFMA (ties: the shortest); [] when there is no loop."""
    best: tuple[int, int] | None = None
    best_key = None
    for start, end in find_loops(instrs):
        ffma = sum(1 for ins in instrs[start : end + 1] if ins.base == "FFMA")
        key = (ffma, -(end - start))
        if best_key is None or key > best_key:
            best, best_key = (start, end), key
    return list(instrs[best[0] : best[1] + 1]) if best else []


def loop_histogram(instrs: Sequence[Instr]) -> dict[str, float]:
    """``histogram`` of the main loop with a ``loop_`` prefix, plus load instructions per FFMA.

    ``loop_lds_per_ffma`` = (LDS of any width + LDSM) / FFMA: every shared-load instruction.
    ``loop_ldg_per_ffma`` = (LDG of any width + LDGSTS) / FFMA: every global-load instruction,
    synchronous or asynchronous (Triton's pipelined loops load with LDGSTS only). The CUDA
    kernels use neither LDSM nor LDGSTS, so for them these are plain LDS / FFMA and LDG / FFMA.
    NaN when there is no loop with FFMA.
    """
    h = histogram(main_loop(instrs))
    out: dict[str, float] = {f"loop_{k}": v for k, v in h.items()}
    ffma = h["FFMA"]
    out["loop_lds_per_ffma"] = (h["LDS"] + h["LDSM"]) / ffma if ffma else math.nan
    out["loop_ldg_per_ffma"] = (h["LDG"] + h["LDGSTS"]) / ffma if ffma else math.nan
    return out


# ---------------------------------------------------------------------------------------------
# occupancy


@dataclass(frozen=True)
class SMLimits:
    max_warps: int  # resident warps per SM
    max_blocks: int  # resident blocks per SM
    smem_per_sm: int  # bytes, largest carveout
    smem_per_block: int  # bytes a block may opt in to (reservation excluded)
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    max_regs_per_thread: int = 255
    reg_granularity: int = 256  # registers, allocated per warp
    sub_partitions: int = 4  # the register file is split across the SM's 4 schedulers
    smem_granularity: int = 128  # bytes
    smem_reserved: int = 1024  # per block, taken by the driver (sm_80 and later)
    max_threads_per_block: int = 1024


_KB = 1024
SM_LIMITS: dict[int, SMLimits] = {
    80: SMLimits(max_warps=64, max_blocks=32, smem_per_sm=164 * _KB, smem_per_block=163 * _KB),
    86: SMLimits(max_warps=48, max_blocks=16, smem_per_sm=100 * _KB, smem_per_block=99 * _KB),
    89: SMLimits(max_warps=48, max_blocks=24, smem_per_sm=100 * _KB, smem_per_block=99 * _KB),
    90: SMLimits(max_warps=64, max_blocks=32, smem_per_sm=228 * _KB, smem_per_block=227 * _KB),
}


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy_limits(regs: int, smem_per_block: int, threads: int, arch: str | int = "sm_90") -> dict:
    """Resident blocks per SM allowed by each resource, following CUDA's occupancy calculator.

    ``smem_per_block`` is the kernel's own shared memory (static + dynamic, as ptxas / Triton
    report it); the per-block reservation is added here. The largest shared-memory carveout is
    assumed (the driver picks it when the kernel needs it).
    """
    cc = _cc(arch)
    lim = SM_LIMITS.get(cc)
    if lim is None:
        known = ", ".join(f"sm_{c}" for c in SM_LIMITS)
        raise InputError(f"no occupancy table for sm_{cc}; known: {known}")
    if threads < 1 or regs < 0 or smem_per_block < 0:
        raise InputError(
            f"occupancy needs threads >= 1, regs >= 0, smem >= 0; got {threads}, {regs}, {smem_per_block}"
        )
    warps = -(-threads // 32)
    if threads > lim.max_threads_per_block:
        by_warps = 0
    else:
        by_warps = lim.max_warps // warps
    reg_warp = _round_up(regs * 32, lim.reg_granularity)
    if regs > lim.max_regs_per_thread or reg_warp * _round_up(warps, lim.sub_partitions) > lim.regs_per_block:
        by_regs = 0
    elif reg_warp == 0:
        by_regs = lim.max_blocks
    else:
        per_sub = (lim.regs_per_sm // lim.sub_partitions) // reg_warp
        by_regs = per_sub * lim.sub_partitions // warps
    smem = _round_up(smem_per_block + lim.smem_reserved, lim.smem_granularity)
    if smem_per_block > lim.smem_per_block:
        by_smem = 0
    else:
        by_smem = lim.smem_per_sm // smem if smem else lim.max_blocks
    blocks = min(by_warps, by_regs, by_smem, lim.max_blocks)
    limiter = [n for n, v in (("warps", by_warps), ("registers", by_regs), ("shared memory", by_smem),
                              ("blocks", lim.max_blocks)) if v == blocks]
    return {
        "blocks": blocks, "warps_per_block": warps, "warps": blocks * warps, "max_warps": lim.max_warps,
        "by_warps": by_warps, "by_registers": by_regs, "by_smem": by_smem, "by_blocks": lim.max_blocks,
        "limited_by": ", ".join(limiter),
        "occupancy_pct": 100.0 * blocks * warps / lim.max_warps,
    }


def theoretical_occupancy(regs: int, smem_per_block: int, threads: int, arch: str | int = "sm_90") -> float:
    """Theoretical occupancy in percent (resident warps ÷ max warps per SM)."""
    return occupancy_limits(regs, smem_per_block, threads, arch)["occupancy_pct"]


# ---------------------------------------------------------------------------------------------
# the table

TABLE_COLUMNS = [
    "kernel", "impl", "arch", "symbol",
    "FFMA", "LDS32", "LDS64", "LDS128", "LDS", "LDSM", "LDG32", "LDG64", "LDG128", "LDG256", "LDG",
    "LDGSTS", "STS", "STSM", "BAR", "HMMA", "HGMMA", "LDL", "STL", "total",
    "loop_FFMA", "loop_LDS32", "loop_LDS64", "loop_LDS128", "loop_LDS", "loop_LDSM", "loop_LDG32",
    "loop_LDG64", "loop_LDG128", "loop_LDG256", "loop_LDG", "loop_LDGSTS", "loop_STS", "loop_STSM",
    "loop_BAR", "loop_LDL", "loop_STL", "loop_total",
    "loop_lds_per_ffma", "loop_ldg_per_ffma",
    "registers", "smem_bytes", "spills", "threads", "num_stages", "config",
    "occupancy_pct", "occupancy_limited_by", "nvcc", "triton", "error",
]
_TEXT_COLUMNS = ("symbol", "config", "occupancy_limited_by", "nvcc", "triton", "error")


def _as_kernels(kernels) -> list:
    from study import kernels as registry

    if kernels is None:
        return list(registry.KERNELS)
    if isinstance(kernels, str):
        return [registry.get(s.strip()) for s in kernels.split(",") if s.strip()]
    return [registry.get(k) if isinstance(k, str) else k for k in kernels]


def _check_tools(kernels: list) -> None:
    """Raise SassUnavailable (a ready skip message) when a needed tool is missing."""
    if any(k.impl in ("cuda", "triton") for k in kernels):
        _require_cuobjdump()
    if any(k.impl == "cuda" for k in kernels):
        _require_nvcc()


def kernel_sass(kernel, arch: str = "sm_90", config: dict | None = None) -> dict:
    """One table row for one CUDA or Triton kernel (raises CompileError on failure).

    ``config``: the configuration to compile an autotuned Triton kernel with (see
    ``compile_triton``); the row's ``config`` holds the one compiled, as JSON text.
    """
    arch = _arch(arch)
    row: dict = {"kernel": kernel.id, "impl": kernel.impl, "arch": arch}
    if config is not None and not (kernel.impl == "triton" and kernel.tuned):
        raise InputError(f"{kernel.id} is not an autotuned kernel: it takes no config (got {config})")
    if kernel.impl == "cuda":
        cubin = compile_cuda(kernel, arch)
        symbol = kernel.symbol
        ptxas = resources_cuda(kernel, arch)
        registers, smem, threads = ptxas["registers"], ptxas["smem_bytes"], kernel.threads
    elif kernel.impl == "triton":
        t = compile_triton(kernel, arch, config)
        cubin, symbol, smem = t["cubin"], t["name"], t["smem_bytes"]
        registers = None  # from the cubin below
        threads = t["threads"] or kernel.threads
        row["num_stages"] = t["num_stages"]
        row["config"] = json.dumps(t["config"], sort_keys=True) if t["config"] else ""
    else:
        raise CompileError(f"{kernel.id}: no SASS for impl {kernel.impl!r}")
    usage = resources_cubin(cubin, symbol)
    if registers is None:
        registers = usage.get("REG")
    instrs = dump_sass(cubin, symbol)
    row["symbol"] = symbol
    row.update(histogram(instrs))
    row.update(loop_histogram(instrs))
    row.update(registers=registers, smem_bytes=smem, spills=spill_bytes(usage), threads=threads)
    try:
        occ = occupancy_limits(int(registers), int(smem or 0), int(threads), arch)
        row["occupancy_pct"], row["occupancy_limited_by"] = occ["occupancy_pct"], occ["limited_by"]
    except (InputError, TypeError, ValueError):
        row["occupancy_pct"], row["occupancy_limited_by"] = math.nan, ""
    row["error"] = ""
    return row


def sass_table(kernels=None, arch: str = "sm_90", configs: dict[str, dict] | None = None):
    """One row per CUDA and Triton kernel (cuBLAS skipped): histograms, main-loop ratios, resources.

    ``kernels``: Kernel objects, ids, a "K3,K6" spec, or None for the whole registry.
    ``configs``: kernel id -> the configuration an autotuned kernel was measured with (the
    autotuner's dict: BM, BN, BK, GROUP_M, num_warps, num_stages, e.g. the ``config`` JSON of
    its results.csv row), passed to ``compile_triton`` so that the SASS row describes the
    measured kernel. An autotuned kernel without an entry is compiled with the winner this
    process tuned for 4096^3, else its module's default configuration -- which need not be what
    a run measured. Ids of kernels not in ``kernels`` are ignored; an entry for a kernel that is
    not autotuned is an InputError.
    Raises ``SassUnavailable`` (message: "SASS skipped: ...") when nvcc/cuobjdump are missing;
    a kernel that fails to compile gets a row with ``error`` set and the rest carry on.

    Resources: ``registers`` per thread; ``smem_bytes`` the kernel's own shared memory per block
    (CUDA: static, from ptxas; Triton: its dynamic allocation), without the 1 KB the driver
    reserves; ``spills`` local memory in bytes per thread, STACK + LOCAL of ``cuobjdump
    -res-usage`` for CUDA and Triton alike, 0 meaning none (with ``LDL``/``STL`` and
    ``loop_LDL``/``loop_STL`` the local-memory instructions; see the module docstring);
    ``occupancy_pct`` from ``occupancy_limits``. Provenance: ``config`` the compiled
    configuration of an autotuned kernel (JSON text, "" for the others); ``nvcc`` and
    ``triton`` the versions of the toolchain present (the same on every row, "" when absent):
    nvcc compiles the CUDA rows, Triton (with the ptxas it bundles) the Triton rows.
    """
    import pandas as pd

    arch = _arch(arch)
    picked = [k for k in _as_kernels(kernels) if k.impl in ("cuda", "triton")]
    configs = dict(configs or {})
    for k in picked:
        if k.id in configs and not (k.impl == "triton" and k.tuned):
            raise InputError(f"configs names {k.id}, which is not an autotuned kernel")
    _check_tools(picked)
    rows = []
    for k in picked:
        try:
            rows.append(kernel_sass(k, arch, configs.get(k.id)))
        except (CompileError, SassUnavailable, OSError, subprocess.SubprocessError) as e:
            rows.append({"kernel": k.id, "impl": k.impl, "arch": arch, "symbol": k.symbol,
                         "threads": k.threads, "error": str(e)})
    df = pd.DataFrame(rows)
    df["nvcc"] = nvcc_version()
    df["triton"] = triton_version()
    for col in TABLE_COLUMNS:
        if col not in df.columns:
            df[col] = "" if col in _TEXT_COLUMNS else math.nan
        elif col in _TEXT_COLUMNS:
            df[col] = df[col].fillna("")
    extra = [c for c in df.columns if c not in TABLE_COLUMNS]
    return df[TABLE_COLUMNS + extra]


# ---------------------------------------------------------------------------------------------
# counted vs compiled

TOLERANCE = 0.10


def _disagree(counted: float, compiled: float) -> bool:
    if counted == 0:
        return compiled != 0
    return abs(compiled / counted - 1.0) > TOLERANCE


def _explain_lds(c, r) -> str:
    """Why the loop's shared loads differ from the count, read off the loop histogram."""
    ksteps = r["loop_FFMA"] / c.fma_per_k
    counted = (c.lds_dist + c.lds_bcast) * ksteps  # counted load instructions in the loop body
    compiled = r["loop_LDS"]
    narrow = {32: r["loop_LDS32"], 64: r["loop_LDS64"], 128: r["loop_LDS128"]}
    if compiled < counted:
        wider = {w: n for w, n in narrow.items() if w > c.lds_bits and n > 0}
        if wider:
            kept = narrow.get(c.lds_bits, 0)
            merged = counted - kept
            parts = " + ".join(f"{int(n)} LDS.{w}" for w, n in sorted(wider.items(), reverse=True))
            words = sum(n * w // c.lds_bits for w, n in wider.items())
            which = "broadcast loads" if merged == c.lds_bcast * ksteps else "loads"
            txt = (f"the compiler vectorised shared loads: {merged:.0f} of the {counted:.0f} counted "
                   f"{c.lds_bits}-bit {which} in the loop became {parts}")
            if words > merged:
                txt += f" ({words - merged:.0f} of the fetched values unused)"
            elif words < merged:
                txt += f" and {merged - words:.0f} values were reused from registers"
            return txt
        return (f"the loop issues {compiled:.0f} shared loads where {counted:.0f} were counted: "
                "the compiler reused values from registers")
    spill = r.get("loop_LDL", 0) or 0
    why = " (register spills in the loop)" if spill else " (re-loads under register pressure)"
    return f"the loop issues {compiled:.0f} shared loads where {counted:.0f} were counted{why}"


def _explain_ldg(c, r) -> str:
    counted = c.ldg_per_phase / c.fma_per_phase * r["loop_FFMA"]
    compiled = r["loop_LDG"]
    if compiled == 0 and counted > 0:
        return "the main loop holds no global loads (they sit outside the loop found)"
    wide = {w: int(r.get(f"loop_LDG{w}", 0) or 0) for w in (256, 128, 64)}
    if compiled < counted and any(n for w, n in wide.items() if w > c.ldg_bits):
        parts = [f"{n} LDG.{w}" for w, n in wide.items() if n] + [f"{int(r['loop_LDG32'])} LDG.32"]
        return (f"the compiler vectorised global loads: {counted:.0f} counted {c.ldg_bits}-bit loads "
                f"became {' + '.join(parts)}")
    return f"the loop issues {compiled:.0f} global loads where {counted:.0f} were counted"


def counted_vs_compiled(sass_df, kernels=None):
    """Per CUDA kernel: the registry's counted loads per FMA beside the SASS main-loop ratios.

    counted_lds_per_fma = (dist + bcast) per FMA; counted_ldg_per_fma = ldg. The SASS side is
    loop_LDS / loop_FFMA and loop_LDG / loop_FFMA (instructions of any width). ``flag`` is True
    where either pair differs by more than 10%; ``explanation`` says why, from the histogram.
    """
    import pandas as pd

    ks = {k.id: k for k in _as_kernels(kernels) if k.impl == "cuda" and k.counted is not None}
    rows = []
    for _, r in sass_df.iterrows():
        k = ks.get(r["kernel"])
        if k is None:
            continue
        c = k.counted
        row = {
            "kernel": k.id,
            "counted_lds_per_fma": (c.lds_dist + c.lds_bcast) / c.fma_per_k,
            "counted_lds_bits": c.lds_bits,
            "sass_lds_per_fma": r.get("loop_lds_per_ffma", math.nan),
            "counted_ldg_per_fma": c.ldg_per_phase / c.fma_per_phase,
            "counted_ldg_bits": c.ldg_bits,
            "sass_ldg_per_fma": r.get("loop_ldg_per_ffma", math.nan),
            "loop_FFMA": r.get("loop_FFMA", math.nan),
            "loop_LDS32": r.get("loop_LDS32", math.nan),
            "loop_LDS128": r.get("loop_LDS128", math.nan),
            "loop_LDG32": r.get("loop_LDG32", math.nan),
            "loop_LDG128": r.get("loop_LDG128", math.nan),
        }
        err = r.get("error") or ""
        ffma = r.get("loop_FFMA")
        if err or not ffma or (isinstance(ffma, float) and math.isnan(ffma)):
            row.update(lds_ratio=math.nan, ldg_ratio=math.nan, flag=False,
                       explanation=f"no SASS: {err}" if err else "no main loop with FFMA found")
            rows.append(row)
            continue
        notes = []
        bad_lds = _disagree(row["counted_lds_per_fma"], row["sass_lds_per_fma"])
        bad_ldg = _disagree(row["counted_ldg_per_fma"], row["sass_ldg_per_fma"])
        if bad_lds:
            notes.append(_explain_lds(c, r))
        if bad_ldg:
            notes.append(_explain_ldg(c, r))
        for key, cnt, sass in (("lds_ratio", row["counted_lds_per_fma"], row["sass_lds_per_fma"]),
                               ("ldg_ratio", row["counted_ldg_per_fma"], row["sass_ldg_per_fma"])):
            row[key] = sass / cnt if cnt else math.nan
        row["flag"] = bad_lds or bad_ldg
        row["explanation"] = "; ".join(notes) if notes else "SASS matches the count (within 10%)"
        rows.append(row)
    return pd.DataFrame(rows)
