"""Theoretical occupancy: resident blocks per SM as each resource allows, from the arch table.

The arithmetic is CUDA's occupancy calculator's: warps per block against the SM's resident
warps; registers allocated per warp in units of ``reg_granularity``, each of the SM's
``sub_partitions`` holding whole warps; shared memory per block (the kernel's own plus the
driver's per-block reservation) rounded up to ``smem_granularity``; and the resident-block
cap. Every limit is read from :mod:`study.arch`, so any architecture in that table gets a
number and any other is an ``InputError``.
"""

from __future__ import annotations

from study import arch as arches
from study.errors import InputError


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy_limits(regs: int, smem_per_block: int, threads: int, arch="sm_90") -> dict:
    """Resident blocks per SM allowed by each resource, following CUDA's occupancy calculator.

    ``smem_per_block`` is the kernel's own shared memory (static + dynamic, as ptxas / Triton
    report it); the per-block reservation is added here. The largest shared-memory carveout is
    assumed (the driver picks it when the kernel needs it). ``arch``: anything
    :func:`study.arch.get` takes.
    """
    lim = arches.get(arch)
    if threads < 1 or regs < 0 or smem_per_block < 0:
        raise InputError(
            f"occupancy needs threads >= 1, regs >= 0, smem >= 0; got {threads}, {regs}, {smem_per_block}"
        )
    warps = -(-threads // 32)
    if threads > lim.max_threads_per_block:
        by_warps = 0
    else:
        by_warps = lim.max_warps_per_sm // warps
    reg_warp = _round_up(regs * 32, lim.reg_granularity)
    if (regs > lim.max_regs_per_thread
            or reg_warp * _round_up(warps, lim.sub_partitions) > lim.max_regs_per_block):
        by_regs = 0
    elif reg_warp == 0:
        by_regs = lim.max_blocks_per_sm
    else:
        per_sub = (lim.regs_per_sm // lim.sub_partitions) // reg_warp
        by_regs = per_sub * lim.sub_partitions // warps
    smem = _round_up(smem_per_block + lim.smem_reserved_per_block, lim.smem_granularity)
    if smem_per_block > lim.smem_per_block:
        by_smem = 0
    else:
        by_smem = lim.smem_per_sm // smem if smem else lim.max_blocks_per_sm
    blocks = min(by_warps, by_regs, by_smem, lim.max_blocks_per_sm)
    limiter = [n for n, v in (("warps", by_warps), ("registers", by_regs), ("shared memory", by_smem),
                              ("blocks", lim.max_blocks_per_sm)) if v == blocks]
    return {
        "blocks": blocks, "warps_per_block": warps, "warps": blocks * warps,
        "max_warps": lim.max_warps_per_sm,
        "by_warps": by_warps, "by_registers": by_regs, "by_smem": by_smem, "by_blocks": lim.max_blocks_per_sm,
        "limited_by": ", ".join(limiter),
        "occupancy_pct": 100.0 * blocks * warps / lim.max_warps_per_sm,
    }


def theoretical_occupancy(regs: int, smem_per_block: int, threads: int, arch="sm_90") -> float:
    """Theoretical occupancy in percent (resident warps ÷ max warps per SM)."""
    return occupancy_limits(regs, smem_per_block, threads, arch)["occupancy_pct"]
