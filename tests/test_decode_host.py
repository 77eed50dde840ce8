"""The decode panel's host pass (``python -m study.measure.decode_host``, docs/method.md#decode-panel):
the rows it writes against their declaration, the points it reads from the panel and the order of
its passes, the median batch behind a held device, no profiler session in its process, and its
refusals. CPU (the device steps replaced); the pass on the GPU is in test_decode_panel.py's GPU
test."""

from __future__ import annotations

import pytest
from conftest import TEST_GPU, cli, refused
from test_decode_panel import QKV, O, write_fixture

from study.measure import decode as panel
from study.measure import decode_host as host
from study.rundata import tables
from study.rundata.gpu import GPU
from study.rundata.results import provenance
from study.rundata.tables import T


def test_the_host_pass_declaration_lists_every_column_it_writes(monkeypatch):
    """A host-pass row as ``decode_host.run`` writes it (the shape's columns, the point, the pass,
    what ``measure`` returns, a timestamp): exactly the declared columns; its batches' figures."""
    monkeypatch.setattr(host, "batches", lambda call: [(5e-6, 4e-6), (9e-6, 5e-6), (6e-6, 6e-6)])
    row = host.measure(lambda: None)
    assert (row["status"], row["host_us"], row["host_min_us"], row["host_max_us"]) == ("ok", 6.0, 5.0, 9.0)
    assert row["cpu_us"] == pytest.approx(5.0) and row["batches"] == 3 and row["calls"] == host.CALLS
    prov = provenance(GPU(**TEST_GPU), "run")
    point = {"M", "kernel", "pass", "timestamp"}
    written = set(panel.shape_columns(panel.BY_NAME[O], prov)) | point | set(row)
    assert written == set(T.decode_host.columns)
    assert T.decode_host in tables.MEASURED and T.decode_host.append_only
    assert T.decode_host.producer == "study.measure.decode_host:main"
    monkeypatch.setattr(host, "batches", lambda call: None)
    assert host.measure(lambda: None)["status"] == "unheld"


def test_the_host_pass_reads_the_panels_timed_points_and_alternates_its_order(tmp_path):
    write_fixture(tmp_path / "decode.csv")
    points = host.timed_points(tmp_path / "decode.csv", ["KD", "OP", "K0"])
    # the panel's order of shapes (8B o before Qwen qkv); KD at qkv M = 64 was wrong: not there
    every = ["KD", "OP", "K0"]
    assert points == {O: {1: every, 64: every}, QKV: {1: every, 64: ["K0"]}}
    assert host.timed_points(tmp_path / "none.csv", ["KD"]) == {}
    shapes = list(points)
    assert [host.order(shapes, p) for p in range(3)] == [[O, QKV], [QKV, O], [O, QKV]]


class _FakeCudaMatrix:
    """What ``baseline.cublas_matmul`` reads of an operand on a device, without one."""

    is_cuda = True

    def __init__(self, *shape):
        self.shape = shape

    def dim(self):
        return len(self.shape)


def test_with_naming_off_no_launcher_opens_a_profiler_session(monkeypatch):
    import torch

    from study.measure import baseline

    def no_profiler(*args, **kwargs):
        raise AssertionError("a profiler session was opened")

    monkeypatch.setitem(baseline._NAMING, "on", True)
    monkeypatch.setattr(torch.profiler, "profile", no_profiler)
    monkeypatch.setattr(torch, "matmul", lambda a, b, out=None: "product")
    a, b = _FakeCudaMatrix(2, 8), _FakeCudaMatrix(8, 4)
    with pytest.raises(AssertionError, match="profiler session"):  # on: a shape's first launch names it
        baseline.cublas_matmul(a, b)
    baseline.name_no_kernels()
    assert baseline.cublas_matmul(a, b) == "product" and (2, 4, 8) not in baseline._KERNELS
    ran = []
    assert baseline.kernel_names(lambda: ran.append(1)) is None and not ran


def test_the_host_pass_turns_naming_off_before_it_measures(monkeypatch, tmp_path):
    from study.measure import baseline

    monkeypatch.setitem(baseline._NAMING, "on", True)
    monkeypatch.setattr(panel, "need_gpu", lambda tool: None)
    seen = {}

    def run(out, kernels, budget):
        seen["naming"] = baseline._NAMING["on"]
        return 0

    monkeypatch.setattr(host, "run", run)
    assert host.main(["--out", str(tmp_path / "o")]) == 0 and seen == {"naming": False}


class _HeldDevice:
    """A stand-in for the device behind ``host_seconds``: synchronize does nothing, and an event
    recorded after a hold is still pending unless ``released`` says the hold ended early."""

    released = False

    def __init__(self, monkeypatch):
        import torch

        from study.measure import bench

        device = self
        monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
        monkeypatch.setattr(bench, "hold_gpu", lambda seconds: None)

        class Event:
            def record(self):
                pass

            def query(self):
                return device.released

        monkeypatch.setattr(torch.cuda, "Event", Event)


def test_host_cost_is_the_median_batch(monkeypatch):
    # 10 probe calls, then 9 batches of 40 calls; every call costs 1 ms of a fake clock, and one
    # batch (the third) has a pause of 400 ms inside it: that batch reads 11 ms a call, the
    # median batch 1 ms, which is the figure
    _HeldDevice(monkeypatch)
    clock = {"t": 0.0, "calls": 0}
    monkeypatch.setattr(host.time, "perf_counter", lambda: clock["t"])

    def call():
        clock["calls"] += 1
        clock["t"] += 1e-3
        if clock["calls"] == host.PROBE + 2 * 40 + 20:
            clock["t"] += 0.4

    assert (host.BATCHES, host.CALLS) == (9, 40)
    assert host.host_seconds(call) == pytest.approx(1e-3)
    assert clock["calls"] == host.PROBE + 9 * 40
    clock.update(t=0.0, calls=0)
    row = host.measure(call)
    assert row["host_us"] == pytest.approx(1e3) and row["host_max_us"] == pytest.approx(11e3)


def test_host_cost_is_none_where_the_hold_ends_too_soon(monkeypatch):
    _HeldDevice(monkeypatch).released = True
    calls = []
    assert host.host_seconds(lambda: calls.append(1)) is None
    # the probe, then the first batch tried HOLD_TRIES times
    assert len(calls) == host.PROBE + host.HOLD_TRIES * host.CALLS


@pytest.mark.parametrize("args, words", [
    (["--kernels", "KD,K99"], ["unknown kernel", "K99"]),
    (["--budget-s", "-1"], ["--budget-s"]),
    ([], ["CUDA GPU"]),
])
def test_the_host_pass_refuses_in_one_line(tmp_path, args, words):
    p = cli("study.measure.decode_host", "--out", tmp_path / "o", *args, env={"CUDA_VISIBLE_DEVICES": ""})
    refused(p, *words)
    assert not (tmp_path / "o").exists()
