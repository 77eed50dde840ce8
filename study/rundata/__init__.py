"""A run's data: the run directory (every file named once), its tidy results rows, the GPU
description it was measured on, and the row selections that derive and report share.

Nothing here measures or computes a figure: ``study.measure`` writes these files,
``study.derive`` computes from them, ``study.report`` renders what derive wrote.
"""
