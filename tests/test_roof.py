"""The measured bandwidth roofs (`docs/method.md#bandwidth-roof`): recorded in gpu.json, checked
like every other constant, kept on --resume, set against each row's bytes moved once, and shown
beside the datasheet DRAM peak in the report; "not measured in this run" where a run has none.

Expected numbers are worked out by hand from the shapes (decode_b1 is 1×18944×3584) and the
times given here, not taken from the code under test. CPU only, except the last test (marked gpu).
"""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from study import derive, report, run
from study.derive import experiment_tables as tables
from study.derive import ledgers
from study.errors import InputError
from study.measure import bench
from study.rundata import rundir
from study.rundata.gpu import GPU
from study.rundata.rundir import RunDir

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "report"
SEED_GPU = REPO / "reports" / "data" / rundir.SEED_GPU

# decode_b1: 4 (MK + KN + MN) = 4 (3584 + 67,895,296 + 18,944) bytes; B alone is 4 x 67,895,296
DECODE_B1 = (1, 18944, 3584)
DECODE_B1_BYTES = 271_671_296
DRAM_H200 = 4814.304  # 3201 MHz x 2 x 6016 bits / 8, GB/s
FP32_H200 = 66_908.16  # 132 SMs x 128 FMA lanes x 2 FLOP x 1980 MHz, GFLOP/s
DECODE_B1_GFLOP = 2 * 18944 * 3584 / 1e9  # 2 M N K at M = 1

ROOFS = {
    "read_gbps": 4000.0, "read_p20_gbps": 3950.0, "read_p80_gbps": 4020.0,
    "copy_gbps": 3500.0, "copy_p20_gbps": 3480.0, "copy_p80_gbps": 3510.0,
    "roof_buffer_bytes": 2**30,
}


def h200(**more) -> GPU:
    return GPU("NVIDIA H200", 132, 128, 1980.0, 3201.0, 6016, l2_bytes=60 * 2**20, cc="9.0", **more)


# --- gpu.json -----------------------------------------------------------------------------------


def test_gpu_json_round_trip_with_the_roofs(tmp_path):
    g = h200(sampled_sm_clock_mhz=1980.0, **ROOFS)
    path = tmp_path / "gpu.json"
    g.to_json(path)
    written = json.loads(path.read_text())
    assert {k: written[k] for k in ROOFS} == ROOFS
    back = GPU.from_json(path)
    assert back == g
    assert back.roofs() == ROOFS
    assert isinstance(back.roof_buffer_bytes, int)


def test_gpu_json_without_the_roofs_is_unchanged_by_a_round_trip(tmp_path):
    raw = json.loads(SEED_GPU.read_text())
    assert not set(raw) & set(ROOFS)  # the seed GPU's description predates the roofs
    g = GPU.from_json(SEED_GPU)
    assert g.read_gbps is None and g.copy_gbps is None and g.roofs() == {}
    g.to_json(tmp_path / "gpu.json")
    assert json.loads((tmp_path / "gpu.json").read_text()) == raw


def test_a_null_roof_reads_as_not_measured():
    data = {**h200().to_dict(), "read_gbps": None}
    assert GPU.from_dict(data).read_gbps is None


@pytest.mark.parametrize("key", ["read_gbps", "copy_gbps", "read_p20_gbps", "roof_buffer_bytes"])
@pytest.mark.parametrize("value", [0, -1, "x", math.inf, math.nan, True, False])
def test_a_bad_roof_is_refused_with_one_line_naming_the_key(tmp_path, key, value):
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps({**h200().to_dict(), key: value}))  # inf, nan: JSON's Infinity, NaN
    with pytest.raises(InputError) as e:
        GPU.from_json(path)
    msg = str(e.value)
    assert "\n" not in msg and repr(key) in msg and str(path) in msg, msg


def test_a_fractional_buffer_size_is_refused():
    with pytest.raises(InputError, match="'roof_buffer_bytes' must be a whole number"):
        GPU.from_dict({**h200().to_dict(), "roof_buffer_bytes": 1.5})


