"""study.predict's fit (``--fit DIR``) over another grid: the shared-memory queue's depth and the
shared load's latency searched with the global latency and the barrier's, the register banks and
the global queue at their fitted values.

    python docs/notes/predict/phase/fit_queue.py RUN_DIR

No GPU (nvcc, cuobjdump, the Triton the run timed)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from study.predict import fit  # noqa: E402
from study.predict.__main__ import registered  # noqa: E402

GRID = {
    "ldg_latency": (600, 800, 1000),
    "mio_queue": (8, 16, 32, 64),
    "lds_latency": (30, 22, 26),
    "barrier_latency": (20, 60),
    "lg_queue": (8,),
    "banks": (2,),
    "bank_rule": ("pair-extra-ab",),
}

if __name__ == "__main__":  # the fit forks its workers
    fit.GRID = GRID
    sys.exit(fit.run_dir(sys.argv[1], "sm_90", False, registered))
