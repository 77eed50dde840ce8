"""K0: cuBLAS FP32 through torch.matmul, with TF32 pinned off and verified off."""

from __future__ import annotations

import os

import torch

from study.errors import InputError


class TF32Leak(RuntimeError):
    """The baseline ran on tensor cores: every '% of cuBLAS' would be meaningless."""


def pin_fp32() -> None:
    """Turn TF32 off for cuBLAS; the environment variable must be set before CUDA initialises."""
    os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


_KERNELS: dict[tuple[int, int, int], str] = {}  # shape -> the kernel(s) cuBLAS ran there
# Whether a vendor launcher names the kernel it ran (a torch.profiler session at a shape's first
# launch). A profiler session can leave a cost on every later launch of its process (Kineto keeps
# CUPTI attached after a session unless TEARDOWN_CUPTI=1, which importing ``study`` sets where the
# environment does not say), so a process that measures the host's cost of a call also opens none
# (``name_no_kernels``, before its first launch).
_NAMING = {"on": True}


def name_no_kernels() -> None:
    """From now on in this process, no launcher opens a profiler session to name its kernel (the
    rows then record no kernel name)."""
    _NAMING["on"] = False


def kernel_names(run) -> str | None:
    """The CUDA kernel(s) ``run()`` launches, as the profiler names them, comma-separated; None
    (and ``run()`` not called) where naming is off."""
    if not _NAMING["on"]:
        return None
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA
    return ", ".join(sorted({e.key for e in prof.key_averages() if e.device_type == cuda}))


def cublas_matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    if a.dim() != 2 or b.dim() != 2:
        raise InputError(f"the cuBLAS baseline needs 2-D matrices; got {a.dim()}-D and {b.dim()}-D")
    if a.shape[1] != b.shape[0]:
        raise InputError(f"inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    if torch.backends.cuda.matmul.allow_tf32:
        raise TF32Leak("torch.backends.cuda.matmul.allow_tf32 is on: call pin_fp32() first")
    shape = (a.shape[0], b.shape[1], a.shape[1])
    if shape not in _KERNELS and a.is_cuda and _NAMING["on"]:  # a shape's first launch: which kernel
        got = {}
        _KERNELS[shape] = kernel_names(lambda: got.setdefault("r", torch.matmul(a, b, out=out)))
        return got["r"]
    return torch.matmul(a, b, out=out)


def default_kernel(M: int, N: int, K: int) -> dict | None:
    """The kernel cuBLAS's default choice ran at M x N x K (torch.matmul), and the cuBLASLt version
    where nvmath can say it; None before a launch there."""
    from study.measure.cublaslt import version

    if (M, N, K) not in _KERNELS:
        return None
    return {"kernel": _KERNELS[(M, N, K)], "cublaslt": version()}


def guard(rel_err: float, gflops: float, peak_gflops: float, tol: float = 1e-5) -> None:
    """Fail loudly if the baseline is not plain FP32 (error too large or faster than FP32 can be)."""
    if not rel_err <= tol:
        raise TF32Leak(
            f"cuBLAS baseline relative error {rel_err:.2e} > {tol:.0e}: TF32 or another reduced "
            "precision leaked in (is NVIDIA_TF32_OVERRIDE=0 set before CUDA starts?)"
        )
    if gflops > peak_gflops:
        raise TF32Leak(
            f"cuBLAS baseline ran at {gflops:.0f} GFLOP/s, above the FP32 peak of {peak_gflops:.0f}: "
            "tensor cores (TF32) must have been used"
        )
