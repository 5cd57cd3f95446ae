"""Resuming an experiment directory: safe loading, damaged or missing checkpoints, changed configs (issue 17)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from lightning.pytorch.callbacks import Callback

from sate.cli import main
from sate.config import read_yaml
from sate.errors import SateError
from sate.settings import build, merge
from sate.train.resume import ResumePoint, check_config_change, config_changes, read_checkpoint
from sate.train.schema import TrainingConfig
from sate.train.trainer import load_training_config, train

pytestmark = pytest.mark.slow  # trains tiny models
MakeConfig = Callable[..., Path]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, prepared_data: Path, make_config: MakeConfig
            ) -> tuple[Path, Path]:
    """(config file, exp) of a tiny ASR run of 3 epochs, one update each: epoch000..002, best-*, last.ckpt.

    Early stopping and a time budget are on, so that their callbacks' states are in the checkpoints too."""
    root = tmp_path_factory.mktemp("resume")
    path = make_config(root, "asr", prepared_data, trainer={"max_epochs": 3, "patience": 5, "max_minutes": 60})
    train(load_training_config(path, []), root / "exp")
    return path, root / "exp"


@pytest.fixture
def exp(trained: tuple[Path, Path], tmp_path: Path) -> Path:
    """A private copy of the trained experiment."""
    shutil.copytree(trained[1], tmp_path / "exp")
    return tmp_path / "exp"


def _start_step(config: dict, exp: Path) -> int:
    """Train on and return the global step the run started from."""
    from lightning.pytorch.callbacks import Callback

    seen: dict = {}

    class Start(Callback):
        def on_train_start(self, trainer, pl_module) -> None:  # noqa: ANN001
            seen["step"] = trainer.global_step

    train(config, exp, callbacks=[Start()])
    return seen["step"]


class _Evil:
    """Unpickling this would create the marker file: code run by loading a checkpoint."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (Path.touch, (self.marker,))


def test_a_pickled_object_in_last_ckpt_is_refused_and_never_run(trained: tuple[Path, Path], exp: Path,
                                                                 tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    marker = tmp_path / "code-ran"
    last = exp / "checkpoints" / "last.ckpt"
    checkpoint = torch.load(last, weights_only=True)
    checkpoint["sate"]["payload"] = _Evil(marker)
    torch.save(checkpoint, last)
    code = main(["train", "--config", str(trained[0]), "--exp", str(exp), "--set", "trainer.max_epochs=4"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and not marker.exists()
    assert len(err.splitlines()) == 1 and "last.ckpt: refused: it holds pickled objects" in err, err
    assert "Path.touch" in err or "pathlib" in err


def test_every_checkpoint_of_a_run_loads_with_weights_only_and_no_extra_globals(exp: Path) -> None:
    for path in sorted((exp / "checkpoints").glob("*.ckpt")):
        assert torch.serialization.get_unsafe_globals_in_checkpoint(path) == [], path
        checkpoint = read_checkpoint(path)
        assert checkpoint["sate"]["run_id"] and {"loops", "lr_schedulers", "optimizer_states"} <= set(checkpoint)
        callbacks = checkpoint["callbacks"]
        assert any(k.startswith("EarlyStopping") for k in callbacks) and "Timer" in callbacks


def test_a_last_ckpt_older_than_another_is_called_older_not_unreadable(trained: tuple[Path, Path], exp: Path) -> None:
    """A run stopped between writing an epoch's checkpoint and last.ckpt (which still holds the epoch before)
    resumes from the further one and says why."""
    from sate.train.resume import find_resume_point

    ckpts = exp / "checkpoints"
    shutil.copy(ckpts / "epoch001.ckpt", ckpts / "last.ckpt")  # the newest file by time, one update behind
    point = find_resume_point(ckpts)
    assert point.path == ckpts / "epoch002.ckpt" and point.passed_over == []
    assert point.notes[0].startswith(f"{ckpts / 'last.ckpt'} is older; resuming from epoch002.ckpt"), point.notes


def test_a_copied_experiment_resumes_from_its_furthest_checkpoint_whatever_the_file_times(
        trained: tuple[Path, Path], exp: Path) -> None:
    """A copy (`cp -r`) gives each file the time of its copy: the newest by time was whichever was copied last,
    an epoch checkpoint behind last.ckpt, and the resumed run went on from there and overwrote the progress of
    last.ckpt (twelfth hostile pass)."""
    from sate.train.resume import find_resume_point

    ckpts = exp / "checkpoints"
    os.utime(ckpts / "epoch000.ckpt")  # copied last: the newest file
    point = find_resume_point(ckpts)
    assert point.path == ckpts / "last.ckpt" and point.checkpoint is not None
    assert point.checkpoint["global_step"] == 3 and point.notes == [f"resuming from {ckpts / 'last.ckpt'} (step 3, "
                                                                    "epoch 2)"]


def test_a_damaged_last_ckpt_falls_back_to_the_newest_readable(trained: tuple[Path, Path], exp: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    last = exp / "checkpoints" / "last.ckpt"
    last.write_bytes(last.read_bytes()[:5000])  # truncated, as by a full disk
    config = load_training_config(trained[0], ["trainer.max_epochs=4"])
    assert _start_step(config, exp) == 3
    out = capsys.readouterr().out
    assert "last.ckpt is unreadable; resuming from epoch002.ckpt (step 3, epoch 2)" in out, out
    assert (exp / "checkpoints" / "last.ckpt.unreadable").is_file()
    assert read_checkpoint(last)["global_step"] == 4


def test_a_checkpoint_set_aside_never_replaces_one_set_aside_before(tmp_path: Path) -> None:
    """A last.ckpt damaged at two resumes was renamed onto the first one's last.ckpt.unreadable (eighteenth
    hostile pass, left by the seventeenth): each keeps its own name, and so does a folder or a link of that name."""
    from sate.train.resume import set_aside

    ckpts = tmp_path / "checkpoints"
    ckpts.mkdir()
    (ckpts / "last.ckpt.unreadable").write_bytes(b"first damaged")
    (ckpts / "last.ckpt.unreadable.2").mkdir()
    (ckpts / "last.ckpt.unreadable.3").symlink_to(tmp_path / "nowhere")
    (ckpts / "last.ckpt").write_bytes(b"second damaged")
    (ckpts / "epoch001.ckpt").write_bytes(b"third damaged")
    moved = set_aside([ckpts / "last.ckpt", ckpts / "epoch001.ckpt"])
    assert moved == [ckpts / "last.ckpt.unreadable.4", ckpts / "epoch001.ckpt.unreadable"]
    assert (ckpts / "last.ckpt.unreadable").read_bytes() == b"first damaged"
    assert moved[0].read_bytes() == b"second damaged" and moved[1].read_bytes() == b"third damaged"
    assert (ckpts / "last.ckpt.unreadable.2").is_dir() and (ckpts / "last.ckpt.unreadable.3").is_symlink()


def test_a_deleted_last_ckpt_resumes_from_the_newest_epoch_checkpoint(trained: tuple[Path, Path], exp: Path,
                                                                       capsys: pytest.CaptureFixture) -> None:
    run_id = read_checkpoint(exp / "checkpoints" / "epoch002.ckpt")["sate"]["run_id"]
    (exp / "checkpoints" / "last.ckpt").unlink()
    config = load_training_config(trained[0], ["trainer.max_epochs=4"])
    assert _start_step(config, exp) == 3  # never silently from scratch beside the old run's epochs
    assert "last.ckpt is missing; resuming from" in capsys.readouterr().out
    assert read_checkpoint(exp / "checkpoints" / "epoch003.ckpt")["sate"]["run_id"] == run_id


def test_a_checkpoint_a_killed_run_was_writing_is_removed_by_the_resume(trained: tuple[Path, Path], exp: Path,
                                                                        capsys: pytest.CaptureFixture) -> None:
    """SIGKILL during a checkpoint's save leaves its temporary file (`.NAME.XXXXXXXX.tmp`, a checkpoint's size);
    the next save of NAME removed it only once a minute old, and an epoch's or best checkpoint's name is saved once:
    a run killed there and started again at once (a requeued job) kept it for good (hand27t). The resume holds
    train.lock, so no writer is in the folder: every unlocked one goes, whatever its age; another file stays."""
    ckpts = exp / "checkpoints"
    left = [ckpts / ".best-val_loss-epoch001.ckpt.k2abcd_9.tmp", ckpts / ".epoch003.ckpt.zz81pq0a.tmp"]
    for path in left:
        path.write_bytes(b"PK\x03\x04 half a checkpoint")
    other = ckpts / ".notes.txt.ab12cd34.tmp"  # not a checkpoint's: not this run's to remove
    other.write_text("mine")
    train(load_training_config(trained[0], ["trainer.max_epochs=4"]), exp)
    assert not any(path.exists() for path in left)
    assert other.read_text() == "mine"
    out = capsys.readouterr().out
    assert f"removed {left[0].name}, a checkpoint that a killed run was writing" in out


def test_a_run_begun_on_train_and_train_sp_resumes_and_a_new_one_is_refused(
        tmp_path: Path, prepared_data: Path, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    """`data.train: [train, train_sp]` is refused for a new run, as train_sp holds train's rows; a run begun so
    before that refusal could not go on: refused at its config, and the advised train_sp in train's place refused
    by the resume as a changed config ("undo the change"), a loop; `sate config` of its own config.yaml was refused
    too (review of hand27t). It resumes with a note; the refusal's advice, followed, trains a new run."""
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    assert main(["features", "--data", str(data), "--jobs", "1", "--speed-perturb"]) == 0
    path = make_config(tmp_path, "asr", data, data={"train": ["train", "train_sp"]})
    with monkeypatch.context() as old_sate:  # a run begun before the refusal
        old_sate.setattr("sate.train.trainer.trained_twice", lambda value: None, raising=False)
        assert main(["train", "--config", str(path), "--exp", str(tmp_path / "old")]) == 0
    capsys.readouterr()
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "old"), "--set", "trainer.max_epochs=2"]) == 0
    out = capsys.readouterr().out
    assert "note: data.train lists train and train_sp: " in out and "this run began so" in out
    assert main(["config", "--config", str(tmp_path / "old" / "config.yaml")]) == 0
    assert "note: data.train lists train and train_sp" in capsys.readouterr().err
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("so those rows are trained on twice; give train_sp in train's place"), err
    assert not (tmp_path / "new").exists()
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "new"), "--set", "data.train=[train_sp]"]) == 0


