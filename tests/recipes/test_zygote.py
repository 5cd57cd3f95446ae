"""The pre-forked `sate` of the slow recipe and docs tests (tests/recipes/zygote.py) ends as the installed one does:
the same exit status, output and error line, the same ending on a signal, and nothing left running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts the zygote (8 s of imports), as the slow tests that use it do

SAME = [
    "sate --help | head -3",
    "sate score --hyp hyp.txt --ref ref.txt",
    "sate score --hyp /dev/stdin --ref ref.txt < hyp.txt",
    "sate score --hyp hyp.txt --ref hyp.txt --nothing",
    "sate score --hyp hyp.txt --ref missing.txt",
    "sate score --hyp hyp.txt --ref ref.txt > /dev/full",
    "sate score --hyp hyp.txt --ref ref.txt >&-",  # a closed stream: the shim runs the real `sate`
    "sate config --config nothing.yaml; echo $?",
    # a limit (or umask) the shell set, which an exec keeps and a fork from the zygote would not: the real `sate`
    "ulimit -S -n 512; cat /proc/self/limits > limits.txt; sate score --hyp /proc/self/limits --ref limits.txt",
]


@pytest.fixture
def texts(tmp_path: Path) -> Path:
    (tmp_path / "hyp.txt").write_text("Ich rufe Sie an.\nBitte schicken Sie mir den Plan.\n")
    (tmp_path / "ref.txt").write_text("Ich rufe Sie zurück.\nBitte schicken Sie mir den Fahrplan.\n")
    return tmp_path


def _both(sate_path: Callable[[dict[str, str]], dict[str, str]]) -> tuple[dict[str, str], dict[str, str]]:
    real = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    shim = sate_path(dict(os.environ))
    assert shim["PATH"] != real["PATH"], "a slow test gets the zygote's shim first on its PATH"
    return real, shim


@pytest.mark.parametrize("script", SAME)
def test_the_zygote_ends_as_the_installed_sate(script: str, texts: Path, sate_path) -> None:  # noqa: ANN001
    real, shim = _both(sate_path)
    ran = [subprocess.run(["bash", "-c", script], cwd=texts, env=env, capture_output=True, text=True, timeout=120)
           for env in (real, shim)]
    assert (ran[1].returncode, ran[1].stdout, ran[1].stderr) == (ran[0].returncode, ran[0].stdout, ran[0].stderr)


def _wait_reading(pipe: int) -> None:
    """Until a process reads the pipe `pipe` (an inode), its standard input: the command, past its imports and its
    signal handlers (a fixed sleep was too short under load for the installed `sate`'s imports)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                call = (proc / "syscall").read_text().split()
                if call[0] == "0" and os.readlink(proc / "fd" / str(int(call[1], 16))) == f"pipe:[{pipe}]":  # read()
                    return
            except (OSError, IndexError, ValueError):  # gone, another user's, or running
                continue
        time.sleep(0.1)
    raise AssertionError("the command never read its standard input")


@pytest.mark.parametrize(("sig", "status", "says"), [(signal.SIGTERM, 143, "sate score: terminated\n"),
                                                     (signal.SIGKILL, -9, "")])
def test_a_signal_to_the_shim_ends_the_command_as_it_would_the_installed_sate(
        sig: signal.Signals, status: int, says: str, texts: Path, sate_path) -> None:  # noqa: ANN001
    """The shim forwards the signals a shell or a test sends; killed, it takes its command with it."""
    argv = ["sate", "score", "--hyp", "/dev/stdin", "--ref", str(texts / "ref.txt")]
    for env in _both(sate_path):
        reader, writer = os.pipe()  # a standard input that never ends: the command waits on it
        command = subprocess.Popen(argv, env=env, stdin=reader, stderr=subprocess.PIPE, text=True)
        os.close(reader)
        _wait_reading(os.fstat(writer).st_ino)
        command.send_signal(sig)
        _, err = command.communicate(timeout=60)
        os.close(writer)
        assert (command.returncode, err) == (status, says), env["PATH"]
    time.sleep(0.5)
    assert subprocess.run(["pgrep", "-f", " ".join(argv[1:])], capture_output=True).stdout == b""
