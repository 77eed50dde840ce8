"""The model (study.predict, the constants fitted for the H200) beside phase.py's measurements:
each rung's time at each residency, and how fast each of an SM's blocks runs by its age.

    python docs/notes/predict/phase/compare.py RESIDENCY.jsonl [FIELD=VALUE ...]

Per residency row: the prediction with the dynamic shared memory the row launched with (which
sets the blocks an SM holds), and its error. Per stamped row: the simulated loop's cycles a trip of
each resident block, oldest first (the blocks' warps counted from cycle 30,000 to 150,000 of one
SM's simulation), beside the cycles a trip that the stamps give at each age rank. FIELD=VALUE
replaces a fitted constant (``ldg_latency=400``). No GPU."""
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from study.predict import issue, model  # noqa: E402
from study.predict.__main__ import DEFAULT_GPU, registered  # noqa: E402
from study.rundata.gpu import GPU  # noqa: E402

SHAPE = (4096, 4096, 4096)
FROM, TO = 30_000, 150_000


def paces(body, cycles, warps: int, blocks: int, c: issue.Constants) -> list[float]:
    """Cycles a trip of each block of an SM holding ``blocks``, oldest first, in the simulation."""
    sim = issue._Sim(body, warps, blocks, c, 4, cycles)
    done = {}
    for t in range(TO + 1):
        for s in range(4):
            sim.cycle(s, t, False)
        if t in (FROM, TO):
            done[t] = [sum(w.iteration + w.pc / len(body) for w in sim.warps if w.block == b) / warps
                       for b in range(blocks)]
    return [(TO - FROM) / (done[TO][b] - done[FROM][b]) for b in range(blocks)]


def main() -> int:
    gpu = GPU.from_json(DEFAULT_GPU)
    c = issue.constants_for(gpu.name)
    for arg in sys.argv[2:]:
        field, value = arg.split("=")
        c = dataclasses.replace(c, **{field: type(getattr(c, field))(value)})
    rows = [json.loads(line) for line in open(sys.argv[1])]
    loaded = {}
    for r in rows:
        kid = r["kernel"].split()[0]
        if kid not in loaded:
            (body, cycles), launch, _ = registered(kid, SHAPE, "sm_90")
            loaded[kid] = (body, cycles, launch)
        body, cycles, launch = loaded[kid]
        warps = -(-(launch.compute_threads or launch.threads) // 32)
        if "residency" in r:
            p = model.predict(body, dataclasses.replace(launch, smem=r["static_smem"] + r["dynamic_smem"]), SHAPE,
                              gpu, "sm_90", c=c, l1_cycles=cycles)
            print(f"{kid} at {r['residency']} a SM: measured {r['ms']:.3f} ms, predicted {p['ms']:.3f} "
                  f"({100 * (p['ms'] / r['ms'] - 1):+.1f}%; {p['blocks_per_sm']} a SM)", flush=True)
        else:
            measured = [v["cycles_a_trip"] for _, v in sorted(r["by_rank"].items(), key=lambda kv: int(kv[0]))]
            sim = paces(body, cycles, warps, len(measured), c)
            print(f"{kid} stamped, cycles a trip by age (oldest first): measured "
                  f"{' '.join(f'{x:.0f}' for x in measured)}; simulated {' '.join(f'{x:.0f}' for x in sim)}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
