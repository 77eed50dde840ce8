"""SASS of the project's kernels for sm_90, compiled here with no GPU (nvcc -cubin, Triton AOT).

The facts asserted are read from the real cuda_kernels/*.cu and Triton twins; the parser,
loop finder and occupancy arithmetic are also checked on hand-made inputs.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import types

import pytest

from study import kernels
from study.derive.compiled import counted_vs_compiled
from study.errors import InputError
from study.kernels.kernel import REPO
from study.toolchain import compile as tc
from study.toolchain import occupancy, sass, table, tools
from triton_kernels import aot

ARCH = "sm_90"
CUDA = [k for k in kernels.KERNELS if k.impl == "cuda"]
TILED = [k for k in CUDA if k.tile]
TRITON = [k for k in kernels.KERNELS if k.impl == "triton"]

needs_tools = pytest.mark.skipif(
    tools.find_nvcc() is None or tools.find_cuobjdump() is None,
    reason="needs nvcc and cuobjdump (PATH or the triton wheel) to compile and dump SASS",
)

needs_cuobjdump = pytest.mark.skipif(
    tools.find_cuobjdump() is None, reason="needs cuobjdump (PATH or the triton wheel) to dump SASS"
)


def _has_triton() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


needs_triton = pytest.mark.skipif(
    not _has_triton() or tools.find_cuobjdump() is None,
    reason="needs triton and cuobjdump to compile the Triton kernels ahead of time and dump them",
)


@pytest.fixture(scope="session")
def sass_cache(tmp_path_factory):
    """One cubin cache for the session, away from the user's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SGEMM_SASS_CACHE", str(tmp_path_factory.mktemp("sass-cache")))
        yield


@pytest.fixture(scope="session")
def cuda_table(sass_cache):
    df = table.sass_table(CUDA, ARCH)
    assert (df["error"] == "").all(), df.loc[df["error"] != "", ["kernel", "error"]].to_string()
    return df.set_index("kernel")


@pytest.fixture(scope="session")
def triton_table(sass_cache):
    df = table.sass_table(TRITON, ARCH)
    assert (df["error"] == "").all(), df.loc[df["error"] != "", ["kernel", "error"]].to_string()
    return df.set_index("kernel")


def _nvcc_version_text() -> str:
    nvcc = tools.find_nvcc()
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout if nvcc else ""


def _nvcc_release() -> str:
    nvcc = tools.find_nvcc()
    if nvcc is None:
        return ""
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else ""


# ------------------------------------------------------------------ parser, on a hand-made dump

SNIPPET = """
\tcode for sm_90
\t\tFunction : toy
\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                    /* 0x00000a00ff017b82 */
                                                                             /* 0x000fe40000000f00 */
        /*0010*/                   LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ; /* 0x0000000402047981 */
        /*0020*/              @!P0 LDG.E.LTC128B R8, desc[UR4][R2.64] ;       /* 0x0000000402087981 */
        /*0030*/                   LDG.E.64 R10, desc[UR4][R2.64] ;          /* 0x0000000402087981 */
        /*0040*/                   LDG.E R12, desc[UR4][R2.64] ;             /* 0x0000000402087981 */
        /*0050*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR4][R2.64] ;
        /*0060*/                   STS.128 [R3], R4 ;
        /*0070*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0080*/                   LDS.U.128 R4, [R3] ;
        /*0090*/                   LDS R13, [R3+0x80] ;
        /*00a0*/                   LDS.U8 R14, [R3+0x4] ;
        /*00b0*/                   LDS.64 R16, [R3+0x10] ;
        /*00c0*/                   FFMA R0, R4, R13, R0 ;
        /*00d0*/                   FFMA R0, R5, R13, R0 ;
        /*00e0*/               @P1 BRA 0x80 ;
        /*00f0*/                   FFMA R0, R6, R13, R0 ;
        /*0100*/              @!P2 BRA `(.L_x_1) ;
        /*0110*/                   HMMA.1688.F32.TF32 R20, R4, R8, R20 ;
        /*0120*/                   EXIT ;
        /*0130*/                   BRA 0x130;
        /*0140*/                   NOP;
        /*0150*/                   NOP;
\t\t..........
\t\tFunction : other
        /*0000*/                   EXIT ;
"""


