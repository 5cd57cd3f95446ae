"""`sate train --exp DIR` goes into a new or empty directory or an experiment, never into a data directory or a
folder of other things: refused in one line before anything is written."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from sate import layout
from sate.cli import main
from sate.errors import SateError
from sate.targets import check_output, check_run_folders


def listing(directory: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(directory)), p.stat().st_mtime_ns) for p in directory.rglob("*"))


def test_a_data_directory_or_a_folder_of_other_things_is_refused_before_anything_is_written(
        tmp_path: Path, prepared_data: Path, make_config: Callable[..., Path],
        capsys: pytest.CaptureFixture[str]) -> None:
    config = make_config(tmp_path, "mt", prepared_data)
    data = shutil.copytree(prepared_data, tmp_path / "data")
    talks = tmp_path / "talks"
    talks.mkdir()
    (talks / "talk.wav").write_bytes(b"RIFF")
    (talks / "notes.txt").write_text("mine\n")
    for target, why in ((data, "it is a data directory (it holds "), (talks, "it holds notes.txt and 1 more")):
        before = listing(target)
        assert main(["train", "--config", str(config), "--exp", str(target)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"--exp {target}: refusing to train into it: {why}" in err, err
        assert listing(target) == before


def test_new_empty_and_experiment_directories_are_taken(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    assert check_output(fresh, "experiment", "--exp") == fresh
    started = tmp_path / "started"  # a recipe's log and a refused start's lock: no snapshot yet
    started.mkdir()
    for name in ("train.log", "train.lock", ".done-train"):
        (started / name).write_text("")
    assert check_output(started, "experiment", "--exp") == started
    experiment = tmp_path / "exp"
    (experiment / "decode_dev").mkdir(parents=True)  # an experiment may hold other things beside its own
    (experiment / layout.CONFIG).write_text("task: mt\n")
    assert check_output(experiment, "experiment", "--exp") == experiment
    (experiment / layout.VOCAB_META).write_text("{}")  # ... but never a data directory's files
    with pytest.raises(SateError, match="it is a data directory"):
        check_output(experiment, "experiment", "--exp")


def test_a_missing_speed_perturbed_split_names_the_command_that_writes_it(
        tmp_path: Path, prepared_data: Path, make_config: Callable[..., Path],
        capsys: pytest.CaptureFixture[str]) -> None:
    """train_sp.jsonl is written by `sate features --speed-perturb`; its absence said "run `sate prep`", which does
    not write it (a recipe run with a speech hub model and --speed-perturb true stopped on it; twelfth hostile
    pass)."""
    assert not (prepared_data / "train_sp.jsonl").exists()
    config = make_config(tmp_path, "asr", prepared_data)
    assert main(["train", "--config", str(config), "--exp", str(tmp_path / "exp"), "--set", "data.train=train_sp"]) == 2
    assert "train_sp.jsonl is missing (run `sate features --speed-perturb`)" in capsys.readouterr().err


@pytest.mark.parametrize("setting", ["data.train=nosuch", "init.foo={path: x.pt}"])
def test_a_run_refused_before_its_first_checkpoint_leaves_no_experiment(
        tmp_path: Path, prepared_data: Path, make_config: Callable[..., Path], setting: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A split that is not there was refused once the new folder held the run's config snapshot, logs and
    train_time.json (the next run counted the refused one); an `init:` that does not fit left an empty folder
    (tenth hostile pass). A folder this run made goes, with the folders made for it; an empty folder of the user's
    is left empty; an experiment with checkpoints keeps everything."""
    config = make_config(tmp_path, "asr", prepared_data)
    exp = tmp_path / "new" / "deeper" / "exp"
    assert main(["train", "--config", str(config), "--exp", str(exp), "--set", setting]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "nosuch.jsonl is missing" in err or "init: unknown component(s) foo" in err, err
    assert not (tmp_path / "new").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["train", "--config", str(config), "--exp", str(empty), "--set", setting]) == 2
    assert list(empty.iterdir()) == []
    trained = tmp_path / "trained"
    (trained / layout.CHECKPOINTS).mkdir(parents=True)
    (trained / layout.CHECKPOINTS / "notes.txt").write_text("kept\n")
    (trained / "mine.txt").write_text("kept\n")
    before = listing(trained)
    main(["train", "--config", str(config), "--exp", str(trained), "--set", setting])
    assert set(before) <= set(listing(trained))


