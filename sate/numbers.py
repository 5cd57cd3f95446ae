"""What counts as a number in a file sate reads (YAML, JSON): one rule for configs, manifests and results.

A whole number in YAML or JSON has no size limit, and Python reads `10**400` (or a 4,000-digit `0x...`) as an
int that no float can hold: `math.isfinite` and `float()` raise `OverflowError` on it, and a check written for
floats ended in a traceback. Here such an int is simply not a number a value may take.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys

from sate.errors import SateError, shown

FLOAT_MAX = sys.float_info.max
INT64 = (-(1 << 63), (1 << 63) - 1)  # what torch and numpy hold in an integer


def is_number(value: object) -> bool:
    """Is ``value`` a real number that a float holds: an int or float, not a bool, not NaN or infinite, and not an
    int beyond the float range (compared exactly, so nothing overflows)?"""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return -FLOAT_MAX <= value <= FLOAT_MAX
    return math.isfinite(value)


def bound_text(value: object) -> str:
    """A number as a range check's message gives it: a float as ``:g`` writes it (0.5, -1, nan) where that is the
    value, else in full, since ``:g`` keeps 6 digits: "at most 120 s, got 120" refused 120.0001 (thirty-second hostile
    pass). A NumPy value is its number (np.float64(120.0001) is 120.0001); an int, or anything else, is cut as
    `shown` cuts values in messages: 10**300 was a line of 301 digits (review32s)."""
    value = plain(value)
    if not isinstance(value, float):
        return shown(value)
    text = f"{value:g}"
    return text if not math.isfinite(value) or float(text) == value else repr(value)


def is_int64(value: object) -> bool:
    """Is ``value`` a whole number (not a bool) that an int64 holds, as every count, size and seed torch takes?"""
    return isinstance(value, int) and not isinstance(value, bool) and INT64[0] <= value <= INT64[1]


def plain(value: object) -> object:
    """A NumPy scalar as the Python number it holds (np.int64(16000), np.float32(1.2): a rate read from an array, a
    value of a grid search), which the checks of the Python API took for no number at all; so is a 0-d array or
    tensor (np.array(16000), torch.tensor(16000): a rate from a dataset in torch format was "must be a whole number of
    Hz, got tensor(16000)", twentieth hostile pass); anything else as it is. Here, below every layer, so that the
    synth API takes a size as the decode API does (review of the twenty-seventh hostile pass)."""
    numpy = sys.modules.get("numpy")  # a NumPy value's caller has imported numpy
    if numpy is not None and (isinstance(value, numpy.generic)
                              or (isinstance(value, numpy.ndarray) and value.ndim == 0)):
        return value.item()
    torch = sys.modules.get("torch")  # a tensor's caller has imported torch
    if torch is not None and isinstance(value, torch.Tensor) and value.ndim == 0 and not value.is_meta:
        return value.item()
    return value


def is_digits(text: str) -> bool:
    """Is ``text`` a whole number written in 0-9 alone? `str.isdigit` also takes '²' or '٣', which `int()` then
    refuses (or reads as another number): a name part or an offset checked by it alone ended in a traceback."""
    return text.isascii() and text.isdigit()


# A decimal number as a corpus file writes one (MuST-C yaml, Kaldi segments): digits 0-9, a point, an exponent.
DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)


def decimal(text: str) -> float | None:
    """``text`` as a float when it is a plain decimal number (`DECIMAL`), else None. `float()` also reads '1_0' as
    10, '٣' as 3 and 'inf' or 'nan': an offset written so was taken as another number without a word."""
    return float(text) if DECIMAL.fullmatch(text.strip()) else None


WHOLE = re.compile(r"[+-]?[0-9]+", re.ASCII)


def whole_number(text: str) -> int:
    """An option's whole number (argparse's ``type=``): digits 0-9 with a sign. `int()` also reads '1_0' as 10, '٣'
    as 3 and ' 2 ' as 2, so `prep --min-duration 1_0` filtered at 10 s without a word (fifteenth hostile pass)."""
    if not WHOLE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"invalid whole number: {text!r} (digits 0-9)")
    return int(text)


def real_number(text: str) -> float:
    """An option's number (argparse's ``type=``), as `float()` reads it but for what it reads unlike a number
    written in a file: '1_0', non-ASCII digits ('٣'), spaces around it. `inf` and `nan` pass to the option's own
    range check, which names them."""
    if not text.isascii() or "_" in text or text != text.strip():
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}")
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None


def max_jobs() -> int:
    """The most worker processes a command starts (`--jobs`): four per CPU, at least 16. Voicing and fbank are
    CPU-bound, so more only compete for the cores, and each is a process of its own with its own memory."""
    return max(16, 4 * (os.cpu_count() or 1))


def check_jobs(jobs: int, option: str = "--jobs") -> None:
    """A worker count from 1 to `max_jobs`, or one line naming the option: `sate synth --jobs 1000000` started a
    process per job until the machine ran out (4,645 of them, load 372)."""
    if jobs < 1:
        raise SateError(f"{option} must be >= 1, got {jobs}")
    if jobs > max_jobs():
        raise SateError(f"{option} {jobs:,}: at most {max_jobs()} worker processes (four per CPU of this machine's "
                        f"{os.cpu_count() or 1}); each is a process of its own")

