"""Resuming a run that early stopping (trainer.patience) ended: it ends at once, unless the resume asks for more."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from lightning.pytorch.callbacks import Callback

from sate.cli import main
from sate.settings import build, merge
from sate.train.resume import ResumePoint, early_stop_note, finished
from sate.train.schema import TrainingConfig
from sate.train.trainer import load_training_config, train

MakeConfig = Callable[..., Path]


class FlatLoss(Callback):
    """Every validation's valid/loss made 1.0: the first improves on none, the next on nothing, so that trainer.patience
    1 stops the run after its second epoch, whatever the tiny model learns on this machine."""

    def on_validation_end(self, trainer, pl_module) -> None:  # noqa: ANN001
        trainer.callback_metrics["valid/loss"] = torch.tensor(1.0)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory, prepared_data: Path, make_config: MakeConfig
            ) -> tuple[Path, Path]:
    """(config file, exp) of a tiny ASR run that early stopping ended after epoch 1, of a budget of 4."""
    root = tmp_path_factory.mktemp("early_stop")
    path = make_config(root, "asr", prepared_data, trainer={"max_epochs": 4, "patience": 1})
    train(load_training_config(path, []), root / "exp", callbacks=[FlatLoss()])
    return path, root / "exp"


@pytest.fixture
def exp(stopped: tuple[Path, Path], tmp_path: Path) -> Path:
    shutil.copytree(stopped[1], tmp_path / "exp")
    return tmp_path / "exp"


def _files(exp: Path) -> dict[str, bytes]:
    return {str(p.relative_to(exp)): p.read_bytes() for p in sorted(exp.rglob("*")) if p.is_file()}


def _epoch(exp: Path) -> int:
    return torch.load(exp / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)["epoch"]


@pytest.mark.slow  # trains a tiny model
def test_the_stopped_run_is_what_the_tests_take(exp: Path) -> None:
    assert sorted(p.name for p in (exp / "checkpoints").glob("epoch*.ckpt")) == ["epoch000.ckpt", "epoch001.ckpt"]


@pytest.mark.slow  # trains a tiny model
def test_a_resume_of_a_run_early_stopping_ended_ends_at_once(stopped: tuple[Path, Path], exp: Path,
                                                            capsys: pytest.CaptureFixture) -> None:
    """It trained one more epoch, wrote epoch002.ckpt and stopped again: Lightning restores EarlyStopping's count
    but stops only at a check (32nd hostile pass, hand32r's leftover); `--stage 3` of a recipe after a hand-run
    training so changed the average."""
    before = _files(exp)
    assert main(["train", "--config", str(stopped[0]), "--exp", str(exp)]) == 0
    assert capsys.readouterr().out == (
        f"{exp / 'checkpoints' / 'last.ckpt'}: early stopping ended this run at epoch 1 (counted from 0): valid/loss "
        "has not improved for 1 validation(s), trainer.patience 1; raise trainer.patience (0: off) to train on; "
        "nothing to train, nothing changed\n")
    assert _files(exp) == before
    # a larger budget is no call for more: the patience is what ended it
    assert main(["train", "--config", str(stopped[0]), "--exp", str(exp), "--set", "trainer.max_epochs=9"]) == 0
    assert _files(exp) == before


class NaNLoss(Callback):
    """The second validation's valid/loss made NaN (a validation loss NaN on some of its batches): Lightning's early
    stopping ends the run there, whatever its patience."""

    def on_validation_end(self, trainer, pl_module) -> None:  # noqa: ANN001
        if trainer.current_epoch == 1:
            trainer.callback_metrics["valid/loss"] = torch.tensor(float("nan"))


@pytest.mark.slow  # trains a tiny model
def test_a_resume_of_a_run_a_nan_monitor_ended_ends_at_once(prepared_data: Path, make_config: MakeConfig,
                                                            tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """It trained one more epoch (epoch002.ckpt) and stopped again on the next NaN, or trained on where the next was
    finite, its patience raised or not (33rd hostile pass); patience 0 (off) trains on, said."""
    path = make_config(tmp_path, "asr", prepared_data, trainer={"max_epochs": 4, "patience": 3})
    exp = tmp_path / "exp"
    train(load_training_config(path, []), exp, callbacks=[NaNLoss()])
    assert sorted(p.name for p in (exp / "checkpoints").glob("epoch*.ckpt")) == ["epoch000.ckpt", "epoch001.ckpt"]
    capsys.readouterr()
    before = _files(exp)
    for more in ([], ["--set", "trainer.patience=5"]):
        assert main(["train", "--config", str(path), "--exp", str(exp), *more]) == 0
        assert capsys.readouterr().out == (
            f"{exp / 'checkpoints' / 'last.ckpt'}: early stopping ended this run at epoch 1 (counted from 0): "
            "valid/loss was NaN or infinite at its validation, which ends a run whatever its patience; "
            "trainer.patience 0 (off) trains on; nothing to train, nothing changed\n")
        assert _files(exp) == before
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        train(load_training_config(path, ["trainer.patience=0"]), exp)
    assert "note: early stopping ended this run at epoch 1 (counted from 0); trainer.patience is now 0 (off): it " \
        "trains on up to its budget\n" in capsys.readouterr().out
    assert _epoch(exp) == 3
    # Lightning's "Checkpoint directory EXP/checkpoints exists and is not empty" of the run's own checkpoints: unsaid
    assert not [w for w in seen if "exists and is not empty" in str(w.message)]


@pytest.mark.slow  # trains a tiny model
def test_a_resume_with_a_larger_patience_trains_on(stopped: tuple[Path, Path], exp: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    """trainer.patience may change on a resume ("resuming with trainer.patience changed: 1 -> 3"), yet Lightning
    put back the checkpoint's patience: the run trained one epoch and stopped again at the old patience."""
    train(load_training_config(stopped[0], ["trainer.patience=3"]), exp, callbacks=[FlatLoss()])
    out = capsys.readouterr().out
    assert "resuming with trainer.patience changed: 1 -> 3\nnote: early stopping ended this run at epoch 1 (counted " \
        "from 0) after 1 validation(s) without a gain; trainer.patience is now 3: it trains on\n" in out
    assert _epoch(exp) == 3  # wait 1 -> 2 -> 3: stopped at its third validation without a gain, epoch 3
    assert (exp / "checkpoints" / "epoch003.ckpt").is_file()


@pytest.mark.slow  # trains a tiny model
def test_a_resume_with_patience_off_is_not_told_to_add_early_stopping(stopped: tuple[Path, Path], exp: Path,
                                                                    capsys: pytest.CaptureFixture) -> None:
    """The note said early stopping is off and the run trains on, and Lightning's warning after it asked for the
    checkpoint's EarlyStopping callback ("Please add the following callbacks: ..."), which sate has no key for (the
    thirty-second pass's leftover)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(load_training_config(stopped[0], ["trainer.patience=0", "trainer.max_epochs=3"]), exp)
    assert "trainer.patience is now 0 (off): it trains on up to its budget" in capsys.readouterr().out
    assert _epoch(exp) == 2
    told = [str(w.message) for w in caught if "EarlyStopping" in str(w.message)]
    assert told == []


@pytest.mark.slow  # trains a tiny model
def test_a_finished_run_started_again_changes_nothing(prepared_data: Path, make_config: MakeConfig, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    """A run at its trainer.max_epochs started again trained nothing (Lightning's "`max_epochs=1` reached"), but made
    log and TensorBoard version folders, noted its warm-up again and counted a run in train_time.json."""
    path = make_config(tmp_path, "asr", prepared_data, trainer={"max_epochs": 1})
    train(load_training_config(path, []), tmp_path / "exp")
    capsys.readouterr()
    before = _files(tmp_path / "exp")
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "exp")]) == 0
    assert capsys.readouterr().out == (
        f"{tmp_path / 'exp' / 'checkpoints' / 'last.ckpt'}: the run has trained its trainer.max_epochs 1 epoch; "
        "raise it to train on; nothing to train, nothing changed\n")
    assert _files(tmp_path / "exp") == before


def _point(stop: dict | None = None, mode: str = "min", **checkpoint: object) -> ResumePoint:
    callbacks = {} if stop is None else {"EarlyStopping" + repr({"monitor": "valid/loss", "mode": mode}): stop}
    return ResumePoint(path=Path("last.ckpt"), checkpoint={"epoch": 1, "global_step": 2, "callbacks": callbacks,
                                                           "sate": {"mid_epoch": False}, **checkpoint})


def _trainer(**values: object) -> object:
    config = {"task": "asr", "data": {"dir": "data"}, "trainer": {"max_epochs": 9, "patience": 1, **values}}
    return build(TrainingConfig, merge(TrainingConfig, config)).trainer


STOPPED = {"wait_count": 1, "stopped_epoch": 1, "patience": 1, "stopping_reason": 3}


def test_what_ends_a_resume_at_once_and_what_trains_on() -> None:
    """The decisions of a resume, from the checkpoint's states: each case a user meets, without training."""
    assert finished(_point(STOPPED), _trainer()).startswith("early stopping ended this run at epoch 1")
    assert finished(_point(STOPPED), _trainer(patience=2)) is None  # more asked for
    assert finished(_point(STOPPED), _trainer(patience=0)) is None  # early stopping off
    assert finished(_point(STOPPED), _trainer(monitor_mode="max")) is None  # another mode: afresh
    legacy = {k: v for k, v in STOPPED.items() if k != "stopping_reason"}  # Lightning before 2.5 said no reason
    assert finished(_point(legacy), _trainer()) is not None
    assert finished(_point({**STOPPED, "stopping_reason": 0, "stopped_epoch": 0}), _trainer()) is None  # not stopped
    nan = {**STOPPED, "stopping_reason": 4, "wait_count": 0}  # a NaN metric: no patience changes it
    assert finished(_point(nan), _trainer(patience=9)).startswith(
        "early stopping ended this run at epoch 1 (counted from 0): valid/loss was NaN or infinite")
    assert finished(_point(nan), _trainer(patience=0)) is None
    assert early_stop_note(_point(nan), _trainer(patience=9)) is None  # `finished` says it
    assert finished(_point(), _trainer(max_steps=2)).startswith("the run has made its trainer.max_steps 2 updates")
    assert finished(_point(), _trainer(max_epochs=2)).startswith("the run has trained its trainer.max_epochs 2")
    assert finished(_point(sate={"mid_epoch": True}), _trainer(max_epochs=2)) is None  # epoch 1 not yet done
    assert finished(_point(sate={}), _trainer(max_epochs=2)) is None  # an older sate's header cannot tell
    spent = {"Timer": {"time_elapsed": {"train": 61.0}}}
    assert finished(_point(callbacks=spent), _trainer(max_minutes=1)).startswith("the run has spent its trainer.max")
    assert finished(_point(callbacks=spent), _trainer(max_minutes=2)) is None
    assert early_stop_note(_point(STOPPED), _trainer(patience=0)).endswith("is now 0 (off): it trains on up to its "
                                                                           "budget")
    assert early_stop_note(_point(STOPPED), _trainer(monitor_mode="max")).endswith(
        "trainer.monitor_mode is now max: early stopping starts afresh, and it trains on")
    assert early_stop_note(_point(), _trainer()) is None


def test_a_stop_that_training_went_on_from_is_not_taken_for_the_end() -> None:
    """Lightning never clears why early stopping fired: a run once stopped at epoch 1, trained on with patience 3 to
    its max_epochs (epoch 3) or killed inside a later epoch, still said "stopped at epoch 1, reason 3" and was taken
    as ended by a resume with the config's patience 1, or noted so on every resume (review32e)."""
    stale = {"wait_count": 1, "stopped_epoch": 1, "patience": 3, "stopping_reason": 3}
    assert finished(_point(stale, epoch=3), _trainer(max_epochs=6)) is None
    assert early_stop_note(_point(stale, epoch=3), _trainer(patience=3, max_epochs=6)) is None
    assert finished(_point(stale, epoch=3), _trainer(max_epochs=4)).startswith("the run has trained its trainer.max_"
                                                                               "epochs 4 epochs")
    killed = {"wait_count": 12, "stopped_epoch": 40, "patience": 20, "stopping_reason": 3}
    assert finished(_point(killed, epoch=70, sate={"mid_epoch": True}), _trainer(patience=10, max_epochs=100)) is None
    assert early_stop_note(_point(killed, epoch=70, sate={"mid_epoch": True}), _trainer(patience=20)) is None
    # inside the epoch it stopped at, or a header that cannot tell: not the end either
    assert finished(_point(STOPPED, sate={"mid_epoch": True}), _trainer()) is None
    assert finished(_point(STOPPED, sate={}), _trainer()) is None
    assert finished(_point({**STOPPED, "stopped_epoch": 3}, epoch=3), _trainer()).startswith(
        "early stopping ended this run at epoch 3")
    assert finished(_point(STOPPED), _trainer(max_minutes=2)).startswith("early stopping ended")
    spent = {"Timer": {"time_elapsed": {"train": 61.0}}}
    assert finished(_point(callbacks=spent), _trainer(max_minutes=1)) == (
        "the run has spent its trainer.max_minutes 1 minutes of training time (1.017 in all); raise it above that to "
        "train on")
    # a budget lowered below what the run spent: raised as "raise it" said, from 1 to 2, it said the same again
    spent = {"Timer": {"time_elapsed": {"train": 300.0}}}
    assert finished(_point(callbacks=spent), _trainer(max_minutes=2)).endswith(
        "(5 in all); raise it above that to train on")


def _finished_run(exp: Path, data: Path, **header: object) -> Path:
    """A checkpoint of a run at the end of its epoch 1 (max_epochs 2), as far as a resume reads it before the data:
    its header with the token lists and CMVN statistics `sate train` records."""
    from sate.data.cmvn_record import cmvn_record
    from sate.data.vocab import Vocabulary

    (exp / "checkpoints").mkdir(parents=True)
    path = exp / "checkpoints" / "last.ckpt"
    header = {"run_id": "0123456789ab", "mid_epoch": False, "cmvn": cmvn_record(data / "cmvn.json"),
              **{f"{s}_tokens": Vocabulary.load(data, s).tokens for s in ("src", "tgt")}, **header}
    torch.save({"sate": header, "state_dict": {}, "global_step": 4, "epoch": 1}, path)
    return path


def test_a_finished_run_on_another_vocabulary_is_refused_as_any_resume(tmp_path: Path, prepared_data: Path,
                                                                         make_config: MakeConfig,
                                                                         capsys: pytest.CaptureFixture) -> None:
    """A finished run started again after `sate vocab` ran again ended "nothing to train, nothing changed", exit 0:
    a recipe marked its training done on the new vocabulary, and the advice (raise max_epochs) led to the refusal
    (review32e)."""
    from sate.data.vocab import Vocabulary

    tokens = Vocabulary.load(prepared_data, "src").tokens
    ckpt = _finished_run(tmp_path / "exp", prepared_data, src_tokens=tokens[:4] + [tokens[5], tokens[4]] + tokens[6:])
    config = make_config(tmp_path, "asr", prepared_data, trainer={"max_epochs": 2})
    assert main(["train", "--config", str(config), "--exp", str(tmp_path / "exp")]) == 2
    assert f"{ckpt}: trained on another src vocabulary than {prepared_data} holds now" in capsys.readouterr().err


def test_a_finished_run_resumed_past_a_damaged_last_checkpoint_names_it(tmp_path: Path, prepared_data: Path,
                                                                        make_config: MakeConfig,
                                                                        capsys: pytest.CaptureFixture) -> None:
    """Only the early end's line was said, naming epoch001.ckpt: nothing told that last.ckpt was damaged."""
    ckpt = _finished_run(tmp_path / "exp", prepared_data)
    ckpt.rename(ckpt.with_name("epoch001.ckpt"))
    ckpt.write_bytes(b"not a checkpoint")
    config = make_config(tmp_path, "asr", prepared_data, trainer={"max_epochs": 2})
    assert main(["train", "--config", str(config), "--exp", str(tmp_path / "exp")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{ckpt} is unreadable; resuming from epoch001.ckpt"), out
    assert out.endswith(f"{ckpt.with_name('epoch001.ckpt')}: the run has trained its trainer.max_epochs 2 epochs; "
                        "raise it to train on; nothing to train, nothing changed\n"), out


def test_a_finished_run_on_other_cmvn_statistics_is_refused_as_any_resume(tmp_path: Path, prepared_data: Path,
                                                                           make_config: MakeConfig,
                                                                           capsys: pytest.CaptureFixture) -> None:
    """The CMVN side of the vocabulary case: `sate features` run again on another train split (review32e)."""
    from sate.data.cmvn_record import cmvn_record

    record = cmvn_record(prepared_data / "cmvn.json")
    _finished_run(tmp_path / "exp", prepared_data, cmvn={"mean": record["mean"],
                                                         "std": [record["std"][0] * 1.01, *record["std"][1:]]})
    config = make_config(tmp_path, "asr", prepared_data, trainer={"max_epochs": 2})
    assert main(["train", "--config", str(config), "--exp", str(tmp_path / "exp")]) == 2
    assert "not the CMVN statistics" in capsys.readouterr().err


class FallingLoss(Callback):
    """valid/loss 1.0 up to epoch 1, then 0.5: a gain at epoch 2, none after."""

    def on_validation_end(self, trainer, pl_module) -> None:  # noqa: ANN001
        trainer.callback_metrics["valid/loss"] = torch.tensor(1.0 if trainer.current_epoch <= 1 else 0.5)


@pytest.mark.slow  # trains a tiny model
def test_a_run_trained_on_past_its_stop_is_not_ended_by_it(stopped: tuple[Path, Path], exp: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    """Stopped at epoch 1, trained on with patience 3 to its max_epochs 4 (epoch 3), then resumed with the config's
    patience 1 and max_epochs 6: Lightning's stale "stopped at epoch 1" ended it at once (review32e)."""
    train(load_training_config(stopped[0], ["trainer.patience=3"]), exp, callbacks=[FallingLoss()])
    assert _epoch(exp) == 3
    capsys.readouterr()
    train(load_training_config(stopped[0], ["trainer.max_epochs=6"]), exp, callbacks=[FallingLoss()])
    assert "early stopping ended" not in capsys.readouterr().out
    assert _epoch(exp) == 4  # no gain at epoch 4: patience 1 stops it there
