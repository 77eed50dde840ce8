"""The one exception type for bad input: the CLI turns it into one line on stderr and exit 2."""


class InputError(ValueError):
    """Bad input from the user (arguments, files, shapes): never a traceback, never a wrong number."""


def first_line(e: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__
