"""G12 with As swizzled at period 4 (docs/notes/g12.md, "A swizzled As read a period at a time"):
the module written from triton_kernels/g12_gluon.py by the edits below (each must apply once), so
that the variant follows G12's code as it is.

- As in SwizzledSharedLayout(vec=4, per_phase=1, max_phase=4); A's copy map 16 lanes along k (K12's);
- A's fragments read 4 k-steps at a time (a slice of 4 rows, [BM, 4] in registers) and split into
  k-steps (gl.split); each k-step reads B's row just before its FMAs (AHEAD off: G12's read-ahead
  slices one row of As, which a swizzled As refuses).

    python docs/notes/g12/harness/g12_swizzled.py                  # CPU: SASS facts and prediction
    python docs/notes/g12/harness/g12_swizzled.py --time OUT.jsonl # GPU: check, then time beside G12, K12

From the repository root. The timing is g12_time.py's: bench.check against float64 first, then
bench.time_cuda with the L2 flushed, three rounds in rotating order, 4096^3, 2048^3 and 8192^3.
"""
import importlib.util
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))

# A's chunk [BM, 4]: 4 values of k in registers (fastest), then the thread's 16 rows of K12's
# accumulator map; lanes and warps as its rows (its column bits broadcast)
A4 = '''A4_LAYOUT = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[0, 1], [0, 2], [1, 0], [2, 0], [16, 0], [32, 0]],
    lane_bases=[[0, 0], [4, 0], [0, 0], [0, 0], [8, 0]],
    warp_bases=[[0, 0], [0, 0], [64, 0]], block_bases=[], shape=[128, 4]))'''

# k-step k's values: A's from the period's chunk (read at k % 4 == 0), B's row just before the FMAs
STEP = '''        if k % 4 == 0:
            a4 = a_cur.slice(k, 4, dim=0).permute([1, 0]).load(A4_LAYOUT)
            even, odd = gl.split(a4.reshape([128, 2, 2]))  # k + {0, 2} and k + {1, 3}
            k02 = gl.split(even)
            k13 = gl.split(odd)
        if k % 2 == 0:
            av = k02[(k % 4) // 2]
        else:
            av = k13[(k % 4) // 2]
        av = gl.convert_layout(av, gl.SliceLayout(1, ACC))[:, None]
        bv = b_cur.slice(k, 1, dim=0).load(ACC)
'''

EDITS = [
    ("A_LANES_K = 4\n", "A_LANES_K = 16\n"),
    ("AHEAD = True\n", "AHEAD = False\n"),
    ('NAME = "G12"', 'NAME = "G12s"'),
    ("ACC_LAYOUT = gc.linear_layout(ACC_BASES, [BM, BN])\n",
     "ACC_LAYOUT = gc.linear_layout(ACC_BASES, [BM, BN])\n" + A4 + "\n"),
    ('''        if AHEAD:
            if k == BK - 1:
                # this step's values are in registers and the other stage's copies are issued:
                # wait for them; one barrier publishes them and frees this stage
                _ac.wait_group(0)
                cta_barrier()
                an, bn = _fragments(a_nxt, b_nxt, 0, ACC)
            else:
                an, bn = _fragments(a_cur, b_cur, k + 1, ACC)
        else:
            av, bv = _fragments(a_cur, b_cur, k, ACC)
''', STEP),
    ('''        if AHEAD:
            if k < BK - 1:
                an, bn = _fragments(a_cur, b_cur, k + 1, ACC)
        else:
            av, bv = _fragments(a_cur, b_cur, k, ACC)
''', STEP),
    ("    SMEM: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])\n",
     "    SMEM: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])\n"
     "    SMEM_A: gl.constexpr = gl.SwizzledSharedLayout(4, 1, 4, [1, 0])\n"),
    ("a_s0 = gl.allocate_shared_memory(gl.float32, [BK, BM], SMEM)",
     "a_s0 = gl.allocate_shared_memory(gl.float32, [BK, BM], SMEM_A)"),
    ("a_s1 = gl.allocate_shared_memory(gl.float32, [BK, BM], SMEM)",
     "a_s1 = gl.allocate_shared_memory(gl.float32, [BK, BM], SMEM_A)"),
    ("    av, bv = _fragments(a_s0, b_s0, 0, ACC)  # read ahead (AHEAD) or again by k-step 0\n",
     "    av = gl.zeros([BM, 1], gl.float32, ACC)  # each k-step reads its own\n"
     "    bv = gl.zeros([1, BN], gl.float32, ACC)\n"),
]


