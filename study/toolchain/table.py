"""The SASS table: every CUDA and Triton kernel of the registry compiled for one arch, one row for
each function a kernel launches (its paths: most kernels have one).

Per kernel: the opcode histogram of the whole kernel and of its main loop, loads per FFMA in
the loop, what the loop's scheduling words say (stall cycles, waits, reuse flags), registers,
shared memory, local memory (spills), threads and theoretical occupancy, with the toolchain
versions that produced them (conventions in :mod:`study.toolchain.sass`). No GPU is needed:
nvcc and Triton compile for the named arch.
"""

from __future__ import annotations

import contextlib
import json
import math
import subprocess
from collections.abc import Sequence

from study import arch as arches
from study import kernels as registry
from study.errors import InputError
from study.toolchain import l1, tools
from study.toolchain.compile import CompileError, compile_cuda, compile_triton, resources_cuda
from study.toolchain.occupancy import occupancy_limits
from study.toolchain.sass import (
    SCHEDULE_KEYS,
    Instr,
    dump_sass,
    histogram,
    loop_histogram,
    loop_schedule,
    main_loop,
    resources_cubin,
    spill_bytes,
)
from study.toolchain.triton_child import TritonChild

# the shared loads' wavefronts a pass of the loop takes, from their lanes (loop_table)
LANES_KEYS = ("loop_lds_wavefronts", "loop_lds_unknown")
TABLE_COLUMNS = [
    "kernel", "impl", "arch", "symbol",
    "FFMA", "LDS32", "LDS64", "LDS128", "LDS", "LDSM", "LDG32", "LDG64", "LDG128", "LDG256", "LDG",
    "LDGSTS", "STS", "STSM", "BAR", "HMMA", "HGMMA", "LDL", "STL", "total",
    "loop_FFMA", "loop_LDS32", "loop_LDS64", "loop_LDS128", "loop_LDS", "loop_LDSM", "loop_LDG32",
    "loop_LDG64", "loop_LDG128", "loop_LDG256", "loop_LDG", "loop_LDGSTS", "loop_STS", "loop_STSM",
    "loop_BAR", "loop_LDL", "loop_STL", "loop_total",
    "loop_lds_per_ffma", "loop_ldg_per_ffma", *SCHEDULE_KEYS, *LANES_KEYS,
    "registers", "smem_bytes", "spills", "threads", "num_stages", "config",
    "occupancy_pct", "occupancy_limited_by", "nvcc", "triton", "error",
]
_TEXT_COLUMNS = ("symbol", "config", "occupancy_limited_by", "nvcc", "triton", "error")


def _check_tools(kernels: list) -> None:
    """Raise SassUnavailable (a ready skip message) when a needed tool is missing."""
    if any(k.impl in ("cuda", "triton") for k in kernels):
        tools.require_cuobjdump()
    if any(k.impl == "cuda" for k in kernels):
        tools.require_nvcc()


def kernel_sass(kernel, arch="sm_90", config: dict | None = None, path=None, child=None) -> dict:
    """One table row for one CUDA or Triton kernel (raises CompileError on failure); for a CUDA
    kernel, of one of its paths (``path``, default its only one: ``Kernel.paths``). ``child``: the
    ``TritonChild`` a Triton kernel is compiled in (None: in this process).

    ``arch``: anything :func:`study.arch.get` takes. ``config``: the configuration to compile an
    autotuned Triton kernel with (see ``compile_triton``); the row's ``config`` holds the one
    compiled, as JSON text.
    """
    a = arches.get(arch)
    row: dict = {"kernel": kernel.id, "impl": kernel.impl, "arch": a.sm}
    if config is not None and not (kernel.impl == "triton" and kernel.tuned):
        raise InputError(f"{kernel.id} is not an autotuned kernel: it takes no config (got {config})")
    if kernel.impl == "cuda":
        if path is None:
            (path,) = kernel.paths
        cubin = compile_cuda(path, a)
        symbol = path.symbol
        ptxas = resources_cuda(path, a)
        registers, smem, threads = ptxas["registers"], ptxas["smem_bytes"], path.threads
    elif kernel.impl == "triton":
        t = compile_triton(kernel, a, config, child=child)
        cubin, symbol, smem = t["cubin"], t["name"], t["smem_bytes"]
        registers = None  # from the cubin below
        threads = t["threads"] or kernel.threads
        row["num_stages"] = t["num_stages"]
        row["config"] = json.dumps(t["config"], sort_keys=True) if t["config"] else ""
    else:
        raise CompileError(f"{kernel.id}: no SASS for impl {kernel.impl!r}")
    usage = resources_cubin(cubin, symbol)
    if registers is None:
        registers = usage.get("REG")
    instrs = dump_sass(cubin, symbol)
    row["symbol"] = symbol
    row.update(histogram(instrs))
    row.update(loop_histogram(instrs))
    row.update(loop_schedule(instrs))
    row.update(loop_table(instrs, main_loop(instrs)))
    row.update(registers=registers, smem_bytes=smem, spills=spill_bytes(usage), threads=threads)
    try:  # the arch is known (checked above): only a missing resource figure leaves a NaN
        occ = occupancy_limits(int(registers), int(smem or 0), int(threads), a)
        row["occupancy_pct"], row["occupancy_limited_by"] = occ["occupancy_pct"], occ["limited_by"]
    except (TypeError, ValueError):
        row["occupancy_pct"], row["occupancy_limited_by"] = math.nan, ""
    row["error"] = ""
    return row


