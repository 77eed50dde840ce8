"""An autotuned kernel's candidates compiled in parallel before the autotuner runs.

``triton.autotune`` compiles its candidates one after another on the first call at a new key,
then times them. On a problem that keeps tens of candidates, the compiles take most of that first
call. :func:`warm` compiles them first, in child processes that run at once: each child calls the
kernel's own ``warmup`` (the autotuner's launch path, without the launch) for its share of the
candidates, so each compiled binary lands in Triton's on-disk cache under the key the autotuner's
own compile looks up. The autotuner then finds every binary there and only times them: which
candidates it times, how and what it keeps do not change.

A child that fails (no device, a compiler that aborts, a cache the child cannot write) costs only
its share: the autotuner compiles what is missing, as it would have anyway. ``python -m
triton_kernels.warm`` is the child; it takes its work as one JSON argument.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

MIN_CANDIDATES = 8  # fewer compile faster one by one than children start (a few seconds each)
MAX_WORKERS = 8
TIMEOUT_S = 180  # a child that takes longer is stopped; the autotuner compiles its share


def shares(n: int, workers: int) -> list[list[int]]:
    """Candidates 0 .. n-1 dealt round-robin to at most ``workers`` children (none empty)."""
    workers = max(1, min(workers, n))
    return [list(range(w, n, workers)) for w in range(workers)]


def worker_count(n: int, cpus: int | None = None) -> int:
    """Children for ``n`` candidates: 0 below :data:`MIN_CANDIDATES` (compile them in-process),
    else one per CPU core beyond the parent's, at most :data:`MAX_WORKERS`."""
    if n < MIN_CANDIDATES:
        return 0
    cpus = cpus if cpus is not None else (os.cpu_count() or 1)
    return max(0, min(MAX_WORKERS, cpus - 1, n))


def _child_env() -> dict:
    """The parent's environment, with its import path: the child imports the kernel's module
    the way the parent did (a checkout on PYTHONPATH or an installed package alike)."""
    env = dict(os.environ)
    path = [str(Path(__file__).resolve().parents[1])] + [p for p in sys.path if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(path))
    return env


def warm(kernel: str, args: list, configs: list[int], workers: int | None = None) -> int:
    """Compile the candidates ``configs`` (indices into the autotuner's ``configs``) of the
    autotuned kernel ``kernel`` ("module:attr") for the launch arguments ``args`` (a tensor given
    as the string "float32", any other argument as it is passed), in parallel children.
    Returns how many children finished cleanly; 0 where none ran."""
    n = len(configs)
    workers = worker_count(n) if workers is None else workers
    if workers <= 0:
        return 0
    env = _child_env()
    procs = []
    for share in shares(n, workers):
        job = json.dumps({"kernel": kernel, "args": args, "configs": [configs[i] for i in share]})
        procs.append(subprocess.Popen([sys.executable, "-m", "triton_kernels.warm", job], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    ok = 0
    for p in procs:
        try:
            p.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            continue
        ok += p.returncode == 0
    return ok


def _resolve(kernel: str):
    module, attr = kernel.split(":")
    return getattr(importlib.import_module(module), attr)


def _compile(job: dict) -> None:
    import torch
    from triton.runtime.jit import MockTensor

    tuner = _resolve(job["kernel"])
    # the autotuner's own call, ``tuner.fn.run(*args, grid=..., warmup=..., **config.all_kwargs())``
    # (through the heuristics wrapper), with warmup=True: compiled, not launched
    args = [MockTensor(torch.float32) if a == "float32" else a for a in job["args"]]
    for i in job["configs"]:
        tuner.fn.run(*args, grid=(1,), warmup=True, **tuner.configs[i].all_kwargs())


if __name__ == "__main__":
    _compile(json.loads(sys.argv[1]))
