"""Every kernel against float64 on odd, degenerate and large shapes (GPU only)."""

import math

import pytest

from study import experiments, kernels
from study.kernels import registration
from study.measure import bench

SHAPES = [
    (1, 1, 1), (1, 4096, 4096), (67, 131, 97), (33, 65, 17), (4097, 4097, 4097), (4096, 4096, 4096),
    (2, 3, 5), (31, 33, 1), (128, 1, 64), (1, 1, 4096), (513, 257, 129), (1000, 1000, 1),
    (64, 64, 64), (4096, 32, 4096),
]


CUDA = kernels.by_impl("cuda")  # every hand-written kernel, on the ladder or beside it
# a tiled kernel that takes any shape, and the kernels with 128-bit loads (N, K multiples of 4)
PLAIN_TILED = next(k for k in CUDA if k.tile and k.multiple_of == (1, 1, 1) and not k.registration.y_walks_n)
VEC4 = [k for k in CUDA if k.multiple_of != (1, 1, 1)]


def shape_for(k, shape):
    """The shape itself, or the nearest one the kernel accepts (4097^3 -> 4100^3 for 128-bit loads)."""
    return experiments.shape_for(k, experiments.Point("tests", "t", *shape))


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("k", kernels.KERNELS, ids=lambda k: k.id)
def test_kernel_matches_float64(k, shape):
    M, N, K = shape_for(k, shape)
    err = bench.check(k.launcher, M, N, K, seed=M + 3 * N + 7 * K)
    assert err <= bench.TOLERANCE, f"{k.id} at {M}x{N}x{K}: relative error {err:.2e}"


@pytest.mark.gpu
def test_checker_rejects_a_kernel_that_drops_the_last_k():
    launch = PLAIN_TILED.launcher

    def wrong(a, b, out):
        launch(a[:, :-1].contiguous(), b[:-1].contiguous(), out)

    assert bench.check(wrong, 4096, 4096, 4096) > bench.TOLERANCE
    assert bench.check(wrong, 67, 131, 97) > bench.TOLERANCE


@pytest.mark.gpu
def test_checker_rejects_a_kernel_that_skips_the_last_row():
    launch = kernels.last_rung().launcher

    def wrong(a, b, out):
        launch(a[:-1].contiguous(), b, out[:-1])

    assert math.isinf(bench.check(wrong, 68, 128, 64))


@pytest.mark.gpu
@pytest.mark.parametrize("k", VEC4, ids=lambda k: k.id)
def test_vec4_kernels_refuse_unaligned_shapes_before_launch(k):
    import torch

    a = torch.randn(64, 4097, device="cuda")
    b = torch.randn(4097, 64, device="cuda")
    out = torch.empty(64, 64, device="cuda")
    with pytest.raises(ValueError, match="multiple of 4"):
        k.launcher(a, b, out)


@pytest.mark.gpu
@pytest.mark.parametrize("bad", ["float64", "noncontiguous", "inner"])
@pytest.mark.parametrize("k", CUDA, ids=lambda k: k.id)
def test_cuda_wrappers_name_the_problem(k, bad):
    import torch

    a = torch.randn(64, 32, device="cuda")
    b = torch.randn(32, 48, device="cuda")
    out = torch.empty(64, 48, device="cuda")
    if bad == "float64":
        a, match = a.double(), "float32"
    elif bad == "noncontiguous":
        a, match = torch.randn(32, 64, device="cuda").t(), "contiguous"
    else:
        b, match = torch.randn(31, 48, device="cuda"), "inner"
    with pytest.raises(ValueError, match=match):
        k.launcher(a, b, out)


@pytest.mark.gpu
def test_baseline_is_plain_fp32():
    from study.measure import baseline

    baseline.pin_fp32()
    err = bench.check(kernels.BASELINE.launcher, 2048, 2048, 2048)
    assert 1e-8 < err <= 1e-5  # TF32 would land near 3e-4


def run_child(code: str, *args: str, env: dict | None = None) -> list[str]:
    """``code`` run by a fresh Python (a crash, or a per-process setting, must not reach pytest's),
    from the repository root with ``env`` added; its stdout lines, after asserting it exited 0."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code, *args], cwd=root,
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(root), **(env or {})})
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    return r.stdout.strip().splitlines()


PROBE = """
import sys, torch, cuda_kernels
ext = cuda_kernels.load()
vec4, plain, plain_bm = getattr(ext, sys.argv[1]), getattr(ext, sys.argv[2]), int(sys.argv[3])
a = torch.randn(64, 4097, device="cuda"); b = torch.randn(4097, 64, device="cuda")
c = torch.empty(64, 64, device="cuda")
print(vec4(a, b, c, 1.0, 0.0))
print(plain(a.double(), b, c, 1.0, 0.0))
M = 65535 * plain_bm + 1  # one row past what gridDim.y covers
a, b, c_tall = (torch.zeros(M, 1, device="cuda"), torch.zeros(1, 1, device="cuda"),
                torch.empty(M, 1, device="cuda"))
