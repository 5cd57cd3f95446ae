"""What a resume does to the metric rows a killed run logged (`sate.train.progress.drop_rows_after`), on logs that
are not as Lightning wrote them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sate.errors import SateError
from sate.train.progress import drop_killed_run_rows, drop_rows_after

HEADER = "epoch,lr,step,train/loss\n"


def log(exp: Path, version: int, body: bytes) -> Path:
    path = exp / "logs" / f"version_{version}" / "metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_bytes(HEADER.encode() + body)
    return path


def test_rows_after_the_resumed_step_are_dropped_and_a_step_past_any_number_with_them(tmp_path: Path) -> None:
    """A step of inf (or 1e999) was an OverflowError traceback at the resume (tenth hostile pass); it is dropped as
    a row cut short is."""
    path = log(tmp_path, 0, b"0,0.1,0,5.0\n0,0.1,1,4.0\n0,0.1,2,3.0\n0,0.1,inf,2.0\n0,0.1,1e999,2.0\n0,0.1,x,1\n")
    assert drop_rows_after(tmp_path, 2) == 4
    assert path.read_text() == HEADER + "0,0.1,0,5.0\n0,0.1,1,4.0\n"


def test_a_folder_beside_lightnings_versions_is_left_as_it_is(tmp_path: Path) -> None:
    """Only Lightning's ``logs/version_N/`` are cut at a resume (`metric_logs`, the list `check_run_folders`
    checks): a user's ``version_old`` lost its rows past the resumed step, and a ``version_other`` linked to
    another experiment's log folder cut that experiment's log, exit 0 (seventeenth hostile pass)."""
    exp, other = tmp_path / "exp", tmp_path / "other"
    ours = log(exp, 0, b"0,0.1,1,4.0\n0,0.1,3,2.0\n")
    theirs = log(other, 0, b"0,0.1,1,4.0\n0,0.1,3,2.0\n")
    (exp / "logs" / "version_old").mkdir()
    mine = exp / "logs" / "version_old" / "metrics.csv"
    mine.write_text("step,train/loss,note\n1,8.0,kept\n5,3.0,my best run\n")
    (exp / "logs" / "version_other").symlink_to(other / "logs" / "version_0")
    notes = tmp_path / "notes.csv"  # and folders Lightning would not make, their logs linked to a user's CSV
    notes.write_text("step,note\n0,keep\n5,keep too\n")
    for name in ("version_-1", "version_²"):
        (exp / "logs" / name).mkdir()
        (exp / "logs" / name / "metrics.csv").symlink_to(notes)
    kept = {path: path.read_bytes() for path in (mine, theirs, notes)}
    assert drop_rows_after(exp, 2) == 1
    assert ours.read_text() == HEADER + "0,0.1,1,4.0\n"
    assert {path: path.read_bytes() for path in kept} == kept


def test_a_log_that_is_not_utf8_is_one_line_naming_it(tmp_path: Path) -> None:
    """Bytes of another encoding were a UnicodeDecodeError traceback at the resume (tenth hostile pass); the line
    is named, as `sate report --curves` names it."""
    log(tmp_path, 0, b"0,0.1,0,5.0\n")
    path = log(tmp_path, 1, b"0,0.1,1,4.0\n\xff\xfe,1,2,3\n")
    with pytest.raises(SateError, match=rf"^{path}:3: not valid UTF-8"):
        drop_rows_after(tmp_path, 1)


def test_a_log_whose_lines_end_with_a_carriage_return_alone_is_said_so(tmp_path: Path) -> None:
    """A log saved with lines ending in \\r alone was refused with the csv module's "do you need to open the file in
    universal-newline mode?", advice to a programmer (nineteenth hostile pass)."""
    path = tmp_path / "logs" / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"epoch,step,loss\r0,1,5.0\r0,2,4.0\r")
    with pytest.raises(SateError, match=rf"^{path}:1: not a row of a CSV log: a carriage return inside a line "
                                        r"\(lines that end with \\r alone\?\)"):
        drop_rows_after(tmp_path, 1)


