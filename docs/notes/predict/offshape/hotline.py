"""How long an asynchronous copy takes when many warps of many blocks copy the same bytes in the
same pass (A's one row at M = 1), against copies of bytes of their own.

Every round, each thread of each block issues COPIES copies of 16 (or 4) bytes into shared memory,
commits them, waits for them (cp.async.wait_group 0) and meets its block at a barrier; thread 0
reads the SM's clock around ROUNDS rounds, after one untimed pass over the same addresses (the
bytes then lie in the L2) or without it (the "dram" rows: the addresses of every round are new).
Where the copies go, by mode:

- ``same``: every lane of every warp of every block the same 16 bytes, 64 bytes on each round
  (G15's copies of A at M = 1);
- ``warp``: a warp's lanes on 512 consecutive bytes, the same for every warp and block;
- ``own``: a warp's lanes on 512 consecutive bytes of their own (no two warps of the grid share
  a line);
- ``quarter``: each quarter-warp's lanes on one 16-byte word, 64 bytes a warp, the same for every
  warp and block (G15's copies of A at M = 1 read so);
- ``g15``: two ``same`` copies and four ``own`` copies, as a G15 thread issues on each half of
  its loop at M = 1; ``g15q``: the same with ``quarter`` copies; ``g15own``: the same with the two
  copies on lines of their own.

Rows: one JSON object per launch, the median and the largest of the blocks' cycles per round.

    python docs/notes/predict/offshape/hotline.py OUT.jsonl [cold]
    python docs/notes/predict/offshape/hotline.py --per-copy COLD.jsonl

(``cold``: only the rows without the warm pass, by mode. ``--per-copy``: from such rows, what each
copy of the same words adds, ``same`` and ``quarter`` against ``own`` at the same blocks and
copies, over the copies of those words in the grid's pass: blocks x 8 warps x copies.)

Run on the GPU (cupy); ``--per-copy`` anywhere."""
import json
import sys

import numpy as np

SRC = r"""
template <int BYTES, bool CG>
__device__ __forceinline__ void copy(void *dst, const void *src) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    if (CG) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
    else if (BYTES == 16) asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
    else asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src));
}

// mode: 0 same, 1 warp, 2 own, 3 g15, 4 g15own, 5 quarter, 6 g15q
template <int BYTES, bool CG>
__device__ void body(const float *src, int mode, int copies, int rounds, int warm,
                     unsigned long long *out) {
    extern __shared__ float4 sm[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
    const long long words = BYTES / 4;  // floats a lane copies
    // a line of its own for (round, block, warp, copy): 128 B for 4-byte copies, 512 B for 16
    const long long own_stride = 32 * words;
    auto addr = [&](int r, int c) -> const float * {
        int m = mode;
        if (mode == 3) m = c < 2 ? 0 : 2;
        if (mode == 4) m = 2;
        if (mode == 6) m = c < 2 ? 5 : 2;
        if (m == 0) return src + (long long)r * 16;
        if (m == 5) return src + (long long)r * 16 + (lane >> 3) * 4;
        if (m == 1) return src + (long long)r * own_stride + lane * words;
        long long unit = (((long long)r * gridDim.x + blockIdx.x) * warps + warp) * copies + c;
        return src + (1LL << 20) + unit * own_stride + lane * words;
    };
    for (int pass = warm ? 0 : 1; pass < 2; ++pass) {
        __syncthreads();
        long long t0 = clock64();
        for (int r = 0; r < rounds; ++r) {
            for (int c = 0; c < copies; ++c) copy<BYTES, CG>(&sm[c * blockDim.x + tid], addr(r, c));
            asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
            __syncthreads();
        }
        long long t1 = clock64();
        if (pass == 1 && tid == 0) out[blockIdx.x] = (unsigned long long)(t1 - t0);
    }
}

#define PROBE(name, bytes, cg)                                                                  \
    extern "C" __global__ void name(const float *s, int mode, int copies, int rounds, int warm, \
                                    unsigned long long *o) {                                    \
        body<bytes, cg>(s, mode, copies, rounds, warm, o);                                      \
    }
PROBE(cg16, 16, true)
PROBE(ca16, 16, false)
PROBE(ca4, 4, false)
"""

