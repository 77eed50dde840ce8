"""SASS of the project's kernels for sm_90, compiled here with no GPU (nvcc -cubin, Triton AOT).

The facts asserted are read from the real cuda_kernels/*.cu and Triton twins; the parser,
loop finder and occupancy arithmetic are also checked on hand-made inputs.
"""

from __future__ import annotations

import json
import re
import subprocess
import types

import pytest
from conftest import needs_tools

from study import kernels
from study.derive.compiled import counted_vs_compiled
from study.errors import InputError
from study.kernels.kernel import REPO
from study.toolchain import compile as tc
from study.toolchain import sass, table, tools

ARCH = "sm_90"
CUDA = [k for k in kernels.KERNELS if k.impl == "cuda"]
TILED = [k for k in CUDA if k.tile]
TRITON = [k for k in kernels.KERNELS if k.impl == "triton"]


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
@pytest.mark.parametrize("fn, rows", [("kd_gemm_m32", 32), ("kd_gemm_m16", 16)])
def test_kd_tiled_stage_loop_multiplies_from_shared_memory_only(sass_cache, fn, rows, arch_specific):
    """KD's tiled decode GEMM, built for plain sm_90 and as the extension and the SASS table build
    it on an H200 (sm_90a): a consumer lane holds BM / 4 rows x 9 columns and takes 16 values of k
    a stage; per k, its rows of At in BM / 16 LDS.128 and its columns of B in 2 LDS.128 and 1 LDS.32
    (9 = 4 + 4 + 1). The loop around one stage holds exactly those, and nothing from global or
    local memory (B and A arrive by tensor copies, waited for on mbarriers), and no barrier
    instruction; it is the loop the SASS table reads (``main_loop``)."""
    path = next(p for p in kernels.get("KD").paths if p.symbol == fn)
    build = path if arch_specific else types.SimpleNamespace(id="KD", source=path.source, needs_sm90=False)
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
    assert sass.histogram(sass.main_loop(instrs)) == h


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
        where = f"{kid} ({r['symbol']})"
        assert 0 < r["registers"] <= 255, where
        # no CUDA kernel touches local memory, in its main loop or outside it
        assert r["loop_LDL"] == r["loop_STL"] == 0, where
        assert r["spills"] == 0 and r["LDL"] == r["STL"] == 0, where
        assert 0 < r["occupancy_pct"] <= 100, where
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
