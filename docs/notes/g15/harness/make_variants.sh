#!/usr/bin/env bash
# The G15 variants the probes time, written next to this script (from the repository root): each
# is triton_kernels/g15_gluon.py as committed with its diff applied. v_ahead.py: the first build
# (A's first copy map, B's copy at k-step 8); v_plain.py: a draft that reads each slab just before
# its k-steps (it failed its checks); v_parts.py: B's copies in parts, one allocation per part
# (docs/notes/g15.md).
set -euo pipefail
here=docs/notes/g15/harness
for v in v_ahead v_plain v_parts; do
  cp triton_kernels/g15_gluon.py $here/$v.py
  patch -s $here/$v.py < $here/$v.diff
done
