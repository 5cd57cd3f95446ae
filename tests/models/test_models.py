"""The three models end to end: losses, gradients, shapes, masks, and what decoding uses."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import torch

from sate.errors import SateError
from sate.models import ASRModel, MTModel, STModel, ctc_greedy


def _check_step(model: torch.nn.Module, batch: dict[str, Any], expected: set[str]) -> dict[str, Any]:
    out = model(batch)
    assert set(out) == expected | {"loss"}
    assert out["loss"].dim() == 0 and torch.isfinite(out["loss"])
    assert all(isinstance(out[k], float) for k in expected)
    out["loss"].backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    return out


def test_asr_ctc_only_step(build: Callable[..., Any], batch: dict[str, Any]) -> None:
    model = build("asr")
    assert isinstance(model, ASRModel) and model.decoder is None
    out = _check_step(model, batch, {"loss_ctc"})
    assert out["loss"].item() == pytest.approx(out["loss_ctc"])


def test_asr_hybrid_step_weights_ctc(build: Callable[..., Any], batch: dict[str, Any]) -> None:
    model = build("asr", decoder={"layers": 1, "heads": 2, "ffn": 32}, loss={"ctc_weight": 0.4})
    out = _check_step(model, batch, {"loss_ctc", "loss_ce", "acc"})
    assert out["loss"].item() == pytest.approx(0.6 * out["loss_ce"] + 0.4 * out["loss_ctc"], rel=1e-5)
    assert model.eos == model.src_vocab_size - 1


def test_mt_step_and_text_batches_without_feats(build: Callable[..., Any], batch: dict[str, Any]) -> None:
    model = build("mt")
    assert isinstance(model, MTModel)
    text_batch = {k: batch[k] for k in ("src", "src_lengths", "tgt", "tgt_lengths", "ids")}
    _check_step(model, text_batch, {"loss_ce", "acc"})
    assert model.eos == model.tgt_vocab_size - 1


@pytest.mark.parametrize("adaptor", [{"type": t} for t in ("linear", "soft", "league", "gated", "inter")]
                         + [{"type": "shrink", "shrink_mode": m} for m in ("soft", "league")])
def test_st_step_for_every_adaptor(build: Callable[..., Any], batch: dict[str, Any], adaptor: dict) -> None:
    model = build("st", adaptor=adaptor, loss={"ctc_weight": 0.25})
    assert isinstance(model, STModel)
    out = _check_step(model, batch, {"loss_ce", "loss_ctc", "acc"})
    assert out["loss"].item() == pytest.approx(0.75 * out["loss_ce"] + 0.25 * out["loss_ctc"], rel=1e-5)


def test_transformer_acoustic_encoder_and_espnet_frontend(build: Callable[..., Any], batch: dict[str, Any]) -> None:
    acoustic = {"type": "transformer", "layers": 1, "heads": 2, "ffn": 32, "frontend_channels": None}
    model = build("st", acoustic=acoustic)
    assert model.acoustic.encoder.embed.conv[0].out_channels == 16  # ESPnet's default: d_model channels
    _check_step(model, batch, {"loss_ce", "loss_ctc", "acc"})


def test_encode_shapes_and_subsampled_lengths(build: Callable[..., Any], batch: dict[str, Any]) -> None:
    model = build("st").eval()
    assert model.acoustic.encoder.embed.conv[0].out_channels == 4  # frontend_channels
    enc = model.encode(batch["feats"], batch["feats_lengths"])
    frames = ((48 - 1) // 2 - 1) // 2  # ESPnet's conv2d: 4x; exact for the longest utterance
    assert enc.ctc_lengths[0] == frames and (enc.ctc_lengths <= frames).all()
    assert enc.ctc_logits.shape == (3, frames, model.src_vocab_size)
    assert enc.memory.shape == (3, frames, 16)
    assert torch.equal(enc.memory_lengths, enc.ctc_lengths)


@pytest.mark.parametrize("adaptor", [{"type": "league"}, {"type": "shrink"}, {"type": "shrink", "keep_blank": True}])
def test_padding_does_not_leak_through_adaptor_and_textual_encoder(build: Callable[..., Any], adaptor: dict) -> None:
    """Our masks work: garbage in padded acoustic frames changes nothing for the valid ones.

    (ESPnet's acoustic encoder itself is not padding-invariant: its subsampled lengths may count
    one extra frame for padded utterances, and the Conformer convolution sees padded frames.)
    """
    model = build("st", adaptor=adaptor).eval()
    g = torch.Generator().manual_seed(1)
    h = torch.randn(2, 9, 16, generator=g)
    logits = torch.randn(2, 9, model.src_vocab_size, generator=g) * 3
    lengths = torch.tensor([9, 6])
    emb = model.src_embed.weight

    def run(h: torch.Tensor, logits: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            return model.textual(*model.adaptor(h, lengths, logits, emb))

    both, both_lengths = run(h, logits, lengths)
    alone, alone_lengths = run(h[1:, :6], logits[1:, :6], lengths[1:])
    n = int(alone_lengths[0])
    assert int(both_lengths[1]) == n
    assert torch.allclose(both[1, :n], alone[0, :n], atol=1e-5)


def test_ctc_greedy_merges_repeats_and_drops_blanks() -> None:
    labels = torch.tensor([[0, 3, 3, 0, 3, 4, 4, 5], [2, 2, 0, 6, 6, 6, 6, 6]])
    logits = torch.nn.functional.one_hot(labels, 8).float()
    assert ctc_greedy(logits, torch.tensor([7, 4])) == [[3, 3, 4], [2, 6]]


def test_decoder_scores_through_espnet_scorer_interface(build: Callable[..., Any], batch: dict[str, Any]) -> None:
    """Beam search drives ESPnet's batch_score; its first step equals the teacher-forced logits."""
    from sate.models.decoder import teacher_forced

    model = build("st").eval()
    with torch.no_grad():
        enc = model.encode(batch["feats"][:1], batch["feats_lengths"][:1])
        ys = torch.tensor([[model.eos]])
        logp, _ = model.decoder.batch_score(ys, [None], enc.memory)
        logits, _ = teacher_forced(model.decoder, enc.memory, enc.memory_lengths,
                                   batch["tgt"][:1], batch["tgt_lengths"][:1])
    assert torch.allclose(logp[0], torch.log_softmax(logits[0, 0], -1), atol=1e-5)