def sass_table(kernels=None, arch="sm_90", configs: dict[str, dict] | None = None, child=None):
    """One row per CUDA and Triton kernel (cuBLAS skipped): histograms, main-loop ratios, resources.

    ``kernels``: Kernel objects, ids, a "K3,K6" spec, or None for the whole registry.
    ``arch``: "sm_90", "9.0", 90, ... (:func:`study.arch.get`); one outside the arch table is
    an InputError before anything is compiled.
    ``configs``: kernel id -> the configuration an autotuned kernel was measured with (the
    autotuner's dict: BM, BN, BK, GROUP_M, num_warps, num_stages, e.g. the ``config`` JSON of
    its results.csv row), passed to ``compile_triton`` so that the SASS row describes the
    measured kernel. An autotuned kernel without an entry is compiled with the winner this
    process tuned for 4096^3, else its module's default configuration -- which need not be what
    a run measured. Ids of kernels not in ``kernels`` are ignored; an entry for a kernel that is
    not autotuned is an InputError.
    Raises ``SassUnavailable`` (message: "SASS skipped: ...") when nvcc/cuobjdump are missing;
    a kernel that fails to compile gets a row with ``error`` set and the rest carry on. Triton
    kernels are compiled in ``child`` (a ``TritonChild``; None: one of this table's own), so that a
    compiler that aborts on the target (LLVM's "Cannot select") is that kernel's error row.

    Resources: ``registers`` per thread; ``smem_bytes`` the kernel's own shared memory per block
    (CUDA: static, from ptxas; Triton: its dynamic allocation), without the 1 KB the driver
    reserves; ``spills`` local memory in bytes per thread, STACK + LOCAL of ``cuobjdump
    -res-usage`` for CUDA and Triton alike, 0 meaning none (with ``LDL``/``STL`` and
    ``loop_LDL``/``loop_STL`` the local-memory instructions; see :mod:`study.toolchain.sass`);
    ``occupancy_pct`` from ``occupancy_limits``. Provenance: ``config`` the compiled
    configuration of an autotuned kernel (JSON text, "" for the others); ``nvcc`` and
    ``triton`` the versions of the toolchain present (the same on every row, "" when absent):
    nvcc compiles the CUDA rows, Triton (with the ptxas it bundles) the Triton rows.
    """
    a = arches.get(arch)
    import pandas as pd

    picked = [k for k in registry.resolve(kernels) if k.impl in ("cuda", "triton")]
    configs = dict(configs or {})
    for k in picked:
        if k.id in configs and not (k.impl == "triton" and k.tuned):
            raise InputError(f"configs names {k.id}, which is not an autotuned kernel")
    _check_tools(picked)
    rows = []
    with _child(child) as child:  # a compiler abort ends the child, not the run: one kernel's row
        for k in picked:
            try:
                paths = k.paths if k.impl == "cuda" else [None]
            except InputError as e:  # a .cu whose SGEMM_REGISTER lines cannot be read: its row says why
                rows.append({"kernel": k.id, "impl": k.impl, "arch": a.sm, "error": str(e)})
                continue
            for path in paths:
                try:
                    rows.append(kernel_sass(k, a, configs.get(k.id), path, child))
                except (CompileError, tools.SassUnavailable, OSError, subprocess.SubprocessError) as e:
                    what = path or k
                    rows.append({"kernel": k.id, "impl": k.impl, "arch": a.sm, "symbol": what.symbol,
                                 "threads": what.threads, "error": str(e)})
    df = pd.DataFrame(rows)
    df["nvcc"] = tools.nvcc_version()
    df["triton"] = tools.triton_version()
    for col in TABLE_COLUMNS:
        if col not in df.columns:
            df[col] = "" if col in _TEXT_COLUMNS else math.nan
        elif col in _TEXT_COLUMNS:
            df[col] = df[col].fillna("")
    extra = [c for c in df.columns if c not in TABLE_COLUMNS]
    return df[TABLE_COLUMNS + extra]


