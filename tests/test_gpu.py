"""GPU constants, the JSON round trip, device reading and the clock sampler (no GPU needed)."""

import json
import sys
import time
import types
from pathlib import Path

import pytest

from study.errors import InputError
from study.measure import device as gpumod
from study.measure.device import ClockSampler
from study.rundata.gpu import GPU, fp32_lanes_per_sm

SEED_GPU = "reports/data/rtx4090_seed_gpu.json"


def h200():
    return GPU("NVIDIA H200", 132, 128, 1980, 3201, 6016, cc="9.0")


def test_rtx4090_constants_from_the_report():
    g = GPU.from_json(SEED_GPU)
    assert round(g.peak_gflops()) == 82575
    assert round(g.peak_gflops(2640)) == 86508
    assert round(g.dram_gbps()) == 1008
    assert g.cadence_floor() == 0.25
    assert g.l2_bytes / 1e6 == pytest.approx(75.5, abs=0.05)


def test_h200_constants():
    g = h200()
    assert g.peak_gflops() / 1e3 == pytest.approx(66.9, abs=0.05)
    assert g.dram_gbps() / 1e3 == pytest.approx(4.81, abs=0.005)


def test_cadence_floor_follows_lanes():
    assert GPU("x", 80, 64, 1530, 877, 4096).cadence_floor() == 0.5
    assert h200().cadence_floor() == 0.25


def test_lanes_table():
    assert fp32_lanes_per_sm("7.0") == 64
    assert fp32_lanes_per_sm("8.0") == 64
    assert fp32_lanes_per_sm("8.6") == 128
    assert fp32_lanes_per_sm("9.0") == 128
    with pytest.raises(InputError, match="4.2"):
        fp32_lanes_per_sm("4.2")


def test_json_round_trip(tmp_path):
    g = h200().with_sampled_clock(1755.0)
    p = tmp_path / "gpu.json"
    g.to_json(p)
    assert GPU.from_json(p) == g


@pytest.mark.parametrize("key", ["name", "sms", "fp32_lanes_per_sm", "sm_clock_mhz", "mem_clock_mhz",
                                 "bus_width_bits"])
def test_json_missing_key(tmp_path, key):
    data = json.loads(Path(SEED_GPU).read_text())
    del data[key]
    p = tmp_path / "gpu.json"
    p.write_text(json.dumps(data))
    with pytest.raises(InputError, match=rf"missing key '{key}'.*|.*{p}.*missing key '{key}'"):
        GPU.from_json(p)


@pytest.mark.parametrize("value", [0, -3, "fast", None, True])
def test_json_bad_value(tmp_path, value):
    data = json.loads(Path(SEED_GPU).read_text())
    data["sm_clock_mhz"] = value
    p = tmp_path / "gpu.json"
    p.write_text(json.dumps(data))
    with pytest.raises(InputError, match="sm_clock_mhz") as e:
        GPU.from_json(p)
    assert str(p) in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("key", ["sms", "sm_clock_mhz", "l2_bytes"])
def test_json_integer_beyond_any_float_is_bad_input(tmp_path, key):
    # json reads 10**400 as an int that math.isfinite cannot convert (OverflowError before)
    text = Path(SEED_GPU).read_text()
    data = json.loads(text)
    p = tmp_path / "gpu.json"
    p.write_text(text.replace(f'"{key}": {data[key]}', f'"{key}": 1{"0" * 400}'))
    with pytest.raises(InputError, match=key) as e:
        GPU.from_json(p)
    assert "401 digits" in str(e.value) and "\n" not in str(e.value)


def test_json_integer_too_long_to_read_is_bad_input(tmp_path):
    # past Python's int-digits cap json.loads raises a bare ValueError, not JSONDecodeError
    p = tmp_path / "gpu.json"
    p.write_text('{"sms": 1' + "0" * 5000 + "}")
    with pytest.raises(InputError, match="not readable JSON"):
        GPU.from_json(p)


def test_json_not_json(tmp_path):
    p = tmp_path / "gpu.json"
    p.write_text("{not json")
    with pytest.raises(InputError, match="not readable JSON"):
        GPU.from_json(p)
    with pytest.raises(InputError, match="does not exist"):
        GPU.from_json(tmp_path / "nope.json")


# --- device reading with stand-ins for torch and NVML ----------------------------------------


