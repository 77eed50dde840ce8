"""An autotuned kernel's candidates compiled in parallel children before its tuning pass
(triton_kernels.warm, TA's precompile): how the work is dealt, that a failing child costs nothing
but its share, and on the GPU that the tuning pass finds every binary the children compiled."""

from __future__ import annotations

import pytest

from triton_kernels import warm


def test_candidates_are_dealt_round_robin_to_the_children():
    assert warm.shares(10, 4) == [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
    assert warm.shares(3, 8) == [[0], [1], [2]]  # never an empty child
    assert warm.shares(5, 1) == [[0, 1, 2, 3, 4]]


def test_children_only_where_the_compiles_outweigh_their_start():
    assert warm.worker_count(7, cpus=16) == 0  # below MIN_CANDIDATES: compiled in-process
    assert warm.worker_count(8, cpus=16) == 8
    assert warm.worker_count(40, cpus=16) == 8  # at most MAX_WORKERS
    assert warm.worker_count(40, cpus=4) == 3  # one core left to the parent
    assert warm.worker_count(40, cpus=1) == 0


def test_a_child_that_fails_costs_its_share_and_raises_nothing(tmp_path, monkeypatch):
    """Two real children asked for a kernel that does not exist: both fail, warm says none
    finished, nothing is raised and nothing lands in Triton's cache."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    done = warm.warm("triton_kernels.ta_autotuned:no_such_kernel", ["float32"] * 3 + [64, 64, 64],
                     [0, 1], workers=2)
    assert done == 0
    assert not any(tmp_path.iterdir())


def test_no_children_when_told_none():
    assert warm.warm("triton_kernels.ta_autotuned:autotuned_matmul_kernel", [], list(range(20)),
                     workers=0) == 0


def _cubins(root):
    return sorted(p.parent.name for p in root.rglob("tiled_matmul_kernel.cubin"))


@pytest.mark.gpu
def test_the_tuning_pass_finds_every_binary_the_children_compiled(tmp_path, monkeypatch):
    """On a fresh Triton cache, TA's precompile at a shape no other test uses (padded rows of
    1001 elements) leaves one binary per candidate there; the tuning pass that follows adds none
    (each of its compiles was a hit) and its product is right."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from study.measure import bench
    from triton_kernels import ta_autotuned

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    M = N = K = 1000
    ld = 1001
    a0, b0 = bench.random_inputs(M, N, K, seed=7)
    a = torch.empty(M, ld, device="cuda")[:, :K].copy_(a0)
    b = torch.empty(K, ld, device="cuda")[:, :N].copy_(b0)
    out = torch.full((M, ld), float("nan"), device="cuda")[:, :N]
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
    n = len(ta_autotuned.candidates(M, N, K))
    assert n >= warm.MIN_CANDIDATES
    done = ta_autotuned.precompile(M, N, K, strides)
    assert done == warm.worker_count(n) > 0
    compiled = _cubins(tmp_path)
    assert len(compiled) == n
    ta_autotuned.matmul(a, b, out)
    torch.cuda.synchronize()
    assert _cubins(tmp_path) == compiled
    assert ta_autotuned.best_config(M, N, K) in ta_autotuned.candidates(M, N, K)
    assert bench.relative_error(out, a0.double() @ b0.double()) <= bench.TOLERANCE
