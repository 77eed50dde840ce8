"""The registry is the one list of kernels: what it reads from each .cu is what the compiler builds,
its counts agree with the tiles they describe, and its selections pick by property, not by id."""

import re
import subprocess
import sys
from fractions import Fraction as F
from pathlib import Path

import pytest

from study import kernels
from study.errors import InputError

REPO = Path(__file__).resolve().parent.parent
CUDA = kernels.by_impl("cuda")  # every hand-written kernel, on the ladder or beside it
NOT_AN_ID = "Kx9"  # no kernel is ever called this
REGISTER = re.compile(r"^\s*SGEMM_REGISTER\s*\(", re.M)


def test_ids_are_unique_and_baseline_is_cublas():
    assert len(kernels.IDS) == len(set(kernels.IDS))
    # the baseline is cuBLAS's default (torch.matmul); the other vendor kernel, the best cuBLASLt
    # algorithm at each shape, follows it
    vendor = kernels.by_impl("cublas")
    assert kernels.BASELINE.impl == "cublas" and vendor[0] is kernels.BASELINE and len(vendor) == 2
    assert kernels.KERNELS[0] is kernels.BASELINE and kernels.KERNELS[1] is vendor[1]  # listed first


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


# ------------------------------------------------------------------ Triton entries


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


# ------------------------------------------------------------------ counted ledgers


def test_counted_takes_keywords_only():
    with pytest.raises(TypeError):
        kernels.Counted(0, 0, 1, 2, 2, 1, 1, 1)  # eight bare numbers: too easy to misplace


COUNTED = [(k, p) for k in kernels.KERNELS for p in (k.paths or [k]) if p.counted]  # T1: no .cu path


@pytest.mark.parametrize("k, path", COUNTED, ids=lambda x: getattr(x, "symbol", None) or x.id)
def test_counts_agree_with_the_tile(k, path):
    c = path.counted
    # every output takes one FMA per k, so a phase holds outputs x phase_k FMAs per thread
    assert c.fma_per_phase == c.outputs * c.phase_k
    if path.tile and k.impl == "cuda":  # T1's (32, 32, 1) is a launch tile: no shared-memory reuse
        bm, bn, bk = path.tile
        assert bk == c.phase_k
        # the counts are per thread that owns outputs (a warp-specialised kernel: per consumer)
        threads = path.compute_threads or path.threads
        assert threads <= path.threads and threads % 32 == 0
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


@pytest.mark.parametrize("k, path", [(k, p) for k, p in COUNTED if k.impl == "cuda" and not p.tile],
                         ids=lambda x: getattr(x, "symbol", None) or x.id)
def test_counts_of_a_path_without_a_k_tile_cover_its_block(k, path):
    """A path that stages no K-tile of B (K1, K2, KD's streaming GEMV): its threads together own
    the block's BM x BN outputs, as its SGEMM_REGISTER line states them."""
    reg = next(r for r in k.registrations if r.symbol == path.symbol)
    assert path.counted.outputs * (path.compute_threads or path.threads) == reg.bm * reg.bn


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
    ("K6", ["T5", "T5p", "G6"]), ("K10", ["G10"]),
    ("K12", ["T12p", "G12", "G15", "G12T"]),
    ("K15", ["T12p", "G12", "G15", "G12T"]),  # G15 names K15, on K12's tile
    ("KD", ["TD"]),
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
    assert all(k in got for k in kernels.free_tl_dot_kernels())  # the tile-gap table's tl.dot side
    assert all(k in got for c in kernels.cuda_ladder() for k in [c, *kernels.pipelined_twins(c.id)])
    assert got[:len(kernels.request_ledger_kernels())] == kernels.request_ledger_kernels()
    assert got[-1] is kernels.BASELINE


def test_the_source_profile_pairs_each_rung_with_its_gluon_twin():
    got = [k.id for k in kernels.source_profile()]
    gluon = {k.id for k in kernels.KERNELS if k.gluon}
    for k in kernels.KERNELS:
        if k.gluon:  # the rung it names, then its Gluon twins (K12: G12, G12T), this one among them
            before = [i for i in got[:got.index(k.id)] if i not in gluon]
            assert before[-1] == k.twin
    assert set(got) >= {k.id for k in kernels.tuned_kernels()}


def test_the_free_tl_dot_kernels_are_fp32_and_for_every_shape():
    # the tile-gap table's tl.dot candidates beside a rung's own twins: no Gluon kernel, no twin, no
    # decode kernel, no tensor-core product
    got = kernels.free_tl_dot_kernels()
    assert {"TA", "TAT"} <= {k.id for k in got}
    for k in got:
        assert k.impl == "triton" and not k.gluon and not k.twin and not k.meant_for and k.precision == "fp32"
    assert not {"TD", "TC", "TT", "TX", "G12T"} & {k.id for k in got}
