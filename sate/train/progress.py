"""What a run leaves on disk as it goes, so that a killed run is accounted for: time and metric rows.

`EXP/train_time.json` adds up the wall-clock time of every run and resume. It is rewritten at the start,
at every checkpoint and every minute, so a run killed with SIGKILL loses at most a minute of its time.
Metric rows (`EXP/logs/version_N/metrics.csv`) are flushed as they are logged; a resume drops the rows a
killed run logged after the checkpoint it resumes from, so the versions together hold each step once.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import Callback

from sate import layout
from sate.data.manifest import MAX_TEXT_BYTES, csv_records
from sate.errors import SateError, one_line
from sate.files import atomic_open, atomic_write_text, not_a_file
from sate.targets import metric_logs
from sate.train.train_time import TrainTimeRecord, read_train_time

WRITE_EVERY_S = 60.0


class TrainTime(Callback):
    """Keeps EXP/train_time.json current while this run trains (global rank 0 writes)."""

    def __init__(self, exp: Path, started: float) -> None:
        self.exp = Path(exp)
        self.started = started  # time.perf_counter() when this run started
        self.base = read_train_time(exp)
        self._written = 0.0
        self._primary = True

    def write(self) -> None:
        if not self._primary:
            return
        seconds = self.base["seconds"] + time.perf_counter() - self.started
        record = TrainTimeRecord(seconds=round(seconds, 1), runs=self.base["runs"] + 1)
        atomic_write_text(self.exp / layout.TRAIN_TIME, json.dumps(record))
        self._written = time.perf_counter()

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        self._primary = trainer.is_global_zero
        self.write()

    def on_train_batch_end(self, trainer: L.Trainer, *args: Any) -> None:
        if time.perf_counter() - self._written >= WRITE_EVERY_S:
            self.write()

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict) -> None:
        self.write()


def drop_rows_after(exp: Path, step: int) -> int:
    """Remove rows with `step` >= `step` from each of Lightning's metric logs under EXP/logs (atomically); returns
    how many. Only `metric_logs`' list, the one `check_run_folders` checked: a folder of another name
    (``version_old``, a link to another experiment's log folder) is not Lightning's, and a resume cut its rows
    (seventeenth hostile pass)."""
    dropped = 0
    for path in metric_logs(Path(exp)):
        # a named pipe there blocked the resume for ever, waiting for a writer (fifteenth hostile pass); a
        # directory or a loop is named too
        not_a_file(path, "a training log (sate train writes its metric rows there)")
        _cut_crash_tail(path)
        # UTF-8 without a NUL byte, or one line naming the line (as `sate report --curves` reads it): bytes of
        # another encoding were a UnicodeDecodeError traceback at the resume. The rows kept are their lines as
        # they were: rewritten as parsed, a field past the header's became ['EXTRA'] and a quoted field over two
        # lines one line (eighteenth hostile pass)
        lines, records = csv_records(path)
        kept, start, cut, column = [], 0, 0, None
        for record, end in records:
            if column is None and record:  # the header: the first record that is not a blank line
                names = [record[0].removeprefix("\ufeff"), *record[1:]]  # an editor's byte-order mark: no row was
                column = names.index("step") if "step" in names else -1  # cut at all
            elif column is not None and 0 <= column < len(record) and _after(record[column], step):
                cut += 1
                start = end
                continue
            kept.extend(lines[start:end])
            start = end
        if cut:
            dropped += cut
            atomic_write_text(path, "".join(line + "\n" for line in kept))
    return dropped


def drop_killed_run_rows(exp: Path) -> int:
    """On a fresh start, the rows of the newest log when they can only be a run's stopped before its first
    checkpoint, which this run logs again (`sate report --curves` drew both as one line going back: 29th hostile
    pass); returns how many. Only when every row is of epoch 0 with no validation value, and the run's snapshot
    (EXP/config.yaml, not yet rewritten) set no max_steps, max_minutes or checkpoint_every_*, which end or checkpoint a
    run inside its first epoch: a finished run validated at least once, so the rows of one whose checkpoints were
    moved away or deleted are kept. A log or snapshot that does not read is left as it is, as before."""
    from sate.config import read_yaml  # the snapshot as `sate config` reads it

    logs = metric_logs(Path(exp))
    if not logs or not logs[-1].is_file() or logs[-1].stat().st_size > MAX_TEXT_BYTES:
        return 0
    path = logs[-1]
    try:
        trainer = read_yaml(Path(exp) / layout.CONFIG).get("trainer")
        lines, records = csv_records(path)
    except (SateError, OSError):
        return 0
    if not isinstance(trainer, dict) or trainer.get("max_steps", -1) not in (-1, None) or any(
            trainer.get(key) not in (None, 0) for key in ("max_minutes", "checkpoint_every_minutes",
                                                          "checkpoint_every_steps")):
        return 0
    rows = [record for record in records if record[0]]
    if not rows:
        return 0
    names = [rows[0][0][0].removeprefix("\ufeff"), *rows[0][0][1:]]
    if "step" not in names or "epoch" not in names:
        return 0
    epoch, valid = names.index("epoch"), [i for i, name in enumerate(names) if name.startswith("valid/")]
    for record, _ in rows[1:]:
        if len(record) > len(names) or any(record[i] for i in valid if i < len(record)):
            return 0
        if epoch < len(record) and record[epoch] and not _is_zero(record[epoch]):
            return 0
    if len(rows) == 1:
        return 0
    atomic_write_text(path, "".join(line + "\n" for line in lines[: rows[0][1]]))
    print(f"{one_line(str(path))}: dropped its {len(rows) - 1} rows, of a run stopped inside its first epoch before "
          "any checkpoint: this run logs those steps again")
    return len(rows) - 1


def _is_zero(value: str) -> bool:
    try:
        return float(value) == 0
    except ValueError:
        return False


def _cut_crash_tail(path: Path) -> None:
    """Cut a tail of NUL bytes back to the last whole row: what a file system leaves of the blocks a crash (a power
    loss) kept it from writing. The resume was refused ("a NUL byte: binary data, not text"), with no way on but
    editing the log; a NUL anywhere else still is."""
    if not path.is_file() or path.stat().st_size > MAX_TEXT_BYTES:  # read as any text, bounded, by the caller
        return
    data = path.read_bytes()
    kept = data.rstrip(b"\0")
    if len(kept) == len(data) or b"\0" in kept:
        return
    kept = kept[: kept.rfind(b"\n") + 1]
    with atomic_open(path, "wb") as f:
        f.write(kept)
    print(f"{one_line(str(path))}: cut {len(data) - len(kept):,} bytes at its end, NUL bytes and the row they cut "
          "(a crash before the file system wrote them)")


def _after(value: str, step: int) -> bool:
    try:
        return int(float(value or -1)) >= step
    except (ValueError, OverflowError):  # OverflowError: a step of inf or 1e999
        return True  # a row cut short by a kill
