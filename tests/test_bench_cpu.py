"""The checker itself, on the CPU: it must pass a right product and reject wrong ones."""

import math

from study.measure import bench


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


def test_time_cuda_holds_the_device_before_it_enqueues_the_repetitions(monkeypatch):
    # every repetition is enqueued behind a hold at least as long as the host takes to enqueue them
    # all, so no repetition's start event waits on the device for its launch
    calls = []

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            calls.append("record")
            self.t = len(calls)

        def elapsed_time(self, end):
            return 0.5  # ms

    monkeypatch.setattr(bench.torch.cuda, "Event", Event)
    monkeypatch.setattr(bench.torch.cuda, "synchronize", lambda: None)
    sleep = lambda cycles: calls.append(("sleep", cycles))  # noqa: E731
    monkeypatch.setattr(bench.torch.cuda, "_sleep", sleep, raising=False)
    clock = iter([8.0, 8.0 + 2**-10])  # the probe's enqueue: 2^-10 s (0.98 ms) of host time, exact
    monkeypatch.setattr(bench.time, "perf_counter", lambda: next(clock))
    t = bench.time_cuda(lambda: calls.append("fn"), lambda: calls.append("flush"), target_s=0.005, warmup=1)
    assert t.reps == 10 and t.ms == 0.5  # 5 ms of target over the 0.5 ms probe
    sleeps = [c for c in calls if isinstance(c, tuple)]
    assert len(sleeps) == 1
    first_rep = calls.index(sleeps[0]) + 1
    assert calls[first_rep:first_rep + 4] == ["flush", "record", "fn", "record"]
    assert calls[:first_rep - 1].count("fn") == 2  # warm-up and probe before the hold
    # 10 repetitions x 2^-10 s of host time, doubled, at 2e9 cycles per second
    assert sleeps[0][1] == 10 * 2 * 2 * 10**9 // 2**10 == 39_062_500
