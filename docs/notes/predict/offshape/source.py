"""Per-instruction counters (ncu's SourceCounters and warp-state samples at every cycle) of
registered kernels at chosen shapes, every instruction's row kept (``study.profile --source``
sums them per opcode): what each access of the main loop costs the L1, and where the warps
wait, beside what the model prices.

    python docs/notes/predict/offshape/source.py OUT.csv.gz "G12T,T1@1,18944,3584;K12@4097,4097,4097"

On the GPU, from the repository root (ncu on the PATH). Each kernel runs in study.profile's own
child process (its launch, checked inputs), one launch profiled.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from study import kernels
from study.measure.profile import SOURCE_SECTIONS, _child_cmd, parse_source_page


def one(kid: str, shape: tuple[int, int, int], tmp: Path) -> list[dict]:
    k = kernels.get(kid)
    rep = tmp / f"{kid}_{'x'.join(map(str, shape))}"
    sections = [a for s in SOURCE_SECTIONS for a in ("--section", s)]
    cmd = ["ncu", "--clock-control", "none", "--profile-from-start", "off", *sections,
           "--warp-sampling-interval", "0", "--force-overwrite", "-o", str(rep), *_child_cmd(k, shape, None)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        print(f"{kid} at {shape}: ncu failed: {(done.stderr + done.stdout)[-300:]}", flush=True)
        return []
    page = subprocess.run(["ncu", "-i", f"{rep}.ncu-rep", "--page", "source", "--csv",
                           "--print-source", "sass"], capture_output=True, text=True, timeout=300).stdout
    rows = [{"kernel": kid, "M": shape[0], "N": shape[1], "K": shape[2], "ncu_kernel": name, "line": i, **r}
            for name, block in parse_source_page(page) for i, r in enumerate(block)]
    print(f"{kid} at {shape}: {len(rows)} instructions", flush=True)
    return rows


def main() -> int:
    out, spec = Path(sys.argv[1]), sys.argv[2]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="source-") as tmp:
        for group in spec.split(";"):
            ids, shape = group.split("@")
            for kid in ids.split(","):
                rows += one(kid, tuple(int(x) for x in shape.split(",")), Path(tmp))
                pd.DataFrame(rows).to_csv(out, index=False)  # written as it comes
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