class FakeNVML(types.ModuleType):
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2

    def __init__(self, sm=1980, mem=3201, bus=6016, current=(1755, 1980, 1770)):
        super().__init__("pynvml")
        self.max = {1: sm, 2: mem}
        self.bus = bus
        self.current = list(current)
        self.calls = 0

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetHandleByUUID(self, uuid):
        if not uuid.startswith("GPU-"):
            raise RuntimeError("not found")
        return "handle"

    def nvmlDeviceGetHandleByIndex(self, i):
        return "handle"

    def nvmlDeviceGetMaxClockInfo(self, h, which):
        return self.max[which]

    def nvmlDeviceGetMemoryBusWidth(self, h):
        return self.bus

    def nvmlDeviceGetClockInfo(self, h, which):
        self.calls += 1
        return self.current[self.calls % len(self.current)]


def fake_props(**extra):
    base = dict(name="NVIDIA H200", multi_processor_count=132, major=9, minor=0,
                L2_cache_size=60 * 1024 * 1024, uuid="1234-abcd")
    base.update(extra)
    return types.SimpleNamespace(**base)


def test_from_device_reads_nvml(monkeypatch):
    monkeypatch.setattr(gpumod, "_torch_props", lambda i: fake_props())
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML())
    g = gpumod.from_device(0)
    assert (g.name, g.sms, g.fp32_lanes_per_sm, g.cc) == ("NVIDIA H200", 132, 128, "9.0")
    assert (g.sm_clock_mhz, g.mem_clock_mhz, g.bus_width_bits) == (1980, 3201, 6016)
    assert g.l2_bytes == 60 * 1024 * 1024
    assert g.peak_gflops() / 1e3 == pytest.approx(66.9, abs=0.05)


def test_from_device_falls_back_to_torch_props(monkeypatch):
    monkeypatch.setattr(gpumod, "_torch_props", lambda i: fake_props(
        clock_rate=2520000, memory_clock_rate=10501000, memory_bus_width=384, major=8, minor=9))
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    g = gpumod.from_device(0)
    assert (g.sm_clock_mhz, g.mem_clock_mhz, g.bus_width_bits) == (2520, 10501, 384)


def test_from_device_without_nvml_or_props_says_so(monkeypatch):
    monkeypatch.setattr(gpumod, "_torch_props", lambda i: fake_props())
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(InputError, match="NVML is unavailable"):
        gpumod.from_device(0)


def test_clock_sampler_collects(monkeypatch):
    monkeypatch.setattr(gpumod, "_torch_props", lambda i: fake_props())
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML())
    with ClockSampler(hz=50) as s:
        time.sleep(0.25)
    assert len(s.samples) >= 5
    assert all(t >= 0 for t, _ in s.samples)
    assert s.median() in (1755, 1770, 1980)


def test_clock_sampler_without_nvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with ClockSampler() as s:
        time.sleep(0.05)
    assert s.samples == [] and s.median() is None


def test_clock_sampler_rate_floor():
    with pytest.raises(InputError, match="5 Hz"):
        ClockSampler(hz=1)


@pytest.mark.gpu
def test_from_device_on_a_real_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    g = gpumod.from_device(0)
    assert g.sms > 0 and g.sm_clock_mhz > 0 and g.dram_gbps() > 0


@pytest.mark.gpu
def test_read_flush_charges_no_write_back():
    """A stream over a buffer 4x the L2 times no slower after the read flush than after a rewrite of
    the same buffer, which leaves the L2 dirty (the write-back is then charged to the stream)."""
    import torch

    from study.measure import bench

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    x = torch.randn(4 * l2 // 4, device="cuda")
    sink = torch.empty((), device="cuda")
    read = bench.L2Flush(l2)
    stream = lambda: torch.sum(x, dim=0, out=sink)  # noqa: E731

    def write():
        read.buf.fill_(1.0)

    t_read = bench.time_cuda(stream, read, target_s=0.05).ms
    t_write = bench.time_cuda(stream, write, target_s=0.05).ms
    print(f"stream of {x.numel() * 4 / 1e6:.1f} MB: {t_read * 1e3:.1f} us after the read flush, "
          f"{t_write * 1e3:.1f} us after a write flush")
    assert t_read <= 1.01 * t_write


@pytest.mark.gpu
def test_time_cuda_leaves_the_host_out_of_the_kernel_time():
    """A tiny kernel whose launch takes the host 0.5 ms is timed as the kernel, not the host: its
    repetitions are enqueued behind a hold of the device, so no start event waits for a launch."""
    import torch

    from study.measure import bench

    x = torch.zeros(1024, device="cuda")

    def slow_launch():
        t = time.perf_counter()
        while time.perf_counter() - t < 5e-4:  # the host's half millisecond, after the start event
            pass
        x.add_(1.0)

    t = bench.time_cuda(slow_launch, bench.L2Flush(2**20), target_s=0.01)
    assert t.ms < 0.1, f"{t.ms * 1e3:.0f} us: the host's delay was timed"
