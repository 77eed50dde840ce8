"""study.sweep_cuda: the parameters it finds in a .cu, the space it covers, the shared memory of a
variant; on a GPU, both sweeps' measuring path."""

import pytest

from study import kernels
from study.errors import InputError
from study.kernels.registration import source_text
from study.measure import sweep_cuda


def test_parameters_are_read_from_the_cu_and_what_it_includes():
    assert "STAGES" in sweep_cuda.parameters(kernels.get("K11"))
    k12 = sweep_cuda.parameters(kernels.get("K12"))
    assert "COPY_STEPS" in k12 and "STAGES" not in k12
    # the text searched holds the local includes: common.cuh's flag definitions
    assert "#define SGEMM_VEC4" in source_text(kernels.get("K10").source)


def test_a_kernel_without_parameters_is_refused_by_name():
    with pytest.raises(InputError, match="K6: its .cu does not leave BM"):
        sweep_cuda.parameters(kernels.get("K6"))


def test_a_kernel_with_more_arguments_is_refused_and_not_the_default():
    # K13's and K14's kernels take their two tensor maps after the SGEMM arguments: a cubin
    # launched with the eight alone would read garbage maps, so the sweep refuses them and its
    # default is K15, the last rung it can launch
    for kid, symbol in (("K13", "k13_tma_stages"), ("K14", "k14_warp_specialised")):
        k = kernels.get(kid)
        assert "CUtensorMap" in source_text(k.source)
        with pytest.raises(InputError, match=f"{kid}: its kernel {symbol} takes more than SGEMM_KERNEL"):
            sweep_cuda.parameters(k)
    assert kernels.cuda_ladder()[-1] is kernels.get("K15")
    assert sweep_cuda.default_kernel() is kernels.get("K15")


def test_a_kernel_that_runs_another_tile_takes_its_parameters():
    # K15 runs K12's tile: its parameters are K12_* (k12_tile.cuh), its shared memory K12's
    k15, k12 = kernels.get("K15"), kernels.get("K12")
    assert sweep_cuda.prefix(k15) == "K12" and sweep_cuda.prefix(k12) == "K12"
    assert sweep_cuda.parameters(k15) == sweep_cuda.parameters(k12)
    assert {"COPY_STEPS", "B_VEC", "MAXNREG", "FMA_ORDER"} <= set(sweep_cuda.parameters(k15))
    assert sweep_cuda.defines(k15, {"BK": 8}) == {"K12_BK": 8}
    values = sweep_cuda.space(k15, smem_limit=227 * 1024, only=("BK",))[0]
    assert sweep_cuda.smem_bytes(k15, values) == 6 * 16384  # as K12's default (below)


def test_only_varies_the_parameters_it_names():
    assert sweep_cuda.space(kernels.get("K15"), smem_limit=227 * 1024, only=("B_VEC",))[0]["B_VEC"] == 4
    k12 = kernels.get("K12")
    space = sweep_cuda.space(k12, smem_limit=227 * 1024, only=("COPY_STEPS", "B_VEC", "MAXNREG"))
    default = space[0]
    assert (default["B_VEC"], default["MAXNREG"]) == (1, 0)  # K12 copies B 4 bytes at a time
    assert len(space) == 3 * 2 * 5  # COPY_STEPS 1, 2, 4 x B_VEC 1, 4 x MAXNREG 0, 224 .. 248
    for v in space:
        assert {p: v[p] for p in ("BM", "BN", "BK", "TM", "TN", "WARPS_M", "WARPS_N")} == {
            p: default[p] for p in ("BM", "BN", "BK", "TM", "TN", "WARPS_M", "WARPS_N")}
    with pytest.raises(InputError, match="--only STAGES: K12 leaves no STAGES to vary"):
        sweep_cuda.space(k12, smem_limit=227 * 1024, only=("STAGES",))


def test_the_order_of_the_ffmas_is_searched_where_only_names_it():
    """Four orders of a k-step's FFMAs (K12_FMA_ORDER), the file's own (2, rows turning back) first,
    the rest of the tile at its defaults; a search that does not name it keeps the file's order."""
    k15 = kernels.get("K15")
    space = sweep_cuda.space(k15, smem_limit=227 * 1024, only=("FMA_ORDER",))
    assert [v["FMA_ORDER"] for v in space] == [2, 0, 1, 3]
    assert sweep_cuda.defines(k15, space[1])["K12_FMA_ORDER"] == 0
    assert {v["FMA_ORDER"] for v in sweep_cuda.space(k15, smem_limit=227 * 1024, only=("BK",))} == {2}


