"""What a CUDA kernel's .cu files state and what nvcc builds of them: every SGEMM_REGISTER line is
one path of one registry entry, read the way the compiler reads it, with its launcher beside it;
the registry's rule picks the path a shape launches."""

import dataclasses
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import cuda_kernels
from study import kernels
from study.errors import InputError
from study.kernels import registration

REPO = Path(__file__).resolve().parent.parent
CUDA = kernels.by_impl("cuda")  # every hand-written FP32 kernel, on the ladder or beside it
ALL_CUDA = [k for k in kernels.REGISTRY if k.impl == "cuda"]  # and those on the tensor cores
PATHS = [(k, p) for k in CUDA for p in k.paths]  # every function a CUDA kernel launches
REGISTER = re.compile(r"^\s*SGEMM_REGISTER\s*\(", re.M)


# ------------------------------------------------------------------ one .cu, one entry


def defines_kernel(code: str, symbol: str) -> bool:
    """Whether C++ ``code`` (comments out) defines ``extern "C" __global__ void symbol(``, written
    out (its launch bounds written out, or an object-like macro's: K12_BOUNDS) or through a macro
    the file defines and then calls with the symbol as its first argument."""
    bounds = r"(?:__launch_bounds__\([^)]*\)\s+|[A-Z][A-Z0-9_]*_BOUNDS\s+)?"
    direct = rf'extern\s+"C"\s+__global__\s+void\s+{bounds}{symbol}\s*\('
    if re.search(direct, code):
        return True
    macro = r"#\s*define\s+(\w+)\s*\([^)]*\)[^\n]*(?:\\\n[^\n]*)*extern\s+\"C\"\s+__global__"
    macros = re.findall(macro, code)
    return any(re.search(rf"^\s*{m}\s*\(\s*{symbol}\b", code, re.M) for m in macros)


@pytest.mark.parametrize("k, path", PATHS, ids=lambda x: getattr(x, "symbol", None) or x.id)
def test_every_path_is_a_registered_function_with_its_launcher(k, path):
    src = REPO / path.source
    assert src.is_file() and src.suffix == ".cu" and src.parent == cuda_kernels.SOURCE_DIR, path.source
    assert path.source in k.sources
    code = registration._code(src.read_text())
    assert defines_kernel(code, path.symbol), f"{path.source}: no extern \"C\" __global__ {path.symbol}"
    assert re.search(rf"\bvoid\s+launch_{path.symbol}\s*\(", code), f"{path.source}: no launch_{path.symbol}"


def test_a_kernel_named_in_a_comment_is_not_defined():
    code = registration._code('// extern "C" __global__ void kx(SGEMM_KERNEL_PARAMS) {}\nint y;\n')
    assert not defines_kernel(code, "kx")
    code = registration._code('#define K(n) extern "C" __global__ void n(int x) {}\nK(kx)\n')
    assert defines_kernel(code, "kx") and not defines_kernel(code, "ky")


@pytest.mark.parametrize("k", CUDA, ids=lambda k: k.id)
def test_every_register_line_of_a_source_is_a_path(k):
    for src in k.sources:
        lines = len(REGISTER.findall(registration._code((REPO / src).read_text())))
        assert lines == sum(p.source == src for p in k.paths) >= 1, src
    if len(k.paths) == 1:
        assert k.target == f"cuda:{k.symbol}" and k.registration.source == k.source


def test_every_cu_file_belongs_to_exactly_one_registry_entry():
    """The build compiles every .cu in cuda_kernels/; each must be measured, so each has an entry."""
    by_file = {}
    for k in ALL_CUDA:
        for src in k.sources:
            by_file.setdefault((REPO / src).resolve(), []).append(k.id)
    for path in cuda_kernels.cu_sources():
        ids = by_file.get(path.resolve(), [])
        assert len(ids) == 1, f"{path.name}: {len(ids)} registry entries ({ids}); a .cu needs exactly one"


