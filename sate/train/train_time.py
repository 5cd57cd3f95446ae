"""EXP/train_time.json, the wall-clock seconds of every run and resume of an experiment together.

Kept apart from the Lightning callback that writes it (`sate.train.progress`) so that reading it imports no
Lightning."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from sate import layout
from sate.files import read_record


class TrainTimeRecord(TypedDict):
    """EXP/train_time.json: wall-clock seconds of every run and resume together, and how many runs."""

    seconds: float
    runs: int


def read_train_time(exp: Path) -> TrainTimeRecord:
    """The record, or zero seconds in zero runs when it is missing or damaged (the time then starts again)."""
    record = read_record(Path(exp) / layout.TRAIN_TIME)
    try:
        return TrainTimeRecord(seconds=float(record["seconds"]), runs=int(record["runs"]))  # type: ignore[index]
    except (ValueError, KeyError, TypeError, OverflowError):
        return TrainTimeRecord(seconds=0.0, runs=0)
