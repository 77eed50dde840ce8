"""Where a loop's warps wait, per instruction, beside what the model calls each global load: for
one kernel at one shape of a per-instruction counters file (source.py), each LDG with the class
study.toolchain.l1 gives it (memory, "L2" or "L1": a Reread) and each instruction that holds at
least 1% of the warps' stall samples, in program order.

    python docs/notes/predict/offshape/waits.py FILE.csv.gz T1 1,18944,3584

Needs nvcc / cuobjdump and, for a Triton kernel, the Triton the counters' run used (3.6 on the
H200), so that the SASS compiled here is the one timed."""
import sys

import pandas as pd

from study.predict.__main__ import registered
from study.toolchain.l1 import Reread


def main() -> int:
    path, kid, shape = sys.argv[1], sys.argv[2], tuple(int(x) for x in sys.argv[3].split(","))
    d = pd.read_csv(path)
    d = d[(d.kernel == kid) & (d.M == shape[0]) & (d.N == shape[1]) & (d.K == shape[2])]
    (body, cycles), _, _ = registered(kid, shape, "sm_90", sms=132)
    text = [" ".join(f"{i.pred} {i.opcode} {i.operands}".split()) for i in body]
    rows = d[d["Instructions Executed"] > 0].reset_index(drop=True)
    src = [" ".join(str(s).split()) for s in rows.Source]
    # the loop in the counters' rows: where its first instructions follow in order (a branch's
    # target is printed otherwise there)
    start = next(i for i in range(len(src)) if src[i : i + 8] == text[:8])
    samples = "Warp Stall Sampling (All Samples)"
    total = d[samples].sum()
    print(f"{kid} at {'x'.join(map(str, shape))}: {int(total)} samples; the loop from row {start}")
    for j, (i, c) in enumerate(zip(body, cycles)):
        r = rows.iloc[start + j]
        load = None
        if i.base == "LDG":
            load = ("L1" if not c.l2 else "L2") if isinstance(c, Reread) else "memory"
        if load is None and r[samples] < 0.01 * total:
            continue
        share = 100 * r[samples] / total
        print(f"{r.line:4d} {text[j][:52]:52s} {share:5.1f}% long_sb {100 * r.stall_long_sb / total:5.1f}%"
              + (f"  <- {load}" if load else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
