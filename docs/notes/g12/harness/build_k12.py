import shutil, sys
from pathlib import Path
from study import kernels
from study.measure import sweep_cuda as sc
from study.toolchain.compile import compile_cuda
from study.toolchain import sass
k = kernels.get("K12")
d = Path("docs/notes/g12/harness/cubins"); d.mkdir(parents=True, exist_ok=True)
for name, vals in [("K12_255", {}), ("K12_232", {"MAXNREG": 232}), ("K12_240", {"MAXNREG": 240}), ("K12_248", {"MAXNREG": 248}),
                   ("K15_255", {"B_VEC": 4})]:
    cub = compile_cuda(k, "sm_90", sc.defines(k, vals) if vals else {})
    shutil.copy(cub, d / f"{name}.cubin")
    loop = sass.main_loop(sass.dump_sass(cub, k.symbol))
    s = sass.schedule(loop)
    print(name, sc.smem_bytes(k, {**{p: sc.define_value(k.source, f"K12_{p}") for p in sc.parameters(k)}, **vals}),
          len(loop), s["loop_bank4"], s["loop_bank2"], s["loop_reuse"])
print(k.symbol)
