"""The report renders a run directory from its derived tables alone: every section, every figure,
findings computed by the derive step, and plain "not in this run" notes where inputs are missing.
CPU only.

The fixture (tests/fixtures/report/) holds the measured inputs of a small synthetic run
(make_fixture.py there rebuilds it); each test derives the rest with ``study.derive`` first.
"""

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import reference_with_current_counters

from study import derive, report
from study import kernels as registry
from study.derive import ledgers
from study.errors import InputError
from study.report.load import RESULTS_REQUIRED
from study.report.sections import main as main_section
from study.report.sections import meta as meta_section
from study.rundata.rundir import RunDir

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "report"
SEED = REPO / "reports" / "data"
DATA_FILES = ["results.csv", "sass.csv", "sass_strides.csv", "clocks.csv", "gpu.json", "ncu.csv"]
HEADINGS = [
    "## Provenance",
    "## Main table",
    "## The ladder",
    "## Triton twins",
    "## Triton vs hand-written tile",
    "## Ledgers",
    "## Calibration and model",
    "### Leave-one-out",
    "## Occupancy and SASS",
    "## Counted vs compiled",
    "## Experiments",
    "### E2 sizes",
    "### E3 shapes",
    "### E4 strides",
    "### E6 clocks",
    "## Hardware counters",
    "## Seed GPU replay",
    "## Figures",
    "## How to reproduce",
]
PNG = b"\x89PNG\r\n\x1a\n"


def add_stride_extras(data: Path) -> None:
    """The stride experiment's n = 4100 and padded (ld = 4112) rows of tests/fixtures/strides
    appended to ``data/results.csv`` (each a copy of the kernel's n = 4097 row with its own label,
    shape, ld and time), and that fixture's load widths as ``sass_strides.csv``."""
    extras = FIXTURE.parent / "strides"
    shutil.copy(extras / "sass_strides.csv", data / "sass_strides.csv")
    res = pd.read_csv(data / "results.csv", dtype={"label": str})
    template = res[(res["experiment"] == "strides") & (res["label"] == "n=4097")].set_index("kernel")
    new = [{**template.loc[r["kernel"]].to_dict(), **r, "experiment": "strides"}
           for r in pd.read_csv(extras / "extra_rows.csv", dtype={"label": str}).to_dict("records")]
    pd.concat([res, pd.DataFrame(new)], ignore_index=True).to_csv(data / "results.csv", index=False)


def make_run(tmp: Path, files: list[str], seed: bool = True, stride_extras: bool = False) -> Path:
    """A run directory holding the fixture's ``files`` (with the stride extras if asked), derived
    (with the seed replay if ``seed``)."""
    data = tmp / "data"
    data.mkdir(parents=True)
    for name in files:
        shutil.copy(FIXTURE / name, data / name)
    if stride_extras:
        add_stride_extras(data)
    derive.derive(RunDir(tmp), seed=RunDir(REPO / "reports") if seed else None, note=False)
    return tmp


def sections(text: str) -> dict[str, str]:
    """Heading line -> the text up to the next heading of any level."""
    out, head, body = {}, None, []
    for line in text.splitlines():
        if line.startswith("## ") or line.startswith("### "):
            if head:
                out[head] = "\n".join(body)
            head, body = line.strip(), []
        else:
            body.append(line)
    if head:
        out[head] = "\n".join(body)
    return out


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    out = make_run(tmp_path_factory.mktemp("full"), DATA_FILES, stride_extras=True)
    path = report.render(out, measured=False)
    return out, path.read_text()


def test_every_section_present(full):
    out, text = full
    assert (out / "REPORT.md").is_file()
    for h in HEADINGS:
        assert h in text.splitlines(), h
    assert "NVIDIA H200 (synthetic fixture)" in text.splitlines()[0]
    assert "re-rendered from recorded rows" in text
    assert "python -m study.run" in text