@pytest.mark.parametrize("name", ["checkpoints", "logs", "tensorboard"])
def test_a_run_folder_linked_into_another_experiment_is_refused_before_any_work(
        tmp_path: Path, prepared_data: Path, make_config: Callable[..., Path], name: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`sate train --exp NEW` with NEW/checkpoints a symlink to another experiment's checkpoints/ resumed that run
    and trained into its folder (its last.ckpt replaced, its oldest epochs deleted), exit 0; with NEW/logs linked, a
    resume cut the other run's metrics.csv to the rows before its own step. A link to a folder of no experiment
    (another disk) is taken; a file where a folder goes is named before anything is written."""
    config = make_config(tmp_path, "mt", prepared_data)
    other = tmp_path / "other"
    (other / name).mkdir(parents=True)
    (other / name / "kept").write_text("the other run's\n")
    (other / layout.CONFIG).write_text("task: mt\n")
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / name).symlink_to(other / name)
    before = listing(other)
    assert main(["train", "--config", str(config), "--exp", str(exp)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"sate train: error: --exp {exp}: {exp / name} is a symlink to {other / name}, the {name}/ of "
                   f"another experiment ({other}), whose files this run would replace; remove the link"), err
    assert listing(other) == before and sorted(p.name for p in exp.iterdir()) == [name]
    (exp / name).unlink()
    (exp / name).write_text("mine\n")
    assert main(["train", "--config", str(config), "--exp", str(exp)]) == 2
    err = capsys.readouterr().err  # a file named checkpoints: a folder of other things (test above)
    assert f"{exp / name} is a file, where `sate train` keeps its {name}/ folder" in err or \
        "refusing to train into it: it holds checkpoints but no experiment" in err, err
    assert sorted(p.name for p in exp.iterdir()) == [name]
    disk = tmp_path / "disk" / "store"  # a folder of no experiment: this run's own
    disk.mkdir(parents=True)
    (exp / name).unlink()
    (exp / name).symlink_to(disk)
    check_run_folders(exp)
    (other / layout.CONFIG).rename(exp / layout.CONFIG)  # a folder of its own, linked within it
    (exp / name).unlink()
    (exp / f"{name}.real").mkdir()
    (exp / name).symlink_to(exp / f"{name}.real")
    check_run_folders(exp)


def test_train_time_linked_into_another_experiment_is_refused(tmp_path: Path) -> None:
    """EXP/train_time.json a symlink to another experiment's: each run added its time and a run to the other's
    record (`sate report` tables it), exit 0 (eleventh hostile pass)."""
    other, exp = tmp_path / "other", tmp_path / "exp"
    for folder in (other, exp):
        (folder / "checkpoints").mkdir(parents=True)
        (folder / layout.CONFIG).write_text("task: mt\n")
    (other / layout.TRAIN_TIME).write_text('{"seconds": 25.9, "runs": 2}')
    (exp / layout.TRAIN_TIME).symlink_to(other / layout.TRAIN_TIME)
    with pytest.raises(SateError, match=f"{other} is another experiment, whose file this run would replace"):
        check_run_folders(exp)
    # linked to a user's file on no experiment: a resume wrote its record into the recording (fifteenth hostile pass)
    talk = tmp_path / "talk.wav"
    talk.write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt ")
    (exp / layout.TRAIN_TIME).unlink()
    (exp / layout.TRAIN_TIME).symlink_to(talk)
    with pytest.raises(SateError, match="it is no train_time.json \\(it holds a WAV audio file\\), and would be "
                                        "replaced; remove the link"):
        check_run_folders(exp)
    assert talk.read_bytes().startswith(b"RIFF")
    (exp / layout.TRAIN_TIME).unlink()
    (exp / layout.TRAIN_TIME).symlink_to(tmp_path / "kept.json")  # a record kept elsewhere, on purpose: its own
    (tmp_path / "kept.json").write_text('{"seconds": 3.0, "runs": 1}')
    check_run_folders(exp)


def test_a_metric_log_that_is_no_log_of_this_run_is_refused_before_any_work(tmp_path: Path) -> None:
    """EXP/logs/version_N/metrics.csv, which a resume rewrites: a folder or a link there was refused only after
    Lightning's setup lines, and a link to a user's recording as "a NUL byte: binary data", not as a link (fifteenth
    hostile pass). A link to a log of its own kind is written where it leads, as every own file is."""
    exp = tmp_path / "exp"
    log = exp / "logs" / "version_0" / layout.METRICS_LOG
    log.parent.mkdir(parents=True)
    (exp / layout.CONFIG).write_text("task: mt\n")
    log.mkdir()
    with pytest.raises(SateError, match=f"^--exp {exp}: {log} is a directory, where the command writes its file "
                                        "logs/version_0/metrics.csv$"):
        check_run_folders(exp)
    log.rmdir()
    talk = tmp_path / "talk.wav"
    talk.write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt ")
    log.symlink_to(talk)
    with pytest.raises(SateError, match=f"{log} is a symlink to {talk}, where the command would write its file "
                                        r"logs/version_0/metrics.csv: it is no metrics.csv \(it holds a WAV audio "
                                        r"file\), and would be replaced; remove the link"):
        check_run_folders(exp)
    log.unlink()
    kept = tmp_path / "kept.csv"
    kept.write_text("epoch,step,train_loss\n0,9,4.5\n")
    log.symlink_to(kept)
    check_run_folders(exp)
    (exp / "logs" / "version_x").mkdir()  # not Lightning's: no run's log
    (exp / "logs" / "version_x" / layout.METRICS_LOG).symlink_to(talk)
    check_run_folders(exp)


@pytest.mark.parametrize("folder", ["logs", "tensorboard"])
def test_a_log_version_lightning_cannot_make_is_refused_before_any_work(tmp_path: Path, folder: str) -> None:
    """Lightning's loggers take EXP/logs/version_X (and tensorboard/version_X) as a version where `str.isdigit(X)`,
    which '²' passes and `int()` refuses: `sate train` ended in a ValueError traceback inside Lightning, once the
    config snapshot was written (seventeenth hostile pass). A name Lightning passes over or numbers is left be."""
    exp = tmp_path / "exp"
    (exp / layout.CONFIG).parent.mkdir(parents=True)
    (exp / layout.CONFIG).write_text("task: mt\n")
    for name in ("version_old", "version_-1", "version_3_old", "version_\u0663", "version_99999999999999999999"):
        (exp / folder / name).mkdir(parents=True)
    check_run_folders(exp)
    (exp / folder / "version_\u00b2").mkdir()
    with pytest.raises(SateError, match=f"^--exp {exp}: {exp / folder / 'version_²'}: Lightning reads it as a log "
                                        "version it cannot number"):
        check_run_folders(exp)
    shutil.rmtree(exp / folder / "version_\u00b2")
    # the next version Lightning makes (one past 99999999999999999999), where a file, a broken link or a loop stood:
    # "File exists" after Lightning's setup; one below it is no version Lightning makes now
    following = exp / folder / "version_100000000000000000000"
    (exp / folder / "version_7").write_text("my notes\n")
    check_run_folders(exp)
    for make, what in [(lambda p: p.write_text("my notes\n"), "a file"),
                       (lambda p: p.symlink_to(tmp_path / "gone"), "a broken symlink"),
                       (lambda p: p.symlink_to(p), "a symlink loop")]:
        make(following)
        with pytest.raises(SateError, match=f"^--exp {exp}: {following} is {what}.*, where Lightning makes this "
                                            "run's log folder; move it away$"):
            check_run_folders(exp)
        following.unlink()
    check_run_folders(exp)


def test_a_resume_point_that_is_no_checkpoint_file_is_refused(tmp_path: Path) -> None:
    """EXP/checkpoints/last.ckpt a folder or a link to /dev/null was passed over as "older": the run resumed from an
    epoch checkpoint and its next save of last.ckpt went into the folder's place or the device (fourteenth hostile
    pass). A link to an epoch checkpoint would have that checkpoint replaced by the last state: refused too."""
    exp = tmp_path / "exp"
    (exp / "checkpoints").mkdir(parents=True)
    (exp / layout.CONFIG).write_text("task: mt\n")
    last = exp / "checkpoints" / layout.LAST_CHECKPOINT
    for make, what in ((last.mkdir, "a directory"), (lambda: last.symlink_to("/dev/null"), "not a regular file"),
                       (lambda: last.symlink_to(exp / "gone.ckpt"), "a broken symlink")):
        make()
        with pytest.raises(SateError, match=f"^--exp {exp}: {last} is {what}"):
            check_run_folders(exp)
        last.rmdir() if last.is_dir() and not last.is_symlink() else last.unlink()
    (exp / "checkpoints" / "epoch003.ckpt").write_bytes(b"PK")
    last.symlink_to(exp / "checkpoints" / "epoch003.ckpt")
    with pytest.raises(SateError, match=f"^--exp {exp}: {last} is a symlink to {exp / 'checkpoints' / 'epoch003'}"):
        check_run_folders(exp)
    last.unlink()
    last.write_bytes(b"PK")
    check_run_folders(exp)


@pytest.mark.slow
def test_the_lines_of_train_average_and_pack_escape_a_names_control_characters(
        tmp_path: Path, prepared_data: Path, make_config: Callable[..., Path],
        capsys: pytest.CaptureFixture[str]) -> None:
    """`--exp` with a line break and a terminal escape: `sate average`'s 'averaged ... into', `sate pack`'s 'packed
    ... ->', a resume's 'resuming from ...' and the init table printed the name as it is, splitting the line and
    reaching the terminal (thirteenth hostile pass; prep, features, evaluate and the others escaped theirs)."""
    config = make_config(tmp_path, "asr", prepared_data)
    exp = tmp_path / "e\nx\x1b[31m"
    assert main(["train", "--config", str(config), "--exp", str(exp)]) == 0
    assert main(["train", "--config", str(config), "--exp", str(exp), "--set", "trainer.max_epochs=2"]) == 0
    assert main(["average", "--exp", str(exp), "--last", "2"]) == 0
    assert main(["pack", "--model", str(exp / "model.pt"), "--data", str(prepared_data), "--out", str(exp / "pk")]) == 0
    st = make_config(tmp_path, "st", prepared_data, model={"loss": {"kd": {"asr_weight": 0.5}}})
    assert main(["train", "--config", str(st), "--exp", str(tmp_path / "st"), "--init-from",
                 f"asr={exp / 'model.pt'}"]) == 0
    lines = capsys.readouterr().out.splitlines()  # Lightning's progress bars move the cursor: escapes of their own
    assert not any(line.startswith("x\x1b[31m") for line in lines)  # the rest of a line split in two
    shown = str(exp).replace("\n", "\\n").replace("\x1b", "\\x1b")
    for start in ("resuming from ", "averaged 2 checkpoint(s) into ", "packed asr model ", "kd: asr teacher "):
        line = next(line for line in lines if line.startswith(start))
        assert shown in line and "\x1b" not in line, line
    assert sum(shown in line for line in lines if line.startswith(("acoustic ", "ctc "))) == 2, lines


def test_a_run_terminated_before_training_leaves_no_experiment(
        tmp_path: Path, prepared_data: Path, make_config: Callable[..., Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """SIGTERM (or Ctrl-C) while `sate train` sets up, before its first checkpoint, left the folder it made:
    empty, or holding the config snapshot (thirteenth hostile pass); it goes as a refusal's does."""
    import sate.data.vocab
    from sate.cli import Terminated

    def terminated(*args: object, **kwargs: object) -> None:
        raise Terminated()

    monkeypatch.setattr(sate.data.vocab, "load_vocabularies", terminated)  # what `sate train` reads as it sets up
    exp = tmp_path / "new" / "exp"
    assert main(["train", "--config", str(make_config(tmp_path, "asr", prepared_data)), "--exp", str(exp)]) == 143
    assert capsys.readouterr().err.strip().splitlines()[-1] == "sate train: terminated"
    assert not (tmp_path / "new").exists()


def test_a_full_disk_when_train_takes_its_lock_names_the_lock(tmp_path: Path, prepared_data: Path,
                                                              make_config: Callable[..., Path],
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Writing its holder into EXP/train.lock is the first write of `sate train`: on a full disk (a tmpfs that is
    full) it said "No space left on device" naming no file. The lock's sync fails as on a full disk; the folder
    the run made is removed."""
    import errno
    import os

    config = make_config(tmp_path, "mt", prepared_data)

    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("sate.train.lock.os.fsync", fsync)
    exp = tmp_path / "exp"
    assert main(["train", "--config", str(config), "--exp", str(exp)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"sate train: error: {exp / layout.TRAIN_LOCK}: No space left on device (the disk is full: free "
                   "space there, or write elsewhere)")
    assert not exp.exists()