@pytest.mark.parametrize("k, path", PATHS, ids=lambda x: getattr(x, "symbol", None) or x.id)
def test_registration_agrees_with_the_launcher(k, path):
    """The SGEMM_REGISTER line against the launcher's own dim3 block and grid (where it spells them
    the plain way): THREADS = the block's threads; gridDim.x/y cover N/M (M/N for SGEMM_Y_WALKS_N)
    in steps of BN/BM."""
    reg = next(r for r in registration.read_registrations(path.source) if r.symbol == path.symbol)
    text = registration._code((REPO / path.source).read_text())
    launcher = text[text.index(f"launch_{path.symbol}("):]
    defines = registration._defines(REPO / path.source)
    block = re.search(r"dim3\s+block\s*\(([^;]*)\)\s*;", launcher)
    if block:
        threads = 1
        for dim in registration._call_arguments(f"b({block.group(1)})", 1, path.source):
            threads *= registration.evaluate(dim, defines)
        assert threads == reg.threads
    grid = re.search(r"dim3\s+grid\s*\(\s*sgemm_cdiv\(\s*(\w+)\s*,([^;]*)\)\s*,\s*sgemm_cdiv\(\s*(\w+)\s*,"
                     r"([^;]*)\)\s*\)\s*;", launcher)
    if grid:
        x_dim, x_step, y_dim, y_step = grid.groups()
        steps = {x_dim: registration.evaluate(x_step, defines), y_dim: registration.evaluate(y_step, defines)}
        assert steps == {"M": reg.bm, "N": reg.bn}
        assert y_dim == ("N" if reg.y_walks_n else "M")


def test_derived_fields_follow_the_registration():
    for k in CUDA:
        for reg, path in zip(k.registrations, k.paths, strict=True):
            assert (path.symbol, path.threads, path.bm) == (reg.symbol, reg.threads, reg.bm)
            assert path.tile == ((reg.bm, reg.bn, reg.bk) if reg.bk else None)
            assert path.multiple_of == ((1, 4, 4) if reg.has("SGEMM_VEC4") else (1, 1, 1))
            assert path.needs_sm90 == reg.has("SGEMM_SM90")
        if len(k.paths) == 1:
            (path,) = k.paths
            assert (k.symbol, k.threads, k.tile, k.needs_sm90) == (path.symbol, path.threads, path.tile,
                                                                   path.needs_sm90)
        else:  # what the paths share: the strictest operand needs, sm_90 only where all need it
            assert k.symbol is None and k.tile is None and k.threads is None
            assert all(m % p.multiple_of[d] == 0 for p in k.paths for d, m in enumerate(k.multiple_of))
            assert k.needs_sm90 == all(p.needs_sm90 for p in k.paths)
    for k in kernels.KERNELS:
        if k.impl != "cuda":
            assert k.registration is None and k.needs_sm90 is False


def test_an_entry_may_still_give_a_field_itself():
    k = kernels.Kernel("KX", "cuda", "x", target="cuda:kx", threads=32, symbol="kx",
                       source="cuda_kernels/k3_smem_tile.cu")
    assert (k.target, k.threads, k.symbol) == ("cuda:kx", 32, "kx")
    assert k.tile == kernels.get("K3").tile  # not given: from the file
    assert dataclasses.replace(k, id="KY").threads == 32


