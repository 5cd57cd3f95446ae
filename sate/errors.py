"""One exception type for every user-facing error, and how values are shown in its messages.

The CLI prints its message on one line and exits with status 2, so bad input never ends
in a traceback from deep inside torch. Messages name the file, line or key at fault, and show
a value at most `shown`'s few dozen characters long; `one_line` escapes what a file name could
bring into one (a newline, a terminal's escape sequence).
"""

import reprlib
import unicodedata


class _Repr(reprlib.Repr):
    """reprlib's short repr, with a whole number too long for Python to write in decimal (beyond 4,300 digits, a
    4,000-digit ``0x...`` in YAML) shown by its size: ``repr`` itself raises ValueError on it."""

    def repr_int(self, x: int, level: int) -> str:
        try:
            return super().repr_int(x, level)
        except ValueError:
            return f"<a whole number of {x.bit_length():,} bits>"


_REPR = _Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 2, 60, 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4


class SateError(Exception):
    """An error caused by the user's input (files, configs, checkpoints), not by a bug."""


def out_of_memory(err: BaseException) -> bool:
    """Did an allocation fail: Python's MemoryError, torch's OutOfMemoryError (a GPU) or the CPU allocator's
    RuntimeError ("can't allocate memory")? Told by name and message, so that asking never imports torch."""
    return isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError" or \
        (isinstance(err, RuntimeError) and "can't allocate memory" in str(err))


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, without ever building the whole repr: a value from a YAML alias
    bomb or a megabyte line stays a short part of a one-line message."""
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


# Characters printed as Python escapes: control characters (a newline, a terminal's ESC), line and paragraph
# separators, and the lone surrogates that stand for the bytes of a file name that is not UTF-8.
_ESCAPED = frozenset(("Cc", "Cs", "Zl", "Zp"))


def one_line(text: str) -> str:
    """``text`` with those characters escaped (``\\n``, ``\\x1b``, ``\\u2028``, ``\\udcff``): a message or a field
    naming a hostile file stays one line, leaves the terminal alone and can be encoded as UTF-8."""
    return "".join(repr(c)[1:-1] if unicodedata.category(c) in _ESCAPED else c for c in text)
