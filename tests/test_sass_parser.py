"""Reading SASS: cuobjdump's text parsed into functions and instructions, the opcode histogram and
its widths, the main loop found from the branches, and the ptxas and resource-usage reports; on
hand-made dumps, so no compiler is needed."""

import math

import pytest

from study.toolchain import compile as tc
from study.toolchain import sass, table, tools
from triton_kernels import aot

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


def test_main_loop_of_spans_that_overlap_is_the_shorter():
    """A loop whose back edge the compiler lays out past an inner loop's start (the tiled decode
    GEMM's stage loop inside its loop over tiles): the two spans overlap without nesting; the
    shorter is the inner loop."""
    lines = [
        "/*0000*/ FFMA R0, R1, R2, R0 ;",
        "/*0010*/ LDS.128 R4, [R8] ;",
        "/*0020*/ FFMA R0, R1, R2, R0 ;",
        "/*0030*/ FFMA R0, R1, R2, R0 ;",
        "/*0040*/ @P0 BRA 0x10 ;",  # the inner loop: 2 FFMA, 1 LDS.128
        "/*0050*/ FFMA R0, R1, R2, R0 ;",
        "/*0060*/ @P1 BRA 0x20 ;",  # back into the inner loop's body: 3 FFMA, overlapping it
        "/*0070*/ EXIT ;",
    ]
    instrs = sass.parse_sass("\n".join("        " + ln for ln in lines))[""]
    assert [i.addr for i in sass.main_loop(instrs)] == [0x10, 0x20, 0x30, 0x40]
