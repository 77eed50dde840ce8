"""Theoretical occupancy from a kernel's registers, shared memory and threads, per architecture
(``study.toolchain.occupancy`` over the arch table): the 4090 report's figures and the H200's
cases, worked by hand. CPU only."""

import math

import pytest

from study.errors import InputError
from study.toolchain import occupancy


def test_occupancy_register_limited_sm89():
    # 128 threads x 128 regs: 65536 / (128 * 128) = 4 blocks = 16 warps of 48
    assert occupancy.theoretical_occupancy(128, 0, 128, "sm_89") == pytest.approx(100 * 16 / 48)


def test_occupancy_reproduces_the_4090_report():
    # K5 on the 4090: 20 KB smem + 1 KB reserved -> 102400 // 21504 = 4 blocks -> 33.3%
    lim = occupancy.occupancy_limits(64, 20480, 128, "sm_89")
    assert (lim["blocks"], lim["limited_by"]) == (4, "shared memory")
    assert lim["occupancy_pct"] == pytest.approx(33.333, abs=1e-3)
    # K4 on the 4090 had 75%: 9 blocks of 4 warps. That needs 49..56 registers
    # (56 * 32 = 1792 per warp, 16384 // 1792 = 9 warps per scheduler); 57 gives 8 blocks.
    for regs, pct in ((48, 83.333), (49, 75.0), (56, 75.0), (57, 66.667)):
        assert occupancy.theoretical_occupancy(regs, 8192, 128, "sm_89") == pytest.approx(pct, abs=1e-3), regs


def test_occupancy_sm90_cases():
    assert occupancy.theoretical_occupancy(32, 0, 1024, "sm_90") == 100.0  # 2 blocks of 32 warps
    assert occupancy.theoretical_occupancy(40, 8192, 1024, 90) == 50.0  # 40 regs: 1 block of 1024
    # 72 regs -> 2304 per warp -> 7 warps per scheduler -> 28 warps -> 7 blocks of 4 warps
    assert occupancy.theoretical_occupancy(72, 20480, 128, "sm_90") == pytest.approx(43.75)
    # shared memory: 100 KB + 1 KB reserved -> 228 KB holds 2 blocks
    assert occupancy.occupancy_limits(32, 100 * 1024, 128, "sm_90")["by_smem"] == 2
    assert occupancy.theoretical_occupancy(32, 228 * 1024, 128, "sm_90") == 0.0  # over 227 KB per block
    assert occupancy.theoretical_occupancy(256, 0, 128, "sm_90") == 0.0  # over 255 regs per thread
    assert occupancy.theoretical_occupancy(32, 0, 2048, "sm_90") == 0.0  # over 1024 threads per block
    assert occupancy.theoretical_occupancy(16, 0, 32, "sm_90") == 50.0  # block limit: 32 blocks x 1 warp
    assert occupancy.theoretical_occupancy(16, 0, 32, "sm_86") == pytest.approx(100 * 16 / 48)


def test_occupancy_blackwell_is_computed_from_the_arch_table():
    # 128 threads (4 warps), 64 registers, 16 KB of shared memory, worked by hand:
    warps_per_block, regs_per_warp = 128 // 32, 64 * 32  # 2048: a multiple of 256 already
    per_scheduler = (65536 // 4) // regs_per_warp  # 8 warps on each of the 4 schedulers
    by_regs = per_scheduler * 4 // warps_per_block  # 8 blocks
    smem = 16 * 1024 + 1024  # + the 1 KB reservation; 17408 is a multiple of 128
    # sm_120: 48 warps, 24 blocks, 100 KB per SM
    by_warps, by_smem = 48 // warps_per_block, (100 * 1024) // smem  # 12, 5
    blocks = min(by_warps, by_regs, by_smem, 24)
    lim = occupancy.occupancy_limits(64, 16 * 1024, 128, "sm_120")
    assert (blocks, lim["blocks"], lim["limited_by"]) == (5, 5, "shared memory")
    assert lim["occupancy_pct"] == pytest.approx(100 * 5 * 4 / 48)
    # sm_100: 64 warps, 32 blocks, 228 KB per SM -> 16, 8, 13: registers decide
    blocks = min(64 // warps_per_block, by_regs, (228 * 1024) // smem, 32)
    lim = occupancy.occupancy_limits(64, 16 * 1024, 128, "sm_100")
    assert (blocks, lim["blocks"], lim["limited_by"]) == (8, 8, "registers")
    assert lim["occupancy_pct"] == 50.0
    for sm in ("sm_103", "sm_110", "sm_121", "sm_87", "sm_80"):
        assert not math.isnan(occupancy.theoretical_occupancy(64, 16 * 1024, 128, sm)), sm


def test_occupancy_turing_has_no_reservation_and_256_byte_units():
    # 10800 B rounds up to 11008 in 256-byte units (128-byte units would give 10880, 6 blocks),
    # with no per-block reservation: 65536 // 11008 = 5 blocks of 4 warps, of 32 warps
    lim = occupancy.occupancy_limits(32, 10800, 128, "sm_75")
    assert (lim["by_smem"], lim["blocks"], lim["limited_by"]) == (5, 5, "shared memory")
    assert lim["occupancy_pct"] == pytest.approx(100 * 20 / 32)
    assert occupancy.occupancy_limits(32, 64 * 1024, 128, "sm_75")["by_smem"] == 1  # all 64 KB


def test_occupancy_refuses_unknown_arch():
    with pytest.raises(InputError, match="unknown architecture 'sm_52'.*sm_90"):
        occupancy.theoretical_occupancy(32, 0, 128, "sm_52")
