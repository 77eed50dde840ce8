"""The present device: its constants read through torch and NVML, and the NVML clock sampler.

GPU only (torch with CUDA, NVML). What is read becomes a :class:`study.rundata.gpu.GPU`, the
run directory's description of the device; nothing here is hard-coded for one GPU.
"""

from __future__ import annotations

import statistics
import threading
import time

from study.errors import InputError
from study.rundata.gpu import GPU, fp32_lanes_per_sm


def _nvml():
    """The pynvml module, initialised; raises InputError with the reason when NVML is missing."""
    try:
        import pynvml
    except ImportError:
        raise InputError("NVML is unavailable: the nvidia-ml-py package is not installed") from None
    try:
        pynvml.nvmlInit()
    except Exception as e:  # NVMLError subclasses: library missing, driver not loaded, ...
        raise InputError(f"NVML is unavailable ({e}): clocks and bus width cannot be read") from None
    return pynvml


def _nvml_handle(nvml, index: int, uuid: str | None):
    """The NVML handle of CUDA device ``index``: matched by UUID (CUDA and NVML may number
    devices differently under CUDA_VISIBLE_DEVICES), by index when no UUID is known."""
    if uuid:
        u = str(uuid)
        for candidate in (u, "GPU-" + u):
            try:
                return nvml.nvmlDeviceGetHandleByUUID(candidate)
            except Exception:
                continue
    return nvml.nvmlDeviceGetHandleByIndex(index)


def _torch_props(index: int):
    import torch

    if not torch.cuda.is_available():
        raise InputError("no CUDA device is visible to torch: cannot read the GPU constants")
    if not 0 <= index < torch.cuda.device_count():
        raise InputError(f"CUDA device {index} does not exist ({torch.cuda.device_count()} visible)")
    return torch.cuda.get_device_properties(index)


def _prop_mhz(props, attr: str) -> float | None:
    """A torch property given in kHz, as MHz; None when absent or zero (CUDA 13 dropped some)."""
    v = getattr(props, attr, None)
    return v / 1000 if v else None


def from_device(index: int = 0) -> GPU:
    """The constants of CUDA device ``index``: torch for name, SMs, capability and L2; NVML for
    max SM clock, memory clock and bus width (cudaDeviceProp lost clockRate in CUDA 13)."""
    props = _torch_props(index)
    cc = f"{props.major}.{props.minor}"
    sm_mhz = _prop_mhz(props, "clock_rate")
    mem_mhz = _prop_mhz(props, "memory_clock_rate")
    bus = getattr(props, "memory_bus_width", None) or None
    nvml_error = None
    try:
        nvml = _nvml()
        try:
            h = _nvml_handle(nvml, index, getattr(props, "uuid", None))
            sm_mhz = nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_SM)
            mem_mhz = nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_MEM)
            bus = nvml.nvmlDeviceGetMemoryBusWidth(h)
        finally:
            nvml.nvmlShutdown()
    except Exception as e:
        nvml_error = str(e)
    found = {"max SM clock": sm_mhz, "memory clock": mem_mhz, "bus width": bus}
    missing = [what for what, v in found.items() if not v]
    if missing:
        raise InputError(
            f"cannot read {', '.join(missing)} of device {index}: {nvml_error or 'NVML returned nothing'}"
        )
    l2 = getattr(props, "L2_cache_size", None) or None
    return GPU(
        name=props.name, sms=props.multi_processor_count, fp32_lanes_per_sm=fp32_lanes_per_sm(cc),
        sm_clock_mhz=float(sm_mhz), mem_clock_mhz=float(mem_mhz), bus_width_bits=int(bus),
        l2_bytes=l2, cc=cc,
    )


class ClockSampler:
    """Samples the current SM clock through NVML on a background thread while timing runs.

    ``with ClockSampler() as s: ...`` then ``s.samples`` holds (seconds since start, MHz) and
    ``s.median()`` the median MHz. Without NVML it records nothing and ``median()`` is None:
    sampling never interferes with timing.
    """

    def __init__(self, index: int = 0, hz: float = 20):
        if hz < 5:
            raise InputError(f"clock sampling rate must be at least 5 Hz, got {hz}")
        self.index = index
        self.period = 1.0 / hz
        self.samples: list[tuple[float, float]] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml = None
        self._handle = None
        self._t0 = 0.0

    def __enter__(self) -> ClockSampler:
        self.samples = []
        self._stop.clear()
        self._t0 = time.perf_counter()
        try:
            self._nvml = _nvml()
            uuid = None
            try:
                uuid = getattr(_torch_props(self.index), "uuid", None)
            except Exception:
                pass
            self._handle = _nvml_handle(self._nvml, self.index, uuid)
        except Exception as e:
            self.error = str(e)
            self._shutdown()
            return self
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="clock-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._handle is not None:
            self._sample()
        self._shutdown()

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            self._sample()

    def _sample(self) -> None:
        try:
            mhz = self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM)
        except Exception as e:
            self.error = str(e)
            return
        self.samples.append((time.perf_counter() - self._t0, float(mhz)))

    def _shutdown(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
        self._nvml = None
        self._handle = None

    def median(self) -> float | None:
        return statistics.median(m for _, m in self.samples) if self.samples else None