def test_full_run_misses_nothing(full):
    _, text = full
    body = {h: b for h, b in sections(text).items() if h not in ("## Provenance", "## Seed GPU replay")}
    for h, b in body.items():
        assert "not in this run" not in b, h


def test_every_figure_drawn_and_referenced(full):
    out, text = full
    for name, fn in report.FIGURES.items():
        png = out / "figures" / f"{name}.png"
        assert png.is_file(), name
        assert png.read_bytes()[:8] == PNG, name
        assert png.stat().st_size > 1024, name
        assert f"figures/{name}.png — `study.report.{fn.__name__}`" in text, name
        assert f"](figures/{name}.png)" in text, name


def test_strides_finding_has_the_ratio(full):
    _, text = full
    res = pd.read_csv(FIXTURE / "results.csv")
    k1 = res[(res["experiment"] == "strides") & (res["kernel"] == "K1")].set_index("label")["ms"]
    r = k1["n=4096"] / k1["n=4097"]  # > 1: faster at the odd size
    findings = [
        line for line in sections(text)["### E4 strides"].splitlines() if line.startswith("**Finding:**")
    ]
    assert any(f"K1 runs {r:.2f}× faster at n = 4097" in line for line in findings), findings
    k2 = res[(res["experiment"] == "strides") & (res["kernel"] == "K2")].set_index("label")["ms"]
    x, y = k1["n=4096"] / k2["n=4096"], k1["n=4097"] / k2["n=4097"]
    assert any(f"{x:.3f}×" in line and f"{y:.3f}×" in line for line in findings), findings


def test_strides_by_mechanism_shows_the_load_widths_of_each_shape(full):
    _, text = full
    sec = sections(text)["### E4 strides"]
    assert "| T5 | 10×128-bit | 40×32-bit |" in sec
    assert "| T5p | 10×128-bit (cp.async) | 40×32-bit (cp.async) |" in sec
    assert "| K6 | 10×128-bit | refused |" in sec and "| K1 | 32×32-bit | 32×32-bit |" in sec
    finding = next(line for line in sec.splitlines() if "lose them" in line)
    assert "T5, T5p" in finding and "four 32-bit ones" in finding  # 40 = 4 x 10 in the fixture


def test_shapes_finding_has_the_speedups(full):
    _, text = full
    res = pd.read_csv(FIXTURE / "results.csv")
    sh = res[res["experiment"] == "shapes"].pivot_table(index="kernel", columns="label", values="ms")
    finding = next(
        line for line in sections(text)["### E3 shapes"].splitlines() if line.startswith("**Finding:**")
    )
    for label in ("square", "prefill", "decode_b32", "decode_b1"):
        assert f"{sh.at['K1', label] / sh.at['K6', label]:.1f}× ({label})" in finding


def test_ladder_speedups_are_the_time_ratio_of_consecutive_rungs(full):
    _, text = full
    res = pd.read_csv(FIXTURE / "results.csv")
    ms = res[res["experiment"] == "main"].dropna(subset=["ms"]).set_index("kernel")["ms"]
    rungs = [k.id for k in registry.cuda_ladder() if k.id in ms.index]
    lines = sections(text)["## The ladder"].splitlines()
    for before, after in zip(rungs, rungs[1:]):
        row = next(line for line in lines if line.startswith(f"| {after} |"))
        assert f"| {ms[before] / ms[after]:.2f}× |" in row, (before, after, row)


def test_main_table_numbers(full):
    _, text = full
    res = pd.read_csv(FIXTURE / "results.csv")
    main = res[res["experiment"] == "main"].set_index("kernel")
    g = 2 * 4096**3 / (main.at["K6", "ms"] / 1e3) / 1e9
    pct = 100 * main.at["K0", "ms"] / main.at["K6", "ms"]
    row = next(line for line in sections(text)["## Main table"].splitlines() if line.startswith("| K6 |"))
    assert f"{g:.1f}" in row and f"{pct:.1f}%" in row
    t1 = next(line for line in sections(text)["## Main table"].splitlines() if line.startswith("| T1 |"))
    assert "failed" in t1


