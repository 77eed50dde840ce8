#!/usr/bin/env bash
# The two G12 variants the harness times beside the kept one, written next to this script (from
# the repository root, where git is): g12_old.py, G12 as it was at f4ea654, and g12_parts.py, the
# kept G12 with each stage's K-tiles copied in parts (not kept; docs/notes/g12.md).
set -euo pipefail
here=docs/notes/g12/harness
git show f4ea654:triton_kernels/g12_gluon.py > $here/g12_old.py
cp triton_kernels/g12_gluon.py $here/g12_parts.py
patch -s $here/g12_parts.py < $here/g12_parts.diff
