"""Counters bound to the timed run: a (kernel, shape)'s counters are used only where they were read
at the commit its time was measured at, with the launch it timed (an autotuned kernel's
configuration, a kernel of several paths' function); the others are listed as stale. CPU only."""

import json

import pandas as pd

from study.derive import currency

CFG = {"BM": 256, "BN": 64, "BK": 32, "GROUP_M": 8, "MASK_MN": True, "num_warps": 8, "num_stages": 3}
OTHER = {**CFG, "BM": 64, "BK": 64, "num_warps": 4, "num_stages": 2}


def ncu_rows(kernel, commit, M=4096, config=None, ncu_kernel="k", run_id="r2"):
    return [{"kernel": kernel, "M": M, "N": 4096, "K": 4096, "launch": 0, "ncu_kernel": ncu_kernel,
             "config": json.dumps(config) if config else "", "metric": "smsp__inst_executed.sum",
             "value": 1.0, "commit": commit, "run_id": run_id}]


def timed(kernel, commit, M=4096, config=None, symbol=""):
    return {"experiment": "main", "label": "main", "kernel": kernel, "M": M, "N": 4096, "K": 4096,
            "ms": 1.0, "commit": commit, "config": json.dumps(config) if config else "", "symbol": symbol}


def test_counters_of_another_commit_or_config_are_stale():
    ncu = pd.DataFrame(ncu_rows("K12", "abc", ncu_kernel="k12_lean_issue")
                       + ncu_rows("K6", "old", ncu_kernel="k6_vectorized")
                       + ncu_rows("TA", "abc", config=OTHER, ncu_kernel="tiled_matmul_kernel")
                       + ncu_rows("K0", "abc", M=1, ncu_kernel="gemv"))
    times = pd.DataFrame([timed("K12", "abc", symbol="k12_lean_issue"), timed("K6", "abc"),
                          timed("TA", "abc", config=CFG)])
    current, stale = currency.split(ncu, times)
    assert set(current["kernel"]) == {"K12"}
    why = dict(zip(stale["kernel"], stale["why"]))
    assert why["K6"] == "read at commit old; timed at abc"
    assert why["TA"].startswith("read with") and '"BM": 64' in why["TA"] and '"BM": 256' in why["TA"]
    assert why["K0"] == "no time at this shape in the run"


def test_the_config_the_run_timed_makes_an_autotuned_kernels_counters_current():
    ncu = pd.DataFrame(ncu_rows("TA", "abc", config=CFG))
    current, stale = currency.split(ncu, pd.DataFrame([timed("TA", "abc", config=CFG)]))
    assert len(stale) == 0 and len(current) == 1
    # without the configuration recorded beside them, an autotuned kernel's counters say nothing
    bare = pd.DataFrame(ncu_rows("TA", "abc"))
    _, stale = currency.split(bare, pd.DataFrame([timed("TA", "abc", config=CFG)]))
    assert "not recorded" in stale["why"].iloc[0]


def test_a_profile_of_another_function_is_stale():
    ncu = pd.DataFrame(ncu_rows("KD", "abc", M=32, ncu_kernel="kd_gemv_m8"))
    _, stale = currency.split(ncu, pd.DataFrame([timed("KD", "abc", M=32, symbol="kd_gemm_m32")]))
    assert stale["why"].iloc[0] == "read of kd_gemv_m8; the timed rows launched kd_gemm_m32"


def test_only_the_latest_profile_of_a_kernel_and_shape_counts():
    ncu = pd.DataFrame(ncu_rows("K12", "old", run_id="r1") + ncu_rows("K12", "abc", run_id="r2"))
    current, stale = currency.split(ncu, pd.DataFrame([timed("K12", "abc")]))
    assert set(current["run_id"]) == {"r2"} and len(stale) == 0


def test_a_call_of_several_kernels_is_read_whole():
    # G12T's call: its transposition, then the product the registry names; both read in one profile
    ncu = pd.DataFrame(ncu_rows("G12T", "abc", ncu_kernel="transpose_kernel")
                       + [{**r, "launch": 1} for r in ncu_rows("G12T", "abc", ncu_kernel="g12_kernel")])
    current, stale = currency.split(ncu, pd.DataFrame([timed("G12T", "abc", symbol="g12_kernel")]))
    assert len(stale) == 0 and set(current["ncu_kernel"]) == {"transpose_kernel", "g12_kernel"}
    # neither of the kernels read is the one the timed rows name: stale, both named
    _, stale = currency.split(ncu, pd.DataFrame([timed("G12T", "abc", symbol="g15_kernel")]))
    assert stale["why"].iloc[0] == "read of g12_kernel, transpose_kernel; the timed rows launched g15_kernel"
