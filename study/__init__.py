"""sgemm-ledgers: why each classic SGEMM optimisation pays, measured on the GPU at hand."""

import os

# cuBLAS reads this when it initialises: pin TF32 off before anything touches CUDA. This
# deliberately overrides any value already in the environment: a study whose baseline may run
# on tensor cores measures nothing (study.measure.baseline also pins and verifies it).
os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
# A torch.profiler session (the vendor launchers open one to name the kernel cuBLAS picks) leaves
# CUPTI attached when it ends unless Kineto is told to detach it, and an attached CUPTI costs the
# host on every later launch of the process: the decode panel's host and end-to-end times would
# depend on how many kernels the process had named before. Read when torch is imported, so here.
os.environ.setdefault("TEARDOWN_CUPTI", "1")
# FMA contraction is what turns a*b + c into FFMA; newer Triton warns unless it is said explicitly.
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