ENCODE_ENTRIES = [("asr", "encode"), ("mt", "encode_text"), ("st", "encode"), ("st", "encode_text")]


def _entry(build: Callable[..., Any], batch: dict[str, Any], task: str,
           method: str) -> tuple[Callable[..., Any], str, torch.Tensor, torch.Tensor]:
    """The model's encode entry (a soft ST model has the source embedding encode_text needs), its input's key, x
    and lengths."""
    model = (build(task, adaptor={"type": "soft"}) if task == "st" else build(task)).eval()
    key = "src" if method == "encode_text" else "feats"
    return getattr(model, method), key, batch[key], batch[f"{key}_lengths"]


@pytest.mark.parametrize(("task", "method"), ENCODE_ENTRIES)
def test_negative_lengths_or_not_whole_numbers_are_one_line(build: Callable[..., Any], batch: dict[str, Any],
                                                             task: str, method: str) -> None:
    """A negative length was decoded beside the others (`[9, -3, 4]`) or an IndexError when all were, and float
    lengths a TypeError of torch.ones (review28e); the line names the argument and the first bad item. An empty item
    (length 0) is encoded as before, beside others or alone (review28z: an MT dev row whose source is "(Applause)"
    stopped the run at its first validation)."""
    encode, key, x, lengths = _entry(build, batch, task, method)
    for values, first, at in (([4, 0, -3], -3, 2), ([-1, -2, -3], -1, 0)):
        with pytest.raises(SateError, match=rf"^{key}_lengths holds {first} at item {at}; a length cannot be "
                                            r"negative$"):
            encode(x, torch.tensor(values))
    full = lengths.tolist()
    with torch.no_grad():
        for values in ([full[0], 0, *full[2:]], [0] * len(full)):
            if values[0] == 0 and key == "feats":  # empty speech alone: one padding frame is too short to encode
                with pytest.raises(SateError, match=r"^every item of feats is empty \(its feats_lengths are all 0\)"):
                    encode(x, torch.tensor(values))
                continue
            out = encode(x, torch.tensor(values))
            memory = out.memory if hasattr(out, "memory") else out[0]
            assert torch.isfinite(memory).all()
    with pytest.raises(SateError, match=rf"^{key}_lengths must be a 1-d tensor of whole numbers, one length per item "
                                        rf"of {key}; got torch.float32 of shape \(3,\)$"):
        encode(x, lengths.float())
    with torch.no_grad():
        encode(x, lengths.int())  # int32 lengths are whole numbers too


