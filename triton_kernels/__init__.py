"""Triton twins of the CUDA SGEMM kernels (`docs/method.md#triton-twins`).

One module per kernel, numbered like its CUDA twin; each exposes ``matmul(a, b, out=None, ...)``
and ``aot_spec(...)`` for :mod:`triton_kernels.aot`. Importing this package imports nothing
else: Triton and torch load only with the kernel modules.
"""
