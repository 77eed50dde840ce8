"""Hand-written CUDA SGEMM kernels and their cached JIT build.

One ``.cu`` file per kernel (each compiles standalone with ``nvcc -cubin`` for SASS analysis),
ending in its one ``SGEMM_REGISTER(symbol, BM, BN, BK, THREADS, FLAGS)`` line (``common.cuh``),
plus ``bindings.cpp``. :func:`load` builds every ``.cu`` here into one torch extension the first
time it is called; importing this package builds nothing and never touches a GPU.

The extension defines one function per registered kernel, named after its symbol
(``k6_vectorized(a, b, c, alpha, beta)``), writing ``c = alpha * a @ b + beta * c`` in place on
the current stream; each returns None or a message naming what is wrong with its arguments
(nothing is thrown across into Python). ``registered()`` lists (symbol, BM, BN, BK, THREADS,
FLAGS) for every kernel, as the lines state them.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from types import ModuleType

SOURCE_DIR: Path = Path(__file__).resolve().parent
EXTENSION_NAME = "sgemm_ledgers_cuda"

_lock = threading.Lock()
_extension: ModuleType | None = None


def cu_sources() -> list[Path]:
    """The kernel sources, one ``.cu`` per kernel, sorted by name: all that the build compiles."""
    return sorted(SOURCE_DIR.glob("*.cu"))


def _build_directory(cpp_extension) -> str:
    # torch's own choice: $TORCH_EXTENSIONS_DIR/<name>, else its default root
    try:
        return cpp_extension._get_build_directory(EXTENSION_NAME, verbose=False)
    except Exception:  # private helper; the status line is all that depends on it
        return "torch default"


def load() -> ModuleType:
    """Build (once, cached on disk by torch) and import the CUDA extension."""
    global _extension
    if _extension is not None:
        return _extension
    with _lock:
        if _extension is not None:
            return _extension
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError(
                "cuda_kernels.load(): no CUDA device is visible to torch "
                f"(torch {torch.__version__}, built with CUDA {torch.version.cuda}); "
                "the hand-written CUDA kernels need one"
            )
        from torch.utils import cpp_extension

        major, minor = torch.cuda.get_device_capability()
        # 9.0 and later: the arch-specific target ("sm_90a"), which SGEMM_SM90 kernels may need
        # (setmaxnreg, wgmma); the build is for this device alone either way
        cc = f"{major}{minor}{'a' if major >= 9 else ''}"
        start = time.perf_counter()
        ext = cpp_extension.load(
            name=EXTENSION_NAME,
            sources=[str(SOURCE_DIR / "bindings.cpp"), *(str(p) for p in cu_sources())],
            extra_cflags=["-O3"],
            extra_cuda_cflags=["-O3", f"-gencode=arch=compute_{cc},code=sm_{cc}"],
            extra_include_paths=[str(SOURCE_DIR)],
            verbose=False,
        )
        elapsed = time.perf_counter() - start
        print(
            f"cuda_kernels: {EXTENSION_NAME} for sm_{cc} ready in {elapsed:.1f} s "
            f"(build dir {_build_directory(cpp_extension)})",
            file=sys.stderr,
        )
        _extension = ext
        return ext


__all__ = ["EXTENSION_NAME", "SOURCE_DIR", "cu_sources", "load"]
