"""Compile one registry kernel for a named architecture, with no GPU: a cached cubin.

CUDA kernels go through ``nvcc -cubin -O3 -Xptxas -v`` (the ptxas report is kept beside the
cubin); Triton kernels through :mod:`triton_kernels.aot` (ahead of time, at the 4096^3
representative launch), which returns the cubin's bytes and this module writes them to the
cache; the SASS tables compile them in a child process (``study.toolchain.triton_child``), where
an abort of the compiler is one kernel's CompileError. The cache is ``$SGEMM_SASS_CACHE``, else
``~/.cache/sgemm-ledgers/sass``, never inside the repository. A kernel that fails raises
``CompileError``; the SASS table records it in the kernel's row and carries on.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

from study import arch as arches
from study.errors import InputError
from study.kernels.registration import source_closure
from study.toolchain.tools import nvcc_version_text, require_nvcc
from study.toolchain.triton_child import ChildDied, ChildFailed, TritonChild

REPO = Path(__file__).resolve().parents[2]
NVCC_FLAGS = ("-cubin", "-O3", "-Xptxas", "-v")
CONFIG_KEYS = ("BM", "BN", "BK", "GROUP_M", "num_warps", "num_stages")


class CompileError(RuntimeError):
    """One kernel failed to compile or to dump; the table records it and carries on."""


# ---------------------------------------------------------------------------------------------
# cache


def cache_dir() -> Path:
    """$SGEMM_SASS_CACHE, else ~/.cache/sgemm-ledgers/sass (never inside the repository)."""
    env = os.environ.get("SGEMM_SASS_CACHE")
    path = Path(env).expanduser() if env else Path.home() / ".cache" / "sgemm-ledgers" / "sass"
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_atomic(path: Path, data: bytes) -> None:
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


def _needs_sm90(kernel) -> bool:
    """Whether the kernel says it needs sm_90; False where its .cu cannot say (nvcc will)."""
    try:
        return bool(getattr(kernel, "needs_sm90", False))
    except InputError:
        return False


def compile_cuda(kernel, arch="sm_90", defines: dict | None = None) -> Path:
    """The kernel's .cu compiled with ``nvcc -cubin -O3 -arch=<arch>``; the cached cubin's path.
    A kernel that needs sm_90 (``needs_sm90``) is compiled for sm_90a where ``arch`` is sm_90, as
    the extension is built on such a GPU.

    ``arch``: anything :func:`study.arch.get` takes. ``defines``: ``-DNAME=VALUE`` overrides of
    the file's ``#ifndef`` parameters (a sweep's variant). Cached by the hash of the source
    (with its local includes), the arch, the nvcc version, the flags and the defines; the ptxas
    ``-v`` report is kept beside the cubin (``.ptxas.txt``).
    """
    sm = arches.get(arch).sm
    nvcc = require_nvcc()
    src = _source_path(kernel)
    dflags = [f"-D{name}={value}" for name, value in sorted((defines or {}).items())]
    target = [f"-arch={sm}"]
    if sm == "sm_90" and _needs_sm90(kernel):
        # as the extension builds it on such a GPU: the arch-specific target, whose instructions
        # (setmaxnreg: K14's register split) a plain sm_90 build leaves out
        sm = "sm_90a"
        target = ["-gencode=arch=compute_90a,code=sm_90a"]
    h = hashlib.sha256()
    for part in (sm, nvcc_version_text(nvcc), " ".join(NVCC_FLAGS), " ".join(dflags)):
        h.update(part.encode() + b"\0")
    for path in source_closure(src):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    stem = f"{src.stem}-{sm}-{h.hexdigest()[:20]}"
    cubin = cache_dir() / f"{stem}.cubin"
    log = cubin.with_suffix(".ptxas.txt")
    if cubin.is_file() and log.is_file():
        return cubin
    tmp = cubin.with_name(f".{stem}.{os.getpid()}.cubin")
    cmd = [nvcc, *NVCC_FLAGS, *dflags, *target, "-I", str(src.parent), "-o", str(tmp), str(src)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired as e:
        raise CompileError(f"{kernel.id}: nvcc timed out after {e.timeout:.0f} s") from None
    if out.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        msg = (out.stderr or out.stdout).strip().splitlines()
        first = next((ln for ln in msg if "error" in ln), msg[0] if msg else "no output")
        raise CompileError(f"{kernel.id}: nvcc failed ({out.returncode}): {first.strip()}")
    write_atomic(log, (out.stdout + out.stderr).encode())
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


def resources_cuda(kernel, arch="sm_90") -> dict:
    """``parse_ptxas`` of the kernel's compile: registers, smem_bytes (static, without the 1 KB
    reservation), stack/spill bytes as ptxas reports them."""
    cubin = compile_cuda(kernel, arch)
    log = cubin.with_suffix(".ptxas.txt").read_text(errors="replace")
    return parse_ptxas(log, kernel.symbol)


# ---------------------------------------------------------------------------------------------
# Triton


def compile_triton(kernel, arch="sm_90", config: dict | None = None,
                   shape: tuple[int, int, int] | None = None, child: TritonChild | None = None) -> dict:
    """Ahead-of-time compile of a Triton kernel for ``arch`` (no GPU needed).

    Goes through ``triton_kernels.aot`` with the registry entry's module (``kernel.target``)
    at the registry's ``num_stages`` and the 4096^3 representative launch. ``config``
    (autotuned kernels only; keys ``CONFIG_KEYS``) picks the configuration to compile; without
    it TA takes the winner its autotuner holds in this process for 4096^3, else its module's
    ``DEFAULT_CONFIG``. ``shape`` (default 4096^3) is the launch whose integer arguments the
    compile specialises on: Triton compiles a stride divisible by 16 apart from one that is not
    (4097), and only the first gets 128-bit loads. An autotuned kernel is also given the arch's
    shared memory per block, so that a configuration that cannot launch there is refused. Returns
    ``{"cubin": Path, "name", "smem_bytes", "threads", "num_stages", "config"}`` with the cubin written to the
    cache directory; ``config`` is the configuration actually compiled (a dict with
    ``CONFIG_KEYS``) for an autotuned kernel, None for the others.

    Compiles are remembered per (kernel id, arch, resolved launch): the configuration and
    every argument value the compile specialises on, so a different config, or a tuning
    result that arrives later, compiles anew.

    ``child``: compile in that child process (:class:`study.toolchain.triton_child.TritonChild`),
    the same launch with the same result, so that a compiler that aborts on the target is this
    kernel's CompileError rather than the end of this process; None compiles here.
    """
    a = arches.get(arch)
    aot = _triton_aot(kernel)
    options = {"num_stages": kernel.num_stages, "config": dict(config) if config else None,
               "shape": tuple(shape) if shape else None}
    if kernel.tuned:
        options["smem_limit"] = a.smem_per_block
    try:
        spec = aot.resolve_spec(kernel.target, **options)
    except Exception as e:
        why = f"{type(e).__name__}: {e}"
        raise CompileError(f"{kernel.id}: no AOT launch for config {config}: {why}") from None
    used = None
    if kernel.tuned:
        used = {k: spec.args[k] for k in ("BM", "BN", "BK", "GROUP_M") if k in spec.args}
        used.update(num_warps=spec.num_warps, num_stages=spec.num_stages)
    key = (kernel.id, a.sm, spec.num_warps, spec.num_stages, tuple(sorted(spec.args.items())),
           tuple(sorted(spec.extra_options.items())))
    hit = _TRITON_COMPILED.get(key)
    if hit is None:
        # the child resolves the same function; a tuned kernel's config is the one resolved here
        in_child = None if child is None else (child, {**options, "config": used or options["config"]})
        hit = _TRITON_COMPILED[key] = _compile_triton(aot, kernel, a, spec, in_child)
    return {**hit, "config": dict(used) if used else None}


_TRITON_COMPILED: dict[tuple, dict] = {}


def _triton_aot(kernel):
    import importlib

    try:
        return importlib.import_module("triton_kernels.aot")
    except Exception as e:  # triton missing or broken
        why = f"{type(e).__name__}: {e}"
        raise CompileError(f"{kernel.id}: cannot import triton_kernels.aot: {why}") from None


def _compile_triton(aot, kernel, a: arches.Arch, spec, in_child=None) -> dict:
    try:
        if in_child is None:
            res = aot.compile_sass_target(spec, arch=a.number)
        else:
            child, options = in_child
            res = child.compile(kernel.target, options, spec, a.number)
    except ChildDied as e:
        raise CompileError(f"{kernel.id}: Triton AOT compile for {a.sm} died in its child process: "
                           f"{e}") from None
    except Exception as e:
        msg = str(e).strip().splitlines()
        kind = e.kind if isinstance(e, ChildFailed) else type(e).__name__
        raise CompileError(f"{kernel.id}: Triton AOT compile failed: {kind}: "
                           f"{msg[0] if msg else ''}") from None
    if not res.cubin:
        raise CompileError(f"{kernel.id}: Triton AOT returned no cubin")
    digest = hashlib.sha256(res.cubin).hexdigest()[:20]
    path = cache_dir() / f"triton-{kernel.id}-{a.sm}-{digest}.cubin"
    if not path.is_file():
        write_atomic(path, bytes(res.cubin))
    return {
        "cubin": path,
        "name": res.name,
        "smem_bytes": res.shared,
        "threads": 32 * res.num_warps,
        "num_stages": res.num_stages,
        "arguments": tuple(getattr(res, "arguments", ())),
    }
