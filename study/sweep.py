"""``python -m study.sweep``: the command; the code is :mod:`study.measure.sweep`."""

import sys

from study.measure.sweep import main

if __name__ == "__main__":
    sys.exit(main())
