"""What the four command-line tools share: the parser, value checks, one-line errors, exit codes.

Every CLI (``study.run``, ``study.report``, ``study.profile``, ``study.sweep``) builds its parser
with :class:`Parser`, converts values with the functions here, and runs its body through
:func:`main`: bad input is one line on stderr and exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import sys
from collections.abc import Callable
from pathlib import Path

from study.errors import InputError, first_line

EXIT_BAD_INPUT = 2
# an internal flag: accepted, but not shown by --help
HIDDEN = argparse.SUPPRESS


class Parser(argparse.ArgumentParser):
    """argparse that raises InputError (one line) instead of printing its usage and exiting."""

    def error(self, message):
        raise InputError(message)


def say(msg: str) -> None:
    """A progress or status line, on stderr so tables on stdout stay clean."""
    print(msg, file=sys.stderr, flush=True)


def main(body: Callable[[], int]) -> int:
    """Run a CLI body: InputError, or a file the system refuses to read or write (permissions, a
    read-only file system) -> ``error: <one line>`` and exit 2."""
    try:
        return body()
    except InputError as e:  # the message alone: the type adds nothing to a line of bad input
        text = str(e).strip()
        print(f"error: {text.splitlines()[0] if text else 'bad input'}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except OSError as e:  # a file refused by the system midway (permissions, a read-only mount): not a bug
        if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS) or not e.filename:
            raise
        print(f"error: {e.filename}: {e.strerror or e}", file=sys.stderr)
        return EXIT_BAD_INPUT


def positive_int(text: str, what: str = "sizes") -> int:
    text = str(text).strip()
    if not (text.isascii() and text.lstrip("+-").isdigit()):
        raise InputError(f"not an integer: {text!r}")
    v = int(text)
    if v <= 0:
        raise InputError(f"{what} must be positive integers; got {v}")
    return v


def positive_float(text, what: str) -> float:
    import math

    try:
        v = float(text)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be a positive number; got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise InputError(f"{what} must be a positive number; got {v}")
    return v


def parse_shape(text: str, flag: str = "--shape") -> tuple[int, int, int]:
    parts = str(text).split(",")
    if len(parts) != 3:
        raise InputError(f"{flag} takes M,N,K (three integers); got {text!r}")
    return tuple(positive_int(p) for p in parts)


def nonempty_list(text: str, flag: str, known) -> list[str]:
    """Items of a comma-separated flag value; an empty value (``''``, ``','``) is refused."""
    items = [s.strip() for s in str(text).split(",") if s.strip()]
    if not items:
        raise InputError(f"{flag} is empty; known: {', '.join(known)}")
    return items


def input_file(text: str | None, flag: str) -> Path:
    """An existing file named by ``flag``."""
    if text is None or not str(text).strip():
        raise InputError(f"{flag} needs a file name; got an empty value")
    path = Path(text)
    if not path.is_file():
        raise InputError(f"{flag} {text}: no such file")
    return path


def out_dir(text: str | None, flag: str = "--out") -> Path:
    """A directory to write a run into: not empty text, not a filesystem root, not a file.
    Nothing is created here (the run directory does that once the run is known to be allowed)."""
    if text is None or not str(text).strip():
        raise InputError(f"{flag} needs a directory; got an empty value")
    path = Path(text).expanduser()
    resolved = path.resolve()
    if resolved == Path(resolved.anchor):
        raise InputError(f"{flag} {text}: a filesystem root is not a run directory")
    if path.exists() and not path.is_dir():
        raise InputError(f"{flag} {text}: is a file, not a directory")
    return path


def refuse_flags(given: dict[str, bool], mode: str) -> None:
    """InputError naming the first flag given that means nothing in ``mode``."""
    for flag, present in given.items():
        if present:
            raise InputError(f"{flag} means nothing {mode}; leave it out")


__all__ = [
    "EXIT_BAD_INPUT",
    "HIDDEN",
    "Parser",
    "first_line",
    "input_file",
    "main",
    "nonempty_list",
    "out_dir",
    "parse_shape",
    "positive_float",
    "positive_int",
    "refuse_flags",
    "say",
]


def check_sweep_flags(args) -> None:
    """The flags both sweeps share (``study.sweep``, ``study.sweep_cuda``): --jobs and --top at
    least 1, --budget-s and --target-s positive numbers of seconds."""
    for name in ("jobs", "top"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')} must be at least 1")
    for name in ("budget_s", "target_s"):
        if not getattr(args, name) > 0:
            raise InputError(f"--{name.replace('_', '-')} must be a positive number of seconds")


def sweep_dir(text: str | None):
    """The run directory a sweep measures into (``--out``), created, on the present GPU: an
    InputError without one, or where the directory holds another GPU's run (a sweep adds to the
    same GPU's rows)."""
    out = out_dir(text)
    import torch

    if not torch.cuda.is_available():
        raise InputError("the sweep measures: it needs a CUDA GPU, and none is visible")
    from study.measure import device
    from study.rundata import rundir

    gpu = device.from_device()
    rd = rundir.RunDir(out)
    rd.claim_measurement(rundir.identity(gpu.name, gpu.cc, gpu.sms), resume=True)  # one GPU per directory
    rd.create()
    return out
