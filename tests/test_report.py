"""The report renders from recorded files alone: every section, every figure, findings computed
from the rows, and plain "not in this run" notes where inputs are missing. CPU only.

The fixture (tests/fixtures/report/) is a small synthetic run; make_fixture.py there rebuilds it.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from study import report
from study.errors import InputError

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "report"
SEED = REPO / "reports" / "data"
DATA_FILES = [
    "results.csv",
    "ledgers.csv",
    "model.csv",
    "loo.csv",
    "model_sass.csv",
    "sass.csv",
    "counted_vs_compiled.csv",
    "clocks.csv",
    "gpu.json",
]
HEADINGS = [
    "## Provenance",
    "## Main table",
    "## Triton twins",
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
    "## Seed GPU replay",
    "## Figures",
    "## How to reproduce",
]
PNG = b"\x89PNG\r\n\x1a\n"


def make_run(tmp: Path, files: list[str]) -> Path:
    data = tmp / "data"
    data.mkdir(parents=True)
    for name in files:
        shutil.copy(FIXTURE / name, data / name)
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
    out = make_run(tmp_path_factory.mktemp("full"), DATA_FILES)
    path = report.render(out, seed_dir=SEED, measured=False)
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


def test_shapes_finding_has_the_speedups(full):
    _, text = full
    res = pd.read_csv(FIXTURE / "results.csv")
    sh = res[res["experiment"] == "shapes"].pivot_table(index="kernel", columns="label", values="ms")
    finding = next(
        line for line in sections(text)["### E3 shapes"].splitlines() if line.startswith("**Finding:**")
    )
    for label in ("square", "prefill", "decode_b32", "decode_b1"):
        assert f"{sh.at['K1', label] / sh.at['K6', label]:.1f}× ({label})" in finding


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
    not (SEED / report.SEED_TIMES).is_file(), reason="the seed GPU's times are not in reports/data"
)
def test_seed_replay_reproduces_the_published_figures(full):
    _, text = full
    seed = sections(text)["## Seed GPU replay"]
    k3 = next(line for line in seed.splitlines() if line.startswith("| K3 |"))
    assert "6184.0" in k3 and "77.0%" in k3 and "3.34" in k3  # the seed report's K3 row
    assert "71.5% of cuBLAS on the RTX 4090" in seed
    assert "P_dist 2.69, P_bcast 0.53, P_ldg 1.94" in seed


def test_only_results_and_gpu(tmp_path):
    out = make_run(tmp_path, ["results.csv", "gpu.json"])
    text = report.render(out, seed_dir=tmp_path / "no_seed", measured=False).read_text()
    secs = sections(text)
    for h in HEADINGS:
        assert h in secs, h
    for h in (
        "## Ledgers",
        "## Calibration and model",
        "### Leave-one-out",
        "## Occupancy and SASS",
        "## Counted vs compiled",
        "## Seed GPU replay",
    ):
        assert "not in this run" in secs[h], h
    assert "clocks.csv not in this run" in secs["### E6 clocks"]
    # what the rows alone support is still there
    assert "| K6 |" in secs["## Main table"] and "**Finding:**" in secs["### E4 strides"]
    for name, fn in report.FIGURES.items():
        png = out / "figures" / f"{name}.png"
        ref = f"`study.report.{fn.__name__}`"
        assert ref in text, name
        if name in ("roofline", "model", "clocks"):
            assert not png.exists(), name
            assert f"figures/{name}.png skipped ({ref})" in text, name
        else:
            assert png.read_bytes()[:8] == PNG and png.stat().st_size > 1024, name


def test_results_alone_takes_gpu_constants_from_provenance(tmp_path):
    out = make_run(tmp_path, ["results.csv"])
    text = report.render(out, seed_dir=tmp_path / "no_seed", measured=True).read_text()
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
