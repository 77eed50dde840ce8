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


def decode_counters(**read):
    """Counters at the decode shapes from tests/fixtures/bounds_decode: at 1 x 18944 x 3584
    (constructed) and KD's at 32 x 18944 x 3584 (measured), in the ncu.csv layout (``read``:
    pandas.read_csv's options)."""
    from pathlib import Path

    import pandas as pd

    here = Path(__file__).resolve().parent / "fixtures" / "bounds_decode"
    return pd.concat([pd.read_csv(here / f, **read) for f in ("ncu.csv", "ncu_b32.csv")], ignore_index=True)


def with_decode_counters():
    """The committed run's counters at 4096^3 and :func:`decode_counters`, as read_csv reads them."""
    from pathlib import Path

    import pandas as pd

    ref = pd.read_csv(Path(__file__).resolve().parent.parent / "reports" / "data" / "ncu.csv")
    return pd.concat([ref[ref["M"] == 4096], decode_counters()], ignore_index=True)


def reference_with_current_counters(dst, decode=False):
    """A copy of the committed run (reports/) in ``dst`` whose counters are marked as read at the
    commit its times were measured at, derived and rendered. The committed counters were read at
    earlier commits, so derive leaves them out as stale; the copy is what a run whose counters
    describe its times derives (counter tables, the bound model and its figure filled), for the
    tests of those tables and figures. ``decode``: :func:`decode_counters` added,
    for a bound model of several shapes (the reference run's counters are at 4096^3)."""
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
    if decode:
        ncu = pd.concat([ncu, decode_counters(dtype=str, keep_default_na=False)], ignore_index=True)
    ncu["commit"] = commit[0]
    ncu.to_csv(data / "ncu.csv", index=False)
    derive.derive(RunDir(dst), seed=RunDir(src), note=False)
    report.render(Path(dst))
    return Path(dst)


# --- running the CLIs as a user does, and what a refusal looks like ------------------------------

REPO = __import__("pathlib").Path(__file__).resolve().parent.parent


def cli(module: str, *args, cwd=REPO, env: dict | None = None, timeout: float = 600):
    """``python -m <module> args...`` as a user runs it."""
    import os
    import subprocess
    import sys

    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "MPLBACKEND": "Agg", **(env or {})}
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


def refused(p, *words: str) -> str:
    """Assert exit 2, no traceback and exactly one stderr line, ``error: ...``, holding every one
    of ``words`` (case-insensitive); return that line."""
    shown = f"rc={p.returncode}\nstderr:\n{p.stderr}\nstdout:\n{p.stdout[-2000:]}"
    assert p.returncode == 2, shown
    assert "Traceback" not in p.stderr, shown
    got = lines(p.stderr)
    assert len(got) == 1, shown
    assert got[0].startswith("error:"), shown
    for w in words:
        assert w.lower() in got[0].lower(), f"{w!r} not in: {got[0]}"
    return got[0]


def succeeded(p) -> None:
    assert p.returncode == 0, f"rc={p.returncode}\nstderr:\n{p.stderr}\nstdout:\n{p.stdout[-2000:]}"
    assert "Traceback" not in p.stderr, p.stderr


# --- a measuring run on the CPU: the steps that need a device replaced ---------------------------

TEST_GPU = dict(name="Test GPU", sms=132, fp32_lanes_per_sm=128, sm_clock_mhz=1980.0, mem_clock_mhz=3201.0,
                bus_width_bits=6016, l2_bytes=60 * 2**20, cc="9.0")


def stub_device(monkeypatch, measure) -> None:
    """Replace what ``study.run`` measures on a device: free memory, the GPU's description (an
    H200-like Test GPU), the L2 flush, the correctness sweep (every kernel passes), each
    measurement (``measure(self, kernel, shape)``, the Measurer's call) and the bandwidth roofs
    (1 GiB read in 0.25 ms, copied in 0.5 ms)."""
    import torch

    from study.measure import bench, device
    from study.measure import plan as measuring
    from study.rundata.gpu import GPU

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (100 * 2**30, 141 * 2**30))
    monkeypatch.setattr(device, "from_device", lambda index=0: GPU(**TEST_GPU))
    monkeypatch.setattr("study.measure.bench.L2Flush", lambda l2: (lambda: None))
    monkeypatch.setattr(measuring, "correctness_sweep", lambda chosen: {})
    monkeypatch.setattr(measuring.Measurer, "__call__", measure)
    monkeypatch.setattr("study.measure.bench.bandwidth_roofs", lambda l2: (
        bench.bandwidth(2**30, [0.25] * 10), bench.bandwidth(2**31, [0.5] * 10)))


def _sass_tools_missing() -> bool:
    from study.toolchain import tools

    return tools.find_nvcc() is None or tools.find_cuobjdump() is None


needs_tools = pytest.mark.skipif(
    _sass_tools_missing(),
    reason="needs nvcc and cuobjdump (PATH or the triton wheel) to compile and dump SASS",
)


def gluon_module(name: str):
    """A Gluon kernel's module, or a skip naming why this Triton cannot build it (not importable, or
    the module's ``unsupported_reason``)."""
    import importlib

    try:
        mod = importlib.import_module(name)
    except ImportError as e:
        pytest.skip(f"{name}: triton.experimental.gluon not importable: {e}")
    why = mod.unsupported_reason()
    if why:
        pytest.skip(why)
    return mod
