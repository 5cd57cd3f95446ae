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
from sate.targets import check_output


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