MODES = {"same": 0, "warp": 1, "own": 2, "g15": 3, "g15own": 4, "quarter": 5, "g15q": 6}


def per_copy(path: str) -> int:
    rows = [json.loads(line) for line in open(path)]
    at = {(r["kind"], r["mode"], r["blocks"], r["warps"], r["copies"], r["warm"]): r["cycles_median"]
          for r in rows}
    each = []
    print("mode     blocks copies  cycles  own  copies of the words  per copy")
    for (kind, mode, blocks, warps, copies, warm), cycles in sorted(at.items()):
        own = at.get((kind, "own", blocks, warps, copies, warm))
        if kind != "cg16" or warm or mode not in ("same", "quarter") or blocks < 32 or own is None:
            continue
        queued = blocks * warps * copies
        each.append((cycles - own) / queued)
        print(f"{mode:8} {blocks:6} {copies:6} {cycles:7.0f} {own:5.0f} {queued:20} {each[-1]:9.2f}")
    print(f"median per copy over {len(each)} rows: {float(np.median(each)):.2f} cycles")
    return 0


def main() -> int:
    if sys.argv[1] == "--per-copy":
        return per_copy(sys.argv[2])
    import cupy as cp

    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    kernels = {k: mod.get_function(k) for k in ("cg16", "ca16", "ca4")}
    rounds = 128
    # own lines: rounds x blocks x warps x copies x 512 B past the first 4 MiB
    src = cp.random.random_sample((1 << 20) + rounds * 132 * 8 * 8 * 128, dtype=cp.float32)
    scratch = cp.ones(1 << 26, dtype=cp.float32)  # 256 MiB, read before a row without the warm pass
    cases = []
    cold = len(sys.argv) > 2 and sys.argv[2] == "cold"
    if cold:  # the same bytes, new on each round
        for kind in ("cg16", "ca16", "ca4"):
            for mode in ("same", "quarter", "warp", "own"):
                for blocks in (1, 8, 32, 74, 132):
                    for copies in (1, 2):
                        cases.append((kind, mode, blocks, 8, copies, 0))
        for mode in ("g15", "g15q", "g15own"):
            for blocks in (1, 32, 74, 132):
                cases.append(("cg16", mode, blocks, 8, 6, 0))
    for kind in () if cold else ("cg16", "ca16", "ca4"):
        for mode in ("same", "warp", "own"):
            for blocks in (1, 8, 32, 74, 132):
                for warps in (1, 8):
                    for copies in (1, 2):
                        cases.append((kind, mode, blocks, warps, copies, 1))
    for mode in () if cold else ("g15", "g15own"):
        for blocks in (1, 8, 32, 74, 132):
            for warm in (0, 1):
                cases.append(("cg16", mode, blocks, 8, 6, warm))
    for blocks in () if cold else (1, 8, 32, 74, 132):  # copies from DRAM, more or fewer in flight
        for warps in (1, 8):
            for copies in (1, 4, 8):
                cases.append(("cg16", "own", blocks, warps, copies, 0))
    with open(sys.argv[1], "a") as f:
        for kind, mode, blocks, warps, copies, warm in cases:
            out = cp.zeros(blocks, dtype=cp.uint64)
            if not warm:
                float(scratch.sum())  # the L2 holds none of the copies' lines
            smem = copies * warps * 32 * 16
            args = (src, *(np.int32(v) for v in (MODES[mode], copies, rounds, warm)), out)
            kernels[kind]((blocks,), (warps * 32,), args, shared_mem=smem)
            cp.cuda.runtime.deviceSynchronize()
            per = np.sort(out.get().astype(float) / rounds)
            row = {"kind": kind, "mode": mode, "blocks": blocks, "warps": warps, "copies": copies,
                   "warm": warm, "rounds": rounds, "cycles_median": float(np.median(per)),
                   "cycles_max": float(per[-1])}
            f.write(json.dumps(row) + "\n")
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
