"""The main loop of a cubin's kernel (study.toolchain.sass.main_loop): its length, the registers
ptxas gave the kernel, and how soon the registers of its shared loads are read by an FFMA
(instructions after the load, the nearest and the tenth percentile over the loop's LDS.128).

    python docs/notes/k15/loop_stats.py FILE.cubin   (from the repository's root; cuobjdump found
    as the study finds it)"""
import os
import re
import sys

sys.path.insert(0, os.getcwd())
from study.toolchain import sass  # noqa: E402

REG = re.compile(r"R\d+")


def main(path: str) -> str:
    body = sass.main_loop(sass.dump_sass(path))
    gaps = []
    for i, ins in enumerate(body):
        if ins.opcode != "LDS.128" or ins.pred:
            continue
        first = int(REG.match(ins.operands).group(0)[1:])
        regs = {f"R{first + q}" for q in range(4)}
        for j in range(1, len(body)):
            use = body[(i + j) % len(body)]
            sources = {m.group(0) for op in sass.split_operands(use.operands)[1:] if (m := REG.match(op))}
            if use.base == "FFMA" and regs & sources:
                gaps.append(j)
                break
    gaps.sort()
    regs = sass.resources_cubin(path)["REG"]
    return (f"{len(body)} instructions, {regs} registers, shared load to use: nearest {gaps[0]}, "
            f"p10 {gaps[len(gaps) // 10]}")


if __name__ == "__main__":
    print(main(sys.argv[1]))
