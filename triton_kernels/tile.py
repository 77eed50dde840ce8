"""The one tiled FP32 matmul kernel behind the Triton twins T3, T3c, T4, T5 and TA (and, on the
tensor cores, TT and TX: :mod:`triton_kernels.tc_autotuned`).

Each twin fixes the block tile (BM x BN x BK) and the number of warps of the CUDA kernel it
mirrors; everything inside the tile (which thread owns which outputs, vector widths, the
shared-memory staging of the operands, the software pipeline when ``num_stages > 1``) is
chosen by the Triton compiler. ``tl.dot(..., input_precision="ieee")`` keeps the product
exact FP32 (FFMA, never TF32 tensor cores), so the comparison with the CUDA kernels is
about who writes the code inside the tile, not about the arithmetic. TA
(:mod:`triton_kernels.ta_autotuned`) wraps this same kernel in ``triton.autotune``.

Edges. A tile that hangs over the bottom or right edge of C has two ways to keep its loads in
bounds, chosen by the constexpr ``MASK_MN``: masked loads on M and N (``other=0.0``: the lanes
past the edge read 0), or wrapped indices, rows ``rm % M`` and columns ``rn % N`` (valid rows
and columns again, so the A and B loads carry no M/N mask). Either way the masked store drops
those lanes' results, and each stored output sums the same products in the same order, so the
two give identical results. K is masked only where ``EVEN_K`` is false (the launcher sets it
when ``K % BK == 0``). Every launcher takes ``mask_mn`` (None: :data:`MASK_MN`); TA's
candidates all carry :data:`MASK_MN`, so it runs the twins' scheme.

The default is masked loads, from timing: at 4097^3 the twins and TA ran slower with wrapped
indices than with masks, while at 4096^3 the two schemes ran alike. The SASS does not show why
(at each shape both schemes load with the same widths), so the cost lies outside the
instruction stream, in how the wrapped addresses of the edge tiles meet the memory system.
``docs/notes/tile.md`` has the runs and compares the two schemes' main loops.

``mask_mn`` on every launcher keeps the other scheme one argument away.

Reads top to bottom: configuration, the ``@triton.jit`` kernel, the launcher.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------

# Row-major program order over output tiles, the order of a CUDA grid (blockIdx.x = columns).
ROW_MAJOR = 1
# Offsets are computed in 32-bit integers: refuse operands with more elements than that.
MAX_ELEMENTS = 2**31 - 1

# The edge scheme a launch takes when it names none: True, masked loads (the module docstring
# says why).
MASK_MN = True


def even_k(K: int, BK: int) -> bool:
    """The kernel's ``EVEN_K``: every K tile is whole, so its loads need no mask."""
    return K % BK == 0


