"""The main loop of a cubin's kernel (the body of its last backward branch): its length, the
registers ptxas gave the kernel, and how soon the registers of its shared loads are read by an
FFMA (instructions after the load, the nearest and the tenth percentile over the loop's LDS).

    python docs/notes/k15/loop_stats.py FILE.cubin   (cuobjdump on PATH)"""
import re
import subprocess
import sys


def main(path: str) -> str:
    sass = subprocess.run(["cuobjdump", "-sass", path], capture_output=True, text=True, check=True).stdout
    line = re.compile(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);")
    rows = [(int(m.group(1), 16), m.group(2).strip()) for m in line.finditer(sass)]
    at = {a: i for i, (a, _) in enumerate(rows)}
    start = end = None
    for i, (a, text) in enumerate(rows):
        m = re.search(r"BRA 0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < a:
            start, end = at[int(m.group(1), 16)], i
    body = [text for _, text in rows[start:end + 1]]
    gaps = []
    for i, text in enumerate(body):
        m = re.match(r"LDS\.128 R(\d+),", text)
        if not m:
            continue
        regs = {f"R{int(m.group(1)) + q}" for q in range(4)}
        for j in range(1, len(body)):
            use = body[(i + j) % len(body)]
            if use.startswith("FFMA") and regs & set(re.findall(r"R\d+", use)[1:]):
                gaps.append(j)
                break
    gaps.sort()
    usage = subprocess.run(["cuobjdump", "-res-usage", path], capture_output=True, text=True).stdout
    regs = re.search(r"REG:(\d+)", usage).group(1)
    return (f"{len(body)} instructions, {regs} registers, shared load to use: nearest {gaps[0]}, "
            f"p10 {gaps[len(gaps) // 10]}")


if __name__ == "__main__":
    print(main(sys.argv[1]))