def test_a_tail_of_nul_bytes_left_by_a_crash_is_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A power loss leaves the blocks the file system had not written as NUL bytes: the resume was refused, "a NUL
    byte: binary data, not text" (fourteenth hostile pass). The tail is cut back to the last whole row, saying so;
    a NUL before other text is still refused."""
    path = log(tmp_path, 0, b"0,0.1,0,5.0\n0,0.1,1,4.0\n0,0.1,2,3" + bytes(4000))
    assert drop_rows_after(tmp_path, 5) == 0
    assert path.read_text() == HEADER + "0,0.1,0,5.0\n0,0.1,1,4.0\n"
    assert capsys.readouterr().out == f"{path}: cut 4,009 bytes at its end, NUL bytes and the row they cut (a crash " \
                                      "before the file system wrote them)\n"
    path.write_bytes(HEADER.encode() + b"0,0.1,0,5.0\n\0\n0,0.1,1,4.0\n")
    with pytest.raises(SateError, match=rf"^{path}:3: a NUL byte"):
        drop_rows_after(tmp_path, 1)


def test_a_field_past_the_csv_limit_is_one_line_naming_it(tmp_path: Path) -> None:
    """A field of more than the csv module's 128 KiB was a _csv.Error traceback at the resume (seventeenth hostile
    pass)."""
    path = log(tmp_path, 0, b"0,0.1,0,5.0\n0,0.1,1," + b"9" * 200_000 + b"\n")
    with pytest.raises(SateError, match=rf"^{path}:3: not a row of a CSV log \(field larger"):
        drop_rows_after(tmp_path, 1)


def test_the_rows_kept_are_the_lines_they_were(tmp_path: Path) -> None:
    """A log edited by hand was rewritten as parsed at a resume: a field past the header's became ['EXTRA'], a
    quoted field over two lines lost its line break, and with an editor's byte-order mark before `step` no row was
    cut at all, so the resumed run logged its steps a second time (eighteenth hostile pass)."""
    kept = '0,0.1,0,5.0,my note\n0,0.1,1,"4.0\nsecond line"\n\n0,0.1\n'
    path = log(tmp_path, 0, (kept + "0,0.1,2,3.0\n0,0.1,3,2.0,extra\n").encode())
    assert drop_rows_after(tmp_path, 2) == 2
    assert path.read_text() == HEADER + kept
    other = tmp_path / "other"
    path = log(other, 0, b"")
    path.write_text("\ufeff" + HEADER + "0,0.1,1,4.0\n0,0.1,2,3.0\n")
    assert drop_rows_after(other, 2) == 1
    assert path.read_text() == "\ufeff" + HEADER + "0,0.1,1,4.0\n"


@pytest.mark.parametrize("text", ['{"seconds": 1e400, "runs": 1}', '{"seconds": -5, "runs": 1}',
                                  '{"seconds": 5, "runs": -1}', '{"seconds": "60", "runs": 1}',
                                  '{"seconds": 5, "runs": 1.5}', '{"seconds": NaN, "runs": 1}', "[]", "garbage"])
def test_a_train_time_record_out_of_range_starts_the_time_again(tmp_path: Path, text: str) -> None:
    """A hand-edited EXP/train_time.json was added to as it stood: seconds of 1e400 were written back as `Infinity`
    (no JSON number), -5 as -4.0, run after run (twelfth hostile pass); damage of any kind starts again at zero."""
    from sate.train.train_time import read_train_time

    (tmp_path / "train_time.json").write_text(text)
    assert read_train_time(tmp_path) == {"seconds": 0.0, "runs": 0}
    (tmp_path / "train_time.json").write_text('{"seconds": 12.5, "runs": 2}')
    assert read_train_time(tmp_path) == {"seconds": 12.5, "runs": 2}


def _snapshot(exp: Path, **trainer: object) -> None:
    exp.mkdir(parents=True, exist_ok=True)
    (exp / "config.yaml").write_text(yaml.safe_dump({"task": "asr", "trainer": {"max_epochs": 3, **trainer}}))


def test_a_fresh_start_drops_the_rows_of_a_run_stopped_before_its_first_checkpoint_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fresh start dropped every row of every log, a finished run's too when its checkpoints were moved away or
    deleted (29th hostile pass, review29c): only the newest log's rows, all of epoch 0 with no validation value,
    under a snapshot that neither ends nor checkpoints a run inside an epoch, are a killed run's; said in one line."""
    killed, finished = tmp_path / "killed", tmp_path / "finished"
    _snapshot(killed)
    path = log(killed, 0, b"0,0.1,0,5.0\n0,0.1,1,4.0\n")
    assert drop_killed_run_rows(killed) == 2 and path.read_text() == HEADER
    said = capsys.readouterr().out.strip()
    assert said == f"{path}: dropped its 2 rows, of a run stopped inside its first epoch before any checkpoint: this " \
                   "run logs those steps again", said
    _snapshot(finished)
    rows = "epoch,lr,step,train/loss,valid/loss\n0,0.1,0,5.0,\n0,,0,,4.5\n1,0.1,1,4.0,\n1,,1,,3.5\n"
    mine = finished / "logs" / "version_0" / "metrics.csv"
    mine.parent.mkdir(parents=True)
    mine.write_text(rows)
    assert drop_killed_run_rows(finished) == 0 and mine.read_text() == rows
    mine.write_text(rows.replace("1,", "0,"))  # one epoch, validated: a finished run of max_epochs 1
    assert drop_killed_run_rows(finished) == 0
    mine.write_text(HEADER + "0,0.1,0,5.0\n0,0.1,1,4.0\n")  # an older log: the newest is the run's
    newest = log(finished, 1, b"1,0.1,2,3.0\n")
    assert drop_killed_run_rows(finished) == 0 and newest.read_text() == HEADER + "1,0.1,2,3.0\n"


