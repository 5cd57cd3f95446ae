"""A warm-up longer than the run (`sate.train.schema.short_warmup`), and a SpecAugment that would start after it
(`late_specaug`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sate.cli import main
from sate.settings import read
from sate.train.schema import TrainingConfig, late_specaug, short_warmup


def test_a_warmup_longer_than_max_steps_is_noted_with_the_share_of_the_lr_reached() -> None:
    """optim.lr is the peak the warm-up reaches at its end; `--set trainer.max_steps=2000` over the default
    10,000-update warm-up stopped at a fifth of it, without a word (twenty-eighth hostile pass). `sate train` prints
    this note beside the parameter counts (tests/train/test_schema_wer_monitor.py sees it); a warm-up within the
    budget, or no step budget, has none."""
    config = read(TrainingConfig, {"trainer": {"max_steps": 2000}, "optim": {"lr": 1e-3}})
    assert short_warmup(config) == ("optim.warmup_steps 10,000 is more than trainer.max_steps 2,000: the learning "
                                    "rate is still rising at the last update, at 20% of optim.lr 0.001, which update "
                                    "10,000 would reach")
    # rounded down, and a fraction below 1%: one decimal said "rises to 0.0%", and "100.0% ... never reaches it"
    # (review28c)
    for steps, part in ((9999, "99.9%"), (1, "1/10,000"), (99, "99/10,000"), (100, "1%")):
        note = short_warmup(read(TrainingConfig, {"trainer": {"max_steps": steps}}))
        assert note is not None and f"the last update, at {part} of optim.lr" in note, note
    for trainer, optim in (({"max_steps": 10000}, {}), ({}, {}), ({"max_steps": 5}, {"warmup_steps": 0})):
        assert short_warmup(read(TrainingConfig, {"trainer": trainer, "optim": optim})) is None


def test_a_specaugment_starting_at_or_after_max_steps_is_noted_by_sate_config(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SpecAugment applies from update `specaug.start_step` on: conf/synth_ding/asr.yaml started it at update 1,000
    of a 460-update budget, so no run of it ever had SpecAugment, its comment saying it was switched on later, without
    a word (thirtieth hostile pass). `sate config` notes it, as `sate train` does beside the parameter counts, with the
    warm-up's note; a start inside the budget, no step budget, SpecAugment off and MT have none."""
    config = read(TrainingConfig, {"task": "asr", "specaug": {"start_step": 1000}, "trainer": {"max_steps": 460}})
    assert late_specaug(config) == ("specaug.start_step 1,000 is not below trainer.max_steps 460: SpecAugment never "
                                    "applies in this run (specaug.enabled false says so)")
    assert late_specaug(read(TrainingConfig, {"task": "st", "specaug": {"start_step": 5},
                                              "trainer": {"max_steps": 5}})) is not None  # updates 0 to 4 run
    for given in ({"specaug": {"start_step": 4}, "trainer": {"max_steps": 5}}, {"specaug": {"start_step": 1000}},
                  {"specaug": {"start_step": 1000, "enabled": False}, "trainer": {"max_steps": 5}},
                  {"task": "mt", "specaug": {"start_step": 1000}, "trainer": {"max_steps": 5}}):
        assert late_specaug(read(TrainingConfig, {"task": "asr", **given})) is None, given
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\nspecaug: {start_step: 1500}\noptim: {warmup_steps: 10}\n")
    assert main(["config", "--config", str(path), "--set", "trainer.max_steps=100"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "note: specaug.start_step 1,500 is not below trainer.max_steps 100: SpecAugment never applies in this run "
        "(specaug.enabled false says so)"]
    assert main(["config", "--config", str(path), "--set", "trainer.max_steps=5"]) == 0
    assert capsys.readouterr().err.splitlines()[0].startswith("note: optim.warmup_steps 10 is more than "
                                                              "trainer.max_steps 5")


@pytest.mark.slow
def test_a_warmup_or_specaug_start_past_the_epochs_budget_is_noted(tmp_path: Path, make_config: Callable[..., Path],
                                                                   prepared_data: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A budget of epochs (max_steps -1, or above what the epochs allow) hid a warm-up, or a SpecAugment start, that
    the run never reaches: conf/mustc/asr.yaml's 10,000-update warm-up over a small corpus (hand30c's leftover, 31st
    hostile pass). The data module knows the updates an epoch, and notes it as `sate train` notes max_steps."""
    from sate.train.trainer import load_training_config, train

    path = make_config(tmp_path, "asr", prepared_data, optim={"warmup_steps": 10},
                       specaug={"enabled": True, "start_step": 5}, trainer={"max_epochs": 3, "max_steps": 100})
    train(load_training_config(path, []), tmp_path / "exp")
    out = capsys.readouterr().out
    assert ("note: optim.warmup_steps 10 is more than the 3 updates of trainer.max_epochs 3 (1 an epoch): the "
            "learning rate is still rising at the last update, at 30% of optim.lr 0.01") in out, out
    assert ("note: specaug.start_step 5 is not below the 3 updates of trainer.max_epochs 3 (1 an epoch): SpecAugment "
            "never applies in this run") in out, out
    path = make_config(tmp_path, "asr", prepared_data, optim={"warmup_steps": 3},
                       specaug={"enabled": True, "start_step": 2}, trainer={"max_epochs": 3})
    train(load_training_config(path, []), tmp_path / "exp2")  # reached within the budget: nothing said
    assert "note:" not in capsys.readouterr().out


@pytest.mark.slow
def test_a_max_steps_between_the_epochs_budget_and_the_warmup_is_noted_once(
        tmp_path: Path, make_config: Callable[..., Path], prepared_data: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """trainer.max_steps 8 between the 3 updates of 3 epochs and a warm-up of 10 (or a SpecAugment start of 8) said
    both notes, the max_steps one false ("at 80% of optim.lr": the last update is the third): one note, of the bound
    that binds (review31t)."""
    from sate.train.trainer import load_training_config, train

    path = make_config(tmp_path, "asr", prepared_data, optim={"warmup_steps": 10},
                       specaug={"enabled": True, "start_step": 8}, trainer={"max_epochs": 3, "max_steps": 8})
    train(load_training_config(path, []), tmp_path / "exp")
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")]
    assert notes == ["note: optim.warmup_steps 10 is more than the 3 updates of trainer.max_epochs 3 (1 an epoch): the "
                     "learning rate is still rising at the last update, at 30% of optim.lr 0.01, which update 10 would "
                     "reach",
                     "note: specaug.start_step 8 is not below the 3 updates of trainer.max_epochs 3 (1 an epoch): "
                     "SpecAugment never applies in this run (specaug.enabled false says so)"], notes
