"""Predict before running: a kernel's time from its compiled SASS, its launch, the problem shape
and the GPU's constants, with no counter and no measured time of the kernel predicted."""
