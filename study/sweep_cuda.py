"""``python -m study.sweep_cuda``: the command; the code is :mod:`study.measure.sweep_cuda`."""

import sys

from study.measure.sweep_cuda import main

if __name__ == "__main__":
    sys.exit(main())
