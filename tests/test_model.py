"""Unit prices and predictions, replayed on the RTX 4090 report's times.

Expected numbers are the report's published figures (the seed replay, `docs/method.md#seed`), not
this code's output.
"""

import math

import numpy as np
import pandas as pd
import pytest

from study import kernels
from study.derive import ledgers, model
from study.errors import InputError
from study.rundata.gpu import GPU

SEED_TIMES = "reports/data/rtx4090_seed.csv"
SEED_GPU = "reports/data/rtx4090_seed_gpu.json"

MODEL_ERROR = {"K1": -87.8, "K2": 0.0, "K3": 0.0, "K3c": 6.6, "K4": 0.0, "K5": -9.2, "K6": -72.8}
PREDICTED = {"K1": 3.880, "K2": 3.880, "K3": 3.340, "K3c": 3.295, "K4": 0.990, "K5": 0.545, "K6": 0.136}


@pytest.fixture(scope="module")
def gpu4090():
    return GPU.from_json(SEED_GPU)


@pytest.fixture(scope="module")
def ledger(gpu4090):
    return ledgers.ledger_table(pd.read_csv(SEED_TIMES), gpu4090)


@pytest.fixture(scope="module")
def prices(ledger):
    return model.calibrate_exact(ledger)


def test_exact_prices(prices):
    assert round(prices.p_ldg, 2) == 1.94
    assert round(prices.p_dist, 2) == 2.69
    assert round(prices.p_bcast, 2) == 0.53
    assert prices.shape == (4096, 4096, 4096)
    assert prices.kernels == ("K2", "K3", "K4")
    assert prices.decimals == 2


def test_exact_prices_unrounded_stay_close(ledger, prices):
    p = model.calibrate_exact(ledger, decimals=None)
    assert p.p_dist == pytest.approx(prices.p_dist, rel=0.01)
    assert p.p_bcast == pytest.approx(prices.p_bcast, rel=0.02)


@pytest.mark.parametrize("kid", MODEL_ERROR)
def test_model_errors(ledger, prices, kid):
    row = model.apply(ledger, prices).set_index("kernel").loc[kid]
    assert row["model_error_pct"] == pytest.approx(MODEL_ERROR[kid], abs=0.5)
    assert row["predicted_cadence"] == pytest.approx(PREDICTED[kid], abs=0.0015)


def test_apply_leaves_cublas_and_triton_blank(gpu4090, prices):
    # T1 has counts (K2's ledger) but is Triton: the counted prices are CUDA's, not its
    times = pd.DataFrame({"kernel": ["K0", "T3", "T1"], "M": 4096, "N": 4096, "K": 4096,
                          "ms": [2.4, 20.0, 30.0]})
    out = model.apply(ledgers.ledger_table(times, gpu4090), prices)
    assert out["predicted_cadence"].isna().all() and out["model_error_pct"].isna().all()


def test_predict_is_the_step_8_sum(prices):
    c = kernels.get("K5").counted
    expected = prices.p_dist * 4 / 32 + prices.p_bcast * 8 / 32 + prices.p_ldg * 40 / 1024
    assert model.predict(c, prices) == pytest.approx(expected)


def test_lstsq_set_excludes_request_bound_and_128_bit():
    assert model.lstsq_kernels() == ["K2", "K3", "K3c", "K4", "K5"]


def test_fits_stay_on_cuda_kernels_when_a_triton_kernel_is_counted(gpu4090):
    # T1 carries K2's counts; timed far off the CUDA prices it must move neither fit
    times = pd.concat([pd.read_csv(SEED_TIMES),
                       pd.DataFrame([{"kernel": "T1", "M": 4096, "N": 4096, "K": 4096, "ms": 100.0}])])
    led = ledgers.ledger_table(times, gpu4090)
    assert kernels.get("T1").counted is not None and "T1" not in model.lstsq_kernels()
    p = model.fit_lstsq(led)
    assert p.kernels == ("K2", "K3", "K3c", "K4", "K5")
    assert p == model.fit_lstsq(ledgers.ledger_table(pd.read_csv(SEED_TIMES), gpu4090))
    assert list(model.leave_one_out(led)["kernel"]) == ["K2", "K3", "K3c", "K4", "K5"]
    assert model.calibrate_exact(led).kernels == ("K2", "K3", "K4")


