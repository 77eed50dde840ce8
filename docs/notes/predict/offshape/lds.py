"""The latency of a shared-memory load: one warp chasing a chain of indices through shared memory
(each load's address is the last one's result), timed with the SM's clock, for a 32-bit load
whose lanes all read one word (a broadcast), a 32-bit load whose lanes read 32 words in 32
banks, a 32-bit load whose lanes read words 16 bytes apart (four to a bank: four wavefronts), and
a 128-bit load whose lanes read 32 adjacent 16-byte words (four wavefronts, no conflict). Each
mode is its own build (``nvcc -cubin -O3 -arch=sm_90 -DMODE=n``), whose loop lds_sim.py plays
through study.predict's simulation for one warp.

    python docs/notes/predict/offshape/lds.py OUT.jsonl

Run on the GPU (cupy, nvcc)."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SRC = r"""
extern "C" __global__ void chase(const unsigned *chain, int words, int steps, unsigned long long *out) {
    __shared__ __align__(16) unsigned s[8192];
    for (int i = threadIdx.x; i < words; i += blockDim.x) s[i] = chain[i];
    __syncthreads();
    const int lane = threadIdx.x;
#if MODE >= 2
    const uint4 *s4 = reinterpret_cast<const uint4 *>(s);
#endif
    unsigned p = 0;
    long long t0 = 0, t1 = 0;
    for (int pass = 0; pass < 2; ++pass) {  // the first pass warms, the second is timed
        p = 0;
        t0 = clock64();
        for (int i = 0; i < steps; ++i) {
#if MODE == 0
            p = s[p];                            // every lane at one word
#elif MODE == 1
            p = s[p * 32 + lane] - lane;         // lane i at word i of a 32-word row
#elif MODE == 2
            p = s4[p * 32 + lane].x - lane;      // the first word of 16-byte word i: a 32-bit load
#else
            const uint4 v = s4[p * 32 + lane];   // 16-byte word i whole (y, z, w hold 0)
            p = v.x + v.y + v.z + v.w - lane;
#endif
        }
        t1 = clock64();
    }
    if (lane == 0) {
        out[0] = p;
        out[1] = (unsigned long long)(t1 - t0);
    }
}
"""
MODES = {0: ("LDS.32, one word", 1), 1: ("LDS.32, 32 banks", 32), 2: ("LDS.32, lanes 16 B apart", 128),
         3: ("LDS.128, 32 x 16 B", 128)}


def build(mode: int, where: Path) -> Path:
    src, cubin = where / f"lds{mode}.cu", where / f"lds{mode}.cubin"
    src.write_text(SRC)
    subprocess.run(["nvcc", "-cubin", "-O3", "-arch=sm_90", f"-DMODE={mode}", "-o", str(cubin), str(src)], check=True)
    return cubin


def chain(mode: int) -> np.ndarray:
    """The shared words: rows of ``per`` words in a random cycle, each row's words leading to the next
    row (plus the reading lane, which the chase takes off)."""
    per = MODES[mode][1]
    rows = 8192 // per
    order = np.random.default_rng(0).permutation(rows).astype(np.uint32)
    nxt = np.empty(rows, dtype=np.uint32)
    nxt[order] = np.roll(order, -1)
    words = np.zeros(8192, dtype=np.uint32)
    for r in range(rows):
        if mode == 0:
            words[r] = nxt[r]
        elif mode == 1:
            words[r * 32:(r + 1) * 32] = nxt[r] + np.arange(32)
        else:  # the first word of each 16-byte word; the other three hold 0
            words[r * 128:(r + 1) * 128:4] = nxt[r] + np.arange(32)
    return words


def main() -> int:
    import cupy as cp

    gpu = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    with tempfile.TemporaryDirectory() as tmp, open(sys.argv[1], "a") as f:
        for mode, (name, _) in MODES.items():
            k = cp.RawModule(path=str(build(mode, Path(tmp)))).get_function("chase")
            d = cp.asarray(chain(mode))
            out = cp.zeros(2, dtype=cp.uint64)
            steps = 4096
            k((1,), (32,), (d, np.int32(8192), np.int32(steps), out))
            cp.cuda.Device().synchronize()
            row = dict(mode=mode, load=name, steps=steps, cycles_per_load=int(out[1]) / steps, gpu=gpu)
            print(json.dumps(row), flush=True)
            f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
