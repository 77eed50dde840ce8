"""The house rules the layout keeps: the report reads only its run directory, every table is
declared once and derive writes what the declarations say, measured files are never rewritten,
and no module grows past its size limit. CPU only."""

from __future__ import annotations

import ast
import hashlib
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from study import kernels
from study.derive import derive
from study.rundata import rundir, tables
from study.rundata.rundir import RunDir
from study.rundata.tables import DERIVED, MEASURED, T

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "report"
# what the report may not reach: the registry (and what imports it) and the arithmetic
UPSTREAM = ("study.kernels", "study.derive", "study.experiments", "study.measure", "study.toolchain")


def imports_of(path: Path) -> set[str]:
    """Every module a Python file imports, at the top or inside a function (``from study import
    kernels`` counts as ``study.kernels``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def reaches_upstream(path: Path) -> list[str]:
    return sorted(m for m in imports_of(path) if m.startswith(UPSTREAM))


REPORT_MODULES = [p for p in (REPO / "study" / "report").rglob("*.py") if p.name != "__main__.py"]


@pytest.mark.parametrize("path", REPORT_MODULES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_report_module_imports_the_registry_or_derive(path):
    assert reaches_upstream(path) == []


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    planted = tmp_path / "section.py"
    planted.write_text("def f(run):\n    from study import kernels as registry\n    return registry.IDS\n")
    assert reaches_upstream(planted) == ["study.kernels"]


def test_importing_the_report_loads_no_upstream_module():
    code = ("import sys, study.report, study.report.load; "
            f"print(sorted(m for m in sys.modules if m.startswith({UPSTREAM!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the declarations -----------------------------------------------------------------------------


def test_every_table_is_declared_once():
    names = [t.name for t in tables.ALL]
    files = [t.file for t in tables.ALL]
    assert len(set(names)) == len(names) and len(set(files)) == len(files)
    assert set(rundir.DERIVED) == {t.file for t in DERIVED}
    assert set(rundir.MEASURED) == {t.file for t in MEASURED}
    for t in tables.ALL:
        assert set(t.text) <= set(t.columns) or t.open or not t.columns, t.name


def test_every_derived_producer_and_input_exists(derived_copy):
    from study.derive import BOUND_TABLES

    _, _, d = derived_copy
    for t in DERIVED:
        for name in t.inputs:
            assert hasattr(d, name.rstrip("?")), f"{t.name}: no derivation value {name}"
        if t.producer:
            module, fn = t.producer.rsplit(".", 1)
            assert callable(getattr(importlib.import_module(f"study.derive.{module}"), fn)), t.name
        else:
            assert t.name in BOUND_TABLES or hasattr(d, t.name), t.name


def test_the_report_reads_every_derived_table():
    from study.report.load import READ

    assert set(DERIVED) <= set(READ)


@pytest.fixture(scope="module")
def derived_copy(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    shutil.copytree(REPO / "reports" / "data", out / "data")
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (out / "data").iterdir()
              if p.name in rundir.MEASURED}
    d = derive(RunDir(out), seed=RunDir(REPO / "reports"), note=False)
    return out, before, d


def test_derive_writes_the_declared_columns(derived_copy):
    out, _, d = derived_copy
    written = {p.name for p in (out / "data").iterdir()}
    for t in DERIVED:
        if t.file not in written and t.optional:  # a panel the run did not measure: its input is absent
            absent = [i for i in t.inputs if not i.endswith("?") and getattr(d, i) is None]
            assert absent, f"{t.file} not derived"
            continue
        if t.file not in written:  # only the fitted bound model's tables may be missing, and why is said
            assert t.name in ("bounds", "bound_constants", "bound_steps"), f"{t.file} not derived"
            assert "not fitted" in (out / "data" / T.bound_findings.file).read_text()
            continue
        cols = list(pd.read_csv(out / "data" / t.file, nrows=0).columns)
        if t.open:
            assert cols[: len(t.columns)] == list(t.columns) or set(t.columns) <= set(cols), t.name
        else:
            assert cols == list(t.columns), t.name


def test_derive_never_rewrites_a_measured_file(derived_copy):
    out, before, _ = derived_copy
    after = {n: hashlib.sha256((out / "data" / n).read_bytes()).hexdigest() for n in before}
    assert after == before


def test_kernels_csv_records_the_registry(derived_copy):
    out, _, _ = derived_copy
    k = pd.read_csv(out / "data" / T.kernels.file, keep_default_na=False)
    assert list(k["id"]) == list(kernels.IDS)
    roles = dict(zip(k["id"], k["roles"]))
    assert roles[kernels.BASELINE.id].split() == ["baseline"]
    assert [kid for kid, r in roles.items() if "rung" in r.split()] == [c.id for c in kernels.cuda_ladder()]
    tuned = [kid for kid, r in roles.items() if "tuned" in r.split()]
    assert tuned == [t.id for t in kernels.tuned_kernels()]
    top = kernels.last_rung()
    piped = [kid for kid, of in zip(k["id"], k["pipelined_twin_of"]) if top.id in str(of).split()]
    assert piped == [t.id for t in kernels.pipelined_twins(top.id)]


def test_points_csv_records_the_experiments(derived_copy):
    from study import experiments

    out, _, _ = derived_copy
    p = pd.read_csv(out / "data" / T.points.file, keep_default_na=False)
    for e in experiments.EXPERIMENTS:
        want = [(q.label, q.M, q.N, q.K) for q in experiments.all_points(e)]
        got = p[p["experiment"] == e]
        assert list(zip(got["label"], got["M"], got["N"], got["K"])) == want, e
    strides = p[p["experiment"] == "strides"]
    assert list(strides["role"]) == ["a", "b", "c", "d"]


def test_the_sampled_clock_is_derived_from_the_rows(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(FIXTURE / "results.csv", data / "results.csv")
    gpu = pd.read_json(FIXTURE / "gpu.json", typ="series").drop("sampled_sm_clock_mhz").to_dict()
    (data / "gpu.json").write_text(pd.Series(gpu).to_json())
    before = (data / "gpu.json").read_bytes()
    derive(RunDir(tmp_path), note=False)
    assert (data / "gpu.json").read_bytes() == before
    rows = pd.read_csv(data / "results.csv")
    main = pd.to_numeric(rows.loc[rows["experiment"] == "main", "sm_clock_mhz"], errors="coerce")
    fig = pd.read_csv(data / T.gpu_figures.file)
    assert fig["sampled_sm_clock_mhz"].iloc[0] == pytest.approx(main[main > 0].median())


# --- size limits --------------------------------------------------------------------------------

PY_LIMIT, CU_LIMIT = 500, 400


def test_no_module_grows_past_its_limit():
    def over(patterns, limit):
        files = [p for pattern in patterns for p in REPO.glob(pattern)]
        sizes = {p: len(p.read_text().splitlines()) for p in files}
        return [f"{p.relative_to(REPO)}: {n} lines" for p, n in sizes.items() if n > limit]

    assert over(["study/**/*.py", "triton_kernels/*.py", "tests/*.py"], PY_LIMIT) == []
    assert over(["cuda_kernels/*.cu", "cuda_kernels/*.cuh"], CU_LIMIT) == []