def test_lstsq_recovers_planted_prices(gpu4090):
    """Times built from known prices: the fit must give them back."""
    planted = model.Prices(p_ldg=1.5, p_dist=2.0, p_bcast=0.75)
    rows = []
    for kid in ("K0", "K1", "K2", "K3", "K3c", "K4", "K5", "K6"):
        c = kernels.get(kid).counted
        cad = model.predict(c, planted) if c else 0.3
        ms = cad * 4096**3 / (32 * gpu4090.sms * gpu4090.sm_clock_mhz * 1e6) * 1e3
        rows.append({"kernel": kid, "M": 4096, "N": 4096, "K": 4096, "ms": ms})
    led = ledgers.ledger_table(pd.DataFrame(rows), gpu4090)
    for p in (model.fit_lstsq(led), model.calibrate_exact(led, decimals=None)):
        assert (p.p_ldg, p.p_dist, p.p_bcast) == pytest.approx((1.5, 2.0, 0.75))
    loo = model.leave_one_out(led)
    assert list(loo["kernel"]) == ["K2", "K3", "K3c", "K4", "K5"]
    assert np.allclose(loo["model_error_pct"], 0, atol=1e-6)


def test_lstsq_on_the_report(ledger):
    p = model.fit_lstsq(ledger)
    assert p.method == "lstsq" and p.kernels == ("K2", "K3", "K3c", "K4", "K5")
    # the report's exact prices are a nearby solution; least squares moves them by a few %
    assert p.p_dist == pytest.approx(2.69, rel=0.1)
    assert p.p_ldg == pytest.approx(1.94, rel=0.1)


def test_model_table(ledger):
    t = model.model_table(ledger)
    assert list(t["method"]) == ["exact", "lstsq"]
    assert list(t.columns[:4]) == ["method", "p_ldg", "p_dist", "p_bcast"]
    exact = t.set_index("method").loc["exact"]
    assert [round(exact[c], 2) for c in ("p_ldg", "p_dist", "p_bcast")] == [1.94, 2.69, 0.53]
    assert t["p_lds32"].isna().all()
    back = model.Prices.from_row(t.iloc[0].to_dict())
    assert back == model.calibrate_exact(ledger)


def test_calibration_shape_prefers_4096_then_largest(gpu4090):
    times = pd.read_csv(SEED_TIMES)
    small = times.assign(M=1024, N=1024, K=1024)
    assert model.calibration_shape(ledgers.ledger_table(pd.concat([small, times]), gpu4090)) == (4096,) * 3
    big = times.assign(M=8192, N=8192, K=8192)
    led = ledgers.ledger_table(pd.concat([small, big]), gpu4090)
    assert model.calibration_shape(led) == (8192,) * 3


def test_cannot_calibrate_without_k3(gpu4090):
    times = pd.read_csv(SEED_TIMES)
    led = ledgers.ledger_table(times[times["kernel"] != "K3"], gpu4090)
    with pytest.raises(InputError, match="cannot calibrate: no time for K3 at 4096x4096x4096"):
        model.calibrate_exact(led)
    with pytest.raises(InputError, match="K3"):
        model.model_table(led)


def test_leave_one_out_needs_four_kernels(gpu4090):
    times = pd.read_csv(SEED_TIMES)
    led = ledgers.ledger_table(times[times["kernel"].isin(["K0", "K2", "K3", "K4"])], gpu4090)
    assert model.fit_lstsq(led).kernels == ("K2", "K3", "K4")  # three prices from three kernels
    with pytest.raises(InputError, match="cannot leave one out.*3 kernels \\(K2, K3, K4\\)"):
        model.leave_one_out(led)


def test_prices_table(ledger, prices):
    empty = model.prices_table([])
    assert empty.empty and list(empty.columns) == list(model.MODEL_TABLE_COLUMNS)
    one = model.prices_table([prices])
    assert list(one["method"]) == ["exact"] and model.Prices.from_row(one.iloc[0].to_dict()) == prices


# --- the compiled ledger -------------------------------------------------------------------------


