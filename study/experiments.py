"""The experiments as data (`docs/method.md#experiments`): which shapes each one measures, under
what label.

A *point* is one (experiment, label, M, N, K). A kernel that refuses a shape (K6 needs N and K
multiples of 4) is measured at the nearest shape it accepts, named in the row, never silently
skipped: the stride experiment measures K6 at 4100 where the others run 4097.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from study.errors import InputError
from study.kernels import Kernel


@dataclass(frozen=True)
class Point:
    experiment: str
    label: str
    M: int
    N: int
    K: int


# Qwen2.5-7B FFN: hidden 3584, intermediate 18944
FFN_N, FFN_K = 18944, 3584

EXPERIMENTS: dict[str, str] = {
    "main": "E1: every kernel at the main size (4096^3 unless --size/--shape)",
    "sizes": "E2: square sizes from inside the L2 to far past it",
    "shapes": "E3: square and LLM shapes (prefill, decode batch 32 and batch 1)",
    "strides": "E4: power-of-two stride n = 4096 against n = 4097",
}
# E5 (SASS) needs no GPU and E6 (clocks) is recorded with every timing: both always run.
DEFAULT = tuple(EXPERIMENTS)
SIZES = (1024, 2048, 4096, 8192)

# Checking, before anything is timed: small odd shapes against a float64 product, and the
# largest relative Frobenius error a correct FP32 kernel may have (FP32 lands near 1e-6, TF32
# near 3e-4).
CHECK_SHAPES = ((1, 1, 1), (33, 65, 17), (67, 131, 97), (1, 4096, 4096))
TOLERANCE = 1e-5


def points(experiment: str, main_shape: tuple[int, int, int] = (4096, 4096, 4096)) -> list[Point]:
    if experiment == "main":
        M, N, K = main_shape
        return [Point("main", "main", M, N, K)]
    if experiment == "sizes":
        return [Point("sizes", f"n={n}", n, n, n) for n in SIZES]
    if experiment == "shapes":
        return [
            Point("shapes", "square", 4096, 4096, 4096),
            Point("shapes", "prefill", 2048, FFN_N, FFN_K),
            Point("shapes", "decode_b32", 32, FFN_N, FFN_K),
            Point("shapes", "decode_b1", 1, FFN_N, FFN_K),
        ]
    if experiment == "strides":
        return [Point("strides", "n=4096", 4096, 4096, 4096), Point("strides", "n=4097", 4097, 4097, 4097)]
    raise InputError(f"unknown experiment {experiment!r}; known: {', '.join(EXPERIMENTS)}")


def stride_shapes(kernels) -> list[tuple[int, int, int]]:
    """The shapes of the stride experiment and the aligned ones ``kernels`` run it at instead
    (4096^3, 4097^3 and 4100^3 today): where the SASS is read to explain the stride penalty."""
    shapes = []
    for p in points("strides"):
        for s in [(p.M, p.N, p.K)] + [shape_for(k, p) for k in kernels]:
            if s is not None and s not in shapes:
                shapes.append(s)
    return sorted(shapes)


def parse(spec: str | None) -> list[str]:
    """Experiment names from a comma-separated spec; the default is all of them."""
    if spec is None:
        return list(DEFAULT)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise InputError(f"--experiments is empty; known: {', '.join(EXPERIMENTS)}")
    bad = [n for n in names if n not in EXPERIMENTS]
    if bad:
        raise InputError(f"unknown experiment {bad[0]!r}; known: {', '.join(EXPERIMENTS)}")
    return names


def shape_for(kernel: Kernel, p: Point) -> tuple[int, int, int] | None:
    """The shape ``kernel`` runs for point ``p``: p's own, or the next aligned one it accepts."""
    if kernel.constraint_error(p.M, p.N, p.K) is None:
        return p.M, p.N, p.K
    if p.experiment == "main":
        return None  # the user asked for this exact shape: the CLI refuses it up front
    if p.M == p.N == p.K:  # keep a square point square: 4097^3 becomes 4100^3
        m = math.lcm(*kernel.multiple_of)
        n = -(-p.M // m) * m
        return n, n, n
    return tuple(-(-v // m) * m for v, m in zip((p.M, p.N, p.K), kernel.multiple_of))
