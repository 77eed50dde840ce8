"""GPU constants (`docs/method.md#gpu`): the run directory's description of its device.

Everything here is read from the device or from a JSON file written from the device; no GPU is
hard-coded. The three formulas below (FP32 peak, DRAM peak, cadence floor) are the only
definitions of those figures in the project; ``study.derive.ledgers`` uses them. The measured
bandwidth roofs (`docs/method.md#bandwidth-roof`: a plain device read and a device-to-device
copy, timed by ``study.measure.bench.bandwidth_roofs`` when a measuring run starts) are optional fields:
a description without them (a replay, an older run) is still whole. A key that is no field of
:class:`GPU` is refused, never dropped.
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from study import arch
from study.errors import InputError


def fp32_lanes_per_sm(cc: str) -> int:
    """FP32 lanes (CUDA cores) per SM of compute capability ``cc`` ("9.0"), from the arch table
    (:func:`study.arch.fp32_lanes`): an unknown one is an InputError, never a guess, since a
    wrong lane count silently scales every peak and the cadence floor."""
    return arch.fp32_lanes(cc)


def fp32_peak_gflops(sms: int, lanes_per_sm: int, clock_mhz: float) -> float:
    """FP32 peak = SMs x lanes x 2 (an FMA is two flops) x clock."""
    return sms * lanes_per_sm * 2 * clock_mhz * 1e6 / 1e9


def dram_peak_gbps(mem_clock_mhz: float, bus_width_bits: int) -> float:
    """DRAM peak = memory clock x 2 (double data rate) x bus width / 8."""
    return mem_clock_mhz * 1e6 * 2 * bus_width_bits / 8 / 1e9


def cadence_floor(lanes_per_sm: int) -> float:
    """Fewest cycles per warp-FMA per SM: a warp is 32 lanes of work."""
    return 32 / lanes_per_sm


_REQUIRED = ("name", "sms", "fp32_lanes_per_sm", "sm_clock_mhz", "mem_clock_mhz", "bus_width_bits")
# the measured bandwidth roofs (docs/method.md#bandwidth-roof), GB/s = 1e9 bytes/s: median and
# p20/p80 over the repetitions, and the bytes of the buffer read
ROOF_FIELDS = (
    "read_gbps", "read_p20_gbps", "read_p80_gbps", "copy_gbps", "copy_p20_gbps", "copy_p80_gbps",
    "roof_buffer_bytes",
)
_OPTIONAL_NUMBERS = ("sampled_sm_clock_mhz", "l2_bytes") + ROOF_FIELDS
_WHOLE_NUMBERS = ("sms", "fp32_lanes_per_sm", "bus_width_bits", "l2_bytes", "roof_buffer_bytes")


@dataclass
class GPU:
    name: str
    sms: int
    fp32_lanes_per_sm: int
    sm_clock_mhz: float  # device-reported max SM clock: the main caliber
    mem_clock_mhz: float
    bus_width_bits: int
    sampled_sm_clock_mhz: float | None = None  # median clock sampled during the run
    l2_bytes: int | None = None
    cc: str | None = None  # compute capability, e.g. "9.0"
    # measured when the run started (docs/method.md#bandwidth-roof); None when not measured
    read_gbps: float | None = None  # a read-only reduction over the buffer: the measured read roof
    read_p20_gbps: float | None = None
    read_p80_gbps: float | None = None
    copy_gbps: float | None = None  # a device-to-device copy, read + write bytes counted
    copy_p20_gbps: float | None = None
    copy_p80_gbps: float | None = None
    roof_buffer_bytes: int | None = None

    def peak_gflops(self, clock_mhz: float | None = None) -> float:
        return fp32_peak_gflops(self.sms, self.fp32_lanes_per_sm, clock_mhz or self.sm_clock_mhz)

    def tf32_peak_gflops(self, clock_mhz: float | None = None) -> float:
        """The dense TF32 tensor-core peak = SMs x TF32 multiply-adds per SM per clock x 2 x clock
        (``study.arch``'s rate for this capability); NaN where the table has none for it."""
        try:
            rate = arch.get(self.cc).tf32_fma_per_sm_clk if self.cc else None
        except InputError:
            rate = None
        return 2.0 * self.sms * rate * (clock_mhz or self.sm_clock_mhz) / 1e3 if rate else math.nan

    def dram_gbps(self) -> float:
        return dram_peak_gbps(self.mem_clock_mhz, self.bus_width_bits)

    def cadence_floor(self) -> float:
        return cadence_floor(self.fp32_lanes_per_sm)

    def with_sampled_clock(self, mhz: float | None) -> GPU:
        return replace(self, sampled_sm_clock_mhz=mhz)

    def roofs(self) -> dict:
        """The measured bandwidth roofs this description holds (``ROOF_FIELDS`` that are set)."""
        return {k: getattr(self, k) for k in ROOF_FIELDS if getattr(self, k) is not None}

    def with_roofs(self, roofs: dict) -> GPU:
        """This GPU with the measured bandwidth roofs ``roofs`` (keys of ``ROOF_FIELDS``)."""
        unknown = sorted(set(roofs) - set(ROOF_FIELDS))
        if unknown:
            raise ValueError(f"not bandwidth roof fields: {', '.join(unknown)}")
        return replace(self, **roofs)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def to_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def from_dict(cls, data: dict, where: str = "GPU description") -> GPU:
        if not isinstance(data, dict):
            raise InputError(f"{where}: expected a JSON object with keys {', '.join(_REQUIRED)}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(k for k in data if k not in known)
        if unknown:  # a misspelt optional key would otherwise be dropped, its value lost unseen
            guesses = [f"{k!r} (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(k, known, 1))
                       else repr(k) for k in unknown]
            raise InputError(f"{where}: unknown key{'s' * (len(unknown) > 1)} {', '.join(guesses)}; "
                             f"known keys: {', '.join(known)}")
        for key in _REQUIRED:
            if key not in data:
                raise InputError(f"{where}: missing key {key!r}")
        name = data["name"]
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"{where}: key 'name' must be a non-empty string, got {name!r}")
        values = {"name": name}
        for key in _REQUIRED[1:] + _OPTIONAL_NUMBERS:
            if key in _REQUIRED or data.get(key) is not None:
                values[key] = _positive(data[key], key, where)
        for key in _WHOLE_NUMBERS:
            if key in values:
                if values[key] != int(values[key]):
                    raise InputError(f"{where}: key {key!r} must be a whole number, got {data[key]!r}")
                values[key] = int(values[key])
        if data.get("cc") is not None:  # a capability the arch table does not know is refused, not kept
            cc = data["cc"]
            if isinstance(cc, bool) or not isinstance(cc, (str, int, float)):
                raise InputError(f"{where}: key 'cc' must be a compute capability such as \"9.0\", "
                                 f"got {cc!r}")
            try:
                arch.fp32_lanes(str(cc))
            except InputError as e:
                raise InputError(f"{where}: key 'cc': {e}") from None
            values["cc"] = str(cc)
        return cls(**values)

    @classmethod
    def from_json(cls, path: str | Path) -> GPU:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise InputError(f"GPU file {path} does not exist") from None
        except (OSError, ValueError, RecursionError) as e:  # ValueError: bad JSON, also an integer
            # too long to convert (Python caps int digits); RecursionError: absurd nesting
            raise InputError(f"GPU file {path} is not readable JSON: {e}") from None
        return cls.from_dict(data, where=f"GPU file {path}")


def _positive(value, key: str, where: str) -> float:
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if is_number:
        try:
            finite = math.isfinite(value)
        except OverflowError:  # an integer beyond any float, e.g. 10**400
            raise InputError(
                f"{where}: key {key!r} must be a positive number, got an integer of "
                f"{len(str(abs(value)))} digits"
            ) from None
    if not is_number or not finite or value <= 0:
        raise InputError(f"{where}: key {key!r} must be a positive number, got {value!r}")
    return value


# ---------------------------------------------------------------------------------------------
# The GPU of a recorded run


def _cc_text(cc) -> str:
    try:
        return f"{float(cc):.1f}"
    except (TypeError, ValueError):
        return str(cc)


def for_run(gpu_json: Path, results) -> tuple[GPU, str]:
    """The GPU constants of a recorded run and where they came from: ``gpu_json`` when it is
    there, else the provenance columns of its first results row (which carry no L2 size).
    InputError when neither source is usable. (The sampled clock, where gpu.json records none, is
    derived from the rows: ``study.derive``.)"""
    if Path(gpu_json).is_file():
        return GPU.from_json(gpu_json), "gpu.json"
    source = "gpu.json not in this run"
    try:
        r = results.iloc[0]
        cc = _cc_text(r["cc"])
        gpu = GPU.from_dict({
            "name": str(r["gpu"]), "sms": int(r["sms"]), "cc": cc,
            "fp32_lanes_per_sm": fp32_lanes_per_sm(cc), "sm_clock_mhz": float(r["max_sm_clock_mhz"]),
            "mem_clock_mhz": float(r["mem_clock_mhz"]), "bus_width_bits": int(r["bus_width_bits"]),
        })
    except (IndexError, KeyError, TypeError, ValueError, InputError) as e:
        raise InputError(
            f"no GPU constants: gpu.json is not in this run and the provenance columns of "
            f"results.csv are incomplete ({e})"
        ) from None
    return gpu, source + ": constants from the provenance columns of results.csv (no L2 size)"
