"""The per-kernel figures of `docs/method.md#figures`, replayed on the RTX 4090 report's times.

Expected numbers are the report's published figures (the seed replay, `docs/method.md#seed`), not
this code's output.
"""

import math

import pandas as pd
import pytest

from study import kernels
from study.derive import ledgers
from study.errors import InputError
from study.rundata.gpu import GPU

SEED_TIMES = "reports/data/rtx4090_seed.csv"
SEED_GPU = "reports/data/rtx4090_seed_gpu.json"

# published in the report
GFLOPS = {"K0": 57242.4, "K1": 648.6, "K2": 5324.0, "K3": 6184.0, "K3c": 6690.6, "K4": 20770.6,
          "K5": 34506.4, "K6": 40928.8}
ATTAINMENT = {"K1": 257.4, "K2": 2112.7, "K3": 77.0, "K3c": 52.2, "K4": 258.6, "K5": 269.1, "K6": 319.2}
CADENCE = {"K1": 31.83, "K2": 3.88, "K3": 3.34, "K3c": 3.09, "K4": 0.99, "K5": 0.60, "K6": 0.50}
CYCLES_PER_LOAD = {"K1": 15.91, "K2": 1.94, "K3": 1.62, "K3c": 1.51, "K4": 0.84, "K5": 1.45, "K6": 4.85}
BYTES_PER_OUT = {"K1": 32772, "K2": 32772, "K3": 1028, "K3c": 644, "K4": 1028, "K5": 644, "K6": 644}


@pytest.fixture(scope="module")
def gpu4090():
    return GPU.from_json(SEED_GPU)


@pytest.fixture(scope="module")
def table(gpu4090):
    t = ledgers.ledger_table(pd.read_csv(SEED_TIMES), gpu4090)
    return t.set_index("kernel")


def counted(kid):
    return kernels.get(kid).counted


@pytest.mark.parametrize("kid", GFLOPS)
def test_gflops(table, kid):
    assert table.at[kid, "gflops"] == pytest.approx(GFLOPS[kid], abs=0.05)


@pytest.mark.parametrize("kid", ATTAINMENT)
def test_attainment(table, kid):
    assert table.at[kid, "attainment_pct"] == pytest.approx(ATTAINMENT[kid], abs=0.1)


@pytest.mark.parametrize("kid", CADENCE)
def test_cadence(table, kid):
    assert table.at[kid, "cadence"] == pytest.approx(CADENCE[kid], abs=0.005)


@pytest.mark.parametrize("kid", CYCLES_PER_LOAD)
def test_cycles_per_load(table, kid):
    assert table.at[kid, "cycles_per_load"] == pytest.approx(CYCLES_PER_LOAD[kid], abs=0.05)


@pytest.mark.parametrize("kid", BYTES_PER_OUT)
def test_bytes_per_out(table, kid):
    assert ledgers.bytes_per_out(counted(kid), 4096) == BYTES_PER_OUT[kid]
    assert table.at[kid, "bytes_per_out"] == BYTES_PER_OUT[kid]


def test_cublas_row(table):
    assert table.at["K0", "pct_peak"] == pytest.approx(69.32, abs=0.005)
    assert table.at["K0", "pct_cublas"] == 100
    for col in ledgers.INSTRUCTION_COLUMNS + ledgers.BYTE_COLUMNS:
        assert math.isnan(table.at["K0", col]), col


def test_k6_share_of_cublas_and_sampled_caliber(table):
    assert table.at["K6", "pct_cublas"] == pytest.approx(71.5, abs=0.05)
    assert table.at["K6", "pct_peak"] == pytest.approx(49.57, abs=0.005)
    # the report printed 47.32 (49.57 x 0.955); 2520/2640 exactly gives 47.312
    assert table.at["K6", "pct_peak_sampled"] == pytest.approx(47.32, abs=0.01)