@pytest.mark.skipif(
    not (SEED / "rtx4090_seed.csv").is_file(), reason="the seed GPU's times are not in reports/data"
)
def test_seed_replay_reproduces_the_published_figures(full):
    _, text = full
    seed = sections(text)["## Seed GPU replay"]
    k3 = next(line for line in seed.splitlines() if line.startswith("| K3 |"))
    assert "6184.0" in k3 and "77.0%" in k3 and "3.34" in k3  # the seed report's K3 row
    assert "71.5% of cuBLAS on the RTX 4090" in seed
    assert "P_dist 2.69, P_bcast 0.53, P_ldg 1.94" in seed


def test_only_results_and_gpu(tmp_path):
    out = make_run(tmp_path, ["results.csv", "gpu.json"], seed=False)
    text = report.render(out, measured=False).read_text()
    secs = sections(text)
    for h in HEADINGS:
        assert h in secs, h
    for h in ("## Occupancy and SASS", "## Counted vs compiled", "## Seed GPU replay"):
        assert "not in this run" in secs[h], h
    # the ledgers and the seed's model need only the rows: derived from them
    assert "| K6 |" in secs["## Ledgers"] and "| exact |" in secs["## Calibration and model"]
    assert "clocks.csv not in this run" in secs["### E6 clocks"]
    # what the rows alone support is still there
    assert "| K6 |" in secs["## Main table"] and "**Finding:**" in secs["### E4 strides"]
    for name, fn in report.FIGURES.items():
        png = out / "figures" / f"{name}.png"
        ref = f"`study.report.{fn.__name__}`"
        assert ref in text, name
        if name == "clocks":
            assert not png.exists(), name
            assert f"figures/{name}.png skipped ({ref})" in text, name
        else:
            assert png.read_bytes()[:8] == PNG and png.stat().st_size > 1024, name


def test_results_alone_takes_gpu_constants_from_provenance(tmp_path):
    out = make_run(tmp_path, ["results.csv"], seed=False)
    text = report.render(out, measured=True).read_text()
    assert "constants from the provenance columns" in text
    assert "measured: the rows below were timed in this run" in text
    row = next(line for line in sections(text)["## Main table"].splitlines() if line.startswith("| K0 |"))
    assert "76.8%" in row  # % of peak still computed: 51.38 of 66.9 TFLOP/s


def test_missing_results_is_an_input_error(tmp_path):
    (tmp_path / "data").mkdir()
    with pytest.raises(InputError, match="results.csv"):
        report.render(tmp_path)


def test_import_touches_no_gpu_library():
    code = "import sys, study.report; sys.exit('torch' in sys.modules or 'triton' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


# ---------------------------------------------------------------------------------------------
# Inputs the loader accepts but a section or figure did not foresee


def edit_csv(path: Path, fn) -> None:
    """Rewrite a copied input through ``fn(df) -> df``."""
    fn(pd.read_csv(path)).to_csv(path, index=False)


def test_results_with_only_the_required_columns(tmp_path):
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "results.csv"
    rows = pd.read_csv(FIXTURE / "results.csv")
    # without rel_err a row with no time cannot say its check refused it: only timed rows here
    rows.dropna(subset=["ms"])[RESULTS_REQUIRED].to_csv(path, index=False)
    shutil.copy(FIXTURE / "gpu.json", tmp_path / "data" / "gpu.json")
    out = tmp_path
    derive.derive(RunDir(out), note=False)
    text = report.render(out).read_text()
    secs = sections(text)
    assert [h for h in HEADINGS if h not in secs] == []
    assert "could not be rendered" not in text
    assert "results.csv records no sampled clock" in secs["### E6 clocks"]
    assert "| K6 |" in secs["## Main table"]


