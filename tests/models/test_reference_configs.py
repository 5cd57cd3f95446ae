"""conf/mustc and conf/synth_reference: every config resolves, and each reference trio fits together (ST loads
what ASR and MT train)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sate.models.config import resolve_config
from sate.models.pretrained import without_dropout
from sate.train.trainer import apply_init_from, load_training_config

CONF = Path(__file__).resolve().parents[2] / "conf" / "mustc"


def resolved(name: str, conf: Path = CONF) -> dict:
    """The config as the recipe runs it: SATE configs get --init-from asr=... mt=... (and so their teachers)."""
    config = load_training_config(conf / f"{name}.yaml", [], need_data=False)
    if config.task == "st":
        config = apply_init_from(config, {"asr": "exp/asr/model.pt", "mt": "exp/mt/model.pt"})
    return {**config.to_dict(), "model": resolve_config(config.task, config.model).to_dict()}


@pytest.mark.parametrize("name", sorted(p.stem for p in CONF.glob("*.yaml")))
def test_every_mustc_config_resolves(name: str) -> None:
    assert resolved(name)["task"] in ("asr", "mt", "st")


def test_the_reference_st_model_takes_its_parts_from_the_reference_asr_and_mt_models() -> None:
    asr, mt, st = (resolved(f"{task}_reference") for task in ("asr", "mt", "st"))
    for section, source in (("acoustic", asr), ("ctc", asr), ("textual", mt), ("decoder", mt)):
        assert without_dropout(st["model"][section]) == without_dropout(source["model"][section]), section
    assert st["model"]["adaptor"]["embedding"] == "decoder" and st["model"]["decoder"]["tie_embeddings"]
    assert all(c["model"]["loss"]["normalize"] == "token" for c in (asr, mt, st))
    assert (mt["optim"]["lr"], mt["optim"]["warmup_steps"], mt["optim"]["betas"]) == (1e-3, 8000, [0.9, 0.997])
    assert asr["optim"]["betas"] == st["optim"]["betas"] == [0.9, 0.999]
    assert st["model"]["loss"]["kd"]["asr_weight"] == st["model"]["loss"]["kd"]["mt_weight"] == 0.0


def test_the_demo_reference_trio_differs_from_the_demo_only_in_the_reference_switches() -> None:
    """conf/synth_reference (the demo measurement of issue 18): the demo's sizes and budgets, the reference's
    switches, and an ST model that loads what its ASR and MT models train."""
    ref = CONF.parent / "synth_reference"
    asr, mt, st = (resolved(task, ref) for task in ("asr", "mt", "st"))
    for section, source in (("acoustic", asr), ("ctc", asr), ("textual", mt), ("decoder", mt)):
        assert without_dropout(st["model"][section]) == without_dropout(source["model"][section]), section
    assert st["model"]["ctc"]["dropout"] == 0.1 and not st["model"]["ctc"]["bias"]
    assert st["model"]["adaptor"]["embedding"] == "decoder" and st["model"]["decoder"]["tie_embeddings"]
    assert st["model"]["loss"]["kd"]["asr_weight"] == st["model"]["loss"]["kd"]["mt_weight"] == 0.0
    assert all(c["model"]["loss"]["normalize"] == "token" for c in (asr, mt, st))
    for task, config in (("asr", asr), ("mt", mt), ("st", st)):
        demo = resolved(task, CONF.parent / "synth")
        assert config["trainer"]["max_steps"] == demo["trainer"]["max_steps"], task
        assert config["batch"] == demo["batch"] and config["model"]["d_model"] == demo["model"]["d_model"], task