@pytest.mark.parametrize("trainer", [{"max_steps": 2}, {"max_minutes": 1.0}, {"checkpoint_every_steps": 1},
                                     {"checkpoint_every_minutes": 0.5}])
def test_a_run_that_may_have_ended_or_checkpointed_inside_its_first_epoch_keeps_its_rows(
        tmp_path: Path, trainer: dict) -> None:
    """max_steps or max_minutes ends a run inside epoch 0 unvalidated, checkpoint_every_* writes last.ckpt there:
    rows of epoch 0 alone may be a finished or checkpointed run's, kept when its checkpoints are gone."""
    _snapshot(tmp_path, **trainer)
    path = log(tmp_path, 0, b"0,0.1,0,5.0\n0,0.1,1,4.0\n")
    assert drop_killed_run_rows(tmp_path) == 0 and path.read_text() == HEADER + "0,0.1,0,5.0\n0,0.1,1,4.0\n"


def test_a_fresh_start_leaves_a_log_or_snapshot_that_does_not_read(tmp_path: Path) -> None:
    """A killed run's log that is not UTF-8 was refused at a fresh start with no way on (review29c); the run
    starts afresh as it did before, the log left as it is; so with no snapshot, or one that is not YAML."""
    _snapshot(tmp_path)
    path = log(tmp_path, 0, b"0,0.1,0,caf\xe9\n")
    assert drop_killed_run_rows(tmp_path) == 0 and path.read_bytes() == HEADER.encode() + b"0,0.1,0,caf\xe9\n"
    path.write_text(HEADER + "0,0.1,0,5.0\n")
    (tmp_path / "config.yaml").write_text("trainer: [")
    assert drop_killed_run_rows(tmp_path) == 0
    (tmp_path / "config.yaml").unlink()
    assert drop_killed_run_rows(tmp_path) == 0 and path.read_text() == HEADER + "0,0.1,0,5.0\n"
