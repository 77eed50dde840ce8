"""The decode panel (``python -m study.decode``, docs/method.md#decode-panel): its summary and
findings derived from a hand-made decode.csv, checked against arithmetic done by hand; the
section and the heatmap rendered from it; a run without the panel rendered without either; the
table's declaration against what the writer writes; the CLI's refusals. CPU, except the one test
marked ``gpu`` (the panel measured at one shape and two Ms).

The fixture (``FIXTURE_ROWS``): two shapes at M = 1 and 64, read-roof rows, a KD row measured
twice (the later one counts), a K0L and a KD row that failed their check, rows from two runs.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import TEST_GPU, cli, lines, refused

from study import derive, report
from study.derive import decode as dd
from study.measure import decode as panel
from study.measure import decode_host as host
from study.rundata import tables
from study.rundata.gpu import GPU
from study.rundata.results import ResultsFile, provenance
from study.rundata.rundir import RunDir
from study.rundata.tables import T

REPO = Path(__file__).resolve().parent.parent
REPORT_FIXTURE = REPO / "tests" / "fixtures" / "report"
RUN_FILES = ["results.csv", "gpu.json"]

O, QKV = "llama3-8b.o", "qwen2.5-7b.qkv"
# (shape, N, K, M, kernel, status, gpu_us, e2e_us, run_id, timestamp)
FIXTURE_ROWS = [
    (O, 4096, 4096, "", "read", "ok", 8.0, "", "A", "2025-01-01T10:00:00+00:00"),
    (O, 4096, 4096, 1, "KD", "ok", 10.0, 14.0, "A", "2025-01-01T10:00:10+00:00"),
    (O, 4096, 4096, 1, "K0", "ok", 15.0, 19.0, "A", "2025-01-01T10:00:20+00:00"),
    (O, 4096, 4096, 1, "K0L", "ok", 12.0, 30.0, "A", "2025-01-01T10:00:30+00:00"),
    (O, 4096, 4096, 1, "OP", "ok", 10.5, 11.0, "A", "2025-01-01T10:00:40+00:00"),
    (O, 4096, 4096, 1, "TD", "ok", 11.0, 31.0, "A", "2025-01-01T10:00:50+00:00"),
    (O, 4096, 4096, 64, "KD", "ok", 20.0, 24.0, "A", "2025-01-01T10:01:00+00:00"),
    (O, 4096, 4096, 64, "K0", "ok", 16.0, 21.0, "A", "2025-01-01T10:01:10+00:00"),
    (O, 4096, 4096, 64, "K0L", "ok", 18.0, 33.0, "A", "2025-01-01T10:01:20+00:00"),
    (O, 4096, 4096, 64, "OP", "ok", 20.5, 22.0, "A", "2025-01-01T10:01:40+00:00"),
    (QKV, 4608, 3584, "", "read", "ok", 9.0, "", "B", "2025-01-01T11:00:00+00:00"),
    (QKV, 4608, 3584, 1, "KD", "ok", 50.0, 60.0, "B", "2025-01-01T11:00:05+00:00"),
    (QKV, 4608, 3584, 1, "K0", "ok", 18.0, 23.0, "B", "2025-01-01T11:00:10+00:00"),
    (QKV, 4608, 3584, 1, "K0L", "wrong", "", "", "B", "2025-01-01T11:00:12+00:00"),
    (QKV, 4608, 3584, 1, "OP", "ok", 13.0, 15.0, "B", "2025-01-01T11:00:15+00:00"),
    (QKV, 4608, 3584, 1, "KD", "ok", 12.0, 16.0, "B", "2025-01-01T11:00:18+00:00"),  # the later
    (QKV, 4608, 3584, 64, "KD", "wrong", "", "", "B", "2025-01-01T11:00:20+00:00"),
    (QKV, 4608, 3584, 64, "K0", "ok", 30.0, 35.0, "B", "2025-01-01T11:00:24+00:00"),
    (QKV, 4608, 3584, 64, "K0L", "ok", 24.0, 40.0, "B", "2025-01-01T11:00:27+00:00"),
    (QKV, 4608, 3584, 64, "TD", "ok", 22.0, 45.0, "B", "2025-01-01T11:00:30+00:00"),
]


# the host pass (decode_host.csv): (shape, M, kernel, pass, status, host_us); KD at llama3-8b.o M = 1
# in three passes (5, 7, 4: median 5), OP there (3, 2.5, 13: median 3, slowest 13), a K0 pass the
# device was not held for (no time: it does not count)
HOST_ROWS = [
    (O, 1, "KD", 0, "ok", 5.0), (O, 1, "KD", 1, "ok", 7.0), (O, 1, "KD", 2, "ok", 4.0),
    (O, 1, "OP", 0, "ok", 3.0), (O, 1, "OP", 1, "ok", 2.5), (O, 1, "OP", 2, "ok", 13.0),
    (O, 1, "K0", 0, "ok", 4.0), (O, 1, "K0", 1, "unheld", ""),
    (O, 64, "OP", 0, "ok", 3.0),
    (QKV, 1, "KD", 0, "ok", 6.0), (QKV, 1, "OP", 0, "ok", 3.0), (QKV, 1, "OP", 1, "ok", 3.5),
    (QKV, 1, "OP", 2, "ok", 11.0),
]


def write_host_fixture(path: Path) -> None:
    keys = ("shape", "M", "kernel", "pass", "status", "host_us")
    f = ResultsFile(path, list(T.decode_host.columns))
    f.append_many({**dict(zip(keys, r)), "gpu": "Test GPU", "commit": "abc", "calls": 40, "batches": 9}
                  for r in HOST_ROWS)


def write_fixture(path: Path) -> None:
    keys = ("shape", "N", "K", "M", "kernel", "status", "gpu_us", "e2e_us", "run_id", "timestamp")
    f = ResultsFile(path, list(T.decode.columns))
    f.append_many({**dict(zip(keys, r)), "gpu": "Test GPU", "commit": "abc", "calls": 200,
                   "note": "" if r[5] == "ok" else "relative error inf > 1e-05"} for r in FIXTURE_ROWS)


@pytest.fixture
def decode_rows(tmp_path) -> pd.DataFrame:
    write_fixture(tmp_path / "decode.csv")
    return pd.read_csv(tmp_path / "decode.csv")


@pytest.fixture
def host_rows(tmp_path) -> pd.DataFrame:
    write_host_fixture(tmp_path / "decode_host.csv")
    return pd.read_csv(tmp_path / "decode_host.csv")


# --- the derived tables, against arithmetic by hand ------------------------------------------------


def test_summary_by_hand(decode_rows, host_rows):
    s = dd.summary(decode_rows, host_rows)
    assert list(s.columns) == list(T.decode_summary.columns)
    assert list(zip(s["shape"], s["M"])) == [(O, 1), (O, 64), (QKV, 1), (QKV, 64)]
    at = {(r["shape"], r["M"]): r for r in s.to_dict("records")}
    o1 = at[O, 1]  # vendor: min(15, 12) = 12 (K0L); 12 / 10, 15 / 10, 12 / 10; 8 / 10
    assert (o1["vendor"], o1["vendor_us"], o1["kd_us"]) == ("K0L", 12.0, 10.0)
    assert o1["speedup"] == pytest.approx(1.2) and o1["speedup_k0"] == pytest.approx(1.5)
    assert o1["speedup_k0l"] == pytest.approx(1.2) and o1["pct_read_roof"] == pytest.approx(80.0)
    assert (o1["fastest"], o1["fastest_us"], o1["op_us"]) == ("KD", 10.0, 10.5)
    # the host pass: medians over passes (5, 3, 4), OP's slowest pass 13
    host_us = (o1["kd_host_us"], o1["op_host_us"], o1["k0_host_us"], o1["op_host_max_us"])
    assert host_us == (5.0, 3.0, 4.0, 13.0)
    assert (o1["kd_e2e_us"], o1["op_e2e_us"], o1["k0_e2e_us"]) == (14.0, 11.0, 19.0)
    o64 = at[O, 64]  # vendor: min(16, 18) = 16 (K0); 16 / 20, 18 / 20; 8 / 20
    assert o64["vendor"] == "K0" and o64["speedup"] == pytest.approx(0.8)
    assert o64["speedup_k0l"] == pytest.approx(0.9)
    assert o64["pct_read_roof"] == pytest.approx(40.0) and o64["fastest"] == "K0"
    q1 = at[QKV, 1]  # KD's later row (12) counts; K0L wrong: the vendor is K0 (18): 18 / 12; 9 / 12
    assert (q1["kd_us"], q1["vendor"], q1["vendor_us"]) == (12.0, "K0", 18.0)
    assert q1["speedup"] == pytest.approx(1.5) and math.isnan(q1["k0l_us"]) and math.isnan(q1["speedup_k0l"])
    assert q1["pct_read_roof"] == pytest.approx(75.0) and q1["read_us"] == 9.0
    assert (q1["fastest"], q1["kd_host_us"], q1["kd_e2e_us"]) == ("KD", 6.0, 16.0)
    assert (q1["op_host_us"], q1["op_host_max_us"]) == (3.5, 11.0) and math.isnan(q1["k0_host_us"])
    q64 = at[QKV, 64]  # KD wrong: no speed-up; the vendor min(30, 24) = 24; TD (22) the fastest
    assert math.isnan(q64["kd_us"]) and math.isnan(q64["speedup"]) and math.isnan(q64["pct_read_roof"])
    assert (q64["vendor"], q64["vendor_us"], q64["fastest"], q64["fastest_us"]) == ("K0L", 24.0, "TD", 22.0)


def test_findings_by_hand(decode_rows, host_rows):
    f = dd.findings(decode_rows, host_rows)
    assert list(f.columns) == list(T.decode_findings.columns)
    rows = f.to_dict("records")
    geo, least, loses, untimed, host_median, host_slowest, host_over, took = rows
    # each finding has an id a quote can name, once
    assert list(f["id"]) == ["geomean", "least", "loses", "untimed", "host_median", "host_slowest",
                             "host_over", "took"]
    # M <= 32: 1.2 (llama3-8b.o) and 1.5 (qwen2.5-7b.qkv); sqrt(1.2 * 1.5) = sqrt(1.8)
    assert geo["value"] == pytest.approx(1.3416407865) and geo["points"] == 2 and geo["unit"] == "×"
    assert "geometric mean" in geo["finding"] and geo["where"] == "M <= 32"
    # over the three points with a speed-up (1.2, 0.8, 1.5) the least is 0.8, at llama3-8b.o M = 64
    assert (least["value"], least["points"], least["where"]) == (pytest.approx(0.8), 3, f"{O} M=64")
    assert (loses["value"], loses["points"], loses["where"]) == (1, 3, f"{O} M=64")
    assert (untimed["value"], untimed["points"], untimed["where"]) == (1, 4, f"{QKV} M=64 (wrong)")
    # OP's host cost at three points: medians 3 (8B o M=1), 3 (8B o M=64), 3.5 (qkv M=1): 3.0;
    # slowest passes 13, 3, 11: the slowest 13 at 8B o M=1, the one point above 12
    assert (host_median["value"], host_median["points"], host_median["unit"]) == (3.0, 3, "µs")
    assert host_median["note"].startswith("3 passes")
    assert (host_slowest["value"], host_slowest["where"]) == (13.0, f"{O} M=1")
    assert (host_over["value"], host_over["points"], host_over["where"]) == (1, 3, f"{O} M=1")
    assert "above 12 µs" in host_over["finding"]
    # without the host pass there is no finding about it
    assert len(dd.findings(decode_rows)) == len(rows) - 3
    # run A 10:00:00 -> 10:01:40 (100 s), run B 11:00:00 -> 11:00:30 (30 s)
    assert (took["value"], took["unit"]) == (130.0, "s")
    assert took["note"] == "first row to last of 20 rows, summed over 2 runs"


def test_a_file_without_a_needed_column_is_refused(decode_rows):
    with pytest.raises(Exception, match="missing column 'status'"):
        dd.summary(decode_rows.drop(columns="status"))


# --- the report -------------------------------------------------------------------------------------


def make_run(tmp: Path, with_panel: bool) -> Path:
    (tmp / "data").mkdir(parents=True)
    for name in RUN_FILES:
        shutil.copy(REPORT_FIXTURE / name, tmp / "data" / name)
    if with_panel:
        write_fixture(tmp / "data" / T.decode.file)
        write_host_fixture(tmp / "data" / T.decode_host.file)
    derive.derive(RunDir(tmp), note=False)
    return tmp


def section(text: str, heading: str) -> str:
    body = text.split(f"\n{heading}\n", 1)[1]
    return body.split("\n## ", 1)[0]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = make_run(tmp_path_factory.mktemp("panel"), with_panel=True)
    return out, report.render(out).read_text()


def test_the_section_renders_the_summary_findings_and_figure(rendered):
    out, text = rendered
    sec = section(text, "## Decode panel")
    assert ("| llama3-8b.o | 4096×4096 | 1 | 10.0 | 12.0 | K0L | 1.200× | 1.500× | 1.200× | 8.0 | 80.0% "
            "| KD |") in sec
    assert "| qwen2.5-7b.qkv | 4608×3584 | 64 | – | 24.0 | K0L | – | – | – | 9.0 | – | TD |" in sec
    # per call: KD, OP and K0, GPU / host / end to end
    assert "| llama3-8b.o | 1 | 10.0 | 5.0 | 14.0 | 10.5 | 3.0 | 13.0 | 11.0 | 15.0 | 4.0 | 19.0 |" in sec
    assert "above 12 µs in a pass: **1** at llama3-8b.o M=1 (over 3 points)" in sec
    assert "geometric mean: **1.342×** at M <= 32 (over 2 points)" in sec
    assert f"**0.800×** at {O} M=64 (over 3 points)" in sec
    assert "recorded over: **130 s** (first row to last of 20 rows, summed over 2 runs)" in sec
    assert "](figures/decode.png)" in sec and "`study.report.fig_decode`" in sec
    png = out / "figures" / "decode.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1024
    assert "| figures/decode.png | `study.report.fig_decode` | drawn |" in text


def test_a_run_without_the_panel_renders_as_before(tmp_path):
    out = make_run(tmp_path, with_panel=False)
    text = report.render(out).read_text()
    assert "Decode panel" not in text and "decode" not in section(text, "## Figures")
    assert "decode_summary" not in text and "decode_findings" not in text
    assert not (out / "figures" / "decode.png").exists()
    assert not (out / "data" / T.decode_summary.file).exists()


def test_the_heatmap_is_legible(rendered):
    out, _ = rendered
    run = report.load(out)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.text import Text

    from study.report.figures import common
    from study.report.figures.decode import draw_decode

    with common.theme():
        fig = draw_decode(run)
    FigureCanvasAgg(fig).draw()
    w, h = fig.get_size_inches()
    assert w <= common.PAGE_IN and w / h <= 2.0
    ax = fig.axes[0]
    cells = sorted(t.get_text() for t in ax.texts)
    assert cells == sorted(["1.20×", "0.80×", "1.50×", "–"])
    norm = ax.images[0].norm
    assert isinstance(norm, TwoSlopeNorm) and norm.vcenter == 1.0
    # symmetric in log space: 1.5× and 1 / 1.5 sit at the two ends
    assert norm.vmax == pytest.approx(1.5) and norm.vmin == pytest.approx(1 / 1.5)
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert texts and all(t.get_fontsize() >= common.SMALL for t in texts)
    r = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(r) for t in ax.texts]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == [f"{O}  4096×4096", f"{QKV}  4608×3584"]


# --- the declaration and the writer -----------------------------------------------------------------


def test_the_declaration_lists_every_column_the_writer_writes(monkeypatch):
    """A row of an (ok) measurement and of a read roof, made by the writer's own functions on the
    CPU (the device steps replaced), with the shape's and the provenance columns: exactly the
    declared columns, in the declared table."""
    import torch

    from study.measure import bench

    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(bench, "poisoned", lambda M, N, device="cpu": torch.full((M, N), math.nan))
    monkeypatch.setattr(bench, "time_cuda", lambda fn, flush, target_s: (fn(), bench.Timing(0.01, 0.009,
                                                                                            0.011, 5))[1])
    monkeypatch.setattr(panel, "e2e_seconds", lambda call: 2e-5)
    from study import kernels as registry

    a, b = torch.randn(2, 64), torch.randn(64, 32)
    ref = a.double() @ b.double()
    k = registry.get("K0")
    row = panel.measure_point("K0", k, lambda a, b, out: out.copy_(a @ b), a, b, ref, None, "9.0")
    assert row["status"] == "ok" and row["gpu_us"] == pytest.approx(10.0)
    assert row["e2e_us"] == pytest.approx(20.0) and "host_us" not in row
    read = panel.measure_read(b, None)
    prov = provenance(GPU(**TEST_GPU), "run")
    common = panel.shape_columns(panel.BY_NAME[O], prov)
    written = set(common) | set(row) | set(read) | {"timestamp"}
    assert written == set(T.decode.columns)
    assert T.decode in tables.MEASURED and T.decode.append_only
    assert T.decode.producer == "study.measure.decode:main"
    assert set(tables.RESULTS_PROVENANCE) <= set(T.decode.columns)
    # a wrong result: a row with its error and no time
    wrong = panel.measure_point("K0", k, lambda a, b, out: out.copy_(2 * a @ b), a, b, ref, None, "9.0")
    assert wrong["status"] == "wrong" and "gpu_us" not in wrong and wrong["rel_err"] > 0.5


def test_the_panel_is_written_once():
    assert [p.name for p in panel.PANEL] == list(panel.BY_NAME)
    assert len(panel.PANEL) == 11 and panel.MS == (1, 2, 4, 8, 16, 32, 64)
    assert (panel.BY_NAME["qwen2.5-7b.lm_head"].N, panel.BY_NAME["qwen2.5-7b.lm_head"].K) == (152064, 3584)
    assert (panel.BY_NAME["llama3-70b.down"].N, panel.BY_NAME["llama3-70b.down"].K) == (8192, 28672)


def test_a_continued_file_must_share_the_provenance(tmp_path):
    write_fixture(tmp_path / "decode.csv")
    prov = {c: "" for c in panel.MATCH} | {"gpu": "Test GPU", "commit": "abc"}
    df = pd.read_csv(tmp_path / "decode.csv", dtype=str, keep_default_na=False)
    prov |= {c: df[c].iloc[0] for c in panel.MATCH}
    keys = panel.held_keys(tmp_path / "decode.csv", prov)
    assert (O, "read", "") in keys and (QKV, "KD", "64") in keys
    with pytest.raises(Exception, match="commit abc; this run's is def"):
        panel.held_keys(tmp_path / "decode.csv", prov | {"commit": "def"})


# --- the command line -------------------------------------------------------------------------------


@pytest.mark.parametrize("args, words", [
    (["--shapes", "llama3-8b.nope"], ["unknown shape", "llama3-8b.nope"]),
    (["--ms", "1,x"], ["--ms", "'x'"]),
    (["--ms", "0,1"], ["--ms", "positive"]),
    (["--ms=-4"], ["--ms", "positive"]),
    (["--ms", "1,,2"], ["--ms", "empty item"]),
    (["--ms", ","], ["--ms", "empty"]),
    (["--kernels", "KD,K99"], ["unknown kernel", "K99"]),
    (["--budget-s", "0"], ["--budget-s"]),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, words):
    p = cli("study.decode", "--out", tmp_path / "o", *args)
    refused(p, *words)
    assert not (tmp_path / "o").exists()


def test_without_a_gpu_it_says_so_in_one_line(tmp_path):
    p = cli("study.decode", "--out", tmp_path / "o", "--shapes", O, "--ms", "1",
            env={"CUDA_VISIBLE_DEVICES": ""})
    refused(p, "CUDA GPU")
    assert not (tmp_path / "o").exists()


@pytest.mark.gpu
def test_the_panel_at_one_shape_and_two_ms(tmp_path):
    p = cli("study.decode", "--out", tmp_path, "--shapes", O, "--ms", "1,16", "--budget-s", "300")
    assert p.returncode == 0, p.stderr
    assert any(line.startswith(f"[1/1] {O}") for line in lines(p.stderr)), p.stderr
    rows = pd.read_csv(tmp_path / "data" / T.decode.file)
    assert list(rows.columns) == list(T.decode.columns)
    read = rows[rows["kernel"] == "read"]
    assert len(read) == 1 and read["gpu_us"].iloc[0] > 0 and read["M"].isna().all()
    measured = rows[rows["kernel"] != "read"]
    assert set(measured["M"]) == {1, 16} and {"KD", "K0"} <= set(measured["kernel"])
    assert not measured.duplicated(["kernel", "M"]).any()
    ok = measured[measured["status"] == "ok"]
    assert set(ok["kernel"]) >= {"KD", "K0"}, measured[["kernel", "M", "status", "note"]]
    assert (ok["rel_err"] <= 1e-5).all() and (ok["gpu_us"] > 0).all() and (ok["e2e_us"] > 0).all()
    assert (ok["calls"] == panel.CALLS).all() and (ok["p20_us"] <= ok["p80_us"]).all()
    assert rows["gpu"].nunique() == 1 and rows["commit"].nunique() == 1 and rows["run_id"].nunique() == 1
    # the host pass, in a child process: every timed (M, kernel) of KD, OP and K0 in each pass
    h = pd.read_csv(tmp_path / "data" / T.decode_host.file)
    assert list(h.columns) == list(T.decode_host.columns)
    timed = ok[ok["kernel"].isin(host.HOST_KERNELS)]
    assert len(h) == host.PASSES * len(timed) and set(h["pass"]) == set(range(host.PASSES))
    assert (h["status"] == "ok").all() and (h["host_min_us"] <= h["host_us"]).all()
    assert (h["host_us"] <= h["host_max_us"]).all() and (h["cpu_us"] > 0).all()
    s = dd.summary(rows, h)
    assert list(s["M"]) == [1, 16] and np.isfinite(s["speedup"]).all()
    assert np.isfinite(s["pct_read_roof"]).all() and np.isfinite(s["kd_host_us"]).all()
    # run again: everything is there, nothing is measured twice
    again = cli("study.decode", "--out", tmp_path, "--shapes", O, "--ms", "1,16")
    assert again.returncode == 0, again.stderr
    assert len(pd.read_csv(tmp_path / "data" / T.decode.file)) == len(rows)
    assert len(pd.read_csv(tmp_path / "data" / T.decode_host.file)) == len(h)
