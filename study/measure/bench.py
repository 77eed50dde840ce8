"""Checking and timing: relative error against float64 with NaN-poisoned outputs; CUDA-event medians.

Every timed kernel is checked first on fresh random inputs; timing flushes the L2 between
repetitions (by a read: ``L2Flush``) so no repetition reads what the previous one left in the
cache, nor pays for writing back what the flush left dirty. A measuring run
starts by timing the device's bandwidth roofs (``bandwidth_roofs``, `docs/method.md#bandwidth-roof`):
a read-only reduction over a buffer far larger than the L2, and a device-to-device copy.
"""

from __future__ import annotations

import math
import time
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
    """A buffer twice the L2, read (summed into one preallocated scalar) before every timed repetition.

    A read, not a write: rewriting the buffer would leave the L2 full of dirty lines, and the
    timed kernel would pay for writing them back to DRAM as its own misses evict them: a fixed
    charge on every repetition, which short kernels (decode) feel most. Reading twice the L2's
    worth of other data evicts what the previous repetition left (its dirty lines are written
    back during the flush, outside the timed events) and leaves only clean lines behind.
    """

    def __init__(self, l2_bytes: int | None, device: str = "cuda"):
        n = max(int(l2_bytes or 64 * 2**20) * 2, 64 * 2**20) // 4
        self.buf = torch.ones(n, dtype=torch.float32, device=device)
        self.sink = torch.empty((), dtype=torch.float32, device=device)

    def __call__(self) -> None:
        torch.sum(self.buf, dim=0, out=self.sink)


def quantiles(samples: list[float]) -> tuple[float, float, float]:
    t = torch.tensor(samples, dtype=torch.float64)
    q = torch.quantile(t, torch.tensor([0.5, 0.2, 0.8], dtype=torch.float64))
    return float(q[0]), float(q[1]), float(q[2])


# The device is held (a spin kernel) for this many times the host's enqueue time of all repetitions
HOLD_MARGIN = 2.0
HOLD_MAX_S = 1.0  # at most this long
HOLD_CYCLES_PER_S = 2.0e9  # spin cycles per second asked for: above any SM clock's rate, so never short


def hold_gpu(seconds: float) -> None:
    """Keep the device busy for about ``seconds`` (``torch.cuda._sleep``, a spin of clock cycles)
    while the host enqueues the repetitions behind it: a repetition whose launch the host has not
    yet enqueued when the device reaches its start event would be timed with the host's delay in
    it (a short kernel with a slow launch: Triton's or an extension's, decode shapes). Nothing
    where this torch has no ``_sleep``."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None and seconds > 0:
        sleep(int(min(seconds, HOLD_MAX_S) * HOLD_CYCLES_PER_S))


def time_cuda(
    fn: Callable[[], object],
    flush: L2Flush,
    target_s: float = 0.3,
    min_reps: int = 5,
    max_reps: int = 100,
    warmup: int = 2,
) -> Timing:
    """Median, p20 and p80 of CUDA-event times of ``fn``; warm-up excluded, L2 flushed before each rep,
    every rep enqueued behind a hold of the device (``hold_gpu``) so none waits for the host."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    # one timed probe sizes the repetition count (and tells how long the host takes to enqueue one)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t_host = time.perf_counter()
    flush()
    start.record()
    fn()
    end.record()
    host_s = time.perf_counter() - t_host
    torch.cuda.synchronize()
    probe_ms = max(start.elapsed_time(end), 1e-3)
    reps = int(min(max_reps, max(min_reps, target_s * 1e3 / probe_ms)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    hold_gpu(HOLD_MARGIN * reps * host_s)
    for s, e in zip(starts, ends):
        flush()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    samples = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    med, p20, p80 = quantiles(samples)
    return Timing(med, p20, p80, reps)


# ---------------------------------------------------------------------------------------------
# Bandwidth roofs (docs/method.md#bandwidth-roof)

ROOF_MIN_BYTES = 2**30  # the buffer is at least 1 GiB ...
ROOF_L2_FACTOR = 8  # ... and at least 8x the L2, so a repetition finds next to nothing of it cached
ROOF_REPS = 20
ROOF_WARMUP = 3


@dataclass(frozen=True)
class Bandwidth:
    gbps: float  # bytes over the median time, GB/s = 1e9 bytes/s
    p20_gbps: float  # bytes over the p80 time
    p80_gbps: float  # bytes over the p20 time
    reps: int
    nbytes: int  # bytes counted per repetition


def roof_buffer_bytes(l2_bytes: int | None) -> int:
    """Bytes of the buffer the roofs stream: max(8 x L2, 1 GiB), a whole number of floats."""
    n = max(ROOF_L2_FACTOR * int(l2_bytes or 0), ROOF_MIN_BYTES)
    return n // 4 * 4


def bandwidth(nbytes: int, times_ms: list[float]) -> Bandwidth:
    """``nbytes`` per repetition over the median, p80 and p20 of ``times_ms``."""
    med, p20, p80 = quantiles(times_ms)
    per_s = lambda ms: nbytes / (ms / 1e3) / 1e9  # noqa: E731
    return Bandwidth(per_s(med), per_s(p80), per_s(p20), len(times_ms), nbytes)


def _event_times(fn: Callable[[], object], reps: int, warmup: int) -> list[float]:
    """CUDA-event times (ms) of ``reps`` launches of ``fn`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def bandwidth_roofs(
    l2_bytes: int | None, reps: int = ROOF_REPS, warmup: int = ROOF_WARMUP, seed: int = 0
) -> tuple[Bandwidth, Bandwidth]:
    """The measured read and copy bandwidth of the current CUDA device (`docs/method.md#bandwidth-roof`).

    Read: ``torch.sum`` of a float32 buffer of ``roof_buffer_bytes(l2_bytes)`` random values into one
    preallocated scalar, bytes = the buffer's size. Copy: the buffer copied into a second one of the
    same size, bytes = twice the size (read + write). CUDA events, ``warmup`` launches untimed, the
    median of ``reps`` (p20/p80 kept); no L2 flush: the buffer is 8 times the L2 or more. Both
    buffers are freed before returning. InputError without a CUDA device; a device that cannot hold
    the buffers raises torch's out-of-memory error."""
    if not torch.cuda.is_available():
        from study.errors import InputError

        raise InputError("no CUDA device: the bandwidth roofs cannot be measured")
    if reps < 10:
        raise ValueError(f"the bandwidth roofs take the median of at least 10 repetitions, got {reps}")
    nbytes = roof_buffer_bytes(l2_bytes)
    try:
        read, copy = _roof_times(nbytes, reps, warmup, seed)
    finally:  # the buffers died with _roof_times' frame: hand their memory back
        torch.cuda.empty_cache()
    return bandwidth(nbytes, read), bandwidth(2 * nbytes, copy)


def read_once(src: torch.Tensor, acc: torch.Tensor) -> None:
    """The read roof's reduction: every element of the 1-D float32 ``src`` summed into the
    preallocated scalar ``acc`` (each byte of ``src`` read once, one value written)."""
    torch.sum(src, dim=0, out=acc)


def _roof_times(nbytes: int, reps: int, warmup: int, seed: int) -> tuple[list[float], list[float]]:
    """Event times of the read (``read_once``) and of the copy, over fresh buffers."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    src = torch.rand(nbytes // 4, device="cuda", dtype=torch.float32, generator=g)
    acc = torch.empty((), device="cuda", dtype=torch.float32)
    read = _event_times(lambda: read_once(src, acc), reps, warmup)
    dst = torch.empty_like(src)
    copy = _event_times(lambda: dst.copy_(src), reps, warmup)
    return read, copy
