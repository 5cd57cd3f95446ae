"""`trainer.monitor` valid/wer over a CTC head that no loss trains (`sate.train.schema.untrained_wer_monitor`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sate.cli import main

MakeConfig = Callable[..., Path]


@pytest.mark.slow  # three trainings
def test_valid_wer_of_an_untrained_ctc_is_refused_for_a_new_run_and_a_run_begun_so_resumes(
        tmp_path: Path, prepared_data: Path, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    """valid/wer is the CTC head's greedy WER: with model.loss.ctc_weight 0 (a hybrid ASR model here) no loss trains
    that head towards the transcripts (an ST model here), and a run monitoring it kept its best checkpoints, and stopped
    early, by that head's WER, exit 0
    (twenty-eighth hostile pass). A new run is refused before its folder is made; a run begun so goes on with a note
    (a resume may not change its monitor), and `sate config` of its config.yaml notes it."""
    path = make_config(tmp_path, "st", prepared_data, model={"loss": {"ctc_weight": 0}},
                       trainer={"monitor": "valid/wer", "max_steps": 1})
    with monkeypatch.context() as old_sate:  # a run begun before the refusal
        old_sate.setattr("sate.train.trainer.untrained_wer_monitor", lambda *args: None, raising=False)
        assert main(["train", "--config", str(path), "--exp", str(tmp_path / "old")]) == 0
    # the tiny config's warm-up (2 updates) outlasts its one update: noted (tests/train/test_schema_warmup.py)
    assert "note: optim.warmup_steps 2 is more than trainer.max_steps 1: the learning rate is still rising at the " \
        "last update, at 50% of optim.lr" in capsys.readouterr().out
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "old"), "--set", "trainer.max_steps=2"]) == 0
    out = capsys.readouterr().out
    assert "note: trainer.monitor valid/wer is the CTC head's greedy WER, and with model.loss.ctc_weight 0 no loss " \
        "trains that head towards the transcripts" in out and "this run began so" in out
    assert main(["config", "--config", str(tmp_path / "old" / "config.yaml")]) == 0
    assert "`sate train` refuses it for a new run (monitor valid/loss, or valid/acc with trainer.monitor_mode max)" \
        in capsys.readouterr().err
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("a WER the training does not lower; monitor valid/loss, or valid/acc with "
                        "trainer.monitor_mode max, or give model.loss.ctc_weight above 0"), err
    assert not (tmp_path / "new").exists()


@pytest.mark.slow  # two trainings
def test_a_hybrid_asr_model_whose_ctc_no_loss_trains_is_refused_for_a_new_run(
        tmp_path: Path, prepared_data: Path, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    """sate transcribes by an ASR model's CTC head alone (evaluate, translate, the cascade; SATE's --init-from asr
    starts its CTC from it): a hybrid ASR model with model.loss.ctc_weight 0 trained exit 0 a head that no loss trains,
    and its WER was an untrained head's (hand28m, twenty-eighth hostile pass). A new run is refused before its folder
    is made, whatever it monitors; a run begun so goes on with a note; `sate config` notes it; the advice followed
    passes."""
    model = {"d_model": 32, "acoustic": {"layers": 1, "heads": 2, "ffn": 64, "frontend_channels": 8},
             "decoder": {"layers": 1, "heads": 2, "ffn": 64}, "loss": {"ctc_weight": 0}}
    path = make_config(tmp_path, "asr", prepared_data, model=model, trainer={"max_steps": 1})
    with monkeypatch.context() as old_sate:  # a run begun before the refusal
        old_sate.setattr("sate.train.trainer.untrained_output", lambda *args: None, raising=False)
        assert main(["train", "--config", str(path), "--exp", str(tmp_path / "old")]) == 0
    capsys.readouterr()
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "old"), "--set", "trainer.max_steps=2"]) == 0
    assert "note: an ASR model's transcripts are its CTC head's (sate evaluate, translate, the cascade, and SATE's " \
        "--init-from asr read it), and with model.loss.ctc_weight 0 no loss trains that head; this run began so" \
        in capsys.readouterr().out
    assert main(["config", "--config", str(tmp_path / "old" / "config.yaml")]) == 0
    assert "`sate train` refuses it for a new run (give model.loss.ctc_weight above 0" in capsys.readouterr().err
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("no loss trains that head; give model.loss.ctc_weight above 0 (its decoder's loss then "
                        "trains beside it)"), err
    assert not (tmp_path / "new").exists()
    assert main(["config", "--config", str(path), "--set", "model.loss.ctc_weight=0.3"]) == 0
    assert "refuses" not in capsys.readouterr().err  # its note of the warm-up (2 updates) alone


def test_an_st_model_whose_decoder_no_loss_trains_is_refused_for_a_new_run(
        tmp_path: Path, prepared_data: Path, make_config: MakeConfig, capsys: pytest.CaptureFixture) -> None:
    """An ST model translates with its decoder, whose loss is weighted 1 - model.loss.ctc_weight: with ctc_weight 1
    (and no MT text batches) nothing trained it, nor the adaptor and textual encoder before it, and the run ended exit
    0 with an untrained decoder's translations (thirtieth hostile pass). A new run is refused before its folder is
    made; `sate config` notes it; the advice followed passes, and so do text batches, which train the textual side."""
    path = make_config(tmp_path, "st", prepared_data, model={"loss": {"ctc_weight": 1}}, trainer={"max_steps": 1})
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("an ST model translates with its decoder, and with model.loss.ctc_weight 1 (the decoder's loss "
                        "weighted 0) and no MT text batches (model.loss.mt_text_weight 0) no loss trains it; give "
                        "model.loss.ctc_weight below 1 (a CTC-only stage is a task asr run, which SATE starts from "
                        "with --init-from asr=PATH)"), err
    assert not (tmp_path / "new").exists()
    assert main(["config", "--config", str(path)]) == 0
    assert "`sate train` refuses it for a new run (give model.loss.ctc_weight below 1" in capsys.readouterr().err
    for setting in ("model.loss.ctc_weight=0.9", "model.loss.mt_text_weight=0.5"):
        assert main(["config", "--config", str(path), "--set", setting]) == 0
        assert "refuses" not in capsys.readouterr().err, setting  # the warm-up (2 updates) is noted
