"""The one exception type for bad input: the CLI turns it into one line on stderr and exit 2."""


class InputError(ValueError):
    """Bad input from the user (arguments, files, shapes): never a traceback, never a wrong number."""