def test_shape_labels_the_experiment_does_not_define(tmp_path):
    out = make_run(tmp_path, DATA_FILES)

    def rename(df):
        shapes = df["experiment"] == "shapes"
        df.loc[shapes, "label"] = "llm_" + df.loc[shapes, "label"]
        return df

    edit_csv(out / "data" / "results.csv", rename)
    derive.derive(RunDir(out), note=False)
    text = report.render(out).read_text()
    assert (out / "figures" / "shapes.png").read_bytes()[:8] == PNG
    assert "| llm_prefill (2048×18944×3584) |" in sections(text)["### E3 shapes"]


def test_tables_without_their_columns_are_missing_with_the_reason(tmp_path, capsys):
    out = make_run(tmp_path, DATA_FILES)
    dropped = {
        "ledgers.csv": "cadence",
        "model.csv": "method",
        "loo.csv": "kernel",
        "model_sass.csv": "kernel",
        "sass.csv": "kernel",
        "counted_vs_compiled.csv": "kernel",
        "clocks.csv": "t_s",
    }
    for name, col in dropped.items():  # derived tables spoiled after the derive step: rendered as they are
        edit_csv(out / "data" / name, lambda df, col=col: df.drop(columns=[col]))
    path = report.render(out)
    text = path.read_text()
    secs = sections(text)
    assert "could not be rendered" not in text
    for head, name in (
        ("## Ledgers", "ledgers.csv"),
        ("## Calibration and model", "model.csv"),
        ("## Calibration and model", "model_sass.csv"),
        ("### Leave-one-out", "loo.csv"),
        ("## Occupancy and SASS", "sass.csv"),
        ("## Counted vs compiled", "counted_vs_compiled.csv"),
        ("### E6 clocks", "clocks.csv"),
    ):
        assert f"{name} lacks column {dropped[name]}" in secs[head], (head, name)
    assert "skipped: clocks.csv lacks column t_s" in secs["## Figures"]


def test_text_in_numeric_columns_prints_as_a_dash(tmp_path):
    out = make_run(tmp_path, DATA_FILES)

    def spoil(col):
        def fn(df):
            df[col] = df[col].astype(object)
            df.loc[0, col] = "bad"
            return df

        return fn

    edit_csv(out / "data" / "model.csv", spoil("p_dist"))
    edit_csv(out / "data" / "loo.csv", spoil("model_error_pct"))
    run = report.load(out)
    assert pd.api.types.is_float_dtype(run.tables["model"]["p_dist"])
    from study.report.sections.ledgers import section_model

    model_sec = section_model(run)
    assert not any("could not be rendered" in line for line in model_sec)
    exact = next(line for line in model_sec if line.startswith("| exact |"))
    assert exact.split(" | ")[2] == "–"  # P_dist
    loo_sec = sections("\n".join(model_sec))["### Leave-one-out"].splitlines()
    loo_first = pd.read_csv(out / "data" / "loo.csv")["kernel"].iloc[0]
    assert next(line for line in loo_sec if line.startswith(f"| {loo_first} |")).endswith("| – |")


def test_a_failing_figure_is_recorded_as_skipped(tmp_path, monkeypatch):
    def broken(run, fig_dir):
        raise RuntimeError("no luck\nsecond line")

    from study.report import figures

    monkeypatch.setattr(figures, "FIGURES", {"roofline": broken, "throughput": report.fig_throughput})
    run = report.load(make_run(tmp_path, DATA_FILES, seed=False))
    report.make_figures(run, tmp_path / "figures")
    assert run.figures["roofline"] == (None, "could not be drawn (RuntimeError: no luck)")
    assert run.figures["throughput"][0] == "figures/throughput.png"


