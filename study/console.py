"""The console tables a run prints: read from the derived tables, at most 120 columns wide.

The wide tables (every figure of every kernel) belong in REPORT.md; the console shows what a
run's last lines should say.
"""

from __future__ import annotations

import pandas as pd

from study.derive.selection import main_rows
from study.rundata.rundir import RunDir
from study.rundata.tables import T

WIDTH = 120
# column -> (heading, format)
MAIN = {
    "kernel": ("kernel", None),
    "impl": ("impl", None),
    "ms": ("ms", "{:.3f}"),
    "gflops": ("GFLOP/s", "{:.0f}"),
    "pct_peak": ("%peak", "{:.1f}"),
    "pct_cublas": ("%cuBLAS", "{:.1f}"),
    "cadence": ("cadence", "{:.3f}"),
    "attainment_pct": ("attain%", "{:.0f}"),
    "loads_per_fma": ("loads/FMA", "{:.3f}"),
    "predicted_cadence": ("predicted", "{:.3f}"),
    "model_error_pct": ("err%", "{:+.1f}"),
}
SASS = {
    "kernel": ("kernel", None),
    "FFMA": ("FFMA", "{:.0f}"),
    "LDS32": ("LDS.32", "{:.0f}"),
    "LDS128": ("LDS.128", "{:.0f}"),
    "LDG32": ("LDG.32", "{:.0f}"),
    "LDG128": ("LDG.128", "{:.0f}"),
    "LDGSTS": ("LDGSTS", "{:.0f}"),
    "total": ("total", "{:.0f}"),
    "loop_FFMA": ("loop FFMA", "{:.0f}"),
    "loop_LDS": ("loop LDS", "{:.0f}"),
    "loop_LDG": ("loop LDG", "{:.0f}"),
    "registers": ("regs", "{:.0f}"),
    "smem_bytes": ("smem", "{:.0f}"),
    "occupancy_pct": ("occ%", "{:.1f}"),
}
PRICES = {
    "method": ("method", None),
    "p_ldg": ("P_ldg", "{:.3f}"),
    "p_dist": ("P_dist", "{:.3f}"),
    "p_bcast": ("P_bcast", "{:.3f}"),
    "p_lds32": ("P_lds32", "{:.3f}"),
    "p_lds128": ("P_lds128", "{:.3f}"),
}


def formatted(df: pd.DataFrame, columns: dict) -> pd.DataFrame:
    """The chosen columns, renamed and formatted (blanks for NaN)."""
    out = pd.DataFrame(index=df.index)
    for c, (head, fmt) in columns.items():
        if c not in df.columns:
            continue
        if fmt is None:
            out[head] = ["" if pd.isna(x) else str(x) for x in df[c]]
        else:
            v = pd.to_numeric(df[c], errors="coerce")
            out[head] = [fmt.format(x) if pd.notna(x) else "" for x in v]
    return out


def fit(text: str) -> str:
    return "\n".join(line[:WIDTH] for line in text.splitlines())


def print_tables(rd: RunDir, derived, origin: str) -> None:
    gpu = derived.gpu
    main = main_rows(derived.ledgers)
    print(
        f"\nMain table ({origin}); % of peak and cadence at {gpu.sm_clock_mhz:.0f} MHz (device max); "
        f"full tables in {rd.report}"
    )
    print(fit(formatted(main, MAIN).to_string(index=False)))
    twins = rd.file(T.twins)
    if twins.is_file() and twins.stat().st_size:
        tw = pd.read_csv(twins)
        if len(tw):
            cols = {
                "cuda": ("CUDA", None),
                "cuda_gflops": ("GFLOP/s", "{:.0f}"),
                "unpipelined": ("Triton", None),
                "ratio_unpipelined": ("Triton/CUDA", "{:.2f}"),
                "pipelined": ("pipelined", None),
                "ratio_pipelined": ("pipelined/CUDA", "{:.2f}"),
                "gluon": ("Gluon", None),
                "ratio_gluon": ("Gluon/CUDA", "{:.2f}"),
            }
            print("\nTriton twins (GFLOP/s ratio to their CUDA kernel):")
            print(fit(formatted(tw, cols).to_string(index=False)))
    if derived.model.empty:
        print("\nUnit prices: none (the model was skipped; see above)")
        return
    print("\nUnit prices (cycles per load, per warp-FMA):")
    print(fit(formatted(derived.model, PRICES).to_string(index=False)))


def print_sass(df: pd.DataFrame, arch: str, where: str) -> None:
    print(f"\nSASS ledger ({arch}, {where}), whole kernel and main loop body:")
    print(fit(formatted(df, SASS).to_string(index=False)))