# --- the measurement's arithmetic (no device) ---------------------------------------------------


def test_roof_buffer_is_eight_l2s_and_at_least_one_gib():
    assert bench.roof_buffer_bytes(60 * 2**20) == 2**30  # 8 x 60 MiB = 480 MiB < 1 GiB
    assert bench.roof_buffer_bytes(200 * 2**20) == 1600 * 2**20
    assert bench.roof_buffer_bytes(None) == 2**30
    assert bench.roof_buffer_bytes(2**27 + 1) == (8 * (2**27 + 1)) // 4 * 4  # whole floats


def test_bandwidth_is_bytes_over_the_median_time():
    # times 1..11 ms: median 6, p20 = 1 + 0.2 x 10 = 3, p80 = 9 (linear interpolation)
    bw = bench.bandwidth(6 * 10**6, [float(t) for t in range(11, 0, -1)])
    assert bw.gbps == pytest.approx(1.0)  # 6e6 bytes in 6 ms = 1e9 bytes/s
    assert bw.p20_gbps == pytest.approx(6 / 9)  # the slow end: bytes over the p80 time
    assert bw.p80_gbps == pytest.approx(2.0)  # bytes over the p20 time
    assert (bw.reps, bw.nbytes) == (11, 6 * 10**6)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without a CUDA device")
def test_the_roofs_without_a_device_are_an_input_error():
    with pytest.raises(InputError, match="no CUDA device"):
        bench.bandwidth_roofs(60 * 2**20)


# --- the derived figures ------------------------------------------------------------------------


def shape_times() -> pd.DataFrame:
    rows = [("decode_b1", "K0", 0.08), ("decode_b1", "K6", 0.35), ("square", "K0", 2.7),
            ("square", "K6", 3.9)]
    sq = (4096, 4096, 4096)
    return pd.DataFrame(
        [
            {"experiment": "shapes", "label": lab, "kernel": k, "M": s[0], "N": s[1], "K": s[2], "ms": ms}
            for lab, k, ms in rows
            for s in [DECODE_B1 if lab == "decode_b1" else sq]
        ]
    )


def test_attainment_against_the_measured_and_the_datasheet_roof():
    led = ledgers.ledger_table(shape_times(), h200(read_gbps=4000.0)).set_index(["label", "kernel"])
    k0 = led.loc[("decode_b1", "K0")]
    assert k0["bytes_once"] == DECODE_B1_BYTES
    assert k0["gbps_once"] == pytest.approx(3395.8912)  # 271,671,296 B in 0.08 ms
    assert k0["pct_read_roof"] == pytest.approx(84.89728)  # of 4000 GB/s
    assert k0["dram_gbps"] == pytest.approx(DRAM_H200)
    assert k0["pct_dram_peak"] == pytest.approx(70.5375315, rel=1e-8)  # of 4814.304 GB/s
    assert led.loc[("decode_b1", "K6"), "gbps_once"] == pytest.approx(776.2037029)  # in 0.35 ms
    sq = led.loc[("square", "K0")]
    assert sq["bytes_once"] == 3 * 4 * 4096**2
    assert sq["gbps_once"] == pytest.approx(74.5654044)  # 201,326,592 B in 2.7 ms


def test_without_a_measured_roof_the_column_is_blank_not_an_error():
    led = ledgers.ledger_table(shape_times(), h200())
    assert led["pct_read_roof"].isna().all() and led["read_gbps"].isna().all()
    assert led["pct_dram_peak"].notna().all()
    sh = tables.shapes(led).set_index("label")
    assert math.isnan(sh.at["decode_b1", "pct_read_roof"])
    assert sh.at["decode_b1", "pct_dram_peak"] == pytest.approx(70.5375315, rel=1e-8)


