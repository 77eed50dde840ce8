"""The experiments' derived tables (`docs/method.md#experiments`): E2 sizes and the step out of
the L2, E3 shapes with their bandwidth roof, E4 strides and the main loop's load widths behind
them, E6 the SM clock sampled during the main table's timings. Each takes the ledger table (or the
run's clock samples, or its SASS at the stride shapes) and returns a table.
"""

from __future__ import annotations

import math

import pandas as pd

from study import experiments
from study import kernels as registry
from study.derive import ledgers
from study.derive.selection import in_order, labels_in, main_rows, order, stride_labels
from study.rundata.rows import by_kernel, experiment_rows
from study.rundata.tables import T

NAN = math.nan

# ---------------------------------------------------------------------------------------------
# Experiments


STRIDE_COLUMNS = [*T.strides.columns]  # declared in study.rundata.tables


def strides(ledger: pd.DataFrame) -> pd.DataFrame:
    """Per kernel timed at both stride points (a: the power-of-two stride n = 4096, b: n = 4097): the
    two times, their ratio (b over a), the change in percent and the speed-up (a over b).
    ``at_other_shape`` marks a kernel measured at another shape than the rest (an aligned one). The
    uncoalesced request-ledger kernel carries its time ratio to the coalesced one (``pair``) at both
    points: what coalescing is worth with and without the power-of-two stride.

    Beside them (NaN where the run has no such row): (c) n = 4100, a multiple of 4 but not of 16,
    its shape and time, ``ratio_c`` its time over a's and ``ratio_c_b`` over b's; (d) n = 4097 on
    padded storage (rows ``ld_d`` elements apart), ``ratio_d`` its time over a's and ``ratio_d_b``
    over b's (below 1: the padding pays). ``why`` says why a kernel cannot run d
    (``experiments.refusal``: contiguous operands only), "" where it can."""
    la, lb = stride_labels()
    pc, pd_ = experiments.stride_extras()
    df = experiment_rows(ledger, "strides")
    a = by_kernel(df[df["label"].astype(str) == la])
    b = by_kernel(df[df["label"].astype(str) == lb])
    c = by_kernel(df[df["label"].astype(str) == pc.label])
    d = by_kernel(df[df["label"].astype(str) == pd_.label])
    both = sorted(set(a) & set(b), key=order)
    if not both:
        return pd.DataFrame(columns=STRIDE_COLUMNS)
    n_min = min(int(b[k].M) for k in both)
    # the request-ledger pair (uncoalesced, then coalesced): what coalescing is worth per stride
    pair = [k.id for k in registry.request_ledger_kernels()]
    first, second = (pair + ["", ""])[:2]
    rows = []
    for kid in both:
        ra, rb = a[kid], b[kid]
        ratio = rb["ms"] / ra["ms"]
        pair = second if kid == first and second in both else ""
        rc, rd = c.get(kid), d.get(kid)
        refused = experiments.refusal(registry.get(kid), pd_)
        rows.append(
            {
                "kernel": kid,
                "impl": ra["impl"],
                "M_a": ra.M,
                "N_a": ra.N,
                "K_a": ra.K,
                "ms_a": ra["ms"],
                "M_b": rb.M,
                "N_b": rb.N,
                "K_b": rb.K,
                "ms_b": rb["ms"],
                "ratio": ratio,
                "change_pct": (ratio - 1) * 100,
                "speedup": ra["ms"] / rb["ms"],
                "at_other_shape": int(rb.M) != n_min,
                "pair": pair,
                "pair_ratio_a": ra["ms"] / a[pair]["ms"] if pair else NAN,
                "pair_ratio_b": rb["ms"] / b[pair]["ms"] if pair else NAN,
                "M_c": rc.M if rc is not None else NAN,
                "N_c": rc.N if rc is not None else NAN,
                "K_c": rc.K if rc is not None else NAN,
                "ms_c": rc["ms"] if rc is not None else NAN,
                "ratio_c": rc["ms"] / ra["ms"] if rc is not None else NAN,
                "ratio_c_b": rc["ms"] / rb["ms"] if rc is not None else NAN,
                "ld_d": pd_.ld if rd is not None else NAN,
                "ms_d": rd["ms"] if rd is not None else NAN,
                "ratio_d": rd["ms"] / ra["ms"] if rd is not None else NAN,
                "ratio_d_b": rd["ms"] / rb["ms"] if rd is not None else NAN,
                "why": refused or "",
            }
        )
    return pd.DataFrame(rows, columns=STRIDE_COLUMNS)


SHAPE_COLUMNS = [*T.shapes.columns]  # declared in study.rundata.tables
# the bandwidth roof per shape (docs/method.md#bandwidth-roof): the kernel that moves the shape's
# bytes fastest, against the measured read roof and the datasheet DRAM peak
SHAPE_ROOF_COLUMNS = [
    "kernel", "fastest_ms", "bytes_once", "b_share", "b_dominates_at", "b_dominates", "gbps_once",
    "read_gbps", "pct_read_roof", "dram_gbps", "pct_dram_peak", "gflops", "pct_peak",
]
B_DOMINATES = 0.9  # a shape whose bytes are at least this share B: reading B sets its time


