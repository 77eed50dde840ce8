"""Every table of a run directory, declared once: its name, its file, its columns, its text
columns and what writes it.

A *measured* table is written by a measuring tool (``producer`` names it) and only ever appended
to where ``append_only``; a *derived* table is computed by ``study.derive`` from the measured ones
and rewritten by every derivation. A derived table's ``producer`` is the function of
``study.derive`` that computes it (``"tables.twins"`` is ``study.derive.tables.twins``), called
with the derivation's values named in ``inputs`` (an input ending in ``?`` may be absent, None;
any other absent input leaves the table out of the run); an empty ``producer`` takes the
derivation's value of the table's own name (the model steps, whose results several tables
share). ``columns`` are the columns the table holds, in order, where the producer fixes them (the
producers build their frames from these), or the leading columns every reader may rely on where
the rest varies (``open``). Every column not in ``text`` is a number.

The run directory (``study.rundata.rundir``), the derivation (``study.derive``) and the report
(``study.report.load``) all read these declarations: adding a table is one entry here and its
producer.
"""

from __future__ import annotations

from dataclasses import dataclass

_PROVENANCE = ("gpu", "cc", "torch", "triton", "cuda", "driver", "commit", "host", "board", "run_id",
               "timestamp")
# ``board``: the UUID of the device that measured a row (the same GPU model may be several boards: a
# run resumed across sessions says which rows each one timed); tables written before it existed
# lack it, so no reader requires it


def _unboarded(columns: tuple[str, ...]) -> tuple[str, ...]:
    """``columns`` less ``board``, which tables written before it existed lack."""
    return tuple(c for c in columns if c != "board")


@dataclass(frozen=True)
class Table:
    name: str
    file: str
    columns: tuple[str, ...]
    text: tuple[str, ...] = ()
    producer: str = ""
    inputs: tuple[str, ...] = ()
    measured: bool = False
    append_only: bool = False
    open: bool = False  # more columns than ``columns`` may follow (they vary with the inputs)
    # a table of a panel a run may not have measured (the decode panel): where it is absent the
    # report says nothing of it (no "not in this run" note, no section, no figure)
    optional: bool = False
    needs: tuple[str, ...] | None = None  # the columns a reader needs, where fewer than ``columns``

    @property
    def required(self) -> tuple[str, ...]:
        """The columns a reader may rely on: ``needs`` where given (a measured table written by an
        older tool), else ``columns``."""
        return self.columns if self.needs is None else self.needs

    def is_text(self, column: str) -> bool:
        return column in self.text


def _t(name: str, columns, text=(), producer: str = "", inputs=(), **flags) -> Table:
    return Table(name, f"{name}.csv", tuple(columns), tuple(text), producer, tuple(inputs), **flags)


# --- measured: written by the measuring tools, never by derive ----------------------------------
# a results row: what was measured (``pass`` which pass of the run, experiments.PASSES; ``ld`` the
# leading dimension of A, B and C where the operands were padded, empty where contiguous; ``symbol``
# the function the kernel launched at that shape, ``Kernel.path_for``, empty for cuBLAS), then where
# it came from
RESULTS_MEASURED = (
    "experiment", "label", "pass", "kernel", "impl", "M", "N", "K", "ld", "ms", "p20_ms", "p80_ms", "reps",
    "rel_err", "sm_clock_mhz", "clock_samples", "config", "symbol",
)
RESULTS_PROVENANCE = (
    "gpu", "sms", "max_sm_clock_mhz", "mem_clock_mhz", "bus_width_bits", "cc", "torch", "triton", "cuda",
    "driver", "commit", "host", "board", "run_id", "timestamp",
)
# the stall reasons of ncu's per-instruction page (its ``stall_<reason>`` columns), as it names them
SOURCE_STALLS = ("barrier", "branch_resolving", "dispatch", "drain", "imc", "lg", "long_sb", "math", "membar",
                 "mio", "misc", "no_inst", "not_selected", "selected", "short_sb", "sleep", "tex", "wait")
