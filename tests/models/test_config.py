"""The model config: defaults fill in, every mistake is a SateError naming the key."""

from __future__ import annotations

import pytest

from sate.errors import SateError
from sate.models.config import DEFAULTS, resolve_config


def test_defaults_fill_every_section_of_each_task() -> None:
    st = resolve_config("st", None)
    assert st["acoustic"] == DEFAULTS["acoustic"] and st["loss"] == DEFAULTS["loss"]
    assert set(resolve_config("mt", {})) == {"d_model", "textual", "decoder", "loss"}
    asr = resolve_config("asr", {})
    assert asr["decoder"]["layers"] == 0 and set(asr["loss"]) == {"ctc_weight", "label_smoothing", "normalize"}
    assert resolve_config("st", {"loss": {"ctc_weight": 1}})["loss"]["ctc_weight"] == 1.0  # int accepted as float
    for task in ("asr", "mt", "st"):
        resolved = resolve_config(task, {"d_model": 64})
        assert resolve_config(task, resolved) == resolved  # what model files store resolves again


@pytest.mark.parametrize(
    ("task", "conf", "message"),
    [
        ("st", {"acoustic": {"layer": 2}}, "unknown key.*acoustic.layer"),
        ("mt", {"acoustic": {}}, "unknown key.*acoustic"),
        ("st", {"d_model": "256"}, "d_model must be int"),
        ("st", {"adaptor": {"keep_blank": 1}}, "keep_blank must be bool"),
        ("st", {"acoustic": {"layers": True}}, "layers must be int"),
        ("st", {"adaptor": {"type": "context"}}, "adaptor.type must be one of"),
        ("st", {"loss": {"ctc_weight": 1.5}}, r"ctc_weight must be in \[0, 1\]"),
        ("st", {"d_model": 30, "acoustic": {"heads": 4}}, "not divisible"),
        ("st", {"acoustic": {"kernel": 4}}, "positive odd"),
        ("st", {"acoustic": {"type": "transformer", "kernel": 5}}, "kernel is set but does nothing"),
        ("st", {"adaptor": {"type": "soft", "shrink_mode": "soft"}}, "shrink_mode is set but does nothing"),
        ("st", {"adaptor": {"type": "soft", "dropout": 0.2}}, "dropout is set but does nothing"),
        ("st", {"adaptor": {"type": "shrink", "shrink_mode": "soft", "dropout": 0.2}}, "no linear branch"),
        ("st", {"adaptor": {"type": "linear", "temperature": 2.0}}, "temperature is set but does nothing"),
        ("asr", {"decoder": {"heads": 2}}, "decoder.heads is set but does nothing"),
        ("asr", {"loss": {"ctc_weight": 0.5}}, "ctc_weight is set but does nothing"),
        ("asr", {"decoder": {"layers": -1}}, "0 \\(CTC only\\) or more"),
        ("mt", {"loss": {"ctc_weight": 0.3}}, "unknown key.*loss.ctc_weight"),
        ("st", {"loss": {"kd": {"asr_weight": 0.5}}}, "asr_teacher .* is not set"),
        ("st", {"loss": {"kd": {"mt_teacher": "mt.pt"}}}, "mt_teacher is set but does nothing"),
        ("st", {"loss": {"kd": {"topk": 5}}}, "topk is set but does nothing"),
        ("st", {"loss": {"ctc_weight": 0, "kd": {"asr_weight": 0.5, "asr_teacher": "asr.pt"}}},
         "kd.asr_weight is set but does nothing: loss.ctc_weight is 0"),
        ("st", {"loss": {"ctc_weight": 1, "kd": {"mt_weight": 0.5, "mt_teacher": "mt.pt"}}},
         "kd.mt_weight is set but does nothing: loss.ctc_weight is 1"),
        ("st", {"loss": {"normalize": "batch"}}, "loss.normalize must be one of utterance, token"),
        ("st", {"textual": []}, "textual must be a mapping"),
        ("xx", {}, "unknown task"),
    ],
)
def test_config_errors(task: str, conf: dict, message: str) -> None:
    with pytest.raises(SateError, match=message):
        resolve_config(task, conf)


def test_applicable_keys_are_accepted() -> None:
    conf = resolve_config("st", {"adaptor": {"type": "shrink", "shrink_mode": "league", "keep_blank": True,
                                             "dropout": 0.2, "temperature": 0.5},
                                 "loss": {"kd": {"asr_weight": 0.5, "asr_teacher": "asr.pt", "topk": 4}}})
    assert conf["adaptor"]["keep_blank"] is True and conf["loss"]["kd"]["topk"] == 4
    # each distillation term with its own side weighted: KD_mt with ctc_weight 0, KD_asr with ctc_weight 1
    kd = {"asr_weight": 0.5, "asr_teacher": "asr.pt", "mt_weight": 0.5, "mt_teacher": "mt.pt"}
    for ctc_weight, side in ((0.0, "mt"), (1.0, "asr")):
        given = {k: v for k, v in kd.items() if k.startswith(side)}
        assert resolve_config("st", {"loss": {"ctc_weight": ctc_weight, "kd": given}})["loss"]["kd"] == \
            {**resolve_config("st", None)["loss"]["kd"], **given}
    assert resolve_config("asr", {"decoder": {"layers": 1, "heads": 2}, "loss": {"ctc_weight": 0.5}})