def interpreting() -> bool:
    """True when Triton runs kernels on the CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


# --------------------------------------------------------------------------------------------
# Kernel
# --------------------------------------------------------------------------------------------


@triton.jit
def tiled_matmul_kernel(
    # pointers
    a_ptr, b_ptr, c_ptr,
    # sizes
    M, N, K,
    # strides (in elements)
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    # meta-parameters
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr,  # K % BK == 0: no K tile is partial, loads need no K mask
    # edge scheme: True masks the A/B loads on M and N, False wraps rows/columns (default: MASK_MN)
    MASK_MN: tl.constexpr = MASK_MN,
    # how tl.dot multiplies: "ieee" (FP32 FMA, the study's kernels), "tf32" or "tf32x3" (tensor cores)
    PRECISION: tl.constexpr = "ieee",
):
    """C[M, N] = A[M, K] @ B[K, N] in FP32; one program computes one BM x BN tile of C."""
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BN)
    if GROUP_M == 1:
        # plain row-major tile order, like a 2-D CUDA grid
        pid_m = pid // num_pid_n
        pid_n = pid % num_pid_n
    else:
        # GROUP_M tile rows share each B column panel while it is hot in L2
        num_pid_m = tl.cdiv(M, BM)
        group_size = GROUP_M * num_pid_n
        first_m = (pid // group_size) * GROUP_M
        rows = min(num_pid_m - first_m, GROUP_M)
        pid_m = first_m + (pid % group_size) % rows
        pid_n = (pid % group_size) // rows

    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if MASK_MN:
        # Rows/columns past the edge of C are masked: their lanes load 0 and their results are
        # dropped by the masked store.
        rm_load = rm
        rn_load = rn
        a_in = rm[:, None] < M
        b_in = rn[None, :] < N
    else:
        # Rows/columns past the edge of C wrap onto valid ones: their loads stay in bounds with
        # no mask, and their results are dropped by the masked store. No contiguity hint is
        # added: Triton's own analysis of `x % N` already proves runs of 16 when N % 16 == 0,
        # while a max_contiguous(BN) hint would be false across the wrap and, for a strided
        # view with N % 4 != 0, would turn wrapped lanes into misaligned 128-bit loads.
        rm_load = rm % M
        rn_load = rn % N

    a_ptrs = a_ptr + rm_load[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn_load[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BK)):
        if EVEN_K:
            if MASK_MN:
                a = tl.load(a_ptrs, mask=a_in, other=0.0)
                b = tl.load(b_ptrs, mask=b_in, other=0.0)
            else:
                a = tl.load(a_ptrs)
                b = tl.load(b_ptrs)
        else:
            k_left = K - k0 * BK  # the last K tile is partial: masked lanes read 0
            if MASK_MN:
                a = tl.load(a_ptrs, mask=a_in & (rk[None, :] < k_left), other=0.0)
                b = tl.load(b_ptrs, mask=b_in & (rk[:, None] < k_left), other=0.0)
            else:
                a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0)
                b = tl.load(b_ptrs, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk

    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


# --------------------------------------------------------------------------------------------
# Launcher
# --------------------------------------------------------------------------------------------


def check_operands(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    """Validate ``a @ b -> out`` for an FP32 kernel; return ``out``, allocated when None.

    Strided (non-contiguous) operands are accepted: the kernels take every stride.
    """
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
        if t.dtype != torch.float32:
            raise ValueError(f"{name} must be float32 (this study is FP32 SGEMM), got {t.dtype}")
    if a.device != b.device:
        raise ValueError(f"a and b must be on the same device, got {a.device} and {b.device}")
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: a is {M}x{K}, b is {K2}x{N}")
    if min(M, N, K) < 1:
        raise ValueError(f"every dimension must be >= 1, got M={M}, N={N}, K={K}")
    if out is not None:
        if not isinstance(out, torch.Tensor) or out.dim() != 2 or tuple(out.shape) != (M, N):
            shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ValueError(f"out must have shape ({M}, {N}), got {shape}")
        if out.dtype != torch.float32:
            raise ValueError(f"out must be float32, got {out.dtype}")
        if out.device != a.device:
            raise ValueError(f"out must be on {a.device}, got {out.device}")
    if a.device.type == "cpu" and not interpreting():
        raise ValueError("Triton kernels need CUDA tensors (or TRITON_INTERPRET=1 for the CPU interpreter)")
    for name, t in (("a", a), ("b", b), ("out", out)):
        if t is None:
            continue
        # the largest offset the kernel forms is sum((size - 1) * stride): keep it in int32
        span = sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()))
        if span > MAX_ELEMENTS:
            raise ValueError(f"{name} spans {span + 1} elements; 32-bit offsets allow {MAX_ELEMENTS}")
    if out is None:
        if M * N > MAX_ELEMENTS:
            raise ValueError(f"out would hold {M * N} elements; 32-bit offsets allow {MAX_ELEMENTS}")
        out = torch.empty((M, N), dtype=torch.float32, device=a.device)
    return out


def edge_scheme(mask_mn: bool | None) -> bool:
    """The kernel's ``MASK_MN`` for a launcher argument: None means :data:`MASK_MN`."""
    if mask_mn is None:
        return MASK_MN
    if not isinstance(mask_mn, bool):
        raise ValueError(f"mask_mn must be True, False or None, got {mask_mn!r}")
    return mask_mn


