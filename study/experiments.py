"""The experiments as data (`docs/method.md#experiments`): which shapes each one measures, under
what label, on what storage.

A *point* is one (experiment, label, M, N, K, ld): ``ld`` None is contiguous row-major storage,
an integer the leading dimension of A, B and C (padded rows: the same logical matrices, each
row ``ld`` elements after the one before). A kernel that refuses a shape (K6 needs N and K
multiples of 4) is measured at the nearest shape it accepts, named in the row, never silently
skipped: the stride experiment measures K6 at 4100 where the others run 4097. A kernel that
refuses a point's storage (every CUDA kernel takes contiguous operands only) cannot be measured
there at all: :func:`refusal` says why, the measuring plan leaves that (point, kernel) out, and
the report's stride table says "contiguous operands only" in its place.
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
    ld: int | None = None  # leading dimension of A, B and C; None: contiguous
    pass_no: int = 1  # which pass of the run measures it (``PASSES``): 1 for every point, more for some


class Shape(tuple):
    """The (M, N, K) of one measurement and the storage it is measured on: ``ld`` the leading
    dimension of A, B and C, None for contiguous operands.

    It unpacks and indexes as (M, N, K). A contiguous Shape equals (and hashes as) the plain tuple;
    a padded one equals only a Shape with the same ``ld``, so a padded measurement is never taken
    for the contiguous one, nor the other way round, wherever measurements are keyed by shape.
    """

    def __new__(cls, M: int, N: int, K: int, ld: int | None = None):
        self = super().__new__(cls, (int(M), int(N), int(K)))
        self.ld = None if ld is None else int(ld)
        return self

    def __eq__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return tuple(self) == tuple(other) and self.ld == getattr(other, "ld", None)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(tuple(self)) if self.ld is None else hash((tuple(self), self.ld))

    def __repr__(self) -> str:
        return f"Shape{tuple(self)}" + ("" if self.ld is None else f" ld={self.ld}")

    def __reduce__(self):
        return (Shape, (*self, self.ld))


# Qwen2.5-7B FFN: hidden 3584, intermediate 18944
FFN_N, FFN_K = 18944, 3584

EXPERIMENTS: dict[str, str] = {
    "main": "E1: every kernel at the main size (4096^3 unless --size/--shape)",
    "sizes": "E2: square sizes from inside the L2 to far past it",
    "shapes": "E3: square and LLM shapes (prefill, decode batch 32 and batch 1)",
    "strides": "E4: power-of-two stride n = 4096 against n = 4097, 4100 and padded 4097",
}
# E5 (SASS) needs no GPU and E6 (clocks) is recorded with every timing: both always run.
DEFAULT = tuple(EXPERIMENTS)
# The headline comparisons (the main table, the ladder's steps, the twins, decode) are measured in
# this many passes, each in its own kernel order; every other point once. A margin between two
# kernels is a result only where their spread across passes separates them (docs/method.md#spread).
PASSES = 3
REPEATED = {"main": None, "shapes": ("square", "decode_b32", "decode_b1")}  # None: every label
SIZES = (1024, 2048, 4096, 8192)

# Checking, before anything is timed: small odd shapes against a float64 product, and the
# largest relative Frobenius error a correct FP32 kernel may have (FP32 lands near 1e-6, TF32
# near 3e-4).
CHECK_SHAPES = ((1, 1, 1), (33, 65, 17), (67, 131, 97), (1, 4096, 4096))
TOLERANCE = 1e-5

# The stride experiment. Triton specialises an integer argument on divisibility by 16
# (triton_kernels.aot.DIVISIBILITY), so 4100 (a multiple of 4, not of 16) is unaligned for it as
# 4097 is, while K6 accepts 4100; the remedy pads the rows of 4097^3 to the next multiple of 16.
STRIDE_N = 4097
PAD_TO = 16


def padded_ld(n: int, multiple: int = PAD_TO) -> int:
    """The leading dimension that pads rows of ``n`` elements to the next multiple of ``multiple``."""
    return -(-int(n) // multiple) * multiple


def _stride_points() -> list[Point]:
    """All four points of E4, in the order the report shows them."""
    n = STRIDE_N
    ld = padded_ld(n)
    return [
        Point("strides", "n=4096", 4096, 4096, 4096),
        Point("strides", f"n={n}", n, n, n),
        Point("strides", "n=4100", 4100, 4100, 4100),
        Point("strides", f"n={n} ld={ld}", n, n, n, ld),
    ]


def points(experiment: str, main_shape: tuple[int, int, int] = (4096, 4096, 4096)) -> list[Point]:
    """The points that define ``experiment``. For ``strides`` that is the pair every stride
    comparison is made against, the power-of-two stride first (``rows.stride_labels`` unpacks it):
    n = 4096 and n = 4097; the points measured beside them are :func:`extra_points`, and
    :func:`all_points` is what a run measures."""
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
        return _stride_points()[:2]
    raise InputError(f"unknown experiment {experiment!r}; known: {', '.join(EXPERIMENTS)}")


def extra_points(experiment: str) -> list[Point]:
    """Points ``experiment`` measures beside :func:`points`: for ``strides`` n = 4100 (every kernel,
    K6 included, at one shape) and the remedy, n = 4097 on rows padded to 4112 elements."""
    if experiment not in EXPERIMENTS:
        raise InputError(f"unknown experiment {experiment!r}; known: {', '.join(EXPERIMENTS)}")
    return _stride_points()[2:] if experiment == "strides" else []


def stride_extras() -> tuple[Point, Point]:
    """The stride experiment's points beside its pair, by role: (the contiguous n = 4100, the
    padded n = 4097)."""
    c, d = _stride_points()[2:]
    return c, d


def all_points(experiment: str, main_shape: tuple[int, int, int] = (4096, 4096, 4096)) -> list[Point]:
    """Every point a run of ``experiment`` measures, in measuring (and reporting) order."""
    return points(experiment, main_shape) + extra_points(experiment)


def stride_shapes(kernels) -> list[tuple[int, int, int]]:
    """The shapes of the stride experiment and the aligned ones ``kernels`` run it at instead
    (4096^3, 4097^3 and 4100^3 today): where the SASS is read to explain the stride penalty.
    Shapes only: the SASS is compiled for contiguous operands (the padded point's 4097^3 is the
    same shape)."""
    shapes = []
    for p in all_points("strides"):
        for s in [(p.M, p.N, p.K)] + [shape_for(k, p) for k in kernels]:
            s = None if s is None else tuple(s)
            if s is not None and s not in shapes:
                shapes.append(s)
    return sorted(shapes)


def repeated(p: Point) -> bool:
    """Whether ``p`` is one of the headline points measured in every pass (``REPEATED``)."""
    labels = REPEATED.get(p.experiment, ())
    return labels is None or p.label in labels


def pass_order(kernels, pass_no: int) -> list:
    """The kernels in the order pass ``pass_no`` measures them: the given order in pass 1, reversed
    in pass 2, a fixed shuffle (seeded by the pass number) after that, so that no kernel is always
    timed just after the same other one."""
    import random

    order = list(kernels)
    if pass_no == 2:
        order.reverse()
    elif pass_no > 2:
        random.Random(pass_no).shuffle(order)
    return order


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


def refusal(kernel: Kernel, p: Point) -> str | None:
    """Why ``kernel`` cannot be measured at ``p`` whatever its shape, or None: a padded point
    needs strided operands, which a kernel that takes contiguous operands only refuses (every CUDA
    kernel, ``kernels.check_cuda_operands``, and K0L: ``Kernel.contiguous_only``)."""
    if p.ld is not None and kernel.contiguous_only:
        return f"{kernel.id} takes contiguous operands only (ld = {p.ld} is padded storage)"
    return None


def shape_for(kernel: Kernel, p: Point) -> Shape | None:
    """The shape ``kernel`` runs for point ``p``: p's own, or the next aligned one it accepts, on
    p's storage (``Shape.ld``). None where it cannot run ``p``: the main point's exact shape
    refused (the CLI refuses it up front) or a storage it refuses (:func:`refusal`)."""
    if refusal(kernel, p):
        return None
    if kernel.constraint_error(p.M, p.N, p.K) is None:
        return Shape(p.M, p.N, p.K, p.ld)
    if p.experiment == "main":
        return None  # the user asked for this exact shape: the CLI refuses it up front
    if p.M == p.N == p.K:  # keep a square point square: 4097^3 becomes 4100^3
        m = math.lcm(*kernel.multiple_of)
        n = -(-p.M // m) * m
        return Shape(n, n, n, p.ld)
    return Shape(*(-(-v // m) * m for v, m in zip((p.M, p.N, p.K), kernel.multiple_of)), p.ld)
