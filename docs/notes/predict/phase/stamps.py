"""How fast each of an SM's co-resident blocks runs, by its age among them, from the clock stamps
that stamped.cuh writes at every barrier (phase.py collects them).

    python docs/notes/predict/phase/stamps.py STAMPS.npz

A block's trip is the time from one of its stamps to the stamp a trip's barriers later (the
barriers a trip: its stamps over the kernel's trips, rounded). At each trip's first stamp the
block's rank is the number of blocks on its SM that started before it and have not ended: 0 is the
oldest block there. Printed: the median cycles of a trip at each rank, and how many trips that is.
Where the schedulers served every warp in turn, each rank would run at one pace; where they serve
the oldest block's warps first, a trip takes longer the younger the block."""
import sys

import numpy as np


def by_rank(sm: np.ndarray, stamps: np.ndarray, count: np.ndarray, trips: int) -> dict[int, tuple[float, int]]:
    """{rank: (median cycles a trip, trips counted)} from each block's SM, its stamps (a row per
    block, the first ``count`` of each valid) and the kernel's trips a block."""
    per_trip = max(1, int(round(np.median(count) / trips)))
    first = stamps[:, 0]
    last = stamps[np.arange(len(count)), np.maximum(count - 1, 0)]
    out: dict[int, list] = {}
    for s in np.unique(sm):
        ids = np.flatnonzero((sm == s) & (count > per_trip))
        if len(ids) == 0:
            continue
        start, end = first[ids], last[ids]
        older = start[None, :] < start[:, None]  # [b, b']: b' started before b
        for i, b in enumerate(ids):
            marks = stamps[b, : count[b]][::per_trip]
            if len(marks) < 2:
                continue
            t, dur = marks[:-1], np.diff(marks)
            live = (end[None, :] > t[:, None]) & older[i][None, :]
            rank = live.sum(axis=1)
            for r, d in zip(rank.tolist(), dur.tolist()):
                out.setdefault(r, []).append(d)
    return {r: (float(np.median(v)), len(v)) for r, v in sorted(out.items())}


def lines(table: dict[int, tuple[float, int]]) -> list[str]:
    return [f"  rank {r}: {c:.0f} cycles a trip ({n} trips)" for r, (c, n) in table.items()]


def main() -> int:
    d = np.load(sys.argv[1])
    print("\n".join(lines(by_rank(d["sm"], d["stamps"], d["count"], int(d["trips"])))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
