"""Counters of chosen kernels at shapes off the fit's, with the L1's and L2's hit counts added.

    python docs/notes/predict/offshape/counters.py RUN_DIR "K1,T1@4097,4097,4097;..." [--extras-only]

``study.profile``'s counters plus the extras below, where this ncu knows their names (a name it
does not know would fail every kernel's run): where a global load's sectors hit in the L1, and
how many sectors the L2 serves. Rows go to RUN_DIR/data/ncu.csv as study.profile writes them;
RUN_DIR is a copy of a run directory, so that an autotuned kernel launches the configuration that
run timed. With --extras-only, the extras and the kernel's time alone (fewer replay passes). Run from
the repository's root, on the GPU."""
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from study import kernels  # noqa: E402
from study.measure import profile  # noqa: E402
from study.toolchain.tools import find_ncu  # noqa: E402

EXTRAS = (
    "l1tex__t_sector_hit_rate.pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",
    "l1tex__m_xbar2l1tex_read_sectors.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "smsp__cycles_active.avg",
    "sm__cycles_elapsed.avg",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
)


def known(ncu: str) -> set[str]:
    out = subprocess.run([ncu, "--query-metrics", "--csv"], capture_output=True, text=True)
    return {line.split(",")[0].strip('"') for line in out.stdout.splitlines()}


def main() -> int:
    run, spec = Path(sys.argv[1]), sys.argv[2]
    ncu = find_ncu()
    names = known(ncu)
    extras = [m for m in EXTRAS if m.split(".")[0] in names]
    print("extras:", extras, "left out:", [m for m in EXTRAS if m not in extras], flush=True)
    base = ("gpu__time_duration.sum",) if "--extras-only" in sys.argv else profile.METRICS
    profile.METRICS = (*base, *extras)
    rc = 0
    for item in spec.split(";"):
        ids, shape = item.split("@")
        rc |= profile.profile(kernels.select(ids), tuple(int(x) for x in shape.split(",")), run, ncu)
    return rc


if __name__ == "__main__":
    sys.exit(main())
