"""``python -m study.report [DIR]``: re-derive and re-render a run directory (no GPU needed).

Derives every table from ``DIR/data/`` (``study.derive``), then renders ``DIR/REPORT.md`` and the
figures. Bad input: one line, exit 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

from study import cli
from study.errors import InputError
from study.rundata import rundir
from study.rundata.rundir import RunDir

REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    p = cli.Parser(
        prog="python -m study.report",
        description="Re-derive and re-render REPORT.md and the figures from <out>/data/ (no GPU).",
    )
    p.add_argument(
        "out", nargs="?", help="run directory holding data/ (e.g. a copy of reports/: rewritten in place)"
    )

    def body() -> int:
        args = p.parse_args(argv)
        if args.out is None:  # checked after parsing, so an unknown flag is named first
            raise InputError("python -m study.report needs DIR, the run directory to re-derive and re-render")
        out = cli.out_dir(args.out, "the run directory")
        rd = RunDir(out)
        if not rd.file(rundir.RESULTS).is_file():
            raise InputError(f"{out}: no data/results.csv (not a run directory)")
        rd.check_writable(str(out))  # it is re-derived and re-rendered in place
        from study import derive, report

        derive.derive(rd, seed=RunDir(REPO / "reports"), note=False)
        print(report.render(out, measured=False))
        return 0

    return cli.main(body)


if __name__ == "__main__":
    sys.exit(main())
