"""The registry's kernel order and the experiments' points as derive uses them, and the two tables
that record them for the report (``kernels.csv``, ``points.csv``): the report renders a run in the
terms of the derivation that wrote it, and never reads the registry itself.
"""

from __future__ import annotations

import pandas as pd

from study import experiments
from study import kernels as registry
from study.rundata import rows
from study.rundata.tables import T


def order(kid: str) -> int:
    return rows.order(kid, registry.IDS)


def in_order(df: pd.DataFrame) -> pd.DataFrame:
    return rows.in_order(df, registry.IDS)


def main_rows(df: pd.DataFrame) -> pd.DataFrame:
    return rows.main_rows(df, registry.IDS)


def defined(experiment: str) -> list[tuple[str, tuple[int, int, int]]]:
    """The (label, shape) pairs that define ``experiment``, in its order."""
    return [(p.label, (p.M, p.N, p.K)) for p in experiments.points(experiment)]


def labels_in(df: pd.DataFrame, experiment: str) -> list[tuple[str, tuple[int, int, int]]]:
    return rows.labels_in(df, defined(experiment))


def stride_labels() -> tuple[str, str]:
    """The stride experiment's pair: the power-of-two stride first."""
    a, b = experiments.points("strides")
    return a.label, b.label


def _roles(k) -> list[str]:
    roles = []
    if k is registry.BASELINE:
        roles.append("baseline")
    if k in registry.cuda_ladder():
        roles.append("rung")
    if k in registry.tuned_kernels():
        roles.append("tuned")
    if k in registry.request_ledger_kernels():
        roles.append("request_ledger")
    if k.calibrates:
        roles.append(f"calibrates_{k.calibrates}")
    if k.precision != "fp32":
        roles.append("tensor_core")
    return roles


def kernels_table() -> pd.DataFrame:
    """The registry as this derivation saw it, one row per kernel in registry order: id, impl,
    order, idea, twin, tile, threads, pipeline depth, Gluon, the shapes it is meant for, its roles
    (``baseline``, ``rung`` of the ladder, ``tuned``, ``request_ledger``, a calibrator's
    ``calibrates_ldg``/``calibrates_lds``, ``tensor_core`` beside the study), the CUDA kernels it
    is a software-pipelined ``tl.dot`` twin of (``pipelined_twin_of``), its counted requests per
    FMA (the request ledger) and its
    notes. What the report selects by role it selects from here (``study.report.load.Run``)."""
    ladder = registry.cuda_ladder()
    out = []
    for i, k in enumerate(registry.REGISTRY):
        out.append({
            "id": k.id, "impl": k.impl, "order": i, "idea": k.idea, "twin": k.twin or "",
            "tile": "x".join(map(str, k.tile)) if k.tile else "", "threads": k.threads,
            "num_stages": k.num_stages, "gluon": "yes" if k.gluon else "", "meant_for": k.meant_for or "",
            "roles": " ".join(_roles(k)),
            "pipelined_twin_of": " ".join(c.id for c in ladder if k in registry.pipelined_twins(c.id)),
            "req_per_fma": k.counted.req_per_fma if k.counted else None, "notes": k.notes,
        })
    return pd.DataFrame(out, columns=[*T.kernels.columns])


def points_table(main_shape: tuple[int, int, int]) -> pd.DataFrame:
    """Every point of every experiment, in measuring order, with its role: the stride experiment's
    pair (``a``, ``b``: the power-of-two stride first) and the points beside it (``c``: the
    contiguous aligned shape, ``d``: the padded rows)."""
    roles = dict(zip(experiments.all_points("strides"), "abcd"))
    out = []
    for e in experiments.EXPERIMENTS:
        for i, p in enumerate(experiments.all_points(e, main_shape)):
            out.append({"experiment": p.experiment, "label": p.label, "M": p.M, "N": p.N, "K": p.K,
                        "ld": p.ld, "role": roles.get(p, ""), "order": i})
    return pd.DataFrame(out, columns=[*T.points.columns])
