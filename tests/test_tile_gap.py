"""Triton against the hand-written tile (study.derive.tile_gap): the gap split into an
instruction factor and an issue factor, the larger named from the slower kernel's side. CPU only;
the expected figures are worked out here from the inputs, not read from the code."""

import math

import pandas as pd
import pytest

from study.derive import tile_gap

STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"


def counters(inst: float, issue: float, wavefronts: float = 0.1) -> dict:
    return {"inst_per_wfma": inst, "issue_pct": issue, "wavefronts_per_wfma": wavefronts,
            "fma_pipe_pct": 70.0}


def sass(ffma: int, **loop) -> dict:
    return {"loop_FFMA": ffma, **{f"loop_{k}": v for k, v in loop.items()}}


def test_an_issue_gap_is_named_by_the_stall_that_grew_in_the_slower_kernel():
    c = {"G12": counters(1.0, 50.0, 0.30), "K12": counters(1.0, 80.0, 0.10)}
    stalls = {"G12": {"short_scoreboard": 0.5, "dispatch_stall": 0.2},
              "K12": {"short_scoreboard": 0.1, "dispatch_stall": 0.3}}
    s = {"G12": sass(2048, LDS=96, LDGSTS=24), "K12": sass(2048, LDS=48, LDGSTS=24)}
    out = tile_gap.explain("G12", "K12", c, stalls, s)
    assert out["from_instructions"] == pytest.approx(1.0)
    assert out["from_issue"] == pytest.approx(80 / 50)
    assert out["stall"] == "short_scoreboard" and out["stall_delta"] == pytest.approx(0.4)
    d = out["difference"]
    assert d.startswith("G12 issues less: short_scoreboard +0.40 per issue over K12")
    # 96 / 2048 = 0.047 against 48 / 2048 = 0.023; ncu's wavefronts 0.300 against 0.100
    assert "shared loads per FFMA 0.047 against 0.023" in d
    assert "shared-load wavefronts per warp FMA 0.300 against 0.100" in d


def test_an_instruction_gap_is_named_by_the_class_that_grew_most_per_ffma():
    c = {"TA": counters(1.5, 80.0), "K10": counters(1.0, 82.0)}
    s = {"TA": sass(1000, LDS=200, LDG=10, BAR=2), "K10": sass(1000, LDS=100, LDG=0, BAR=1)}
    out = tile_gap.explain("TA", "K10", c, {"TA": {}, "K10": {}}, s)
    assert out["from_instructions"] == pytest.approx(1.5) and out["from_issue"] == pytest.approx(82 / 80)
    # LDS grew by 0.1 per FFMA, LDG by 0.01, BAR by 0.001: the shared loads are named
    assert out["difference"] == ("TA executes more: 1.500 against 1.000 instructions per warp FMA; "
                                 "shared loads (LDS) per FFMA 0.200 against 0.100")


def test_a_faster_twin_is_explained_from_the_rungs_side():
    c = {"TA": counters(1.1, 77.0), "K7": counters(1.1, 61.0)}
    stalls = {"TA": {"short_scoreboard": 0.3, "long_scoreboard": 0.2},
              "K7": {"short_scoreboard": 1.6, "long_scoreboard": 0.4}}
    out = tile_gap.explain("TA", "K7", c, stalls, {})
    assert out["from_issue"] == pytest.approx(61 / 77)  # below 1: the twin issues more
    assert out["stall"] == "short_scoreboard"
    assert out["stall_delta"] == pytest.approx(0.3 - 1.6)  # the twin's minus the rung's
    assert out["difference"].startswith("K7 issues less: short_scoreboard +1.30 per issue over TA")


def test_without_both_kernels_counters_nothing_is_named():
    out = tile_gap.explain("G12", "K12", {"K12": counters(1.0, 80.0)}, {}, {})
    assert out["difference"] == "no counters of both in this run"
    assert math.isnan(out["from_issue"])


