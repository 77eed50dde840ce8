"""The project's one lookup of each outside tool: nvcc, cuobjdump, ncu; their versions.

Nothing else in the project searches PATH or CUDA_HOME for a tool: the SASS table, the Triton
AOT dumps and the profiler all call these. A missing tool is ``None`` from ``find_*`` and a
``SassUnavailable`` (a ready one-line skip message) from ``require_*``.

Also here, because they are what the tools print: ``cuobjdump -res-usage`` parsed per function
(:func:`parse_res_usage`, :func:`resource_usage`).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CUDA_ROOTS = ("CUDA_HOME", "CUDA_PATH")


class SassUnavailable(RuntimeError):
    """A tool the SASS step needs is missing; ``str(e)`` is a one-line skip message."""


def _cuda_homes() -> list[Path]:
    """$CUDA_HOME, $CUDA_PATH, then /usr/local/cuda."""
    roots = [os.environ.get(env) for env in CUDA_ROOTS] + ["/usr/local/cuda"]
    return [Path(r) for r in roots if r]


def _executable(path: Path | str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


# ---------------------------------------------------------------------------------------------
# nvcc


def find_nvcc() -> str | None:
    """nvcc from PATH, else $CUDA_HOME/bin/nvcc or $CUDA_PATH/bin/nvcc; None when there is none."""
    hit = shutil.which("nvcc")
    if hit:
        return hit
    for root in _cuda_homes()[:-1]:  # an explicit CUDA_HOME / CUDA_PATH only
        if _executable(root / "bin" / "nvcc"):
            return str(root / "bin" / "nvcc")
    return None


def require_nvcc() -> str:
    tool = find_nvcc()
    if tool is None:
        raise SassUnavailable("SASS skipped: no nvcc on PATH")
    return tool


@functools.cache
def nvcc_version_text(nvcc: str) -> str:
    """``nvcc --version`` of that nvcc, stripped (remembered per path)."""
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout.strip()


def nvcc_version() -> str:
    """The version of the nvcc ``find_nvcc`` picks, e.g. "13.0.88"; "" when there is none."""
    nvcc = find_nvcc()
    if nvcc is None:
        return ""
    try:
        text = nvcc_version_text(nvcc)
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


# ---------------------------------------------------------------------------------------------
# cuobjdump


def cuobjdump_candidates() -> list[str]:
    """Every executable ``cuobjdump`` found, in search order, without duplicates.

    1. ``$TRITON_CUOBJDUMP_PATH`` (an explicit choice; Triton's own variable);
    2. ``cuobjdump`` on ``PATH``;
    3. the one bundled in the triton wheel (``triton/backends/nvidia/bin``), located without
       importing triton;
    4. ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``, then ``/usr/local/cuda/bin``.
    """
    found = [os.environ.get("TRITON_CUOBJDUMP_PATH", ""), shutil.which("cuobjdump") or ""]
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):  # a half-imported or stubbed triton
        spec = None
    for root in (spec.submodule_search_locations or []) if spec else []:
        found.append(str(Path(root) / "backends" / "nvidia" / "bin" / "cuobjdump"))
    found += [str(home / "bin" / "cuobjdump") for home in _cuda_homes()]
    usable: dict[str, str] = {}  # real path -> the first name it was found under
    for c in found:
        if c and _executable(c):
            usable.setdefault(os.path.realpath(c), c)
    return list(usable.values())


def find_cuobjdump() -> str | None:
    """The first ``cuobjdump`` of :func:`cuobjdump_candidates`; None when there is none."""
    found = cuobjdump_candidates()
    return found[0] if found else None


def require_cuobjdump() -> str:
    tool = find_cuobjdump()
    if tool is None:
        raise SassUnavailable("SASS skipped: no cuobjdump ($TRITON_CUOBJDUMP_PATH, PATH, "
                              "the triton wheel, $CUDA_HOME)")
    return tool


def run_cuobjdump(cubin: bytes | str | os.PathLike, *flags: str) -> str:
    """``cuobjdump <flags> <cubin>``'s output; ``cubin`` is the file's bytes or its path.

    The candidates are tried in search order until one succeeds: an older cuobjdump (a system
    CUDA on PATH) may not read a cubin for a newer arch or written by the newer ptxas that
    ships with Triton. Raises ``FileNotFoundError`` when there is no cuobjdump and
    ``RuntimeError`` when every one fails.
    """
    tools = cuobjdump_candidates()
    if not tools:
        raise FileNotFoundError(
            "cuobjdump not found ($TRITON_CUOBJDUMP_PATH, PATH, the triton wheel, $CUDA_HOME)")
    with tempfile.TemporaryDirectory() as tmp:
        if isinstance(cubin, (bytes, bytearray)):
            path = Path(tmp) / "kernel.cubin"
            path.write_bytes(cubin)
        else:
            path = Path(cubin)
        errors = []
        for tool in tools:
            done = subprocess.run([tool, *flags, str(path)], capture_output=True, text=True,
                                  timeout=300, check=False)
            if done.returncode == 0:
                return done.stdout
            errors.append(f"{tool}: {(done.stderr or done.stdout).strip()[:200]}")
    raise RuntimeError(f"cuobjdump {' '.join(flags)} failed on {path.name}: {'; '.join(errors)}")


_USAGE_FUNCTION = re.compile(r"^\s*Function\s+([^\s:]+)\s*:\s*$", re.M)
_USAGE_FIELD = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")


def parse_res_usage(text: str) -> dict[str, dict[str, int]]:
    """``cuobjdump -res-usage`` text -> {function: {"REG": .., "STACK": .., "SHARED": .., "LOCAL": ..,
    "CONSTANT[0]": .., ...}}: the fields on the line after each ``Function <name>:`` header.

    REG is registers per thread; STACK the stack frame and LOCAL the other local memory, both
    bytes per thread; SHARED the block's static shared memory (for sm_90 cubins it includes the
    1 KB the driver reserves per block; Triton's dynamic allocation is not in it).
    """
    out: dict[str, dict[str, int]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _USAGE_FUNCTION.match(line)
        if m and i + 1 < len(lines):
            out[m.group(1)] = {k: int(v) for k, v in _USAGE_FIELD.findall(lines[i + 1])}
    return out


def resource_usage(cubin: bytes | str | os.PathLike) -> dict[str, dict[str, int]]:
    """:func:`parse_res_usage` of ``cuobjdump -res-usage`` on a cubin (bytes or path)."""
    return parse_res_usage(run_cuobjdump(cubin, "-res-usage"))


# ---------------------------------------------------------------------------------------------
# ncu


def find_ncu() -> str | None:
    """``ncu`` from PATH, else from $CUDA_HOME, $CUDA_PATH or /usr/local/cuda."""
    found = shutil.which("ncu")
    if found:
        return found
    for root in _cuda_homes():
        if os.access(root / "bin" / "ncu", os.X_OK):
            return str(root / "bin" / "ncu")
    return None


def ncu_version(ncu: str) -> str:
    """The last line of ``ncu --version`` ("Version 2025.3.1.0 ..."); "" when it cannot run."""
    try:
        text = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""