print(plain(a, b, c_tall, 1.0, 0.0))
a, b = torch.randn(64, 32, device="cuda"), torch.randn(32, 64, device="cuda")
print(repr(plain(a, b, c, 1.0, 0.0)), bool(torch.isfinite(c).all()))
"""


@pytest.mark.gpu
@pytest.mark.skipif(not VEC4, reason="no kernel with 128-bit loads in the registry")
def test_cpp_host_wrappers_refuse_bad_operands():
    """The C++ wrappers, called directly (in a child process: a crash must not take pytest down),
    return a fixed message naming the problem, and None after a good launch."""
    plain = PLAIN_TILED.registration
    lines = run_child(PROBE, VEC4[0].symbol, plain.symbol, str(plain.bm))
    assert "multiples of 4" in lines[0], lines
    assert "float32" in lines[1], lines
    assert lines[2] == "M exceeds what gridDim.y covers: cdiv(M, BM) must be <= 65535", lines
    assert lines[3] == "None True", lines


@pytest.mark.gpu
def test_extension_registers_what_the_registry_reads():
    """The extension's SGEMM_REGISTER facts, as C++ evaluated them, are what study.kernels parses
    from the same lines; every registry CUDA kernel has its binding."""
    import cuda_kernels

    ext = cuda_kernels.load()
    got = sorted(tuple(r) for r in ext.registered())
    read = [r.facts for src in cuda_kernels.cu_sources() for r in registration.read_registrations(src)]
    assert got == sorted(read)
    for k in CUDA:
        for reg, path in zip(k.registrations, k.paths, strict=True):
            assert reg.facts in got
            assert callable(getattr(ext, path.symbol)), path.symbol


@pytest.mark.gpu
def test_ta_bk_floor_is_what_the_compiler_accepts():
    """TA puts BK 8 in its space only where tl.dot compiles it: the floor it reads is the real one."""
    from triton.compiler.errors import CompilationError

    from triton_kernels import ta_autotuned as ta
    from triton_kernels.tile import launch_tiled

    k_min = ta.min_dot_k()

    def tiled(a, b, out):
        launch_tiled(a, b, out, BM=32, BN=32, BK=k_min, num_warps=4, num_stages=2)

    assert bench.check(tiled, 67, 131, 97) <= bench.TOLERANCE
    if k_min > 8:
        import torch

        a, b = bench.random_inputs(32, 32, 32, seed=0)
        with pytest.raises(CompilationError):
            launch_tiled(a, b, torch.empty(32, 32, device="cuda"), BM=32, BN=32, BK=8, num_warps=4)


@pytest.mark.gpu
@pytest.mark.parametrize("path", [p for k in CUDA for p in k.paths], ids=lambda p: p.symbol)
def test_cuda_kernels_accumulate_into_c_with_beta(path):
    """c = alpha * a @ b + beta * c: the epilogue that reads the old C (the study itself uses beta = 0),
    for every function a CUDA kernel launches."""
    import torch

    import cuda_kernels

    if not path.runs_on(".".join(map(str, torch.cuda.get_device_capability()))):
        pytest.skip(f"{path.symbol} needs compute capability 9.0")
    fn = getattr(cuda_kernels.load(), path.symbol)
    M, N, K = 67, 132, 96  # odd M; N and K multiples of 4 for 128-bit loads
    a, b = bench.random_inputs(M, N, K, seed=11)
    c0 = torch.randn(M, N, device="cuda", generator=torch.Generator(device="cuda").manual_seed(12))
    c = c0.clone()
    assert fn(a, b, c, 1.5, -0.5) is None
    ref = 1.5 * (a.double() @ b.double()) - 0.5 * c0.double()
    assert bench.relative_error(c, ref) <= bench.TOLERANCE


GRID_PROBE = """
import sys, torch, cuda_kernels
from study import kernels
from study.measure import bench
k = kernels.get(sys.argv[1])
reg = next(r for r in k.registrations if r.symbol == sys.argv[2])
fn = getattr(cuda_kernels.load(), reg.symbol)
dim, per_block = ("N", reg.bn) if reg.y_walks_n else ("M", reg.bm)
top = 65535 * per_block  # the largest extent gridDim.y covers at per_block rows (columns) a block
def launch(a, b, out):
    problem = fn(a, b, out, 1.0, 0.0)
    if problem:
        raise ValueError(problem)
