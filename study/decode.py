"""``python -m study.decode``: the command; the code is :mod:`study.measure.decode`."""

import sys

from study.measure.decode import main

if __name__ == "__main__":
    sys.exit(main())
