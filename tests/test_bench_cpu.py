"""The checker itself, on the CPU: it must pass a right product and reject wrong ones."""

import math

from study import bench


def right(a, b, out):
    out.copy_(a @ b)


def drops_last_k(a, b, out):
    out.copy_(a[:, :-1] @ b[:-1])


def leaves_last_row(a, b, out):
    out[:-1].copy_((a @ b)[:-1])


def test_checker_passes_fp32_product():
    assert bench.check(right, 67, 131, 97, device="cpu") <= bench.TOLERANCE


def test_checker_rejects_dropped_k():
    assert bench.check(drops_last_k, 67, 131, 97, device="cpu") > bench.TOLERANCE


def test_checker_rejects_unwritten_output():
    assert math.isinf(bench.check(leaves_last_row, 33, 65, 17, device="cpu"))


def test_checker_rejects_reduced_precision():
    def bf16(a, b, out):
        out.copy_((a.bfloat16() @ b.bfloat16()).float())

    assert bench.check(bf16, 64, 64, 256, device="cpu") > bench.TOLERANCE


def test_quantiles():
    med, p20, p80 = bench.quantiles([float(i) for i in range(1, 11)])
    assert med == 5.5 and math.isclose(p20, 2.8) and math.isclose(p80, 8.2)


def test_inputs_are_random_not_zero():
    a, b = bench.random_inputs(8, 8, 8, seed=1, device="cpu")
    assert a.abs().min() > 0 and b.std() > 0.5


def test_l2_flush_reads_and_never_writes():
    # a write would leave the L2 dirty and the timed kernel would pay for the write-back
    flush = bench.L2Flush(2**20, device="cpu")
    version = flush.buf._version  # bumped by every in-place write to the tensor
    flush()
    flush()
    assert flush.buf._version == version
    assert flush.sink.item() == flush.buf.numel()  # it did read all of it (a buffer of ones)
    assert flush.buf.numel() * 4 == 64 * 2**20  # twice the L2, at least 64 MiB
    assert bench.L2Flush(60 * 2**20, device="cpu").buf.numel() * 4 == 120 * 2**20
