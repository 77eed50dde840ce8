"""Triton's ahead-of-time compiles in a child process, one at a time.

Triton's compiler runs LLVM in-process, and LLVM aborts the process (``LLVM ERROR: Cannot
select``) on an instruction the target lacks, e.g. a Gluon kernel's ``cp.async`` on sm_75. In a
child, that abort is one kernel's failure: :meth:`TritonChild.compile` raises :class:`ChildDied`
with the compiler's last words, and the next compile starts a fresh child. A child is spawned,
never forked: the parent may hold a CUDA context (a measuring run), which a fork cannot carry; so,
as with any spawned process, a script that builds a table does it under
``if __name__ == "__main__":`` (the child imports the script's main module).

The child compiles exactly the launch the parent resolved: the parent sends the registry entry's
module and options (from which the child takes the kernel function) and the resolved arguments and
launch options, which it compiles unchanged.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path


class ChildDied(RuntimeError):
    """The child process died while compiling (the message: the compiler's last words)."""


class ChildFailed(RuntimeError):
    """The compile raised in the child; ``kind`` is the exception's type name there."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class TritonChild:
    """A child process for Triton's AOT compiles, started on first use and replaced after it dies;
    use it as a context manager (one per table), or call :meth:`close`."""

    def __init__(self):
        self._pool = None
        self._log: str | None = None

    def __enter__(self) -> TritonChild:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._log is not None:
            Path(self._log).unlink(missing_ok=True)
            self._log = None

    def _start(self) -> None:
        import multiprocessing
        import tempfile
        from concurrent.futures import ProcessPoolExecutor

        fd, self._log = tempfile.mkstemp(prefix="sgemm-triton-child-", suffix=".log")
        os.close(fd)
        self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_quiet, initargs=(self._log,))

    def compile(self, target: str, options: dict, spec, arch: int):
        """``triton_kernels.aot.compile_sass_target`` of ``spec`` (a resolved ``KernelSpec`` of the
        registry target ``target`` with ``options``) for ``sm_<arch>``, in the child: its
        ``AotKernel``. ChildDied where the child died, ChildFailed where the compile raised."""
        from concurrent.futures.process import BrokenProcessPool

        from triton_kernels import aot

        fn = aot._jit_function(spec.fn).fn
        job = (target, options, (fn.__module__, fn.__qualname__), spec.args, spec.num_warps,
               spec.num_stages, spec.extra_options, arch)
        if self._pool is None:
            self._start()
        try:
            outcome = self._pool.submit(_compile, *job).result()
        except BrokenProcessPool:
            words = self._last_words()
            self.close()  # a broken pool takes no more work: the next compile starts a fresh child
            raise ChildDied(words) from None
        if outcome[0] != "ok":
            raise ChildFailed(*outcome[1:])
        return outcome[1]

    def _last_words(self) -> str:
        try:
            text = Path(self._log).read_text(errors="replace") if self._log else ""
        except OSError:
            text = ""
        said = [ln.strip() for ln in text.splitlines() if ln.strip()]
        errors = [ln for ln in said if "error" in ln.lower()]
        return (errors or said or ["it said nothing"])[-1][:300]


# --- in the child ----------------------------------------------------------------------------------


def _quiet(log: str) -> None:
    """The child's stdout and stderr go to ``log``: what a dying compiler prints is read back as
    one line of the kernel's error, not printed over the parent's output."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _compile(target, options, fn_name, args, num_warps, num_stages, extra_options, arch):
    try:
        aot = importlib.import_module("triton_kernels.aot")
        fn = aot.resolve_spec(target, **options).fn
        jit = aot._jit_function(fn).fn
        if (jit.__module__, jit.__qualname__) != tuple(fn_name):  # the parent's function, or nothing
            raise RuntimeError(f"{target} resolved {jit.__module__}.{jit.__qualname__} in the child, "
                               f"{'.'.join(fn_name)} in the parent")
        spec = aot.KernelSpec(fn, args, num_warps=num_warps, num_stages=num_stages,
                              extra_options=extra_options)
        return "ok", aot.compile_sass_target(spec, arch=arch)
    except Exception as e:  # sent back as text: a compiler's exception need not survive pickling
        msg = str(e).strip().splitlines()
        return "error", type(e).__name__, msg[0] if msg else ""