DECODE_READ = "read"  # the kernel of a shape's read-roof row in decode.csv
DECODE_OPERATOR = "OP"  # the operator sgemm_ledgers.mm, measured beside the registry's kernels
# a decode panel row (study.measure.decode, docs/method.md#decode-panel): one (shape, M, kernel), or
# a shape's read roof (kernel DECODE_READ, M empty); times in microseconds; ``status`` "ok",
# "wrong" (over the tolerance: no time) or "refused" (``note`` says why: no time); ``calls`` the
# calls behind ``e2e_us``
DECODE_MEASURED = (
    "shape", "N", "K", "M", "kernel", "status", "note", "rel_err", "gpu_us", "p20_us", "p80_us", "reps",
    "e2e_us", "calls", "symbol", "config",
)
# a row of the decode panel's host pass (study.measure.decode_host): one (shape, M, kernel) in one
# pass (``pass`` 0, 1, ...); the host's cost of a call in microseconds, the median batch of
# ``batches`` batches of ``calls`` calls (and the fastest and slowest batch), the thread's CPU time;
# ``status`` "ok", "unheld" or "refused" (``note`` says why: no time)
DECODE_HOST_MEASURED = (
    "shape", "N", "K", "M", "kernel", "pass", "status", "note", "host_us", "host_min_us", "host_max_us",
    "cpu_us", "batches", "calls",
)
# a row of the accuracy ledger (study.measure.accuracy, docs/method.md#accuracy-ledger): one kernel's
# error at one (distribution ``dist``, K) with M = N fixed (``role`` "error"), or its time at one
# shape on standard-normal inputs in one pass of several (``role`` "speed", ``pass`` 1, 2, ...,
# ``ms`` with p20/p80); ``precision`` the kernel's (fp32, tf32, tf32x3); ``max_ulp`` the largest
# error in units of the FP32 result's ulp; ``status`` "ok", "wrong" (not finite, or over the
# check's bound before timing) or "refused"
ACCURACY_MEASURED = (
    "kernel", "precision", "role", "dist", "M", "N", "K", "pass", "status", "note", "rel_err", "max_ulp",
    "ms", "p20_ms", "p80_ms", "reps", "config",
)
MEASURED = (
    _t("results", RESULTS_MEASURED + RESULTS_PROVENANCE, ("experiment", "label", "kernel", "impl", "config",
       "symbol") + _PROVENANCE, "study.measure.plan:run_plan", measured=True, append_only=True,
       needs=RESULTS_MEASURED + _unboarded(RESULTS_PROVENANCE)),
    _t("clocks", ("run_id", "experiment", "label", "pass", "kernel", "M", "N", "K", "t_s", "sm_clock_mhz"),
       ("run_id", "experiment", "label", "kernel"), "study.measure.plan:run_plan", measured=True,
       append_only=True, needs=("kernel", "t_s", "sm_clock_mhz")),
    Table("gpu", "gpu.json", (), producer="study.run:measure", measured=True),
    _t("sass", ("kernel", "impl", "arch", "symbol"), ("kernel", "impl", "arch", "symbol", "config",
       "occupancy_limited_by", "nvcc", "triton", "error"), "study.toolchain.table:sass_table", measured=True,
       open=True, needs=("kernel",)),
    _t("sass_strides", ("kernel", "impl", "arch", "M", "N", "K", "specialised"),
       ("kernel", "impl", "arch", "specialised", "error"), "study.toolchain.table:stride_table",
       measured=True, open=True),
    _t("ncu", ("kernel", "M", "N", "K", "launch", "ncu_kernel", "symbol", "config", "metric", "unit", "value",
               "ncu", "gpu", "driver", "board", "commit", "run_id", "timestamp"),
       ("kernel", "ncu_kernel", "symbol", "config", "metric", "unit", "ncu", "gpu", "driver", "board",
        "commit", "run_id", "timestamp"),
       "study.measure.profile:profile", measured=True, append_only=True,
       needs=("kernel", "M", "N", "K", "metric", "value")),
    # per-instruction counters (``python -m study.profile --source``, docs/method.md#source-counters):
    # one row per (kernel, shape, opcode) of one ncu run with SourceCounters and warp-state sampling
    # at every cycle: the opcode's SASS instructions, the warp-level instructions executed, the
    # shared-memory wavefronts they took (and would take without bank conflicts), and the warps'
    # stall samples on them, in all and by reason (ncu's source-page columns, ``stall_<reason>``)
    _t("ncu_source", ("kernel", "M", "N", "K", "ncu_kernel", "symbol", "config", "opcode", "instructions",
                      "executed", "wavefronts_shared", "wavefronts_shared_ideal", "samples",
                      *(f"stall_{r}" for r in SOURCE_STALLS), "ncu", "gpu", "driver", "board", "commit",
                      "run_id", "timestamp"),
       ("kernel", "ncu_kernel", "symbol", "config", "opcode", "ncu", "gpu", "driver", "board", "commit",
        "run_id", "timestamp"), "study.measure.profile:profile_source", measured=True, append_only=True,
       needs=("kernel", "M", "N", "K", "opcode", "executed", "wavefronts_shared", "samples")),
    _t("sweep", ("round", "BM", "BN", "BK", "num_warps", "num_stages", "GROUP_M", "maxnreg", "status", "regs",
                 "spills", "ms", "p20_ms", "p80_ms", "reps", "rel_err", "tflops", "cublas_ms", "pct_cublas",
                 "M", "N", "K", "triton", "gpu", "commit", "timestamp"),
       ("round", "status", "triton", "gpu", "commit", "timestamp"), "study.measure.sweep:run", measured=True,
       append_only=True),
    _t("sweep_cuda", ("round",), ("round", "status", "gpu", "commit", "timestamp", "kernel"),
       "study.measure.sweep_cuda:run", measured=True, append_only=True, open=True),
    _t("bank_probe", ("seed", "loop_instructions", "loop_ffma", "loop_reuse", "loop_bank4", "loop_bank2",
                      "iterations", "threads", "blocks", "ms", "p20_ms", "p80_ms", "reps", "sm_clock_mhz",
                      "gpu", "commit", "timestamp"), ("gpu", "commit", "timestamp"),
       "study.measure.bank_probe:main", measured=True, append_only=True),
    _t("decode", DECODE_MEASURED + RESULTS_PROVENANCE,
       ("shape", "kernel", "status", "note", "symbol", "config") + _PROVENANCE, "study.measure.decode:main",
       measured=True, append_only=True,
       needs=("shape", "N", "K", "M", "kernel", "status", "gpu_us", "e2e_us")),
    _t("decode_host", DECODE_HOST_MEASURED + RESULTS_PROVENANCE,
       ("shape", "kernel", "status", "note") + _PROVENANCE, "study.measure.decode_host:main",
       measured=True, append_only=True, needs=DECODE_HOST_MEASURED + _unboarded(RESULTS_PROVENANCE)),
    _t("accuracy", ACCURACY_MEASURED + RESULTS_PROVENANCE,
       ("kernel", "precision", "role", "dist", "status", "note", "config") + _PROVENANCE,
       "study.measure.accuracy:main", measured=True, append_only=True,
       needs=("kernel", "precision", "role", "dist", "K", "status", "rel_err", "max_ulp", "ms")),
    # a prediction from the SASS and the launch (``python -m study.predict --check DIR --write``):
    # each kernel the model takes at each shape the run timed (``source`` "run") and each point of
    # its decode panel ("panel"), beside the run's median time there; ``note`` why one was not
    # predicted; the Triton that compiled here and the one the run's rows name, and the commit of
    # the code that predicted
    _t("predict_check", ("source", "kernel", "M", "N", "K", "config", "measured_ms", "ms", "error_pct",
                         "issue_pct", "bound", "note", "triton_here", "triton_run", "commit", "timestamp"),
       ("source", "kernel", "config", "bound", "note", "triton_here", "triton_run", "commit", "timestamp"),
       "study.predict.__main__:main", measured=True, optional=True),
)
# the seed GPU's published times and constants, kept beside the reference run (inputs of the replay)
SEED = (
    _t("rtx4090_seed", ("kernel", "M", "N", "K", "ms"), ("kernel",), measured=True),
    Table("rtx4090_seed_gpu", "rtx4090_seed_gpu.json", (), measured=True),
)