def test_a_failing_section_costs_only_that_section(tmp_path, monkeypatch):
    def broken(run):
        raise KeyError("occupancy_pct")

    monkeypatch.setattr(report, "section_sass", broken)
    monkeypatch.setattr(report, "make_figures", lambda run, fig_dir: None)
    text = report.render(make_run(tmp_path, DATA_FILES, seed=False)).read_text()
    secs = sections(text)
    assert [h for h in HEADINGS if h not in secs] == []
    why = "*this section could not be rendered: KeyError: 'occupancy_pct'*"
    assert secs["## Occupancy and SASS"].strip() == why
    assert "| K6 |" in secs["## Main table"] and "| K6 |" in secs["## Counted vs compiled"]


# ---------------------------------------------------------------------------------------------
# One definition of each figure; nothing in the text that changes by itself


@pytest.fixture(scope="module")
def loaded(full):
    out, _ = full
    return report.load(out)


def test_twin_ratio_is_the_ledgers_definition(full, tmp_path, monkeypatch):
    out, _ = full
    run = report.load(out)
    main = run.measured[run.measured["experiment"] == "main"].set_index("kernel")["gflops"]
    row = next(line for line in main_section.section_twins(run) if line.startswith("| K3 |"))
    assert f"{ledgers.twin_ratio(main['T3'], main['K3']):.2f}×" in row  # T3 is the faster: > 1
    assert ledgers.twin_ratio(main["T3"], main["K3"]) > 1
    monkeypatch.setattr(ledgers, "twin_ratio", lambda t, c: 7.0)  # derive computes it; the report renders it
    again = make_run(tmp_path, DATA_FILES, seed=False)
    row = next(line for line in main_section.section_twins(report.load(again)) if line.startswith("| K3 |"))
    assert row.count("7.00×") == 2


def test_twins_are_paired_by_the_registry(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "twins_of", lambda kid: [])
    run = report.load(make_run(tmp_path, DATA_FILES, seed=False))
    assert "no CUDA kernel and its Triton twin" in "\n".join(main_section.section_twins(run))


def test_reproduce_example_names_the_runs_ids(loaded):
    # the last rung the run measured (a run made before a rung was added names its own top)
    last_cuda = registry.last_rung(among=set(loaded.results["kernel"])).id
    assert last_cuda in set(loaded.results["kernel"])
    text = "\n".join(meta_section.section_reproduce(loaded))
    assert f"--kernels {registry.BASELINE.id},{last_cuda} " in text
    # the ids come from the run directory (kernels.csv), not from today's registry
    k = loaded.tables["kernels"]
    renamed = dataclasses.replace(loaded, tables={**loaded.tables, "kernels": k.assign(
        id=k["id"].replace(registry.BASELINE.id, "KB"))})
    assert f"--kernels KB,{last_cuda} " in "\n".join(meta_section.section_reproduce(renamed))


def test_provenance_carries_no_render_time(full):
    _, text = full
    prov = sections(text)["## Provenance"]
    assert not re.search(r"rendered \d", prov)
    assert "2025-01-01T00:00:00+00:00" in prov  # the rows' own stamp stays


def test_footprint_has_one_definition():
    assert ledgers.footprint_bytes(4096) == 3 * 4096**2 * 4
    assert ledgers.n_at_footprint(ledgers.footprint_bytes(2048)) == pytest.approx(2048)


def test_the_reference_report_re_renders_to_the_committed_one(tmp_path):
    """The committed reports/ re-derived and re-rendered by this code: the same REPORT.md except the
    status (the committed one was rendered by the run that measured it) and the line naming the
    directory it was rendered in."""
    copy = tmp_path / "reports"
    shutil.copytree(REPO / "reports", copy)
    derive.derive(RunDir(copy), seed=RunDir(REPO / "reports"), note=False)
    new = report.render(copy).read_text().splitlines()
    old = (REPO / "reports" / "REPORT.md").read_text().splitlines()
    differ = [(a, b) for a, b in zip(old, new) if a != b]
    assert len(old) == len(new)
    assert all("python -m study.report" in a or a.startswith("- **Status:**") for a, _ in differ), differ[:3]


