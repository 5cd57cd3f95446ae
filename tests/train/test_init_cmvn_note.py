"""The note of an acoustic encoder initialised from a model file trained on other features (`_cmvn_note`), through
the path `sate train` takes (`build_for_training`): it went to stdout beside the init table while every other note
goes to stderr, and a whole-model init (`init: {model: {path: ...}}`), which loads the acoustic encoder too, said
nothing (24th hostile pass, review)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from sate.data.cmvn_record import cmvn_record
from sate.data.vocab import Vocabulary
from sate.models import save_model_file
from sate.train.setup import build_for_training
from sate.train.trainer import load_training_config


@pytest.mark.parametrize("component", ["acoustic", "model"])
def test_an_encoder_of_other_features_is_noted_on_stderr_for_either_init(
        tmp_path: Path, make_config: Callable[..., Path], prepared_data: Path, component: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    plain = load_training_config(make_config(tmp_path, "asr", prepared_data), [])
    model = build_for_training(plain, src.tokens, tgt.tokens)
    other = json.loads((prepared_data / "cmvn.json").read_text())
    other["mean"] = [m + 1 for m in other["mean"]]
    (tmp_path / "other_cmvn.json").write_text(json.dumps(other))
    cmvn = prepared_data / "cmvn.json"
    for name, record in (("same.pt", cmvn_record(cmvn)), ("other.pt", cmvn_record(tmp_path / "other_cmvn.json"))):
        save_model_file(tmp_path / name, model, src.tokens, tgt.tokens, cmvn=record, cmvn_kind="global")
    capsys.readouterr()
    for name, kind, says in (
            ("same.pt", "global", None),
            ("other.pt", "global", f"note: init {component} <- {tmp_path / 'other.pt'}: trained on other CMVN "
                                   f"statistics than {cmvn} (mean[0] "),
            ("same.pt", "utterance", f"note: init {component} <- {tmp_path / 'same.pt'}: trained with global CMVN (it "
                                     "records the statistics), this run normalises with data.cmvn utterance")):
        config = load_training_config(make_config(tmp_path, "asr", prepared_data, init={
            component: {"path": str(tmp_path / name)}}), [f"data.cmvn={kind}"])
        build_for_training(config, src.tokens, tgt.tokens, cmvn=cmvn if kind == "global" else None)
        out, err = capsys.readouterr()
        assert "note:" not in out, out  # the init table alone
        if says is None:
            assert "note:" not in err, err
        else:
            assert err.startswith(says), err