def test_parser_reads_functions_opcodes_and_predicates():
    funcs = sass.parse_sass(SNIPPET)
    assert list(funcs) == ["toy", "other"]
    toy = funcs["toy"]
    assert len(toy) == 22 and toy[0].opcode == "LDC" and toy[-1].opcode == "NOP"
    guarded = toy[2]
    assert (guarded.pred, guarded.opcode, guarded.base) == ("@!P0", "LDG.E.LTC128B", "LDG")
    assert toy[1].mods == ("E", "128", "CONSTANT") and toy[1].operands == "R4, desc[UR4][R2.64]"


def test_widths_come_from_exact_width_modifiers_only():
    h = sass.histogram(sass.parse_sass(SNIPPET)["toy"])
    # LDG.E.128.CONSTANT is 128-bit; .LTC128B is an L2 hint, so LDG.E.LTC128B is 32-bit
    assert (h["LDG128"], h["LDG64"], h["LDG32"], h["LDG"]) == (1, 1, 2, 4)
    # LDS.U.128 is 128-bit; LDS and the sub-word LDS.U8 fall in the 32 bucket
    assert (h["LDS128"], h["LDS64"], h["LDS32"], h["LDS"]) == (1, 1, 2, 4)
    assert (h["LDGSTS"], h["STS"], h["BAR"], h["HMMA"], h["HGMMA"]) == (1, 1, 1, 1, 0)
    assert h["FFMA"] == 3
    assert h["total"] == 20  # every line but the two NOPs


def test_256_bit_loads_have_their_own_bucket():
    # sm_100 and later write 256-bit global loads; .ENL2 is no width
    text = "\n".join("        " + ln for ln in (
        "/*0000*/ LDG.E.ENL2.256.CONSTANT R4, R8, desc[UR4][R2.64] ;",
        "/*0010*/ @!P0 LDG.E.ENL2.256 R12, R16, desc[UR4][R2.64+0x20] ;",
        "/*0020*/ LDG.E.128 R20, desc[UR4][R2.64] ;",
        "/*0030*/ FFMA R0, R4, R5, R0 ;",
        "/*0040*/ @P1 BRA 0x0 ;",
        "/*0050*/ EXIT ;",
    ))
    instrs = sass.parse_sass(text)[""]
    assert [i.width for i in instrs[:3]] == [256, 256, 128]
    h = sass.histogram(instrs)
    assert (h["LDG256"], h["LDG128"], h["LDG32"], h["LDG"]) == (2, 1, 0, 3)
    loop = sass.loop_histogram(instrs)
    assert (loop["loop_LDG256"], loop["loop_ldg_per_ffma"]) == (2, 3.0)


def test_local_memory_loads_and_stores_are_counted_in_and_out_of_the_loop():
    text = "\n".join("        " + ln for ln in (
        "/*0000*/ STL [R1+0x10], R4 ;",
        "/*0010*/ STL.64 [R1], R8 ;",
        "/*0020*/ LDL R5, [R1+0x10] ;",
        "/*0030*/ FFMA R0, R5, R6, R0 ;",
        "/*0040*/ STL [R1+0x14], R0 ;",
        "/*0050*/ @P1 BRA 0x20 ;",
        "/*0060*/ LDL.LU R7, [R1+0x14] ;",
        "/*0070*/ EXIT ;",
    ))
    instrs = sass.parse_sass(text)[""]
    h, loop = sass.histogram(instrs), sass.loop_histogram(instrs)
    assert (h["LDL"], h["STL"], loop["loop_LDL"], loop["loop_STL"]) == (2, 3, 1, 1)
    for col in ("LDL", "STL", "loop_LDL", "loop_STL", "LDG256", "loop_LDG256", "config", "nvcc", "triton"):
        assert col in table.TABLE_COLUMNS, col


RES_USAGE = """
Resource usage:
 Common:
  GLOBAL:0
 Function tiled_matmul_kernel:
  REG:96 STACK:24 SHARED:1024 LOCAL:0 CONSTANT[0]:592 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function other:
  REG:32 STACK:0 SHARED:9216 LOCAL:16 CONSTANT[0]:576 TEXTURE:0 SURFACE:0 SAMPLER:0
"""


