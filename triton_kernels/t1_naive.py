"""T1: the closest Triton spelling of K1/K2, "no on-chip reuse".

K1 and K2 give every thread one output element and loop over k with two global loads and one
FMA per step, staging nothing on chip. T1 writes the same: a 32 x 32 block of outputs, a
scalar loop over k (BK = 1), and for every output element its *own* A address and its own B
address -- both pointer tensors have the full (BM, BN) shape, so the source shares nothing
between elements -- followed by one FP32 fused multiply-add. There is no ``tl.dot`` and no
explicit shared memory.

``stride_bn`` is kept out of Triton's value specialisation (``do_not_specialize``). Were it
specialised to the constant 1, the compiler would see B as contiguous along N, give B a
vectorised layout (4 columns per thread, LDG.128) and A a scalar one, and reconcile the two
by converting A's layout *through shared memory on every k-step* (barriers included) -- a
shared-memory round trip K1/K2 do not have. Without that fact both loads share one layout
and the SASS loop is 2 LDG.E per FFMA: the byte ledger of K1 and K2 alike.

Which of the two it is, the SASS does not say (the same instructions serve both mappings);
the hardware counters do (``python -m study.profile --kernels T1,K1,K2``; the reading is in
``docs/notes/t1.md``). T1 reads K1's 32-byte sectors per warp FMA -- 32 for an uncoalesced A
column plus 1 for a broadcast B value -- and runs in K1's time. So the compiler lays lanes
down the rows: K1's mapping, which this source neither asks for nor can forbid.

What Triton does not let you express:

* the thread -> element mapping. K1 (row from ``threadIdx.x``: uncoalesced A, broadcast B)
  and K2 (column from ``threadIdx.x``: broadcast A, coalesced B) differ *only* in that mapping;
  Triton derives the layout from what it can prove about the addresses (above: K1's
  mapping, chosen by the compiler), so neither mapping can be written down;
* shared memory, or its absence: staging is implicit (operands of ``tl.dot``, layout
  conversions such as the vectorised store of C at the end of this kernel), so "no on-chip
  reuse" is a property of this source and of the SASS it happens to produce, not a guarantee;
* per-element loads: the compiler is free to merge a thread's loads of one address (A is the
  same along a row) or to widen them into vector loads -- the SASS, not this source, shows
  what is issued (Triton 3.9 for sm_90: no merging, 8 A + 8 B LDG.E per 8 FFMA).
"""

from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels.tile import check_operands

BM, BN, BK = 32, 32, 1
NUM_WARPS = 4  # 128 threads per block: 8 outputs per thread (K1/K2 use 1024 threads, 1 each)


@triton.jit(do_not_specialize=["stride_bn"])  # see the module docstring
def t1_naive_kernel(
    # pointers
    a_ptr, b_ptr, c_ptr,
    # sizes
    M, N, K,
    # strides (in elements)
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    # meta-parameters
    BM: tl.constexpr, BN: tl.constexpr,
):
    """C = A @ B, one FMA per element per k-step, every operand loaded straight from global."""
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BN)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    inside = (rm[:, None] < M) & (rn[None, :] < N)

    # one A address and one B address per output element: (BM, BN) pointer tensors
    a_ptrs = a_ptr + tl.broadcast_to(rm[:, None] * stride_am, (BM, BN))
    b_ptrs = b_ptr + tl.broadcast_to(rn[None, :] * stride_bn, (BM, BN))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K):
        a = tl.load(a_ptrs, mask=inside, other=0.0)
        b = tl.load(b_ptrs, mask=inside, other=0.0)
        acc = tl.fma(a, b, acc)
        a_ptrs += stride_ak
        b_ptrs += stride_bk

    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=inside)


def matmul(a, b, out=None, num_stages: int = 1):
    """``out = a @ b`` (FP32) with no on-chip reuse; ``num_stages`` is passed to Triton as is."""
    out = check_operands(a, b, out)
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    t1_naive_kernel[grid](
        a, b, out,
        M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
        BM=BM, BN=BN,
        num_warps=NUM_WARPS, num_stages=num_stages,
    )
    return out


def aot_spec(num_stages: int = 1, shape: tuple[int, int, int] | None = None):
    """Kernel, representative arguments and options for :func:`triton_kernels.aot.compile_sass_target`."""
    from triton_kernels.aot import matmul_spec

    return matmul_spec(t1_naive_kernel, dict(BM=BM, BN=BN), num_warps=NUM_WARPS,
                       num_stages=num_stages, shape=shape)
