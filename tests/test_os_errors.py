"""The system saying no (disk full, read-only, a name too long, SIGTERM, a second run): one line at the CLI naming
what and where, no temporary file left behind."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from sate import layout
from sate.cli import main
from sate.data.manifest import read_manifest, write_manifest
from sate.files import atomic_write_text, exclusive, make_temp_dir


def leftovers(root: Path) -> list[str]:
    """Temporary files and directories under ``root`` (our atomic writes make ``.NAME.*.tmp*``)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*") if ".tmp" in p.name)


def manifests_only(prepared_data: Path, root: Path) -> Path:
    """A data directory with the fixture's manifests and nothing computed."""
    data = root / "data"
    data.mkdir()
    for path in prepared_data.glob("*.jsonl"):
        shutil.copyfile(path, data / path.name)
    return data


def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """fsync, which every atomic write calls before its rename, fails as on a full disk."""
    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("sate.files.os.fsync", fsync)


def test_a_full_disk_is_one_line_naming_the_file(tmp_path: Path, synth_corpus: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    full_disk(monkeypatch)
    out = tmp_path / "data"
    assert main(["prep", "--mustc-root", str(synth_corpus), "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"sate prep: error: {out}/") and "No space left on device (the disk is full" in err
    assert leftovers(tmp_path) == []


def test_features_on_a_full_disk_leave_no_temporary_ark(tmp_path: Path, prepared_data: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import kaldiio.matio

    data = manifests_only(prepared_data, tmp_path)

    def write_array(f, array) -> None:  # noqa: ANN001 - kaldiio's signature
        f.write(b"\0" * 4096)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(kaldiio.matio, "write_array", write_array)
    assert main(["features", "--data", str(data), "--splits", "dev", "--jobs", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"sate features: error: {data}/fbank/dev/00000.ark: No space left on device (the disk is " \
                      "full: free space there, or write elsewhere)"
    assert leftovers(data) == [] and not (data / layout.FEATURES_LOCK).exists()


def test_names_as_long_as_the_file_system_allows_are_written(tmp_path: Path) -> None:
    name = "x" * 248 + ".jsonl"  # 254 bytes: legal; a temporary name that adds to it would not be
    wav = tmp_path / "talk.wav"
    sf.write(wav, np.zeros(16000, dtype=np.float32), 16000)
    assert main(["segment", str(wav), "--vad", "energy", "--out", str(tmp_path / name)]) == 0
    assert (tmp_path / name).is_file()
    atomic_write_text(tmp_path / ("é" * 127), "two bytes a letter\n")  # 254 bytes of UTF-8
    assert (tmp_path / ("é" * 127)).read_text() == "two bytes a letter\n"
    assert make_temp_dir(tmp_path, "y" * 255).parent == tmp_path
    assert main(["segment", str(wav), "--vad", "energy", "--out", str(tmp_path / ("z" * 256))]) == 2


def test_a_read_only_place_is_refused_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    wav = tmp_path / "talk.wav"
    sf.write(wav, np.zeros(16000, dtype=np.float32), 16000)
    real_access = os.access
    monkeypatch.setattr("sate.targets.os.access", lambda p, mode: False if Path(p) == tmp_path / "ro" else
                        real_access(p, mode))  # what access(2) says on a read-only mount (EROFS)
    (tmp_path / "ro").mkdir()
    assert main(["segment", str(wav), "--vad", "energy", "--out", str(tmp_path / "ro" / "a.jsonl")]) == 2
    assert "cannot write in" in capsys.readouterr().err


def test_a_second_features_run_on_one_data_dir_is_refused(tmp_path: Path, prepared_data: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    data = manifests_only(prepared_data, tmp_path)
    with exclusive(data / layout.FEATURES_LOCK, "`sate features`"):
        assert main(["features", "--data", str(data), "--jobs", "1"]) == 2
        err = capsys.readouterr().err
        assert f"{data} is in use by another `sate features` (pid {os.getpid()}" in err
    assert not (data / "fbank").exists() and not (data / layout.FEATURES_LOCK).exists()
    assert main(["features", "--data", str(tmp_path / "nowhere")]) == 2
    assert not (tmp_path / "nowhere").exists()


def test_sigterm_removes_the_temporary_file_of_a_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    wav = tmp_path / "talk.wav"
    sf.write(wav, np.zeros(16000, dtype=np.float32), 16000)

    def killed(path: Path, options: object) -> list:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler interrupts this
        raise AssertionError("SIGTERM was not raised")

    monkeypatch.setattr("sate.decode.segment.segment_file", killed)
    before = signal.getsignal(signal.SIGTERM)
    assert main(["segment", str(wav), "--vad", "energy", "--out", str(tmp_path / "out.jsonl")]) == 143
    assert capsys.readouterr().err.strip() == "sate segment: terminated"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["talk.wav"]
    assert signal.getsignal(signal.SIGTERM) == before  # main restores the handler it found


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        found |= {int(c) for c in children}
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
    except OSError:
        return "gone"


@pytest.mark.slow
def test_sigterm_stops_feature_workers_and_removes_their_files(tmp_path: Path, prepared_data: Path) -> None:
    data = manifests_only(prepared_data, tmp_path)
    rows = read_manifest(data / "train.jsonl")  # 3 shards of work, so that the kill comes in the middle of one
    write_manifest(data / "train.jsonl", [{**r, "id": f"{r['id']}-{k}"} for k in range(1200 // len(rows))
                                          for r in rows])
    proc = subprocess.Popen([sys.executable, "-m", "sate.cli", "features", "--data", str(data), "--jobs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list((data / "fbank").rglob(".*.ark.tmp")) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    workers = _children(proc.pid)
    assert workers, "no worker processes"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err.strip().splitlines()[-1] == "sate features: terminated", err
    assert leftovers(data) == [] and not (data / layout.FEATURES_LOCK).exists()
    deadline = time.monotonic() + 10  # multiprocessing's resource tracker ends once its pipe closes
    while [w for w in workers if _alive(w)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert {w: _command(w) for w in workers if _alive(w)} == {}


def test_a_full_disk_when_features_takes_its_lock_names_the_lock(tmp_path: Path, prepared_data: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Writing the pid into DATA/features.lock is the first write of `sate features`: on a full disk it said
    "No space left on device" naming no file. /dev/full fails every write as a full disk does."""
    data = manifests_only(prepared_data, tmp_path)
    (data / layout.FEATURES_LOCK).symlink_to("/dev/full")
    assert main(["features", "--data", str(data), "--jobs", "1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"sate features: error: {data / layout.FEATURES_LOCK}: No space left on device (the disk is "
                   "full: free space there, or write elsewhere)")
