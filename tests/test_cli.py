"""The CLI's answers to bad input (one line, exit 2) and its no-GPU path."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HAS_CUDA

from study.run import main

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args, cwd=REPO):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "study.run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--kernels", "K9"], ["K9", "known"]),
        (["--size", "0"], ["positive"]),
        (["--size", "-3"], ["positive"]),
        (["--size", "abc"], ["integer", "abc"]),
        (["--size", "12.5"], ["integer"]),
        (["--shape", "1,2"], ["M,N,K"]),
        (["--shape", "4,x,4"], ["integer"]),
        (["--kernels", "K6", "--shape", "4096,4097,4096"], ["K6", "multiple of 4", "N = 4097"]),
        (["--size", "4097"], ["K6", "multiple of 4"]),
        (["--experiments", "sizes,bogus"], ["bogus", "known"]),
        (["--experiments", ","], ["empty"]),
        (["--size", "64", "--shape", "1,2,3"], ["not allowed"]),
        (["--from-results", "x.csv"], ["--gpu"]),
        (["--arch", "90"], ["sm_90"]),
        (["--bogus-flag"], ["unrecognized"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error:"), err
    for w in words:
        assert w in err


def test_bad_input_never_prints_a_traceback():
    r = run_cli("--kernels", "K6", "--size", "4097")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and r.stderr.strip().count("\n") == 0
    assert "multiple of 4" in r.stderr


def test_replay_errors(tmp_path, capsys):
    gpu = REPO / "reports" / "data" / "rtx4090_seed_gpu.json"
    times = tmp_path / "t.csv"
    times.write_text("kernel,M,N\nK1,1,1\n")
    assert main(["--from-results", str(times), "--gpu", str(gpu), "--out", str(tmp_path)]) == 2
    assert "'K'" in capsys.readouterr().err
    times.write_text("kernel,M,N,K,ms\nK0,4096,4096,4096,2.4\nK2,4096,4096,4096,-1\n")
    assert main(["--from-results", str(times), "--gpu", str(gpu), "--out", str(tmp_path)]) == 2
    assert "K2" in capsys.readouterr().err
    assert main(["--from-results", str(tmp_path / "none.csv"), "--gpu", str(gpu)]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.skipif(HAS_CUDA, reason="the no-GPU path is only taken where there is no CUDA device")
def test_without_gpu_says_it_measured_nothing(tmp_path):
    r = run_cli("--no-sass", "--no-report", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "measured nothing" in r.stderr
    assert "Traceback" not in r.stderr