def shape_roof(rows: pd.DataFrame) -> dict:
    """The bandwidth roof at one shape (docs/method.md#shape-roof): of ``rows`` (ledger rows of one
    label), the one that moves its bytes fastest (highest ``gbps_once``; at one shape, the fastest
    kernel), its time, bytes, B's share of them, its % of the measured read roof (NaN when the
    run did not measure it) and of the datasheet DRAM peak, and its GFLOP/s and % of the FP32 peak
    (the ledger's ``gflops``, ``pct_peak``): the other roof, beside the byte one."""
    moved = pd.to_numeric(rows["gbps_once"], errors="coerce") if "gbps_once" in rows.columns else None
    if moved is None or not moved.notna().any():
        return {c: NAN for c in SHAPE_ROOF_COLUMNS} | {
            "kernel": "", "b_dominates_at": B_DOMINATES, "b_dominates": False
        }
    r = rows.loc[moved.idxmax()]
    M, N, K = int(r["M"]), int(r["N"]), int(r["K"])
    share = ledgers.b_share(M, N, K)
    return {
        "kernel": str(r["kernel"]),
        "fastest_ms": float(r["ms"]),
        "bytes_once": float(r["bytes_once"]),
        "b_share": share,
        "b_dominates_at": B_DOMINATES,
        "b_dominates": bool(share >= B_DOMINATES),
        "gbps_once": float(r["gbps_once"]),
        "read_gbps": float(r["read_gbps"]),
        "pct_read_roof": float(r["pct_read_roof"]),
        "dram_gbps": float(r["dram_gbps"]),
        "pct_dram_peak": float(r["pct_dram_peak"]),
        "gflops": float(r["gflops"]),
        "pct_peak": float(r["pct_peak"]),
    }


def shapes(ledger: pd.DataFrame) -> pd.DataFrame:
    """Per shape of E3: the speed-up of the top CUDA rung (the fastest rung of the ladder at the
    first shape, square; the last one timed where none is) over the first, cuBLAS's GFLOP/s,
    and the bandwidth roof there (``shape_roof``: the fastest kernel's bytes moved once against the
    measured read roof and the datasheet DRAM peak)."""
    columns = SHAPE_COLUMNS + SHAPE_ROOF_COLUMNS
    df = experiment_rows(ledger, "shapes")
    if df.empty:
        return pd.DataFrame(columns=columns)
    timed = set(df["kernel"].astype(str))
    ladder = [k.id for k in registry.cuda_ladder() if k.id in timed] or [k.id for k in registry.cuda_ladder()]
    msp = df.pivot_table(index="kernel", columns="label", values="ms", aggfunc="median")
    first, last = ladder[0], ladder[-1]  # the first and the top rung this run timed
    square = labels_in(df, "shapes")[0][0]
    at_square = [k for k in ladder if k in msp.index and square in msp.columns and msp.at[k, square] > 0]
    if at_square:
        last = min(at_square, key=lambda k: msp.at[k, square])
    gfp = df.pivot_table(index="kernel", columns="label", values="gflops", aggfunc="median")
    base = registry.BASELINE.id
    rows = []
    for lab, (M, N, K) in labels_in(df, "shapes"):
        up = NAN
        if first in msp.index and last in msp.index and lab in msp.columns:
            up = msp.at[first, lab] / msp.at[last, lab]
        cub = gfp.at[base, lab] if base in gfp.index and lab in gfp.columns else NAN
        rows.append(
            {
                "label": lab,
                "M": M,
                "N": N,
                "K": K,
                "first": first,
                "last": last,
                "speedup": up,
                "cublas_gflops": cub,
                **shape_roof(df[df["label"].astype(str) == lab]),
            }
        )
    return pd.DataFrame(rows, columns=columns)


SIZE_COLUMNS = [*T.sizes.columns]  # declared in study.rundata.tables


def sizes(ledger: pd.DataFrame, l2_bytes: float | None) -> pd.DataFrame:
    """Per square size of E2: the footprint of A, B and C, whether it fits the L2, and the n whose
    footprint equals the L2."""
    df = experiment_rows(ledger, "sizes")
    ns = sorted(set(int(n) for n in df["M"])) if len(df) else []
    n_l2 = ledgers.n_at_footprint(l2_bytes) if l2_bytes else NAN
    rows = [
        {
            "n": n,
            "footprint_bytes": ledgers.footprint_bytes(n),
            "inside_l2": (ledgers.footprint_bytes(n) <= l2_bytes) if l2_bytes else "",
            "n_at_l2": n_l2,
        }
        for n in ns
    ]
    return pd.DataFrame(rows, columns=SIZE_COLUMNS)


SIZE_STEP_COLUMNS = [*T.size_step.columns]  # declared in study.rundata.tables


