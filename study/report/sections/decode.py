"""The decode panel (`docs/method.md#decode-panel`): KD against the best vendor kernel at LLM
projection shapes and small M, and the time of a call with the host in it. Renders
decode_summary.csv and decode_findings.csv; computes nothing. A run without the panel has no
such section (``None``)."""

from __future__ import annotations

from study.report.figures import figref, in_run
from study.report.load import Run
from study.report.md import findings, md, missing, num

SUMMARY, FINDINGS = "decode_summary", "decode_findings"
UNITS = {"×": "{:.3f}×", "points": "{:.0f}", "s": "{:.0f} s", "µs": "{:.1f} µs"}


def section_decode(run: Run) -> list[str] | None:
    if not (in_run(run, SUMMARY) or in_run(run, FINDINGS)):
        return None
    s = run.tables.get(SUMMARY)
    if s is None:
        return missing("the decode panel", run.missing.get(SUMMARY, "decode_summary.csv has no rows"))
    shapes = len(dict.fromkeys(s["shape"].astype(str)))
    ms = ", ".join(str(int(m)) for m in sorted(set(s["M"].dropna())))
    lines = [
        f"`python -m study.decode`: {shapes} LLM projections (N×K, B is K×N) at M = {ms}. Times are "
        "medians of CUDA events with the L2 flushed before each repetition (GPU µs); the speed-up is "
        "the best vendor kernel's time (the faster of K0 and K0L) over KD's; % of the read roof is "
        "the time to read B's bytes with the read roof's reduction over KD's time "
        "(`docs/method.md#decode-panel`).",
        "",
    ]
    lines += findings(run, FINDINGS, "the decode panel's findings", UNITS)
    rows = [[r.shape, f"{int(r.N)}×{int(r.K)}", int(r.M), num(r.kd_us), num(r.vendor_us),
             r.vendor if isinstance(r.vendor, str) and r.vendor else "–", num(r.speedup, "{:.3f}×"),
             num(r.speedup_k0, "{:.3f}×"), num(r.speedup_k0l, "{:.3f}×"), num(r.read_us),
             num(r.pct_read_roof, "{:.1f}%"), r.fastest if isinstance(r.fastest, str) and r.fastest else "–"]
            for r in s.itertuples()]
    lines += md(["shape", "N×K", "M", "KD µs", "best vendor µs", "vendor", "KD speed-up", "over K0",
                 "over K0L", "read roof µs", "% of read roof", "fastest"], rows)
    lines += [
        "Per call, the GPU time beside the host's cost of a call and the end-to-end time per call "
        "(wall time of 200 back-to-back calls on the same operands, synchronised at the end: host "
        "included, no flush). The host's cost comes from the host pass, a process that times "
        "nothing else: wall time per call of the median batch of calls enqueued while the device is "
        "held, the median of the passes (OP's slowest pass beside it); KD through the registry's "
        "launcher, OP the operator `sgemm_ledgers.mm`, K0 `torch.matmul`.",
        "",
    ]
    calls = [[r.shape, int(r.M), *(num(getattr(r, c)) for c in (
        "kd_us", "kd_host_us", "kd_e2e_us", "op_us", "op_host_us", "op_host_max_us", "op_e2e_us", "k0_us",
        "k0_host_us", "k0_e2e_us"))] for r in s.itertuples()]
    lines += md(["shape", "M", "KD GPU µs", "KD host µs", "KD end-to-end µs", "OP GPU µs", "OP host µs",
                 "OP host µs, slowest pass", "OP end-to-end µs", "K0 GPU µs", "K0 host µs",
                 "K0 end-to-end µs"], calls)
    return lines + figref(run, "decode")
