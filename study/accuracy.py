"""``python -m study.accuracy``: the command; the code is :mod:`study.measure.accuracy`."""

import sys

from study.measure.accuracy import main

if __name__ == "__main__":
    sys.exit(main())