def test_the_shape_roof_names_the_fastest_kernel_and_the_b_dominated_shapes():
    sh = tables.shapes(ledgers.ledger_table(shape_times(), h200(read_gbps=4000.0))).set_index("label")
    d = sh.loc["decode_b1"]
    assert d["kernel"] == "K0" and d["fastest_ms"] == 0.08
    assert d["pct_read_roof"] == pytest.approx(84.89728) and d["read_gbps"] == 4000.0
    assert d["b_share"] == pytest.approx(67_895_296 / 67_917_824)
    assert bool(d["b_dominates"]) and not bool(sh.at["square", "b_dominates"])
    assert sh.at["square", "b_share"] == pytest.approx(1 / 3)
    assert sh.at["square", "kernel"] == "K0"
    # the other roof beside the byte one: the same kernel's FLOP rate against the FP32 peak
    assert d["gflops"] == pytest.approx(DECODE_B1_GFLOP / 0.08e-3)  # 1,697.4 GFLOP/s
    assert d["pct_peak"] == pytest.approx(100 * DECODE_B1_GFLOP / 0.08e-3 / FP32_H200)  # 2.54%
    assert sh.at["square", "gflops"] == pytest.approx(2 * 4096**3 / 2.7e-3 / 1e9)
    assert sh.at["square", "pct_peak"] == pytest.approx(100 * 2 * 4096**3 / 2.7e-3 / 1e9 / FP32_H200)


def test_feeding_the_ledger_back_recomputes_the_roof_columns():
    led = ledgers.ledger_table(shape_times(), h200(read_gbps=4000.0))
    again = ledgers.ledger_table(led, h200(read_gbps=2000.0)).set_index(["label", "kernel"])
    assert again.loc[("decode_b1", "K0"), "pct_read_roof"] == pytest.approx(2 * 84.89728)


# --- the report ---------------------------------------------------------------------------------


def sections(text: str) -> dict[str, str]:
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


def rendered(tmp: Path, roofs: dict | None) -> str:
    data = tmp / "data"
    data.mkdir(parents=True)
    for p in FIXTURE.glob("*.csv"):
        shutil.copy(p, data / p.name)
    gpu = json.loads((FIXTURE / "gpu.json").read_text())
    (data / "gpu.json").write_text(json.dumps({**gpu, **(roofs or {})}, indent=2) + "\n")
    derive.derive(RunDir(tmp), seed=None, note=False)
    return report.render(tmp, measured=False).read_text()


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return {
        "with": rendered(tmp_path_factory.mktemp("with"), ROOFS),
        "without": rendered(tmp_path_factory.mktemp("without"), None),
    }


def fixture_decode_b1_k0_gbps() -> float:
    res = pd.read_csv(FIXTURE / "results.csv")
    shapes = res[(res["experiment"] == "shapes") & (res["label"] == "decode_b1")].dropna(subset=["ms"])
    fastest = shapes.loc[shapes["ms"].idxmin()]
    assert fastest["kernel"] == "K0"
    return DECODE_B1_BYTES / (fastest["ms"] / 1e3) / 1e9


def finding(text: str) -> str:
    return next(
        line for line in sections(text)["### E3 shapes"].splitlines()
        if line.startswith("**Finding:** where B is")
    )


def test_provenance_shows_the_measured_roofs_beside_the_datasheet(reports):
    peaks = next(ln for ln in sections(reports["with"])["## Provenance"].splitlines() if "**Peaks:**" in ln)
    assert "DRAM 4,814.3 GB/s datasheet, measured read 4,000.0 GB/s (p20–p80 3,950.0–4,020.0)" in peaks
    assert "copy 3,500.0 GB/s (read + write), over a 1.00 GiB buffer" in peaks


def test_provenance_without_the_roofs_says_not_measured(reports):
    prov = sections(reports["without"])["## Provenance"]
    peaks = next(ln for ln in prov.splitlines() if "**Peaks:**" in ln)
    assert "DRAM 4,814.3 GB/s datasheet, measured read bandwidth not measured in this run;" in peaks


