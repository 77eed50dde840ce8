import pytest


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


HAS_CUDA = _has_cuda()


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; none is present on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def reference_with_current_counters(dst):
    """A copy of the committed run (reports/) in ``dst`` whose counters are marked as read at the
    commit its times were measured at, derived and rendered. The committed counters were read at
    earlier commits, so derive leaves them out as stale; the copy is what a run whose counters
    describe its times derives (counter tables, the bound model and its figure filled), for the
    tests of those tables and figures."""
    import shutil
    from pathlib import Path

    import pandas as pd

    from study import derive, report
    from study.rundata.rundir import RunDir

    src = Path(__file__).resolve().parent.parent / "reports"
    shutil.copytree(src / "data", Path(dst) / "data")
    data = Path(dst) / "data"
    commit = pd.read_csv(data / "results.csv", dtype=str)["commit"].dropna().unique()
    assert len(commit) == 1, commit
    ncu = pd.read_csv(data / "ncu.csv", dtype=str, keep_default_na=False)
    ncu["commit"] = commit[0]
    ncu.to_csv(data / "ncu.csv", index=False)
    derive.derive(RunDir(dst), seed=RunDir(src), note=False)
    report.render(Path(dst))
    return Path(dst)
