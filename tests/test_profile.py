"""study.profile (Nsight Compute counters) and the report's counters section. CPU only.

The recorded counters (tests/fixtures/report/ncu.csv) were read on an H200; the expected
values below are computed here from that file's raw numbers, not by the code under test.
"""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from study import derive, report
from study import kernels as registry
from study.derive import counters
from study.measure import profile
from study.rundata.rundir import RunDir
from study.toolchain import tools

REPO = Path(__file__).resolve().parent.parent
NCU_FIXTURE = REPO / "tests" / "fixtures" / "report" / "ncu.csv"
SEED = REPO / "reports" / "data"

HEADER = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
          "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]


def _line(launch, kernel, metric, unit, value):
    cells = [launch, "1", "python3", "h", kernel, "1", "7", "(128, 1, 1)", "(4096, 1, 1)", "0", "9.0",
             "Command line profiler metrics", metric, unit, value]
    return ",".join(f'"{c}"' for c in cells)


RAW = "\n".join([
    "==PROF== Connected to process 1 (/usr/bin/python3)",
    "some output of the program",
    ",".join(f'"{c}"' for c in HEADER),
    _line("0", "gemm_a", "gpu__time_duration.sum", "ns", "3,047,936"),
    _line("0", "gemm_a", "launch__registers_per_thread", "register/thread", "128"),
    _line("1", "gemm_b", "gpu__time_duration.sum", "ns", "2,697,024"),
    _line("1", "gemm_b", "sm__warps_active.avg.pct_of_peak_sustained_active", "%", "n/a"),
    "==PROF== Disconnected from process 1",
]) + "\n"


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "study.profile", *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=120)


# --- parsing ncu's CSV -------------------------------------------------------------------------


def test_parse_skips_preamble_numbers_launches_and_strips_separators():
    rows = profile.parse_ncu_csv(RAW)
    assert len(rows) == 4
    assert [r["launch"] for r in rows] == [0, 0, 1, 1]
    assert [r["ncu_kernel"] for r in rows] == ["gemm_a", "gemm_a", "gemm_b", "gemm_b"]
    assert rows[0]["metric"] == "gpu__time_duration.sum" and rows[0]["unit"] == "ns"
    assert rows[0]["value"] == 3047936.0
    assert rows[1]["value"] == 128.0
    assert rows[3]["value"] == "n/a"  # not a number: kept as ncu wrote it


def test_parse_without_a_header_is_empty():
    assert profile.parse_ncu_csv("==ERROR== something failed\n") == []


def test_ncu_error_prefers_the_error_line():
    text = "==PROF== Connected\n==ERROR== Failed to find metric foo\nTraceback...\nlast line\n"
    assert profile.ncu_error(text) == "==ERROR== Failed to find metric foo"
    assert profile.ncu_error("a\n\nlast line\n") == "last line"
    child = "error: K3 at 64x64x64: relative error 1.0e-01 > 1e-05; not profiled\n==PROF== Disconnected\n"
    assert profile.ncu_error(child).startswith("error: K3 at 64x64x64")
    assert profile.ncu_error("") == "no output"


def test_the_report_reads_only_metrics_the_profiler_asks_for():
    asked = set(profile.METRICS)
    for name in counters.NCU.values():
        assert name in asked, name
    stall = next(m for m in profile.METRICS if m.startswith("regex:"))
    import re

    pattern = re.compile(stall[len("regex:"):])
    assert pattern.fullmatch("smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio")
    assert counters.STALL.match("smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio")


