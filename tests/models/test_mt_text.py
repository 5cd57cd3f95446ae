"""SATE's MT text batches (model.loss.mt_text_weight): what they train, what they leave alone, and the key's checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from sate.errors import SateError
from sate.models.config import resolve_config
from sate.models.init_from import fill_init

TEXT_KEYS = ("src", "src_lengths", "tgt", "tgt_lengths", "ids")
ACOUSTIC_PARTS = ("acoustic.", "ctc.", "adaptor.")


def _with_text(batch: dict[str, Any], text: dict[str, Any]) -> dict[str, Any]:
    return {**batch, "mt": {k: text[k] for k in TEXT_KEYS}}


@pytest.mark.parametrize("adaptor", ["league", "linear"])
def test_a_text_batch_trains_the_textual_side_and_no_acoustic_part(build: Callable[..., Any],
                                                                   make_batch: Callable[..., dict[str, Any]],
                                                                   adaptor: str) -> None:
    model = build("st", adaptor={"type": adaptor}, loss={"mt_text_weight": 0.5})
    assert model.src_embed is not None  # linear has no soft branch: the embedding is there for the text
    model._text_loss(_with_text({}, make_batch(1))["mt"]).backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    for name, grad in grads.items():
        if name.startswith(ACOUSTIC_PARTS):
            assert grad is None or not grad.any(), name
    for part in ("src_embed.", "textual.", "decoder."):
        assert any(g is not None and g.abs().sum() > 0 for n, g in grads.items() if n.startswith(part)), part


def test_the_text_loss_is_added_with_its_weight(build: Callable[..., Any],
                                                make_batch: Callable[..., dict[str, Any]]) -> None:
    model = build("st", loss={"mt_text_weight": 0.5}).eval()  # no dropout: two passes give the same numbers
    speech, text = make_batch(0), make_batch(1)
    alone, mixed = model(speech), model(_with_text(speech, text))
    assert "loss_mt" not in alone and mixed["loss_mt"] > 0  # a batch without text (validation) has no MT term
    assert mixed["loss"].item() == pytest.approx(alone["loss"].item() + 0.5 * mixed["loss_mt"], rel=1e-6)
    assert mixed["loss_ce"] == alone["loss_ce"] and mixed["loss_ctc"] == alone["loss_ctc"]


def test_without_the_weight_a_text_batch_changes_nothing(build: Callable[..., Any],
                                                         make_batch: Callable[..., dict[str, Any]]) -> None:
    speech, text = make_batch(0), make_batch(1)
    outs, grads = [], []
    for batch in (speech, _with_text(speech, text)):
        model = build("st", adaptor={"type": "linear"}, loss={"mt_text_weight": 0.0})
        assert model.src_embed is None  # the parameters of a model without text batches, as before the key
        torch.manual_seed(3)  # the same dropout masks in both passes
        out = model(batch)
        out["loss"].backward()
        outs.append(out)
        grads.append([p.grad.clone() for p in model.parameters()])
    assert set(outs[0]) == set(outs[1]) and torch.equal(outs[0]["loss"], outs[1]["loss"])
    assert all(torch.equal(a, b) for a, b in zip(*grads, strict=True))


def test_init_from_mt_fills_the_embedding_that_text_batches_need() -> None:
    linear = {"adaptor": {"type": "linear"}}
    _, init = fill_init("st", linear, {}, {"asr": "a.pt", "mt": "m.pt"})
    assert "src_embed" not in init
    _, init = fill_init("st", linear | {"loss": {"mt_text_weight": 1.0}}, {}, {"asr": "a.pt", "mt": "m.pt"})
    assert init["src_embed"] == {"path": "m.pt"} and init["textual"] == {"path": "m.pt"}


@pytest.mark.parametrize(("conf", "message"), [
    ({"loss": {"mt_text_weight": -1}}, "loss.mt_text_weight must be at least 0, got -1"),
    ({"loss": {"mt_text_weight": "yes"}}, "loss.mt_text_weight must be a finite number, got 'yes'"),
    ({"adaptor": {"type": "none"}, "textual": {"layers": 0}, "loss": {"mt_text_weight": 1}},
     "loss.mt_text_weight is set but does nothing: the E2E baseline has no textual encoder"),
])
def test_the_weight_is_checked_in_one_line(conf: dict, message: str) -> None:
    with pytest.raises(SateError, match=message) as err:
        resolve_config("st", conf)
    assert "\n" not in str(err.value)
