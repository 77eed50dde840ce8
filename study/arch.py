"""One table of per-architecture limits: the only place the project keeps SM facts.

Source: the CUDA C++ Programming Guide, "Compute Capabilities", table "Technical
Specifications per Compute Capability" (FP32 lanes from its "Arithmetic Instructions"
throughput table), for every architecture from Turing to Blackwell that nvcc 13.0 targets
(``nvcc --list-gpu-code``): sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_100, sm_103, sm_110
(Thor, called sm_101 before CUDA 13), sm_120, sm_121. The allocation granularities
(registers per warp, shared memory per block) and the resident blocks per SM of sm_110 and
sm_12x are those of the occupancy calculator that ships with CUDA 13.0. nvcc 13.0 also accepts
sm_88, which the guide gives no column: it is not in the table (and so is refused), and nvcc
13.0 no longer targets Volta (sm_70, sm_72) or anything older.

Older capabilities (Kepler to Volta, and 10.1, Thor's number under CUDA 12) are kept as FP32
lanes per SM only: enough for the peak and cadence-floor arithmetic of a GPU that reports
them, not for occupancy.

An architecture that is not here is an ``InputError`` naming it and the known ones, never a
guess: a wrong limit silently scales every occupancy and every peak.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from study.errors import InputError

KB = 1024


@dataclass(frozen=True)
class Arch:
    """The limits of one compute capability (bytes for memory, registers are 32-bit)."""

    cc: str  # "9.0"
    sm: str  # "sm_90"
    family: str  # "Hopper"
    fp32_lanes_per_sm: int  # FP32 FMA lanes (CUDA cores) per SM
    max_warps_per_sm: int  # resident warps per SM
    max_threads_per_sm: int  # resident threads per SM (32 x warps)
    max_blocks_per_sm: int  # resident blocks per SM
    smem_per_sm: int  # shared memory per SM, the largest carveout
    smem_per_block: int  # shared memory one block may opt in to (the reservation excluded)
    smem_reserved_per_block: int = 1 * KB  # taken by the driver per block (sm_80 and later)
    smem_granularity: int = 128  # shared memory is allocated per block in these units
    regs_per_sm: int = 64 * KB
    max_regs_per_block: int = 64 * KB
    max_regs_per_thread: int = 255
    reg_granularity: int = 256  # registers are allocated per warp in these units
    sub_partitions: int = 4  # the register file is split across the SM's 4 schedulers
    max_threads_per_block: int = 1024
    # dense TF32 tensor-core multiply-adds per SM per clock (see TF32_SOURCES); None: not on record
    tf32_fma_per_sm_clk: int | None = None

    @property
    def number(self) -> int:
        """90 for sm_90."""
        return int(self.sm[3:])


def _arch(cc: str, family: str, lanes: int, warps: int, blocks: int, smem_sm_kb: int, smem_block_kb: int,
          **more) -> Arch:
    return Arch(cc=cc, sm="sm_" + cc.replace(".", ""), family=family, fp32_lanes_per_sm=lanes,
                max_warps_per_sm=warps, max_threads_per_sm=32 * warps, max_blocks_per_sm=blocks,
                smem_per_sm=smem_sm_kb * KB, smem_per_block=smem_block_kb * KB, **more)


_ALL = (
    _arch("7.5", "Turing", 64, 32, 16, 64, 64, smem_reserved_per_block=0, smem_granularity=256),
    _arch("8.0", "Ampere", 64, 64, 32, 164, 163, tf32_fma_per_sm_clk=512),
    _arch("8.6", "Ampere", 128, 48, 16, 100, 99, tf32_fma_per_sm_clk=128),
    _arch("8.7", "Ampere (Orin)", 128, 48, 16, 164, 163),
    _arch("8.9", "Ada", 128, 48, 24, 100, 99, tf32_fma_per_sm_clk=128),
    _arch("9.0", "Hopper", 128, 64, 32, 228, 227, tf32_fma_per_sm_clk=1024),
    _arch("10.0", "Blackwell", 128, 64, 32, 228, 227),
    _arch("10.3", "Blackwell", 128, 64, 32, 228, 227),
    _arch("11.0", "Blackwell (Thor)", 128, 48, 24, 228, 227),
    _arch("12.0", "Blackwell", 128, 48, 24, 100, 99),
    _arch("12.1", "Blackwell", 128, 48, 24, 100, 99),
)
ARCHS: dict[str, Arch] = {a.sm: a for a in _ALL}  # "sm_90" -> Arch

# Where the TF32 rates come from: each architecture whitepaper's dense TF32 tensor-core TFLOP/s of
# its flagship, over 2 x SMs x boost clock
TF32_SOURCES = {
    "8.0": "NVIDIA A100 Tensor Core GPU Architecture: A100, 156 TFLOP/s, 108 SMs, 1410 MHz",
    "8.6": "NVIDIA Ampere GA102 GPU Architecture: RTX 3090, 35.6 TFLOP/s, 82 SMs, 1695 MHz",
    "8.9": "NVIDIA Ada GPU Architecture: RTX 4090, 82.6 TFLOP/s, 128 SMs, 2520 MHz",
    "9.0": "NVIDIA H100 Tensor Core GPU Architecture: H100 SXM5, 494.7 TFLOP/s, 132 SMs, 1830 MHz",
}
TF32_FROM = 80  # no TF32 tensor cores before sm_80


def has_tf32(cc) -> bool:
    """Whether compute capability ``cc`` ("9.0", "sm_90", 90) has TF32 tensor cores (sm_80 on)."""
    n = _number(cc)
    return n is not None and n >= TF32_FROM


# FP32 lanes per SM of capabilities with no full entry above (see the module docstring).
LANES_ONLY: dict[str, int] = {
    "3.0": 192, "3.2": 192, "3.5": 192, "3.7": 192,  # Kepler
    "5.0": 128, "5.2": 128, "5.3": 128,  # Maxwell
    "6.0": 64, "6.1": 128, "6.2": 128,  # Pascal
    "7.0": 64, "7.2": 64,  # Volta
    "10.1": 128,  # Thor under CUDA 12 (sm_110 since CUDA 13)
}

_SM = re.compile(r"sm_([0-9]+)", re.ASCII)
_DIGITS = re.compile(r"(?:sm_)?([0-9]+)", re.ASCII)
_CC = re.compile(r"([0-9]+)\.([0-9])", re.ASCII)


def _number(x) -> int | None:
    """90 for "sm_90", "9.0", "90" or 90; None when ``x`` is none of those forms."""
    if isinstance(x, Arch):
        return x.number
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    if not isinstance(x, str):
        return None
    s = x.strip().lower()
    m = _CC.fullmatch(s)
    if m:
        return int(m.group(1)) * 10 + int(m.group(2))
    m = _DIGITS.fullmatch(s)
    return int(m.group(1)) if m else None


def _known() -> str:
    return ", ".join(ARCHS)


def get(x) -> Arch:
    """The entry for ``x``: "sm_90", "9.0", "90" or 90 (an ``Arch`` is returned as it is).

    Anything else, or an architecture the table does not hold, is an ``InputError`` that names
    it and lists the known ones.
    """
    if isinstance(x, Arch):
        return x
    n = _number(x)
    hit = ARCHS.get(f"sm_{n}") if n is not None else None
    if hit is None:
        raise InputError(f"unknown architecture {x!r}: no limits on record (known: {_known()})")
    return hit


def parse_sm(text: str) -> str:
    """An ``--arch`` value checked: ASCII ``sm_`` and ASCII digits, naming an entry of the table.

    Returns the canonical name ("sm_90"); anything else is an ``InputError`` in one line.
    """
    s = text.strip() if isinstance(text, str) else text
    if not isinstance(s, str) or not _SM.fullmatch(s):
        raise InputError(f"--arch must look like sm_90 (ASCII digits); got {text!r} (known: {_known()})")
    return get(s).sm


def cc_of(x) -> str:
    """The compute capability "9.0" of "sm_90", 90, "90" or "9.0" (no table lookup)."""
    n = _number(x)
    if n is None or n < 10:
        raise InputError(f"{x!r} is not a compute capability or an sm_XX name")
    return f"{n // 10}.{n % 10}"


def fp32_lanes(cc) -> int:
    """FP32 lanes per SM of compute capability ``cc`` ("9.0", "sm_90", 90): from the full table,
    else from the lanes-only entries; an unknown one is an ``InputError`` naming it."""
    n = _number(cc)
    full = ARCHS.get(f"sm_{n}") if n is not None else None
    if full is not None:
        return full.fp32_lanes_per_sm
    key = f"{n // 10}.{n % 10}" if n is not None and n >= 10 else None
    if key in LANES_ONLY:
        return LANES_ONLY[key]
    known = sorted({a.cc for a in _ALL} | set(LANES_ONLY), key=lambda c: tuple(map(int, c.split("."))))
    raise InputError(
        f"unknown compute capability {cc!r}: no FP32 lanes per SM on record (known: {', '.join(known)})"
    )


def of_device(index: int = 0) -> Arch:
    """The entry for CUDA device ``index`` (its capability read through torch)."""
    import torch

    if not torch.cuda.is_available():
        raise InputError("no CUDA device is visible: its architecture cannot be read")
    major, minor = torch.cuda.get_device_capability(index)
    return get(f"{major}.{minor}")
