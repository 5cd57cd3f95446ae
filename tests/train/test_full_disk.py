"""A full disk while training is one line naming the checkpoint and saying the disk is full; no temporary file."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from sate.cli import main

MakeConfig = Callable[..., Path]


@pytest.mark.slow
def test_a_full_disk_at_a_checkpoint_names_it(tmp_path: Path, prepared_data: Path, make_config: MakeConfig,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    real_fsync = os.fsync

    def fsync(fd: int) -> None:  # the disk fills up when the first checkpoint is written
        name = os.readlink(f"/proc/self/fd/{fd}")
        if name.endswith(".tmp") and "/checkpoints/" in name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr("sate.files.os.fsync", fsync)
    exp = tmp_path / "exp"
    assert main(["train", "--config", str(make_config(tmp_path, "mt", prepared_data)), "--exp", str(exp)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"sate train: error: {exp}/checkpoints/") and err[-1].endswith(
        ".ckpt: No space left on device (the disk is full: free space there, or write elsewhere)"), err[-1]
    checkpoints = exp / "checkpoints"  # gone if the failed write made it and it was left empty (sate.files)
    assert not checkpoints.exists() or [p.name for p in checkpoints.iterdir() if ".tmp" in p.name] == []
