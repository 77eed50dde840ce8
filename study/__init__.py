"""sgemm-ledgers: why each classic SGEMM optimisation pays, measured on the GPU at hand."""

import os

# cuBLAS reads this when it initialises: pin TF32 off before anything touches CUDA.
os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
