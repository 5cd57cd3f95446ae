"""`--init-from asr=PATH --init-from mt=PATH`: the init entries and teachers each SATE variant gets."""

from __future__ import annotations

import pytest

from sate.errors import SateError
from sate.models.init_from import apply_init_from, parse_init_from
from sate.models.tiny import tiny_config

SOURCES = {"asr": "exp/asr/model.pt", "mt": "exp/mt/model.pt"}


def st_config(**model_changes: object) -> dict:
    model = tiny_config("st") | model_changes
    return {"task": "st", "model": model, "init": {}}


def test_sate_gets_every_component_and_the_teachers_its_loss_uses() -> None:
    config = st_config(loss={"kd": {"asr_weight": 0.5}})
    filled = apply_init_from(config, SOURCES)
    assert filled["init"] == {"acoustic": {"path": SOURCES["asr"]}, "ctc": {"path": SOURCES["asr"]},
                              "src_embed": {"path": SOURCES["mt"]}, "textual": {"path": SOURCES["mt"]},
                              "decoder": {"path": SOURCES["mt"]}}
    kd = filled["model"]["loss"]["kd"]
    assert kd["asr_teacher"] == SOURCES["asr"] and "mt_teacher" not in kd  # mt_weight is 0: no MT teacher
    assert config["init"] == {} and "asr_teacher" not in config["model"]["loss"]["kd"]  # the input is not changed


def test_only_the_parts_a_model_has_are_filled() -> None:
    e2e = apply_init_from(st_config(**tiny_config("st", baseline=True)), SOURCES)
    assert set(e2e["init"]) == {"acoustic", "ctc", "decoder"}  # no textual encoder, no source embedding
    linear = apply_init_from(st_config(adaptor={"type": "linear"}), {"mt": SOURCES["mt"]})
    assert set(linear["init"]) == {"textual", "decoder"}


def test_given_entries_replace_the_configs_own() -> None:
    config = st_config()
    config["init"] = {"acoustic": {"path": "old.pt"}, "adaptor": {"path": "adaptor.pt"}}
    filled = apply_init_from(config, {"asr": "new.pt"})
    assert filled["init"] == {"acoustic": {"path": "new.pt"}, "adaptor": {"path": "adaptor.pt"},
                              "ctc": {"path": "new.pt"}}


@pytest.mark.parametrize(("items", "message"), [
    (["asr"], "expected asr=PATH or mt=PATH"),
    (["lm=x.pt"], "expected asr=PATH or mt=PATH"),
    (["asr="], "expected asr=PATH or mt=PATH"),
    (["asr=a.pt", "asr=b.pt"], "asr= is given twice"),
])
def test_bad_items_are_named(items: list[str], message: str) -> None:
    with pytest.raises(SateError, match=message):
        parse_init_from(items)


def test_only_st_models_are_filled() -> None:
    with pytest.raises(SateError, match="this config's task is asr"):
        apply_init_from({"task": "asr", "model": tiny_config("asr"), "init": {}}, {"asr": "a.pt"})
    assert apply_init_from({"task": "asr", "model": {}, "init": {}}, {}) == {"task": "asr", "model": {}, "init": {}}
