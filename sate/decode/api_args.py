"""The arguments of the Python API (`sate.decode.api`), checked: a wrong one is one `SateError` naming it.

The CLI checks its options before it calls the API; a program calling the API directly was not checked at all, and
got a traceback from deep inside numpy or torch (`batch_size=1.5`, a NaN sample rate, features of 81 columns, no
frames) or, worse, an answer: a single path given where a list goes was read character by character ("/: is a
directory"), `translate_text("hello")` translated five letters, and a sample rate of 16000.9 Hz was taken as 16000.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import asdict
from pathlib import Path
from typing import TypeVar

import numpy as np

from sate.data.audio import as_array
from sate.decode.options import DecodeOptions
from sate.decode.options import decode_options as checked_options
from sate.errors import SateError, shown
from sate.files import given_path
from sate.numbers import is_int64, is_number, plain

T = TypeVar("T")


def many(values: Iterable[T], what: str) -> Iterable[T]:
    """``values`` as a list or iterable of ``what``, refusing one value given where several go: a string or a path
    (read as its characters), bytes, or a bare ``(samples, sample_rate)`` pair (read as two inputs)."""
    if isinstance(values, str | bytes | Path):
        raise SateError(f"{what}: expected a list, got a single {type(values).__name__} ({shown(values)}); pass it "
                        "in a list")
    if isinstance(values, tuple) and len(values) == 2 and isinstance(values[0], np.ndarray) and is_number(values[1]):
        raise SateError(f"{what}: expected a list, got one (samples, sample_rate) pair; pass [(samples, rate)]")
    if not isinstance(values, Iterable):  # None or a number was "TypeError: 'NoneType' object is not iterable"
        raise SateError(f"{what}: expected a list, got {type(values).__name__}")
    if isinstance(values, Mapping | Set):  # a dict's keys were read as the inputs, a set's in an order of its own
        why = "its keys would be read" if isinstance(values, Mapping) else "it has no order to give the results in"
        raise SateError(f"{what}: expected a list, got a {type(values).__name__} ({why}); pass a list")
    return values


def directory(value: object) -> Path:
    """A pack's directory as a str or a path: None, a number or bytes were TypeErrors of Path(); '' is '.' to Path,
    named as such."""
    return given_path(value, "directory")


def batch_size(value: object) -> int:
    value = plain(value)
    if not is_int64(value) or value < 1:  # type: ignore[operator]
        raise SateError(f"batch_size must be a whole number from 1 to 2**63-1, got {shown(value)}")  # 10**20 is whole
    return int(value)  # type: ignore[call-overload]


def decode_options(value: object) -> DecodeOptions | None:
    """None (the pack's options) or a `DecodeOptions`; a dict was an AttributeError deep in beam search. One built
    directly is checked as `with_options` checks its values: `DecodeOptions(beam=2.5)` was a TypeError deep in torch,
    and a beam or max_len_ratio past the bounds docs/inference.md gives was decoded (25th hostile pass)."""
    if value is None:
        return None
    if not isinstance(value, DecodeOptions):
        raise SateError(f"options must be DecodeOptions (e.g. translator.with_options(beam=10)), got "
                        f"{type(value).__name__}")
    return checked_options(option_values(value), "options")


def option_values(options: DecodeOptions) -> dict[str, object]:
    """The fields of a `DecodeOptions`, each as `plain` gives it, for a check of their types (here and in
    `beam_search`): `DecodeOptions(beam=np.int64(4))` of a sweep over `np.arange` is accepted, as `with_options` accepts
    it; the check of its types refused it as "no integer" (25th hostile pass)."""
    return {key: plain(value) for key, value in asdict(options).items()}


def is_rate(value: object) -> bool:
    """Whether ``value`` reads as a sample rate (a whole number of Hz above zero), and not as samples."""
    value = plain(value)
    return is_number(value) and value == int(value) and value > 0  # type: ignore[arg-type, operator]


def sample_rate(value: object, name: str) -> int:
    """A whole number of Hz (an int, or a float such as 16000.0): NaN, None or "16k" were tracebacks of int(), and
    16000.9 was truncated without a word. Its range is the reader's (`sate.data.audio.check_rate`)."""
    value = plain(value)
    if not is_number(value) or value != int(value):  # type: ignore[arg-type]
        raise SateError(f"{name}: the sample rate must be a whole number of Hz, got {shown(value)}")
    return int(value)  # type: ignore[arg-type]


def texts(values: Sequence[str]) -> Sequence[str]:
    values = list(many(values, "texts"))  # a generator too: read once, indexed below
    bad = next((i for i, t in enumerate(values) if not isinstance(t, str)), None)
    if bad is not None:
        raise SateError(f"texts[{bad}]: expected a str, got {type(values[bad]).__name__}")
    for i, text in enumerate(values):  # a lone surrogate (text read with errors="surrogateescape") was a TypeError
        try:                           # deep in SentencePiece
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise SateError(f"texts[{i}]: not Unicode text: {shown(text[err.start])} at character {err.start} is a "
                            "lone surrogate (bytes that were not UTF-8, read with errors='surrogateescape'?)") from None
    return values


MAX_FEATURE = 1e6  # far beyond any fbank or waveform value, far below what overflows float32 in the encoder


def features(values: Sequence[np.ndarray], columns: int | None, least: int) -> list[np.ndarray]:
    """Feature matrices as `SpeechTranslator.features` gives them: (T, ``columns``) float arrays (a hub acoustic
    encoder's: waveforms (T,) with ``columns`` None), T at least ``least`` (what 0.1 s gives), every value finite
    and within ±`MAX_FEATURE`.
    81 columns decoded without a word; no frames, too few or NaN were tracebacks from torch or ESPnet."""
    shape = "(T,)" if columns is None else f"(T, {columns})"
    # `decode_features(st.features(w))`: one matrix, read row by row: "feats[0]: expected an array of shape (T, 80),
    # got (80,)" (thirty-first hostile pass); a numpy object array of ragged waveforms is a list of them (review31z)
    ragged = getattr(getattr(values, "dtype", None), "kind", "") == "O"
    if getattr(values, "ndim", None) == (1 if columns is None else 2) and not ragged:
        raise SateError(f"feats: one array of shape {tuple(values.shape)}, not a list of them: pass it in a list "
                        "([feats])")
    out = []
    for i, value in enumerate(many(values, "feats")):
        x = as_array(value, f"feats[{i}]", f"an array of shape {shape}")
        if x.ndim != (1 if columns is None else 2) or (columns is not None and x.shape[1] != columns):
            raise SateError(f"feats[{i}]: expected an array of shape {shape}, got {x.shape}")
        if not np.issubdtype(x.dtype, np.floating):
            raise SateError(f"feats[{i}]: expected float values, got {x.dtype}")
        if x.dtype.itemsize > 8:  # long double: torch has no such type (a TypeError when the batch was padded)
            x = x.astype(np.float64)
        if x.dtype.itemsize < 4:  # float16: MAX_FEATURE is inf in its type (numpy's overflow warning, inf passed)
            x = x.astype(np.float32)
        if len(x) < least:
            unit = "samples" if columns is None else "frames"  # a waveform's were called frames
            raise SateError(f"feats[{i}]: {len(x)} {unit}, fewer than the {least} of 0.1 s (features() pads to them)")
        if not np.isfinite(x).all():
            raise SateError(f"feats[{i}]: holds NaN or infinite values")
        if np.abs(x).max() > MAX_FEATURE:  # 1e38 overflowed in the encoder, and was blamed on the model's weights
            raise SateError(f"feats[{i}]: a value of {float(np.abs(x).max()):g}, beyond the ±{MAX_FEATURE:g} of any "
                            "feature (log-mel fbank lies within about ±30, a waveform within ±1)")
        out.append(x)
    return out
