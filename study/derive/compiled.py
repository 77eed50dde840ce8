"""Counted vs compiled: the registry's counted loads per FMA beside the SASS main loop's.

Arithmetic over two recorded things, the SASS table (:func:`study.toolchain.table.sass_table`,
or its ``sass.csv``) and the counts in :mod:`study.kernels`: nothing is compiled here. Where
the two differ by more than ``TOLERANCE`` the row is flagged and the loop histogram says why
(vectorised loads, values reused from registers, re-loads under register pressure).
"""

from __future__ import annotations

import math

from study import kernels as registry

TOLERANCE = 0.10


def _disagree(counted: float, compiled: float) -> bool:
    if counted == 0:
        return compiled != 0
    return abs(compiled / counted - 1.0) > TOLERANCE


def _explain_lds(c, r) -> str:
    """Why the loop's shared loads differ from the count, read off the loop histogram."""
    ksteps = r["loop_FFMA"] / c.fma_per_k
    counted = (c.lds_dist + c.lds_bcast) * ksteps  # counted load instructions in the loop body
    compiled = r["loop_LDS"]
    narrow = {32: r["loop_LDS32"], 64: r["loop_LDS64"], 128: r["loop_LDS128"]}
    if compiled < counted:
        wider = {w: n for w, n in narrow.items() if w > c.lds_bits and n > 0}
        if wider:
            kept = narrow.get(c.lds_bits, 0)
            merged = counted - kept
            parts = " + ".join(f"{int(n)} LDS.{w}" for w, n in sorted(wider.items(), reverse=True))
            words = sum(n * w // c.lds_bits for w, n in wider.items())
            which = "broadcast loads" if merged == c.lds_bcast * ksteps else "loads"
            txt = (f"the compiler vectorised shared loads: {merged:.0f} of the {counted:.0f} counted "
                   f"{c.lds_bits}-bit {which} in the loop became {parts}")
            if words > merged:
                txt += f" ({words - merged:.0f} of the fetched values unused)"
            elif words < merged:
                txt += f" and {merged - words:.0f} values were reused from registers"
            return txt
        return (f"the loop issues {compiled:.0f} shared loads where {counted:.0f} were counted: "
                "the compiler reused values from registers")
    spill = r.get("loop_LDL", 0) or 0
    why = " (register spills in the loop)" if spill else " (re-loads under register pressure)"
    return f"the loop issues {compiled:.0f} shared loads where {counted:.0f} were counted{why}"


def _explain_ldg(c, r) -> str:
    counted = c.ldg_per_phase / c.fma_per_phase * r["loop_FFMA"]
    compiled = r["loop_LDG"] + (r.get("loop_LDGSTS", 0) or 0)  # cp.async copies are global loads too
    if compiled == 0 and counted > 0:
        return "the main loop holds no global loads (they sit outside the loop found)"
    wide = {w: int(r.get(f"loop_LDG{w}", 0) or 0) for w in (256, 128, 64)}
    if compiled < counted and any(n for w, n in wide.items() if w > c.ldg_bits):
        parts = [f"{n} LDG.{w}" for w, n in wide.items() if n] + [f"{int(r['loop_LDG32'])} LDG.32"]
        return (f"the compiler vectorised global loads: {counted:.0f} counted {c.ldg_bits}-bit loads "
                f"became {' + '.join(parts)}")
    return f"the loop issues {compiled:.0f} global loads where {counted:.0f} were counted"


def counted_vs_compiled(sass_df, kernels=None):
    """Per CUDA kernel: the registry's counted loads per FMA beside the SASS main-loop ratios.

    counted_lds_per_fma = (dist + bcast) per FMA; counted_ldg_per_fma = ldg. The SASS side is
    loop_LDS / loop_FFMA and loop_LDG / loop_FFMA (instructions of any width). ``flag`` is True
    where either pair differs by more than 10%; ``explanation`` says why, from the histogram.
    """
    import pandas as pd

    ks = {k.id: k for k in registry.resolve(kernels) if k.impl == "cuda" and k.counted is not None}
    rows = []
    for _, r in sass_df.iterrows():
        k = ks.get(r["kernel"])
        if k is None:
            continue
        c = k.counted
        row = {
            "kernel": k.id,
            "counted_lds_per_fma": (c.lds_dist + c.lds_bcast) / c.fma_per_k,
            "counted_lds_bits": c.lds_bits,
            "sass_lds_per_fma": r.get("loop_lds_per_ffma", math.nan),
            "counted_ldg_per_fma": c.ldg_per_phase / c.fma_per_phase,
            "counted_ldg_bits": c.ldg_bits,
            "sass_ldg_per_fma": r.get("loop_ldg_per_ffma", math.nan),
            "loop_FFMA": r.get("loop_FFMA", math.nan),
            "loop_LDS32": r.get("loop_LDS32", math.nan),
            "loop_LDS128": r.get("loop_LDS128", math.nan),
            "loop_LDG32": r.get("loop_LDG32", math.nan),
            "loop_LDG128": r.get("loop_LDG128", math.nan),
        }
        err = r.get("error")
        err = err if isinstance(err, str) else ""  # a table read back from CSV has NaN for no error
        ffma = r.get("loop_FFMA")
        if err or not ffma or (isinstance(ffma, float) and math.isnan(ffma)):
            row.update(lds_ratio=math.nan, ldg_ratio=math.nan, flag=False,
                       explanation=f"no SASS: {err}" if err else "no main loop with FFMA found")
            rows.append(row)
            continue
        notes = []
        bad_lds = _disagree(row["counted_lds_per_fma"], row["sass_lds_per_fma"])
        bad_ldg = _disagree(row["counted_ldg_per_fma"], row["sass_ldg_per_fma"])
        if bad_lds:
            notes.append(_explain_lds(c, r))
        if bad_ldg:
            notes.append(_explain_ldg(c, r))
        for key, cnt, sass in (("lds_ratio", row["counted_lds_per_fma"], row["sass_lds_per_fma"]),
                               ("ldg_ratio", row["counted_ldg_per_fma"], row["sass_ldg_per_fma"])):
            row[key] = sass / cnt if cnt else math.nan
        row["flag"] = bad_lds or bad_ldg
        row["explanation"] = "; ".join(notes) if notes else "SASS matches the count (within 10%)"
        rows.append(row)
    return pd.DataFrame(rows)