def test_the_copies_of_a_are_searched_where_only_names_them():
    """A's copies (K12_A_KL lanes along k; the default, 0, means BK: each copy on its own row), how a
    copy finds its source (K12_COPY_ADDR) and A's row padding: 4 x 2 x 2 variants, the file's own
    first (K12's: a copy a row, a pointer a copy); a search that does not name them keeps the
    file's, whatever BK it tries."""
    k12 = kernels.get("K12")
    space = sweep_cuda.space(k12, smem_limit=227 * 1024, only=("A_KL", "COPY_ADDR", "PAD"))
    assert len(space) == 16
    assert (space[0]["A_KL"], space[0]["COPY_ADDR"], space[0]["PAD"]) == (0, 0, 4)
    assert {(v["A_KL"], v["COPY_ADDR"], v["PAD"]) for v in space} == {
        (kl, ca, pad) for kl in (0, 2, 4, 8) for ca in (0, 1) for pad in (4, 8)}
    assert sweep_cuda.defines(k12, next(v for v in space if v["A_KL"] == 2))["K12_A_KL"] == 2
    plain = sweep_cuda.space(k12, smem_limit=227 * 1024, only=("BK",))
    assert {v["BK"] for v in plain} == {8, 16}
    assert {(v["A_KL"], v["COPY_ADDR"], v["PAD"]) for v in plain} == {(0, 0, 4)}


def test_the_copies_of_b_along_a_row_are_searched_where_only_names_them():
    """B_RUN: 0 (the tile's own lanes), 2 or 4 copies of B a thread takes along one row; K15's 4
    sixteen-byte copies a phase allow each, K12's 16 four-byte ones too."""
    for kid in ("K15", "K12"):
        space = sweep_cuda.space(kernels.get(kid), smem_limit=227 * 1024, only=("B_RUN",))
        assert [v["B_RUN"] for v in space] == [0, 2, 4]
    assert sweep_cuda.defines(kernels.get("K15"), {"B_RUN": 4}) == {"K12_B_RUN": 4}


def test_k12_space_searches_where_the_copies_sit():
    k = kernels.get("K12")
    space = sweep_cuda.space(k, smem_limit=227 * 1024)
    keys = [tuple(sorted(v.items())) for v in space]
    assert len(keys) == len(set(keys))
    assert {v["COPY_STEPS"] for v in space} == {1, 2, 4}
    assert {v["BK"] for v in space} == {8, 16}
    # the copy width, the register budget and the FFMAs' order only where --only names them
    assert {(v["B_VEC"], v["MAXNREG"], v["FMA_ORDER"]) for v in space} == {(1, 0, 2)}
    for v in space:
        assert 32 * v["WARPS_M"] * v["WARPS_N"] in (128, 256)
        assert sweep_cuda.lane_map_ok(v["BM"], v["BN"], v["TM"], v["TN"], v["WARPS_M"], v["WARPS_N"])


@pytest.mark.parametrize("values, expected", [
    # A stage 16 x (128 + 4) x 4 B = 8448, B stage 16 x 256 x 4 B = 16384: a 16 KiB stride; four
    # stages and two strides of slack to align the base
    (dict(BM=128, BN=256, BK=16, TM=16, TN=8, WARPS_M=2, WARPS_N=4, COPY_STEPS=4), 6 * 16384),
    # BK = 8: A 4224 B, B 8192 B: an 8 KiB stride
    (dict(BM=128, BN=256, BK=8, TM=16, TN=8, WARPS_M=2, WARPS_N=4, COPY_STEPS=4), 6 * 8192),
    # 256 x 128 x 8: A 8 x 260 x 4 = 8320 B, just over 8 KiB
    (dict(BM=256, BN=128, BK=8, TM=16, TN=8, WARPS_M=4, WARPS_N=2, COPY_STEPS=2), 6 * 16384),
])
def test_k12_shared_memory_follows_its_stage_stride(values, expected):
    assert sweep_cuda.smem_bytes(kernels.get("K12"), values) == expected


@pytest.mark.gpu
def test_both_sweeps_check_and_time_one_variant_beside_cublas(tmp_path):
    """The measuring path of both sweeps on the GPU: the CUDA template's default variant and one
    Triton configuration, each checked against float64 and timed, beside cuBLAS rows."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from study.measure import bench, sweep
    from study.rundata import rundir
    from study.rundata.results import read

    shape = (256, 256, 128)
    k12 = kernels.get("K12")
    values = sweep_cuda.space(k12)[0]
    sw = sweep_cuda.Sweep(k12, shape, tmp_path / "cuda", target_s=0.01)
    sw.time_cublas()
    row = sw.measure("1", values, sweep_cuda._compile(k12, values, sweep_cuda.arch.of_device().sm))
    assert row["status"] == "ok" and row["rel_err"] <= bench.TOLERANCE
    assert row["pct_cublas"] == pytest.approx(100 * sw.cublas_ms / row["ms"])
    st = sweep.Sweep(shape, tmp_path / "triton", target_s=0.01)
    st.time_cublas()
    cfg = (64, 64, 32, 4, 2, 8, None)
    trow = st.measure("1", cfg, sweep._compile((shape, cfg))[1:])
    assert trow["status"] == "ok" and trow["rel_err"] <= bench.TOLERANCE
    for out, name in ((tmp_path / "cuda", rundir.SWEEP_CUDA), (tmp_path / "triton", rundir.SWEEP)):
        rows = read(rundir.RunDir(out).file(name))
        assert list(rows["round"].astype(str)) == ["cublas", "1"]
        assert list(rows["M"]) == [256, 256] and rows["commit"].notna().all()
    cuda_rows = read(rundir.RunDir(tmp_path / "cuda").file(rundir.SWEEP_CUDA))
    assert list(cuda_rows["kernel"]) == [kernels.BASELINE.id, "K12"]
