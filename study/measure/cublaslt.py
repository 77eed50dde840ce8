"""K0L: the vendor's strongest FP32 kernel at a shape: every algorithm cuBLASLt's heuristic offers
for the problem (FP32 compute, no TF32), each timed as the study times kernels, the fastest kept.

Through nvmath-python (``nvmath.linalg.advanced.Matmul``), where it is installed: on the first
launch at a shape the heuristic's algorithms are planned, each is checked against torch's product
of the same operands and timed briefly with the L2 flushed before every repetition
(``bench.time_cuda``), and the fastest is used for that shape from then on. ``chosen(M, N, K)``
says which it was (algorithm id, tile, stages, split-K, reduction scheme, the kernel cuBLAS
launched for it, how many algorithms were timed, the cuBLASLt version): the row's ``config``.
Without nvmath the launch raises ImportError with the reason, so the run's correctness check
leaves K0L out with one line and measures the rest.
"""

from __future__ import annotations

import json

from study.errors import InputError

LIMIT = 32  # algorithms asked of the heuristic
CHOICE_TARGET_S = 0.05  # timed seconds per candidate while choosing
_CHOSEN: dict[tuple, dict] = {}  # (M, N, K, device) -> {"mm": Matmul, "algorithm": ..., "info": {...}}


def _nvmath():
    try:
        import nvmath  # noqa: F401
        from nvmath.linalg import advanced
    except Exception as e:  # a missing or broken install: the reason, in one line
        raise ImportError(f"K0L needs nvmath-python (cuBLASLt's algorithms): {type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''}") from None
    return advanced


def version() -> str:
    """cuBLASLt's version as nvmath loads it ("" where nvmath is not there)."""
    try:
        from nvmath.bindings import cublasLt

        return str(cublasLt.get_version())
    except Exception:
        return ""


def _check(a, b, out):
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise InputError(f"K0L: a {tuple(a.shape)} and b {tuple(b.shape)} are not a matrix product")
    if out is None or tuple(out.shape) != (a.shape[0], b.shape[1]):
        raise InputError("K0L writes into a given out of shape M x N")
    for t in (a, b, out):
        if str(t.dtype) != "torch.float32" or not t.is_contiguous() or not t.is_cuda:
            raise InputError("K0L takes contiguous float32 CUDA tensors")


def _plan(advanced, a, b, out):
    opts = advanced.MatmulOptions(compute_type=advanced.MatmulComputeType.COMPUTE_32F, inplace=True)
    mm = advanced.Matmul(a, b, c=out, beta=0.0, options=opts)
    algorithms = mm.plan(preferences=advanced.MatmulPlanPreferences(limit=LIMIT))
    return mm, list(algorithms)


def _describe(algorithm) -> dict:
    info = {"algorithm_id": int(algorithm.algorithm_id)}
    for name in ("tile", "stages", "split_k", "reduction_scheme", "cluster_shape"):
        try:
            v = getattr(algorithm, name)
        except Exception:  # an attribute this algorithm does not have
            continue
        info[name] = v if isinstance(v, (int, str)) else (list(v) if isinstance(v, tuple) else str(v))
    return info


def _choose(a, b, out) -> dict:
    import torch

    from study.measure import baseline, bench

    advanced = _nvmath()
    mm, algorithms = _plan(advanced, a, b, out)
    ref = torch.matmul(a, b)
    flush = bench.L2Flush(torch.cuda.get_device_properties(a.device).L2_cache_size)
    timed = []
    for i, algo in enumerate(algorithms):
        try:
            out.fill_(float("nan"))
            mm.execute(algorithm=algo)
            torch.cuda.synchronize()
            if not bench.relative_error(out, ref.double()) <= bench.TOLERANCE:
                continue  # an algorithm that does not compute this product right is not a candidate
            t = bench.time_cuda(lambda algo=algo: mm.execute(algorithm=algo), flush,
                                target_s=CHOICE_TARGET_S)
        except Exception:  # an algorithm the heuristic offers but that cannot run here
            continue
        timed.append((t.ms, i, algo))
    if not timed:
        raise RuntimeError(f"K0L: none of the {len(algorithms)} cuBLASLt algorithms offered computed "
                           "the product")
    ms, rank, best = min(timed, key=lambda x: (x[0], x[1]))
    info = {**_describe(best), "heuristic_rank": rank, "timed": len(timed), "offered": len(algorithms),
            "kernel": baseline.kernel_names(lambda: mm.execute(algorithm=best)) or "not named",
            "cublaslt": version()}
    return {"mm": mm, "algorithm": best, "info": info}


def best_matmul(a, b, out=None):
    """``out = a @ b`` (FP32) with the fastest cuBLASLt algorithm for this shape (chosen on the
    first launch at it)."""
    _check(a, b, out)
    key = (a.shape[0], b.shape[1], a.shape[1], a.device.index)
    if key not in _CHOSEN:
        _CHOSEN[key] = _choose(a, b, out)
    c = _CHOSEN[key]
    reset = getattr(c["mm"], "reset_operands_unchecked", c["mm"].reset_operands)  # same shapes: the key
    reset(a=a, b=b, c=out)
    c["mm"].execute(algorithm=c["algorithm"])
    return out


def chosen(M: int, N: int, K: int) -> dict | None:
    """What K0L runs at M x N x K (``_describe`` of the algorithm, the kernel, the version), once it
    has chosen there; None before."""
    for (m, n, k, _), c in _CHOSEN.items():
        if (m, n, k) == (M, N, K):
            return json.loads(json.dumps(c["info"]))
    return None