def _frames():
    shape = dict(M=4096, N=4096, K=4096)
    speed = {"K6": 35.0, "G6": 36.0, "T5": 30.0, "T5p": 40.0, "TA": 44.0, "K12": 51.0, "G12": 45.0,
             "K0": 50.0}
    impl = {"K6": "cuda", "K12": "cuda", "K0": "cublas"}
    ledger = pd.DataFrame([{"kernel": k, "impl": impl.get(k, "triton"), "experiment": "main", "label": "main",
                            "gflops": g * 1000, **shape} for k, g in speed.items()])
    flops = 2 * 4096 ** 3
    times = pd.DataFrame([{"kernel": k, "experiment": "main", "label": "main", "pass": p,
                           "ms": flops / (g * 1e12) * 1e3 * (1 + 0.01 * p * (k == "G12")), **shape}
                          for k, g in speed.items() for p in (1, 2, 3)])
    return ledger, times


def test_the_table_pairs_each_rung_from_the_first_gluon_twin_on_with_its_fastest_kernels():
    ledger, times = _frames()
    df = tile_gap.tile_gap(ledger, times, None, None, None)
    assert list(df["cuda"].unique()) == ["K6", "K12"]  # K6: the first rung a Gluon kernel names
    got = {(r.cuda, r.kind): r for r in df.itertuples()}
    assert got[("K6", "tl.dot")].kernel == "TA"  # 44 > T5p's 40 > T5's 30
    assert got[("K6", "Gluon")].kernel == "G6"
    assert got[("K12", "tl.dot")].kernel == "TA"  # no tl.dot twin of K12 timed here
    g12 = got[("K12", "Gluon")]
    # G12's passes are 1%, 2%, 3% slower than 45 TFLOP/s: K12's time over G12's, pass by pass
    base = 45 / 51
    assert g12.ratio == pytest.approx(base / 1.02) and g12.ratio_lo == pytest.approx(base / 1.03)
    assert g12.ratio_hi == pytest.approx(base / 1.01) and g12.passes == 3 and g12.verdict == "slower"
    assert g12.difference == "no counters of both in this run"


def test_no_rung_with_a_gluon_twin_timed_gives_no_table():
    ledger, times = _frames()
    keep = ~ledger["kernel"].isin(["K6", "K12"])
    assert tile_gap.tile_gap(ledger[keep], times, None, None, None) is None


def test_per_instruction_counters_name_the_copies_wavefronts():
    c = {"G12": counters(1.0, 75.0), "K12": counters(1.0, 88.0)}
    stalls = {"G12": {"short_scoreboard": 0.3}, "K12": {"short_scoreboard": 0.08}}
    source = pd.DataFrame([
        {"kernel": k, "M": 64, "N": 64, "K": 64, "opcode": op, "executed": ex, "wavefronts_shared": wf}
        for k, op, ex, wf in (("G12", "LDGSTS.E", 300.0, 1300.0), ("G12", "LDS.128", 100.0, 200.0),
                              ("K12", "LDGSTS.E", 300.0, 400.0), ("K12", "LDGSTS.E.BYPASS", 100.0, 100.0),
                              ("K12", "LDS.128", 100.0, 200.0), ("K12", "LDS", 50.0, 0.0))])
    per = tile_gap.per_instruction(source, (64, 64, 64))
    # K12's two copy opcodes are one class: (400 + 100) / (300 + 100) = 1.25 wavefronts a copy;
    # its plain LDS moved no shared data (a placeholder) and is not counted: 200 / 100 a load
    assert per["K12"]["LDGSTS"] == (400.0, 500.0) and per["G12"]["LDS"] == (100.0, 200.0)
    out = tile_gap.explain("G12", "K12", c, stalls, {}, per)
    assert "shared wavefronts per copy 4.33 against 1.25 (per instruction)" in out["difference"]
    assert "shared wavefronts per shared load 2.00 against 2.00 (per instruction)" in out["difference"]
    assert tile_gap.per_instruction(source, (1, 2, 3)) == {}
