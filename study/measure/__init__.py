"""Measuring on the GPU: the device's constants and clock (``device``), checking and timing
(``bench``), the cuBLAS baseline with TF32 pinned off (``baseline``), the measuring plan and its
runner (``plan``), hardware counters (``profile``) and parameter sweeps (``sweep``,
``sweep_cuda``). Rows go to the run directory as each measurement ends; arithmetic over them is
``study.derive``'s.
"""
