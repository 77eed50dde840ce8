"""The latency of one warp's global load by the number of 128-byte lines it touches: one warp
chasing a random cycle of groups of n lines (lane i reads line i mod n of the group, the word
i div n of it; every word holds the next group's index), timed with the SM's clock, for n = 1, 2,
4, 8, 16, 32 and buffers that stay in the L1, in the L2, or not (DRAM). The chain is walked once
before the timed walk.

    python docs/notes/predict/offshape/lines.py OUT.jsonl

Run on the GPU (cupy)."""
import json
import sys

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void chase(const unsigned *groups, int n, int steps, unsigned long long *out) {
    const int lane = threadIdx.x;
    const int at = (lane % n) * 32 + lane / n;  // line lane % n of the group, word lane / n of it
    unsigned g = 0;
    for (int i = 0; i < steps; ++i) g = groups[(size_t)g * n * 32 + at];  // the warm-up walk
    long long t0 = clock64();
    for (int i = 0; i < steps; ++i) g = groups[(size_t)g * n * 32 + at];
    long long t1 = clock64();
    if (lane == 0) {
        out[0] = g;
        out[1] = (unsigned long long)(t1 - t0);
    }
}
"""


def main() -> int:
    k = cp.RawKernel(SRC, "chase")
    rng = np.random.default_rng(0)
    with open(sys.argv[1], "a") as f:
        for kb in (64, 8192, 262144):
            for n in (1, 2, 4, 8, 16, 32):
                count = kb * 1024 // (128 * n)  # groups of n lines
                order = rng.permutation(count).astype(np.uint32)
                nxt = np.empty(count, dtype=np.uint32)
                nxt[order] = np.roll(order, -1)
                words = np.repeat(nxt, n * 32)  # every word of a group holds its successor
                d = cp.asarray(words)
                out = cp.zeros(2, dtype=cp.uint64)
                steps = min(4 * count, 20000)
                k((1,), (32,), (d, np.int32(n), np.int32(steps), out))
                cp.cuda.Device().synchronize()
                row = dict(kb=kb, lines=n, steps=steps, cycles_per_load=int(out[1]) / steps,
                           gpu=cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
                print(json.dumps(row), flush=True)
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
