"""lds.py's loops played by study.predict's simulation for one warp: the cycles a load at each
shared-load latency, beside what the GPU measured (lds.py's rows), and the latency at which the
two meet. The loop played is each build's longest loop with a shared load (the unrolled chase); a
load's wavefronts are the lanes' (study.toolchain.lanes where it reads them, else the width).

    python docs/notes/predict/offshape/lds_sim.py ROWS.jsonl

No GPU (nvcc and cuobjdump)."""
import dataclasses
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from lds import MODES, build  # noqa: E402

from study.predict import issue  # noqa: E402
from study.toolchain import sass  # noqa: E402

WAVEFRONTS = {0: 1, 1: 1, 2: 4, 3: 4}  # the lanes' wavefronts (access.wavefronts of their addresses)
LATENCIES = range(14, 36, 2)


def loop(instrs: list) -> list:
    """The longest loop (a backward branch's target to the branch) that holds a shared load."""
    best = []
    for j, ins in enumerate(instrs):
        m = re.search(r"0x([0-9a-f]+)", ins.operands) if ins.base == "BRA" else None
        if m and int(m[1], 16) < ins.addr:
            start = next(k for k, x in enumerate(instrs) if x.addr == int(m[1], 16))
            body = instrs[start:j + 1]
            if any(x.base == "LDS" for x in body) and len(body) > len(best):
                best = body
    return best


def main() -> int:
    measured = {json.loads(line)["mode"]: json.loads(line)["cycles_per_load"] for line in open(sys.argv[1])}
    base = issue.FITTED["NVIDIA H200"]
    with tempfile.TemporaryDirectory() as tmp:
        for mode, (name, _) in MODES.items():
            body = loop(sass.dump_sass(build(mode, Path(tmp)), "chase"))
            loads = sum(1 for x in body if x.base == "LDS")
            cycles = [WAVEFRONTS[mode] if x.base == "LDS" else None for x in body]
            sim = {L: issue.simulate(body, 1, 1, dataclasses.replace(base, lds_latency=L), l1_cycles=cycles,
                                     iterations=8).cycles_per_iteration / loads for L in LATENCIES}
            meet = min(LATENCIES, key=lambda L: abs(sim[L] - measured[mode]))
            print(f"{name}: measured {measured[mode]:.1f} cycles a load; simulated "
                  + ", ".join(f"{sim[L]:.1f} at {L}" for L in LATENCIES) + f"; nearest at lds_latency {meet}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