def test_find_ncu_falls_back_to_cuda_home(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text("#!/bin/sh\necho 'NVIDIA (R) Nsight Compute Command Line Profiler'\n"
                   "echo 'Version 2099.1'\n")
    ncu.chmod(ncu.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert tools.find_ncu() == str(ncu)
    assert tools.ncu_version(str(ncu)) == "Version 2099.1"
    assert profile.find_ncu is tools.find_ncu  # the profiler uses the toolchain's one lookup


# --- the CLI refuses bad input in one line -----------------------------------------------------


@pytest.mark.parametrize("args, needle", [
    (["--kernels", "Kx9"], "Kx9"),
    (["--shape", "1,2"], "--shape takes M,N,K"),
    (["--shape", "4096,4097,4096", "--kernels", "K6"], "K6 needs N to be a multiple of 4"),
    (["--bogus"], "unrecognized arguments"),
])
def test_cli_bad_input_is_one_line_exit_2(args, needle):
    done = run_cli(*args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_cli_without_ncu_or_gpu_says_so(tmp_path):
    env = {**os.environ, "PATH": os.path.dirname(sys.executable), "CUDA_HOME": str(tmp_path),
           "CUDA_PATH": str(tmp_path)}
    done = run_cli("--out", str(tmp_path / "out"), env=env)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith("error:")
    # /usr/local/cuda may hold an ncu on a machine with the toolkit; then the GPU check speaks
    assert "ncu (Nsight Compute) is not on PATH" in line or "need a CUDA GPU" in line
    assert not (tmp_path / "out" / "data" / "ncu.csv").exists()


# --- the report's counters section -------------------------------------------------------------


def _render(tmp_path: Path, ncu_rows: pd.DataFrame | None, bind: bool = True) -> str:
    """The counters section of the fixture run with ``ncu_rows`` as its counters. ``bind``: the
    counters made the timed run's (its commit; an autotuned kernel's configuration; a time at
    every profiled shape), as a profile read in the session of the run records them."""
    data = tmp_path / "data"
    data.mkdir(parents=True)
    shutil.copy(REPO / "tests" / "fixtures" / "report" / "gpu.json", data / "gpu.json")
    results = pd.read_csv(REPO / "tests" / "fixtures" / "report" / "results.csv", dtype={"label": str})
    if ncu_rows is not None and bind and len(ncu_rows):
        ncu_rows = ncu_rows.assign(commit=results["commit"].iloc[0])
        main = results[results["experiment"] == "main"].set_index("kernel")
        if "TA" in main.index:
            ncu_rows["config"] = [main.at["TA", "config"] if k == "TA" else "" for k in ncu_rows["kernel"]]
        have = set(zip(results["kernel"], results["M"], results["N"], results["K"]))
        shapes = ncu_rows[["kernel", "M", "N", "K"]].drop_duplicates().itertuples(index=False)
        extra = [{**main.loc[k].to_dict(), "kernel": k, "M": M, "N": N, "K": K, "experiment": "sizes",
                  "label": f"n={M}"} for k, M, N, K in shapes if (k, M, N, K) not in have]
        results = pd.concat([results, pd.DataFrame(extra)], ignore_index=True)
    results.to_csv(data / "results.csv", index=False)
    if ncu_rows is not None:
        ncu_rows.to_csv(data / "ncu.csv", index=False)
    derive.derive(RunDir(tmp_path), note=False)
    text = report.render(tmp_path).read_text()
    return text.split("## Hardware counters", 1)[1].split("\n## ", 1)[0]


def _row(section: str, kid: str) -> list[str]:
    line = next(ln for ln in section.splitlines() if ln.startswith(f"| {kid} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def _raw(kid: str) -> dict[str, float]:
    df = pd.read_csv(NCU_FIXTURE)
    return df[df["kernel"] == kid].set_index("metric")["value"].astype(float).to_dict()


def test_counters_table_from_the_recorded_h200_profile(tmp_path):
    section = _render(tmp_path, pd.read_csv(NCU_FIXTURE))
    wfma = 4096**3 / 32
    for kid in ("K0", "TA", "T5p"):
        raw, cells = _raw(kid), _row(section, kid)
        assert cells[1] == "4096×4096×4096"
        assert cells[2] == f"{raw['gpu__time_duration.sum'] / 1e6:.3f}"
        assert cells[3] == f"{raw['launch__registers_per_thread']:.0f}"
        assert cells[5] == f"{raw['smsp__issue_active.avg.pct_of_peak_sustained_active']:.1f}"
        assert cells[8] == f"{raw['smsp__inst_executed.sum'] / wfma:.3f}"
        assert cells[9] == f"{raw['smsp__inst_executed_op_shared_ld.sum'] / wfma:.3f}"
    # the recorded H200 numbers: cuBLAS issues on ~89% of cycles, TA on ~79%, with the same
    # instruction count per warp FMA (within 1%)
    k0, ta = _raw("K0"), _raw("TA")
    assert k0["smsp__issue_active.avg.pct_of_peak_sustained_active"] > 85
    assert ta["smsp__issue_active.avg.pct_of_peak_sustained_active"] < 82
    assert abs(ta["smsp__inst_executed.sum"] / k0["smsp__inst_executed.sum"] - 1) < 0.01
    assert "Read at commit 0123456789ab; run 20261130T105200:" in section  # the timed run's commit
    finding = next(ln for ln in section.splitlines() if ln.startswith("**Finding (TA vs cuBLAS):**"))
    assert "issues on 78.6% of scheduler cycles against 89.3%" in finding
    # waits only: the two non-wait reasons never appear among the stalls
    assert "not_selected" not in section and " selected " not in section


def test_counters_combine_launches_and_scale_time_units(tmp_path):
    def rows(kernel, launch, unit, t, inst, issue):
        base = {"kernel": kernel, "M": 64, "N": 64, "K": 64, "launch": launch, "run_id": "r1"}
        return [
            {**base, "metric": "gpu__time_duration.sum", "unit": unit, "value": t},
            {**base, "metric": "smsp__inst_executed.sum", "unit": "inst", "value": inst},
            {**base, "metric": "smsp__issue_active.avg.pct_of_peak_sustained_active", "unit": "%",
             "value": issue},
        ]

    # two launches of K0: 30 us at 90 % issue and 10 us at 50 % issue; counts add
    df = pd.DataFrame(rows("K0", 0, "us", 30.0, 1000, 90.0) + rows("K0", 1, "ns", 10000.0, 3000, 50.0))
    section = _render(tmp_path, df)
    cells = _row(section, "K0")
    assert cells[2] == "0.040"  # 30 us + 10 us
    assert cells[5] == "80.0"  # (30*90 + 10*50) / 40
    assert cells[8] == f"{4000 / (64**3 / 32):.3f}"


def test_stalls_per_issue_combine_by_instructions_rates_by_time():
    from study.derive import counters

    stall = "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio"

    def rows(launch, t, inst, issue, mio):
        base = {"launch": launch}
        return [{**base, "metric": "gpu__time_duration.sum", "value": t},
                {**base, "metric": "smsp__inst_executed.sum", "value": inst},
                {**base, "metric": "smsp__issue_active.avg.pct_of_peak_sustained_active", "value": issue},
                {**base, "metric": stall, "value": mio}]

    # a short launch of few instructions that waits a lot per instruction (a transposition), then a
    # long one of many: 10 + 990 time units, 2 + 998 instructions
    got = counters.combined(pd.DataFrame(rows(0, 10.0, 2.0, 14.0, 40.0) + rows(1, 990.0, 998.0, 84.0, 0.0)))
    assert got[stall] == pytest.approx((2 * 40.0 + 998 * 0.0) / 1000)  # 0.08, not 10 / 1000 * 40 = 0.4
    assert got["smsp__issue_active.avg.pct_of_peak_sustained_active"] == pytest.approx(
        (10 * 14.0 + 990 * 84.0) / 1000)
    assert got["smsp__inst_executed.sum"] == 1000.0


def test_counters_latest_profile_wins(tmp_path):
    def row(run_id, t):
        return {"kernel": "TA", "M": 64, "N": 64, "K": 64, "launch": 0, "run_id": run_id,
                "metric": "gpu__time_duration.sum", "unit": "ns", "value": t}

    section = _render(tmp_path, pd.DataFrame([row("20261130T100000", 5e6), row("20261130T110000", 2e6)]))
    assert _row(section, "TA")[2] == "2.000"


def test_request_ledger_sentence_for_k1(tmp_path):
    M = N = K = 256
    wfma = M * N * K / 32
    base = {"kernel": "K1", "M": M, "N": N, "K": K, "launch": 0, "run_id": "r"}
    df = pd.DataFrame([
        {**base, "metric": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "unit": "sector",
         "value": 33 * wfma},
        {**base, "metric": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "unit": "", "value": 2 * wfma},
        # no shared loads at all: the conflicts-per-wavefront cell is empty, not an error
        {**base, "metric": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "unit": "", "value": 0},
        {**base, "metric": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "value": 0},
    ])
    section = _render(tmp_path, df)
    counted = registry.get("K1").counted.req_per_fma
    line = next(ln for ln in section.splitlines() if ln.startswith("**Request ledger (K1):**"))
    assert f"counted {counted:g} requests" in line
    assert "measured 33.00 32-byte sectors and 2.00 load instructions" in line
    assert _row(section, "K1")[10] == "–"


def test_counters_of_another_commit_are_listed_and_left_out(tmp_path):
    section = _render(tmp_path, pd.read_csv(NCU_FIXTURE), bind=False)
    assert "**Counters left out** (3 kernel-shape pairs)" in section
    assert "read at commit 690021b10c58; timed at 0123456789ab" in section
    assert "| K0 | 4096×4096×4096 | 2.697" not in section and "Finding (TA vs cuBLAS)" not in section


def test_counters_absent_or_empty(tmp_path):
    section = _render(tmp_path / "a", None)
    assert "ncu.csv not in this run" in section and "python -m study.profile" in section
    empty = pd.DataFrame(columns=["kernel", "M", "N", "K", "metric", "value"])
    section = _render(tmp_path / "b", empty)
    assert "ncu.csv has no rows" in section


def test_counters_with_missing_metrics_render_dashes(tmp_path):
    """An ncu.csv that lacks a metric (another ncu, a cut-short run) costs cells, not the section."""
    def row(kid, metric, value):
        return {"kernel": kid, "M": 64, "N": 64, "K": 64, "launch": 0, "run_id": "r", "metric": metric,
                "unit": "%", "value": value}

    issue = "smsp__issue_active.avg.pct_of_peak_sustained_active"
    section = _render(tmp_path, pd.DataFrame([row("K0", issue, 89.0), row("TA", issue, 79.0)]))
    assert "could not be rendered" not in section
    finding = next(ln for ln in section.splitlines() if ln.startswith("**Finding (TA vs cuBLAS):**"))
    assert "executes – instructions" in finding
    assert "issues on 79.0% of scheduler cycles against 89.0%" in finding
    assert _row(section, "TA")[5] == "79.0" and _row(section, "TA")[2] == "–"


SOURCE_PAGE = REPO / "tests" / "fixtures" / "ncu_source_page.csv"  # rows of G12's page on the H200


def test_the_per_instruction_page_is_summed_per_opcode():
    import csv

    blocks = profile.parse_source_page(SOURCE_PAGE.read_text())
    assert [name for name, _ in blocks] == ["g12_kernel", "other_kernel"]
    got = {r["opcode"]: r for r in profile.by_opcode(blocks[0][1])}
    # the same sums taken here from the file's rows, opcode by opcode
    lines = SOURCE_PAGE.read_text().splitlines()[1:]
    first = lines[: lines.index(next(x for x in lines if x.startswith('"Kernel Name"')))]
    rows = list(csv.DictReader(first))
    assert set(got) == {"LDGSTS.E", "BAR.SYNC.DEFER_BLOCKING", "LDS.128", "FFMA", "LDS"}  # "@!PT LDS": LDS
    for op, r in got.items():
        mine = [x for x in rows if [w for w in x["Source"].split() if not w.startswith("@")][0] == op]
        assert r["instructions"] == len(mine)
        assert r["executed"] == sum(float(x["Instructions Executed"].replace(",", "")) for x in mine)
        assert r["wavefronts_shared"] == sum(float(x["L1 Wavefronts Shared"].replace(",", "")) for x in mine)
        samples = sum(float(v.replace(",", "")) for x in mine for k, v in x.items()
                      if k.startswith("stall_") and "(" not in k)
        assert r["samples"] == samples
        assert r["stall_short_sb"] == sum(float(x["stall_short_sb"]) for x in mine)
    assert got["LDGSTS.E"]["wavefronts_shared"] > got["LDGSTS.E"]["wavefronts_shared_ideal"] > 0
    assert profile.opcode("  @!P0 LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64] ") == "LDGSTS.E.BYPASS.128"
    assert profile.parse_source_page("no page here") == []


def test_source_rows_of_another_commit_are_left_out(tmp_path):
    from study.derive import Derivation

    shutil.copytree(REPO / "tests" / "fixtures" / "report", tmp_path / "run" / "data")
    rd = RunDir(tmp_path / "run")
    times = pd.read_csv(rd.file("results.csv"))
    commit = str(times[times["kernel"] == "K6"]["commit"].iloc[0])
    rows = [{"kernel": "K6", "M": 4096, "N": 4096, "K": 4096, "opcode": "LDS.128", "executed": 3.0,
             "wavefronts_shared": 5.0, "samples": 1.0, "commit": c, "run_id": r} for c, r in ((commit, "1"),
                                                                                            ("0ther", "2"))]
    pd.DataFrame(rows[:1]).to_csv(rd.file("ncu_source.csv"), index=False)
    assert list(Derivation(rd, None, note=False).ncu_source["executed"]) == [3.0]
    pd.DataFrame(rows).to_csv(rd.file("ncu_source.csv"), index=False)  # the latest read, another commit
    assert Derivation(rd, None, note=False).ncu_source is None
