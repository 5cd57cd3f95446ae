"""EXP/train_time.json, the wall-clock seconds of every run and resume of an experiment together.

Kept apart from the Lightning callback that writes it (`sate.train.progress`) so that reading it imports no
Lightning."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from sate import layout
from sate.files import read_record
from sate.numbers import is_int64, is_number


class TrainTimeRecord(TypedDict):
    """EXP/train_time.json: wall-clock seconds of every run and resume together, and how many runs."""

    seconds: float
    runs: int


MAX_TRAIN_SECONDS = 1e12  # over 30,000 years: no run trains longer, and a hand-edited value beyond is no time


def read_train_time(exp: Path) -> TrainTimeRecord:
    """The record, or zero seconds in zero runs when it is missing or damaged (the time then starts again). A value
    out of range is damage too: seconds of 1e400 were added to and written back as `Infinity` (no JSON number),
    -5 as -4.0, each run after run."""
    record = read_record(Path(exp) / layout.TRAIN_TIME, "`sate train`")
    seconds, runs = (record.get("seconds"), record.get("runs")) if isinstance(record, dict) else (None, None)
    if not (is_number(seconds) and 0 <= seconds <= MAX_TRAIN_SECONDS and is_int64(runs) and runs >= 0):
        return TrainTimeRecord(seconds=0.0, runs=0)
    return TrainTimeRecord(seconds=float(seconds), runs=int(runs))  # type: ignore[arg-type]