def _edited(path: Path, **header: object) -> None:
    """Rewrite a checkpoint with some of its top-level keys (or, under `sate`, its header's) set otherwise."""
    ckpt = torch.load(path, weights_only=False)
    ckpt["sate"].update(header.pop("sate", {}))
    ckpt.update(header)
    torch.save(ckpt, path)


def test_a_checkpoint_of_another_sate_version_is_refused_not_set_aside(trained: tuple[Path, Path], exp: Path,
                                                                         capsys: pytest.CaptureFixture) -> None:
    """A checkpoint whose header another sate wrote (format version 99) was resumed as this sate's, while `sate
    average` refused it ("sate model file version 99"); set aside as damaged it would be lost to the sate that
    reads it (hand27t). Refused, the folder as it was."""
    last = exp / "checkpoints" / "last.ckpt"
    _edited(last, sate={"version": 99})
    before = {p.name: p.read_bytes() for p in (exp / "checkpoints").iterdir()}
    assert main(["train", "--config", str(trained[0]), "--exp", str(exp), "--set", "trainer.max_epochs=4"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sate train: error: {last}: a checkpoint of another sate (format 'sate-model' version 99; this sate reads "
        "sate-model version 1): resume it with the sate that wrote it, or train into a new --exp")
    assert {p.name: p.read_bytes() for p in (exp / "checkpoints").iterdir()} == before


def test_a_checkpoint_whose_step_is_no_number_is_passed_over(trained: tuple[Path, Path], exp: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    """A `global_step` that is not a whole number (an edited header) was resumed from: Lightning's TypeError
    traceback once the model and data were set up (hand27t). Damaged: passed over, as a file cut short is."""
    _edited(exp / "checkpoints" / "last.ckpt", global_step="x")
    config = load_training_config(trained[0], ["trainer.max_epochs=4"])
    assert _start_step(config, exp) == 3
    assert "its step 'x' or epoch 2 is not a whole number of at least 0" in capsys.readouterr().out
    assert (exp / "checkpoints" / "last.ckpt.unreadable").is_file()


def test_no_readable_checkpoint_is_a_one_line_error(trained: tuple[Path, Path], exp: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    for path in (exp / "checkpoints").glob("*.ckpt"):
        path.write_bytes(b"not a checkpoint")
    code = main(["train", "--config", str(trained[0]), "--exp", str(exp)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "no readable checkpoint to resume from" in err and "train into a new --exp" in err


def test_a_changed_config_is_refused_naming_the_keys(trained: tuple[Path, Path], exp: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    snapshot = (exp / "config.yaml").read_text()
    code = main(["train", "--config", str(trained[0]), "--exp", str(exp), "--set", "optim.lr=1e-3",
                 "--set", "model.d_model=64", "--set", "trainer.max_epochs=4"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "cannot resume with a changed config: model.d_model 32 -> 64, optim.lr 0.01 -> 0.001" in err
    assert "max_epochs" not in err  # a safe key
    assert (exp / "config.yaml").read_text() == snapshot  # never rewritten for a run that did not happen


def test_safe_keys_may_change_and_the_snapshot_says_so(trained: tuple[Path, Path], exp: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    config = load_training_config(trained[0], ["trainer.max_epochs=4", "trainer.keep_last=2", "data.num_workers=0"])
    assert _start_step(config, exp) == 3
    assert "resuming with trainer.max_epochs changed: 3 -> 4" in capsys.readouterr().out
    assert read_yaml(exp / "config.yaml")["trainer"]["max_epochs"] == 4


def test_a_resume_with_other_init_models_says_they_are_not_loaded(trained: tuple[Path, Path], exp: Path,
                                                                   tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    """A resume given other init: models (`--init-from` of other runs, of another vocabulary even) said "resuming
    with init changed: ... -> ...", as if they were loaded; a resume's weights are its checkpoint's (24th hostile
    pass)."""
    init = f"init={{acoustic: {{path: {tmp_path / 'elsewhere.pt'}}}}}"  # never read: a resume loads no init
    config = load_training_config(trained[0], ["trainer.max_epochs=4", init])
    assert _start_step(config, exp) == 3
    out = capsys.readouterr().out
    assert "resuming with init changed: {} -> {'acoustic': " in out
    assert "(not loaded: a resume's weights are its checkpoint's; init applies to a fresh start)" in out


def test_lightnings_lines_escape_control_characters_in_the_experiments_path(trained: tuple[Path, Path],
                                                                            tmp_path: Path) -> None:
    """Lightning's "Restoring states from the checkpoint path at EXP/..." line and its warnings naming the checkpoint
    folder printed an --exp holding an escape sequence or a line break raw, where sate's own lines escape it
    (thirteenth pass's leftover). Run as a user runs it: Lightning's handler writes to the process's stderr."""
    import subprocess
    import sys

    exp = tmp_path / "e\x1b[31mx\nnew line"
    shutil.copytree(trained[1], exp)
    done = subprocess.run([sys.executable, "-m", "sate.cli", "train", "--config", str(trained[0]), "--exp", str(exp),
                           "--set", "trainer.max_epochs=4"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = str(tmp_path / "e\\x1b[31mx\\nnew line")
    assert "\x1b[31m" not in done.stdout + done.stderr  # the progress bars move the cursor with escapes of their own
    assert f"Restoring states from the checkpoint path at {shown}" in done.stderr, done.stderr


def test_the_data_directory_spelled_another_way_is_no_change(trained: tuple[Path, Path], exp: Path,
                                                             prepared_data: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture) -> None:
    """`data.dir` given relative (`data`) where the run was started with it absolute: "cannot resume with a changed
    config: data.dir '/.../data' -> 'data'" for the same directory (a recipe run with and without --data gives the
    two spellings; tenth hostile pass). Another directory is still a change."""
    monkeypatch.chdir(prepared_data.parent)
    config = load_training_config(trained[0], [f"data.dir={prepared_data.name}", "trainer.max_epochs=4"])
    assert _start_step(config, exp) == 3
    assert f"resuming with data.dir changed: '{prepared_data}' -> '{prepared_data.name}'" in capsys.readouterr().out
    other = tmp_path / "copy"
    shutil.copytree(prepared_data, other, ignore=shutil.ignore_patterns("fbank"))
    assert main(["train", "--config", str(trained[0]), "--exp", str(exp), "--set", f"data.dir={other}",
                 "--set", "trainer.max_epochs=5"]) == 2
    assert f"cannot resume with a changed config: data.dir '{prepared_data.name}' -> '/" in capsys.readouterr().err


def test_a_data_directory_moved_since_the_run_began_is_taken_with_a_note(trained: tuple[Path, Path], exp: Path,
                                                                         prepared_data: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture) -> None:
    """The run's data directory moved to another disk (its old place gone): "cannot resume with a changed config:
    data.dir ... (undo the change or train into a new --exp)", which nothing could undo (25th hostile pass). Its
    vocabularies and CMVN statistics are checked against the checkpoint as for any resume."""
    gone = str(tmp_path / "old-disk" / "data")
    for name in ("last.ckpt", "epoch002.ckpt"):
        ckpt = torch.load(exp / "checkpoints" / name, weights_only=True)
        ckpt["sate"]["train_config"]["data"]["dir"] = gone
        torch.save(ckpt, exp / "checkpoints" / name)
    config = load_training_config(trained[0], ["trainer.max_epochs=4"])
    assert _start_step(config, exp) == 3
    out = capsys.readouterr().out  # the old place shortened in the middle, as long paths are
    assert "resuming with data.dir changed: '/" in out and f"-> '{prepared_data}'" in out, out


def test_a_changed_config_names_the_checkpoint_resumed_from_when_not_last(trained: tuple[Path, Path], exp: Path,
                                                                          capsys: pytest.CaptureFixture) -> None:
    """A checkpoint copied in from another run is the newest: the refusal named only EXP, and the user, who had
    changed nothing, read "cannot resume with a changed config" (tenth hostile pass)."""
    ckpt = torch.load(exp / "checkpoints" / "epoch002.ckpt", weights_only=True)
    ckpt["sate"]["train_config"]["optim"]["lr"] = 0.5
    ckpt["global_step"], ckpt["epoch"] = 9, 9  # further than last.ckpt
    torch.save(ckpt, exp / "checkpoints" / "epoch009.ckpt")
    assert main(["train", "--config", str(trained[0]), "--exp", str(exp), "--set", "trainer.max_epochs=12"]) == 2
    assert capsys.readouterr().err.startswith(f"sate train: error: {exp}/checkpoints/epoch009.ckpt: cannot resume "
                                              "with a changed config: optim.lr 0.5 -> 0.01")


def test_config_changes_compare_resolved_models() -> None:
    base = {"task": "asr", "model": {}, "optim": {"lr": 1.0}, "init": {}}
    written_out = {**base, "model": yaml.safe_load(yaml.safe_dump({"d_model": 256}))}
    assert config_changes(base, written_out) == {}  # the default written out is no change
    assert set(config_changes(base, {**base, "init": {"acoustic": {"path": "a.pt"}}})) == {"init"}
    with pytest.raises(SateError):
        read_checkpoint(Path("/nonexistent/last.ckpt"))


def test_teachers_spelled_another_way_are_no_change(tmp_path: Path, prepared_data: Path, make_config: MakeConfig,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture) -> None:
    """`--init-from asr=exp/asr/model.pt` on the first run and `/abs/exp/asr/model.pt` (or `./exp/...`) on the
    resume: "cannot resume with a changed config: model.loss.kd.asr_teacher" for the same files (twelfth hostile
    pass); their weights are checked against the checkpoint's record anyway. Another file is still a change."""
    from sate.train.average import average

    monkeypatch.chdir(tmp_path)
    for task in ("asr", "mt"):
        train(load_training_config(make_config(tmp_path, task, prepared_data), []), Path(task))
        average(Path(task) / "checkpoints", Path(task) / "model.pt", last=1)
    config = make_config(tmp_path, "st", prepared_data, model={"loss": {"kd": {"asr_weight": 0.5, "mt_weight": 0.5}}})
    argv = ["train", "--config", str(config), "--exp", "st"]
    assert main([*argv, "--init-from", "asr=asr/model.pt", "--init-from", "mt=mt/model.pt"]) == 0
    assert main([*argv, "--init-from", f"asr={tmp_path}/asr/model.pt", "--init-from", "mt=./mt/model.pt",
                 "--set", "trainer.max_epochs=2"]) == 0
    out = capsys.readouterr().out
    assert "resuming with model.loss.kd.asr_teacher changed: 'asr/model.pt' -> '/" in out
    assert "resuming with model.loss.kd.mt_teacher changed: 'mt/model.pt' -> './mt/model.pt'" in out
    shutil.copy(Path("mt") / "model.pt", tmp_path / "mt_copy.pt")
    assert main([*argv, "--init-from", "asr=asr/model.pt", "--init-from", "mt=mt_copy.pt",
                 "--set", "trainer.max_epochs=3"]) == 2
    assert "cannot resume with a changed config: model.loss.kd.mt_teacher './mt/model.pt' -> 'mt_copy.pt'" in \
        capsys.readouterr().err


@pytest.mark.slow  # trains a tiny model
def test_a_resume_without_a_time_budget_is_not_told_to_add_a_timer(trained: tuple[Path, Path], exp: Path) -> None:
    """trainer.max_minutes may change on a resume, to null too: Lightning then warned "Please add the following
    callbacks: [\"Timer\"]" (the checkpoint's), advice sate has no key for (thirty-third hostile pass)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(load_training_config(trained[0], ["trainer.max_minutes=null", "trainer.max_epochs=4"]), exp)
    assert (exp / "checkpoints" / "epoch003.ckpt").is_file()
    assert [str(w.message) for w in caught if "Please add the following callbacks" in str(w.message)] == []


def test_a_budget_below_the_epochs_done_is_one_line(trained: tuple[Path, Path], exp: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    """`trainer.max_epochs` may change on a resume, but one below the epoch the run is at was Lightning's
    MisconfigurationException traceback once the model and data were set up (twelfth hostile pass)."""
    before = {p.name: p.read_bytes() for p in (exp / "checkpoints").iterdir()}
    assert main(["train", "--config", str(trained[0]), "--exp", str(exp), "--set", "trainer.max_epochs=1"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sate train: error: {exp / 'checkpoints' / 'last.ckpt'}: the run is at the end of epoch 2 (counted from 0: 3 "
        "epochs trained), beyond trainer.max_epochs 1: a resume trains on up to its budget; give trainer.max_epochs 3 "
        "or more, or train into a new --exp")
    assert {p.name: p.read_bytes() for p in (exp / "checkpoints").iterdir()} == before


def test_a_budget_lowered_to_the_epoch_the_run_is_at_is_refused(trained: tuple[Path, Path], exp: Path,
                                                               capsys: pytest.CaptureFixture) -> None:
    """A run of 3 epochs (last.ckpt at the end of epoch 2, counted from 0) resumed with max_epochs 2 was told it
    "has trained its trainer.max_epochs 2 epochs; raise it to train on", exit 0, and raised to 3 the same (review32y):
    its checkpoint's epoch alone cannot tell a run beyond its budget from one that finished it, Lightning's loop state
    can. The advice followed, it has finished its budget."""
    argv = ["train", "--config", str(trained[0]), "--exp", str(exp)]
    before = {p.name: p.read_bytes() for p in (exp / "checkpoints").iterdir()}
    logs = sorted(p.name for p in (exp / "logs").iterdir())
    assert main([*argv, "--set", "trainer.max_epochs=2"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sate train: error: {exp / 'checkpoints' / 'last.ckpt'}: the run is at the end of epoch 2 (counted from 0: 3 "
        "epochs trained), beyond trainer.max_epochs 2: a resume trains on up to its budget; give trainer.max_epochs 3 "
        "or more, or train into a new --exp")
    assert main([*argv, "--set", "trainer.max_epochs=3"]) == 0
    assert capsys.readouterr().out.strip() == (
        f"{exp / 'checkpoints' / 'last.ckpt'}: the run has trained its trainer.max_epochs 3 epochs; raise it to train "
        "on; nothing to train, nothing changed")
    assert {p.name: p.read_bytes() for p in (exp / "checkpoints").iterdir()} == before
    assert sorted(p.name for p in (exp / "logs").iterdir()) == logs


def test_a_budget_lowered_to_the_epoch_a_run_stopped_inside_is_refused(tmp_path: Path, prepared_data: Path,
                                                                      make_config: MakeConfig,
                                                                      capsys: pytest.CaptureFixture) -> None:
    """A run stopped inside its second epoch (epoch 1, counted from 0) and resumed with max_epochs 1 is beyond its
    budget: Lightning ended it at once ("max_epochs=1 reached"), exit 0, the rest of the epoch never trained and a log
    version made, where the same at the epoch's end is refused."""
    from tests.train.conftest import Stopped, stop_at

    settings = ["batch.per_device=800", "batch.global=800", "trainer.max_epochs=2",
                "trainer.checkpoint_every_steps=1"]  # five updates an epoch
    path, exp = make_config(tmp_path, "asr", prepared_data), tmp_path / "exp"
    with pytest.raises(Stopped):
        train(load_training_config(path, settings), exp, callbacks=[stop_at(7)])
    saved = torch.load(exp / "checkpoints" / "last.ckpt", weights_only=True)
    assert (saved["global_step"], saved["epoch"], saved["sate"]["mid_epoch"]) == (7, 1, True)
    logs = sorted(p.name for p in (exp / "logs").iterdir())
    capsys.readouterr()
    assert main(["train", "--config", str(path), "--exp", str(exp), "--set", settings[0], "--set", settings[1],
                 "--set", settings[3], "--set", "trainer.max_epochs=1"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sate train: error: {exp / 'checkpoints' / 'last.ckpt'}: the run is inside epoch 1 (counted from 0), beyond "
        "trainer.max_epochs 1: a resume trains on up to its budget; give trainer.max_epochs 2 or more, or train into "
        "a new --exp")
    assert sorted(p.name for p in (exp / "logs").iterdir()) == logs



def test_a_budget_below_the_updates_done_is_one_line(trained: tuple[Path, Path], exp: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    """`trainer.max_steps` below the update the run is at ended 0 on Lightning's "`max_steps` reached", nothing
    trained, where the same of max_epochs is refused (twenty-ninth pass, hand29c's leftover)."""
    step = torch.load(exp / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)["global_step"]
    before = {p.name: p.read_bytes() for p in (exp / "checkpoints").iterdir()}
    assert main(["train", "--config", str(trained[0]), "--exp", str(exp), "--set",
                 f"trainer.max_steps={step - 1}"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sate train: error: {exp / 'checkpoints' / 'last.ckpt'}: the run is at update {step:,}, beyond "
        f"trainer.max_steps {step - 1:,}: a resume trains on up to its budget; raise trainer.max_steps to train more "
        "(-1: no limit), or train into a new --exp")
    assert {p.name: p.read_bytes() for p in (exp / "checkpoints").iterdir()} == before

def _checkpoints(exp: Path) -> tuple[list[str], list[str]]:
    names = sorted(p.name for p in (exp / "checkpoints").glob("*.ckpt"))
    return [n for n in names if n.startswith("best-")], [n for n in names if n.startswith("epoch")]


def _resumed(config: Path, exp: Path, max_epochs: int) -> tuple[list[str], list[str]]:
    """`exp` trained on up to `max_epochs`, without Lightning's "dirpath has changed" warning (its record of the
    checkpoints to keep was taken over); the best and epoch checkpoints after."""
    import warnings  # only here: the tests of a moved experiment's checkpoint budget

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        train(load_training_config(config, [f"trainer.max_epochs={max_epochs}"]), exp)
    assert not [w for w in seen if "dirpath has changed" in str(w.message)]
    return _checkpoints(exp)


def test_a_moved_experiment_keeps_its_checkpoint_budget(trained: tuple[Path, Path], exp: Path) -> None:
    """An experiment moved or copied elsewhere (here: a copy) lost Lightning's record of its best and latest
    checkpoints, which it keeps by folder path: the resumed run kept every checkpoint it found beside the ones it
    wrote, past trainer.keep_best and keep_last, and said so in a warning only (fourteenth hostile pass)."""
    assert len(_checkpoints(exp)[0]) == 1
    best, epochs = _resumed(trained[0], exp, 5)
    assert len(best) == 1 and epochs == ["epoch002.ckpt", "epoch003.ckpt", "epoch004.ckpt"], (best, epochs)


def test_a_resume_refused_in_the_data_setup_leaves_the_experiment_as_it_was(tmp_path: Path, prepared_data: Path,
                                                                            make_config: MakeConfig) -> None:
    """A resume whose data directory lost a feature index (or may not read it) was refused inside Lightning's setup,
    after its loggers had made tensorboard/version_1 and logs/version_1, the config snapshot was rewritten, and
    train_time.json counted a second run (twentieth hostile pass, tests/hostile/test_folders.py). Refused before."""
    data = shutil.copytree(prepared_data, tmp_path / "data")
    path = make_config(tmp_path, "asr", data, trainer={"max_epochs": 1})
    exp = tmp_path / "exp"
    train(load_training_config(path, []), exp)
    before = {p: p.read_bytes() for p in exp.rglob("*") if p.is_file() and p.suffix != ".ckpt"}
    (data / "fbank" / "dev.scp").unlink()
    with pytest.raises(SateError, match=f"^{data / 'fbank' / 'dev.scp'}: feature index is missing"):
        train(load_training_config(path, ["trainer.max_epochs=2"]), exp)
    assert {p: p.read_bytes() for p in exp.rglob("*") if p.is_file() and p.suffix != ".ckpt"} == before
    assert sorted(p.name for p in (exp / "tensorboard").iterdir()) == ["version_0"]


def test_a_resume_refused_in_the_data_setup_with_a_store_leaves_the_experiment_as_it_was(
        tmp_path: Path, prepared_data: Path, make_config: MakeConfig) -> None:
    """The same with data.mt_text, whose store Lightning's prepare_data builds: its datasets were still set up
    only inside fit, after the loggers' version_1 folders, the snapshot and the run count (left by the twentieth
    hostile pass). What comes from the data directory is now read before; the store is opened inside fit."""
    data = shutil.copytree(prepared_data, tmp_path / "data")
    rows = [line.split('"src": "')[1].split('"')[0] for line in (data / "train.jsonl").read_text().splitlines()]
    (tmp_path / "a.en").write_text("".join(f"{row}\n" for row in rows), encoding="utf-8")
    (tmp_path / "a.de").write_text("".join(f"{row} de\n" for row in rows), encoding="utf-8")
    path = make_config(tmp_path, "mt", data, trainer={"max_epochs": 1},
                       data={"mt_text": [[str(tmp_path / "a.en"), str(tmp_path / "a.de")]]})
    exp = tmp_path / "exp"
    train(load_training_config(path, []), exp)
    before = {p: p.read_bytes() for p in exp.rglob("*") if p.is_file() and p.suffix != ".ckpt"}
    (data / "dev.jsonl").unlink()
    with pytest.raises(SateError, match=f"^{data / 'dev.jsonl'} is missing"):
        train(load_training_config(path, ["trainer.max_epochs=2"]), exp)
    assert {p: p.read_bytes() for p in exp.rglob("*") if p.is_file() and p.suffix != ".ckpt"} == before
    assert sorted(p.name for p in (exp / "tensorboard").iterdir()) == ["version_0"]


def test_a_monitor_mode_set_right_is_a_change_a_resume_takes(tmp_path: Path) -> None:
    """A run of an older sate that monitored valid/bleu with monitor_mode min (refused by `sate train` since the
    twenty-third hostile pass) could not be resumed at all: its config refused as it was, "cannot resume with a
    changed config: trainer.monitor_mode 'min' -> 'max'" with the mode set right. The mode is a safe key, as
    keep_best is (the review of that pass)."""
    old = {"task": "asr", "data": {"dir": str(tmp_path)}, "trainer": {"monitor": "valid/wer", "monitor_mode": "max"}}
    point = ResumePoint(path=tmp_path / "last.ckpt", checkpoint={"sate": {"train_config": old}})
    config = build(TrainingConfig, merge(TrainingConfig, {**old, "trainer": {"monitor": "valid/wer",
                                                                          "monitor_mode": "min"}}))
    check_config_change(point, config, tmp_path)
    assert point.changed == {"trainer.monitor_mode": ("max", "min")}
    with pytest.raises(SateError, match=r"cannot resume with a changed config: trainer.monitor 'valid/wer' -> "):
        check_config_change(point, build(TrainingConfig, merge(TrainingConfig, {**old, "trainer": {
            "monitor": "valid/loss"}})), tmp_path)


@pytest.mark.slow  # trains a tiny model
def test_a_resume_with_another_monitor_mode_takes_the_runs_record(tmp_path: Path, prepared_data: Path,
                                                                   make_config: MakeConfig) -> None:
    """Lightning files the best-N record under a key that holds the mode: with trainer.monitor_mode changed at a
    resume it restored none, warned "Please add the following callbacks: [\"ModelCheckpoint{...}\"]", and kept the
    new epoch as best beside the old record's file, two best checkpoints of keep_best 1 (thirty-third hostile pass).
    `step` is better high or low as the config says: max keeps the latest update, min the earliest."""
    import warnings

    path = make_config(tmp_path, "asr", prepared_data, trainer={"max_epochs": 2, "monitor": "step",
                                                                "monitor_mode": "max", "keep_best": 1})
    train(load_training_config(path, []), tmp_path / "exp")
    assert sorted(p.name for p in (tmp_path / "exp" / "checkpoints").glob("best-*")) == ["best-step-epoch001.ckpt"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(load_training_config(path, ["trainer.monitor_mode=min", "trainer.max_epochs=3"]), tmp_path / "exp")
    # ranked by min, the record's step 2 beats the new epoch's step 3
    assert sorted(p.name for p in (tmp_path / "exp" / "checkpoints").glob("best-*")) == ["best-step-epoch001.ckpt"]
    assert [str(w.message) for w in caught if "ModelCheckpoint{" in str(w.message)] == []


def test_a_restored_record_is_ranked_by_the_resumed_runs_mode(tmp_path: Path) -> None:
    """With monitor_mode changed at a resume, the best and k-th checkpoints the record names are those of the new
    mode: Lightning compares each new checkpoint with the restored k-th, which was the old mode's (the best BLEU of a
    run ranked by min was its k-th, so no better checkpoint was ever kept)."""
    from sate.train.checkpoint_io import MovableCheckpoint

    record = {str(tmp_path / f"best-{n}.ckpt"): torch.tensor(score) for n, score in enumerate([10.0, 30.0, 20.0])}
    for path in record:
        Path(path).touch()
    kept = MovableCheckpoint(dirpath=tmp_path, monitor="valid/bleu", mode="max", save_top_k=2)
    kept.load_state_dict({"dirpath": str(tmp_path), "best_k_models": record, "monitor": "valid/bleu",
                          "best_model_path": str(tmp_path / "best-0.ckpt"), "best_model_score": torch.tensor(10.0),
                          "kth_best_model_path": str(tmp_path / "best-1.ckpt"), "kth_value": torch.tensor(30.0),
                          "last_model_path": ""})
    assert (Path(kept.best_model_path).name, float(kept.best_model_score)) == ("best-1.ckpt", 30.0)
    assert (Path(kept.kth_best_model_path).name, float(kept.kth_value)) == ("best-2.ckpt", 20.0)
    assert sorted(Path(p).name for p in kept.best_k_models) == ["best-1.ckpt", "best-2.ckpt"]


def test_a_relative_place_gone_from_here_is_no_sign_it_moved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's relative `data.dir` is relative to where it was started: resumed from another directory, it is gone
    from here while the run's own still exists there, and another directory was taken as its move (review of the
    25th hostile pass). An absolute place gone is a move; a relative one stays a change."""
    from sate.train.resume import _moved

    monkeypatch.chdir(tmp_path)
    (tmp_path / "new").mkdir()
    assert _moved(str(tmp_path / "gone"), str(tmp_path / "new"))
    assert not _moved("data", str(tmp_path / "new"))
    assert not _moved(str(tmp_path / "new"), str(tmp_path / "new" / "x"))  # the run's own is still there


def test_a_resume_after_the_whisper_directory_moved_trains_on_and_another_size_there_is_refused(
        tmp_path: Path, prepared_data: Path, whisper_hub_dir: Path, make_config: MakeConfig,
        capsys: pytest.CaptureFixture) -> None:
    """The run's Whisper directory moved (another venv's site-packages) and the config's new path a Whisper of the
    same size: the resume goes on with a note, as for a moved data directory; the weights come from the checkpoint
    (29th hostile pass: the run's model section no longer resolved, and every default showed as a change). A Whisper
    of another size at the new place is still refused, by the checkpoint's weights."""
    transformers = pytest.importorskip("transformers")
    whisper, moved, other = tmp_path / "whisper", tmp_path / "moved", tmp_path / "other"
    shutil.copytree(whisper_hub_dir, whisper)
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)  # the frozen cache is written into it
    config = make_config(tmp_path, "asr", data,
                         model={"acoustic": {"type": "whisper", "path": str(whisper), "freeze": "all"}},
                         data={"features": "waveform", "cmvn": "none", "frozen_cache": True},
                         batch={"per_device": 2_000_000, "global": 2_000_000}, trainer={"max_epochs": 1})
    exp = tmp_path / "exp"
    assert main(["train", "--config", str(config), "--exp", str(exp)]) == 0
    whisper.rename(moved)
    capsys.readouterr()
    assert main(["train", "--config", str(config), "--exp", str(exp), "--set", f"model.acoustic.path={moved}",
                 "--set", "trainer.max_epochs=2"]) == 0
    assert "resuming with model.acoustic.path changed: '/" in capsys.readouterr().out
    assert torch.load(exp / "checkpoints" / "last.ckpt", weights_only=True)["epoch"] == 1

    smaller = transformers.WhisperConfig(vocab_size=60, max_target_positions=32, d_model=16, encoder_layers=2,
                                         decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                                         encoder_ffn_dim=32, decoder_ffn_dim=32, num_mel_bins=80, pad_token_id=0,
                                         bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    transformers.WhisperForConditionalGeneration(smaller).save_pretrained(other)
    shutil.rmtree(moved)
    assert main(["train", "--config", str(config), "--exp", str(exp), "--set", f"model.acoustic.path={other}",
                 "--set", "trainer.max_epochs=3"]) == 2
    assert "its weights do not fit the model the config builds now" in capsys.readouterr().err


def test_a_moved_marian_folder_is_taken_as_a_moved_whisper_one_is(tmp_path: Path, marian_dir: Path) -> None:
    """`model.textual.path` is a hub folder as `model.acoustic.path` is: the run's own gone (absolute) and the new
    place there, the resume takes it with a note (review of the 29th hostile pass); the run's own still there, it
    stays a change."""
    moved = tmp_path / "moved"
    shutil.copytree(marian_dir, moved)

    def config(path: Path) -> dict:
        return {"task": "mt", "data": {"dir": str(tmp_path)}, "model": {
            "textual": {"type": "hf_marian", "path": str(path)}, "decoder": {"type": "hf_marian"}}}

    point = ResumePoint(path=tmp_path / "last.ckpt", checkpoint={"sate": {"train_config": config(tmp_path / "gone")}})
    check_config_change(point, build(TrainingConfig, merge(TrainingConfig, config(moved))), tmp_path)
    assert point.changed == {"model.textual.path": (str(tmp_path / "gone"), str(moved))}
    point = ResumePoint(path=tmp_path / "last.ckpt", checkpoint={"sate": {"train_config": config(marian_dir)}})
    with pytest.raises(SateError, match=r"cannot resume with a changed config: model.textual.path '/"):
        check_config_change(point, build(TrainingConfig, merge(TrainingConfig, config(moved))), tmp_path)


def test_a_moved_experiment_without_its_last_checkpoint_keeps_its_checkpoint_budget(trained: tuple[Path, Path],
                                                                                   exp: Path) -> None:
    """The same with last.ckpt deleted by hand: the run resumes from its newest epoch checkpoint, whose record names
    last.ckpt; that file gone, the whole record was dropped and the resumed run kept epoch000 past keep_last 3, with
    Lightning's "dirpath has changed" warning (29th hostile pass)."""
    (exp / "checkpoints" / "last.ckpt").unlink()
    best, epochs = _resumed(trained[0], exp, 4)
    assert len(best) == 1 and epochs == ["epoch001.ckpt", "epoch002.ckpt", "epoch003.ckpt"], (best, epochs)


def test_a_run_stopped_before_its_first_checkpoint_logs_each_step_once_when_started_again(
        tmp_path: Path, make_config: MakeConfig, prepared_data: Path) -> None:
    """A run killed (preempted) inside its first epoch, with no checkpoint written, starts afresh: its rows stayed in
    logs/version_0 beside the new run's of the same steps, and `sate report --curves` drew both as one line going
    back (29th hostile pass). A fresh start drops them, as a resume drops those logged after its checkpoint."""
    from sate.scoring.report import read_curves
    from tests.train.conftest import Stopped, stop_at

    settings = ["batch.per_device=800", "batch.global=800", "trainer.max_epochs=1"]  # five updates an epoch
    config = load_training_config(make_config(tmp_path, "asr", prepared_data), settings)
    exp = tmp_path / "exp"
    with pytest.raises(Stopped):
        train(config, exp, callbacks=[stop_at(3)])
    assert not list((exp / "checkpoints").glob("*.ckpt")) and read_curves(exp)["train/loss"]
    train(config, exp)
    steps = [step for step, _ in read_curves(exp)["train/loss"]]
    assert steps == sorted(set(steps)) == [0, 1, 2, 3, 4], steps


def test_a_one_split_list_is_no_change_of_the_training_split(tmp_path: Path) -> None:
    """`data.train: [train]` is read exactly as `data.train: train` (docs/training.md): a resume written either way
    was refused as "data.train 'train' -> ['train']" (29th hostile pass); another split, or two, still is a change."""
    old = {"task": "asr", "data": {"dir": str(tmp_path), "train": "train"}}
    point = ResumePoint(path=tmp_path / "last.ckpt", checkpoint={"sate": {"train_config": old}})

    def config(train: object) -> TrainingConfig:
        return build(TrainingConfig, merge(TrainingConfig, {**old, "data": {"dir": str(tmp_path), "train": train}}))

    check_config_change(point, config(["train"]), tmp_path)
    assert point.changed == {}
    for other in (["train", "train_sp"], ["train_sp"]):
        with pytest.raises(SateError, match=r"cannot resume with a changed config: data.train 'train' -> "):
            check_config_change(point, config(other), tmp_path)


def test_a_copy_whose_best_checkpoint_is_its_newest_file_resumes_from_the_epoch_checkpoint(
        trained: tuple[Path, Path], exp: Path, capsys: pytest.CaptureFixture) -> None:
    """`cp -r` gives each file the time of its copy: best-*-epoch002.ckpt, of the same step as epoch002.ckpt, could
    be the newest, and the resume took it; its record of the epoch checkpoints was written before epoch002.ckpt, and
    the run kept 2 best and 4 epoch checkpoints past keep_best 1 and keep_last 3 (29th hostile pass, review29c)."""
    (exp / "checkpoints" / "last.ckpt").unlink()
    files = sorted((exp / "checkpoints").glob("*.ckpt"), key=lambda p: p.name.startswith("best-"))
    for n, path in enumerate(files):  # the best checkpoint copied last
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))
    train(load_training_config(trained[0], ["trainer.max_epochs=5"]), exp)
    assert "resuming from epoch002.ckpt" in capsys.readouterr().out
    best, epochs = _checkpoints(exp)
    assert len(best) == 1 and epochs == ["epoch002.ckpt", "epoch003.ckpt", "epoch004.ckpt"], (best, epochs)


def test_a_moved_experiment_with_an_epoch_checkpoint_deleted_keeps_its_budget_as_in_place(
        trained: tuple[Path, Path], exp: Path) -> None:
    """An epoch checkpoint deleted by hand (disk) from a moved or copied experiment dropped the whole record of the
    epoch checkpoints ("dirpath has changed"), and the run kept every one past keep_last, where in place it kept
    keep_last (29th hostile pass, review29c): the missing file leaves the record, the rest is taken over."""
    (exp / "checkpoints" / "epoch000.ckpt").unlink()
    best, epochs = _resumed(trained[0], exp, 5)
    assert len(best) == 1 and epochs == ["epoch002.ckpt", "epoch003.ckpt", "epoch004.ckpt"], (best, epochs)


def test_a_fresh_start_keeps_the_rows_of_a_finished_run_whose_checkpoints_were_moved_away(
        trained: tuple[Path, Path], exp: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A fresh start emptied every earlier log, a finished run's whose checkpoints were moved away (the advice of
    older builds) or deleted to save disk (29th hostile pass, review29c): that run validated, its rows are kept."""
    snapshot = read_yaml(exp / "config.yaml")
    snapshot["trainer"]["max_minutes"] = None  # as most runs: the rule would keep its rows for that alone
    (exp / "config.yaml").write_text(yaml.safe_dump(snapshot))
    before = {p: p.read_text() for p in (exp / "logs").glob("version_*/metrics.csv")}
    assert sum(len(text.splitlines()) for text in before.values()) > len(before)  # rows, not headers alone
    shutil.move(exp / "checkpoints", tmp_path / "away")
    train(load_training_config(trained[0], ["trainer.max_epochs=1"]), exp)
    assert all(p.read_text() == text for p, text in before.items())
    assert "dropped its" not in capsys.readouterr().out


def test_a_fresh_start_over_a_killed_runs_log_that_is_not_utf8_starts_afresh(
        tmp_path: Path, make_config: MakeConfig, prepared_data: Path) -> None:
    """It was refused with no way on (29th hostile pass, review29c); the log is left as it is, as before."""
    from tests.train.conftest import Stopped, stop_at

    config = load_training_config(make_config(tmp_path, "asr", prepared_data),
                                  ["batch.per_device=800", "batch.global=800", "trainer.max_epochs=1"])
    exp = tmp_path / "exp"
    with pytest.raises(Stopped):
        train(config, exp, callbacks=[stop_at(2)])
    log = exp / "logs" / "version_0" / "metrics.csv"
    with log.open("ab") as f:
        f.write(b"0,0.1,3,caf\xe9\n")
    kept = log.read_bytes()
    train(config, exp)
    assert log.read_bytes() == kept and (exp / "checkpoints" / "epoch000.ckpt").is_file()


def test_specaug_settings_that_never_apply_are_no_change(tmp_path: Path) -> None:
    """conf/synth_ding/asr.yaml said specaug.start_step 1000 over its 460 updates (SpecAugment never applied) and now
    says specaug.enabled false: its runs' resume (the recipe re-run over an existing exp) was refused as
    "specaug.enabled True -> False" (review30c). Settings neither of which applies SpecAugment within its run's
    max_steps are one training; a SpecAugment that applies on either side, or starts within a longer budget, is still
    a change."""
    old = {"task": "asr", "data": {"dir": str(tmp_path)}, "specaug": {"start_step": 1000},
           "trainer": {"max_steps": 460}}
    point = ResumePoint(path=tmp_path / "last.ckpt", checkpoint={"sate": {"train_config": old}})

    def config(specaug: dict, max_steps: int = 460) -> TrainingConfig:
        return build(TrainingConfig, merge(TrainingConfig, {**old, "specaug": specaug,
                                                             "trainer": {"max_steps": max_steps}}))

    check_config_change(point, config({"enabled": False}), tmp_path)
    check_config_change(point, config({"start_step": 2000, "num_time_masks": 2}), tmp_path)
    for changed, steps in (({"start_step": 100}, 460), ({"start_step": 1000, "num_time_masks": 2}, -1),
                           ({"start_step": 999, "enabled": True}, 3000)):
        with pytest.raises(SateError, match=r"cannot resume with a changed config: specaug\."):
            check_config_change(point, config(changed, steps), tmp_path)
    point = ResumePoint(path=tmp_path / "last.ckpt", checkpoint={"sate": {"train_config": {**old, "specaug": {}}}})
    with pytest.raises(SateError, match=r"cannot resume with a changed config: specaug\.enabled True -> False"):
        check_config_change(point, config({"enabled": False}), tmp_path)


def test_a_run_a_budget_ended_inside_an_epoch_goes_on_there_when_the_budget_is_raised(
        tmp_path: Path, make_config: MakeConfig, prepared_data: Path) -> None:
    """trainer.max_steps (or max_minutes) ending a run inside an epoch left last.ckpt as Lightning rewrote it at the
    epoch's early end, recording the epoch as trained: a resume with the budget raised began the next epoch, the rest
    of that one never trained, exit 0 (31st hostile pass). last.ckpt keeps the place in the epoch now: the resumed
    run's weights are those of one run whole."""
    settings = ["batch.per_device=800", "batch.global=800", "trainer.max_epochs=2"]  # five updates an epoch
    path = make_config(tmp_path, "asr", prepared_data)
    train(load_training_config(path, settings), tmp_path / "whole")
    exp = tmp_path / "ended"
    train(load_training_config(path, [*settings, "trainer.max_steps=7"]), exp)
    ended = torch.load(exp / "checkpoints" / "last.ckpt", weights_only=True)
    assert ended["global_step"] == 7 and ended["sate"]["mid_epoch"]
    train(load_training_config(path, [*settings, "trainer.max_steps=-1"]), exp)
    whole = torch.load(tmp_path / "whole" / "checkpoints" / "last.ckpt", weights_only=True)
    resumed = torch.load(exp / "checkpoints" / "last.ckpt", weights_only=True)
    assert resumed["global_step"] == whole["global_step"] == 10
    for key, value in whole["state_dict"].items():
        assert torch.allclose(value.float(), resumed["state_dict"][key].float(), atol=1e-6), key


@pytest.mark.slow  # trains a tiny model
@pytest.mark.parametrize("counted", [False, True])
def test_a_run_max_steps_ended_at_an_epoch_end_trains_on_when_the_budget_is_raised(
        tmp_path: Path, make_config: MakeConfig, prepared_data: Path, counted: bool) -> None:
    """trainer.max_steps ending a run at an epoch's end, resumed as told ("raise it to train on"): Lightning took any
    run of max_steps as restarting inside an epoch, ran an empty one, counted it as trained, ended on "`max_epochs=3`
    reached" having trained nothing, exit 0, and wrote that count into last.ckpt, so that every later resume trained
    nothing too (review33c). It trains on now, as the same resume of a run max_epochs ended does; so does a
    checkpoint holding the count of that empty epoch (`counted`), as an earlier sate wrote it."""
    settings = ["batch.per_device=800", "batch.global=800"]  # five updates an epoch
    path = make_config(tmp_path, "asr", prepared_data)
    train(load_training_config(path, [*settings, "trainer.max_epochs=2"]), tmp_path / "epochs")
    train(load_training_config(path, [*settings, "trainer.max_epochs=3"]), tmp_path / "epochs")
    exp = tmp_path / "steps"
    train(load_training_config(path, [*settings, "trainer.max_epochs=3", "trainer.max_steps=10"]), exp)
    ended = torch.load(exp / "checkpoints" / "last.ckpt", weights_only=True)
    assert (ended["global_step"], ended["sate"]["epoch"], ended["sate"]["mid_epoch"]) == (10, 1, False)
    if counted:
        for count in ended["loops"]["fit_loop"]["epoch_progress"].values():
            count["processed"] += 1  # the empty epoch, counted
        torch.save(ended, exp / "checkpoints" / "last.ckpt")
    train(load_training_config(path, [*settings, "trainer.max_epochs=3", "trainer.max_steps=15"]), exp)
    epochs = torch.load(tmp_path / "epochs" / "checkpoints" / "last.ckpt", weights_only=True)
    steps = torch.load(exp / "checkpoints" / "last.ckpt", weights_only=True)
    assert (steps["global_step"], steps["sate"]["epoch"]) == (epochs["global_step"], epochs["sate"]["epoch"]) == (15, 2)
    assert steps["loops"]["fit_loop"]["epoch_progress"] == epochs["loops"]["fit_loop"]["epoch_progress"]
    for key, value in epochs["state_dict"].items():
        assert torch.allclose(value.float(), steps["state_dict"][key].float(), atol=1e-6), key


class _StopAfterBatch(Callback):
    """What Lightning's Timer of `max_minutes` does: `trainer.should_stop` at a batch's end, which with gradient
    accumulation may fall inside an update. Passed to `train`, it runs before the checkpoint callbacks, as the Timer."""

    def __init__(self, batches: int) -> None:
        self.batches, self.seen = batches, 0

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        self.seen += 1
        if self.seen == self.batches:
            trainer.should_stop = True


def test_a_time_limit_inside_an_update_stops_at_its_end_and_the_resume_goes_on_there(
        tmp_path: Path, make_config: MakeConfig, prepared_data: Path) -> None:
    """max_minutes with gradient accumulation: the Timer stopped the run inside an update, where no checkpoint can
    be, and Lightning rewrote last.ckpt at the epoch's early end with the epoch counted as trained: the resume ended
    at step 4 where one whole run ends at 6, the rest of the epoch never trained, exit 0 (review of the 31st hostile
    pass). The stop waits for the update's end now, is saved there, and the resumed weights are one whole run's."""
    settings = ["batch.per_device=800", "batch.global=1600", "trainer.max_epochs=2"]  # five batches, three updates
    path = make_config(tmp_path, "asr", prepared_data)
    train(load_training_config(path, settings), tmp_path / "whole")
    exp = tmp_path / "ended"
    train(load_training_config(path, settings), exp, callbacks=[_StopAfterBatch(3)])  # inside update 2
    ended = torch.load(exp / "checkpoints" / "last.ckpt", weights_only=True)
    assert ended["global_step"] == 2 and ended["sate"]["mid_epoch"]  # batch 4 ended update 2: stopped there
    train(load_training_config(path, settings), exp)
    whole = torch.load(tmp_path / "whole" / "checkpoints" / "last.ckpt", weights_only=True)
    resumed = torch.load(exp / "checkpoints" / "last.ckpt", weights_only=True)
    assert resumed["global_step"] == whole["global_step"] == 6
    for key, value in whole["state_dict"].items():
        assert torch.allclose(value.float(), resumed["state_dict"][key].float(), atol=1e-6), key