def test_res_usage_is_parsed_and_spills_are_stack_plus_local():
    usage = tools.parse_res_usage(RES_USAGE)
    assert list(usage) == ["tiled_matmul_kernel", "other"]
    assert usage["tiled_matmul_kernel"] == {"REG": 96, "STACK": 24, "SHARED": 1024, "LOCAL": 0,
                                            "CONSTANT[0]": 592, "TEXTURE": 0, "SURFACE": 0, "SAMPLER": 0}
    # spill slots live in the stack frame: a LOCAL-only count would say 0 for the first
    assert sass.spill_bytes(usage["tiled_matmul_kernel"]) == 24
    assert sass.spill_bytes(usage["other"]) == 16
    assert sass.spill_bytes({}) == 0


def _fake_tool(path, script: str) -> str:
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)
    return str(path)


def test_one_cuobjdump_search_for_cuda_and_triton(tmp_path, monkeypatch):
    # one search, in the study's toolchain: the Triton AOT module finds no tools of its own
    assert not any(hasattr(aot, n) for n in ("find_cuobjdump", "run_cuobjdump", "cuobjdump_candidates"))
    (tmp_path / "env").mkdir()
    (tmp_path / "path").mkdir()
    explicit = _fake_tool(tmp_path / "env" / "cuobjdump", "exit 1")
    on_path = _fake_tool(tmp_path / "path" / "cuobjdump", 'echo "from PATH $@"')
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    monkeypatch.setenv("TRITON_CUOBJDUMP_PATH", explicit)
    found = tools.cuobjdump_candidates()
    assert found[:2] == [explicit, on_path]  # $TRITON_CUOBJDUMP_PATH, then PATH, then the others
    assert tools.find_cuobjdump() == explicit
    # a cuobjdump that cannot read the cubin is passed over for the next one
    assert tools.run_cuobjdump(b"\x7fELF", "-res-usage").startswith("from PATH -res-usage ")
    monkeypatch.setenv("TRITON_CUOBJDUMP_PATH", str(tmp_path / "missing"))
    assert tools.find_cuobjdump() == on_path


def test_main_loop_is_the_backward_branch_with_ffma():
    toy = sass.parse_sass(SNIPPET)["toy"]
    # the self-branch at 0x130 and the symbolic forward branch are not loops
    assert [(toy[a].addr, toy[b].addr) for a, b in sass.find_loops(toy)] == [(0x80, 0xE0)]
    h = sass.loop_histogram(toy)
    got = (h["loop_FFMA"], h["loop_LDS"], h["loop_LDS128"], h["loop_LDG"], h["loop_total"])
    assert got == (2, 4, 1, 0, 7)
    assert h["loop_lds_per_ffma"] == 2.0 and h["loop_ldg_per_ffma"] == 0.0


def test_main_loop_prefers_the_loop_with_most_ffma():
    lines = [
        "/*0000*/ FFMA R0, R1, R2, R0 ;",
        "/*0010*/ @P0 BRA 0x0 ;",  # 1 FFMA
        "/*0020*/ FFMA R0, R1, R2, R0 ;",
        "/*0030*/ FFMA R0, R1, R2, R0 ;",
        "/*0040*/ LDG.E R1, desc[UR4][R2.64] ;",
        "/*0050*/ @P0 BRA 0x20 ;",  # 2 FFMA: the main loop
        "/*0060*/ EXIT ;",
    ]
    instrs = sass.parse_sass("\n".join("        " + ln for ln in lines))[""]
    body = sass.main_loop(instrs)
    assert [i.addr for i in body] == [0x20, 0x30, 0x40, 0x50]
    assert sass.main_loop(instrs[:1]) == []
    assert math.isnan(sass.loop_histogram(instrs[:1])["loop_lds_per_ffma"])


def test_main_loop_is_an_innermost_loop():
    """A loop that holds the main loop (a loop over tiles, with peeled phases outside the inner
    one) has more FFMA than the main loop but is not it."""
    lines = [
        "/*0000*/ FFMA R0, R1, R2, R0 ;",
        "/*0010*/ FFMA R0, R1, R2, R0 ;",
        "/*0020*/ FFMA R0, R1, R2, R0 ;",
        "/*0030*/ LDS.128 R4, [R8] ;",
        "/*0040*/ FFMA R0, R1, R2, R0 ;",
        "/*0050*/ @P0 BRA 0x30 ;",  # the inner loop: 1 FFMA, 1 LDS.128
        "/*0060*/ FFMA R0, R1, R2, R0 ;",
        "/*0070*/ @P1 BRA 0x0 ;",  # the outer loop: 5 FFMA
        "/*0080*/ EXIT ;",
    ]
    instrs = sass.parse_sass("\n".join("        " + ln for ln in lines))[""]
    assert [i.addr for i in sass.main_loop(instrs)] == [0x30, 0x40, 0x50]


