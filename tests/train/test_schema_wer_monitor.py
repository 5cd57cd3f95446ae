"""`trainer.monitor` valid/wer over a CTC head that no loss trains (`sate.train.schema.untrained_wer_monitor`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from sate.cli import main

MakeConfig = Callable[..., Path]
# What `sate config` says of the tiny config (a 2-update warm-up over its one update; optim.lr by task), and nothing
# else: a check that stderr held nothing was loosened to "refuses" not in it (review30c).
WARMUP_NOTE = re.compile(r"note: optim\.warmup_steps 2 is more than trainer\.max_steps 1: the learning rate is still "
                         r"rising at the last update, at 50% of optim\.lr [0-9.e-]+, which update 2 would reach\n")


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
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "old"), "--set", "trainer.max_steps=2",
                 "--set", "trainer.max_epochs=2"]) == 0  # both budgets raised: a run at its max_epochs ends at once
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
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "old"), "--set", "trainer.max_steps=2",
                 "--set", "trainer.max_epochs=2"]) == 0  # both budgets raised: a run at its max_epochs ends at once
    assert "note: an ASR model's transcripts are its CTC head's (sate evaluate, translate, the cascade, and SATE's " \
        "--init-from asr read it), and with model.loss.ctc_weight 0 no loss trains that head; this run began so" \
        in capsys.readouterr().out
    assert main(["config", "--config", str(tmp_path / "old" / "config.yaml")]) == 0
    assert "`sate train` refuses it for a new run and resumes a run that began so; for a new run, give " \
        "model.loss.ctc_weight above 0 (its decoder's loss then trains beside it)\n" in capsys.readouterr().err
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("no loss trains that head; give model.loss.ctc_weight above 0 (its decoder's loss then "
                        "trains beside it)"), err
    assert not (tmp_path / "new").exists()
    assert main(["config", "--config", str(path), "--set", "model.loss.ctc_weight=0.3"]) == 0
    assert WARMUP_NOTE.fullmatch(capsys.readouterr().err)  # the tiny config's warm-up (2 updates) alone


def test_an_st_model_whose_decoder_no_loss_trains_is_refused_for_a_new_run(
        tmp_path: Path, prepared_data: Path, make_config: MakeConfig, capsys: pytest.CaptureFixture) -> None:
    """An ST model translates with its decoder, whose loss is weighted 1 - model.loss.ctc_weight: with ctc_weight 1
    (and no MT text batches) nothing trained it from its random start, nor the adaptor and textual encoder before it,
    and the run ended exit 0 with an untrained decoder's translations (thirtieth hostile pass). A new run is refused
    before its folder is made; `sate config` notes it (its advice after the verdict, no nested parentheses:
    review30c); the advice followed passes, and so do text batches, which train the textual side."""
    path = make_config(tmp_path, "st", prepared_data, model={"loss": {"ctc_weight": 1}}, trainer={"max_steps": 1})
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("an ST model translates with its decoder, and with model.loss.ctc_weight 1 (the decoder's loss "
                        "weighted 0), no MT text batches (model.loss.mt_text_weight 0) and no init: entry for the "
                        "decoder, no loss trains it from its random start; give model.loss.ctc_weight below 1, or "
                        "start the decoder from a trained MT model with --init-from mt=PATH; a CTC-only stage is a "
                        "task asr run, which SATE starts from with --init-from asr=PATH"), err
    assert not (tmp_path / "new").exists()
    assert main(["config", "--config", str(path)]) == 0
    assert capsys.readouterr().err.endswith("no loss trains it from its random start; `sate train` refuses it for a "
                                            "new run and resumes a run that began so; for a new run, give "
                                            "model.loss.ctc_weight below 1, or start the decoder from a trained MT "
                                            "model with --init-from mt=PATH; a CTC-only stage is a task asr run, "
                                            "which SATE starts from with --init-from asr=PATH\n")
    for setting in ("model.loss.ctc_weight=0.9", "model.loss.mt_text_weight=0.5"):
        assert main(["config", "--config", str(path), "--set", setting]) == 0
        assert WARMUP_NOTE.fullmatch(capsys.readouterr().err), setting


SPEECH_NOTE = ("note: model.loss.ctc_weight 1 and no MT text batches: only the speech side (acoustic encoder, CTC) is "
               "trained; the adaptor, textual encoder and decoder keep the weights they start from")


def test_an_st_model_whose_decoder_starts_from_a_trained_model_trains_its_speech_side_with_a_note(
        tmp_path: Path, prepared_data: Path, make_config: MakeConfig, capsys: pytest.CaptureFixture) -> None:
    """ST with ctc_weight 1 under a decoder that an init: entry (`--init-from mt=` writes one, or init.model) or a
    pre-trained Marian fills is a cascade-like choice, the speech side trained under a fixed MT (sate has no freeze
    key): refusing it, advising a ctc_weight below 1 that changes the experiment, was a false positive (review30c).
    `sate config` notes it; a decoder nothing fills is still refused (the test above)."""
    path = make_config(tmp_path, "st", prepared_data, model={"loss": {"ctc_weight": 1}}, trainer={"max_steps": 1})
    for extra in (["--init-from", f"mt={tmp_path / 'mt.pt'}"], ["--set", f"init.decoder.path={tmp_path / 'mt.pt'}"],
                  ["--set", f"init.model.path={tmp_path / 'st.pt'}"]):
        assert main(["config", "--config", str(path), *extra]) == 0
        err = capsys.readouterr().err
        assert err.endswith(f"\n{SPEECH_NOTE}\n") and WARMUP_NOTE.fullmatch(err.removesuffix(f"{SPEECH_NOTE}\n")), extra
    from sate.train.schema import speech_side_only, untrained_output

    marian = {"loss": {"ctc_weight": 1}, "textual": {"type": "hf_marian"}, "decoder": {"type": "hf_marian"}}
    assert untrained_output("st", marian, {}) is None
    assert speech_side_only("st", marian, {}) == SPEECH_NOTE.removeprefix("note: ")
    assert speech_side_only("st", {"loss": {"ctc_weight": 1}}, {"acoustic": {"path": "asr.pt"}}) is None
    assert untrained_output("st", {"loss": {"ctc_weight": 1}}, {"acoustic": {"path": "asr.pt"}}) is not None


@pytest.mark.slow  # three trainings
def test_an_st_model_of_ctc_weight_1_under_a_trained_mt_trains(
        tmp_path: Path, prepared_data: Path, make_config: MakeConfig, capsys: pytest.CaptureFixture) -> None:
    """The review's command: ASR and MT trained, then ST from both with a soft adaptor and ctc_weight 1 was refused;
    it trains, exit 0, with the note."""
    for task in ("asr", "mt"):
        assert main(["train", "--config", str(make_config(tmp_path, task, prepared_data)), "--exp",
                     str(tmp_path / task), "--set", "trainer.max_steps=1"]) == 0
        assert main(["average", "--exp", str(tmp_path / task), "--last", "1", "--out",
                     str(tmp_path / task / "model.pt")]) == 0
    capsys.readouterr()
    path = make_config(tmp_path, "st", prepared_data, model={"loss": {"ctc_weight": 1}, "adaptor": {"type": "soft"}},
                       trainer={"max_steps": 1})
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "st"), "--init-from",
                 f"asr={tmp_path / 'asr' / 'model.pt'}", "--init-from", f"mt={tmp_path / 'mt' / 'model.pt'}"]) == 0
    assert SPEECH_NOTE in capsys.readouterr().out
    assert (tmp_path / "st" / "checkpoints" / "last.ckpt").is_file()


@pytest.mark.slow  # three trainings
def test_a_resume_of_an_st_run_begun_with_a_trained_mt_does_not_call_its_decoder_untrained(
        tmp_path: Path, prepared_data: Path, make_config: MakeConfig, capsys: pytest.CaptureFixture) -> None:
    """init is a safe key: a resume needs no --init-from again, and one given none read the decoder of a run begun
    with `--init-from mt=` as never trained, noting so (review30z). The resume reads the init: its run began with,
    which every checkpoint records, through a second resume too."""
    assert main(["train", "--config", str(make_config(tmp_path, "mt", prepared_data)), "--exp", str(tmp_path / "mt"),
                 "--set", "trainer.max_steps=1"]) == 0
    assert main(["average", "--exp", str(tmp_path / "mt"), "--last", "1", "--out",
                 str(tmp_path / "mt" / "model.pt")]) == 0
    path = make_config(tmp_path, "st", prepared_data, model={"loss": {"ctc_weight": 1}}, trainer={"max_steps": 1})
    capsys.readouterr()
    assert main(["train", "--config", str(path), "--exp", str(tmp_path / "st"), "--init-from",
                 f"mt={tmp_path / 'mt' / 'model.pt'}"]) == 0
    assert SPEECH_NOTE in capsys.readouterr().out
    for steps in (2, 3):
        assert main(["train", "--config", str(path), "--exp", str(tmp_path / "st"), "--set",
                     f"trainer.max_steps={steps}", "--set", f"trainer.max_epochs={steps}"]) == 0
        out = capsys.readouterr().out
        assert "no loss trains it from its random start" not in out and SPEECH_NOTE in out, (steps, out)
