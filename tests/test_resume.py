"""Rows are on disk as soon as each measurement ends; --resume measures only what is missing."""

import pandas as pd
import pytest

from study import experiments, kernels
from study.measure.plan import key, run_plan
from study.rundata import results

PROV = {"gpu": "test GPU", "run_id": "r1", "commit": "abc"}


def plan():
    ks = kernels.select("K1,K6")
    points = experiments.points("strides") + experiments.points("main")
    return [(p, k) for p in points for k in ks]


def fake_measure(calls, stop_after=None):
    def measure(k, shape):
        if stop_after is not None and len(calls) == stop_after:
            raise KeyboardInterrupt
        calls.append((k.id, shape))
        row = {"kernel": k.id, "impl": k.impl, "M": shape[0], "N": shape[1], "K": shape[2], "ms": 1.0,
               "rel_err": 1e-7}
        return {"row": row, "samples": [(0.0, 1500.0), (0.05, 1510.0)]}

    return measure


def files(tmp_path):
    return (results.ResultsFile(tmp_path / "results.csv"),
            results.ResultsFile(tmp_path / "clocks.csv", results.CLOCK_COLUMNS))


def test_interrupted_run_keeps_finished_rows_and_resume_measures_the_rest(tmp_path):
    rows, clocks = files(tmp_path)
    todo = plan()  # 3 points x 3 kernels; K6 runs 4100^3 where the others run 4097^3
    calls = []
    with pytest.raises(KeyboardInterrupt):
        run_plan(todo, fake_measure(calls, stop_after=4), rows, clocks, PROV)
    kept = pd.read_csv(rows.path)
    # 4 distinct (kernel, shape) measurements finished; 4096^3 is shared by strides and main,
    # so the rows on disk are exactly those finished before the interruption
    assert len(kept) == 4 and len(calls) == 4
    assert set(kept["gpu"]) == {"test GPU"} and set(kept["commit"]) == {"abc"}

    done = results.done_keys(rows.path)
    rest = [(p, k) for p, k in todo if key(p, k) not in done]
    assert len(rest) == len(todo) - 4
    calls2 = []
    run_plan(rest, fake_measure(calls2), rows, clocks, PROV)
    final = pd.read_csv(rows.path)
    assert len(final) == len(todo)
    assert not set(calls2) & set(calls)  # nothing measured twice
    assert final.duplicated(subset=results.KEY).sum() == 0


def test_shared_shapes_are_measured_once_per_run(tmp_path):
    rows, clocks = files(tmp_path)
    calls = []
    run_plan(plan(), fake_measure(calls), rows, clocks, PROV)
    # strides n=4096 and main are the same 4096^3 problem: 9 rows from 6 measurements
    assert len(pd.read_csv(rows.path)) == 9 and len(calls) == 6
    k6 = pd.read_csv(rows.path).query("kernel == 'K6' and label == 'n=4097'")
    assert (k6[["M", "N", "K"]].values == [[4100, 4100, 4100]]).all()
    assert len(pd.read_csv(clocks.path)) == 2 * 6  # each measurement's clock samples, once


def test_reused_rows_keep_their_numbers(tmp_path):
    rows, clocks = files(tmp_path)
    todo = plan()
    run_plan(todo[:3], fake_measure([]), rows, clocks, PROV)  # strides n=4096: K0, K1, K6
    memo = results.measured(rows.path)
    r = memo[("K1", (4096, 4096, 4096), 1)]["row"]  # (kernel, shape, pass)
    assert r["ms"] == 1.0 and r["rel_err"] == 1e-7 and r["config"] == ""


def test_append_many_writes_a_batch_with_one_fsync(tmp_path, monkeypatch):
    synced = []
    real = results.os.fsync
    monkeypatch.setattr(results.os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    f = results.ResultsFile(tmp_path / "clocks.csv", results.CLOCK_COLUMNS)
    f.append_many({"run_id": "r1", "kernel": "K1", "t_s": i / 20, "sm_clock_mhz": 1980.0} for i in range(50))
    assert len(synced) == 1
    f.append_many([])
    assert len(synced) == 1  # nothing to write, nothing synced
    f.append({"run_id": "r1", "kernel": "K2", "t_s": 0.0, "sm_clock_mhz": 1975.0})
    assert len(synced) == 2
    df = pd.read_csv(f.path)
    assert list(df.columns) == results.CLOCK_COLUMNS  # one header
    assert len(df) == 51 and list(df["kernel"][-2:]) == ["K1", "K2"] and df["t_s"].iloc[49] == 2.45