def test_comparing_kernels_reads_no_file(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("// no registration here\n")
    k = kernels.Kernel("KX", "cuda", "x", source=str(bad), symbol="bad", threads=32)
    assert k == k and k != kernels.BASELINE and hash(k) == hash(k)
    assert k in [kernels.BASELINE, k]
    with pytest.raises(InputError, match=r"bad\.cu: no SGEMM_REGISTER line"):
        _ = k.tile


# ------------------------------------------------------------------ reading SGEMM_REGISTER


def test_evaluator_reads_c_integer_expressions():
    d = {"K6_BM": "32", "K6_TM": "8", "K6_ROWS": "(K6_BM / K6_TM)", "NEG": "-7", "V": "1", "S": "4"}
    assert registration.evaluate("(K6_BM / K6_TM)", d) == 4
    assert registration.evaluate("K6_BM * K6_ROWS + 2 * (3 - 1)", d) == 132
    # C truncation
    assert registration.evaluate("NEG / 2", d) == -3 and registration.evaluate("NEG % 2", d) == -1
    assert registration.evaluate("V | S", d) == 5 and registration.evaluate("1 + 2 | 4", d) == 7
    assert registration.evaluate("0x10 + 010 + 4u + 2UL", d) == 30


@pytest.mark.parametrize("junk, why", [
    ("__import__('os').system('true')", "not an integer expression"),
    ("32.0", "not an integer literal"),
    ("1 << 2", "not an integer expression"),
    ("2 ** 3", "unexpected"),
    ("(1 + 2", "ends too early"),
    ("1 2", "unexpected"),
    ("", "empty"),
    ("UNDEFINED", "UNDEFINED is not a #define"),
    ("LOOP", "refers to itself"),
    ("4 / (2 - 2)", "division by zero"),
    ("sizeof(float)", "sizeof is not a #define"),
])
def test_evaluator_refuses_junk(junk, why):
    with pytest.raises(InputError, match=re.escape(why)):
        registration.evaluate(junk, {"LOOP": "LOOP + 1"}, "here")


def _cu(tmp_path, body: str) -> Path:
    (tmp_path / "common.cuh").write_text((cuda_kernels.SOURCE_DIR / "common.cuh").read_text())
    path = tmp_path / "kx.cu"
    path.write_text('#include "common.cuh"\n' + body)
    return path


def test_registration_reads_defines_continuations_and_flags(tmp_path):
    path = _cu(tmp_path, (
        "#define KX_BM 64  // rows\n#define KX_BN (2 * \\\n  KX_BM)\n#define KX_F(x) (x)\n"
        'const char *s = "SGEMM_REGISTER(";  /* SGEMM_REGISTER( in a comment */\n'
        "SGEMM_REGISTER(kx, KX_BM, KX_BN, 16, KX_BM * 4, SGEMM_VEC4 | SGEMM_SM90);\n"))
    reg = registration.read_registration(path)
    assert reg.facts == ("kx", 64, 128, 16, 256, reg.bits["SGEMM_VEC4"] | reg.bits["SGEMM_SM90"])
    assert reg.multiple_of == (1, 4, 4) and reg.needs_sm90 and not reg.y_walks_n
    assert reg.tile == (64, 128, 16) and reg.target == "cuda:kx"


@pytest.mark.parametrize("body, why", [
    ("// SGEMM_REGISTER(kx, 1, 1, 0, 1, 0)\n", "no SGEMM_REGISTER line"),
    ("SGEMM_REGISTER(a, 1, 1, 0, 1, 0)\nSGEMM_REGISTER(b, 1, 1, 0, 1, 0)\n",
     "2 SGEMM_REGISTER lines, where one"),
    ("SGEMM_REGISTER(a, 1, 1, 0, 1, 0)\nSGEMM_REGISTER(a, 2, 1, 0, 1, 0)\n", "names a more than once"),
    ("SGEMM_REGISTER(a, 1, 1, 0, 1)\n", "takes 6 arguments"),
    ("SGEMM_REGISTER(\"a\", 1, 1, 0, 1, 0)\n", "first argument must be the kernel's name"),
    ("SGEMM_REGISTER(a, 0, 1, 0, 1, 0)\n", "BM, BN, THREADS >= 1"),
    ("SGEMM_REGISTER(a, 1, 1, 0, 1, 64)\n", "bits that no SGEMM_* flag names"),
    ("SGEMM_REGISTER(a, KX_NOPE, 1, 0, 1, 0)\n", "BM: KX_NOPE is not a #define"),
])
def test_registration_refuses_a_bad_file_by_name(tmp_path, body, why):
    path = _cu(tmp_path, body)
    with pytest.raises(InputError, match=re.escape(why)) as e:
        registration.read_registration(path)
    assert path.name in str(e.value)


def test_a_split_line_gives_its_path_the_terms_of_its_launch(tmp_path):
    path = _cu(tmp_path, (
        "#define KX_T 128\n"
        "SGEMM_SPLIT_K(kx, KX_T * 4 * 16, 3 * 16384, 8, 2 * KX_T)\n"
        "SGEMM_REGISTER(kx, 1, 64, 0, KX_T, SGEMM_VEC4)\nSGEMM_REGISTER(ky, 1, 64, 0, KX_T, SGEMM_VEC4)\n"))
    kx, ky = registration.read_registrations(path)
    assert kx.split == registration.SplitK(8192, 49152, 8, 256) and ky.split is None
    # 49152 B x 132 SMs over 8192 B a block: 792 blocks; over 56 tiles, 15 splits, capped at 8
    assert kx.split.count(56, 132, 4096) == 8
    assert kx.split.count(792, 132, 4096) == 1 and kx.split.count(10**6, 132, 4096) == 1
    assert kx.split.count(56, 132, 512) == 2  # one 256-deep chunk of K per split at least


@pytest.mark.parametrize("body, why", [
    ("SGEMM_SPLIT_K(kz, 1, 1, 1, 1)\n", "names kz, which no SGEMM_REGISTER line registers"),
    ("SGEMM_SPLIT_K(kx, 1, 1, 1)\n", "takes 5 arguments"),
    ("SGEMM_SPLIT_K(kx, 1, 0, 1, 1)\n", "needs every term >= 1"),
    ("SGEMM_SPLIT_K(kx, 1, 1, 1, 1)\nSGEMM_SPLIT_K(kx, 2, 1, 1, 1)\n", "names kx more than once"),
])
def test_a_bad_split_line_is_refused_by_name(tmp_path, body, why):
    path = _cu(tmp_path, body + "SGEMM_REGISTER(kx, 1, 64, 0, 128, 0)\n")
    with pytest.raises(InputError, match=re.escape(why)) as e:
        registration.read_registrations(path)
    assert path.name in str(e.value)


def test_kd_streaming_paths_state_their_split():
    """KD's streaming entry points split K; its tiled ones do not (they are balanced). A block of
    16 x 8 threads keeps 4 loads of 16 bytes per 4-k step in flight, 4 steps at MT = 1, 2 and 2 at
    MT = 4, 8; a split takes at least one staged chunk of A, 8 k-groups x those steps x 4 k."""
    kd = kernels.get("KD")
    split = {r.symbol: r.split for r in kd.registrations}
    want = {"kd_gemv_m1": (128 * 4 * 4 * 16, 4 * 8 * 4), "kd_gemv_m2": (128 * 4 * 4 * 16, 4 * 8 * 4),
            "kd_gemv_m4": (128 * 4 * 2 * 16, 4 * 8 * 2), "kd_gemv_m8": (128 * 4 * 2 * 16, 4 * 8 * 2)}
    for sym, (block_bytes, chunk) in want.items():
        assert (split[sym].block_bytes, split[sym].chunk_k) == (block_bytes, chunk), sym
    assert all(s is None for sym, s in split.items() if sym not in want)
    assert all(s is None for k in CUDA if k.id != "KD" for r in k.registrations for s in [r.split])


def test_a_missing_source_is_named():
    with pytest.raises(InputError, match="cuda_kernels/nope.cu: no such file"):
        registration.read_registration("cuda_kernels/nope.cu")


# ------------------------------------------------------------------ what nvcc builds

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None,
                                reason="needs nvcc on PATH to compile the kernels")

