"""The list of figures and how to reproduce the run."""

from __future__ import annotations

from pathlib import Path

from study.report.figures import figures_of
from study.report.load import Run
from study.report.md import md, prov

REPO = Path(__file__).resolve().parents[3]


def section_figures(run: Run) -> list[str]:
    lines = ["Every figure, the file it is in and the function that drew it from data/.", ""]
    rows = [
        [
            f"figures/{name}.png",
            f"`study.report.{fn.__name__}`",
            "drawn"
            if run.figures.get(name, (None,))[0]
            else f"skipped: {run.figures.get(name, (None, '?'))[1]}",
        ]
        for name, fn in figures_of(run).items()
    ]
    return lines + md(["file", "made by", "status"], rows)


def section_reproduce(run: Run) -> list[str]:
    commit = (prov(run, "commit") or "").split(",")[0].replace("+dirty", "").strip()
    try:
        out = str(run.out.resolve().relative_to(REPO))
    except ValueError:  # written outside the checkout (e.g. on a GPU machine): name no local path
        out = "DIR"
    # the subset example names real ids: the baseline and the last hand-written rung of the run
    example = ",".join([run.baseline, run.top(set(run.results["kernel"]))])
    return [
        "```bash",
        'pip install -e ".[dev]"',
        *(
            [f"git checkout {commit}   # the commit these rows came from"]
            if commit and commit != "unknown"
            else []
        ),
        "python -m study.run                # measure every kernel and experiment here -> out/",
        f"python -m study.run --kernels {example} --experiments main,strides --out out   # a subset",
        f"python -m study.report {out}      # re-derive and re-render from {out}/data/ (no GPU needed)"
        + ("; DIR holds this REPORT.md" if out == "DIR" else ""),
        "```",
        "",
    ]
