"""Spread across passes: the headline comparisons measured in several passes, each in its own
kernel order; a margin is called faster or slower only where the whole min-max interval lies on
one side of 1. CPU only (the measuring steps that need a device are replaced)."""

import pandas as pd
import pytest
from conftest import stub_device

from study import experiments, kernels, run
from study.derive import spread
from study.measure import plan as measuring


def test_the_verdict_needs_the_whole_interval_on_one_side():
    assert spread.verdict(1.004, 1.020, 3) == "faster"
    assert spread.verdict(0.990, 1.010, 3) == "within noise"
    assert spread.verdict(0.900, 0.990, 3) == "slower"
    assert spread.verdict(1.000, 1.020, 3) == "within noise"  # touching 1 is no separation
    assert spread.verdict(1.300, 1.300, 1) == "one pass"  # one pass: nothing to judge


def test_ratios_pair_the_passes():
    a = {1: 1.0, 2: 1.1, 3: 0.9}  # ms of the kernel judged
    b = {1: 2.0, 2: 2.0, 3: 2.0, 4: 9.0}  # pass 4 has no partner: left out
    med, lo, hi, n = spread.ratio(a, b)
    assert n == 3 and med == pytest.approx(2.0) and lo == pytest.approx(2.0 / 1.1)
    assert hi == pytest.approx(2.0 / 0.9)
    assert spread.ratio({1: 1.0}, {2: 1.0})[3] == 0


def test_a_measurement_is_described_by_its_median_pass():
    rows = pd.DataFrame({"experiment": "main", "label": "main", "kernel": "K6", "M": 64, "N": 64, "K": 64,
                         "pass": [1, 2, 3], "ms": [3.0, 1.0, 2.0]})
    rep = spread.representatives(rows)
    assert len(rep) == 1 and rep["ms"].iloc[0] == 2.0 and rep["passes"].iloc[0] == 3
    even = spread.representatives(rows[rows["pass"] < 3])
    assert even["ms"].iloc[0] == 1.0  # the lower median of two


def test_the_plan_repeats_the_headline_points_in_their_own_orders():
    ks = kernels.select("K2,K4,K6")
    todo = measuring.plan(ks, ["main", "sizes", "shapes"], (4096, 4096, 4096), passes=3)
    first = [(p, k) for p, k in todo if p.pass_no == 1]
    assert len(first) == len(measuring.plan(ks, ["main", "sizes", "shapes"], (4096, 4096, 4096), passes=1))
    for n in (2, 3):
        again = [(p, k) for p, k in todo if p.pass_no == n]
        assert {p.label for p, _ in again} == {"main", "square", "decode_b32", "decode_b1"}
        main = [k.id for p, k in again if p.experiment == "main"]
        assert sorted(main) == sorted(k.id for k in ks)
    orders = [[k.id for p, k in todo if p.pass_no == n and p.experiment == "main"] for n in (1, 2, 3)]
    assert orders[1] == orders[0][::-1] and orders[2] != orders[0] and len(set(map(tuple, orders))) == 3
    assert len({measuring.key(p, k) for p, k in todo}) == len(todo)  # every (point, kernel, pass) once


SPEED = {"K0": 50000.0, "K2": 6000.0, "K3": 9000.0, "K4": 20000.0, "K6": 35000.0}
WOBBLE = {"K0": (1.0, 1.02, 0.98), "K6": (1.0, 0.97, 1.03)}  # per pass: K6 against K0 overlaps 1


