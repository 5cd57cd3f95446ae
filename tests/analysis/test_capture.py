"""Attention capture: the hooks see every layer's weights and change nothing the model computes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from sate.analysis.capture import AttentionStore, capture_attention, cross_attention, encoder_attention
from sate.errors import SateError
from sate.models import SateModel
from sate.models.decoder import teacher_forced

SRC, TGT = 20, 24


def speech_batch() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return {"feats": torch.randn(3, 60, 80, generator=g), "feats_lengths": torch.tensor([60, 47, 31]),
            "src": torch.tensor([[3, 4, 5], [6, 7, -1], [8, -1, -1]]), "src_lengths": torch.tensor([3, 2, 1]),
            "tgt": torch.tensor([[2, 3, 4, 5], [6, 7, -1, -1], [8, 9, 10, -1]]), "tgt_lengths": torch.tensor([4, 2, 3])}


def run(model: SateModel, batch: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    """Every output the analysis relies on: encoder outputs and lengths, CTC logits, decoder logits."""
    with torch.no_grad():
        if model.task == "mt":
            memory, lengths = model.encode_text(batch["src"], batch["src_lengths"])
            extra = []
        else:
            enc = model.encode(batch["feats"], batch["feats_lengths"])
            memory, lengths, extra = enc.memory, enc.memory_lengths, [enc.ctc_logits, enc.ctc_lengths]
        if getattr(model, "decoder", None) is not None:
            extra.append(teacher_forced(model.decoder, memory, lengths, batch["tgt"], batch["tgt_lengths"])[0])
    return [memory, lengths, *extra]


@pytest.mark.parametrize("name", ["asr", "mt", "st", "st_shrink", "st_baseline"])
def test_capture_leaves_outputs_identical(name: str, tiny_model: Callable[..., SateModel]) -> None:
    model = tiny_model(name, SRC, TGT)
    batch = speech_batch()
    plain = run(model, batch)
    store = AttentionStore()
    modules = {**encoder_attention(model), **cross_attention(model)}
    with capture_attention(modules, store):
        captured = run(model, batch)
    assert all(torch.equal(a, b) for a, b in zip(plain, captured, strict=True))
    assert all(not m._forward_hooks for m in modules.values())  # hooks are gone after the block
    assert torch.equal(run(model, batch)[0], plain[0])
    encoders = {"asr": ["acoustic"], "mt": ["textual"], "st_baseline": ["acoustic"]}.get(name, ["acoustic", "textual"])
    decoder_layers = {"asr": 0, "st_shrink": 3}.get(name, 2)  # the tiny ASR model is CTC-only
    expected = {(e, k) for e in encoders for k in (1, 2)} | {("cross", k) for k in range(1, decoder_layers + 1)}
    assert set(store.maps) == expected


def test_captured_weights_are_the_softmax_over_real_keys(tiny_model: Callable[..., SateModel]) -> None:
    model = tiny_model("st_shrink", SRC, TGT)
    batch = speech_batch()
    seen: dict = {}
    with capture_attention(encoder_attention(model), lambda key, attn, mask: seen.setdefault(key, (attn, mask))):
        enc = model.encode(batch["feats"], batch["feats_lengths"])
    for (encoder, _), (attn, mask) in seen.items():
        lengths = enc.ctc_lengths if encoder == "acoustic" else enc.memory_lengths
        assert mask.sum(-1).tolist() == lengths.tolist()
        heads, size = attn.size(1), attn.size(-1)
        assert attn.shape == (3, heads, size, size) and heads == 2
        for b, n in enumerate(lengths.tolist()):
            assert torch.allclose(attn[b, :, :n, :n].sum(-1), torch.ones(heads, n))
            assert not attn[b, :, :, n:].any()  # padded keys get nothing


def test_fused_attention_is_refused(tiny_model: Callable[..., SateModel]) -> None:
    model = tiny_model("mt", SRC, TGT)
    modules = encoder_attention(model)
    modules[("textual", 2)].use_sdpa = True
    with pytest.raises(SateError, match="textual layer 2 uses fused attention"):
        with capture_attention(modules, AttentionStore()):
            pass
    assert all(not m._forward_hooks for m in modules.values())