def test_ptxas_report_is_parsed_per_function():
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'a' for 'sm_90'
ptxas info    : Function properties for a
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers
ptxas info    : Compiling entry function 'b' for 'sm_90'
ptxas info    : Function properties for b
    24 bytes stack frame, 16 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 20480 bytes smem, 400 bytes cmem[0]
"""
    assert tc.parse_ptxas(log, "a") == dict(registers=32, smem_bytes=0, stack_bytes=0, spill_stores=0,
                                              spill_loads=0)
    assert tc.parse_ptxas(log, "b") == dict(registers=255, smem_bytes=20480, stack_bytes=24,
                                              spill_stores=16, spill_loads=8)
    with pytest.raises(tc.CompileError):
        tc.parse_ptxas(log, "c")


# ------------------------------------------------------------------ occupancy arithmetic


def test_occupancy_register_limited_sm89():
    # 128 threads x 128 regs: 65536 / (128 * 128) = 4 blocks = 16 warps of 48
    assert occupancy.theoretical_occupancy(128, 0, 128, "sm_89") == pytest.approx(100 * 16 / 48)


def test_occupancy_reproduces_the_4090_report():
    # K5 on the 4090: 20 KB smem + 1 KB reserved -> 102400 // 21504 = 4 blocks -> 33.3%
    lim = occupancy.occupancy_limits(64, 20480, 128, "sm_89")
    assert (lim["blocks"], lim["limited_by"]) == (4, "shared memory")
    assert lim["occupancy_pct"] == pytest.approx(33.333, abs=1e-3)
    # K4 on the 4090 had 75%: 9 blocks of 4 warps. That needs 49..56 registers
    # (56 * 32 = 1792 per warp, 16384 // 1792 = 9 warps per scheduler); 57 gives 8 blocks.
    for regs, pct in ((48, 83.333), (49, 75.0), (56, 75.0), (57, 66.667)):
        assert occupancy.theoretical_occupancy(regs, 8192, 128, "sm_89") == pytest.approx(pct, abs=1e-3), regs


def test_occupancy_sm90_cases():
    assert occupancy.theoretical_occupancy(32, 0, 1024, "sm_90") == 100.0  # 2 blocks of 32 warps
    assert occupancy.theoretical_occupancy(40, 8192, 1024, 90) == 50.0  # 40 regs: 1 block of 1024
    # 72 regs -> 2304 per warp -> 7 warps per scheduler -> 28 warps -> 7 blocks of 4 warps
    assert occupancy.theoretical_occupancy(72, 20480, 128, "sm_90") == pytest.approx(43.75)
    # shared memory: 100 KB + 1 KB reserved -> 228 KB holds 2 blocks
    assert occupancy.occupancy_limits(32, 100 * 1024, 128, "sm_90")["by_smem"] == 2
    assert occupancy.theoretical_occupancy(32, 228 * 1024, 128, "sm_90") == 0.0  # over 227 KB per block
    assert occupancy.theoretical_occupancy(256, 0, 128, "sm_90") == 0.0  # over 255 regs per thread
    assert occupancy.theoretical_occupancy(32, 0, 2048, "sm_90") == 0.0  # over 1024 threads per block
    assert occupancy.theoretical_occupancy(16, 0, 32, "sm_90") == 50.0  # block limit: 32 blocks x 1 warp
    assert occupancy.theoretical_occupancy(16, 0, 32, "sm_86") == pytest.approx(100 * 16 / 48)


def test_occupancy_blackwell_is_computed_from_the_arch_table():
    # 128 threads (4 warps), 64 registers, 16 KB of shared memory, worked by hand:
    warps_per_block, regs_per_warp = 128 // 32, 64 * 32  # 2048: a multiple of 256 already
    per_scheduler = (65536 // 4) // regs_per_warp  # 8 warps on each of the 4 schedulers
    by_regs = per_scheduler * 4 // warps_per_block  # 8 blocks
    smem = 16 * 1024 + 1024  # + the 1 KB reservation; 17408 is a multiple of 128
    # sm_120: 48 warps, 24 blocks, 100 KB per SM
    by_warps, by_smem = 48 // warps_per_block, (100 * 1024) // smem  # 12, 5
    blocks = min(by_warps, by_regs, by_smem, 24)
    lim = occupancy.occupancy_limits(64, 16 * 1024, 128, "sm_120")
    assert (blocks, lim["blocks"], lim["limited_by"]) == (5, 5, "shared memory")
    assert lim["occupancy_pct"] == pytest.approx(100 * 5 * 4 / 48)
    # sm_100: 64 warps, 32 blocks, 228 KB per SM -> 16, 8, 13: registers decide
    blocks = min(64 // warps_per_block, by_regs, (228 * 1024) // smem, 32)
    lim = occupancy.occupancy_limits(64, 16 * 1024, 128, "sm_100")
    assert (blocks, lim["blocks"], lim["limited_by"]) == (8, 8, "registers")
    assert lim["occupancy_pct"] == 50.0
    for sm in ("sm_103", "sm_110", "sm_121", "sm_87", "sm_80"):
        assert not math.isnan(occupancy.theoretical_occupancy(64, 16 * 1024, 128, sm)), sm


def test_occupancy_turing_has_no_reservation_and_256_byte_units():
    # 10800 B rounds up to 11008 in 256-byte units (128-byte units would give 10880, 6 blocks),
    # with no per-block reservation: 65536 // 11008 = 5 blocks of 4 warps, of 32 warps
    lim = occupancy.occupancy_limits(32, 10800, 128, "sm_75")
    assert (lim["by_smem"], lim["blocks"], lim["limited_by"]) == (5, 5, "shared memory")
    assert lim["occupancy_pct"] == pytest.approx(100 * 20 / 32)
    assert occupancy.occupancy_limits(32, 64 * 1024, 128, "sm_75")["by_smem"] == 1  # all 64 KB


def test_occupancy_refuses_unknown_arch():
    with pytest.raises(InputError, match="unknown architecture 'sm_52'.*sm_90"):
        occupancy.theoretical_occupancy(32, 0, 128, "sm_52")


# ------------------------------------------------------------------ tools and failures


def test_missing_nvcc_is_a_skip_message(monkeypatch):
    monkeypatch.setattr(tools, "find_cuobjdump", lambda: "/usr/bin/true")
    monkeypatch.setattr(tools, "find_nvcc", lambda: None)
    with pytest.raises(tools.SassUnavailable, match="SASS skipped: no nvcc on PATH"):
        table.sass_table("K3", ARCH)


def test_an_arch_outside_the_table_is_refused_before_any_compiler_runs(monkeypatch):
    def no_tools():
        raise AssertionError("a tool was looked up")

    monkeypatch.setattr(tools, "find_nvcc", no_tools)
    monkeypatch.setattr(tools, "find_cuobjdump", no_tools)
    for bad in ("sm_52", "sm_88", "sm_٩٠"):
        with pytest.raises(InputError, match="sm_75, sm_80"):
            table.sass_table("K3,T5", bad)


@needs_tools
def test_a_failing_kernel_gets_an_error_row(sass_cache, tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text('#include "common.cuh"\n'
                   'extern "C" __global__ void bad(float *x) { x[0] = undefined_name; }\n'
                   "SGEMM_REGISTER(bad, 32, 32, 0, 32, SGEMM_PLAIN)\n")
    (tmp_path / "common.cuh").write_text((REPO / "cuda_kernels" / "common.cuh").read_text())
    unregistered = tmp_path / "unregistered.cu"
    unregistered.write_text('extern "C" __global__ void kx(float *x) { x[0] = 1.0f; }\n')
    broken = kernels.Kernel("KX", "cuda", "broken", source=str(bad))
    unread = kernels.Kernel("KY", "cuda", "unread", source=str(unregistered))
    df = table.sass_table([broken, unread, kernels.get("K3")], ARCH).set_index("kernel")
    assert "nvcc failed" in df.loc["KX", "error"] and df.loc["K3", "error"] == ""
    assert df.loc["KX", "symbol"] == "bad" and "no SGEMM_REGISTER line" in df.loc["KY", "error"]
    assert df.loc["K3", "loop_FFMA"] == 32


# ------------------------------------------------------------------ the project's CUDA kernels


@needs_tools
@pytest.mark.parametrize("kid", ["K1", "K2"])
def test_naive_loops_load_from_global_only(cuda_table, kid):
    r = cuda_table.loc[kid]
    assert r["loop_FFMA"] > 0 and r["loop_LDS"] == 0 and r["loop_STS"] == 0
    assert r["loop_ldg_per_ffma"] == 2.0  # one A and one B element per FMA, however unrolled


@needs_tools
@pytest.mark.parametrize("k", TILED, ids=lambda k: k.id)
def test_tiled_loop_holds_the_unrolled_k_steps_of_a_phase(cuda_table, k):
    r, c = cuda_table.loc[k.id], k.counted
    # K3 32, K3c 128 (4 tiles across), K4 256, K5 and K6 1024, K7-K9 512, K10 1024: the k loop of a
    # phase fully unrolled
    assert r["loop_FFMA"] == c.fma_per_phase
    if c.outputs == c.fma_per_k:
        assert r["loop_FFMA"] == c.phase_k * c.fma_per_k
    # the loop is the phase loop: all the counted global loads of a phase (synchronous, or
    # asynchronous copies for K11), and its barriers (one where the shared tile is double-buffered);
    # tensor copies (K13: a box per instruction, from one thread, waited for on mbarriers) are no
    # load instruction of the threads, and no barrier instruction either
    if c.ldg_bits > 128:
        assert r["loop_LDG"] + r["loop_LDGSTS"] == 0 and r["loop_BAR"] == 0
    else:
        assert r["loop_LDG"] + r["loop_LDGSTS"] == c.ldg_per_phase and r["loop_BAR"] >= 1
    # vectorised or not, the loop fetches exactly the counted 32-bit words from shared memory
    words = r["loop_LDS32"] + 2 * r["loop_LDS64"] + 4 * r["loop_LDS128"]
    loads = (c.lds_dist + c.lds_bcast) * c.fma_per_phase // c.fma_per_k
    assert words == loads * c.lds_bits // 32


@needs_tools
@pytest.mark.parametrize("arch_specific", [False, True], ids=["sm_90", "sm_90a"])
@pytest.mark.parametrize("fn, rows", [("kd_gemv_sk_m32", 32), ("kd_gemv_sk_m16", 16)])
def test_kd_tiled_stage_loop_multiplies_from_shared_memory_only(sass_cache, fn, rows, arch_specific):
    """KD's tiled path, which the SASS table does not read (KD's row is the registered kd_gemv,
    M = 1), as the table builds KD (sm_90) and as the extension builds it on an H200 (sm_90a): a
    consumer lane holds BM / 4 rows x 9 columns and takes 16 values of k a stage; per k, its rows
    of At in BM / 16 LDS.128 and its columns of B in 2 LDS.128 and 1 LDS.32 (9 = 4 + 4 + 1). The
    loop around one stage holds exactly those, and nothing from global or local memory (B and A
    arrive by tensor copies, waited for on mbarriers), and no barrier instruction."""
    kd = next(k for k in CUDA if k.id == "KD")
    build = types.SimpleNamespace(id=kd.id, source=kd.source, needs_sm90=True) if arch_specific else kd
    instrs = sass.dump_sass(tc.compile_cuda(build, ARCH), fn)
    lane_rows, lane_cols, k_stage = rows // 4, 9, 16
    loops = [sass.histogram(instrs[s : e + 1]) for s, e in sass.find_loops(instrs)]
    stage = [h for h in loops if h["FFMA"] == k_stage * lane_rows * lane_cols]
    assert len(stage) == 1, [h["FFMA"] for h in loops if h["FFMA"]]
    h = stage[0]
    assert (h["LDS128"], h["LDS32"], h["LDS64"]) == (k_stage * (lane_rows // 4 + 2), k_stage, 0)
    assert h["LDG"] + h["LDGSTS"] + h["LDL"] + h["STL"] + h["BAR"] + h["STS"] == 0
    # what is left is per stage, not per k (the mbarrier wait, the stage's release, the counters):
    # under 32 instructions, where one more instruction per k would add 16
    assert h["total"] - h["FFMA"] - h["LDS"] < 32


@needs_tools
def test_k6_uses_128_bit_loads_only(cuda_table):
    r = cuda_table.loc["K6"]
    assert r["loop_LDS128"] == 96 and r["loop_LDS32"] == r["loop_LDS64"] == 0
    assert r["LDG128"] > 0 and r["loop_LDG128"] == 10 and r["loop_LDG32"] == 0


@needs_tools
def test_k5_k6_match_the_seed_reports_histogram(cuda_table):
    """The seed report's SASS table (RTX 4090): K5 1056 FFMA / 64 LDS.128 / 128 LDS.32 / 72 LDG.32,
    K6 1056 FFMA / 96 LDS.128 / 18 LDG.128, whole kernel. nvcc 13 for sm_90 writes the same."""
    if not _nvcc_release().startswith("13."):
        pytest.skip(f"compared under nvcc 13.x; this is nvcc {_nvcc_release() or 'unknown'}")
    cols = ("FFMA", "LDS128", "LDS32", "LDG32", "LDG128")
    got = {kid: tuple(int(cuda_table.loc[kid, c]) for c in cols) for kid in ("K5", "K6")}
    assert got == {"K5": (1056, 64, 128, 72, 0), "K6": (1056, 96, 0, 0, 18)}


@needs_tools
def test_resources_and_occupancy_are_filled(cuda_table):
    for kid, r in cuda_table.iterrows():
        assert 0 < r["registers"] <= 255, kid
        # no CUDA kernel touches local memory (nvcc 13.0: no stack frame, no LDL/STL)
        assert r["spills"] == 0 and r["LDL"] == r["STL"] == 0, kid
        assert 0 < r["occupancy_pct"] <= 100, kid
        assert r["config"] == "" and r["nvcc"] and r["nvcc"] in _nvcc_version_text(), kid
    assert cuda_table.loc["K1", "smem_bytes"] == 0
    assert cuda_table.loc["K3", "smem_bytes"] == 2 * 32 * 32 * 4
    assert cuda_table.loc["K6", "smem_bytes"] == (32 * 32 + 32 * 128) * 4


@needs_tools
def test_counted_vs_compiled_flags_the_merged_broadcasts(cuda_table):
    cv = counted_vs_compiled(cuda_table.reset_index()).set_index("kernel")
    assert list(cv.index) == [k.id for k in CUDA if k.counted is not None]
    for kid in ("K1", "K2", "K6"):
        assert not cv.loc[kid, "flag"], (kid, cv.loc[kid, "explanation"])
    for kid in ("K3", "K3c", "K4", "K5"):
        assert cv.loc[kid, "flag"] and cv.loc[kid, "sass_lds_per_fma"] < cv.loc[kid, "counted_lds_per_fma"]
        assert "LDS.128" in cv.loc[kid, "explanation"] and "broadcast" in cv.loc[kid, "explanation"]
        assert cv.loc[kid, "ldg_ratio"] == 1.0
    assert cv.loc["K3", "sass_lds_per_fma"] == 40 / 32


# ------------------------------------------------------------------ the Triton kernels


@needs_triton
def test_triton_ieee_twin_uses_ffma_not_tensor_cores(triton_table):
    row = triton_table.loc["T5"]
    assert row["FFMA"] > 0 and row["HMMA"] == 0 and row["HGMMA"] == 0
    assert row["loop_FFMA"] == 32 * 128 * 32 // 128  # the K6 tile: 32 outputs x 32 k-steps per thread
    assert row["threads"] == 128 and row["registers"] > 0 and row["smem_bytes"] > 0


@needs_triton
@pytest.mark.parametrize("kid", [k.id for k in TRITON])
def test_triton_spills_are_the_local_memory_its_sass_uses(triton_table, kid):
    """spills > 0 exactly when the SASS loads or stores local memory (whatever Triton writes:
    under Triton 3.9 the pipelined T5p spills, with LDL/STL in its main loop)."""
    r = triton_table.loc[kid]
    assert r["spills"] >= 0 and r["loop_LDL"] <= r["LDL"] and r["loop_STL"] <= r["STL"]
    assert (r["spills"] > 0) == (r["LDL"] + r["STL"] > 0), (r["spills"], r["LDL"], r["STL"])
    import triton

    assert r["triton"] == triton.__version__


@needs_triton
def test_ta_row_describes_the_config_it_is_given(sass_cache):
    from triton_kernels import ta_autotuned as ta

    if len(ta.CONFIGS) == 1:
        pytest.skip("TRITON_INTERPRET=1 in this process: the space is reduced to one config")
    measured = {"BM": 64, "BN": 128, "BK": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}
    assert measured != ta.DEFAULT_CONFIG
    # configs for kernels not in the table (K6 here) are ignored
    df = table.sass_table(["T5", "TA"], ARCH, configs={"TA": measured, "K6": {"BM": 1}}).set_index("kernel")
    assert (df["error"] == "").all(), df["error"].to_dict()
    r = df.loc["TA"]
    assert json.loads(r["config"]) == measured and df.loc["T5", "config"] == ""
    assert r["threads"] == 128 and r["num_stages"] == 4
    assert r["smem_bytes"] == ta.smem_bytes(ta.triton.Config(measured, num_warps=4, num_stages=4))
    # with no config and no tuning result in the process: the module's default, said so in the row
    default = table.sass_table(["TA"], ARCH).set_index("kernel").loc["TA"]
    assert json.loads(default["config"]) == ta.DEFAULT_CONFIG
    assert default["smem_bytes"] != r["smem_bytes"]
    # a config for a kernel that is not autotuned is refused
    with pytest.raises(InputError, match="not an autotuned kernel"):
        table.sass_table(["T5"], ARCH, configs={"T5": measured})


@needs_triton
def test_triton_compiles_are_remembered_per_config_and_tuning_state(sass_cache):
    from triton_kernels import ta_autotuned as ta

    if len(ta.CONFIGS) == 1:
        pytest.skip("TRITON_INTERPRET=1 in this process: the space is reduced to one config")
    small = {"BM": 32, "BN": 64, "BK": 32, "GROUP_M": 8, "num_warps": 2, "num_stages": 4}
    ta_kernel = kernels.get("TA")
    a = tc.compile_triton(ta_kernel, ARCH, small)
    assert a["config"] == small and tc.compile_triton(ta_kernel, ARCH, small)["cubin"] == a["cubin"]
    assert tc.compile_triton(ta_kernel, ARCH)["config"] == ta.DEFAULT_CONFIG
    # a tuning result for 4096^3 arriving in the process changes what TA compiles to
    key = (4096, 4096, 4096, "torch.float32", "torch.float32", "torch.float32")
    ta.autotuned_matmul_kernel.cache[key] = ta.triton.Config(
        {k: small[k] for k in ("BM", "BN", "BK", "GROUP_M")}, num_warps=2, num_stages=4)
    try:
        tuned = tc.compile_triton(ta_kernel, ARCH)
    finally:
        del ta.autotuned_matmul_kernel.cache[key]
    assert tuned["config"] == small and tuned["cubin"] == a["cubin"]
    assert tc.compile_triton(ta_kernel, ARCH)["cubin"] != a["cubin"]



@needs_tools
def test_triton_loses_its_128_bit_loads_at_an_unaligned_stride():
    """T5's 32x128x32 tile with 4 warps: per thread per phase A is 32*32/128 = 8 floats (2 float4)
    and B 32*128/128 = 32 floats (8 float4): 10 LDG.128 at n = 4096, whose strides are multiples
    of 16, and 40 LDG.32 at n = 4097, where Triton cannot assume aligned rows. K6's binary is the
    same at every shape and refuses 4097 (its 128-bit loads need N and K multiples of 4)."""
    from study.toolchain import table

    df = table.stride_table("T5,K6", [(4096,) * 3, (4097,) * 3], ARCH).set_index(["kernel", "M"])
    assert (df.at[("T5", 4096), "loop_LDG128"], df.at[("T5", 4096), "loop_LDG32"]) == (10, 0)
    assert (df.at[("T5", 4097), "loop_LDG128"], df.at[("T5", 4097), "loop_LDG32"]) == (0, 40)
    assert bool(df.at[("T5", 4097), "specialised"]) and not bool(df.at[("K6", 4096), "specialised"])
    assert df.at[("K6", 4096), "loop_LDG128"] == 10
    assert "multiple of 4" in df.at[("K6", 4097), "error"]