def test_the_finding_gives_the_read_roof_and_the_datasheet_percent(reports):
    g = fixture_decode_b1_k0_gbps()
    flops = g / DECODE_B1_BYTES * DECODE_B1_GFLOP * 1e9  # the same time: GFLOP/s
    line = finding(reports["with"])
    assert (
        f"decode_b1: the fastest kernel, K0, moves its 271.7 MB at {g:,.0f} GB/s, "
        f"{100 * g / 4000:.1f}% of the measured read bandwidth (4.00 TB/s) and "
        f"{100 * g / DRAM_H200:.1f}% of the datasheet DRAM peak (4.81 TB/s), and computes at "
        f"{flops:,.0f} GFLOP/s, {100 * flops / FP32_H200:.1f}% of the FP32 peak" in line
    ), line
    assert "decode_b32:" in line and "square" not in line and "prefill" not in line


def test_the_finding_without_a_roof_keeps_the_datasheet_percent(reports):
    g = fixture_decode_b1_k0_gbps()
    line = finding(reports["without"])
    assert (
        f"decode_b1: the fastest kernel, K0, moves its 271.7 MB at {g:,.0f} GB/s, "
        f"{100 * g / DRAM_H200:.1f}% of the datasheet DRAM peak (4.81 TB/s; the measured read "
        "bandwidth: not measured in this run)" in line
    ), line


def test_the_roof_table_has_the_read_roof_column(reports):
    g = fixture_decode_b1_k0_gbps()
    row = next(ln for ln in sections(reports["with"])["### E3 shapes"].splitlines()
               if ln.startswith("| decode_b1 (1×18944×3584) |"))
    flops = g / DECODE_B1_BYTES * DECODE_B1_GFLOP * 1e9
    assert "| K0 | " in row and f"| {g:,.0f} | {100 * g / 4000:.1f}% | {100 * g / DRAM_H200:.1f}% |" in row
    assert row.endswith(f"| {flops:,.0f} | {100 * flops / FP32_H200:.1f}% |"), row
    row = next(ln for ln in sections(reports["without"])["### E3 shapes"].splitlines()
               if ln.startswith("| decode_b1 (1×18944×3584) |"))
    assert f"| {g:,.0f} | not measured in this run | {100 * g / DRAM_H200:.1f}% |" in row


def test_the_roofs_change_only_the_lines_that_show_them(reports):
    a, b = reports["with"].splitlines(), reports["without"].splitlines()
    assert len(a) == len(b)
    differ = [(x, y) for x, y in zip(a, b) if x != y]
    assert differ  # the measured values are shown
    for x, y in differ:  # each is a line that shows a measured roof, or says it has none
        assert "not measured in this run" in y and "not measured" not in x, (x, y)
    cells = [(x, y) for x, y in differ if x.startswith("| ")]
    assert len(cells) == 4  # the four shapes' rows of the roof table, one cell each
    for x, y in cells:
        changed = [(c, d) for c, d in zip(x.split(" | "), y.split(" | ")) if c != d]
        assert len(changed) == 1 and changed[0][1] == "not measured in this run", (x, y)


# --- recording at the start of a measuring run ---------------------------------------------------


def fake_bench(read_gbps: float, calls: list):
    def bandwidth_roofs(l2_bytes):
        calls.append(l2_bytes)
        n = bench.roof_buffer_bytes(l2_bytes)
        return (bench.Bandwidth(read_gbps, read_gbps - 10, read_gbps + 5, 20, n),
                bench.Bandwidth(3500.0, 3490.0, 3505.0, 20, 2 * n))

    return bandwidth_roofs


def rows_in(rd: RunDir) -> None:
    rd.create()
    rd.file(rundir.RESULTS).write_text("experiment,label,kernel,M,N,K,ms\nmain,main,K0,8,8,8,1.0\n")


