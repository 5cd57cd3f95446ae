"""Which CMVN statistics a model was trained with, carried in its checkpoints and its model file.

A model trained on globally normalised fbank learns features shifted by ``cmvn.json``'s means and scaled by its
standard deviations. `sate features` rewrites that file whenever the train split changes, so a resume, an average
or a pack made after it would feed the model differently normalised features without a word, as re-running
`sate vocab` would make it index other tokens. The record is the statistics themselves (80 means and 80 standard
deviations as float32 values, about 3 KB): the strongest fingerprint, and readable without the data directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sate.data.features import load_cmvn
from sate.errors import SateError

CmvnRecord = dict[str, list[float]]  # {"mean": [...], "std": [...]}
CMVN_KINDS = ("global", "utterance", "none")  # a speech model's data.cmvn


def recorded_kinds(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The normalisations a model file's header says it was trained with, each with what says so: global where it
    records the statistics, and its ``cmvn_kind`` (data.cmvn) where it records one. Features of any other kind are
    unlike any it was trained on: a pack, an analysis or a frozen teacher reading them is refused."""
    kinds = [("global", "it records the statistics")] if meta.get("cmvn") is not None else []
    if meta.get("cmvn_kind") in CMVN_KINDS:
        kinds.append((str(meta["cmvn_kind"]), "it records data.cmvn"))
    return kinds


def cmvn_record(path: Path) -> CmvnRecord:
    """The statistics of ``path`` (a `cmvn.json`, checked by `load_cmvn`) as a checkpoint carries them."""
    mean, std = load_cmvn(path)
    return {"mean": mean.tolist(), "std": std.tolist()}


def cmvn_difference(record: object, path: Path) -> str | None:
    """None when ``path`` holds the recorded statistics, else where they first differ (for a one-line message)."""
    mean, std = load_cmvn(path)
    try:
        old = {name: np.asarray(record[name], dtype=np.float32) for name in ("mean", "std")}  # type: ignore[index]
    except (KeyError, TypeError, ValueError, IndexError, OverflowError):  # OverflowError: an int no float holds
        return "the recorded statistics are unreadable"
    for name, now in (("mean", mean), ("std", std)):
        if old[name].shape != now.shape:
            return f"{old[name].size} {name} values recorded, {now.size} now"
        if not np.array_equal(old[name], now):
            i = int(np.flatnonzero(old[name] != now)[0])
            return f"{name}[{i}] {float(old[name][i]):.6g} then, {float(now[i]):.6g} now"
    return None


def require_cmvn(record: object, path: Path, model: Path, advice: str = "") -> None:
    """Refuse ``path`` when ``model`` (a checkpoint or model file) recorded other statistics; a model without the
    record (written before sate kept it) is let be. ``advice`` ends the one-line message."""
    why = cmvn_difference(record, path) if record is not None else None
    if why is not None:
        raise SateError(f"{path}: not the CMVN statistics {model} was trained with ({why}){advice}")