def size_step(ledger: pd.DataFrame, l2_bytes: float | None) -> pd.DataFrame:
    """Per kernel, GFLOP/s at the largest size of E2 inside the L2 and the smallest outside it,
    and their ratio (empty when the sizes do not straddle the L2 or its size is unknown)."""
    df = experiment_rows(ledger, "sizes")
    ns = sorted(set(int(n) for n in df["M"])) if len(df) else []
    inside = [n for n in ns if l2_bytes and ledgers.footprint_bytes(n) <= l2_bytes]
    outside = [n for n in ns if l2_bytes and ledgers.footprint_bytes(n) > l2_bytes]
    if not (inside and outside):
        return pd.DataFrame(columns=SIZE_STEP_COLUMNS)
    a, b = max(inside), min(outside)
    piv = df.pivot_table(index="kernel", columns="M", values="gflops", aggfunc="median")
    rows = [
        {
            "kernel": k,
            "n_inside": a,
            "n_outside": b,
            "gflops_inside": piv.at[k, a],
            "gflops_outside": piv.at[k, b],
            "change": piv.at[k, b] / piv.at[k, a],
        }
        for k in sorted(piv.index, key=order)
        if a in piv.columns and b in piv.columns and pd.notna(piv.at[k, a]) and pd.notna(piv.at[k, b])
    ]
    return pd.DataFrame(rows, columns=SIZE_STEP_COLUMNS)


# ---------------------------------------------------------------------------------------------
# E6: the SM clock sampled during the main table's timings

CLOCK_COLUMNS = [*T.clock_summary.columns]  # declared in study.rundata.tables


def clocks(results: pd.DataFrame, samples: pd.DataFrame | None, max_mhz: float) -> pd.DataFrame:
    """Per kernel of the main table: the median sampled SM clock, as % of the device max, the sample
    count and range; and on every row the run's median over the main table, its % of the max and
    the factor a % of peak reads at that clock against the max clock."""
    main = main_rows(results)
    if "sm_clock_mhz" not in main.columns:
        return pd.DataFrame(columns=CLOCK_COLUMNS)
    main = main[pd.to_numeric(main["sm_clock_mhz"], errors="coerce") > 0]
    if main.empty:
        return pd.DataFrame(columns=CLOCK_COLUMNS)
    span = {}
    if samples is not None and {"kernel", "sm_clock_mhz"} <= set(samples.columns):
        s = (
            samples[samples["experiment"].astype(str) == "main"]
            if "experiment" in samples.columns
            else samples
        )
        span = {str(k): (g["sm_clock_mhz"].min(), g["sm_clock_mhz"].max()) for k, g in s.groupby("kernel")}
    med = float(pd.to_numeric(main["sm_clock_mhz"]).median())
    rows = [
        {
            "kernel": r["kernel"],
            "median_mhz": float(r["sm_clock_mhz"]),
            "pct_of_max": 100 * float(r["sm_clock_mhz"]) / max_mhz,
            "samples": r.get("clock_samples", NAN),
            "lo_mhz": span.get(str(r["kernel"]), (NAN, NAN))[0],
            "hi_mhz": span.get(str(r["kernel"]), (NAN, NAN))[1],
            "run_median_mhz": med,
            "run_pct_of_max": 100 * med / max_mhz,
            "max_over_median": max_mhz / med,
        }
        for _, r in main.iterrows()
    ]
    return pd.DataFrame(rows, columns=CLOCK_COLUMNS)


# ---------------------------------------------------------------------------------------------
# E4 by mechanism: the main loop's global-load widths at the stride experiment's shapes

STRIDE_LOAD_COLUMNS = [*T.stride_loads.columns]  # declared in study.rundata.tables


def stride_loads(widths: pd.DataFrame | None) -> pd.DataFrame:
    """Per kernel and shape: the main loop's global loads (synchronous LDG and cp.async LDGSTS
    together) by width, from the SASS compiled as a launch at that shape would be."""
    if widths is None or "kernel" not in widths.columns:
        return pd.DataFrame(columns=STRIDE_LOAD_COLUMNS)

    def total(r, w):
        return sum(float(r.get(f"loop_{op}{w}", 0) or 0) for op in ("LDG", "LDGSTS"))

    rows = []
    for _, r in in_order(widths).iterrows():
        err = r.get("error")
        err = err if isinstance(err, str) else ""
        rows.append(
            {
                "kernel": r["kernel"],
                "impl": r["impl"],
                "M": r["M"],
                "N": r["N"],
                "K": r["K"],
                "specialised": r.get("specialised"),
                "loads_128": NAN if err else total(r, 128),
                "loads_64": NAN if err else total(r, 64),
                "loads_32": NAN if err else total(r, 32),
                "async": (not err)
                and sum(float(r.get(f"loop_LDGSTS{w}", 0) or 0) for w in (32, 64, 128)) > 0,
                "error": err,
            }
        )
    return pd.DataFrame(rows, columns=STRIDE_LOAD_COLUMNS)
