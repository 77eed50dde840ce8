"""``python -m study.predict --compare A,B --shape M,N,K``: two kernels' main loops side by side,
and what each difference costs in the model.

Per FFMA of each main loop, from the SASS: instructions, stall cycles, reuse flags, the extra
same-bank register reads the model charges (under its constants' bank rule), the L1 /
shared-memory unit's cycles, and the distance in instructions from each shared load to the first
instruction that reads its result (the fewest and the median). Then each kernel predicted with
the full model and with one cost switched off at a time (register banks; the shared-load
latency), so that the gap between the two is split into what each rule puts on it. The
switched-off rows are the model's account, not a measurement: a probe on the GPU says whether the
rule holds (``study.bank_probe`` for the banks).
"""

from __future__ import annotations

import dataclasses
import statistics

from study.predict import issue, model

VARIANTS = {
    "full model": {},
    "register banks free": {"bank_cycles": 0},
    "shared-load latency 0": {"lds_latency": 0},
}


def _regs(text: str) -> set[str]:
    return {t.strip().split(".")[0].lstrip("-|!") for t in text.split(",")}


def lds_distances(body: list) -> list[int]:
    """For each shared load of the loop, the instructions until the first one that reads one of
    the registers it writes (within the loop body, in order)."""
    out = []
    for n, ins in enumerate(body):
        if ins.base != "LDS" or ins.pred == "@!PT":
            continue
        dest = ins.operands.split(",")[0].strip().split(".")[0]
        if not dest.startswith("R") or dest == "RZ":
            continue
        first = int(dest[1:])
        written = {f"R{first + j}" for j in range(max(1, ins.width // 32))}
        for m in range(n + 1, len(body)):
            if written & _regs(body[m].operands.split(",", 1)[1] if "," in body[m].operands else ""):
                out.append(m - n)
                break
    return out


def loop_facts(body: list, l1_cycles: list, c: issue.Constants = issue.DEFAULT) -> dict:
    """The per-FFMA figures of a main loop (see the module docstring); the extra bank reads as
    ``c`` counts them."""
    from study.toolchain import sass

    ffma = sum(1 for i in body if i.base == "FFMA")
    d = lds_distances(body)
    s = sass.schedule(body)
    return {
        "instructions_per_ffma": len(body) / ffma,
        "stall_cycles_per_ffma": s["loop_stall_cycles"] / ffma,
        "reuse_flags_per_ffma": s["loop_reuse"] / ffma,
        "bank_extra_reads_per_ffma": sass.bank_conflicts(body, c.banks, c.bank_rule) / ffma,
        "unit_cycles_per_ffma": sum(c or 0 for c in l1_cycles) / ffma,
        "lds_to_use_min": min(d) if d else None,
        "lds_to_use_median": statistics.median(d) if d else None,
    }


def compare(loaded: dict, shape, gpu, arch: str) -> list[dict]:
    """``loaded``: kernel name -> ((body, l1_cycles), launch). One row per kernel and variant."""
    rows = []
    for name, ((body, cycles), launch) in loaded.items():
        facts = loop_facts(body, cycles, issue.constants_for(gpu.name))
        for variant, change in VARIANTS.items():
            c = dataclasses.replace(issue.constants_for(gpu.name), **change)
            p = model.predict(body, launch, shape, gpu, arch, c=c, l1_cycles=cycles)
            rows.append({"kernel": name, "variant": variant, "ms": p["ms"], "issue_pct": p["issue_pct"],
                         "bound": p["bound"], **facts})
    return rows


def lines(rows: list[dict]) -> list[str]:
    """The rows as text: the loops' figures once per kernel, then each variant's time, and the
    ratio of the first kernel's time to the second's under each variant."""
    out = []
    seen = set()
    for r in rows:
        if r["kernel"] not in seen:
            seen.add(r["kernel"])
            lds = ("-" if r["lds_to_use_min"] is None
                   else f"{r['lds_to_use_min']} / {r['lds_to_use_median']:g}")
            out.append(f"{r['kernel']}: per FFMA {r['instructions_per_ffma']:.3f} instructions, "
                       f"{r['stall_cycles_per_ffma']:.3f} stall cycles, {r['reuse_flags_per_ffma']:.3f} "
                       f"reuse flags, {r['bank_extra_reads_per_ffma']:.3f} extra bank reads, "
                       f"{r['unit_cycles_per_ffma']:.3f} L1/shared cycles; shared load to first use "
                       f"(fewest / median instructions) {lds}")
    names = list(dict.fromkeys(r["kernel"] for r in rows))
    for variant in VARIANTS:
        at = {r["kernel"]: r for r in rows if r["variant"] == variant}
        parts = [f"{n} {at[n]['ms']:.3f} ms (issue {at[n]['issue_pct']:.1f}%)" for n in names]
        ratio = f"; {names[0]} / {names[1]} time {at[names[0]]['ms'] / at[names[1]]['ms']:.3f}" \
            if len(names) == 2 else ""
        out.append(f"{variant}: " + ", ".join(parts) + ratio)
    return out