def sass_counts(lds32, lds128, ldg):
    """Loop-body counts per FFMA-normalised class, for a 32-FFMA loop body."""
    return {"loop_FFMA": 32, "loop_LDS32": lds32 * 32, "loop_LDS128": lds128 * 32, "loop_LDG32": ldg * 32}


def test_fit_sass_recovers_planted_prices(gpu4090):
    planted = {"ldg": 2.0, "lds32": 1.25, "lds128": 3.0}
    x = {  # per-FFMA ratios of each class (made up, but shaped like the kernels)
        "K2": (0, 0, 2), "K3": (2, 0, 0.0625), "K3c": (2, 0, 0.039), "K4": (1.125, 0, 0.0625),
        "K5": (0.125, 0.0625, 0.039), "K6": (0, 0.094, 0.0176), "T3": (0.5, 0.25, 0.0625),
    }
    rows, sass = [], []
    for kid, (a, b, g) in x.items():
        cad = planted["lds32"] * a + planted["lds128"] * b + planted["ldg"] * g
        ms = cad * 4096**3 / (32 * gpu4090.sms * gpu4090.sm_clock_mhz * 1e6) * 1e3
        rows.append({"kernel": kid, "M": 4096, "N": 4096, "K": 4096, "ms": ms})
        sass.append({"kernel": kid, **sass_counts(a, b, g)})
    led = ledgers.ledger_table(pd.DataFrame(rows), gpu4090)
    fit = model.fit_sass(led, pd.DataFrame(sass))
    assert (fit.p_ldg, fit.p_lds32, fit.p_lds128) == pytest.approx((2.0, 1.25, 3.0))
    assert fit.kernels == ("K3", "K3c", "K4", "K5", "K6")
    t = fit.predictions.set_index("kernel")
    assert t.loc["T3", "model_error_pct"] == pytest.approx(0, abs=1e-9)  # a Triton kernel, predicted
    mt = model.model_table(led, sass_df=pd.DataFrame(sass))
    sass_row = mt.set_index("method").loc["sass"]
    assert sass_row["p_lds128"] == pytest.approx(3.0) and math.isnan(sass_row["p_dist"])


def test_fit_sass_missing_class_is_nan(ledger):
    sass = pd.DataFrame([{"kernel": "K2", "loop_FFMA": 1, "loop_LDG32": 2},
                         {"kernel": "K3", "loop_FFMA": 32, "loop_LDS32": 64, "loop_LDG32": 2},
                         {"kernel": "K4", "loop_FFMA": 256, "loop_LDS32": 288, "loop_LDG32": 16}])
    fit = model.fit_sass(ledger, sass)
    assert fit.p_ldg == pytest.approx(ledger.set_index("kernel").at["K2", "cadence"] / 2)
    assert math.isnan(fit.p_lds128) and fit.p_lds32 > 0


def test_fit_sass_skips_kernels_without_a_loop(ledger):
    sass = pd.DataFrame([{"kernel": "K2", "loop_FFMA": 1, "loop_LDG32": 2},
                         {"kernel": "K3", "loop_FFMA": 32, "loop_LDS32": 64, "loop_LDG32": 2},
                         {"kernel": "K4", "loop_FFMA": float("nan")}])  # a failed compile
    fit = model.fit_sass(ledger, sass)
    assert list(fit.predictions["kernel"]) == ["K2", "K3"]
    with pytest.raises(InputError, match="SASS of K2"):
        model.fit_sass(ledger, sass.assign(loop_FFMA=[0, 32, 256]))
    with pytest.raises(InputError, match="no tiled CUDA kernel"):
        model.fit_sass(ledger, sass.iloc[:1])


def test_with_sass_replaces_the_sass_row(ledger):
    sass = pd.DataFrame([{"kernel": "K2", "loop_FFMA": 1, "loop_LDG32": 2},
                         {"kernel": "K3", "loop_FFMA": 32, "loop_LDS32": 64, "loop_LDG32": 2}])
    fit = model.fit_sass(ledger, sass)
    t = model.with_sass(model.with_sass(model.model_table(ledger), fit), fit)
    assert list(t["method"]) == ["exact", "lstsq", "sass"]