def test_a_fresh_run_measures_the_roofs_and_records_them_before_any_row(tmp_path, capsys):
    rd = RunDir(tmp_path)
    rd.create()
    calls = []
    g = run.bandwidth_roofs(h200(), rd, fake_bench(4100.0, calls))
    assert calls == [60 * 2**20]
    assert g.read_gbps == 4100.0 and g.copy_gbps == 3500.0 and g.roof_buffer_bytes == 2**30
    on_disk = GPU.from_json(rd.file(rundir.GPU))
    assert on_disk.read_gbps == 4100.0 and on_disk.read_p20_gbps == 4090.0 and on_disk.copy_p80_gbps == 3505.0
    assert "read 4,100 GB/s" in capsys.readouterr().err


def test_resume_keeps_the_recorded_roofs_and_measures_nothing(tmp_path, capsys):
    rd = RunDir(tmp_path)
    rows_in(rd)
    h200(**ROOFS).to_json(rd.file(rundir.GPU))
    before = rd.file(rundir.GPU).read_bytes()
    calls = []
    g = run.bandwidth_roofs(h200(), rd, fake_bench(9999.0, calls))
    assert calls == [] and g.roofs() == ROOFS
    assert rd.file(rundir.GPU).read_bytes() == before
    assert "keeping the bandwidth roofs" in capsys.readouterr().err


def test_resume_of_a_run_without_roofs_adds_them_and_keeps_the_rest(tmp_path):
    rd = RunDir(tmp_path)
    rows_in(rd)
    h200(sampled_sm_clock_mhz=1900.0).to_json(rd.file(rundir.GPU))
    g = run.bandwidth_roofs(h200(), rd, fake_bench(4100.0, []))
    on_disk = GPU.from_json(rd.file(rundir.GPU))
    assert g.read_gbps == on_disk.read_gbps == 4100.0
    assert on_disk.sampled_sm_clock_mhz == 1900.0  # what the run had recorded stays


def test_a_device_that_cannot_be_measured_leaves_the_roofs_unset(tmp_path, capsys):
    def oom(l2_bytes):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB\nmore")

    rd = RunDir(tmp_path)
    rd.create()
    g = run.bandwidth_roofs(h200(), rd, oom)
    assert g.roofs() == {} and not rd.has(rundir.GPU)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bandwidth roofs not measured" in err and "out of memory" in err


# --- replay ---------------------------------------------------------------------------------------


def test_a_replay_takes_the_roofs_from_its_gpu_file(tmp_path):
    gpu = tmp_path / "gpu.json"
    gpu.write_text(json.dumps({**json.loads(SEED_GPU.read_text()), "read_gbps": 900.0}))
    out = tmp_path / "run"
    times = REPO / "reports" / "data" / rundir.SEED_TIMES
    assert run.main(["--from-results", str(times), "--gpu", str(gpu), "--out", str(out), "--no-report"]) == 0
    assert GPU.from_json(out / "data" / "gpu.json").read_gbps == 900.0
    led = pd.read_csv(out / "data" / "ledgers.csv")
    # every seed row at its own shape: 4 (MK + KN + MN) bytes over its time, against 900 GB/s
    r = led.iloc[0]
    nbytes = 4 * (r["M"] * r["K"] + r["K"] * r["N"] + r["M"] * r["N"])
    assert r["pct_read_roof"] == pytest.approx(100 * nbytes / (r["ms"] / 1e3) / 1e9 / 900.0)


# --- on a GPU -------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_the_measured_read_bandwidth_is_below_the_datasheet_peak():
    from study.measure import device

    g = device.from_device()
    torch.zeros(1, device="cuda")  # the CUDA context exists when a run measures the roofs
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    t0 = time.perf_counter()
    read, copy = bench.bandwidth_roofs(g.l2_bytes)
    took = time.perf_counter() - t0
    assert torch.cuda.memory_allocated() == before  # both buffers freed
    assert took < 2.0, took
    assert read.nbytes >= max(8 * (g.l2_bytes or 0), 2**30) and copy.nbytes == 2 * read.nbytes
    for bw in (read, copy):
        assert 0 < bw.p20_gbps <= bw.gbps <= bw.p80_gbps
        assert bw.gbps < g.dram_gbps() * 1.05, (bw, g.dram_gbps())
    assert read.reps >= 10
