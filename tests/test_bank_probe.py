"""study.bank_probe without a GPU: the variants' sources (the same FFMAs, the registers they read
drawn by the seed) and their SASS counts; the command refuses to run without a GPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from study.measure import bank_probe as bp
from tests.conftest import REPO, needs_tools


def fmas(src: str) -> list[tuple[int, int, int]]:
    return [tuple(map(int, m)) for m in re.findall(r"a(\d+) = fmaf\(x(\d+), y(\d+), a\d+\)", src)]


def test_every_variant_is_the_same_work_on_other_registers():
    a, b = fmas(bp.source(1)), fmas(bp.source(2))
    assert len(a) == len(b) == bp.FFMAS and a != b
    assert [acc for acc, _, _ in a] == [j % bp.ACCS for j in range(bp.FFMAS)]  # accumulators in turn
    assert bp.source(1) == bp.source(1)  # a seed is one variant
    # every third seed an outer product: each x meets each y once per XS * YS FFMAs
    outer = fmas(bp.source(3))
    every = {(x, y) for x in range(bp.XS) for y in range(bp.YS)}
    assert {(x, y) for _, x, y in outer[: bp.XS * bp.YS]} == every


@needs_tools
def test_a_variant_compiles_to_its_ffmas_and_the_loop_counts_them(tmp_path):
    c = bp.counts(bp.compile_variant(3, "sm_90", tmp_path))
    assert c["loop_ffma"] == bp.FFMAS and c["loop_instructions"] >= bp.FFMAS
    assert 0 <= c["loop_bank4"] <= 2 * bp.FFMAS and c["loop_reuse"] >= 0


def test_without_a_gpu_it_says_so_in_one_line(tmp_path):
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no GPU visible, on any machine
    p = subprocess.run([sys.executable, "-m", "study.bank_probe", "--out", str(tmp_path / "o")], cwd=REPO,
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "GPU" in p.stderr
    assert not (tmp_path / "o").exists()
