"""The registry is the one list of kernels: its counts must agree with the tiles they describe."""

from pathlib import Path

import pytest

from study import kernels
from study.errors import InputError

REPO = Path(__file__).resolve().parent.parent


def test_cuda_and_cublas_ids_are_the_study_s():
    ids = [k.id for k in kernels.KERNELS if k.impl in ("cuda", "cublas")]
    assert ids == ["K0", "K1", "K2", "K3", "K3c", "K4", "K5", "K6"]


def test_ids_are_unique_and_baseline_is_cublas():
    assert len(kernels.IDS) == len(set(kernels.IDS))
    assert kernels.BASELINE.id == "K0" and kernels.BASELINE.impl == "cublas"


@pytest.mark.parametrize("k", [k for k in kernels.KERNELS if k.source], ids=lambda k: k.id)
def test_source_exists_and_names_its_symbol(k):
    src = REPO / k.source
    assert src.is_file(), f"{k.id}: {k.source} missing"
    assert k.symbol in src.read_text(), f"{k.id}: {k.symbol} not defined in {k.source}"


COUNTED = [k for k in kernels.KERNELS if k.counted]


@pytest.mark.parametrize("k", COUNTED, ids=lambda k: k.id)
def test_counts_agree_with_the_tile(k):
    c = k.counted
    # every output takes one FMA per k, so a phase holds outputs x phase_k FMAs per thread
    assert c.fma_per_phase == c.outputs * c.phase_k
    if k.tile and k.impl == "cuda":  # T1's (32, 32, 1) is a launch tile: no shared-memory reuse
        bm, bn, bk = k.tile
        assert bk == c.phase_k == 32
        # the block's threads together own the block tile ...
        assert c.outputs * k.threads == bm * bn
        # ... and together load the A (BM x BK) and B (BK x BN) tiles once per phase
        assert c.elems_per_phase * k.threads == (bm + bn) * bk
        # a load instruction carries ldg_bits / 32 elements
        assert c.ldg_per_phase * (c.ldg_bits // 32) == c.elems_per_phase


def test_t1_counts_are_k2_s_no_reuse_ledger():
    # T1's SASS loop: 16 LDG.E per 8 FFMA, i.e. two global loads per FMA and no shared memory
    t1, k2 = kernels.get("T1").counted, kernels.get("K2").counted
    assert (t1.lds_dist, t1.lds_bcast, t1.ldg_per_phase / t1.fma_per_phase) == (0, 0, 2)
    assert (t1.elems_per_phase, t1.outputs, t1.phase_k) == (k2.elems_per_phase, k2.outputs, k2.phase_k)
    assert t1.req_per_fma is None  # the request ledger is K1/K2's alone


def test_k1_k2_request_ledger():
    assert kernels.get("K1").counted.req_per_fma == 33  # A: 32 rows apart; B: one broadcast
    assert kernels.get("K2").counted.req_per_fma == 2  # A broadcast + B coalesced


def test_calibration_kernels_are_k2_k3_k4():
    assert {k.id: k.calibrates for k in kernels.KERNELS if k.calibrates} == {
        "K2": "ldg", "K3": "lds", "K4": "lds"}


@pytest.mark.parametrize("k", [k for k in kernels.KERNELS if k.twin], ids=lambda k: k.id)
def test_triton_twins_match_their_cuda_tile_and_threads(k):
    assert k.impl == "triton"
    twin = kernels.get(k.twin)
    if k.id == "T1":  # the no-reuse spelling: no shared-memory tile to match
        return
    assert k.tile == twin.tile
    assert k.threads == twin.threads


def test_k6_constraint_message_names_the_rule():
    k6 = kernels.get("K6")
    msg = k6.constraint_error(4096, 4097, 4096)
    assert msg and "multiple of 4" in msg and "N = 4097" in msg
    assert k6.constraint_error(4096, 4096, 4098) and "K = 4098" in k6.constraint_error(4096, 4096, 4098)
    assert k6.constraint_error(4097, 4100, 4100) is None  # M is free
    assert kernels.get("K5").constraint_error(4097, 4097, 4097) is None


def test_select():
    assert [k.id for k in kernels.select("K1,K6")] == ["K0", "K1", "K6"]
    with pytest.raises(InputError, match="K9"):
        kernels.select("K1,K9")
    with pytest.raises(InputError, match="empty"):
        kernels.select(" , ")


def test_unknown_id_is_bad_input_not_a_key_error():
    with pytest.raises(InputError, match="unknown kernel id 'K9'; known: K0") as e:
        kernels.get("K9")
    assert isinstance(e.value, ValueError) and not isinstance(e.value, KeyError)


def test_select_takes_a_repeated_id_once_in_first_order():
    assert [k.id for k in kernels.select("K3,K3")] == ["K0", "K3"]
    assert [k.id for k in kernels.select("K6,K1,K6,K0,K1")] == ["K6", "K1", "K0"]


@pytest.mark.parametrize("cuda, triton", [
    ("K1", []), ("K2", ["T1"]), ("K3", ["T3", "T3p"]), ("K3c", ["T3c", "T3cp"]), ("K4", ["T4", "T4p"]),
    ("K5", ["T5", "T5p"]),  # same tile and threads, although their twin field names K6
    ("K6", ["T5", "T5p"]),
])
def test_twins_of(cuda, triton):
    assert [t.id for t in kernels.twins_of(cuda)] == triton


def test_every_twin_field_is_found_by_twins_of():
    for t in kernels.by_impl("triton"):
        if t.twin:
            assert t in kernels.twins_of(t.twin)
    with pytest.raises(InputError, match="K9"):
        kernels.twins_of("K9")