def launch_tiled(a, b, out, BM: int, BN: int, BK: int, num_warps: int, num_stages: int = 1,
                 group_m: int = ROW_MAJOR, mask_mn: bool | None = None, precision: str = "ieee"):
    """``out = a @ b`` with :func:`tiled_matmul_kernel` on one BM x BN x BK tile configuration.

    ``out`` None allocates the result; the result is returned either way. ``mask_mn`` picks the
    edge scheme (True: masked M/N loads, False: wrapped rows/columns; None: :data:`MASK_MN`);
    ``precision`` is ``tl.dot``'s input precision ("ieee": FP32 FMA; "tf32", "tf32x3": tensor cores).
    """
    mask_mn = edge_scheme(mask_mn)
    out = check_operands(a, b, out)
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    tiled_matmul_kernel[grid](
        a, b, out,
        M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
        BM=BM, BN=BN, BK=BK, GROUP_M=group_m, EVEN_K=even_k(K, BK), MASK_MN=mask_mn,
        PRECISION=precision, num_warps=num_warps, num_stages=num_stages,
    )
    return out


def padded_strides(spec, ld: int | None):
    """``spec`` (a ``triton_kernels.aot.KernelSpec``) with the row strides of A, B and C set to
    ``ld`` elements: padded row-major storage, as a view ``torch.empty(rows, ld)[:, :cols]``
    launches. None leaves the contiguous strides. An ``ld`` shorter than a row is a ValueError."""
    if ld is None:
        return spec
    args = spec.args
    if ld < max(args["K"], args["N"]):
        raise ValueError(f"ld = {ld} is shorter than a row (K = {args['K']}, N = {args['N']})")
    args.update(stride_am=ld, stride_bk=ld, stride_cm=ld)
    return spec


def aot_spec(*, BM: int, BN: int, BK: int, num_warps: int, num_stages: int,
             shape: tuple[int, int, int] | None = None, group_m: int = ROW_MAJOR,
             mask_mn: bool | None = None, ld: int | None = None):
    """What :mod:`triton_kernels.aot` needs to compile this kernel for one tile, with no GPU.

    ``mask_mn``: the edge scheme (None: :data:`MASK_MN`); ``ld``: the leading dimension of A, B
    and C for padded storage (None: contiguous).
    """
    from triton_kernels.aot import DEFAULT_SHAPE, matmul_spec

    K = (shape or DEFAULT_SHAPE)[2]
    meta = dict(BM=BM, BN=BN, BK=BK, GROUP_M=group_m, EVEN_K=even_k(K, BK), MASK_MN=edge_scheme(mask_mn))
    return padded_strides(
        matmul_spec(tiled_matmul_kernel, meta, num_warps=num_warps, num_stages=num_stages, shape=shape), ld
    )


def twin(BM: int, BN: int, BK: int, num_warps: int):
    """``matmul`` and ``aot_spec`` of a twin that pins this block tile and warp count."""

    def matmul(a, b, out=None, num_stages: int = 1, mask_mn: bool | None = None):
        """``out = a @ b`` (FP32) with this twin's tile; ``num_stages`` > 1 turns on pipelining,
        ``mask_mn`` picks the edge scheme (None: the default, :data:`MASK_MN`)."""
        return launch_tiled(a, b, out, BM=BM, BN=BN, BK=BK, num_warps=num_warps, num_stages=num_stages,
                            mask_mn=mask_mn)

    def twin_aot_spec(num_stages: int = 1, shape: tuple[int, int, int] | None = None,
                      mask_mn: bool | None = None, ld: int | None = None):
        """Kernel, representative arguments and options for ``aot.compile_sass_target``."""
        return aot_spec(BM=BM, BN=BN, BK=BK, num_warps=num_warps, num_stages=num_stages, shape=shape,
                        mask_mn=mask_mn, ld=ld)

    return matmul, twin_aot_spec