def test_import_chooses_no_matplotlib_backend():
    code = "import matplotlib, study.report; print(matplotlib.get_backend())"
    env = {**os.environ, "MPLBACKEND": "svg"}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.stdout.strip() == "svg", done.stderr


def test_the_moved_ledger_is_the_one_that_changed_the_way_the_time_did():
    from study.derive import counters

    nan = float("nan")
    base = dict(sectors_per_wfma=0.05, loads_per_fma=0.05, issue_per_ffma=1.15, wavefronts_per_wfma=0.1,
                bar_per_phase=1.0, occupancy_pct=12.5)
    # K11 -> K12 on the H200: loads per FMA rose 11% (4-byte copies), instructions per FFMA fell 5%;
    # the rung is 1.11x faster, so the instructions explain it
    after = dict(base, loads_per_fma=0.0555, issue_per_ffma=1.0925)
    col, a, b, f = counters.moved_ledger(base, after, speedup=1.11)
    assert (col, a, b) == ("issue_per_ffma", 1.15, 1.0925) and f == pytest.approx(0.95)
    # the same change read as a slow-down: the ledger that rose
    assert counters.moved_ledger(base, after, speedup=0.9)[0] == "loads_per_fma"
    # occupancy is a benefit: halving it can explain a slow-down, not a speed-up
    fewer = dict(base, occupancy_pct=6.25, bar_per_phase=1.2)
    assert counters.moved_ledger(base, fewer, speedup=0.8)[0] == "occupancy_pct"
    assert counters.moved_ledger(base, fewer, speedup=1.2)[0] == "occupancy_pct"  # none helped: all
    # no speed-up known: the largest change either way
    assert counters.moved_ledger(base, after, speedup=nan)[0] == "loads_per_fma"
    assert counters.moved_ledger(dict(base, sectors_per_wfma=nan), dict.fromkeys(base, nan), 2.0) is None


def _ncu_at(ncu: pd.DataFrame, kid: str, shape: tuple[int, int, int], metric: str) -> float:
    """One metric of the latest profile of ``kid`` at ``shape``, read straight from ncu.csv."""
    M, N, K = shape
    at = ncu[(ncu["kernel"] == kid) & (ncu["M"] == M) & (ncu["N"] == N) & (ncu["K"] == K)]
    at = at[at["run_id"].astype(str) == at["run_id"].astype(str).max()]
    return float(at[at["metric"] == metric]["value"].sum())


def test_counters_beside_a_main_time_are_read_at_its_shape(tmp_path):
    """K12 and cuBLAS were also profiled at n = 4097 and at decode shapes: the ladder's counters
    and the report's counter findings are the 4096^3 launch's, the shape the main rows were timed at
    (on the committed run with its counters taken as current)."""
    run = reference_with_current_counters(tmp_path / "run")
    data = run / "data"
    ncu = pd.read_csv(data / "ncu.csv")
    issue = "smsp__issue_active.avg.pct_of_peak_sustained_active"
    main, other = (4096, 4096, 4096), (4097, 4097, 4097)
    assert _ncu_at(ncu, "K12", main, issue) != pytest.approx(_ncu_at(ncu, "K12", other, issue), abs=0.5)
    lad = pd.read_csv(data / "ladder.csv").set_index("kernel")
    assert lad.at["K12", "issue_pct"] == pytest.approx(_ncu_at(ncu, "K12", main, issue))
    # cuBLAS's instructions per warp FMA at 4096^3 in every "vs cuBLAS" finding of the report
    k0 = _ncu_at(ncu, "K0", main, "smsp__inst_executed.sum") / (4096**3 / 32)
    text = (run / "REPORT.md").read_text()
    findings = [line for line in text.splitlines() if line.startswith("**Finding (") and "vs cuBLAS" in line]
    assert findings and all(f"against cuBLAS's {k0:.3f}," in line for line in findings)
