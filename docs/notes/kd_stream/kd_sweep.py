"""KD's streaming GEMV: compile-time variants timed beside the vendor's kernels (K0, K0L) at M = 1,
2, 4, 8 on every shape of the decode panel, by the study's protocol (bench.time_cuda, the L2
read-flushed before every repetition), each checked against float64 first.

    python docs/notes/kd_stream/kd_sweep.py OUT.jsonl 1              # round 1: every variant
    python docs/notes/kd_stream/kd_sweep.py OUT.jsonl 2 NAME,NAME    # round 2: these, 3 times each

KD_SWEEP_FAMILY=prefetch selects the second family of variants (the next chunk's loads issued
before the current chunk's FMAs, KD_PREFETCH, and wider blocks) in place of the first;
KD_SWEEP_FAMILY=wave the third (the splits of K interleaved by chunk, KD_INTERLEAVE, beside the
unsplit wide blocks of the second). KD_SWEEP_MS lists the M timed (default 1,2,4,8).

Run from the repository root on the GPU (docs/notes/kd_stream/run.sh). A variant is
cuda_kernels/kd_gemv_stream.cu built by nvcc with -D parameters into a shared library
(kd_variant.cu) that ctypes calls; the B-load cache hints (HINT 1, 2) need a hook the file does
not have, so the file is copied with one added (``hooked``) and the copy is built."""
import concurrent.futures as cf, ctypes, itertools, json, math, os, subprocess, sys, time
from pathlib import Path
import torch
sys.path.insert(0, os.getcwd())
from study.measure import bench
from study import kernels as registry
from study.measure.decode import PANEL

HERE = Path(__file__).resolve().parent
ROOT = Path(os.getcwd())
BUILD = Path("/tmp/kdv"); BUILD.mkdir(exist_ok=True)


def hooked() -> Path:
    """kd_gemv_stream.cu copied into BUILD with its B loads behind a macro (KD_LOAD_B, default
    __ldg) that kd_variant.cu defines for the hinted variants."""
    src = (ROOT / "cuda_kernels" / "kd_gemv_stream.cu").read_text()
    src = src.replace("#define KD_THREADS", "#ifndef KD_LOAD_B\n#define KD_LOAD_B(p) __ldg(p)\n#endif\n#define KD_THREADS", 1)
    assert src.count("? __ldg(p) : zero;") == 1
    src = src.replace("? __ldg(p) : zero;", "? KD_LOAD_B(p) : zero;")
    # KD_INTERLEAVE 1: split s of K takes the chunks s, s + splits, s + 2 splits, ... in place of
    # a contiguous range, so that every block of the grid reads the same band of B's rows at a time
    ranges = ("    const int per_split = (K / 4 + splits - 1) / splits;  // float4 rows of B per split\n"
              "    const int k_begin = split * per_split, k4s = min(K / 4, k_begin + per_split);\n")
    loop = "for (int c0 = k_begin; c0 < k4s; c0 += CH) {"
    assert src.count(ranges) == 1 and src.count(loop) == 1
    src = src.replace(ranges, "#if KD_INTERLEAVE\n    const int k_begin = split * CH, k4s = K / 4;\n#else\n"
                      + ranges + "#endif\n")
    src = src.replace(loop, "for (int c0 = k_begin; c0 < k4s; c0 += (KD_INTERLEAVE ? splits * CH : CH)) {")
    src = src.replace("#define KD_THREADS", "#ifndef KD_INTERLEAVE\n#define KD_INTERLEAVE 0\n#endif\n#define KD_THREADS", 1)
    (BUILD / "kd_gemv_stream.cu").write_text(src)
    return BUILD
DEF = dict(TX=16, TG=8, FEW=4, MANY=2, INF=49152, MAXS=16, HINT=0, PF=0, IL=0)

