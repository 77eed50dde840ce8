"""Triton against the hand-written tile: for each CUDA rung from the first that has a Gluon twin
on, the fastest ``tl.dot`` kernel set beside it (its ``tl.dot`` twins and the ``tl.dot`` kernels
that choose their own tile: the autotuned one, TAT)
and the fastest Gluon twin of its block tile; their speed over the rung's across the run's passes,
and what the counters and the SASS put on the gap (``docs/method.md#tile-gap``).

The gap is split in two factors whose product is the ratio of the kernels' cycles where both
issue from the same SMs: the twin's instructions over the rung's (``from_instructions``, from
ncu's instructions executed) and the rung's issue rate over the twin's (``from_issue``, ncu's
issue-active share). Where the issue factor is the larger, the gap is named by the stall reason
that grew most per issued instruction (``stall``, ``stall_delta``) and by the figure of the SASS or
the counters that shows what that reason waits on (``STALL_FACTS``); where the instruction factor
is, by the class of instruction in the main loop that grew most per FFMA. The rule is the same for
every pair. Where the run read per-instruction counters of both (``study.profile --source``), the
shared-memory figure adds their wavefronts per copy and per shared load: a copy's bank conflicts
show there and in no aggregate counter.
"""

from __future__ import annotations

import math

import pandas as pd

from study import kernels as registry
from study.derive import spread
from study.derive.counters import STALL, combined
from study.derive.selection import main_rows
from study.rundata.rows import by_kernel
from study.rundata.tables import T

NAN = math.nan
COLUMNS = [*T.tile_gap.columns]  # declared in study.rundata.tables
KINDS = ("tl.dot", "Gluon")

# stall reason -> what a warp stalled for it waits on, and which figure shows that in the SASS or
# the counters (``_fact``); 'selected' and 'not_selected' are not waits
STALL_FACTS = {
    "short_scoreboard": ("shared-memory results", "shared"),
    "mio_throttle": ("room in the shared-memory instruction queue", "shared"),
    "long_scoreboard": ("global or local memory", "global"),
    "lg_throttle": ("room in the global-memory instruction queue", "global"),
    "dispatch_stall": ("dispatch (register-bank conflicts among them)", "banks"),
    "no_instruction": ("instructions to be fetched", "loop"),
    "barrier": ("a barrier", "barriers"),
    "wait": ("fixed-latency dependencies", "wait"),
    "math_pipe_throttle": ("the FMA pipe", "pipe"),
    "branch_resolving": ("a branch target", ""),
}
# the main loop's instruction classes compared per FFMA where the instruction factor is the larger
LOOP_CLASSES = (("LDS", "shared loads"), ("LDGSTS", "asynchronous copies"), ("LDG", "global loads"),
                ("BAR", "barriers"), ("LDL", "local (spill) loads"), ("STL", "local (spill) stores"))


