"""Checking and timing: relative error against float64 with NaN-poisoned outputs; CUDA-event medians.

Every timed kernel is checked first on fresh random inputs; timing flushes the L2 between
repetitions so no repetition reads what the previous one left in the cache.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from study.experiments import TOLERANCE  # noqa: E402,F401  (re-exported: the checker's bound)


@dataclass(frozen=True)
class Timing:
    ms: float  # median
    p20_ms: float
    p80_ms: float
    reps: int


def random_inputs(M: int, N: int, K: int, seed: int, device="cuda") -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh standard-normal inputs (never zeros: they hide unwritten outputs and bad indexing)."""
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(M, K, device=device, dtype=torch.float32, generator=g)
    b = torch.randn(K, N, device=device, dtype=torch.float32, generator=g)
    return a, b


def poisoned(M: int, N: int, device="cuda") -> torch.Tensor:
    return torch.full((M, N), float("nan"), device=device, dtype=torch.float32)


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖_F / ‖ref‖_F in float64; inf if any element is NaN or inf (unwritten or broken)."""
    out64 = out.double()
    if not bool(torch.isfinite(out64).all()):
        return math.inf
    denom = torch.linalg.norm(ref).item()
    num = torch.linalg.norm(out64 - ref).item()
    return num / denom if denom > 0 else num


def check(launch: Callable, M: int, N: int, K: int, seed: int = 0, device="cuda") -> float:
    """Relative error of ``launch(a, b, out)`` against a float64 product on fresh random inputs."""
    a, b = random_inputs(M, N, K, seed, device)
    out = poisoned(M, N, device)
    launch(a, b, out)
    if device == "cuda":
        torch.cuda.synchronize()
    ref = a.double() @ b.double()
    return relative_error(out, ref)


class L2Flush:
    """A buffer twice the L2, rewritten before every timed repetition."""

    def __init__(self, l2_bytes: int | None):
        n = max(int(l2_bytes or 64 * 2**20) * 2, 64 * 2**20) // 4
        self.buf = torch.empty(n, dtype=torch.float32, device="cuda")

    def __call__(self) -> None:
        self.buf.fill_(1.0)


def quantiles(samples: list[float]) -> tuple[float, float, float]:
    t = torch.tensor(samples, dtype=torch.float64)
    q = torch.quantile(t, torch.tensor([0.5, 0.2, 0.8], dtype=torch.float64))
    return float(q[0]), float(q[1]), float(q[2])


def time_cuda(
    fn: Callable[[], object],
    flush: L2Flush,
    target_s: float = 0.3,
    min_reps: int = 5,
    max_reps: int = 100,
    warmup: int = 2,
) -> Timing:
    """Median, p20 and p80 of CUDA-event times of ``fn``; warm-up excluded, L2 flushed before each rep."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    # one timed probe sizes the repetition count
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush()
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    probe_ms = max(start.elapsed_time(end), 1e-3)
    reps = int(min(max_reps, max(min_reps, target_s * 1e3 / probe_ms)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends):
        flush()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    samples = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    med, p20, p80 = quantiles(samples)
    return Timing(med, p20, p80, reps)