for extent in (top + 1, top):
    M, N = (extent, 4) if dim == "M" else (4, extent)
    try:
        err = bench.check(launch, M, N, 4, seed=3)
        print("ok" if err <= bench.TOLERANCE else f"wrong {err:.2e}")
    except ValueError as e:
        print("refused", str(e))
"""


@pytest.mark.gpu
@pytest.mark.parametrize("path", [p for k in CUDA for p in k.paths], ids=lambda p: p.symbol)
def test_cuda_grid_y_limit_is_refused_before_launch(path):
    """One past what gridDim.y can cover is refused by name; the limit itself computes right. A
    balanced kernel's grid is one-dimensional: it computes both right."""
    import torch

    if not path.runs_on(".".join(map(str, torch.cuda.get_device_capability()))):
        pytest.skip(f"{path.symbol} needs compute capability 9.0")
    reg = next(r for r in kernels.get(path.id).registrations if r.symbol == path.symbol)
    dim = "N" if reg.y_walks_n else "M"  # K1's grid walks rows along x, columns along y
    over, at = run_child(GRID_PROBE, path.id, path.symbol)
    if reg.balanced:
        assert over == "ok", over
    else:
        assert over.startswith("refused") and f"{dim} exceeds what gridDim.y covers" in over, over
    assert at == "ok", at


DECODE = [k for k in kernels.KERNELS if k.meant_for == "decode"]