# --- derived: written by study.derive only, read by study.report only --------------------------
_LEDGER_TEXT = ("kernel", "impl", "experiment", "label", "config", "symbol") + _PROVENANCE
DERIVED = (
    _t("kernels", ("id", "impl", "order", "idea", "twin", "tile", "threads", "num_stages", "gluon",
                   "meant_for", "roles", "pipelined_twin_of", "req_per_fma", "notes"),
       ("id", "impl", "idea", "twin", "tile", "gluon", "meant_for", "roles", "pipelined_twin_of", "notes"),
       "selection.kernels_table"),
    _t("points", ("experiment", "label", "M", "N", "K", "ld", "role", "order"),
       ("experiment", "label", "role"), "selection.points_table", ("main_shape",)),
    _t("gpu_figures", ("name", "cc", "sms", "fp32_lanes_per_sm", "sm_clock_mhz", "sampled_sm_clock_mhz",
                       "mem_clock_mhz", "bus_width_bits", "l2_bytes", "read_gbps", "read_p20_gbps",
                       "read_p80_gbps", "copy_gbps", "copy_p20_gbps", "copy_p80_gbps",
                       "roof_buffer_bytes", "peak_gflops",
                       "peak_gflops_sampled", "dram_gbps", "cadence_floor", "source"),
       ("name", "cc", "source"), "tables.gpu_figures", ("gpu", "gpu_source")),
    _t("ledgers", ("kernel", "impl", "M", "N", "K", "ms", "gflops", "pct_peak", "pct_cublas", "cadence"),
       _LEDGER_TEXT, open=True),
    _t("model", ("method", "p_ldg", "p_dist", "p_bcast", "p_lds32", "p_lds128", "M", "N", "K", "decimals",
                 "kernels"), ("method", "kernels")),
    _t("loo", ("kernel", "measured_cadence", "predicted_cadence"), ("kernel", "method", "bound"), open=True),
    _t("model_sass", ("kernel", "x_ldg", "x_lds32", "x_lds128", "measured_cadence", "predicted_cadence",
                      "model_error_pct"), ("kernel",)),
    _t("counted_vs_compiled", ("kernel", "counted_lds_per_fma", "counted_lds_bits", "sass_lds_per_fma",
                               "counted_ldg_per_fma", "counted_ldg_bits", "sass_ldg_per_fma", "loop_FFMA",
                               "loop_LDS32", "loop_LDS128", "loop_LDG32", "loop_LDG128", "lds_ratio",
                               "ldg_ratio", "flag", "explanation"),
       ("kernel", "flag", "explanation"), "compiled.counted_vs_compiled", ("sass",)),
    _t("predictions", ("kernel", "role", "measured", "exact", "exact_err", "lstsq", "lstsq_err", "sass",
                       "sass_err"), ("kernel", "role"), "tables.predictions",
       ("ledger", "prices", "model_sass?")),
    _t("price_shift", ("price", "exact", "lstsq", "change_pct"), ("price",), "tables.price_shift",
       ("prices",)),
    _t("comparisons", ("comparison", "a", "b", "experiment", "label", "ratio", "ratio_lo", "ratio_hi",
                       "passes", "verdict"), ("comparison", "a", "b", "experiment", "label", "verdict"),
       "spread.comparisons", ("times",)),
    _t("twins", ("cuda", "tile", "warps", "cuda_gflops", "unpipelined", "unpipelined_gflops", "pipelined",
                 "pipelined_gflops", "gluon", "gluon_gflops", "cublas_gflops", "ratio_unpipelined",
                 "ratio_pipelined", "ratio_gluon"), ("cuda", "tile", "unpipelined", "pipelined", "gluon"),
       "tables.twins", ("ledger",)),
    # Triton against the hand-written tile (study.derive.tile_gap, docs/method.md#tile-gap): per CUDA
    # rung and kind ("tl.dot", "Gluon") the fastest such kernel, its speed over the rung's across the
    # passes (above 1: faster) and the gap split into instructions and issue, the larger of the
    # two ("named": "issue" or "instructions") named
    _t("tile_gap", ("cuda", "kind", "kernel", "ratio", "ratio_lo", "ratio_hi", "passes", "verdict",
                    "cuda_inst_per_wfma", "inst_per_wfma", "cuda_issue_pct", "issue_pct", "from_instructions",
                    "from_issue", "named", "stall", "stall_delta", "difference"),
       ("cuda", "kind", "kernel", "verdict", "named", "stall", "difference"), "tile_gap.tile_gap",
       ("ledger", "times", "counters?", "ncu?", "sass?", "ncu_source?")),
    _t("ladder", ("kernel", "idea", "ms", "gflops", "pct_cublas", "speedup", "sectors_per_wfma",
                  "loads_per_fma", "issue_per_ffma", "wavefronts_per_wfma", "bar_per_phase", "registers",
                  "occupancy_pct",
                  "issue_pct", "fma_pipe_pct", "moved", "moved_from", "moved_to", "moved_factor"),
       ("kernel", "idea", "moved"), "counters.ladder", ("ledger", "sass?", "counters?")),
    _t("stride_loads", ("kernel", "impl", "M", "N", "K", "specialised", "loads_128", "loads_64", "loads_32",
                        "async", "error"), ("kernel", "impl", "specialised", "async", "error"),
       "experiment_tables.stride_loads", ("sass_strides",)),
    _t("strides", ("kernel", "impl", "M_a", "N_a", "K_a", "ms_a", "M_b", "N_b", "K_b", "ms_b", "ratio",
                   "change_pct", "speedup", "at_other_shape", "pair", "pair_ratio_a", "pair_ratio_b",
                   "M_c", "N_c", "K_c", "ms_c", "ratio_c", "ratio_c_b", "ld_d", "ms_d", "ratio_d",
                   "ratio_d_b", "why"),
       ("kernel", "impl", "at_other_shape", "pair", "why"), "experiment_tables.strides", ("ledger",)),
    _t("shapes", ("label", "M", "N", "K", "first", "last", "speedup", "cublas_gflops"),
       ("label", "first", "last", "kernel"), "experiment_tables.shapes", ("ledger",), open=True),
    _t("sizes", ("n", "footprint_bytes", "inside_l2", "n_at_l2"), ("inside_l2",),
       "experiment_tables.sizes", ("ledger", "l2_bytes?")),
    _t("size_step", ("kernel", "n_inside", "n_outside", "gflops_inside", "gflops_outside", "change"),
       ("kernel",), "experiment_tables.size_step", ("ledger", "l2_bytes?")),
    _t("counters", ("kernel", "M", "N", "K", "launches", "ms", "regs", "warps_pct", "issue_pct",
                    "fma_pipe_pct", "fma_share", "inst_per_wfma", "lds_per_wfma", "wavefronts_per_wfma",
                    "conflicts_per_wavefront", "sectors_per_wfma", "requests_per_wfma",
                    "top_stalls", "commit", "run_id"), ("kernel", "top_stalls", "commit", "run_id")),
    _t("stale_counters", ("kernel", "M", "N", "K", "commit", "run_id", "why"),
       ("kernel", "commit", "run_id", "why")),
    _t("clock_summary", ("kernel", "median_mhz", "pct_of_max", "samples", "lo_mhz", "hi_mhz",
                         "run_median_mhz", "run_pct_of_max", "max_over_median"), ("kernel",),
       "experiment_tables.clocks", ("rows", "clocks?", "max_mhz")),
    _t("seed_ledgers", ("kernel", "gflops", "cadence"), ("kernel", "impl", "experiment", "label"), open=True),
    _t("seed_model", ("method", "p_ldg", "p_dist", "p_bcast", "p_lds32", "p_lds128", "M", "N", "K",
                      "decimals", "kernels", "gpu", "sms", "sm_clock_mhz", "dram_gbps"), ("method",
                      "kernels", "gpu")),
    _t("seed_replication", ("kernel", "role", "seed_error_pct", "here_error_pct", "reading"),
       ("kernel", "role", "reading"), "replication.replication", ("seed_ledgers", "ledger")),
    _t("seed_identifiability", ("method", "kernels", "condition_number", "loo_worst_pct", "loo_worst_kernel",
                                "loo_mean_abs_pct", "without_condition_number", "without_kernel",
                                "identifiable"),
       ("method", "kernels", "loo_worst_kernel", "without_kernel", "identifiable"),
       "replication.identifiability", ("prices", "seed_loo?")),
    # the bound model (study.derive.bounds, docs/bounds.md)
    _t("bounds", ("kernel", "impl", "M", "N", "K", "measured_cadence", "inst_per_wfma", "fma_inst_per_wfma",
                  "ld_wavefronts_per_wfma", "st_wavefronts_per_wfma", "wavefronts_per_wfma",
                  "sectors_per_wfma", "requests_per_wfma", "lines_per_wfma", "dram_bytes_per_wfma",
                  "warps", "warps_from",
                  "wfma_per_trip", "exposed", "spill_reloads", "producer_waits", "stores", "blocks",
                  "blocks_per_sm", "tail", "b_fma", "b_issue", "b_smem", "b_l1", "b_dram", "latency",
                  "latency_smem", "predicted_cadence", "bound", "error_pct"),
       ("kernel", "impl", "warps_from", "exposed", "stores", "bound")),
    _t("bound_constants", ("constant", "value", "unit", "meaning", "fitted", "kernels"),
       ("constant", "unit", "meaning", "fitted", "kernels")),
    _t("bound_steps", ("from", "to", "from_bound", "to_bound", "moved", "speedup", "predicted_speedup",
                       "changed"),
       ("from", "to", "from_bound", "to_bound", "moved", "changed")),
    _t("bound_findings", ("finding", "value", "kernels", "note"), ("finding", "kernels", "note")),
    _t("bound_travel", ("where", "M", "N", "K", "kernels", "applied", "why"),
       ("where", "kernels", "applied", "why")),
    _t("model_errors", ("method", "kernel", "impl", "M", "N", "K", "measured_cadence", "predicted_cadence",
                        "error_pct", "role", "bound"), ("method", "kernel", "impl", "role", "bound")),
    # the decode panel (study.derive.decode): per (shape, M) KD against the best vendor kernel
    # (the faster of K0 and K0L), the read roof and the per-call times; and its findings, each
    # with a short ``id`` a quote can name
    _t("decode_summary", ("shape", "N", "K", "M", "kd_us", "k0_us", "k0l_us", "vendor", "vendor_us",
                          "speedup", "speedup_k0", "speedup_k0l", "read_us", "pct_read_roof", "fastest",
                          "fastest_us", "op_us", "kd_host_us", "op_host_us", "k0_host_us", "op_host_max_us",
                          "kd_e2e_us", "op_e2e_us", "k0_e2e_us"),
       ("shape", "vendor", "fastest"), "decode.summary", ("decode", "decode_host?"), optional=True),
    _t("decode_findings", ("id", "finding", "value", "unit", "points", "where", "note"),
       ("id", "finding", "unit", "where", "note"), "decode.findings", ("decode", "decode_host?"),
       optional=True),
    # the accuracy ledger (study.derive.accuracy): each kernel's error per (distribution, K) beside
    # the baseline's; per kernel its speed, its worst error against the baseline's and whether it
    # is FP32-class; and the findings (the peaks drawn as limits among them)
    _t("accuracy_ledger", ("kernel", "precision", "dist", "K", "rel_err", "max_ulp", "baseline_rel_err",
                           "vs_baseline"), ("kernel", "precision", "dist"), "accuracy.ledger", ("accuracy",),
       optional=True),
    _t("accuracy_summary", ("kernel", "precision", "ms", "tflops", "speedup_vs_vendor", "speedup_lo",
                            "speedup_hi", "passes", "verdict", "speed_from", "rel_err_randn",
                            "worst_vs_baseline", "worst_dist", "worst_K", "max_ulp_uniform", "fp32_class"),
       ("kernel", "precision", "verdict", "speed_from", "worst_dist", "fp32_class"), "accuracy.summary",
       ("accuracy", "gpu", "times"),
       optional=True),
    # per tensor-core kernel timed: the tensor cores' floor at the TF32 peak, MMA instructions per
    # output, the pass before the product and its floor at the copy roof, the tiles' bytes into
    # shared memory and their rate over the rest of the time
    _t("accuracy_tc", ("kernel", "precision", "M", "N", "K", "tile", "products", "ms", "tc_floor_ms",
                       "tc_share_pct", "mma_per_output", "prepass", "prepass_mb", "prepass_floor_ms",
                       "tile_gb", "tile_tbps"), ("kernel", "precision", "tile", "prepass"),
       "accuracy.tc_ledger", ("accuracy", "gpu"), optional=True),
    _t("accuracy_findings", ("id", "finding", "value", "unit", "where", "note"),
       ("id", "finding", "unit", "where", "note"), "accuracy.findings", ("accuracy", "gpu", "times"),
       optional=True),
    # study.predict against the run (study.derive.predict): per shape the mean and largest |error|
    # and the kernels outside the band; the ladder's steps and the twins' ratios at the main shape
    _t("predict_shapes", ("source", "M", "N", "K", "kernels", "mean_abs_error_pct", "max_abs_error_pct",
                          "worst", "band_pct", "outside"), ("source", "worst", "outside"), "predict.shapes",
       ("predict_check",), optional=True),
    _t("predict_ratios", ("kind", "a", "b", "measured", "predicted", "error_pct"), ("kind", "a", "b"),
       "predict.ratios", ("predict_check",), optional=True),
    # each kernel at the main shape: predicted beside measured, the predicted issue rate beside the
    # one ncu read in the run (only compared with), the bound, or why it was not predicted
    _t("predict_main", ("kernel", "M", "N", "K", "measured_ms", "ms", "error_pct", "issue_pct",
                        "ncu_issue_pct", "bound", "note"), ("kernel", "bound", "note"), "predict.at_main",
       ("predict_check", "counters?"), optional=True),
)

ALL = MEASURED + SEED + DERIVED
BY_NAME: dict[str, Table] = {t.name: t for t in ALL}
BY_FILE: dict[str, Table] = {t.file: t for t in ALL}


def get(name: str) -> Table:
    return BY_NAME[name]


class _Names:
    """``T.twins`` is the declaration named "twins": tables are referred to by declaration, never by
    a file name spelled out."""

    def __getattr__(self, name: str) -> Table:
        try:
            return BY_NAME[name]
        except KeyError:
            raise AttributeError(f"no table {name!r} is declared in study.rundata.tables") from None


T = _Names()
