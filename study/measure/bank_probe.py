"""``python -m study.bank_probe --out DIR``: what a register-bank conflict costs on this GPU,
measured (GPU).

A family of loops that differ only in which registers their FFMAs read: each variant is the same
128 FFMAs an iteration over 16 accumulators, 8 x and 8 y values, each FFMA's x and y drawn at
random by the variant's seed (every third seed: an outer product in a random order), so that
ptxas's register assignment gives each variant another count of same-bank reads
(``study.toolchain.sass.bank_conflicts_each``, 4 banks, the reuse cache taken into account). Every
variant is compiled here (nvcc -O3 for the GPU's arch), its main
loop's instructions, reuse flags and extra bank reads counted from its SASS, and timed with CUDA
events (16 warps per SM, no memory traffic in the loop). ``study.predict`` reads the time per
iteration against those counts: were the rule ``study.predict`` prices right, an iteration would
cost its instructions plus ``bank_cycles`` per extra read, per scheduler.

Rows go to ``DIR/data/bank_probe.csv`` as each variant is timed.
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from study import cli
from study.errors import InputError
from study.rundata import tables
from study.rundata.rundir import RunDir

FFMAS = 128  # per iteration
ACCS, XS, YS = 16, 8, 8
THREADS = 256
BLOCKS_PER_SM = 2  # 16 warps per SM: 4 per scheduler
ITERATIONS = 4000


def source(seed: int) -> str:
    """The variant's .cu: the FFMAs' x and y indices drawn by ``seed``; the accumulators in turn."""
    rng = random.Random(seed)
    if seed % 3 == 0:  # an outer product (each x with each y in turn, as a register tile does)
        xs, ys = rng.sample(range(XS), XS), rng.sample(range(YS), YS)
        pairs = [(j % ACCS, xs[(j // YS) % XS], ys[j % YS]) for j in range(FFMAS)]
    else:  # each FFMA's x and y drawn at random
        pairs = [(j % ACCS, rng.randrange(XS), rng.randrange(YS)) for j in range(FFMAS)]
    loads = "\n".join([f"    float x{i} = A[t + {i} * n];" for i in range(XS)]
                      + [f"    float y{i} = A[t + {XS + i} * n];" for i in range(YS)])
    accs = "\n".join(f"    float a{i} = 0.0f;" for i in range(ACCS))
    body = "\n".join(f"        a{a} = fmaf(x{x}, y{y}, a{a});" for a, x, y in pairs)
    total = " + ".join(f"a{i}" for i in range(ACCS))
    return f"""// bank probe variant {seed}
extern "C" __global__ void __launch_bounds__({THREADS}) bank_probe(
    int M, int N, int K, float alpha, const float *__restrict__ A, const float *__restrict__ B,
    float beta, float *__restrict__ C) {{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int n = gridDim.x * blockDim.x;
{loads}
{accs}
#pragma unroll 1
    for (int it = 0; it < K; ++it) {{
{body}
    }}
    C[t] = {total};
}}
"""


def compile_variant(seed: int, sm: str, work: Path) -> Path:
    from study.toolchain import tools

    cu = work / f"probe_{seed}.cu"
    cu.write_text(source(seed))
    cubin = cu.with_suffix(".cubin")
    out = subprocess.run([tools.require_nvcc(), "-O3", f"-arch={sm}", "-cubin", "-o", str(cubin), str(cu)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise InputError(f"bank probe {seed}: nvcc failed: {(out.stderr or out.stdout).strip()[:200]}")
    return cubin


def counts(cubin: Path) -> dict:
    """The variant's main loop from its SASS: instructions, FFMA, reuse flags, extra bank reads."""
    from study.toolchain import sass

    loop = sass.main_loop(sass.dump_sass(cubin, "bank_probe"))
    s = sass.schedule(loop)
    return {"loop_instructions": len(loop), "loop_ffma": sum(1 for i in loop if i.base == "FFMA"),
            **{k: s[k] for k in ("loop_reuse", "loop_bank4", "loop_bank2")}}


def main(argv: list[str] | None = None) -> int:
    p = cli.Parser(prog="python -m study.bank_probe", description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out", help="run directory (default out/)")
    p.add_argument("--variants", default="24", help="how many seeds (default 24)")

    def body() -> int:
        import torch

        from study.measure import bench, device
        from study.measure.sweep_cuda import Cubin
        from study.rundata.results import ResultsFile, git_commit, timestamp

        a = p.parse_args(argv)
        n = cli.positive_int(a.variants, "--variants")
        if not torch.cuda.is_available():
            raise InputError("study.bank_probe needs a CUDA GPU")
        run = RunDir(Path(a.out))
        run.check_writable("--out")
        gpu = device.from_device()
        props = torch.cuda.get_device_properties(0)
        sm = f"sm_{props.major}{props.minor}"
        grid = props.multi_processor_count * BLOCKS_PER_SM
        table = tables.get("bank_probe")
        file = ResultsFile(run.file(table), list(table.columns))
        common = {"iterations": ITERATIONS, "threads": THREADS, "blocks": grid, "gpu": gpu.name,
                  "sm_clock_mhz": gpu.sm_clock_mhz, "commit": git_commit()}
        values = THREADS * grid * (XS + YS)
        x = torch.randn(-(-values // ITERATIONS) * ITERATIONS, device="cuda").view(-1, ITERATIONS)
        b = torch.empty(1, 1, device="cuda")
        c = torch.empty(THREADS * grid, device="cuda")
        with tempfile.TemporaryDirectory() as d, ThreadPoolExecutor(max_workers=16) as pool:
            cubins = list(pool.map(lambda s: compile_variant(s, sm, Path(d)), range(n)))
            for seed, cubin in enumerate(cubins):
                k = Cubin(cubin, "bank_probe")
                # K (the loop's trip count) is x's column count; M, N unused
                t = bench.time_cuda(k.launcher(x, b, c, (grid, 1), THREADS, 0), flush=lambda: None,
                                    target_s=0.05)
                k.close()
                row = {"seed": seed, **counts(cubin), **common, "ms": t.ms, "p20_ms": t.p20_ms,
                       "p80_ms": t.p80_ms, "reps": t.reps, "timestamp": timestamp()}
                file.append(row)
                print(f"[{seed + 1}/{n}] bank probe {seed}: {row['loop_instructions']} instructions, "
                      f"{row['loop_bank4']} extra bank reads, {t.ms:.4f} ms", flush=True)
        return 0

    return cli.main(body)


if __name__ == "__main__":
    sys.exit(main())