def _f(x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return NAN
    return v if math.isfinite(v) else NAN


def _stalls(ncu: pd.DataFrame | None, kid: str, shape) -> dict[str, float]:
    """Stall reason -> warps stalled for it per issued instruction, ``kid`` at ``shape``: the
    launches of its counters (the derivation's current rows: one profiling run per kernel and
    shape) combined as the counters table combines them (``counters.combined``)."""
    if ncu is None:
        return {}
    g = ncu[(ncu["kernel"].astype(str) == kid) & (pd.to_numeric(ncu["M"], errors="coerce") == shape[0])
            & (pd.to_numeric(ncu["N"], errors="coerce") == shape[1])
            & (pd.to_numeric(ncu["K"], errors="coerce") == shape[2])]
    if not len(g):
        return {}
    g = g.assign(metric=g["metric"].astype(str), value=pd.to_numeric(g["value"], errors="coerce"),
                 launch=g["launch"] if "launch" in g.columns else 0)
    out = {}
    for name, v in combined(g).items():
        m = STALL.match(str(name))
        if m and m.group(1) not in ("selected", "not_selected"):
            out[m.group(1)] = float(v)
    return out


def _per_ffma(s: pd.Series | None, column: str) -> float:
    if s is None:
        return NAN
    ffma = _f(s.get("loop_FFMA"))
    return _f(s.get(column)) / ffma if ffma and ffma > 0 else NAN


def _pair(a: float, b: float, fmt: str) -> str:
    return f"{fmt.format(a)} against {fmt.format(b)}"


def _loop(t: pd.Series | None, c: pd.Series | None, column: str, fmt: str = "{:.3f}") -> str:
    """``column`` of the main loop per FFMA, ``t``'s against ``c``'s."""
    return _pair(_per_ffma(t, column), _per_ffma(c, column), fmt)


def _fact(kind: str, t: pd.Series | None, c: pd.Series | None, ct: pd.Series | None,
          cc: pd.Series | None, st: dict | None = None, sc: dict | None = None) -> str:
    """The figure that shows what a stall of ``kind`` waits on, the slower kernel's against the
    faster's: from their SASS rows ``t``, ``c`` (main loop, per FFMA), counter rows ``ct``, ``cc``
    and per-instruction counters ``st``, ``sc`` (``per_instruction``; empty where not read)."""
    if kind == "shared":
        parts = [f"shared loads per FFMA {_loop(t, c, 'loop_LDS')}",
                 f"copies per FFMA {_loop(t, c, 'loop_LDGSTS')}"]
        if ct is not None and cc is not None:
            w = [_f(x.get("wavefronts_per_wfma")) for x in (ct, cc)]
            parts.append(f"shared-load wavefronts per warp FMA {_pair(*w, '{:.3f}')}")
        for cls, words in (("LDGSTS", "copy"), ("LDS", "shared load")):
            per = [_wavefronts_per(x or {}, cls) for x in (st, sc)]
            if all(math.isfinite(v) for v in per):
                parts.append(f"shared wavefronts per {words} {_pair(*per, '{:.2f}')} (per instruction)")
        return "; ".join(parts)
    if kind == "global":
        return (f"global loads per FFMA {_loop(t, c, 'loop_LDG')}; "
                f"local loads per FFMA {_loop(t, c, 'loop_LDL')}")
    if kind == "banks":
        return (f"same-bank register reads per FFMA {_loop(t, c, 'loop_bank4', '{:.2f}')}; "
                f"operand reuse flags per FFMA {_loop(t, c, 'loop_reuse', '{:.2f}')}")
    if kind == "loop":
        return "main-loop instructions " + _pair(_f(None if t is None else t.get("loop_total")),
                                                 _f(None if c is None else c.get("loop_total")), "{:.0f}")
    if kind == "barriers":
        return f"barriers per FFMA {_loop(t, c, 'loop_BAR', '{:.4f}')}"
    if kind == "wait":
        return f"fixed stall cycles per FFMA {_loop(t, c, 'loop_stall_cycles', '{:.2f}')}"
    if kind == "pipe" and ct is not None and cc is not None:
        return "FMA pipe busy " + _pair(_f(ct.get("fma_pipe_pct")), _f(cc.get("fma_pipe_pct")), "{:.1f}%")
    return ""


def _grown_class(t: pd.Series | None, c: pd.Series | None) -> str:
    """The main-loop instruction class that grew most per FFMA from ``c``'s SASS row to ``t``'s."""
    best = None
    for col, words in LOOP_CLASSES:
        d = _per_ffma(t, f"loop_{col}") - _per_ffma(c, f"loop_{col}")
        if math.isfinite(d) and d > 0 and (best is None or d > best[0]):
            best = (d, col, words)
    if best is None:
        return ""
    _, col, words = best
    return f"{words} ({col}) per FFMA {_loop(t, c, f'loop_{col}')}"


def explain(twin: str, cuda: str, counters: dict, stalls: dict, sass: dict,
            source: dict | None = None) -> dict:
    """The gap's columns for one (twin, rung) pair: the two factors, and the larger of them named
    from the side of the slower kernel (module docstring): the stall reason that grew most in it
    with the figure that shows what it waits on, or its instruction class that grew most."""
    ct, cc = counters.get(twin), counters.get(cuda)
    out = {"cuda_inst_per_wfma": NAN, "inst_per_wfma": NAN, "cuda_issue_pct": NAN, "issue_pct": NAN,
           "from_instructions": NAN, "from_issue": NAN, "named": "", "stall": "", "stall_delta": NAN,
           "difference": ""}
    if ct is None or cc is None:
        out["difference"] = "no counters of both in this run"
        return out
    it, ic = _f(ct.get("inst_per_wfma")), _f(cc.get("inst_per_wfma"))
    st, sc = _f(ct.get("issue_pct")), _f(cc.get("issue_pct"))
    fi, fs = it / ic if ic else NAN, sc / st if st else NAN
    out.update(cuda_inst_per_wfma=ic, inst_per_wfma=it, cuda_issue_pct=sc, issue_pct=st,
               from_instructions=fi, from_issue=fs)
    if not (math.isfinite(fi) and math.isfinite(fs)) or fi * fs == 1:
        return out
    # the slower of the two by the factors, and the other: the difference is named from its side
    slow, fast = (twin, cuda) if fi * fs > 1 else (cuda, twin)
    sign = 1 if slow == twin else -1
    grew = {k: stalls.get(slow, {}).get(k, 0.0) - stalls.get(fast, {}).get(k, 0.0)
            for k in set(stalls.get(slow, {})) | set(stalls.get(fast, {}))}
    grew = {k: v for k, v in grew.items() if math.isfinite(v)}
    if grew:
        top = max(grew, key=lambda k: grew[k])
        out["stall"], out["stall_delta"] = top, sign * grew[top]
    s_sass, f_sass = sass.get(slow), sass.get(fast)
    s_ct, f_ct = counters.get(slow), counters.get(fast)
    out["named"] = "issue" if sign * math.log(fs) >= sign * math.log(fi) else "instructions"
    if out["named"] == "issue" and out["stall"] and grew[out["stall"]] > 0:
        waits, kind = STALL_FACTS.get(out["stall"], (out["stall"].replace("_", " "), ""))
        fact = _fact(kind, s_sass, f_sass, s_ct, f_ct, *((source or {}).get(k, {}) for k in (slow, fast)))
        out["difference"] = (f"{slow} issues less: {out['stall']} +{grew[out['stall']]:.2f} per issue "
                             f"over {fast} (waiting on {waits})"
                             + (f"; {fact} ({slow} against {fast})" if fact else ""))
    elif out["named"] == "instructions":
        grown = _grown_class(s_sass, f_sass)
        out["difference"] = (f"{slow} executes more: " + _pair(max(it, ic), min(it, ic), "{:.3f}")
                             + " instructions per warp FMA" + (f"; {grown}" if grown else ""))
    else:
        out["difference"] = f"{slow} issues less, with no stall reason grown"
    return out


def first_rung_with_gluon(ladder: list) -> int | None:
    """The index of the first rung some Gluon kernel names as its ``twin``."""
    named = {k.twin for k in registry.KERNELS if k.gluon}
    return next((i for i, c in enumerate(ladder) if c.id in named), None)


def per_instruction(source: pd.DataFrame | None, shape) -> dict[str, dict[str, tuple[float, float]]]:
    """Kernel -> opcode class (``LDS``, ``LDGSTS``, ...: the opcode before its first dot) -> (warp
    instructions executed, shared wavefronts), from the per-instruction counters at ``shape``; an
    opcode that moved no shared data (a predicated-off placeholder load) is left out of its class."""
    out: dict[str, dict[str, tuple[float, float]]] = {}
    if source is None or not len(source):
        return out
    at = source[(pd.to_numeric(source["M"], errors="coerce") == shape[0])
                & (pd.to_numeric(source["N"], errors="coerce") == shape[1])
                & (pd.to_numeric(source["K"], errors="coerce") == shape[2])]
    at = at[pd.to_numeric(at["wavefronts_shared"], errors="coerce") > 0]
    for kid, g in at.groupby(at["kernel"].astype(str)):
        cls = g["opcode"].astype(str).str.split(".").str[0]
        ex = pd.to_numeric(g["executed"], errors="coerce").groupby(cls).sum()
        wf = pd.to_numeric(g["wavefronts_shared"], errors="coerce").groupby(cls).sum()
        out[kid] = {c: (float(ex[c]), float(wf[c])) for c in ex.index}
    return out


def _wavefronts_per(src: dict, cls: str) -> float:
    executed, wavefronts = src.get(cls, (NAN, NAN))
    return wavefronts / executed if executed and executed > 0 else NAN


def tile_gap(ledger: pd.DataFrame, times: pd.DataFrame, counters: pd.DataFrame | None,
             ncu: pd.DataFrame | None, sass: pd.DataFrame | None,
             ncu_source: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """One row per (CUDA rung, kind): the rungs of the ladder from the first with a Gluon twin on,
    each beside its fastest ``tl.dot`` kernel and its fastest Gluon twin (empty ``kernel`` where the
    run timed none); None where the run timed none of those rungs."""
    main = by_kernel(main_rows(ledger))
    ladder = [c for c in registry.cuda_ladder() if c.id in main]
    start = first_rung_with_gluon(ladder)
    if start is None:
        return None
    free = [k.id for k in registry.free_tl_dot_kernels() if k.id in main]
    sass_rows = ({str(r["kernel"]): r for _, r in sass.iterrows()} if sass is not None and "kernel" in sass
                 else {})
    rows = []
    for c in ladder[start:]:
        shape = (int(main[c.id]["M"]), int(main[c.id]["N"]), int(main[c.id]["K"]))
        here = {}
        if counters is not None:
            at = counters[(pd.to_numeric(counters["M"], errors="coerce") == shape[0])
                          & (pd.to_numeric(counters["N"], errors="coerce") == shape[1])
                          & (pd.to_numeric(counters["K"], errors="coerce") == shape[2])]
            here = by_kernel(at)
        source = per_instruction(ncu_source, shape)
        twins = registry.twins_of(c.id)
        candidates = {
            "tl.dot": [t.id for t in twins if not t.gluon] + free,
            "Gluon": [t.id for t in twins if t.gluon],
        }
        for kind in KINDS:
            timed = [k for k in dict.fromkeys(candidates[kind]) if k in main]
            best = max(timed, key=lambda k: _f(main[k]["gflops"]), default="")
            row = {"cuda": c.id, "kind": kind, "kernel": best}
            if best:
                r = spread._row("tile", best, c.id, "main", "main", times)
                row.update({k: r[k] for k in ("ratio", "ratio_lo", "ratio_hi", "passes", "verdict")})
                stalls = {k: _stalls(ncu, k, shape) for k in (best, c.id)}
                row.update(explain(best, c.id, here, stalls, sass_rows, source))
            rows.append(row)
    df = pd.DataFrame(rows, columns=COLUMNS)
    return df if len(df) else None