def test_counted_figures():
    c3 = counted("K3")
    assert (ledgers.dist(c3), ledgers.bcast(c3), ledgers.ldg(c3)) == (1, 1, 0.0625)
    assert ledgers.loads_per_fma(c3) == 2.0625
    assert ledgers.ai(4096, ledgers.bytes_per_out(c3, 4096)) == pytest.approx(7.969, abs=5e-4)
    assert ledgers.loads_per_fma(counted("K4")) == 1.1875
    assert ledgers.loads_per_fma(counted("K5")) == pytest.approx(0.414, abs=5e-4)
    assert ledgers.loads_per_fma(counted("K6")) == pytest.approx(0.1035, abs=5e-5)
    assert ledgers.ldg(counted("K3c")) == pytest.approx(0.039, abs=5e-4)
    assert ledgers.req_per_fma(counted("K1")) == 33
    assert ledgers.req_per_fma(counted("K2")) == 2
    assert math.isnan(ledgers.req_per_fma(c3))


def test_request_ledger(table):
    assert table.at["K1", "cycles_per_request"] == pytest.approx(0.96, abs=0.005)
    assert table.at["K2", "cycles_per_request"] == pytest.approx(1.94, abs=0.005)


def test_roof_k3(gpu4090):
    roof = ledgers.roof_gflops(ledgers.ai(4096, 1028), gpu4090.dram_gbps())
    assert roof == pytest.approx(8033, abs=0.5)


def test_tile_bytes_match_counted_for_tiled_kernels():
    for kid in ("K3", "K3c", "K4", "K5", "K6"):
        bm, bn, _ = kernels.get(kid).tile
        assert ledgers.bytes_per_out_tile(bm, bn, 4096) == ledgers.bytes_per_out(counted(kid), 4096)


def test_phases_round_up():
    # K = 33 needs two 32-wide phases, the second one partial
    assert ledgers.bytes_per_out(counted("K3"), 33) == 2 * 2 * 4 + 4


def test_tile_bytes_round_phases_up_like_the_counted_ledger():
    # K = 4097: 129 phases of 32, each loading 32 of A's and 32 of B's values per 32x32 outputs:
    # 129 x 2 x 4 + 4 = 1036 bytes per output (4*K*(1/32+1/32)+4 would give 1028.25)
    assert ledgers.bytes_per_out(counted("K3"), 4097) == 1036
    assert ledgers.bytes_per_out_tile(32, 32, 4097) == 1036
    assert ledgers.bytes_per_out_tile(32, 32, 4097, BK=32) == ledgers.bytes_per_out(counted("K3"), 4097)
    # 32x128 at K = 4097: 129 x 32 x (1/32 + 1/128) x 4 + 4 = 649
    assert ledgers.bytes_per_out_tile(32, 128, 4097) == ledgers.bytes_per_out(counted("K5"), 4097) == 649
    # a 64-deep phase: ceil(4097/64) = 65 phases
    assert ledgers.bytes_per_out_tile(64, 64, 4097, BK=64) == 65 * 64 * (2 / 64) * 4 + 4


def test_t1_has_k2_s_byte_ledger(gpu4090):
    # no on-chip reuse: two 4-byte loads per output per k plus the write, 8K + 4 = 32772 at 4096,
    # not the 1028 its (32, 32, 1) launch tile would give
    times = pd.DataFrame({"kernel": ["K2", "T1"], "M": 4096, "N": 4096, "K": 4096, "ms": [25.815, 30.0]})
    t = ledgers.ledger_table(times, gpu4090).set_index("kernel")
    assert t.at["T1", "bytes_per_out"] == 8 * 4096 + 4 == t.at["K2", "bytes_per_out"]
    assert t.at["T1", "loads_per_fma"] == 2.0
    assert math.isnan(t.at["T1", "req_per_fma"])  # the request ledger is K1/K2's alone


def test_twin_ratio_is_triton_gflops_over_cuda_gflops():
    assert ledgers.twin_ratio(6000.0, 4000.0) == 1.5  # > 1: the Triton twin is faster
    # from times at one shape: GFLOP/s is 2MNK/t, so the ratio is t_cuda / t_triton
    g_t, g_c = ledgers.gflops(4096, 4096, 4096, 2.0), ledgers.gflops(4096, 4096, 4096, 3.0)
    assert ledgers.twin_ratio(g_t, g_c) == pytest.approx(1.5)


# --- properties --------------------------------------------------------------------------------


