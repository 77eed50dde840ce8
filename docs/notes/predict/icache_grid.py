"""The exploratory grid behind the instruction cache's geometry (docs/notes/predict.md, "The
instruction cache, played"): the ten loops of more than 192 lines at 4096^3, compiled as
``python -m study.predict --fit reports`` compiles them, played with the H200's fitted constants
and no cache, then with a cache of 256 lines for each (ways, refill, prefetch); each kernel's error
with the cache is its error without it (``check_b62543f_on_df8367b86b66.txt``) scaled by the
loop's cycles. Printed per candidate: the mean |error| over the ten, and per kernel the simulated
no_instruction stalls per issue, ncu's (the run of df8367b86b66) in brackets, and the error.

Usage, from the repository's root: python docs/notes/predict/icache_grid.py [PROCESSES]
"""

import dataclasses
import functools
import math
import re
import sys
from multiprocessing import Pool
from pathlib import Path

from study.predict import fit, issue
from study.predict.__main__ import registered
from study.toolchain import occupancy

KIDS = "K11,K12,K13,K14,K15,T12p,G10,G12,G15,TA".split(",")
NCU = dict(K11=.10, K12=.10, K13=.08, K14=.14, K15=.09, T12p=.07, G10=.06, G12=.17, G15=.15, TA=.06)
CHECK = Path(__file__).with_name("check_b62543f_on_df8367b86b66.txt")
ERR = {m[1]: float(m[2]) for m in re.finditer(r"^(\S+) at 4096x4096x4096: .*\(([-+]\d+\.\d)%\)",
                                              CHECK.read_text(), re.M)}
GRID = [(w, r, p) for w in (4, 8) for r, p in ((20, 0), (20, 1), (40, 1), (40, 2), (60, 2), (80, 3))]

run, gpu, timed, configs, _ = fit.read_run("reports")
loaded, _ = fit.compile_all([k for k in timed if k in KIDS], "sm_90",
                            functools.partial(registered, sms=gpu.sms), configs)
BASE = dataclasses.replace(issue.constants_for(gpu.name), icache_lines=0)


def played(args):
    kid, c = args
    body, l1, launch = loaded[kid]
    occ = occupancy.occupancy_limits(launch.registers, launch.smem, launch.threads, "sm_90")
    blocks = occ["blocks"] * gpu.sms if launch.balanced else launch.blocks
    per_sm = min(occ["blocks"], max(1, math.ceil(blocks / gpu.sms)))
    r = issue.simulate(body, -(-(launch.compute_threads or launch.threads) // 32), per_sm, c, l1_cycles=l1)
    selected = 1 - sum(r.stalls.values())
    return kid, r.cycles_per_iteration, r.stalls.get("no_instruction", 0) / selected


if __name__ == "__main__":
    with Pool(int(sys.argv[1]) if len(sys.argv) > 1 else 1) as pool:
        base = {k: v for k, v, _ in pool.map(played, [(k, BASE) for k in KIDS])}
        for ways, refill, prefetch in GRID:
            c = dataclasses.replace(BASE, icache_lines=256, icache_ways=ways, icache_refill=refill,
                                    icache_prefetch=prefetch)
            got = {k: (v, ni) for k, v, ni in pool.map(played, [(k, c) for k in KIDS])}
            err = {k: (100 + ERR[k]) * got[k][0] / base[k] - 100 for k in KIDS}
            print((ways, refill, prefetch), "mean|err| %.1f" % (sum(map(abs, err.values())) / len(err)),
                  " ".join(f"{k}:{got[k][1]:.2f}({NCU[k]:.2f}){err[k]:+.1f}" for k in KIDS), flush=True)
