"""The seed's model against this run: whether each reading replicates, and whether the prices are
determined by the kernels that set them (condition numbers and leave-one-out). CPU only."""

import numpy as np
import pandas as pd
import pytest

from study.derive import replication


def test_a_reading_replicates_only_where_it_holds_on_both_gpus():
    assert replication.reading(6.6, -4.0) == "replicates"
    assert replication.reading(-9.2, -48.2) == "does not replicate"  # the seed's K5 on the H200
    assert replication.reading(-72.8, -81.3) == "fails on both"
    assert replication.reading(-30.0, 5.0) == "fails on the seed GPU only"
    assert replication.reading(float("nan"), 1.0) == "not on both"


def test_the_ledger_system_of_the_seed_kernels_and_its_conditioning():
    # the counted ledgers per FMA (ldg, dist, bcast), worked by hand from the seed's inner loops:
    # K2 2 global loads per FMA; K3 1 + 1 shared per FMA, 2 global per 32 FMAs; K4 1/8 + 1 shared
    # per FMA, 16 global per 256 FMAs
    sys = replication._system(["K2", "K3", "K4"])
    assert sys == pytest.approx(np.array([[2, 0, 0], [2 / 32, 1, 1], [16 / 256, 1 / 8, 1]]))
    assert replication._system(["K3", "K4"])[:, 0].max() < 0.07  # without K2 the ldg column is ~0
    ident = replication.identifiability(
        pd.DataFrame({"method": ["exact", "lstsq"], "kernels": ["K2,K3,K4", "K2,K3,K3c,K4,K5"]}),
        pd.DataFrame({"kernel": ["K2", "K3"], "model_error_pct": [837.0, 26.0]}),
    ).set_index("method")
    assert ident.at["exact", "condition_number"] == pytest.approx(np.linalg.cond(sys))
    assert ident.at["lstsq", "without_kernel"] == "K2"  # the one kernel that holds up P_ldg
    assert ident.at["lstsq", "without_condition_number"] > replication.COND_LIMIT
    assert ident.at["lstsq", "loo_worst_kernel"] == "K2" and ident.at["lstsq", "identifiable"] == "no"


def test_prices_are_identifiable_where_leave_one_out_holds():
    assert replication.identifiable(4.0, 5.0) == "yes"
    assert replication.identifiable(12.0, 5.0) == "no"
    assert replication.identifiable(4.0, 80.0) == "no"
    assert replication.identifiable(float("nan"), 5.0) == ""