def test_an_empty_text_item_reads_the_same_beside_any_batch(build: Callable[..., Any], batch: dict[str, Any]) -> None:
    """An empty source (a dev row of "(Applause)" alone) beside others was read over the batch's whole width (ESPnet's
    pad mask of a length 0), so its memory and an MT dev loss depended on how wide a batch it fell in, and
    `encode_text` gave it the width as its length (thirtieth hostile pass): it is one padding token, as alone."""
    model = build("mt").eval()
    src, lengths = batch["src"], batch["src_lengths"]
    long, short = int(lengths.argmax()), int(lengths.argmin())
    assert lengths[long] > lengths[short]
    memories = []
    with torch.no_grad():
        for other in (long, short):
            pair = torch.full((2, int(lengths[other])), -1, dtype=torch.long)
            pair[0] = src[other, :int(lengths[other])]
            memory, out_lengths = model.encode_text(pair, torch.tensor([int(lengths[other]), 0]))
            assert out_lengths.tolist() == [int(lengths[other]), 1]
            memories.append(memory[1, 0])
        alone, alone_lengths = model.encode_text(torch.full((1, 3), -1, dtype=torch.long), torch.tensor([0]))
    assert alone_lengths.tolist() == [1]
    assert torch.allclose(memories[0], memories[1], atol=1e-5) and torch.allclose(memories[0], alone[0, 0], atol=1e-5)


def test_a_collated_batch_of_empty_sources_alone_is_one_padding_token_each(build: Callable[..., Any]) -> None:
    """`collate` pads a batch whose every source is empty to width 0: MT dev rows of "(Applause)" alone, whose short
    targets ("(Applaus)") put them in one validation batch, stopped an MT run at its first validation with "every
    item of src is empty ... nothing to encode" (32nd hostile pass), where a wider padded batch of them is encoded as
    one padding token each (review28z). The same for the MT teacher of an ST batch whose transcripts are empty."""
    from sate.data.dataset import collate

    empty = torch.zeros(0, dtype=torch.long)
    batch = collate([{"id": f"a{i}", "src": empty, "tgt": torch.tensor(tgt)} for i, tgt in enumerate([[3, 4], [5]])])
    assert batch["src"].shape == (2, 0)
    model = build("mt").eval()
    wider = {**batch, "src": torch.full((2, 1), -1)}
    with torch.no_grad():
        assert model(batch)["loss"].item() == pytest.approx(model(wider)["loss"].item())
        memory, lengths = model.encode_text(batch["src"], batch["src_lengths"])
    assert memory.shape[:2] == (2, 1) and lengths.tolist() == [1, 1] and torch.isfinite(memory).all()


@pytest.mark.parametrize(("task", "method"), ENCODE_ENTRIES)
def test_one_item_without_its_batch_dimension_is_named_so(build: Callable[..., Any], batch: dict[str, Any],
                                                          task: str, method: str) -> None:
    """One utterance's (T, 80) features without their batch dimension were "longer than feats's 80 positions" (the
    mel bins) or a size error of torch's convolution (review28e); the line says what to give. One item with its
    batch dimension encodes."""
    encode, key, x, lengths = _entry(build, batch, task, method)
    one = x[0, :int(lengths[0])]
    with pytest.raises(SateError, match=rf"^{key} of shape {re.escape(str(tuple(one.shape)))} lacks its batch "
                                        rf"dimension: one item is {key}\[None\], with its length alone in {key}_"):
        encode(one, lengths[:1])
    with pytest.raises(SateError, match=rf"^{key} holds 3 items \(its first dimension\) but {key}_lengths 2 "
                                        r"lengths; give one length per item$"):
        encode(x, lengths[:2])
    with torch.no_grad():
        encode(one[None], lengths[:1])
