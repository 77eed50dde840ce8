"""study.arch: the one table of SM limits, and what reads it (occupancy, TA's budget). CPU only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from study import arch
from study.errors import InputError

REPO = Path(__file__).resolve().parent.parent
KB = 1024


def test_every_entry_has_sane_numbers():
    assert list(arch.ARCHS) == ["sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_103",
                                "sm_110", "sm_120", "sm_121"]
    for sm, a in arch.ARCHS.items():
        assert a.sm == sm and a.sm == "sm_" + a.cc.replace(".", "") and a.number == int(sm[3:])
        assert a.family
        assert a.fp32_lanes_per_sm in (64, 128)
        assert a.max_warps_per_sm in (32, 48, 64) and a.max_threads_per_sm == 32 * a.max_warps_per_sm
        assert 16 <= a.max_blocks_per_sm <= 32
        assert a.regs_per_sm == a.max_regs_per_block == 64 * KB and a.max_regs_per_thread == 255
        assert a.reg_granularity == 256 and a.sub_partitions == 4 and a.max_threads_per_block == 1024
        assert 64 * KB <= a.smem_per_sm <= 228 * KB
        # what a block may opt in to plus the driver's reservation fits in the SM
        assert a.smem_per_block + a.smem_reserved_per_block <= a.smem_per_sm
        assert a.smem_reserved_per_block == (0 if sm == "sm_75" else KB)
        assert a.smem_granularity == (256 if sm == "sm_75" else 128)
        assert a.smem_per_sm % a.smem_granularity == 0


def test_get_accepts_every_spelling_of_sm_90():
    h = arch.get("sm_90")
    assert (h.fp32_lanes_per_sm, h.max_warps_per_sm, h.max_blocks_per_sm) == (128, 64, 32)
    assert (h.smem_per_block, h.smem_per_sm) == (227 * KB, 228 * KB)
    assert arch.get("9.0") is arch.get(90) is arch.get("90") is arch.get(" sm_90 ") is arch.get(h) is h
    assert arch.get("12.0").sm == "sm_120" and arch.get(121).cc == "12.1" and arch.get("10.3").sm == "sm_103"


@pytest.mark.parametrize("cc, warps, blocks, smem_sm, smem_block", [
    ("sm_75", 32, 16, 64, 64), ("sm_80", 64, 32, 164, 163), ("sm_86", 48, 16, 100, 99),
    ("sm_87", 48, 16, 164, 163), ("sm_89", 48, 24, 100, 99), ("sm_100", 64, 32, 228, 227),
    ("sm_103", 64, 32, 228, 227), ("sm_110", 48, 24, 228, 227), ("sm_120", 48, 24, 100, 99),
    ("sm_121", 48, 24, 100, 99),
])
def test_the_programming_guide_figures(cc, warps, blocks, smem_sm, smem_block):
    a = arch.get(cc)
    assert (a.max_warps_per_sm, a.max_blocks_per_sm) == (warps, blocks)
    assert (a.smem_per_sm, a.smem_per_block) == (smem_sm * KB, smem_block * KB)


@pytest.mark.parametrize("bad", ["sm_52", "sm_88", "sm_70", "5.2", 52, "sm_90a", "compute_90", "", "sm_",
                                 None, True])
def test_unknown_arch_is_one_input_error_naming_it(bad):
    with pytest.raises(InputError) as e:
        arch.get(bad)
    msg = str(e.value)
    assert "\n" not in msg and repr(bad) in msg and "sm_75" in msg and "sm_121" in msg


def test_parse_sm_takes_ascii_sm_names_in_the_table_only():
    assert arch.parse_sm("sm_90") == "sm_90" and arch.parse_sm("sm_120") == "sm_120"
    # "٩٠" (Arabic-Indic digits) passes str.isdigit(); it is not an arch name
    assert "sm_٩٠"[3:].isdigit()
    for bad in ("sm_٩٠", "sm_９０", "9.0", "90", "sm90", "SM_90", "sm_90a", "sm_52", "sm_", "sm_-90"):
        with pytest.raises(InputError) as e:
            arch.parse_sm(bad)
        assert repr(bad) in str(e.value) and "\n" not in str(e.value), bad


def test_fp32_lanes_cover_the_older_capabilities_too():
    assert arch.fp32_lanes("9.0") == arch.fp32_lanes("sm_90") == 128
    assert arch.fp32_lanes("7.5") == arch.fp32_lanes("8.0") == 64
    assert arch.fp32_lanes("3.5") == 192 and arch.fp32_lanes("7.0") == 64 and arch.fp32_lanes("10.1") == 128
    with pytest.raises(InputError, match="'4.2'.*known: 3.0, "):
        arch.fp32_lanes("4.2")
    from study.rundata.gpu import fp32_lanes_per_sm

    assert fp32_lanes_per_sm("12.0") == 128


def test_of_device_without_a_gpu_says_so():
    import torch

    if torch.cuda.is_available():
        assert arch.of_device().sm == "sm_{}{}".format(*torch.cuda.get_device_capability(0))
    else:
        with pytest.raises(InputError, match="no CUDA device"):
            arch.of_device()


# ------------------------------------------------------------------ TA's shared-memory budget


def test_ta_budget_is_a_share_of_the_limit_it_is_given():
    from triton_kernels import ta_autotuned as ta

    assert ta.smem_budget(arch.get("sm_90").smem_per_block) == 200 * KB  # the H200's 200 of 227 KB
    assert ta.smem_budget(99 * KB) == 99 * KB * 200 // 227
    if len(ta.CONFIGS) == 1:
        pytest.skip("TRITON_INTERPRET=1 in this process: the space is reduced to one config")
    import torch

    if not torch.cuda.is_available():
        assert ta.device_smem_limit() is None  # nothing to ask: no pruning for shared memory
    h200 = ta.candidates(4096, 4096, 4096, smem_limit=arch.get("sm_90").smem_per_block)
    turing = ta.candidates(4096, 4096, 4096, smem_limit=arch.get("sm_75").smem_per_block)
    budget = ta.smem_budget(64 * KB)

    def need(c):
        return (c["BM"] + c["BN"]) * c["BK"] * 4 * max(1, c["num_stages"] - 1)

    assert turing and len(turing) < len(h200) and all(need(c) <= budget for c in turing)
    assert any(need(c) > budget for c in h200)
    # an AOT compile for a target is refused a configuration that could not launch there
    big = {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}
    assert ta.aot_spec(config=big, smem_limit=arch.get("sm_90").smem_per_block).args["BM"] == 128
    with pytest.raises(ValueError, match="needs 131072 B"):
        ta.aot_spec(config=big, smem_limit=arch.get("sm_120").smem_per_block)


# ------------------------------------------------------------------ the kernel packages stand alone


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in
              ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)):
            names.append(str(node.args[0].value))
    return names


@pytest.mark.parametrize("package", ["triton_kernels", "cuda_kernels"])
def test_kernel_packages_import_nothing_of_the_study(package):
    files = sorted((REPO / package).rglob("*.py"))
    assert files
    for path in files:
        bad = [n for n in _imports(path) if n == "study" or n.startswith("study.")]
        assert not bad, f"{path.relative_to(REPO)} imports {bad}"
