"""The bank probe's times against each register-bank rule's count of its variants' loops.

    python docs/notes/predict/offshape/bank_rules.py BANK_PROBE.csv

Each variant of ``study.bank_probe`` (its seed) is compiled again here as the probe compiled it
(nvcc -O3 -arch=sm_90; the variants' source does not depend on the GPU) and its main loop's
same-bank reads counted under every rule of ``sass.BANK_RULES`` with 2, 4 and 8 banks; printed:
each rule's Pearson correlation with the variants' measured times, best first. Needs nvcc and
cuobjdump (the triton wheel's) on PATH. Run from the repository's root."""
import csv
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from study.measure.bank_probe import compile_variant  # noqa: E402
from study.toolchain import sass  # noqa: E402


def corr(x, y) -> float:
    mx, my = statistics.mean(x), statistics.mean(y)
    sx = sum((a - mx) ** 2 for a in x) ** 0.5
    sy = sum((b - my) ** 2 for b in y) ** 0.5
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / (sx * sy) if sx and sy else float("nan")


def main() -> int:
    rows = list(csv.DictReader(open(sys.argv[1])))
    work = Path(tempfile.mkdtemp())
    with ThreadPoolExecutor(4) as ex:
        cubins = list(ex.map(lambda r: compile_variant(int(r["seed"]), "sm_90", work), rows))
    loops = [sass.main_loop(sass.dump_sass(c, "bank_probe")) for c in cubins]
    ms = [float(r["ms"]) for r in rows]
    out = []
    for rule in sass.BANK_RULES:
        for banks in (2, 4, 8):
            counts = [sum(sass.bank_conflicts_each(loop, banks, rule)) for loop in loops]
            out.append((corr(counts, ms), rule, banks, min(counts), max(counts)))
    print(f"{len(rows)} variants")
    for r, rule, banks, lo, hi in sorted(out, reverse=True):
        print(f"r = {r:.3f}  {rule}, {banks} banks (extra reads per iteration {lo}-{hi})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
