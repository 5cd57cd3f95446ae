"""Atomic writes: a failure half way leaves the previous file and no temporary file behind; safe checkpoint reads."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from sate.errors import SateError
from sate.files import (
    UnsafeCheckpoint,
    atomic_open,
    atomic_torch_save,
    atomic_write_lines,
    atomic_write_text,
    describe_os_error,
    exclusive,
    json_text,
    not_a_file,
    own_descriptor,
    read_checkpoint,
    read_json,
    replace_together,
)


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "out.txt"
    atomic_write_text(path, "old\n")

    def lines():
        yield "new"
        raise RuntimeError("killed half way")

    with pytest.raises(RuntimeError):
        atomic_write_lines(path, lines())
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["out.txt"]


def test_files_replaced_together_change_none_until_all_are_written(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A set of files and the record saying it is complete (`sate vocab`): a failed write changes nothing; an
    interrupt among the renames leaves no record (so the set is made again) and no temporary file."""
    a, b, record = tmp_path / "a.model", tmp_path / "a.txt", tmp_path / "vocab.json"
    replace_together({a: b"one", b: b"1\n"}, record, "{}\n")
    assert (a.read_bytes(), b.read_bytes(), record.read_text()) == (b"one", b"1\n", "{}\n")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("sate.files.os.fsync", full)
    with pytest.raises(OSError, match="No space left") as err:
        replace_together({a: b"two", b: b"2\n"}, record, '{"new": 1}\n')
    assert err.value.filename == str(a)
    assert (a.read_bytes(), b.read_bytes(), record.read_text()) == (b"one", b"1\n", "{}\n")
    monkeypatch.undo()
    replace = os.replace

    def interrupted(src: str, dst: str) -> None:
        if Path(dst) == b:
            raise KeyboardInterrupt
        replace(src, dst)

    monkeypatch.setattr("sate.files.os.replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        replace_together({a: b"two", b: b"2\n"}, record, '{"new": 1}\n')
    assert a.read_bytes() == b"two" and b.read_bytes() == b"1\n" and not record.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.model", "a.txt"]


def test_binary_and_torch_writes_replace_the_target(tmp_path: Path) -> None:
    with atomic_open(tmp_path / "b.bin", "wb") as f:
        f.write(b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    atomic_torch_save({"w": torch.ones(2)}, tmp_path / "m.pt")
    assert torch.equal(torch.load(tmp_path / "m.pt", weights_only=True)["w"], torch.ones(2))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.bin", "m.pt"]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])


def test_written_files_honour_the_umask_like_open(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "new.txt", "x\n")
        with open(tmp_path / "plain.txt", "w") as f:  # what open() gives, for comparison
            f.write("x\n")
        atomic_torch_save({"w": torch.ones(1)}, tmp_path / "m.pt")
    finally:
        os.umask(old)
    expected = stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode)
    assert expected == 0o666 & ~umask
    for name in ("new.txt", "m.pt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == expected, name


def test_replacing_a_file_keeps_its_permissions(tmp_path: Path) -> None:
    path = tmp_path / "shared.txt"
    atomic_write_text(path, "old\n")
    path.chmod(0o640)
    atomic_write_text(path, "new\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and path.read_text() == "new\n"


class _Smuggler:
    def __reduce__(self) -> tuple:
        return (print, ("code ran",))


def test_one_checkpoint_reader_for_model_files_and_training_checkpoints(tmp_path: Path) -> None:
    """A tensor byte changed inside a training checkpoint fails its zip checksum (torch alone reads it silently), and
    a pickled object is refused as unsafe, through `sate.train.resume` as through the model files."""
    from sate.train.resume import read_checkpoint as read_training_checkpoint

    path = tmp_path / "epoch001.ckpt"
    atomic_torch_save({"sate": {"run_id": "r"}, "state_dict": {"w": torch.arange(4096.0)}}, path)
    assert read_training_checkpoint(path)["sate"]["run_id"] == "r"
    whole = path.read_bytes()
    middle = whole.index(torch.arange(4096.0).numpy().tobytes()[:64]) + 4000
    path.write_bytes(whole[:middle] + bytes(b ^ 0xFF for b in whole[middle:middle + 64]) + whole[middle + 64:])
    assert torch.load(path, weights_only=True)["state_dict"]["w"].sum() != torch.arange(4096.0).sum()
    for read in (read_checkpoint, read_training_checkpoint):
        with pytest.raises(SateError, match="epoch001.ckpt: the file is damaged: .* fails its checksum"):
            read(path)
    torch.save({"sate": {}, "state_dict": {}, "payload": _Smuggler()}, path)
    with pytest.raises(UnsafeCheckpoint, match="refusing to load .*epoch001.ckpt: not a plain-tensor ") as err:
        read_checkpoint(path)
    # one line of ours: torch's first line was "...you have two options, \x1b[1mdo those steps...", never shown
    # (`--init-from` of a pickled file reads it so; hand28a, twenty-eighth hostile pass)
    assert str(err.value) == (f"refusing to load {path}: not a plain-tensor checkpoint: it holds pickled objects "
                              f"({err.value.names}) that would run code when loaded"), err.value
    assert err.value.names == "builtins.print"  # what _Smuggler would run
    with pytest.raises(UnsafeCheckpoint, match="epoch001.ckpt: refused: it holds pickled objects"):
        read_training_checkpoint(path)


def test_a_resume_wants_the_step_and_epoch_the_reader_does_not(tmp_path: Path) -> None:
    """The step and epoch are a resume's: a checkpoint without them is passed over by the resume (Lightning writes
    both), while the reader of headers and weights takes it (review of hand27t: every read required them)."""
    from sate.train.resume import find_resume_point
    from sate.train.resume import read_checkpoint as read_training_checkpoint

    path = tmp_path / "last.ckpt"
    atomic_torch_save({"sate": {"run_id": "r"}, "state_dict": {}}, path)
    assert read_training_checkpoint(path)["sate"]["run_id"] == "r"
    with pytest.raises(SateError, match=r"no readable checkpoint to resume from \(.*last.ckpt: its step None or "
                                        r"epoch None is not a whole number of at least 0"):
        find_resume_point(tmp_path)
    atomic_torch_save({"sate": {"run_id": "r"}, "state_dict": {}, "global_step": 3, "epoch": 1}, path)
    assert find_resume_point(tmp_path).path == path


def test_a_version_that_is_a_tensor_is_one_line(tmp_path: Path) -> None:
    """A `version` that is a tensor in a checkpoint's header (an edited one) was a RuntimeError traceback from `sate
    train` ("Boolean value of Tensor with more than one value is ambiguous": review of hand27t)."""
    from sate.train.resume import find_resume_point

    atomic_torch_save({"sate": {"version": torch.tensor([1, 1])}, "state_dict": {}, "global_step": 3, "epoch": 1},
                      tmp_path / "last.ckpt")
    with pytest.raises(SateError, match=r"last.ckpt: a checkpoint of another sate \(format None version "
                                        r"tensor\(\[1, 1\]\); "):
        find_resume_point(tmp_path)


def test_a_file_torch_never_wrote_is_named_for_what_it_holds(tmp_path: Path) -> None:
    """A manifest, a WAV or random bytes given as a model (`pack --model`, `--init-from`, a file among the
    checkpoints) was "not a plain-tensor checkpoint", with torch's advice to load it with weights_only=False."""
    (tmp_path / "dev.jsonl").write_text('{"id": "a"}\n')
    sf.write(tmp_path / "talk.wav", np.zeros(160, dtype=np.float32), 16000)
    (tmp_path / "noise.bin").write_bytes(b"\x01\x00\xff" * 100)
    for name, what in [("dev.jsonl", "text"), ("talk.wav", "a WAV audio file"), ("noise.bin", "binary data")]:
        with pytest.raises(SateError, match=rf"^refusing to load {tmp_path / name}: it holds {what}, not a "
                                            rf"checkpoint or model file$"):
            read_checkpoint(tmp_path / name)


def test_a_checkpoint_path_that_is_no_file_is_named_for_what_it_is(tmp_path: Path) -> None:
    """`sate pack --model PACK`, `--init-from asr=EXP` or a device were all "checkpoint not found", though they were
    there: a directory is named as one, with the model file inside it where it holds one."""
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "model.pt").write_bytes(b"")
    with pytest.raises(SateError, match=rf"^{pack}: is a directory, not a checkpoint or model file \(did you mean "
                                        rf"{pack}/model.pt\?\)$"):
        read_checkpoint(pack)
    with pytest.raises(SateError, match=rf"^{tmp_path}: is a directory, not a checkpoint or model file$"):
        read_checkpoint(tmp_path)
    os.mkfifo(tmp_path / "pipe")
    for path in (Path("/dev/zero"), tmp_path / "pipe"):
        with pytest.raises(SateError, match=rf"^{path}: is a device or a pipe, not a checkpoint or model file$"):
            read_checkpoint(path)
    with pytest.raises(SateError, match="^checkpoint not found: "):
        read_checkpoint(tmp_path / "missing.pt")
    # thirteenth hostile pass: a broken link was "not found"; a relative path (a config's init or teacher path in an
    # experiment renamed since) named no directory it was looked for in
    (tmp_path / "gone.ckpt").symlink_to("epoch003.ckpt")
    with pytest.raises(SateError, match=r"gone.ckpt: a broken symlink \(to epoch003.ckpt, which is not there\), not a "
                                        r"checkpoint or model file$"):
        read_checkpoint(tmp_path / "gone.ckpt")
    with pytest.raises(SateError, match=r"^checkpoint not found: exp/asr/model.pt \(relative to the current "
                                        rf"directory, {os.getcwd()}\)$"):
        read_checkpoint(Path("exp/asr/model.pt"))


def test_a_downloaded_hub_model_given_as_a_checkpoint_says_where_it_goes(tmp_path: Path) -> None:
    """`--init-from mt=MARIAN_DIR` was only "is a directory", `mt=MARIAN_DIR/model.safetensors` "holds binary data":
    neither said that a hub model is named in the model config (eleventh hostile pass)."""
    marian = tmp_path / "opus-mt-en-de"
    marian.mkdir()
    (marian / "config.json").write_text('{"model_type": "marian"}')
    (marian / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}\x00" * 20)
    hint = rf" \({marian} is a downloaded model: name it in the model config, as textual.path with textual.type " \
           r"hf_marian or acoustic.path with acoustic.type whisper or hf_\*; docs/models.md\)$"
    with pytest.raises(SateError, match=rf"^{marian}: is a directory, not a checkpoint or model file{hint}"):
        read_checkpoint(marian)
    with pytest.raises(SateError, match=rf"^refusing to load {marian}/model.safetensors: it holds binary data, not "
                                        rf"a checkpoint or model file{hint}"):
        read_checkpoint(marian / "model.safetensors")


def test_a_file_that_is_something_else_is_named_for_what_it_is(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A split's manifest, a pack's sate.yaml, a model.bin, a preprocessor config, `--steps-from`'s last.ckpt or
    an ESPnet config that was a directory, a pipe, a device, a symlink loop or a broken symlink was "missing",
    and a config that was a loop "not found": the advised command then said it was there."""
    from sate.cli import main
    from sate.decode.pack import read_pack_yaml
    from sate.models.hub.ctranslate2_file import read_index

    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "broken").symlink_to(tmp_path / "gone")
    (tmp_path / "file").write_text("x")
    for name, kind in [("dir", "a directory"), ("pipe", "a named pipe"), ("/dev/null", "a device or socket"),
                       ("loop", "a symlink loop \\(it leads back to itself\\)"),
                       ("broken", f"a broken symlink \\(to {tmp_path}/gone, which is not there\\)")]:
        with pytest.raises(SateError, match=f"^{tmp_path / name}: {kind}, not a thing$"):
            not_a_file(tmp_path / name, "a thing")
    not_a_file(tmp_path / "file", "a thing")  # a file, or nothing: the caller's own message
    not_a_file(tmp_path / "nothing", "a thing")

    pack = tmp_path / "pack"
    (pack / "sate.yaml").mkdir(parents=True)
    with pytest.raises(SateError, match=f"^{pack}/sate.yaml: a directory, not a pack's settings$"):
        read_pack_yaml(pack)
    with pytest.raises(SateError, match=f"^{tmp_path}/pipe: a named pipe, not a CTranslate2 model file$"):
        read_index(tmp_path / "pipe", "WhisperSpec", [3])
    for name, kind in [("loop", "a symlink loop"), ("broken", "a broken symlink")]:
        assert main(["config", "--config", str(tmp_path / name)]) == 2
        assert capsys.readouterr().err.startswith(f"sate config: error: {tmp_path / name}: {kind}")


def test_files_sate_reads_are_named_for_what_is_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A SentencePiece model, a manifest, a hub JSON file, a Marian model's files or `sate vocab`'s train
    manifest that was a directory or a pipe was "missing" (the advised `sate vocab` or `sate prep` then said it was
    there); nothing there is still missing, with its advice."""
    from sate.cli import main
    from sate.data.manifest import read_manifest
    from sate.data.marian_vocab import check_marian_dir
    from sate.data.vocab import Vocabulary

    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(SateError, match=f"^{tmp_path}/dir: a directory, not a SentencePiece model$"):
        Vocabulary(tmp_path / "dir", tmp_path / "tokens.txt")
    with pytest.raises(SateError, match=r"SentencePiece model is missing \(run `sate vocab`\)$"):
        Vocabulary(tmp_path / "none.model", tmp_path / "tokens.txt")
    with pytest.raises(SateError, match=f"^{tmp_path}/pipe: a named pipe, not a manifest$"):
        read_manifest(tmp_path / "pipe")
    with pytest.raises(SateError, match=f"^{tmp_path}/dir: a directory, not a JSON file$"):
        read_json(tmp_path / "dir")
    marian = tmp_path / "marian"
    (marian / "source.spm").mkdir(parents=True)
    with pytest.raises(SateError, match=f"^{marian}/source.spm: a directory, not a Marian model's source.spm$"):
        check_marian_dir(marian)

    data = tmp_path / "data"
    (data / "train.jsonl").mkdir(parents=True)
    assert main(["vocab", "--data", str(data), "--joint", "50"]) != 0
    assert f"{data}/train.jsonl: a directory, not a manifest" in capsys.readouterr().err


def test_a_json_file_naming_a_key_twice_is_refused(tmp_path: Path) -> None:
    """A results.json edited by appending `"bleu": 99.5` was reported as 99.5 without a word (and a hub's
    config.json naming d_model twice read the last): every JSON file sate reads refuses a key given twice, as its
    manifests and cmvn.json do (eighteenth hostile pass)."""
    path = tmp_path / "results.json"
    path.write_text('{"bleu": 0.0, "scores": {"ter": 1, "ter": 2}}')
    with pytest.raises(SateError, match=f"^{path}: the key 'ter' is given twice"):
        read_json(path)
    path.write_text('{"bleu": 0.0, "scores": {"ter": 1}}')
    assert read_json(path) == {"bleu": 0.0, "scores": {"ter": 1}}


def test_a_directory_where_a_file_is_written_is_named_alone(tmp_path: Path) -> None:
    """One of sate's own files made a folder (`cmvn.json/`): the rename's "Is a directory" named the temporary name
    first, a file already removed (thirteenth pass's leftover). The line at the CLI names the file alone."""
    (tmp_path / "cmvn.json").mkdir()
    # no temporary file stays; the set's a.txt, renamed before, is there, and the folder's journal lists the set,
    # which its readers refuse (a set with a record is made again)
    for write, left in ((lambda: atomic_write_text(tmp_path / "cmvn.json", "{}\n"), ["cmvn.json"]),
                        (lambda: replace_together({tmp_path / "a.txt": b"a", tmp_path / "cmvn.json": b"{}"}),
                         [".sate-replacing", "a.txt", "cmvn.json"])):
        with pytest.raises(IsADirectoryError) as err:
            write()
        assert describe_os_error(err.value) == f"{tmp_path / 'cmvn.json'}: Is a directory"
        assert sorted(p.name for p in tmp_path.iterdir()) == left


@pytest.mark.slow
def test_sets_replaced_at_once_by_two_runs_are_one_runs_whole_set(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Fourteenth pass: two `report` (or `analyze attention`) runs writing one set at once interleaved their renames,
    one run's table beside the other's curves. The renames now hold the folders: a run waits for another's renames
    (a thread holds the folder here, as another process would), is refused by name when the folder stays held (a
    `sate evaluate` writing there), and never waits on a folder it holds itself."""
    import fcntl
    import threading

    from sate.files import directory_held

    table, curves = tmp_path / "results.md", tmp_path / "curves" / "curves.png"
    replace_together({table: b"old table", curves: b"old curves"})
    other = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(other, fcntl.LOCK_EX)
    events: list[str] = []

    def release() -> None:
        time.sleep(0.3)
        events.append("released")
        fcntl.flock(other, fcntl.LOCK_UN)

    thread = threading.Thread(target=release)
    thread.start()
    replace_together({table: b"new table", curves: b"new curves"})
    events.append("replaced")
    thread.join()
    assert events == ["released", "replaced"]
    assert (table.read_bytes(), curves.read_bytes()) == (b"new table", b"new curves")

    monkeypatch.setattr("sate.files.RENAMES_WAIT", 0.2)
    fcntl.flock(other, fcntl.LOCK_EX)
    with pytest.raises(SateError, match=f"^{re.escape(str(tmp_path))} is in use by another sate run"):
        replace_together({table: b"third table", curves: b"third curves"})
    os.close(other)
    assert (table.read_bytes(), curves.read_bytes()) == (b"new table", b"new curves")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["curves", "curves.png", "results.md"]
    with directory_held(tmp_path, "sate evaluate"):  # its own hold: no wait on itself
        replace_together({table: b"held table"})
    assert table.read_bytes() == b"held table"


def test_a_lock_file_removed_between_its_open_and_its_lock_is_locked_anew(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Thirteenth hostile pass: a holder removes its lock file before it lets go; a run that had opened the file just
    before and locked it just after held a file nobody else would lock, and the next run made the file anew and
    locked that: two runs at once, each the only one."""
    import fcntl

    from sate.files import exclusive

    lock = tmp_path / "features.lock"
    lock.write_text("123\n")  # the holder's, which it removes as it ends
    real_flock, calls = fcntl.flock, []

    def flock(fd: int, operation: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            lock.unlink()  # the holder ends between this run's open and its lock
        real_flock(fd, operation)

    monkeypatch.setattr("sate.files.fcntl.flock", flock)
    with exclusive(lock, "sate features"):
        with pytest.raises(SateError, match="is in use by another sate features"), exclusive(lock, "sate features"):
            pass
    assert not lock.exists()


def test_a_lock_file_made_on_a_full_disk_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pid a lock file holds could not be written on a full disk: the run stopped, "DATA/features.lock: No space
    left on device", and left the lock file it had just made for good (twenty-first hostile pass: `sate features`,
    `sate vocab`, `sate train` on a full tmpfs). It is removed as a lock that was held is."""
    lock = tmp_path / "features.lock"
    real_write = os.write

    def write(fd: int, data: bytes) -> int:
        if os.fstat(fd).st_ino == os.stat(lock).st_ino:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr("sate.files.os.write", write)
    with pytest.raises(OSError, match="No space left on device"), exclusive(lock, "sate features"):
        pass
    assert sorted(os.listdir(tmp_path)) == []


def test_an_output_folder_through_a_link_to_a_folder_not_made_yet_is_made_where_it_leads(tmp_path: Path) -> None:
    """Fourteenth hostile pass: `sate evaluate --out LINK` and `sate analyze locality --out LINK`, LINK a symlink to
    a folder not made yet (another disk), were "--out LINK: cannot create (File exists)"; `sate synth --out LINK`
    was "LINK: File exists", status 1. The folder is made where the link leads, and the link stays."""
    from sate.files import held_out_dir

    link = tmp_path / "eval"
    link.symlink_to(tmp_path / "disk" / "eval")
    with held_out_dir(link, "sate evaluate"):
        (link / "results.json").write_text("{}\n")
    assert link.is_symlink() and (tmp_path / "disk" / "eval" / "results.json").is_file()
    link = tmp_path / "failed"
    link.symlink_to(tmp_path / "disk2" / "eval")
    with pytest.raises(KeyboardInterrupt), held_out_dir(link, "sate evaluate"):
        raise KeyboardInterrupt  # a run that ends without results removes the folders it made, not the link
    assert link.is_symlink() and not (tmp_path / "disk2").exists()


_KILLED_WRITER = """
import os, signal, sys, time
from sate.files import atomic_open, replace_together
path = sys.argv[1]
if sys.argv[2] == "kill":
    with atomic_open(path, "wb") as f:
        f.write(b"half a mod")
        f.flush()
        os.kill(os.getpid(), signal.SIGKILL)
with atomic_open(path, "wb") as f:  # "hold": a live writer, still writing when the other write comes
    f.write(b"the live writer's model")
    print("writing", flush=True)
    sys.stdin.readline()
"""


def test_a_temporary_file_a_killed_writer_left_is_removed_by_the_next_write(tmp_path: Path) -> None:
    """Fourteenth pass (J): SIGKILL during an atomic write left `.model.pt.XXXXXXXX.tmp` for good. A writer now holds
    an flock on its temporary file until the rename, so the next write of that name removes one nobody holds and
    that is older than a minute; a live writer's file, and one made an instant ago, stay."""
    import subprocess
    import sys

    from sate.files import ABANDONED_AFTER

    target = tmp_path / "model.pt"
    target.write_bytes(b"the model")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(target), "kill"], env=env)
    assert killed.returncode == -9 and target.read_bytes() == b"the model"
    [left] = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert left.read_bytes() == b"half a mod"
    atomic_write_text(target, "young")  # left an instant ago: could be a writer between its creation and its lock
    assert left.exists()
    live = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(target), "hold"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert live.stdout.readline() == "writing\n"
    [held] = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp") and p != left]
    old = time.time() - 2 * ABANDONED_AFTER
    for path in (left, held):
        os.utime(path, (old, old))
    user = tmp_path / ".model.pt.my-notes.tmp"  # a name of the user's, not of the temporary kind
    user.write_text("notes")
    os.utime(user, (old, old))
    atomic_write_text(target, "second")
    assert not left.exists() and held.exists() and user.read_text() == "notes" and target.read_text() == "second"
    live.communicate("\n", timeout=60)
    assert live.returncode == 0 and target.read_bytes() == b"the live writer's model"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.pt.my-notes.tmp", "model.pt"]


def test_abandoned_temporary_files_go_where_flock_wants_a_descriptor_open_for_writing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NFS emulates flock with fcntl locks, and an exclusive one on a descriptor open read-only is EBADF (`man 2
    flock`): the sweep opened each temporary file read-only, and so removed nothing there, where requeued jobs run
    (review of hand27t). Emulated here: each is opened for writing and goes; one a live writer holds stays."""
    import fcntl

    from sate.files import remove_abandoned

    flock = fcntl.flock

    def nfs_flock(fd: int, operation: int) -> None:
        if operation & fcntl.LOCK_EX and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
            raise OSError(errno.EBADF, "Bad file descriptor")
        flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", nfs_flock)
    left, held = tmp_path / ".epoch003.ckpt.zz81pq0a.tmp", tmp_path / ".last.ckpt.k2abcd_9.tmp"
    for path in (left, held):
        path.write_bytes(b"PK half a checkpoint")
    with open(held, "r+b") as writer:
        flock(writer.fileno(), fcntl.LOCK_EX)  # a live writer's (another open file: its lock excludes ours)
        assert remove_abandoned(tmp_path, ".ckpt") == [left]
    assert not left.exists() and held.exists()


_KILLED_AMONG_RENAMES = """
import os, signal, sys
from pathlib import Path
import sate.files as files
rename = files._rename_into
def rename_then_die(tmp, path):
    rename(tmp, path)
    if path.name == "train.jsonl":
        os.kill(os.getpid(), signal.SIGKILL)
files._rename_into = rename_then_die
folder = Path(sys.argv[1])
files.replace_together({folder / "train.jsonl": b"new train", folder / "dev.jsonl": b"new dev"})
"""


def test_a_set_killed_among_its_renames_is_refused_until_it_is_written_again(tmp_path: Path) -> None:
    """Fifteenth pass (J): SIGKILL, which no handler holds off, among the renames of a set with no record left
    `sate prep`'s new train.jsonl beside the old dev.jsonl, and every reader took the mix. The folder's journal
    lists the set while it is renamed; what it lists is refused until a run writes it again."""
    import subprocess
    import sys

    from sate import layout
    from sate.data.manifest import read_manifest
    from sate.files import check_set_whole

    for split in ("train", "dev"):
        (tmp_path / f"{split}.jsonl").write_bytes(f"old {split}".encode())
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    killed = subprocess.run([sys.executable, "-c", _KILLED_AMONG_RENAMES, str(tmp_path)], env=env)
    assert killed.returncode == -9
    assert {(tmp_path / name).read_bytes() for name in ("train.jsonl", "dev.jsonl")} == {b"new train", b"old dev"}
    with pytest.raises(SateError, match=r"train\.jsonl: the run that replaced it with dev\.jsonl was killed among "
                                        r"the renames \(.*\.sate-replacing lists them\), so they may be of two runs: "
                                        r"run `sate prep` again$"):
        read_manifest(tmp_path / "train.jsonl")
    with pytest.raises(SateError, match=r"dev\.jsonl: the run that replaced it with train\.jsonl"):
        check_set_whole(tmp_path / "dev.jsonl", "run `sate prep` again")
    (tmp_path / "linked").mkdir()  # read through a link, the file is judged where it is
    (tmp_path / "linked" / "dev.jsonl").symlink_to(tmp_path / "dev.jsonl")
    with pytest.raises(SateError, match=r"linked/dev\.jsonl: the run that replaced it with train\.jsonl"):
        check_set_whole(tmp_path / "linked" / "dev.jsonl", "run `sate prep` again")
    shutil.rmtree(tmp_path / "linked")
    (tmp_path / "test.jsonl").write_bytes(b"a split of neither run")
    check_set_whole(tmp_path / "test.jsonl", "run `sate prep` again")
    replace_together({tmp_path / "train.jsonl": b"third train"})  # one of the two again: the other stays in doubt
    check_set_whole(tmp_path / "train.jsonl", "run `sate prep` again")
    with pytest.raises(SateError, match=r"dev\.jsonl: the run that replaced it was killed"):
        check_set_whole(tmp_path / "dev.jsonl", "run `sate prep` again")
    replace_together({tmp_path / "train.jsonl": b"4th train", tmp_path / "dev.jsonl": b"4th dev"})
    check_set_whole(tmp_path / "dev.jsonl", "run `sate prep` again")
    assert not (tmp_path / layout.REPLACING).exists()
    # a file of that name that sate did not write is neither replaced nor removed
    (tmp_path / layout.REPLACING).write_text("my notes\n")
    with pytest.raises(SateError, match=r"\.sate-replacing: a file sate did not write \(no list of names\), where sate "
                                        "keeps its journal"):
        replace_together({tmp_path / "train.jsonl": b"5th train", tmp_path / "dev.jsonl": b"5th dev"})
    assert (tmp_path / layout.REPLACING).read_text() == "my notes\n" and (tmp_path / "dev.jsonl").read_bytes() == \
        b"4th dev"
    check_set_whole(tmp_path / "dev.jsonl", "run `sate prep` again")
    (tmp_path / layout.REPLACING).unlink()
    # and the killed run's temporary dev.jsonl, which the next write of that name removes once a minute old
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".tmp")) == [
        "dev.jsonl", "test.jsonl", "train.jsonl"]


@pytest.mark.parametrize("record", [False, True])
def test_two_names_of_one_set_that_lead_to_one_file_are_refused(tmp_path: Path, record: bool) -> None:
    """A set whose two names lead to one file (prep's dev.jsonl a link to train.jsonl, vocab's tokens_tgt.txt to
    tokens_src.txt, an `analyze attention` layer map to its --out, evaluate's hyp.txt to ref.txt) had both renamed
    onto it, the one's content lost, exit 0 (seventeenth hostile pass). Nothing is written."""
    (tmp_path / "train.jsonl").write_text("old train\n")
    (tmp_path / "dev.jsonl").symlink_to("train.jsonl")
    with pytest.raises(SateError, match=r"dev\.jsonl: leads to the same file as .*train\.jsonl \(a link between "
                                        r"them, or one folder mounted at two places\), where the command writes two "
                                        r"files of one set; remove the link, or give each its own name"):
        replace_together({tmp_path / "train.jsonl": b"new train\n", tmp_path / "dev.jsonl": b"new dev\n"},
                         tmp_path / "record.json" if record else None)
    assert (tmp_path / "train.jsonl").read_text() == "old train\n" and (tmp_path / "dev.jsonl").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev.jsonl", "train.jsonl"]


def test_a_journal_of_many_names_is_named_in_a_short_line(tmp_path: Path) -> None:
    """The refusal listed every other name of the journal: one listing 100,000 (hand-made, or grown by sets of
    thousands of files) was a "one-line" error of 1.4 MB (seventeenth hostile pass)."""
    from sate import layout
    from sate.files import check_set_whole

    names = ["train.jsonl", *(f"n{i}.jsonl" for i in range(100_000))]
    (tmp_path / layout.REPLACING).write_text(json.dumps({"names": names}))
    with pytest.raises(SateError, match=r"train\.jsonl: the run that replaced it with n0\.jsonl, n1\.jsonl, n2\.jsonl "
                                        r"and 99,997 more was killed") as refused:
        check_set_whole(tmp_path / "train.jsonl", "run `sate prep` again")
    assert len(str(refused.value)) < 400


@pytest.mark.parametrize("kind", ["notes", "link-to-notes", "folder", "fifo", "link-to-dev-zero"])


def test_a_users_file_named_like_the_journal_is_never_replaced_or_removed(tmp_path: Path, kind: str) -> None:
    """Sixteenth pass: a set with no record wrote its journal (`layout.REPLACING`) over whatever stood at that name
    and removed it after: a user's file of that name was lost, and one that was a symlink had the file it led to
    replaced with the journal. Anything there that is not sate's journal is refused by name, before any write."""
    from sate import layout

    out, user = tmp_path / "out", tmp_path / "user"
    out.mkdir()
    (user / "folder").mkdir(parents=True)
    (user / "notes.txt").write_text("my notes\n")
    journal = out / layout.REPLACING
    {"notes": lambda: journal.write_text("my notes\n"), "link-to-notes": lambda: journal.symlink_to(user / "notes.txt"),
     "folder": lambda: journal.mkdir(), "fifo": lambda: os.mkfifo(journal),
     "link-to-dev-zero": lambda: journal.symlink_to("/dev/zero")}[kind]()
    (out / "a.txt").write_text("old a\n")
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(SateError, match=f"^{re.escape(str(journal))}: .*, where sate keeps its journal while it "
                                        f"replaces files of {re.escape(str(out))} together"):
        replace_together({out / "a.txt": b"new a\n", out / "b.txt": b"new b\n"})
    assert sorted(p.name for p in out.iterdir()) == before  # nothing written, no temporary file
    assert (out / "a.txt").read_text() == "old a\n" and (user / "notes.txt").read_text() == "my notes\n"
    assert os.path.lexists(journal)
    # sate's own journal, left by a kill, is taken over and removed once the whole set is written
    if kind == "folder":
        journal.rmdir()
    else:
        journal.unlink()
    journal.write_text('{"names": ["a.txt", "b.txt"]}\n')
    replace_together({out / "a.txt": b"new a\n", out / "b.txt": b"new b\n"})
    assert not os.path.lexists(journal) and (out / "b.txt").read_text() == "new b\n"


def test_a_set_killed_among_its_renames_is_refused_through_a_link_to_it(tmp_path: Path) -> None:
    """Sixteenth pass: manifests that are links to files in another folder are renamed (and listed in the journal)
    where the links lead, and the readers looked for the journal beside the link: after SIGKILL among `sate prep`'s
    renames, `sate vocab` and `sate train` read the new train.jsonl beside the old dev.jsonl, status 0."""
    import subprocess
    import sys

    from sate import layout
    from sate.data.manifest import read_manifest

    data, shared = tmp_path / "data", tmp_path / "shared"
    data.mkdir()
    shared.mkdir()
    for split in ("train", "dev"):
        (shared / f"{split}.jsonl").write_bytes(f"old {split}".encode())
        (data / f"{split}.jsonl").symlink_to(shared / f"{split}.jsonl")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    killed = subprocess.run([sys.executable, "-c", _KILLED_AMONG_RENAMES, str(data)], env=env)
    assert killed.returncode == -9 and (shared / layout.REPLACING).exists() and not (data / layout.REPLACING).exists()
    assert [(data / name).read_bytes() for name in ("train.jsonl", "dev.jsonl")] == [b"new train", b"old dev"]
    for split, other in (("train", "dev"), ("dev", "train")):
        said = (f"{data / split}.jsonl: the run that replaced it with {other}.jsonl was killed among the renames "
                f"({shared / layout.REPLACING} lists them)")
        with pytest.raises(SateError, match=re.escape(said)):
            read_manifest(data / f"{split}.jsonl")
    replace_together({data / "train.jsonl": b"next train", data / "dev.jsonl": b"next dev"})  # the next run clears it
    assert not (shared / layout.REPLACING).exists() and (data / "dev.jsonl").is_symlink()


def test_a_reader_names_a_folder_or_pipe_at_the_journals_name_as_no_journal(tmp_path: Path) -> None:
    """Sixteenth pass: a manifest's reader met a user's folder (or named pipe) at `layout.REPLACING` as "a record of
    sate's own; remove it (the command writes it again)": wrong advice for a folder of the user's, and no command
    writes a journal again. It is named as the place of sate's journal, to be moved away."""
    from sate import layout
    from sate.data.manifest import read_manifest

    (tmp_path / "train.jsonl").write_text('{"id": "a", "audio": "a.wav"}\n')
    (tmp_path / layout.REPLACING).mkdir()
    (tmp_path / layout.REPLACING / "mine.txt").write_text("my notes\n")
    with pytest.raises(SateError, match=f"^{re.escape(str(tmp_path / layout.REPLACING))}: a directory, where sate "
                                        r"keeps its journal while it replaces files of .* together \(and removes it "
                                        r"after\): move it away$"):
        read_manifest(tmp_path / "train.jsonl")
    assert (tmp_path / layout.REPLACING / "mine.txt").read_text() == "my notes\n"


def test_two_files_of_a_set_in_one_folder_mounted_at_two_places_are_refused(tmp_path: Path) -> None:
    """Eighteenth hostile pass: `report --out A/r.png --curves B/r.png`, B a bind mount of A, named one file by two
    paths that no link resolves: the curves replaced the table, exit 0. The mount is made in a mount namespace of
    the test's own (`unshare -m`), which a container's root may make where it may not mount in its own."""
    import subprocess  # only here: a bind mount, made by a process of its own
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) here to make a bind mount in a namespace of its own")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    check = ("import sys; from pathlib import Path; from sate.errors import SateError; from sate.files import "
             "replace_together\ntry:\n    replace_together({Path(sys.argv[1]) / 'r.png': b'table', Path(sys.argv[2]) "
             "/ 'r.png': b'curves'})\nexcept SateError as err:\n    print(err)")
    done = subprocess.run(["unshare", "-m", "sh", "-c", 'mount --bind "$1" "$2" && exec "$3" -c "$4" "$1" "$2"', "sh",
                           str(a), str(b), sys.executable, check], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([*filter(None, [os.environ.get(
                              "PYTHONPATH")]), str(Path(__file__).resolve().parents[1])])})
    if done.returncode != 0 and "mount" in done.stderr and "Traceback" not in done.stderr:
        pytest.skip(f"no bind mount here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r".*b/r.png: leads to the same file as .*a/r.png \(a link between them, or one folder mounted "
                        r"at two places\).*\n", done.stdout), done.stdout
    assert list(a.iterdir()) == [] and list(b.iterdir()) == []


@pytest.mark.parametrize("char", ["\x7f", "\x85", "\x9b", "\u2028", "\u2029", "\u202e", "\u2066", "\udcff"])
def test_json_text_escapes_what_a_message_escapes(char: str) -> None:
    """Nineteenth hostile pass: DEL, the C1 controls (U+0085 splits a line for `str.splitlines`) and the right-to-left
    override in a file name were written as they are into `sate translate --format jsonl`'s lines and the manifests;
    each is now JSON's escape, read back as the same name."""
    value = {"file": f"talk{char}.wav", "n": 1}
    text = json_text(value)
    assert char not in text and f"\\u{ord(char):04x}" in text
    assert json.loads(text) == value and len(text.splitlines()) == 1
    text.encode("utf-8")  # strict: a lone surrogate is its escape


def test_a_file_system_out_of_inodes_is_named_so_with_the_files_own_name(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system with blocks to spare and no inode left (a tmpfs of nr_inodes=8) made mkstemp fail: the line
    named `.hyp.txt.st04sahm.tmp`, a name never made, and said "the disk is full", where `df -h` showed free space
    (nineteenth hostile pass)."""
    import sate.files as files  # the module's own os and tempfile, patched for this test alone

    def no_inode(prefix: str, suffix: str, dir: str) -> tuple[int, str]:  # noqa: A002 (mkstemp's own name)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.path.join(dir, f"{prefix}st04sahm{suffix}"))

    class Full:
        f_files, f_ffree, f_bavail = 100, 0, 1000

    monkeypatch.setattr(files.tempfile, "mkstemp", no_inode)
    monkeypatch.setattr(files.os, "statvfs", lambda path: Full())
    with pytest.raises(OSError) as err:
        atomic_write_text(tmp_path / "hyp.txt", "x\n")
    assert describe_os_error(err.value) == f"{tmp_path / 'hyp.txt'}: No space left on device ({files.NO_INODES})"
    assert list(tmp_path.iterdir()) == []


def test_a_model_file_beyond_a_file_size_limit_is_one_line(tmp_path: Path) -> None:
    """`sate average` (and `sate train`'s checkpoints) under `ulimit -f`: torch's zip writer met EFBIG, then its own
    end check raised "unexpected pos 64 vs 0", a RuntimeError traceback that hid the OSError (nineteenth hostile
    pass). The OSError is what comes out, named by the file, and no temporary file is left."""
    import resource  # Unix only, as the limit this test sets

    path = tmp_path / "avg.pt"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, hard))  # Python ignores SIGXFSZ: the write fails with EFBIG
    try:
        with pytest.raises(OSError) as err:
            atomic_torch_save({"w": torch.zeros(4096)}, path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert describe_os_error(err.value).startswith(f"{path}: File too large (")
    assert list(tmp_path.iterdir()) == []


def test_a_sets_record_is_put_back_when_its_first_rename_fails(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`sate evaluate --out EV` again with EV/hyp.txt a file bind-mounted there (EBUSY at its rename): the old
    record (results.json) was removed before the renames, so the earlier run, whose files all stayed, lost its
    scores (nineteenth hostile pass). With nothing renamed and nothing of the old set removed, it is put back."""
    import sate.files as files  # its rename, made to fail as onto a mount point

    hyp, record = tmp_path / "hyp.txt", tmp_path / "results.json"
    hyp.write_text("old hyp\n")
    record.write_text('{"bleu": 1.0}\n')

    real = files._rename_into

    def busy(tmp: Path, path: Path) -> None:  # hyp.txt is the mount point
        if path.name == "hyp.txt":
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(path))
        real(tmp, path)

    monkeypatch.setattr(files, "_rename_into", busy)
    with pytest.raises(OSError, match="busy"):
        replace_together({hyp: b"new hyp\n"}, record, '{"bleu": 2.0}\n')
    assert (hyp.read_text(), record.read_text()) == ("old hyp\n", '{"bleu": 1.0}\n')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hyp.txt", "results.json"]


def test_a_lock_that_is_a_mount_point_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's notes bind-mounted at DATA/features.lock (or vocab.lock): the lock was opened and the notes cut to
    the pid, exit 0; no link and no second name told it (nineteenth hostile pass). The mounts are what
    /proc/self/mounts lists; here one is said to be there."""
    import sate.files as files  # the list of mounts, as the system would give it with a bind mount
    from sate.files import open_lock

    lock = tmp_path / "features.lock"
    lock.write_text("my notes\n")
    monkeypatch.setattr(files, "_mounts", lambda: [(Path("/"), "ext4"), (lock, "ext4")])
    with pytest.raises(SateError, match=f"^{lock}: a mount point .*, not a lock file sate writes; unmount it$"):
        open_lock(lock)
    assert lock.read_text() == "my notes\n"


def test_a_descriptor_is_named_with_digits_0_to_9() -> None:
    """`/dev/fd/١` (an Arabic-Indic one, no entry the kernel has) was read as descriptor 1, the standard output, and
    written through it (nineteenth hostile pass); it is a path like any other."""
    assert own_descriptor("/dev/fd/1") == 1 and own_descriptor("/proc/self/fd/2") == 2
    assert own_descriptor("/dev/fd/\u0661") is None and own_descriptor("/proc/self/fd/\uff11") is None


@pytest.mark.parametrize(("given", "says"), [
    ("project", "no data directory itself; it holds the data directory PROJECT/data: give it"),
    ("project/data/fbank", "a folder inside the data directory PROJECT/data, not one itself: give PROJECT/data"),
    ("project/data/fbank/dev", "a folder inside the data directory PROJECT/data, not one itself: give PROJECT/data"),
    ("project/corpus", "no data directory: no manifests (SPLIT.jsonl), features or vocabulary in it (`sate prep "
                       "--out` makes one)"),
])
def test_a_folder_next_to_the_data_directory_is_named_for_what_it_is(tmp_path: Path, given: str, says: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-first hostile pass: the folder holding the data directory, its fbank/ or a shard folder, or a corpus
    given as --data was told that DIR/dev.jsonl, DIR/train.jsonl or DIR/spm_src.model, paths nobody gave, were
    missing, with advice to run `sate prep` or `sate vocab` into the wrong folder (evaluate, pack, analyze, vocab,
    features; train's data.dir)."""
    from sate.cli import main
    from sate.files import check_data_directory

    data = tmp_path / "project" / "data"
    (data / "fbank" / "dev").mkdir(parents=True)
    (data / "dev.jsonl").write_text("")
    (tmp_path / "project" / "corpus" / "en-de").mkdir(parents=True)
    folder = tmp_path / given
    line = f"--data {folder}: {says.replace('PROJECT', str(tmp_path / 'project'))}"
    with pytest.raises(SateError) as refused:
        check_data_directory(folder, "--data")
    assert str(refused.value) == line
    for argv in (["features", "--data", str(folder)], ["vocab", "--data", str(folder), "--joint", "40"]):
        assert main(argv) == 2  # (its fbank/ is refused as an output first: sate's stored features)
        assert capsys.readouterr().err == f"sate {argv[0]}: error: {line}\n" or "fbank" in given
    evaluation, hub = tmp_path / "project" / "eval", tmp_path / "project" / "hub"
    evaluation.mkdir()
    (evaluation / "results.json").write_text("{}")
    (evaluation / "delays.jsonl").write_text("")
    hub.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.json"):
        (hub / name).write_text("{}")
    with pytest.raises(SateError, match=r"eval: a `sate evaluate` run \(it holds results.json\), not a data dir"):
        check_data_directory(evaluation, "--data")
    with pytest.raises(SateError, match=r"hub: a downloaded model's folder \(config.json beside its weights\), not"):
        check_data_directory(hub, "--data")
    check_data_directory(data, "--data")  # the data directory itself, as prep alone leaves it
    (data / "dev.jsonl").unlink()
    check_data_directory(data, "--data")  # its features alone make it one too
    assert {p.name for p in tmp_path.rglob("*")} >= {"corpus", "data", "dev", "en-de", "fbank", "project"}


def test_a_gzipped_json_file_is_named_so(tmp_path: Path) -> None:
    """Twenty-first hostile pass: a gzipped results.json (`sate latency-plot results.json.gz`) was "not valid JSON
    ('utf-8' codec can't decode byte 0x8b in position 1: ...)"; it says the file is gzip-compressed."""
    import gzip  # only this test writes one

    path = tmp_path / "results.json.gz"
    path.write_bytes(gzip.compress(b'{"bleu": 1.0}'))
    with pytest.raises(SateError, match=r"results\.json\.gz: gzip-compressed data, not JSON text$"):
        read_json(path)
    path.write_bytes(b"\xff{}")
    with pytest.raises(SateError, match=r"results\.json\.gz: not valid JSON \('utf-8' codec"):
        read_json(path)
