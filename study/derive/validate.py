"""Checks on recorded rows before any arithmetic: a row that would give a wrong number is refused.

Each refusal is one InputError line naming the row (its line in the CSV), the value and the rule.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from study import experiments
from study import kernels as registry
from study.derive import ledgers
from study.errors import InputError

# no timing of this project lasts a day: a larger value is a unit mistake or garbage
MAX_MS = 86_400_000.0


def _line(i: int) -> str:
    return f"line {i + 2}"  # the header is line 1


def check_rows(rows: pd.DataFrame, gpu, where: str) -> None:
    """Refuse ``rows`` (a results table) if any row could give a wrong number.

    Rules: known kernel ids; positive whole dimensions within 32 bits; a leading dimension
    (``ld``, where a row has one: padded operands) that is a whole number no shorter than a row of
    A, B or C (at least K and N), for a kernel that takes padded operands; a shape the kernel accepts;
    one row per (experiment, label, pass, kernel, M, N, K) (per (kernel, M, N, K) without experiments);
    a time that is finite, positive and at most a day; no time faster than the GPU's FP32 peak;
    a row without a time only where the kernel failed its check (a ``rel_err`` above the tolerance,
    or NaN: a NaN output).
    """
    for col in ("kernel", "M", "N", "K", "ms"):
        if col not in rows.columns:
            raise InputError(f"{where}: missing column {col!r}")
    if rows.empty:
        raise InputError(f"{where}: no rows")
    kernel = rows["kernel"].astype(str)
    unknown = sorted(set(kernel) - set(registry.IDS))
    if unknown:
        raise InputError(
            f"{where}: unknown kernel id(s) {', '.join(unknown)}; known: {', '.join(registry.IDS)}"
        )
    dims = {}
    for d in "MNK":
        v = pd.to_numeric(rows[d], errors="coerce")
        bad = ~(v >= 1) | (v != v.round()) | (v > ledgers.MAX_DIM)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(
                f"{where} {_line(i)}: {d} of {kernel.iat[i]} must be a whole number from 1 to "
                f"{ledgers.MAX_DIM}, got {ledgers.plain(rows[d].iat[i])}"
            )
        dims[d] = v.astype("int64")
    if "ld" in rows.columns:
        text = rows["ld"].astype(str).str.strip()
        given = ~(rows["ld"].isna() | text.isin(["", "nan"]))
        ld = pd.to_numeric(rows["ld"], errors="coerce")
        row_len = np.maximum(dims["N"], dims["K"])
        bad = given & (~(ld >= row_len) | (ld != ld.round()) | (ld > ledgers.MAX_DIM))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(
                f"{where} {_line(i)}: ld of {kernel.iat[i]} must be a whole number from max(N, K) = "
                f"{max(dims['N'].iat[i], dims['K'].iat[i])} to {ledgers.MAX_DIM}, "
                f"got {ledgers.plain(rows['ld'].iat[i])}"
            )
        for i in np.flatnonzero(given.to_numpy()):
            shape = (int(dims["M"].iat[i]), int(dims["N"].iat[i]), int(dims["K"].iat[i]))
            point = experiments.Point("", "", *shape, int(ld.iat[i]))
            why = experiments.refusal(registry.get(kernel.iat[i]), point)
            if why:
                raise InputError(f"{where} {_line(i)}: {why}: a row it cannot have been measured for")
    for i in range(len(rows)):
        err = registry.get(kernel.iat[i]).constraint_error(
            int(dims["M"].iat[i]), int(dims["N"].iat[i]), int(dims["K"].iat[i])
        )
        if err:
            raise InputError(f"{where} {_line(i)}: {err}")
    key = [c for c in ("experiment", "label", "pass") if c in rows.columns]
    keyed = pd.DataFrame({**{c: rows[c].astype(str) for c in key}, "kernel": kernel, **dims})
    dup = keyed.duplicated(keep="first")
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        first = int(np.flatnonzero((keyed == keyed.iloc[i]).all(axis=1).to_numpy())[0])
        what = ", ".join(f"{c} {keyed[c].iat[i]}" for c in key)
        raise InputError(
            f"{where} {_line(i)}: a second row for {kernel.iat[i]} at "
            f"{ledgers.shape_str(dims['M'].iat[i], dims['N'].iat[i], dims['K'].iat[i])}"
            + (f" ({what})" if what else "")
            + f" (the first is {_line(first)}): one row per measurement"
        )
    text = rows["ms"].astype(str).str.strip()
    blank = rows["ms"].isna() | (text == "") | (text.str.lower() == "nan")
    ms = pd.to_numeric(rows["ms"], errors="coerce")
    rel = pd.to_numeric(rows["rel_err"], errors="coerce") if "rel_err" in rows.columns else None
    peak = gpu.peak_gflops()
    # a tensor-core kernel (registry.TENSOR_CORE) is bound by the TF32 tensor-core peak instead
    on_tc = {k.id for k in registry.TENSOR_CORE}
    for i in range(len(rows)):
        k, shape = kernel.iat[i], (int(dims["M"].iat[i]), int(dims["N"].iat[i]), int(dims["K"].iat[i]))
        at = f"{where} {_line(i)}: {k} at {ledgers.shape_str(*shape)}"
        if blank.iat[i]:
            if rel is None:  # nothing says the kernel failed its check: the time is missing
                raise InputError(
                    f"{at}: no time, and no rel_err column saying the check refused it: the row is incomplete"
                )
            if rel.iat[i] <= experiments.TOLERANCE:
                raise InputError(
                    f"{at} passed its check (rel_err {rel.iat[i]:.1e}) but has no time: the row is incomplete"
                )
            continue
        t = ms.iat[i]
        if not (math.isfinite(t) and 0 < t <= MAX_MS):
            raise InputError(
                f"{at}: the time must be a positive number of ms up to {MAX_MS:.0f} "
                f"(a day), got {ledgers.plain(rows['ms'].iat[i])}"
            )
        speed = ledgers.gflops(*shape, t)
        limit, what = (gpu.tf32_peak_gflops(), "TF32 tensor-core") if k in on_tc else (peak, "FP32")
        if speed > limit:
            raise InputError(
                f"{at}: {t:g} ms is {speed:,.0f} GFLOP/s, above the {what} peak of the {gpu.name} "
                f"({limit:,.0f} GFLOP/s at {gpu.sm_clock_mhz:.0f} MHz): not a possible time"
            )