def prefetch_variants():
    """KD_PREFETCH at the bytes in flight and unrolls of the first family, and blocks of 256 and
    512 threads with and without it (512 threads leave 128 registers a thread: fewer loads each)."""
    vs = [dict(DEF)]
    for inf, (few, many) in itertools.product((32768, 49152, 65536, 98304), ((4, 2), (2, 1), (8, 4))):
        vs.append({**DEF, "PF": 1, "INF": inf, "FEW": few, "MANY": many})
    for (tx, tg), inf in itertools.product(((8, 16), (16, 16), (8, 32), (4, 32)), (49152, 98304)):
        vs.append({**DEF, "PF": 1, "TX": tx, "TG": tg, "INF": inf})
    for pf, (tx, tg, few, many) in itertools.product((0, 1), ((8, 32, 4, 2), (8, 64, 2, 1), (4, 64, 2, 1))):
        vs.append({**DEF, "PF": pf, "TX": tx, "TG": tg, "FEW": few, "MANY": many})
    return vs

def wave_variants():
    """The splits of K interleaved by chunk (not with the prefetch, whose loop steps by two chunks)
    at other bytes in flight, unrolls and blocks; beside them the unsplit wide blocks of the
    prefetch family, which tie the vendor's GEMV at 1 x 4096 x 4096."""
    vs = [dict(DEF), {**DEF, "IL": 1}]
    vs += [{**DEF, "IL": 1, "INF": inf} for inf in (32768, 65536, 98304)]
    vs += [{**DEF, "IL": 1, "FEW": 8, "MANY": 4}, {**DEF, "IL": 1, "TX": 8, "TG": 16}]
    vs += [{**DEF, "TX": 8, "TG": 32, "PF": pf} for pf in (0, 1)]
    vs.append({**DEF, "TX": 8, "TG": 64, "FEW": 2, "MANY": 1, "PF": 1})
    return vs

def variants():
    family = os.environ.get("KD_SWEEP_FAMILY")
    vs = prefetch_variants() if family == "prefetch" else wave_variants() if family == "wave" else first_variants()
    out, seen = [], set()
    for v in vs:
        key = tuple(sorted(v.items()))
        if key not in seen:
            seen.add(key); out.append(v)
    return out

def first_variants():
    vs = [dict(DEF)]
    for inf, (few, many) in itertools.product((32768, 49152, 65536, 98304, 131072, 196608), ((4, 2), (2, 1), (8, 4))):
        vs.append({**DEF, "INF": inf, "FEW": few, "MANY": many})
    for (tx, tg), inf in itertools.product(((8, 16), (32, 4), (16, 16), (32, 8)), (49152, 98304)):
        vs.append({**DEF, "TX": tx, "TG": tg, "INF": inf})
    for hint, inf, (few, many) in itertools.product((1, 2), (49152, 98304), ((4, 2), (8, 4))):
        vs.append({**DEF, "HINT": hint, "INF": inf, "FEW": few, "MANY": many})
    for inf in (98304, 196608):
        vs.append({**DEF, "MAXS": 32, "INF": inf})
    return vs

def name(v):
    return "tx{TX}tg{TG}f{FEW}m{MANY}i{INF}s{MAXS}h{HINT}".format(**v) + ("p1" if v["PF"] else "") + ("il" if v["IL"] else "")

def build(v):
    so = BUILD / (name(v) + ".so")
    cmd = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared",
           f"-I{BUILD}", f"-I{ROOT / 'cuda_kernels'}", f"-DKD_TX={v['TX']}", f"-DKD_TG={v['TG']}", f"-DKD_UNROLL_FEW={v['FEW']}",
           f"-DKD_UNROLL_MANY={v['MANY']}", f"-DKD_INFLIGHT_BYTES={v['INF']}", f"-DKD_MAX_SPLITS={v['MAXS']}",
           f"-DKDV_HINT={v['HINT']}", f"-DKD_PREFETCH={v['PF']}", f"-DKD_INTERLEAVE={v['IL']}", "-o", str(so), str(HERE / "kd_variant.cu")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return v, (so if r.returncode == 0 else None), r.stderr[-300:]