def test_cadence_is_linear_in_time():
    a = ledgers.cadence(4096, 4096, 4096, 1.0, 132, 1980)
    assert ledgers.cadence(4096, 4096, 4096, 2.0, 132, 1980) == pytest.approx(2 * a)


def test_share_of_cublas_ignores_the_caliber(gpu4090):
    times = pd.read_csv(SEED_TIMES)
    a = ledgers.ledger_table(times, gpu4090)
    b = ledgers.ledger_table(times.assign(sm_clock_mhz=2000.0), gpu4090)
    faster = GPU(**{**gpu4090.to_dict(), "sm_clock_mhz": 3000})
    c = ledgers.ledger_table(times, faster)
    pd.testing.assert_series_equal(a["pct_cublas"], b["pct_cublas"])
    pd.testing.assert_series_equal(a["pct_cublas"], c["pct_cublas"])
    assert not a["pct_peak"].equals(c["pct_peak"])
    assert b["cadence_sampled"].iloc[0] == pytest.approx(a["cadence"].iloc[0] * 2000 / 2520)


def test_sampled_clock_column_wins_over_the_gpu_default(gpu4090):
    times = pd.read_csv(SEED_TIMES)
    times["sm_clock_mhz"] = [2600.0] + [float("nan")] * (len(times) - 1)
    t = ledgers.ledger_table(times, gpu4090)
    assert list(t["sampled_clock_mhz"][:2]) == [2600.0, 2640.0]
    no_sample = GPU(**{k: v for k, v in gpu4090.to_dict().items() if k != "sampled_sm_clock_mhz"})
    t = ledgers.ledger_table(pd.read_csv(SEED_TIMES), no_sample)
    assert t["pct_peak_sampled"].isna().all() and t["cadence_sampled"].isna().all()


def test_floor():
    assert ledgers.cadence_floor(128) == 0.25
    assert ledgers.cadence_floor(64) == 0.5


def test_pct_cublas_pairs_by_shape(gpu4090):
    times = pd.DataFrame({"kernel": ["K0", "K6", "K6"], "M": [4096, 4096, 1024], "N": 4096, "K": 4096,
                          "ms": [2.0, 4.0, 1.0]})
    t = ledgers.ledger_table(times, gpu4090)
    assert t["pct_cublas"].iloc[1] == pytest.approx(50)
    assert math.isnan(t["pct_cublas"].iloc[2])


def test_triton_rows(gpu4090):
    times = pd.DataFrame({"kernel": ["T3", "T5p", "TA", "TA"], "M": 4096, "N": 4096, "K": 4096,
                          "ms": [10.0, 4.0, 3.0, 3.0], "BM": [None, None, None, 64],
                          "BN": [None, None, None, 64]})
    t = ledgers.ledger_table(times, gpu4090).reset_index(drop=True)
    assert t.at[0, "bytes_per_out"] == 1028 and t.at[1, "bytes_per_out"] == 644
    assert math.isnan(t.at[2, "bytes_per_out"])
    assert t.at[3, "bytes_per_out"] == ledgers.bytes_per_out_tile(64, 64, 4096)
    for col in ledgers.INSTRUCTION_COLUMNS + ledgers.MODEL_COLUMNS:
        assert t[col].isna().all(), col
    assert math.isnan(t.at[0, "pct_cublas"])


def test_extra_columns_are_kept_and_a_ledger_can_be_fed_back(gpu4090):
    times = pd.read_csv(SEED_TIMES).assign(experiment="E1")
    t = ledgers.ledger_table(times, gpu4090)
    assert (t["experiment"] == "E1").all()
    again = ledgers.ledger_table(t, gpu4090)
    pd.testing.assert_frame_equal(t, again)


# --- bad input -----------------------------------------------------------------------------------


def test_missing_column(gpu4090):
    with pytest.raises(InputError, match="'ms'"):
        ledgers.ledger_table(pd.read_csv(SEED_TIMES).drop(columns="ms"), gpu4090)


@pytest.mark.parametrize("bad", [0, -1.5, "slow", None, float("inf")])
def test_bad_time(gpu4090, bad):
    times = pd.read_csv(SEED_TIMES).astype({"ms": object})
    times.loc[3, "ms"] = bad
    with pytest.raises(InputError, match="K3 at 4096x4096x4096") as e:
        ledgers.ledger_table(times, gpu4090)
    assert "\n" not in str(e.value)


