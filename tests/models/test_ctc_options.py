"""The `ctc` section: dropout with separate masks for loss and adaptor, a bias-free head, CTC on a lower layer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from sate.errors import SateError
from sate.models.build import build_model
from sate.models.config import resolve_config
from sate.models.ctc import draws_new_mask
from sate.models.model_file import save_model_file
from sate.models.pretrained import initialize
from sate.models.tiny import tiny_config

Build = Callable[..., Any]
REFERENCE_CTC = {"dropout": 0.5, "bias": False}
TWO_LAYERS = {"layers": 2, "heads": 2, "ffn": 32, "kernel": 3, "dropout": 0.0, "frontend_channels": 4}


def adaptor_posterior_logits(model: torch.nn.Module, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """(the CTC logits the loss sees, those the adaptor got) from one encoder pass."""
    seen: list[torch.Tensor] = []
    handle = model.adaptor.register_forward_pre_hook(lambda _m, args: seen.append(args[2]))
    try:
        enc = model.encode(batch["feats"], batch["feats_lengths"])
    finally:
        handle.remove()
    return enc.ctc_logits, seen[0]


def test_defaults_are_espnets_head(build: Build) -> None:
    model = build("st")
    assert model.ctc.ctc_lo.bias is not None and not draws_new_mask(model.ctc.train())
    assert "ctc.ctc_lo.bias" in model.state_dict()


def test_bias_free_head_starts_like_fairseqs(build: Build) -> None:
    model = build("st", ctc=REFERENCE_CTC)
    assert model.ctc.ctc_lo.bias is None and "ctc.ctc_lo.bias" not in model.state_dict()
    assert model.ctc.ctc_lo.weight.std().item() == pytest.approx(16**-0.5, rel=0.2)


def test_loss_and_adaptor_get_separate_dropout_masks_in_training_only(
        batch: dict[str, Any], src_tokens: list[str], tgt_tokens: list[str]) -> None:
    conf = tiny_config("st", 16, kernel=3, dropout=0.0)  # only the CTC dropout is random
    conf |= {"ctc": REFERENCE_CTC, "adaptor": {"type": "league", "dropout": 0.0}}
    torch.manual_seed(0)
    model = build_model("st", conf, len(src_tokens), len(tgt_tokens))
    loss_logits, adaptor_logits = adaptor_posterior_logits(model.train(), batch)
    assert not torch.allclose(loss_logits, adaptor_logits)
    loss_logits, adaptor_logits = adaptor_posterior_logits(model.eval(), batch)
    assert adaptor_logits is loss_logits  # eval: one projection serves both


def test_without_dropout_one_projection_serves_loss_and_adaptor(build: Build, batch: dict[str, Any]) -> None:
    loss_logits, adaptor_logits = adaptor_posterior_logits(build("st").train(), batch)
    assert adaptor_logits is loss_logits


def test_reference_head_trains(build: Build, batch: dict[str, Any]) -> None:
    model = build("st", ctc=REFERENCE_CTC)
    out = model(batch)
    out["loss"].backward()
    assert model.ctc.ctc_lo.weight.grad is not None and torch.isfinite(out["loss"])


def test_ctc_on_a_lower_layer_reads_that_layer_and_the_layers_above_continue(
        build: Build, batch: dict[str, Any]) -> None:
    top = build("st", seed=3, acoustic=TWO_LAYERS, adaptor={"type": "none"}, textual={"layers": 0}).eval()
    low = build("st", seed=3, acoustic=TWO_LAYERS, adaptor={"type": "none"}, textual={"layers": 0},
                ctc={"layer": 1}).eval()
    layer_one: list[torch.Tensor] = []
    low.acoustic.encoder.encoders[0].register_forward_hook(
        lambda _m, _i, out: layer_one.append(out[0][0] if isinstance(out[0], tuple) else out[0]))
    with torch.no_grad():
        a = top.encode(batch["feats"], batch["feats_lengths"])
        b = low.encode(batch["feats"], batch["feats_lengths"])
        expected = low.ctc.ctc_lo(low.acoustic.encoder.after_norm(layer_one[0]))
    assert torch.allclose(a.memory, b.memory, atol=1e-6)  # the same encoder: the top output does not change
    assert torch.allclose(b.ctc_logits, expected, atol=1e-6) and not torch.allclose(a.ctc_logits, b.ctc_logits)


@pytest.mark.parametrize("changes", [
    {"adaptor": {"type": "none"}, "textual": {"layers": 0}},  # the E2E ST baseline (the paper's Fig. 1b)
    {"adaptor": {"type": "linear"}},  # no CTC posteriors in the adaptor
])
def test_st_with_ctc_below_the_top_trains(build: Build, batch: dict[str, Any], changes: dict) -> None:
    model = build("st", acoustic=TWO_LAYERS, ctc={"layer": 1}, **changes)
    out = model(batch)
    out["loss"].backward()
    assert all(p.grad is not None for p in model.acoustic.parameters())  # the upper layer trains too


def test_hybrid_asr_with_ctc_below_the_top_trains(build: Build, batch: dict[str, Any]) -> None:
    model = build("asr", acoustic=TWO_LAYERS, ctc={"layer": 1}, decoder={"layers": 1, "heads": 2, "ffn": 32})
    model(batch)["loss"].backward()
    assert all(p.grad is not None for p in model.acoustic.parameters())


@pytest.mark.parametrize(("task", "conf", "message"), [
    ("st", {"ctc": {"layer": 3}}, "above the top acoustic layer"),
    ("asr", {"ctc": {"layer": 1}}, "CTC-only ASR model would leave acoustic layers 2-2 untrained"),
    ("st", {"ctc": {"layer": 1}}, "does not combine with adaptor.type league"),
    ("st", {"ctc": {"layer": 1}, "adaptor": {"type": "shrink"}}, "does not combine with adaptor.type shrink"),
    ("st", {"ctc": {"layer": 0}}, "null \\(the top layer\\) or at least 1"),
    ("st", {"ctc": {"dropout": 1.0}}, "ctc.dropout must be in"),
])
def test_ctc_layer_refusals(task: str, conf: dict, message: str) -> None:
    with pytest.raises(SateError, match=message):
        resolve_config(task, {"acoustic": {"layers": 2}, **conf})


def test_ctc_at_the_top_layer_named_explicitly_is_the_default_model(build: Build) -> None:
    assert resolve_config("asr", {"acoustic": {"layers": 2}, "ctc": {"layer": 2}}).ctc.layer == 2
    assert build("st", acoustic=TWO_LAYERS, ctc={"layer": 2}).acoustic.encoder.interctc_layer_idx == []


def test_a_bias_free_head_refuses_a_biased_one(build: Build, files: dict[str, Any], src_tokens: list[str],
                                               tgt_tokens: list[str]) -> None:
    """The setting that differs is named, as every other is, not the weight it leaves over (28th hostile pass)."""
    with pytest.raises(SateError, match=r"asr.pt: ctc.bias: checkpoint True, ours False$"):
        initialize(build("st", ctc=REFERENCE_CTC), {"ctc": {"path": files["asr_path"]}}, src_tokens, tgt_tokens,
                   log=lambda _line: None)


def test_a_biased_head_refuses_a_bias_free_one_by_the_setting(tmp_path: Path, build: Build, src_tokens: list[str],
                                                              tgt_tokens: list[str]) -> None:
    """`--init-from asr=` an ASR model trained with ``ctc.bias: false`` into the default ST config named
    "missing from checkpoint: ctc_lo.bias", a weight, not the key to set (28th hostile pass)."""
    save_model_file(tmp_path / "asr.pt", build("asr", ctc={"bias": False}), src_tokens, tgt_tokens)
    with pytest.raises(SateError, match=r"ctc.bias: checkpoint False, ours True$"):
        initialize(build("st"), {"ctc": {"path": str(tmp_path / "asr.pt")}}, src_tokens, tgt_tokens,
                   log=lambda _line: None)
    st = build("st", ctc={"bias": False, "dropout": 0.3})  # the same head with another dropout loads
    initialize(st, {"ctc": {"path": str(tmp_path / "asr.pt")}}, src_tokens, tgt_tokens, log=lambda _line: None)


def test_an_encoder_with_ctc_below_the_top_starts_from_an_asr_model_with_ctc_on_top(
        tmp_path: Path, build: Build, src_tokens: list[str], tgt_tokens: list[str]) -> None:
    asr = build("asr", seed=4, acoustic=TWO_LAYERS)
    save_model_file(tmp_path / "asr.pt", asr, src_tokens, tgt_tokens)
    st = build("st", acoustic=TWO_LAYERS, ctc={"layer": 1}, adaptor={"type": "none"}, textual={"layers": 0})
    path = str(tmp_path / "asr.pt")
    initialize(st, {"acoustic": {"path": path}, "ctc": {"path": path}}, src_tokens, tgt_tokens,
               log=lambda _line: None)
    assert torch.equal(st.ctc.ctc_lo.weight, asr.ctc.ctc_lo.weight)


@pytest.mark.slow  # two models built, saved and loaded a case
@pytest.mark.parametrize(("file_layer", "our_layer"), [(None, 2), (2, None)])
def test_a_whole_model_with_ctc_on_top_loads_however_the_top_is_written(
        tmp_path: Path, build: Build, src_tokens: list[str], tgt_tokens: list[str], file_layer: int | None,
        our_layer: int | None) -> None:
    """``ctc.layer: null`` is the top layer: `init: model:` of an ST model with one spelling into a config of the other
    was refused as `ctc.layer: checkpoint None, ours 2` (28th hostile pass). CTC on another layer is still named, the
    top as the top ("checkpoint None" did not say it: review), and an encoder of another depth by its depth alone."""
    baseline = {"adaptor": {"type": "none"}, "textual": {"layers": 0}}
    model = build("st", seed=5, acoustic=TWO_LAYERS, ctc={"layer": file_layer}, **baseline)
    save_model_file(tmp_path / "st.pt", model, src_tokens, tgt_tokens)
    init = {"model": {"path": str(tmp_path / "st.pt")}}
    ours = build("st", acoustic=TWO_LAYERS, ctc={"layer": our_layer}, **baseline)
    initialize(ours, init, src_tokens, tgt_tokens, log=lambda _line: None)
    assert torch.equal(ours.ctc.ctc_lo.weight, model.ctc.ctc_lo.weight)
    with pytest.raises(SateError, match=r"st.pt: ctc.layer: checkpoint 2 \(the top\), ours 1$"):
        initialize(build("st", acoustic=TWO_LAYERS, ctc={"layer": 1}, **baseline), init, src_tokens, tgt_tokens,
                   log=lambda _line: None)
    with pytest.raises(SateError, match=r"st.pt: acoustic.layers: checkpoint 2, ours 3$"):
        initialize(build("st", acoustic={**TWO_LAYERS, "layers": 3}, **baseline), init, src_tokens, tgt_tokens,
                   log=lambda _line: None)
