"""`--init-from asr=PATH --init-from mt=PATH`: the init entries and teachers each SATE variant gets."""

from __future__ import annotations

import pytest

from sate.errors import SateError
from sate.models.init_from import fill_init, parse_init_from
from sate.models.tiny import tiny_config

SOURCES = {"asr": "exp/asr/model.pt", "mt": "exp/mt/model.pt"}


def st_model(**model_changes: object) -> dict:
    return tiny_config("st") | model_changes


def test_sate_gets_every_component_and_the_teachers_its_loss_uses() -> None:
    model, init = st_model(loss={"kd": {"asr_weight": 0.5}}), {}
    filled_model, filled_init = fill_init("st", model, init, SOURCES)
    assert filled_init == {"acoustic": {"path": SOURCES["asr"]}, "ctc": {"path": SOURCES["asr"]},
                           "src_embed": {"path": SOURCES["mt"]}, "textual": {"path": SOURCES["mt"]},
                           "decoder": {"path": SOURCES["mt"]}}
    kd = filled_model["loss"]["kd"]
    assert kd["asr_teacher"] == SOURCES["asr"] and "mt_teacher" not in kd  # mt_weight is 0: no MT teacher
    assert init == {} and "asr_teacher" not in model["loss"]["kd"]  # the input is not changed


def test_only_the_parts_a_model_has_are_filled() -> None:
    _, e2e = fill_init("st", st_model(**tiny_config("st", baseline=True)), {}, SOURCES)
    assert set(e2e) == {"acoustic", "ctc", "decoder"}  # no textual encoder, no source embedding
    _, linear = fill_init("st", st_model(adaptor={"type": "linear"}), {}, {"mt": SOURCES["mt"]})
    assert set(linear) == {"textual", "decoder"}


def test_given_entries_replace_the_configs_own() -> None:
    init = {"acoustic": {"path": "old.pt"}, "adaptor": {"path": "adaptor.pt"}}
    _, filled = fill_init("st", st_model(), init, {"asr": "new.pt"})
    assert filled == {"acoustic": {"path": "new.pt"}, "adaptor": {"path": "adaptor.pt"}, "ctc": {"path": "new.pt"}}


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
        fill_init("asr", tiny_config("asr"), {}, {"asr": "a.pt"})
    assert fill_init("asr", {}, {}, {}) == ({}, {})