def module(where: Path):
    """The variant written into ``where`` as g12_swizzled_gen.py, imported."""
    src = (ROOT / "triton_kernels" / "g12_gluon.py").read_text()
    for old, new in EDITS:
        if src.count(old) != 1:
            raise SystemExit(f"g12_gluon.py changed: this edit no longer applies once:\n{old}")
        src = src.replace(old, new)
    path = where / "g12_swizzled_gen.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("g12_swizzled_gen", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["g12_swizzled_gen"] = mod
    spec.loader.exec_module(mod)
    return mod


def sass_facts(mod) -> dict:
    """Registers, local memory and the main loop's counts of a G12 module compiled here for sm_90 at
    4096^3, the extra wavefronts of its copies' writes that the lanes interpreter finds, the extra
    same-bank reads per FFMA (2 and 4 banks), and study.predict's time for it (the committed run's
    gpu.json and the constants fitted for it; one program per 128 x 256 tile)."""
    from study.predict import model
    from study.rundata.gpu import GPU
    from study.toolchain import l1, sass, trips
    from triton_kernels import aot

    shape = (4096, 4096, 4096)
    k = aot.compile_sass_target(mod, shape=shape)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.cubin"
        path.write_bytes(k.cubin)
        res = sass.resources_cubin(path, k.name)
        instrs = sass.dump_sass(path, k.name)
    params = model.cubin_params(k.arguments)
    loop, cycles = model.main_loop_of(instrs, params)
    count = Counter(i.opcode for i in loop)
    extra = [c for i, c in zip(loop, l1.l1_cycles(instrs, loop)) if i.base == "LDGSTS"]
    launch = model.Launch(grid=(32 * 16, 1, 1), threads=256, smem=k.shared,
                          registers=int(res.get("REG", 0)), tile=(128, 256),
                          passes=trips.loop_trips(instrs, loop, params))
    p = model.predict(loop, launch, shape, GPU.from_json(ROOT / "reports" / "data" / "gpu.json"),
                      l1_cycles=cycles)
    return dict(registers=res.get("REG"), local=res.get("LOCAL"), loop=len(loop), ffma=count["FFMA"],
                loads={o: n for o, n in count.items() if o.split(".")[0] in ("LDS", "LDGSTS", "LDL", "STL")},
                copy_extra_wavefronts=sorted(set(extra)),
                bank_reads_per_ffma={b: round(sass.bank_conflicts(loop, b) / count["FFMA"], 3)
                                     for b in (2, 4)},
                predicted_ms=round(p["ms"], 3), predicted_issue_pct=round(p["issue_pct"], 1),
                predicted_stalls={s: round(v, 3) for s, v in p["stalls"].items()})


def time_all(path: str) -> None:
    import torch

    from study import kernels
    from study.measure import baseline, bench

    mod = module(Path(tempfile.mkdtemp()))
    baseline.pin_fp32()
    flush = bench.L2Flush(torch.cuda.get_device_properties(0).L2_cache_size)
    variants = {"K12": kernels.get("K12").launcher, "G12": kernels.get("G12").launcher,
                "G12s": lambda a, b, c: mod.matmul(a, b, c)}
    out = open(path, "a")
    for rnd in range(3):
        for M, N, K in [(4096,) * 3, (2048,) * 3, (8192,) * 3]:
            a, b = bench.random_inputs(M, N, K, seed=rnd)
            names = list(variants)
            names = names[rnd % len(names):] + names[:rnd % len(names)]
            for n in names:
                f = variants[n]
                err = bench.check(f, M, N, K, seed=rnd)
                c = torch.empty(M, N, device="cuda")
                t = bench.time_cuda(lambda f=f, a=a, b=b, c=c: f(a, b, c), flush,
                                    target_s=0.3 if M < 8192 else 0.6)
                row = dict(round=rnd, kernel=n, M=M, N=N, K=K, err=err, ms=t.ms, p20=t.p20_ms, p80=t.p80_ms,
                           reps=t.reps)
                print(json.dumps(row), file=out, flush=True)
                print(row, flush=True)


if __name__ == "__main__":
    if "--time" in sys.argv:
        time_all(sys.argv[sys.argv.index("--time") + 1])
    else:
        import triton

        os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
        from triton_kernels import g12_gluon

        print(f"triton {triton.__version__}: G12", sass_facts(g12_gluon))
        print(f"triton {triton.__version__}: G12s", sass_facts(module(Path(tempfile.mkdtemp()))))
