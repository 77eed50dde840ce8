"""The latency of a shared-memory load: one warp chasing a chain of indices through shared memory
(each load's address is the last one's result), timed with the SM's clock, for a 32-bit load
whose lanes all read one word (a broadcast), a 32-bit load whose lanes read 32 words in 32
banks, and a 128-bit load whose lanes read 32 adjacent 16-byte words (four wavefronts).

    python docs/notes/predict/offshape/lds.py OUT.jsonl

Run on the GPU (cupy)."""
import json
import sys

import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void chase(const unsigned *chain, int words, int steps, int mode, unsigned long long *out) {
    __shared__ __align__(16) unsigned s[8192];
    for (int i = threadIdx.x; i < words; i += blockDim.x) s[i] = chain[i];
    __syncthreads();
    const int lane = threadIdx.x;
    // mode 0: every lane at one word; 1: lane i at word i of a 32-word row; 2: lane i at uint4 i
    unsigned p = 0;
    long long t0 = 0, t1 = 0;
    for (int pass = 0; pass < 2; ++pass) {  // the first pass warms, the second is timed
        p = 0;
        t0 = clock64();
        if (mode == 0) {
            for (int i = 0; i < steps; ++i) p = s[p];
        } else if (mode == 1) {
            for (int i = 0; i < steps; ++i) p = s[p * 32 + lane] - lane;
        } else {
            const uint4 *s4 = reinterpret_cast<const uint4 *>(s);
            for (int i = 0; i < steps; ++i) p = s4[p * 32 + lane].x - lane;
        }
        t1 = clock64();
    }
    if (lane == 0) {
        out[0] = p;
        out[1] = (unsigned long long)(t1 - t0);
    }
}
"""


def main() -> int:
    k = cp.RawKernel(SRC, "chase")
    rng = np.random.default_rng(0)
    gpu = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    with open(sys.argv[1], "a") as f:
        for mode, name, per in ((0, "LDS.32, one word", 1), (1, "LDS.32, 32 banks", 32), (2, "LDS.128, 32 x 16 B", 128)):
            rows = 8192 // per  # rows of `per` words: the chain visits rows
            order = rng.permutation(rows).astype(np.uint32)
            nxt = np.empty(rows, dtype=np.uint32)
            nxt[order] = np.roll(order, -1)
            words = np.zeros(8192, dtype=np.uint32)
            for r in range(rows):  # every word of row r leads to row nxt[r] (plus its lane, taken off)
                if mode == 0:
                    words[r] = nxt[r]
                elif mode == 1:
                    words[r * 32:(r + 1) * 32] = nxt[r] + np.arange(32)
                else:
                    words[r * 128:(r + 1) * 128:4] = nxt[r] + np.arange(32)
            d = cp.asarray(words)
            out = cp.zeros(2, dtype=cp.uint64)
            steps = 4096
            k((1,), (32,), (d, np.int32(8192), np.int32(steps), np.int32(mode), out))
            cp.cuda.Device().synchronize()
            row = dict(load=name, steps=steps, cycles_per_load=int(out[1]) / steps, gpu=gpu)
            print(json.dumps(row), flush=True)
            f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