def main():
    out = Path(sys.argv[1])
    ms = tuple(int(m) for m in os.environ.get("KD_SWEEP_MS", "1,2,4,8").split(","))
    t0 = time.time()
    vs = variants()
    hooked()
    with cf.ThreadPoolExecutor(16) as ex:
        built = list(ex.map(build, vs))
    print(f"built {sum(1 for _, so, _ in built if so)} of {len(vs)} in {time.time() - t0:.0f} s", flush=True)
    libs = {}
    for v, so, err in built:
        if so is None:
            print("build failed", name(v), err, flush=True); continue
        lib = ctypes.CDLL(str(so)); lib.kdv.restype = ctypes.c_int
        lib.kdv.argtypes = [ctypes.c_int] * 4 + [ctypes.c_void_p] * 4
        libs[name(v)] = (v, lib)
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    flush = bench.L2Flush(getattr(props, "L2_cache_size", None))
    vendors = {}
    for kid in ("K0", "K0L"):
        try:
            k = registry.get(kid); bench.check(k.launcher, 1, 256, 256); vendors[kid] = k.launcher
        except Exception as e:
            print(kid, "cannot run:", str(e).splitlines()[0], flush=True)
    f = out.open("a")
    def emit(row):
        f.write(json.dumps(row) + "\n"); f.flush()
    rnd = sys.argv[2] if len(sys.argv) > 2 else "1"
    target = 0.01 if rnd == "1" else 0.04
    names = list(libs)
    if rnd != "1" and len(sys.argv) > 3:  # round 2 without names: every variant built
        names = [n for n in sys.argv[3].split(",") if n in libs]
    for p in PANEL:
        g = torch.Generator(device="cuda").manual_seed(p.N * 7 + p.K)
        B = torch.randn(p.K, p.N, device="cuda", generator=g)
        for M in ms:
            A = torch.randn(M, p.K, device="cuda", generator=g)
            ref = (A.double() @ B.double())
            for rep in range(1 if rnd == "1" else 3):
                order = names if rep % 2 == 0 else names[::-1]
                for kid, launch in vendors.items():
                    out_t = bench.poisoned(M, p.N); launch(A, B, out_t); torch.cuda.synchronize()
                    t = bench.time_cuda(lambda: launch(A, B, out_t), flush, target_s=target)
                    emit(dict(round=rnd, rep=rep, shape=p.name, N=p.N, K=p.K, M=M, kernel=kid, us=t.ms * 1e3,
                              p20=t.p20_ms * 1e3, p80=t.p80_ms * 1e3, reps=t.reps,
                              err=bench.relative_error(out_t, ref)))
                for n in order:
                    v, lib = libs[n]
                    mt = 1 if M == 1 else 2 if M == 2 else 4 if M <= 4 else 8
                    out_t = bench.poisoned(M, p.N)
                    s = torch.cuda.current_stream().cuda_stream
                    call = lambda: lib.kdv(mt, M, p.N, p.K, A.data_ptr(), B.data_ptr(), out_t.data_ptr(), s)
                    rc = call(); torch.cuda.synchronize()
                    err = bench.relative_error(out_t, ref)
                    if rc != 0 or not err <= bench.TOLERANCE:
                        emit(dict(round=rnd, rep=rep, shape=p.name, N=p.N, K=p.K, M=M, kernel=n, us=None, err=err, rc=rc))
                        continue
                    t = bench.time_cuda(call, flush, target_s=target)
                    emit(dict(round=rnd, rep=rep, shape=p.name, N=p.N, K=p.K, M=M, kernel=n, us=t.ms * 1e3,
                              p20=t.p20_ms * 1e3, p80=t.p80_ms * 1e3, reps=t.reps, err=err, **v))
            print(f"{p.name} M={M} done at {time.time() - t0:.0f} s", flush=True)
        del B, ref
        torch.cuda.empty_cache()

if __name__ == "__main__":
    main()
