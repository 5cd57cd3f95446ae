"""Adaptor types, CTC compression and the positional re-add in front of the textual encoder."""

from __future__ import annotations

import math

import pytest
import torch

from sate.models.adaptor import ADAPTORS, LeagueAdaptor, ShrinkAdaptor, SoftAdaptor, build_adaptor
from sate.models.config import resolve_config
from sate.models.espnet_blocks import PositionalEncoding
from sate.models.registry import ADAPTOR_TYPES
from sate.models.shrink import ctc_shrink

D, V = 8, 6


def _inputs(lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    t = max(lengths)
    return (torch.randn(len(lengths), t, D, generator=g), torch.tensor(lengths),
            torch.randn(len(lengths), t, V, generator=g), torch.randn(V, D, generator=g))


def _adaptor(kind: str, **extra: object) -> torch.nn.Module:
    conf = resolve_config("st", {"d_model": D, "acoustic": {"heads": 2}, "textual": {"heads": 2},
                                 "decoder": {"heads": 2}, "adaptor": {"type": kind, **extra}})
    return build_adaptor(conf.adaptor, D).eval()


@pytest.mark.parametrize("kind", ["linear", "soft", "league", "gated", "inter"])
def test_frame_level_adaptors_keep_shape_and_lengths(kind: str) -> None:
    h, lengths, logits, emb = _inputs([5, 3])
    out, out_lengths = _adaptor(kind)(h, lengths, logits, emb)
    assert out.shape == (2, 5, D)
    assert torch.equal(out_lengths, lengths)
    assert torch.isfinite(out).all()


def test_adaptor_formulas() -> None:
    h, lengths, logits, emb = _inputs([4])
    soft = torch.softmax(logits / 2.0, -1) @ emb
    soft_adaptor = _adaptor("soft", temperature=2.0)
    assert torch.allclose(soft_adaptor(h, lengths, logits, emb)[0], soft, atol=1e-6)
    league = _adaptor("league", temperature=2.0)
    linear = torch.relu(league.linear[1](league.linear[0](h)))
    assert torch.allclose(league(h, lengths, logits, emb)[0], linear + soft, atol=1e-6)
    inter = _adaptor("inter", temperature=2.0)
    assert torch.allclose(inter(h, lengths, logits, emb)[0], h + soft, atol=1e-6)
    gated = _adaptor("gated", temperature=2.0)
    lin = torch.relu(gated.linear[1](gated.linear[0](h)))
    g = torch.sigmoid(gated.gate(torch.cat([lin, soft], -1)))
    assert torch.allclose(gated(h, lengths, logits, emb)[0], g * lin + (1 - g) * soft, atol=1e-6)


def _logits_for(paths: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """CTC logits whose greedy path is `paths` (padded with label 5 to test masking)."""
    t = max(map(len, paths))
    labels = torch.full((len(paths), t), 5)
    for i, p in enumerate(paths):
        labels[i, : len(p)] = torch.tensor(p)
    return torch.nn.functional.one_hot(labels, V).float() * 10, torch.tensor([len(p) for p in paths])


def test_shrink_lengths_and_averages_on_a_hand_made_path() -> None:
    # utt 0: blank a a blank blank b b a  -> segments a | b | a  (blanks dropped)
    # utt 1: c c c                         -> c
    # utt 2: blank blank                   -> all blank: one segment, mean of both frames
    paths = [[0, 2, 2, 0, 0, 3, 3, 2], [4, 4, 4], [0, 0]]
    logits, lengths = _logits_for(paths)
    h = torch.arange(3 * 8, dtype=torch.float).view(3, 8, 1).expand(3, 8, D).contiguous()
    out, out_logits, out_lengths = ctc_shrink(h, logits, lengths)
    assert out_lengths.tolist() == [3, 1, 1]
    assert out.shape == (3, 3, D) and out_logits.shape == (3, 3, V)
    assert out[0, :, 0].tolist() == [1.5, 5.5, 7.0]
    assert out[1, 0, 0].item() == 9.0
    assert out[2, 0, 0].item() == 16.5
    assert out[1, 1:].abs().sum() == 0 and out[2, 1:].abs().sum() == 0
    assert out_logits[0].argmax(-1).tolist() == [2, 3, 2]


def test_shrink_keep_blank_keeps_blank_segments() -> None:
    logits, lengths = _logits_for([[0, 2, 2, 0, 0, 3, 3, 2]])
    h = torch.arange(8, dtype=torch.float).view(1, 8, 1).expand(1, 8, D)
    out, _, out_lengths = ctc_shrink(h, logits, lengths, keep_blank=True)
    assert out_lengths.tolist() == [5]
    assert out[0, :, 0].tolist() == [0.0, 1.5, 3.5, 5.5, 7.0]


@pytest.mark.parametrize("mode", ["soft", "league"])
def test_shrink_adaptor_output(mode: str) -> None:
    logits, lengths = _logits_for([[0, 2, 2, 0, 3], [1, 1, 0]])
    h = torch.randn(2, 5, D)
    emb = torch.randn(V, D)
    adaptor = _adaptor("shrink", shrink_mode=mode)
    assert isinstance(adaptor, ShrinkAdaptor)
    assert type(adaptor.inner) is {"soft": SoftAdaptor, "league": LeagueAdaptor}[mode]
    out, out_lengths = adaptor(h, lengths, logits, emb)
    assert out_lengths.tolist() == [2, 1]
    assert out.shape == (2, 2, D)
    pooled, pooled_logits, _ = ctc_shrink(h, logits, lengths)
    assert torch.allclose(out, adaptor.inner(pooled, out_lengths, pooled_logits, emb)[0])


def test_shrink_gradients_reach_frames_of_kept_segments_only() -> None:
    logits, lengths = _logits_for([[0, 2, 2, 0]])
    h = torch.randn(1, 4, D, requires_grad=True)
    out, _, _ = ctc_shrink(h, logits, lengths)
    out.sum().backward()
    assert h.grad[0, :, 0].tolist() == [0.0, 0.5, 0.5, 0.0]


def test_shrink_pools_states_and_logits_of_mixed_precision() -> None:
    """Under CUDA autocast (trainer.precision auto on a GPU: bf16-mixed or 16-mixed) the acoustic states come out of a
    LayerNorm, which autocast runs in float32, and the CTC logits out of a Linear, in bf16 or fp16: scatter_add refused
    the pair ("Expected self.dtype to be equal to src.dtype"), a traceback at every shrink training step (30th hostile
    pass). Each comes back in its own dtype, pooled as in float32."""
    logits, lengths = _logits_for([[0, 2, 2, 0, 0, 3, 3, 2], [4, 4, 4]])
    h = torch.randn(2, 8, D)
    want_h, want_logits, want_lengths = ctc_shrink(h, logits, lengths)
    for low in (torch.bfloat16, torch.float16):
        out, out_logits, out_lengths = ctc_shrink(h, logits.to(low), lengths)
        assert out.dtype == torch.float32 and out_logits.dtype == low and out_lengths.tolist() == want_lengths.tolist()
        torch.testing.assert_close(out, want_h)
        torch.testing.assert_close(out_logits.float(), want_logits, rtol=1e-2, atol=1e-2)


def test_positions_are_re_added_before_the_textual_encoder() -> None:
    """The textual encoder's first layer sees √d·A + PE, so equal vectors at two positions differ."""
    from sate.models.textual import TextualEncoder

    conf = resolve_config("mt", {"d_model": D, "textual": {"heads": 2, "layers": 1}, "decoder": {"heads": 2}})
    textual = TextualEncoder(conf.textual, D).eval()
    seen = []
    textual.encoder.encoders[0].register_forward_pre_hook(lambda _m, args: seen.append(args[0]))
    a = torch.ones(1, 3, D)
    textual(a, torch.tensor([3]))
    pe = PositionalEncoding(D, 0.0)
    pe.extend_pe(a)
    assert torch.allclose(seen[0], math.sqrt(D) * a + pe.pe[:, :3], atol=1e-6)
    assert not torch.allclose(seen[0][0, 0], seen[0][0, 1])


def test_unknown_adaptor_kind_is_rejected_by_the_config() -> None:
    from sate.errors import SateError

    with pytest.raises(SateError, match="adaptor.type must be one of"):
        _adaptor("context")


def test_every_adaptor_type_has_one_module_with_the_branches_the_config_says() -> None:
    """The module registry and the config's registry name the same adaptors (none has no module), and each
    module has the branches that decide which adaptor keys the config accepts."""
    assert set(ADAPTORS) == set(ADAPTOR_TYPES) - {"none"}
    for name, kind in ADAPTOR_TYPES.items():
        if name == "none":
            continue
        module = _adaptor(name)  # shrink with its default shrink_mode, league
        inner, inner_kind = (module.inner, ADAPTOR_TYPES["league"]) if kind.shrinks else (module, kind)
        assert hasattr(inner, "linear") == inner_kind.linear, name
        assert isinstance(inner, SoftAdaptor) == inner_kind.soft, name