@pytest.fixture
def passes_run(monkeypatch, tmp_path):
    calls: dict[str, int] = {}

    def fake(self, k, shape):
        M, N, K = shape
        n = calls[k.id] = calls.get(k.id, 0) + 1
        f = WOBBLE.get(k.id, (1.0, 1.0, 1.0))[(n - 1) % 3]
        ms = 2 * M * N * K / (SPEED[k.id] * f) / 1e6
        row = {"kernel": k.id, "impl": k.impl, "M": M, "N": N, "K": K, "rel_err": 1e-6, "ms": ms,
               "p20_ms": ms, "p80_ms": ms, "reps": 5, "sm_clock_mhz": 1900.0, "clock_samples": 1,
               "config": ""}
        return {"row": row, "samples": [(0.0, 1900.0)]}

    stub_device(monkeypatch, fake)
    plan = run.Plan(["--kernels", "K2,K3,K4,K6", "--experiments", "main", "--out", str(tmp_path),
                     "--no-sass"])
    assert plan.passes == experiments.PASSES == 3
    assert run.measure(plan) == 0
    return tmp_path


def test_a_run_of_three_passes_judges_its_margins(passes_run):
    data = passes_run / "data"
    rows = pd.read_csv(data / "results.csv")
    assert sorted(rows["pass"].unique()) == [1, 2, 3] and len(rows) == 5 * 3
    led = pd.read_csv(data / "ledgers.csv")
    assert len(led) == 5 and set(led["passes"]) == {3}  # one row a kernel: its median pass
    c = pd.read_csv(data / "comparisons.csv").set_index(["comparison", "a"])
    # K6 against cuBLAS: 0.7 x (1.0, 0.97 / 1.02, 1.03 / 0.98): an interval below 1 throughout
    assert c.loc[("vs_baseline", "K6"), "verdict"] == "slower"
    assert c.loc[("vs_baseline", "K6"), "ratio_lo"] == pytest.approx(0.7 * 0.97 / 1.02)
    # K6 over K4: 1.75 x (1, 0.97, 1.03): faster in every pass
    assert c.loc[("step", "K6"), "verdict"] == "faster" and c.loc[("step", "K6"), "passes"] == 3
    report = (passes_run / "REPORT.md").read_text()
    assert "over 3 passes" in report and "| K6 | 0.700× |" in report


def test_a_step_within_the_spread_names_no_cause(passes_run, tmp_path):
    from study import derive
    from study.rundata.rundir import RunDir

    data = passes_run / "data"
    rows = pd.read_csv(data / "results.csv")
    # K4's time made to straddle K3's: pass by pass the step is 0.95, 1.0, 1.05
    k3 = rows[rows["kernel"] == "K3"].set_index("pass")["ms"]
    k4 = rows["kernel"] == "K4"
    rows.loc[k4, "ms"] = [k3[p] / f for p, f in zip(rows.loc[k4, "pass"], (0.95, 1.0, 1.05))]
    rows.to_csv(data / "results.csv", index=False)
    derive.derive(RunDir(passes_run), note=False)
    c = pd.read_csv(data / "comparisons.csv").set_index(["comparison", "a"])
    assert c.loc[("step", "K4"), "verdict"] == "within noise"
    from study import report
    from study.report.sections.main import section_ladder

    lines = "\n".join(section_ladder(report.load(passes_run)))
    k4 = next(line for line in lines.splitlines() if line.startswith("| K4 |"))
    assert "within noise" in k4


def test_the_throughput_figure_draws_each_kernels_passes(passes_run):
    from matplotlib.collections import LineCollection

    from study import report
    from study.report.figures import draw_throughput

    run = report.load(passes_run)
    fig = draw_throughput(run)
    main = run.main_rows(run.measured)
    spans = {}
    for coll in fig.axes[0].collections:
        if isinstance(coll, LineCollection):
            for seg in coll.get_segments():
                (x0, y0), (x1, y1) = seg
                spans[round(x0)] = (min(y0, y1), max(y0, y1))
    k6 = list(main["kernel"]).index("K6")
    k3 = list(main["kernel"]).index("K3")
    # K6's passes at 1.0, 0.97 and 1.03 of 35,000 GFLOP/s; K3's three passes the same speed
    assert spans[k6] == pytest.approx((35000 * 0.97, 35000 * 1.03), rel=1e-6)
    assert spans[k3] == pytest.approx((9000, 9000), rel=1e-6)
