"""The latency of a global load that hits in the L1, in the L2, or goes to DRAM: one thread chasing
a chain of pointers through a buffer of each size (a random cycle over its 128-byte lines), timed
with the SM's clock; the chain is walked once before the timed walk.

    python docs/notes/predict/offshape/latency.py OUT.jsonl

Run on the GPU (cupy)."""
import json
import sys

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void chase(const unsigned long long *next, int steps, unsigned long long *out) {
    unsigned long long p = 0;
    for (int i = 0; i < steps; ++i) p = next[p];  // the warm-up walk
    long long t0 = clock64();
    for (int i = 0; i < steps; ++i) p = next[p];
    long long t1 = clock64();
    out[0] = p;
    out[1] = (unsigned long long)(t1 - t0);
}
"""


def main() -> int:
    k = cp.RawKernel(SRC, "chase")
    rng = np.random.default_rng(0)
    with open(sys.argv[1], "a") as f:
        for kb in (8, 16, 32, 64, 128, 192, 512, 2048, 8192, 32768, 262144):
            lines = kb * 1024 // 128
            order = rng.permutation(lines)
            nxt = np.zeros(lines * 16, dtype=np.uint64)  # 16 eight-byte words a line, the first used
            for a, b in zip(order, np.roll(order, -1)):
                nxt[a * 16] = b * 16
            d = cp.asarray(nxt)
            out = cp.zeros(2, dtype=cp.uint64)
            steps = min(4 * lines, 20000)
            k((1,), (1,), (d, np.int32(steps), out))
            cp.cuda.runtime.deviceSynchronize()
            cycles = int(out[1].get()) / steps
            row = {"kb": kb, "steps": steps, "cycles_per_load": cycles}
            f.write(json.dumps(row) + "\n")
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