@pytest.mark.gpu
@pytest.mark.parametrize("k", DECODE, ids=lambda k: k.id)
@pytest.mark.parametrize("shape", [(1, 18944, 3584), (32, 18944, 3584), (9, 1000, 4), (3, 260, 36),
                                   (1, 4096, 4100), (33, 64, 8196), (17, 4, 4096),
                                   # KD's two paths: M <= 8 streams B, M >= 9 tiles C (16 rows to
                                   # M = 16, then 32 a tile); N past a 144-column tile, K past a
                                   # 64-value stage, several row tiles, a tile shared by blocks
                                   (8, 18944, 3584), (16, 18944, 3584), (64, 18944, 3584),
                                   (9, 300, 516), (16, 2052, 1028), (31, 1000, 2004), (100, 520, 2000),
                                   (48, 260, 36), (40, 18948, 3588),
                                   # the streaming path's splits of K, 2 to 16 of them, summed by
                                   # the block of a tile that finishes last
                                   (1, 4096, 4096), (2, 2048, 4096), (1, 64, 65536), (4, 1024, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
def test_decode_kernels_are_right_and_the_same_every_run(k, shape):
    """The decode rung and its twin on the decode shapes, on K that no split or chunk divides, on
    every row-tile size and both of KD's paths: against float64 (NaN-poisoned output), and bit for
    bit the same on a second and a third launch (the splits of K are summed in a fixed order,
    never by atomics)."""
    import torch

    M, N, K = shape
    a, b = bench.random_inputs(M, N, K, seed=M + N + K)
    outs = []
    for _ in range(3):
        out = bench.poisoned(M, N)
        k.launcher(a, b, out)
        torch.cuda.synchronize()
        outs.append(out)
    assert bench.relative_error(outs[0], a.double() @ b.double()) <= bench.TOLERANCE
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0], outs[2])


STREAM_PROBE = """
import sys, torch, cuda_kernels
from study import kernels
from study.measure import bench
k, ext = kernels.get("KD"), cuda_kernels.load()
# the paths a device without tensor copies runs (before sm_90): the streaming GEMV at every M
for M, N, K in [(9, 300, 516), (16, 2052, 1028), (33, 64, 8196), (40, 18948, 3588), (100, 520, 2000)]:
    fn = getattr(ext, k.path_for(M, N, K, "8.9").symbol)
    a, b = bench.random_inputs(M, N, K, seed=M + N + K)
    outs = []
    for _ in range(2):
        out = bench.poisoned(M, N)
        assert fn(a, b, out, 1.0, 0.0) is None
        torch.cuda.synchronize()
        outs.append(out)
    err = bench.relative_error(outs[0], a.double() @ b.double())
    print(M, N, K, "ok" if err <= bench.TOLERANCE and torch.equal(outs[0], outs[1]) else f"wrong {err:.2e}")
print("picks", k.path_for(32, 18944, 3584, "8.9").symbol)
"""


@pytest.mark.gpu
def test_decode_rung_tiles_from_m_9_on_a_device_with_tensor_copies():
    """On sm_90 KD's launcher takes the tiled (warp-specialised) kernel from M = 9, the streaming
    one below."""
    import torch

    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the tiled path needs sm_90 (tensor copies)")
    k = kernels.get("KD")
    ran = {}
    for M in (8, 9, 32):
        a, b = bench.random_inputs(M, 1024, 1024, seed=M)
        out = bench.poisoned(M, 1024)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            k.launcher(a, b, out)
            torch.cuda.synchronize()
        ran[M] = sorted({e.key for e in prof.key_averages() if e.key.startswith("kd_")})
    assert ran == {8: ["kd_gemv_m8"], 9: ["kd_gemm_m16"], 32: ["kd_gemm_m32"]}, ran


@pytest.mark.gpu
def test_decode_rung_streams_every_m_where_it_does_not_tile():
    """Where the tiled path cannot run (no tensor copies: before sm_90) KD streams B at every M, in
    row tiles of at most 8 rows: the streaming kernels the registry picks there, run here."""
    *lines, picks = run_child(STREAM_PROBE)
    assert len(lines) == 5 and all(line.endswith(" ok") for line in lines), lines
    assert picks == "picks kd_gemv_m8", picks  # M = 32 in row tiles of 8, no tiled kernel


OOM_PROBE = """
import torch, cuda_kernels
from study import kernels
from study.measure import bench
M, N, K = 32, 18944, 3584
fn = getattr(cuda_kernels.load(), kernels.get("KD").path_for(M, N, K, "9.0").symbol)
a, b = bench.random_inputs(M, N, K, seed=5)
c = bench.poisoned(M, N)
hold, size = [], 1 << 30
while size >= 1 << 20:  # the device filled to within about a MiB
    try:
        hold.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        size //= 2
failed = fn(a, b, c, 1.0, 0.0)
del hold  # memory back before anything else runs: checking C needs some too
torch.cuda.empty_cache()
print(repr(failed), bool(torch.isnan(c).all()))
print(repr(fn(a, b, c, 1.0, 0.0)), bench.relative_error(c, a.double() @ b.double()) <= bench.TOLERANCE)
"""


@pytest.mark.gpu
def test_decode_rung_reports_a_workspace_it_cannot_allocate():
    """KD's parts of K need a workspace (grown on first use, two slots of 32 x 144 floats a block:
    4.9 MB at decode b32 on 132 SMs, reserved though every block there has a whole tile); on a
    full device the binding returns the allocator's error and C is left unwritten, and once memory
    is free again the next call allocates it and computes right."""
    import torch

    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("at decode b32 only the tiled path (sm_90) needs a workspace")
    failed, after = run_child(OOM_PROBE)
    assert failed == "'out of memory' True", failed
    assert after == "None True", after


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 4096, 4100), (1, 64, 65536), (8, 1000, 36), (9, 300, 516),
                                   (16, 2052, 1028), (40, 18948, 3588), (100, 520, 2000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_decode_rung_accumulates_into_c_with_beta(shape):
    """KD's epilogues with beta != 0 on both paths, on tiles stored whole and on tiles whose parts
    of K are added by the block that finishes last (up to 16 parts at 1 x 64 x 65536)."""
    import torch

    import cuda_kernels

    M, N, K = shape
    cc = ".".join(map(str, torch.cuda.get_device_capability()))
    fn = getattr(cuda_kernels.load(), kernels.get("KD").path_for(M, N, K, cc).symbol)
    a, b = bench.random_inputs(M, N, K, seed=M + N)
    c0 = torch.randn(M, N, device="cuda", generator=torch.Generator(device="cuda").manual_seed(K))
    c = c0.clone()
    assert fn(a, b, c, 1.5, -0.5) is None
    ref = 1.5 * (a.double() @ b.double()) - 0.5 * c0.double()
    assert bench.relative_error(c, ref) <= bench.TOLERANCE


@pytest.mark.gpu
def test_every_row_names_the_board_that_measured_it():
    import re

    from study.measure import device
    from study.rundata import results

    prov = results.provenance(device.from_device(), results.new_run_id())
    # the device's UUID, as torch gives it: 32 hex digits in the 8-4-4-4-12 groups
    assert re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", prov["board"]), prov["board"]