def test_bad_dimension(gpu4090):
    times = pd.read_csv(SEED_TIMES)
    times.loc[2, "N"] = 0
    with pytest.raises(InputError, match="N of K2") as e:
        ledgers.ledger_table(times, gpu4090)
    assert str(e.value).endswith("got 0") and "np." not in str(e.value)


def test_blank_time_is_named_plainly(gpu4090):
    times = pd.read_csv(SEED_TIMES)
    times.loc[3, "ms"] = float("nan")
    with pytest.raises(InputError, match="K3 at 4096x4096x4096") as e:
        ledgers.ledger_table(times, gpu4090)
    assert str(e.value).endswith("got an empty cell") and "np." not in str(e.value)


@pytest.mark.parametrize("value", [1e20, 2**31, float("inf")])
def test_dimension_beyond_32_bits_is_refused(gpu4090, value):
    times = pd.read_csv(SEED_TIMES).astype({"M": float})
    times.loc[5, "M"] = value  # would wrap in astype(int64) or overflow the kernels' int sizes
    with pytest.raises(InputError, match=r"M of K4 \(row 5\) must be at most 2147483647") as e:
        ledgers.ledger_table(times, gpu4090)
    assert "np." not in str(e.value)
    times.loc[5, "M"] = 2**31 - 1  # the largest accepted
    assert ledgers.ledger_table(times, gpu4090).at[5, "M"] == 2**31 - 1


def test_messages_name_the_caller_s_row(gpu4090):
    times = pd.read_csv(SEED_TIMES).iloc[2:].copy()  # rows 2.. of the file, as a filter keeps them
    times.loc[4, "K"] = -1  # K3c, the 3rd row left
    with pytest.raises(InputError, match=r"K of K3c \(row 4\)"):
        ledgers.ledger_table(times, gpu4090)


@pytest.mark.parametrize("bm", ["x", None, float("nan"), 0, -32, float("inf")])
def test_tile_that_is_not_a_positive_number_counts_as_missing(gpu4090, bm):
    times = pd.DataFrame({"kernel": ["TA", "T3"], "M": 4096, "N": 4096, "K": 4096, "ms": 3.0,
                          "BM": [bm, bm], "BN": [64, 64]})
    t = ledgers.ledger_table(times, gpu4090)
    assert math.isnan(t.at[0, "bytes_per_out"])  # TA: no registry tile either
    assert t.at[1, "bytes_per_out"] == 1028  # T3 falls back to its registry tile


def test_unknown_kernel(gpu4090):
    times = pd.read_csv(SEED_TIMES)
    times.loc[1, "kernel"] = "Kx9"
    with pytest.raises(InputError, match="Kx9"):
        ledgers.ledger_table(times, gpu4090)


def test_empty_times(gpu4090):
    with pytest.raises(InputError, match="empty"):
        ledgers.ledger_table(pd.read_csv(SEED_TIMES).iloc[:0], gpu4090)


def test_stride_loads_add_synchronous_and_async_loads_by_width():
    from study.derive import experiment_tables as tables

    shape = {"M": 4096, "N": 4096, "K": 4096}
    t5p = {"kernel": "T5p", "impl": "triton", **shape, "specialised": True, "loop_LDG32": 1, "loop_LDG64": 0,
           "loop_LDG128": 2, "loop_LDGSTS32": 3, "loop_LDGSTS64": 0, "loop_LDGSTS128": 8, "error": ""}
    k6 = {"kernel": "K6", "impl": "cuda", "M": 4097, "N": 4097, "K": 4097, "specialised": False,
          "error": "refused"}
    widths = pd.DataFrame([t5p, k6])
    got = tables.stride_loads(widths).set_index("kernel")
    assert (got.at["T5p", "loads_128"], got.at["T5p", "loads_32"], got.at["T5p", "async"]) == (10, 4, True)
    assert pd.isna(got.at["K6", "loads_128"]) and got.at["K6", "error"] == "refused"
    assert not got.at["K6", "async"]
