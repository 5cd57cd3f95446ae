"""conf/mustc: every config resolves, and the reference trio fits together (ST loads what ASR and MT train)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sate.models.config import resolve_config, without_dropout
from sate.models.init_from import apply_init_from
from sate.train.trainer import load_training_config

CONF = Path(__file__).resolve().parents[2] / "conf" / "mustc"


def resolved(name: str) -> dict:
    """The config as the recipe runs it: SATE configs get --init-from asr=... mt=... (and so their teachers)."""
    config = load_training_config(CONF / f"{name}.yaml", [], need_data=False)
    if config["task"] == "st":
        config = apply_init_from(config, {"asr": "exp/asr/model.pt", "mt": "exp/mt/model.pt"})
    return {**config, "model": resolve_config(config["task"], config["model"])}


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
