"""The registry is the one list of kernels: what it reads from each .cu is what the compiler builds,
its counts agree with the tiles they describe, and its selections pick by property, not by id."""

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction as F
from pathlib import Path

import pytest

import cuda_kernels
from study import kernels
from study.errors import InputError
from study.kernels import registration

REPO = Path(__file__).resolve().parent.parent
CUDA = kernels.by_impl("cuda")  # every hand-written kernel, on the ladder or beside it
NOT_AN_ID = "Kx9"  # no kernel is ever called this
REGISTER = re.compile(r"^\s*SGEMM_REGISTER\s*\(", re.M)


def test_ids_are_unique_and_baseline_is_cublas():
    assert len(kernels.IDS) == len(set(kernels.IDS))
    assert kernels.BASELINE.impl == "cublas" and kernels.by_impl("cublas") == [kernels.BASELINE]
    assert kernels.KERNELS[0] is kernels.BASELINE  # reports list it first


def test_importing_the_registry_reads_no_kernel_source():
    """The facts are read on first use: a fresh interpreter that imports the registry (and asks
    for nothing a .cu states) has opened no .cu."""
    probe = (
        "import builtins, io, pathlib\n"
        "opened = []\n"
        "real = io.open\n"
        "def spy(f, *a, **k):\n"
        "    opened.append(str(f)); return real(f, *a, **k)\n"
        "builtins.open = io.open = spy\n"
        "from study import kernels\n"
        "picked = kernels.select('K1,K6,K1,K0')\n"
        "assert len(picked) == 3 and len({*picked, *kernels.KERNELS}) == len(kernels.KERNELS)\n"
        "print(sum(p.endswith('.cu') for p in opened))\n"
        "kernels.last_rung().tile\n"  # the control: asking for a fact reads its file
        "print(sum(p.endswith('.cu') for p in opened))\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    before, after = r.stdout.split()
    assert before == "0" and int(after) >= 1


# ------------------------------------------------------------------ one .cu, one entry


@pytest.mark.parametrize("k", CUDA, ids=lambda k: k.id)
def test_cuda_entry_names_a_cu_with_one_registration(k):
    src = REPO / k.source
    assert src.is_file() and src.suffix == ".cu" and src.parent == cuda_kernels.SOURCE_DIR, k.source
    text = src.read_text()
    assert len(REGISTER.findall(text)) == 1, f"{k.source}: needs exactly one SGEMM_REGISTER line"
    kernel = rf'extern\s+"C"\s+__global__\s+void\s+(__launch_bounds__\([^)]*\)\s+)?{k.symbol}\s*\('
    assert re.search(kernel, text), f"{k.source}: no extern \"C\" __global__ {k.symbol}"
    assert re.search(rf"\bvoid\s+launch_{k.symbol}\s*\(", text), f"{k.source}: no launch_{k.symbol}"
    assert k.target == f"cuda:{k.symbol}"
    assert k.registration.source == k.source


def test_every_cu_file_has_exactly_one_registry_entry():
    """The build compiles every .cu in cuda_kernels/; each must be measured, so each has an entry."""
    by_file = {}
    for k in CUDA:
        by_file.setdefault((REPO / k.source).resolve(), []).append(k.id)
    for path in cuda_kernels.cu_sources():
        ids = by_file.get(path.resolve(), [])
        assert len(ids) == 1, f"{path.name}: {len(ids)} registry entries ({ids}); a .cu needs exactly one"


def jitted_functions(path) -> set[str]:
    """The functions of a Python file decorated with ``@triton.jit`` or ``@gluon.jit`` (any
    ``<name>.jit``, called or not): a name that only appears in a comment or a string is none."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(Path(path).read_text())):
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                d = d.func if isinstance(d, ast.Call) else d
                if isinstance(d, ast.Attribute) and d.attr == "jit":
                    found.add(node.name)
    return found


@pytest.mark.parametrize("k", [k for k in kernels.KERNELS if k.impl == "triton"], ids=lambda k: k.id)
def test_triton_source_exists_and_names_its_symbol(k):
    src = REPO / k.source
    assert src.is_file(), f"{k.id}: {k.source} missing"
    assert k.symbol in jitted_functions(src), f"{k.id}: no @jit function {k.symbol} in {k.source}"


def test_a_symbol_named_only_in_a_comment_is_no_kernel(tmp_path):
    f = tmp_path / "k.py"
    f.write_text("import triton\n# tiled_matmul_kernel lives elsewhere\n"
                 "@triton.jit\ndef other(x):\n    pass\n")
    assert jitted_functions(f) == {"other"}


@pytest.mark.parametrize("k", CUDA, ids=lambda k: k.id)
def test_registration_agrees_with_the_launcher(k):
    """The SGEMM_REGISTER line against the launcher's own dim3 block and grid (where it spells them
    the plain way): THREADS = the block's threads; gridDim.x/y cover N/M (M/N for SGEMM_Y_WALKS_N)
    in steps of BN/BM."""
    reg = k.registration
    text = (REPO / k.source).read_text()
    launcher = text[text.index(f"launch_{k.symbol}("):]
    defines = registration._defines(REPO / k.source)
    block = re.search(r"dim3\s+block\s*\(([^;]*)\)\s*;", launcher)
    if block:
        threads = 1
        for dim in registration._call_arguments(f"b({block.group(1)})", 1, k.source):
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
        reg = k.registration
        assert (k.symbol, k.threads) == (reg.symbol, reg.threads)
        assert k.tile == ((reg.bm, reg.bn, reg.bk) if reg.bk else None)
        assert k.multiple_of == ((1, 4, 4) if reg.has("SGEMM_VEC4") else (1, 1, 1))
        assert k.needs_sm90 == reg.has("SGEMM_SM90")
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


@needs_nvcc
def test_every_cu_compiles_and_registers_what_python_reads(built):
    facts = built["facts"]
    assert len(facts) == len(cuda_kernels.cu_sources())  # one registration per file
    assert sorted(facts) == sorted(registration.read_registration(p).facts for p in cuda_kernels.cu_sources())
    for k in CUDA:
        assert k.registration.facts in facts


@needs_nvcc
@pytest.mark.parametrize("k", CUDA, ids=lambda k: k.id)
def test_sass_holds_the_symbol_and_the_tile(built, k):
    """The kernel's sm_90 code holds one function, the registered symbol; its main loop does the
    FMAs of one phase: outputs per thread (BM x BN / THREADS, over the threads that own outputs
    where a warp-specialised kernel's producer warps own none) x BK, and a kernel with no K-tile
    (BK = 0) touches no shared memory there."""
    from study.toolchain import sass, tools

    if tools.find_cuobjdump() is None:
        pytest.skip("needs cuobjdump to read SASS")
    obj = built["dir"] / f"{Path(k.source).stem}.o"
    funcs = sass.parse_sass(tools.run_cuobjdump(str(obj), "-sass"))
    # the registered symbol, and any instantiations of it (KD: one kernel per row tile)
    assert k.symbol in funcs and all(f == k.symbol or f.startswith(k.symbol + "_") for f in funcs)
    loop = sass.loop_histogram(funcs[k.symbol])
    reg = k.registration
    if reg.bk:
        assert loop["loop_FFMA"] == reg.bm * reg.bn * reg.bk // (k.compute_threads or reg.threads)
    elif k.meant_for is None:
        assert loop["loop_FFMA"] > 0 and loop["loop_LDS"] == 0 and loop["loop_STS"] == 0
    else:  # the decode rung streams B with 128-bit loads (A is staged in shared memory)
        assert loop["loop_FFMA"] > 0 and loop["loop_LDG128"] > 0 and loop["loop_LDG32"] == 0


# ------------------------------------------------------------------ counted ledgers


def test_counted_takes_keywords_only():
    with pytest.raises(TypeError):
        kernels.Counted(0, 0, 1, 2, 2, 1, 1, 1)  # eight bare numbers: too easy to misplace


COUNTED = [k for k in kernels.KERNELS if k.counted]


@pytest.mark.parametrize("k", COUNTED, ids=lambda k: k.id)
def test_counts_agree_with_the_tile(k):
    c = k.counted
    # every output takes one FMA per k, so a phase holds outputs x phase_k FMAs per thread
    assert c.fma_per_phase == c.outputs * c.phase_k
    if k.tile and k.impl == "cuda":  # T1's (32, 32, 1) is a launch tile: no shared-memory reuse
        bm, bn, bk = k.tile
        assert bk == c.phase_k
        # the counts are per thread that owns outputs (a warp-specialised kernel: per consumer)
        threads = k.compute_threads or k.threads
        assert threads <= k.threads and threads % 32 == 0
        # the block's threads together own the block tile ...
        assert c.outputs * threads == bm * bn
        # ... and together load the A (BM x BK) and B (BK x BN) tiles once per phase
        assert c.elems_per_phase * threads == (bm + bn) * bk
        # a load instruction carries ldg_bits / 32 elements (B's: ldg_bits_b / 32, where given)
        a_elems, b_elems = F(bm * bk, threads), F(bk * bn, threads)
        b_bits = c.ldg_bits_b or c.ldg_bits
        assert c.ldg_per_phase == a_elems / (c.ldg_bits // 32) + b_elems / (b_bits // 32)


# The seed ledgers, per FMA, from each kernel's inner loop and tile (worked by hand, not read
# from the registry): 32-way shared loads, broadcast shared loads, global load instructions,
# global elements per output per phase, shared/global load widths, requests per FMA.
SEED = {
    # naive: per k one A and one B element from global, nothing shared; K1's 32 lanes read 32
    # rows of A (32 requests) and one B value (1), K2's one A value (1) and 32 adjacent B (1)
    "K1": (0, 0, F(2, 1), 2, 32, 32, 33),
    "K2": (0, 0, F(2, 1), 2, 32, 32, 2),
    # 32 x 32 tile, 1024 threads, one output each: per k Nds[k][tx] (32-way) + Mds[ty][k]
    # (broadcast); per phase (32 + 32) * 32 / 1024 = 2 elements for 32 FMAs
    "K3": (1, 1, F(2, 32), 2, 32, 32, None),
    # 32 x 128 tile, 1024 threads, 4 outputs each: per phase 1 A + 4 B elements for 4 * 32 FMAs
    "K3c": (1, 1, F(5, 128), F(5, 4), 32, 32, None),
    # 32 x 32 tile, 128 threads, 8 outputs: per k one Nds (32-way) + 8 Mds (broadcast) for 8
    # FMAs; per phase (32 + 32) * 32 / 128 = 16 elements for 8 * 32 FMAs
    "K4": (F(1, 8), 1, F(16, 256), 2, 32, 32, None),
    # 32 x 128 tile, 128 threads, 8 x 4 outputs: per k 4 B (32-way) + 8 A (broadcast) for 32
    # FMAs; per phase (32 + 128) * 32 / 128 = 40 elements for 32 * 32 FMAs
    "K5": (F(4, 32), F(8, 32), F(40, 1024), F(40, 32), 32, 32, None),
    # K5's tile with float4: per k 1 LDS.128 of B + 2 LDS.128 of A for 32 FMAs; per phase the 40
    # elements in 10 LDG.128
    "K6": (F(1, 32), F(2, 32), F(10, 1024), F(40, 32), 128, 128, None),
}


@pytest.mark.parametrize("kid", SEED)
def test_counted_ledgers_are_the_seed_s(kid):
    c = kernels.get(kid).counted
    dist, bcast, ldg, elems_per_out, lds_bits, ldg_bits, req = SEED[kid]
    assert F(c.lds_dist, c.fma_per_k) == dist
    assert F(c.lds_bcast, c.fma_per_k) == bcast
    assert F(c.ldg_per_phase, c.fma_per_phase) == ldg
    assert F(c.elems_per_phase, c.outputs) == elems_per_out
    assert (c.lds_bits, c.ldg_bits, c.req_per_fma) == (lds_bits, ldg_bits, req)


def test_t1_counts_are_k2_s_no_reuse_ledger():
    # T1's SASS loop: 16 LDG.E per 8 FFMA, i.e. two global loads per FMA and no shared memory
    t1, k2 = kernels.get("T1").counted, kernels.get("K2").counted
    assert (t1.lds_dist, t1.lds_bcast, t1.ldg_per_phase / t1.fma_per_phase) == (0, 0, 2)
    assert (t1.elems_per_phase, t1.outputs, t1.phase_k) == (k2.elems_per_phase, k2.outputs, k2.phase_k)
    assert t1.req_per_fma is None  # the request ledger is the naive CUDA pair's alone


def test_calibration_kernels_are_k2_k3_k4():
    assert {k.id: k.calibrates for k in kernels.KERNELS if k.calibrates} == {
        "K2": "ldg", "K3": "lds", "K4": "lds"}


# ------------------------------------------------------------------ twins and constraints


@pytest.mark.parametrize("k", [k for k in kernels.KERNELS if k.twin], ids=lambda k: k.id)
def test_triton_twins_match_their_cuda_tile_and_threads(k):
    assert k.impl == "triton"
    twin = kernels.get(k.twin)
    if twin.tile is None:  # the no-reuse spelling: no shared-memory tile to match
        return
    assert k.tile == twin.tile
    assert k.threads == twin.threads


@pytest.mark.parametrize("k", [k for k in CUDA if k.multiple_of != (1, 1, 1)], ids=lambda k: k.id)
def test_vec4_constraint_message_names_the_rule(k):
    msg = k.constraint_error(4096, 4097, 4096)
    assert msg and "multiple of 4" in msg and "N = 4097" in msg and "(128-bit loads)" in msg
    assert "K = 4098" in k.constraint_error(4096, 4096, 4098)
    assert k.constraint_error(4097, 4100, 4100) is None  # M is free


def test_plain_kernels_take_any_shape():
    for k in CUDA:
        if k.multiple_of == (1, 1, 1):
            assert k.constraint_error(4097, 4097, 4097) is None
    assert kernels.get("K6").multiple_of == (1, 4, 4) and kernels.get("K5").multiple_of == (1, 1, 1)


def test_select():
    a, b = CUDA[0], CUDA[-1]
    assert kernels.select(f"{a.id},{b.id}") == [kernels.BASELINE, a, b]
    with pytest.raises(InputError, match=NOT_AN_ID):
        kernels.select(f"{a.id},{NOT_AN_ID}")
    with pytest.raises(InputError, match="empty"):
        kernels.select(" , ")
    assert kernels.select(None) == list(kernels.KERNELS)


def test_unknown_id_is_bad_input_not_a_key_error():
    known = f"unknown kernel id '{NOT_AN_ID}'; known: {kernels.BASELINE.id}"
    with pytest.raises(InputError, match=known) as e:
        kernels.get(NOT_AN_ID)
    assert isinstance(e.value, ValueError) and not isinstance(e.value, KeyError)


def test_select_takes_a_repeated_id_once_in_first_order():
    a, b = CUDA[0].id, CUDA[-1].id
    base = kernels.BASELINE.id
    assert [k.id for k in kernels.select(f"{a},{a}")] == [base, a]
    assert [k.id for k in kernels.select(f"{b},{a},{b},{base},{a}")] == [b, a, base]


@pytest.mark.parametrize("cuda, triton", [
    ("K1", []), ("K2", ["T1"]), ("K3", ["T3", "T3p"]), ("K3c", ["T3c", "T3cp"]), ("K4", ["T4", "T4p"]),
    ("K5", ["T5", "T5p", "G6"]),  # same tile and threads, although their twin field names K6
    ("K6", ["T5", "T5p", "G6"]), ("K10", ["G10"]), ("K12", ["T12p", "G12"]), ("KD", ["TD"]),
])
def test_twins_of(cuda, triton):
    assert [t.id for t in kernels.twins_of(cuda)] == triton


def test_every_twin_field_is_found_by_twins_of():
    for t in kernels.by_impl("triton"):
        if t.twin:
            assert t in kernels.twins_of(t.twin)
    with pytest.raises(InputError, match=NOT_AN_ID):
        kernels.twins_of(NOT_AN_ID)


# ------------------------------------------------------------------ selections


def test_cuda_ladder_and_last_rung():
    assert kernels.cuda_ladder() == [k for k in kernels.KERNELS if k.impl == "cuda" and not k.meant_for]
    assert kernels.last_rung() is kernels.cuda_ladder()[-1]
    beside = [k for k in CUDA if k not in kernels.cuda_ladder()]
    assert [k.id for k in beside] == ["KD"] and beside[0].meant_for == "decode"  # today's
    assert kernels.last_rung().meant_for is None
    assert kernels.last_rung("triton") is kernels.by_impl("triton")[-1]
    # among the kernels a run measured: its own top rung; none of them a rung: the registry's
    ladder = kernels.cuda_ladder()
    assert kernels.last_rung(among={"K0", ladder[-2].id, "K1"}) is ladder[-2]
    assert kernels.last_rung(among={"K0"}) is ladder[-1] and kernels.last_rung(among=()) is ladder[-1]
    with pytest.raises(InputError, match="no 'opencl' kernel"):
        kernels.last_rung("opencl")


def test_request_ledger_and_tuned_kernels():
    req = kernels.request_ledger_kernels()
    assert req and all(k.counted.req_per_fma is not None for k in req)
    assert [k for k in kernels.KERNELS if k.counted and k.counted.req_per_fma] == req
    tuned = kernels.tuned_kernels()
    assert tuned and all(k.tuned for k in tuned)
    assert {k.id for k in req} == {"K1", "K2"} and [k.id for k in tuned] == ["TA"]  # today's


def test_pipelined_twins():
    for c in CUDA:
        got = kernels.pipelined_twins(c.id)
        assert got == [t for t in kernels.twins_of(c.id) if t.num_stages and t.num_stages > 1]
    assert [t.id for t in kernels.pipelined_twins("K6")] == ["T5p"]


def test_headline_kernels():
    top = kernels.last_rung()
    got = kernels.headline_kernels()
    assert got[-1] is top and got.count(top) == 1
    assert got[:-1] == kernels._unique([*kernels.tuned_kernels(), *kernels.pipelined_twins(top.id)])
    # a run that timed the seed's ladder, or the ladder up to K12: the autotuned kernel, the
    # software-pipelined tl.dot twin of that run's top rung, then the rung itself
    seed_run = {"K0", "K1", "K2", "K3", "K3c", "K4", "K5", "K6", "T5", "T5p", "TA"}
    assert [k.id for k in kernels.headline_kernels(among=seed_run)] == ["TA", "T5p", "K6"]
    to_k12 = seed_run | {"K7", "K8", "K9", "K10", "K11", "K12", "T12p", "G12"}
    assert [k.id for k in kernels.headline_kernels(among=to_k12)] == ["TA", "T12p", "K12"]
    lower = kernels.cuda_ladder()[-2]
    assert kernels.headline_kernels(among={lower.id})[-1] is lower


def test_default_profile():
    got = kernels.default_profile()
    assert all(isinstance(k, kernels.Kernel) for k in got) and len(got) == len(set(k.id for k in got))
    assert kernels.BASELINE in got and kernels.last_rung() in got
    assert all(k in got for k in kernels.request_ledger_kernels())
    assert all(k in got for k in kernels.tuned_kernels())
    assert all(k in got for c in kernels.cuda_ladder() for k in [c, *kernels.pipelined_twins(c.id)])
    assert got[:len(kernels.request_ledger_kernels())] == kernels.request_ledger_kernels()
    assert got[-1] is kernels.BASELINE
