"""One training run per experiment directory: EXP/train.lock names its holder (issue 17, item 4)."""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sate.errors import SateError
from sate.train import lock as lock_module
from sate.train.lock import LOCK_NAME, ExperimentLock

HOLD = """
import sys, time
from pathlib import Path
from sate.train.lock import ExperimentLock
lock = ExperimentLock(Path(sys.argv[1]))
lock.acquire()
print("held", flush=True)
time.sleep(120)
"""


def _holder(exp: Path) -> subprocess.Popen:
    """A process that holds the lock of `exp` until killed."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(exp)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_live_holder_refuses_a_second_run_and_a_killed_one_is_taken_over(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    try:
        with pytest.raises(SateError, match=rf"in use by another training run \(pid {proc.pid} on "
                                            rf"{socket.gethostname()}, started 20"):
            ExperimentLock(tmp_path).acquire()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    with ExperimentLock(tmp_path) as lock:  # the kernel dropped the dead holder's lock
        assert lock.takeover is not None and lock.takeover["pid"] == proc.pid
        assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert not (tmp_path / LOCK_NAME).exists()  # cleared when the run ends


def test_a_lock_copied_with_a_running_experiment_is_not_said_to_be_of_a_run_gone(tmp_path: Path) -> None:
    """`cp -r exp copy` while the run trains copies its train.lock, which nobody holds in the copy: taken over as it
    should be, but "the run that held it (pid N ...) is gone" of a run still training (25th hostile pass)."""
    original, copy = tmp_path / "exp", tmp_path / "copy"
    proc = _holder(original)
    try:
        copy.mkdir()
        (copy / LOCK_NAME).write_bytes((original / LOCK_NAME).read_bytes())
        with ExperimentLock(copy) as lock:
            assert lock.takeover_note() == (f"taking over {copy / LOCK_NAME}: the run that held it (pid {proc.pid} "
                                             f"on {socket.gethostname()}, started {lock.takeover['started']}) holds "
                                             f"it no more (pid {proc.pid} runs still: was this a copy made while "
                                             "the run trained?)")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    (copy / LOCK_NAME).write_bytes((original / LOCK_NAME).read_bytes())
    with ExperimentLock(copy) as lock:  # its run killed since: gone
        assert lock.takeover_note().endswith(f"(pid {proc.pid} on {socket.gethostname()}, started "
                                             f"{lock.takeover['started']}) is gone")
    # a live process that started after the record's time holds the recorded pid since (a reboot, pids wrapped: here
    # pid 1 against a record of 2000): another process, the run is gone (review)
    stale = json.loads((original / LOCK_NAME).read_text())
    (copy / LOCK_NAME).write_text(json.dumps({**stale, "pid": 1, "started": "2000-01-01T00:00:00+00:00"}))
    with ExperimentLock(copy) as lock:
        assert lock.takeover_note().endswith("started 2000-01-01T00:00:00+00:00) is gone"), lock.takeover_note()


def test_without_file_locks_a_dead_pid_on_this_host_is_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "no locks")

    monkeypatch.setattr("sate.files.fcntl.flock", no_locks)  # the one flock of every lock
    stale = {"host": socket.gethostname(), "pid": _dead_pid(), "started": "2024-01-01T00:00:00+00:00"}
    (tmp_path / LOCK_NAME).write_text(json.dumps(stale))
    with ExperimentLock(tmp_path) as lock:
        assert lock.takeover == stale
    live = {"host": socket.gethostname(), "pid": os.getppid(), "started": "2024-01-01T00:00:00+00:00"}
    (tmp_path / LOCK_NAME).write_text(json.dumps(live))
    with pytest.raises(SateError, match=f"pid {os.getppid()} on"):
        ExperimentLock(tmp_path).acquire()
    far = {"host": "another-node", "pid": 1, "started": "2024-01-01T00:00:00+00:00"}
    (tmp_path / LOCK_NAME).write_text(json.dumps(far))
    with pytest.raises(SateError, match="pid 1 on another-node"):  # its heartbeat is fresh
        ExperimentLock(tmp_path).acquire()
    old = time.time() - lock_module.STALE_AFTER_S - 10
    os.utime(tmp_path / LOCK_NAME, (old, old))
    with ExperimentLock(tmp_path) as lock:
        assert lock.takeover == far


def test_without_file_locks_a_crashed_run_left_unreaped_is_stale(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that ended but was not reaped (a zombie: init here does not reap orphans) holds nothing."""
    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "no locks")

    monkeypatch.setattr("sate.files.fcntl.flock", no_locks)  # the one flock of every lock
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child did not end"
            time.sleep(0.05)
        zombie = {"host": socket.gethostname(), "pid": proc.pid, "started": "2024-01-01T00:00:00+00:00"}
        (tmp_path / LOCK_NAME).write_text(json.dumps(zombie))
        with ExperimentLock(tmp_path) as lock:
            assert lock.takeover == zombie
    finally:
        proc.wait()


@pytest.mark.slow
def test_sate_train_refuses_an_experiment_another_run_holds(tmp_path: Path, make_config: Callable[..., Path],
                                                            prepared_data: Path) -> None:
    from sate.train.trainer import load_training_config, train

    exp = tmp_path / "exp"
    proc = _holder(exp)
    try:
        with pytest.raises(SateError, match=f"pid {proc.pid}"):
            train(load_training_config(make_config(tmp_path, "asr", prepared_data), []), exp)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not (exp / "checkpoints").exists() and not (exp / "config.yaml").exists()
