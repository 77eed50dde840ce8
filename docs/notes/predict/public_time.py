"""The kernels of public_kernels.txt timed on a GPU, the study's way, beside their predictions.

    python docs/notes/predict/public_time.py SGEMM_CUDA_CHECKOUT OUT.jsonl [PASSES]

Each kernel is the instantiation public.sh predicts, built by nvcc -O3 -std=c++17 for this GPU's
architecture (the flags of ``study.predict --cu``) into a shared library whose one C entry
launches it with the grid and block that public.sh gives the model. The kernels compute
C = alpha A B + beta C and always read C, so the output cannot be poisoned with NaN (0 x NaN is
NaN): each is checked once against float64 with beta = 1 over a random C0 (an element it does not
write keeps C0 and fails the check), then timed with alpha = 1, beta = 0 on random inputs, the L2
read-flushed before every repetition (``bench.time_cuda``), TF32 off, PASSES passes (default 3)
with the kernels in turn, the order reversed every other pass. One JSON row per kernel and pass.
PASSES 0 checks each kernel (one launch each) and times nothing: the run to read under ncu
(public_ncu.sh). Run from the repository's root."""
import concurrent.futures as cf
import ctypes
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path.cwd()))
from study.measure import bench  # noqa: E402

HERE = Path(__file__).resolve().parent
SHAPE = (4096, 4096, 4096)


def kernels() -> list[dict]:
    rows = []
    for line in (HERE / "public_kernels.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, header, inst, grid, block = line.split("|")
            call = inst[: inst.index(">") + 1] if "<" in inst else inst.split("(")[0]
            rows.append(dict(name=name, header=header, call=call, grid=tuple(int(g) for g in grid.split(",")),
                             block=tuple(int(b) for b in block.split(","))))
    return rows


def build(k: dict, src: Path, work: Path, arch: str) -> tuple[dict, Path | None, str]:
    cu = work / f"{k['name']}.cu"
    gx, gy = k["grid"]
    block = ", ".join(map(str, k["block"]))
    cu.write_text(
        "".join(f'#include "{src / h}"\n' for h in k["header"].split("+"))
        + 'extern "C" int launch(int M, int N, int K, float alpha, float *A, float *B, float beta,\n'
        '                      float *C, void *stream) {\n'
        f'    {k["call"]}<<<dim3({gx}, {gy}), dim3({block}), 0, static_cast<cudaStream_t>(stream)>>>'
        '(M, N, K, alpha, A, B, beta, C);\n'
        '    return static_cast<int>(cudaGetLastError());\n}\n')
    so = work / f"{k['name']}.so"
    cmd = ["nvcc", "-O3", "-std=c++17", f"-arch={arch}", "-Xcompiler", "-fPIC", "-shared", f"-I{work}",
           "-o", str(so), str(cu)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return k, (so if r.returncode == 0 else None), r.stderr[-400:]


def main() -> int:
    src = Path(sys.argv[1]).resolve() / "src" / "kernels"
    out = Path(sys.argv[2])
    passes = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cc = torch.cuda.get_device_capability()
    arch = f"sm_{cc[0]}{cc[1]}"
    work = Path(tempfile.mkdtemp())
    (work / "cublas_v2.h").write_text("")  # the headers include it and use nothing of it
    t0 = time.time()
    with cf.ThreadPoolExecutor(8) as ex:
        built = list(ex.map(lambda k: build(k, src, work, arch), kernels()))
    ok = sum(1 for _, so, _ in built if so)
    print(f"built {ok} of {len(built)} in {time.time() - t0:.0f} s", flush=True)
    M, N, K = SHAPE
    a, b = bench.random_inputs(M, N, K, seed=4096)
    c0 = torch.randn(M, N, device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
    ref = a.double() @ b.double() + c0.double()
    flush = bench.L2Flush(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", None))
    stream = torch.cuda.current_stream().cuda_stream
    ready = []
    f = out.open("a")
    for k, so, err in built:
        row = dict(kernel=k["name"], M=M, N=N, K=K, grid=list(k["grid"]), block=list(k["block"]), arch=arch,
                   gpu=torch.cuda.get_device_name(0), torch=torch.__version__)
        if so is None:
            f.write(json.dumps({**row, "status": "build failed", "note": err}) + "\n")
            continue
        lib = ctypes.CDLL(str(so))
        lib.launch.restype = ctypes.c_int
        lib.launch.argtypes = [ctypes.c_int] * 3 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p,
                                                    ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p]
        c = c0.clone()
        rc = lib.launch(M, N, K, 1.0, a.data_ptr(), b.data_ptr(), 1.0, c.data_ptr(), stream)
        torch.cuda.synchronize()
        e = bench.relative_error(c, ref)
        if rc != 0 or not e <= bench.TOLERANCE:
            f.write(json.dumps({**row, "status": "wrong", "rel_err": e, "rc": rc}) + "\n")
            continue
        ready.append((k, lib, row, e))
    f.flush()
    c = torch.empty(M, N, device="cuda")
    for p in range(passes):
        for k, lib, row, e in ready if p % 2 == 0 else ready[::-1]:
            def call(lib=lib):
                lib.launch(M, N, K, 1.0, a.data_ptr(), b.data_ptr(), 0.0, c.data_ptr(), stream)
            t = bench.time_cuda(call, flush)
            f.write(json.dumps({**row, "status": "ok", "pass": p, "rel_err": e, "ms": t.ms,
                                "p20_ms": t.p20_ms, "p80_ms": t.p80_ms, "reps": t.reps}) + "\n")
            f.flush()
            print(f"pass {p} {k['name']}: {t.ms:.3f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
