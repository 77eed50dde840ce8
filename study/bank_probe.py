"""``python -m study.bank_probe``: the command; the code is :mod:`study.measure.bank_probe`."""

import sys

from study.measure.bank_probe import main

if __name__ == "__main__":
    sys.exit(main())