PRINT_REGISTRATIONS = """
#include <cstdio>
#include "common.cuh"
int sgemm_register_kernel(const SgemmKernelInfo &k) {
    std::printf("%s %d %d %d %d %d\\n", k.symbol, k.bm, k.bn, k.bk, k.threads, k.flags);
    return 0;
}
int main() { return 0; }
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every .cu compiled on its own with ``nvcc -c -arch=sm_90``, in parallel: the device pass
    (what ``nvcc -cubin`` does for the SASS tables) and the host pass (as in the extension). The
    objects are linked with a stand-in for the bindings that prints what each SGEMM_REGISTER line
    registered, and run (no GPU needed)."""
    out = tmp_path_factory.mktemp("kernels")
    inc = ["-I", str(cuda_kernels.SOURCE_DIR)]
    sources = cuda_kernels.cu_sources()

    def compile_one(src):
        obj = out / f"{src.stem}.o"
        r = subprocess.run(["nvcc", "-c", "-O3", "-arch=sm_90", *inc, "-o", str(obj), str(src)],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"nvcc -c {src.name} failed:\n{r.stderr[-3000:]}"
        return obj

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        objects = list(pool.map(compile_one, sources))
    main = out / "print_registrations.cpp"
    main.write_text(PRINT_REGISTRATIONS)
    exe = out / "print_registrations"
    r = subprocess.run(["nvcc", "-arch=sm_90", *inc, "-o", str(exe), str(main), *map(str, objects)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"linking the kernels failed:\n{r.stderr[-3000:]}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    facts = []
    for line in run.stdout.split("\n"):
        if line:
            sym, *nums = line.split()
            facts.append((sym, *map(int, nums)))
    return {"dir": out, "facts": facts}


SPLIT_RULE = """
#include <cstdio>
#include "common.cuh"
int main() {
    long long bb, fl;
    int most, chunk, sms, K;
    long long tiles;
    while (std::scanf("%lld %lld %d %d %lld %d %d", &bb, &fl, &most, &chunk, &tiles, &sms, &K) == 7)
        std::printf("%d\\n", sgemm_split_count(SgemmSplitK{bb, fl, most, chunk}, tiles, sms, K));
    return 0;
}
"""


@needs_nvcc
def test_the_split_rule_predicted_is_the_launchers(tmp_path):
    """common.cuh's sgemm_split_count, compiled and run (host code, no GPU), against SplitK.count
    over KD's four split lines and the decode panel's shapes at M = 1 to 8 on three SM counts, and
    at the rule's edges (one block a tile already; K shorter than the chunks)."""
    exe = tmp_path / "split_rule"
    src = tmp_path / "split_rule.cu"
    src.write_text(SPLIT_RULE)
    r = subprocess.run(["nvcc", "-I", str(cuda_kernels.SOURCE_DIR), "-o", str(exe), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    splits = [r.split for r in kernels.get("KD").registrations if r.split is not None]
    cases = []
    for s in splits + [registration.SplitK(8192, 49152, 8, 256)]:
        for n, k in [(4096, 4096), (3584, 18944), (18944, 3584), (152064, 3584), (8192, 28672), (6144, 4096)]:
            for m in (1, 2, 4, 8):
                for sms in (132, 114, 16):
                    cases.append((s, -(-n // 64) * m, sms, k))
        cases += [(s, 10**7, 132, 4096), (s, 1, 132, 4), (s, 3, 132, s.chunk_k + 1)]
    text = "".join(f"{s.block_bytes} {s.inflight_bytes} {s.max_splits} {s.chunk_k} {t} {sms} {K}\n"
                   for s, t, sms, K in cases)
    run = subprocess.run([str(exe)], input=text, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    got = [int(x) for x in run.stdout.split()]
    assert got == [s.count(t, sms, K) for s, t, sms, K in cases]
    assert len(set(got)) > 4  # the cases reach the rule's several arms


@needs_nvcc
def test_every_cu_compiles_and_registers_what_python_reads(built):
    facts = built["facts"]
    read = [r.facts for src in cuda_kernels.cu_sources() for r in registration.read_registrations(src)]
    assert sorted(facts) == sorted(read) and len(set(facts)) == len(facts)
    assert sorted(facts) == sorted(r.facts for k in ALL_CUDA for r in k.registrations)


@needs_nvcc
@pytest.mark.parametrize("k, path", PATHS, ids=lambda x: getattr(x, "symbol", None) or x.id)
def test_sass_holds_the_symbol_and_the_tile(built, k, path):
    """A .cu's sm_90 code holds the functions it registers and no other; a path's main loop does
    the FMAs of one phase: outputs per thread (BM x BN / THREADS, over the threads that own outputs
    where a warp-specialised kernel's producer warps own none) x BK, and a kernel with no K-tile
    (BK = 0) touches no shared memory there."""
    from study.toolchain import sass, tools

    if tools.find_cuobjdump() is None:
        pytest.skip("needs cuobjdump to read SASS")
    obj = built["dir"] / f"{Path(path.source).stem}.o"
    funcs = sass.parse_sass(tools.run_cuobjdump(str(obj), "-sass"))
    assert set(funcs) == {p.symbol for p in k.paths if p.source == path.source}
    loop = sass.loop_histogram(funcs[path.symbol])
    reg = next(r for r in k.registrations if r.symbol == path.symbol)
    if reg.bk:
        assert loop["loop_FFMA"] == reg.bm * reg.bn * reg.bk // (path.compute_threads or reg.threads)
    elif k.meant_for is None:
        assert loop["loop_FFMA"] > 0 and loop["loop_LDS"] == 0 and loop["loop_STS"] == 0
    else:  # the decode rung streams B with 128-bit loads (A is staged in shared memory)
        assert loop["loop_FFMA"] > 0 and loop["loop_LDG128"] > 0 and loop["loop_LDG32"] == 0

