"""The seed GPU's published times replayed through the same ledgers, beside this run."""

from __future__ import annotations

from study.report.figures import Skip, ledger_main
from study.report.load import Run
from study.report.md import by_kernel, gpu_name, md, missing, num, short


def section_seed(run: Run) -> list[str]:
    seed, sm = run.tables.get("seed_ledgers"), run.tables.get("seed_model")
    if seed is None or sm is None:
        return missing(
            "the seed replay", run.missing.get("seed_ledgers") or run.missing.get("seed_model", "?")
        )
    p = sm.iloc[0]
    s = run.main_rows(seed)
    try:
        here, note = ledger_main(run), ""
    except Skip as e:
        here, note = run.main_rows(run.measured), f" (model error on the {gpu_name(run)}: {e})"
    a, b = short(str(p["gpu"])), short(gpu_name(run))
    lines = [
        f"The seed report's published times on the {p['gpu']} ({int(p['sms'])} SMs, "
        f"{p['sm_clock_mhz']:.0f} MHz, "
        f"{p['dram_gbps']:,.0f} GB/s) replayed through the same ledgers and the same exact calibration, "
        f"beside this run's {gpu_name(run)}{note}. Cadence in cycles per warp-FMA per SM at each GPU's max "
        "clock; model error with each GPU's own exact prices.",
        "",
    ]
    h = by_kernel(here)
    rows = []
    for _, r in s.iterrows():
        o = h.get(r["kernel"])
        g = lambda c, fmt, o=o: num(o.get(c), fmt) if o is not None else "–"  # noqa: E731
        rows.append(
            [
                r["kernel"],
                num(r["gflops"]),
                g("gflops", "{:.1f}"),
                num(r["pct_cublas"], "{:.1f}%"),
                g("pct_cublas", "{:.1f}%"),
                num(r["cadence"], "{:.2f}"),
                g("cadence", "{:.2f}"),
                num(r["attainment_pct"], "{:.1f}%"),
                g("attainment_pct", "{:.1f}%"),
                num(r["model_error_pct"], "{:+.1f}%"),
                g("model_error_pct", "{:+.1f}%"),
            ]
        )
    hdr = ["kernel"] + [
        f"{m} {x}" for m in ("GFLOP/s", "% cuBLAS", "cadence", "attainment", "model error") for x in (a, b)
    ]
    lines += md(hdr, rows)
    cuda = s[s["impl"] == "cuda"].dropna(subset=["pct_cublas"])
    if len(cuda):
        best = cuda.loc[cuda["pct_cublas"].idxmax()]
        mine = h.get(best["kernel"])
        lines += [
            f"**Finding:** {best['kernel']} reaches {best['pct_cublas']:.1f}% of cuBLAS on the {a}"
            + (f" and {mine['pct_cublas']:.1f}% on the {b}" if mine is not None else "")
            + f"; the {a}'s exact prices are P_dist {p['p_dist']:.2f}, P_bcast {p['p_bcast']:.2f}, "
            f"P_ldg {p['p_ldg']:.2f}" + _here_prices(run) + ".",
            "",
        ]
    return lines + _replication(run, a, b)


def _replication(run: Run, a: str, b: str) -> list[str]:
    """Whether the seed's readings hold here, and whether its prices are determined at all."""
    rep, ident = run.tables.get("seed_replication"), run.tables.get("seed_identifiability")
    out = []
    if rep is not None:
        rows = [[r["kernel"], r["role"], num(r["seed_error_pct"], "{:+.1f}%"),
                 num(r["here_error_pct"], "{:+.1f}%"), r["reading"]] for _, r in rep.iterrows()]
        out += [f"Does the seed's model replicate? Each kernel's model error with its GPU's own exact "
                f"prices; a reading within ±10% on the {a} replicates where it is within ±10% on the {b} "
                "too.", "", *md(["kernel", "role", f"error {a}", f"error {b}", "reading"], rows)]
        ext = rep[rep["role"] == "extrapolation"]
        if len(ext):
            held = ext[ext["reading"] == "replicates"]
            words = "replicates" if len(held) == len(ext) else "does not replicate"
            said = [f"{r['kernel']} {num(r['seed_error_pct'], '{:+.1f}%')} on the {a} against "
                    f"{num(r['here_error_pct'], '{:+.1f}%')} on the {b}" for _, r in ext.iterrows()]
            out += ["**Finding (replication):** the seed's extrapolations, " + ", ".join(said)
                    + f": the seed's model {words} here.", ""]
    ls = ident[ident["method"] == "lstsq"] if ident is not None else None
    if ls is not None and len(ls) and isinstance(ls.iloc[0]["identifiable"], str):
        r = ls.iloc[0]
        verdict = ("are identifiable from these kernels" if r["identifiable"] == "yes"
                   else "are not identifiable from these kernels")
        out += [f"**Finding (identifiability):** the least-squares prices over "
                f"{r['kernels'].replace(',', ', ')} solve a system of condition number "
                f"{num(r['condition_number'], '{:.1f}')}; without {r['without_kernel']} the rest solve one "
                f"of {num(r['without_condition_number'], '{:.0f}')}, and fitted without a kernel the prices "
                f"miss it by up to {num(r['loo_worst_pct'], '{:+.0f}%')} ({r['loo_worst_kernel']}; mean "
                f"|error| {num(r['loo_mean_abs_pct'], '{:.0f}%')}): the three prices {verdict}.", ""]
    return out


def _here_prices(run: Run) -> str:
    mt = run.tables.get("model")
    ex = mt[mt["method"] == "exact"] if mt is not None and "method" in mt.columns else None
    if ex is None or ex.empty:
        return ""
    e = ex.iloc[0]
    prices = ", ".join(num(e[c], "{:.2f}") for c in ("p_dist", "p_bcast", "p_ldg"))
    return f" against {prices} on the {short(gpu_name(run))}"
