import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from triton_kernels import g12_gluon
g12_gluon.AHEAD = sys.argv[1] == "1"
from study.measure import profile
sys.exit(profile.child("G12", (4096, 4096, 4096)))
