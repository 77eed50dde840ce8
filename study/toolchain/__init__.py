"""The toolchain: find nvcc, cuobjdump and ncu once; compile (cached); read SASS; occupancy.

``tools`` (the tool lookups and versions), ``compile`` (nvcc / Triton AOT into the cubin
cache), ``sass`` (cuobjdump text parsed, histograms, the main loop), ``occupancy`` (from
:mod:`study.arch`), ``table`` (the SASS table: one row per registry kernel).
"""
