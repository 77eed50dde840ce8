"""Provenance: the GPU, clocks, peaks (the datasheet DRAM peak beside the bandwidth roofs measured
when the run started, `docs/method.md#bandwidth-roof`), versions, commit and rows the report comes
from."""

from __future__ import annotations

import pandas as pd

from study.report.load import Run
from study.report.md import gpu_name, num, prov

NOT_MEASURED = "not measured in this run"


def roofs_text(g) -> str:
    """The measured read and copy bandwidth of ``g`` as the Peaks line shows them; "not measured in
    this run" where gpu.json records none."""
    if not g.read_gbps:
        return f"measured read bandwidth {NOT_MEASURED}"
    text = f"measured read {g.read_gbps:,.1f} GB/s"
    if g.read_p20_gbps and g.read_p80_gbps:
        text += f" (p20–p80 {num(g.read_p20_gbps, '{:,.1f}')}–{num(g.read_p80_gbps, '{:,.1f}')})"
    text += f", copy {g.copy_gbps:,.1f} GB/s (read + write)" if g.copy_gbps else f", copy {NOT_MEASURED}"
    if g.roof_buffer_bytes:
        text += f", over a {g.roof_buffer_bytes / 2**30:.2f} GiB buffer"
    return text


def boards_text(run: Run) -> str:
    """The boards (device UUIDs) the results rows were timed on, where the rows record them: one,
    or how many and which rows each timed (a run resumed on another machine)."""
    if "board" not in run.results.columns:
        return ""
    boards = run.results["board"].dropna().astype(str).str.strip()
    counts = boards[boards.ne("") & boards.ne("nan")].value_counts()
    if counts.empty:
        return ""
    if len(counts) == 1:
        return f"; board {counts.index[0]}"
    return f"; {len(counts)} boards: " + ", ".join(f"{b} ({n} rows)" for b, n in counts.items())


def section_provenance(run: Run, measured: bool) -> list[str]:
    g = run.gpu
    stamps = sorted(str(t) for t in run.results.get("timestamp", pd.Series(dtype=str)).dropna())
    when = (
        (stamps[0] if stamps[0] == stamps[-1] else f"{stamps[0]} to {stamps[-1]}")
        if stamps
        else "not recorded"
    )
    status = (
        "measured: the rows below were timed in this run"
        if measured
        else "re-rendered from recorded rows: nothing was measured while writing this report"
    )
    lines = [
        f"- **Status:** {status}.",
        f"- **GPU:** {gpu_name(run)}"
        + (f", compute capability {g.cc}" if g and g.cc else "")
        + (f", {g.sms} SMs × {g.fp32_lanes_per_sm} FP32 lanes" if g else "")
        + ".",
    ]
    if g is not None:
        sampled = g.sampled_sm_clock_mhz
        lines += [
            f"- **Clocks:** max SM clock {g.sm_clock_mhz:.0f} MHz (device-reported; main caliber)"
            + (
                f", sampled median {sampled:.0f} MHz (NVML during the timings)"
                if sampled
                else ", no sampled clock recorded"
            )
            + f"; memory clock {g.mem_clock_mhz:.0f} MHz, {g.bus_width_bits}-bit bus.",
            f"- **Peaks:** FP32 {g.peak_gflops:,.0f} GFLOP/s at the max clock"
            + (f", {g.peak_gflops_sampled:,.0f} GFLOP/s at the sampled clock" if sampled else "")
            + f"; DRAM {g.dram_gbps:,.1f} GB/s datasheet, {roofs_text(g)}"
            + f"; cadence floor {g.cadence_floor:.3g} cycles per warp-FMA per SM"
            + (f"; L2 {g.l2_bytes / 2**20:.0f} MiB." if g.l2_bytes else "; L2 size not recorded."),
            f"- **GPU constants from:** {run.gpu_source}.",
        ]
    else:
        lines.append(
            f"- **GPU constants:** {run.gpu_source}; % of peak, cadence and roofs cannot be computed."
        )
    versions = ", ".join(
        f"{name} {prov(run, col) or '?'}"
        for name, col in (("torch", "torch"), ("Triton", "triton"), ("CUDA", "cuda"), ("driver", "driver"))
    )
    lines += [
        f"- **Versions:** {versions}.",
        f"- **Commit:** `{prov(run, 'commit') or 'not recorded'}`; "
        f"host {prov(run, 'host') or 'not recorded'}{boards_text(run)}.",
        f"- **Run id:** {prov(run, 'run_id') or 'not recorded'}; rows recorded {when}.",
        f"- **Rows:** {len(run.results)} in data/results.csv ({len(run.measured)} timed).",
    ]
    absent = list(run.missing.values())
    if absent:
        lines += ["", "Inputs absent or unusable (their sections say so): " + "; ".join(absent) + "."]
    return lines + [""]
