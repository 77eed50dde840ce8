"""``python -m study.profile``: the command; the code is :mod:`study.measure.profile`."""

import sys

from study.measure.profile import main

if __name__ == "__main__":
    sys.exit(main())
