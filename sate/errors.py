"""One exception type for every user-facing error.

The CLI prints its message on one line and exits with status 2, so bad input never ends
in a traceback from deep inside torch. Messages name the file, line or key at fault.
"""


class SateError(Exception):
    """An error caused by the user's input (files, configs, checkpoints), not by a bug."""