def _child(given):
    """``given``, left open for its owner, or a child of the caller's own, closed after it."""
    return contextlib.nullcontext(given) if given is not None else TritonChild()


# ---------------------------------------------------------------------------------------------
# Load widths at the stride experiment's shapes

WIDTH_OPS = ("LDG", "LDGSTS")
WIDTH_COLUMNS = ["kernel", "impl", "arch", "M", "N", "K", "specialised",
                 *[f"loop_{op}{w}" for op in WIDTH_OPS for w in (32, 64, 128)], "error"]


def load_widths(instrs) -> dict[str, int]:
    """Global loads of the main loop by width: ``loop_LDG32/64/128`` and ``loop_LDGSTS32/64/128``
    (cp.async copies 4, 8 or 16 bytes per thread)."""
    out = {f"loop_{op}{w}": 0 for op in WIDTH_OPS for w in (32, 64, 128)}
    for ins in main_loop(instrs):
        if ins.base in WIDTH_OPS and ins.width in (32, 64, 128):
            out[f"loop_{ins.base}{ins.width}"] += 1
    return out


def stride_table(kernels, shapes, arch="sm_90", configs: dict[str, dict] | None = None, child=None):
    """The main loop's global-load widths of each kernel at each of ``shapes``, compiled as a launch
    at that shape would be (no GPU needed).

    A Triton kernel is compiled anew per shape: Triton specialises its integer arguments on
    divisibility by 16, so at n = 4097 (or 4100) the strides lose their 128-bit loads. A CUDA
    kernel is one binary for every shape (``specialised`` False): its load widths are the code's,
    and a shape it refuses (K6…K10 at 4097) is a row with ``error`` set. Same tool needs, errors
    and ``child`` as ``sass_table``.
    """
    a = arches.get(arch)
    picked = [k for k in registry.resolve(kernels) if k.impl in ("cuda", "triton")]
    _check_tools(picked)
    configs = configs or {}
    rows = []
    with _child(child) as child:
        for k in picked:
            for shape in shapes:
                row = {"kernel": k.id, "impl": k.impl, "arch": a.sm, "M": shape[0], "N": shape[1],
                       "K": shape[2], "specialised": k.impl == "triton", "error": ""}
                try:
                    if k.impl == "cuda":
                        refused = k.constraint_error(*shape)
                        if refused:
                            raise CompileError(refused)
                        path = k.path_for(*shape, a.cc)
                        cubin, symbol = compile_cuda(path, a), path.symbol
                    else:
                        t = compile_triton(k, a, configs.get(k.id) if k.tuned else None, shape=shape,
                                           child=child)
                        cubin, symbol = t["cubin"], t["name"]
                    row.update(load_widths(dump_sass(cubin, symbol)))
                except CompileError as e:
                    row["error"] = str(e)
                rows.append(row)
    import pandas as pd

    return pd.DataFrame(rows, columns=WIDTH_COLUMNS)


def loop_table(instrs: Sequence[Instr], loop: Sequence[Instr]) -> dict[str, float]:
    """For the SASS table: ``loop_lds_wavefronts`` the shared-load wavefronts (LDS, LDSM) of one
    pass of the main loop by one warp, where every load's lanes are known, else NaN;
    ``loop_lds_unknown`` the loads whose addresses are not known from the SASS. (ncu's
    ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld`` over the passes and warps measures the
    same count.)"""
    if not loop:
        return dict.fromkeys(LANES_KEYS, float("nan"))
    cycles = l1.l1_cycles(instrs, loop)
    loads = [c for i, c in zip(loop, cycles) if i.base in ("LDS", "LDSM") and i.pred != "@!PT"]
    unknown = sum(1 for c in loads if c is None)
    return {"loop_lds_wavefronts": float("nan") if unknown else float(sum(loads)),
            "loop_lds_unknown": unknown}
