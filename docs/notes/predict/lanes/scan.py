"""Which accesses of each predictable kernel's main loop the lanes interpreter prices, at chosen
shapes: per kernel and shape, the loop's shared and global accesses, those whose lanes are not
known (``None``: no L1 time) and those priced at 0 cycles.

    python docs/notes/predict/lanes/scan.py 4096,4096,4096 1,18944,3584 4097,4097,4097

No GPU (nvcc and cuobjdump; the Triton kernels compiled here with their arguments at the shape).
"""

from __future__ import annotations

import sys

from study import kernels
from study.predict import check
from study.predict.__main__ import registered
from study.toolchain.triton_child import TritonChild

ACCESSES = ("LDS", "LDSM", "LDG", "LDGSTS")


def main() -> int:
    shapes = [tuple(int(x) for x in s.split(",")) for s in sys.argv[1:]]
    ids = [k.id for k in kernels.select(None) if check.predictable(k.id)]
    with TritonChild() as child:
        for kid in ids:
            for shape in shapes:
                name = "x".join(map(str, shape))
                try:
                    (body, cycles), _, _ = registered(kid, shape, "sm_90", child=child, sms=132)
                except Exception as e:  # a kernel the shape does not suit
                    print(f"{kid} {name}: not predicted ({str(e)[:70]})")
                    continue
                acc = [(i, c) for i, c in zip(body, cycles) if i.base in ACCESSES and i.pred != "@!PT"]
                unknown = [f"{i.base}@{i.addr:x}" for i, c in acc if c is None]
                zero = [f"{i.base}@{i.addr:x}" for i, c in acc if c == 0]
                print(f"{kid} {name}: {len(acc)} accesses, {len(unknown)} not known {unknown[:4]}, "
                      f"{len(zero)} at 0 cycles {zero[:4]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
