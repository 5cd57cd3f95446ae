"""Greedy continuation of a committed prefix: from nothing it is the offline greedy search; from any prefix of that
output it gives the rest; a veto stops it. On our decoder and on a Marian one (sos, eos and a banned pad of its
own, post-LN layers). The prefix goes in in one pass: the same caches and next step as one step per token. The
beam search with a forced prefix keeps it, scores it as part of the hypothesis, and at beam 1 is the greedy
continuation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from sate.data.marian_vocab import marian_pieces
from sate.decode.beam_search import DecodeOptions, decode_memory
from sate.decode.prefix import PrefixDecoder, complete, continue_prefix
from sate.models import build_model
from sate.models.base import SateModel
from sate.models.decoder import token_conventions
from sate.models.hub.load import load_hub_parts

GREEDY = DecodeOptions(beam=1, lenpen=0.0, max_len_ratio=1.5)


def _check(model: SateModel, memory: torch.Tensor, lengths: torch.Tensor) -> None:
    hyps = decode_memory(model.decoder, memory, lengths, model.eos, GREEDY)
    assert min(len(nbest[0].tokens) for nbest in hyps) >= 3  # long enough for every check below
    for i in sorted({0, len(hyps) // 2, len(hyps) - 1}):
        one = memory[i:i + 1, : int(lengths[i])]
        greedy = hyps[i][0].tokens
        assert continue_prefix(model, one, [], GREEDY).tokens == greedy
        for cut in sorted({1, len(greedy) // 2, len(greedy)}):
            rest = continue_prefix(model, one, greedy[:cut], GREEDY)
            assert rest.tokens == greedy[cut:] and rest.complete
        two = continue_prefix(model, one, [], GREEDY, limit=2)
        assert two.tokens == greedy[:2]
        assert not two.complete  # stopped by the limit, not by eos
        seen: list[list[torch.Tensor]] = []

        def third_is_vetoed(weights: list[torch.Tensor], seen: list[list[torch.Tensor]] = seen) -> bool:
            seen.append(weights)
            return len(seen) < 3

        vetoed = continue_prefix(model, one, [], GREEDY, accept=third_is_vetoed)
        assert vetoed.tokens == greedy[:2] and not vetoed.complete
        layers = len(model.decoder.decoders)
        assert all(len(w) == layers and w[0].shape[-1] == one.size(1) for w in seen)
        for weights in seen[:1]:  # a distribution over the memory positions
            torch.testing.assert_close(weights[0].sum(-1), torch.ones_like(weights[0].sum(-1)))
        _check_feed(model, one, greedy)
        _check_forced(model, one)


def _check_feed(model: SateModel, memory: torch.Tensor, greedy: list[int]) -> None:
    """`feed` over sos + a prefix leaves the caches that one `step` per token leaves, and the same next step."""
    sos = token_conventions(model.decoder)[0]
    lengths = torch.tensor([memory.size(1)])
    for cut in sorted({1, len(greedy) // 2, len(greedy) - 1}):
        history = [sos, *greedy[:cut]]
        parallel, steps = (PrefixDecoder(model.decoder, memory, lengths, 1, 64) for _ in range(2))
        with torch.no_grad():
            parallel.feed(history[:-1])
            for position, token in enumerate(history[:-1]):
                steps.step(torch.tensor([token]), position)
            assert parallel.self_kv is not None and steps.self_kv is not None
            for (k1, v1), (k2, v2) in zip(parallel.self_kv, steps.self_kv, strict=True):
                assert k1.shape == k2.shape == (1, k1.size(1), cut, k1.size(-1))
                torch.testing.assert_close(k1, k2)
                torch.testing.assert_close(v1, v2)
            last = torch.tensor([history[-1]])
            a, b = parallel.step(last, cut), steps.step(last, cut)
        torch.testing.assert_close(a, b)
        assert int(a.argmax()) == int(b.argmax()) == greedy[cut]
        for w1, w2 in zip(parallel.cross_attention, steps.cross_attention, strict=True):
            torch.testing.assert_close(w1, w2)


def _check_forced(model: SateModel, memory: torch.Tensor) -> None:
    """Beam search from a forced prefix: every hypothesis starts with it; forced with the whole offline best, the
    best found scores at least as high (the prefix's log-probabilities count, and the offline best is among the
    hypotheses); at beam 1 it is `continue_prefix`, whose tokens `complete` returns."""
    lengths = torch.tensor([memory.size(1)])
    beam = DecodeOptions(beam=4, nbest=4, lenpen=1.0, max_len_ratio=1.5)
    offline = decode_memory(model.decoder, memory, lengths, model.eos, beam)[0]
    best = offline[0].tokens
    greedy = decode_memory(model.decoder, memory, lengths, model.eos, GREEDY)[0][0].tokens
    for cut in sorted({1, len(best) // 2, len(best)}):
        prefix = best[:cut]
        forced = decode_memory(model.decoder, memory, lengths, model.eos, beam, prefix)[0]
        assert forced and all(h.tokens[:cut] == prefix for h in forced)
        assert complete(model, memory, prefix, beam) == forced[0].tokens[cut:]
    whole = decode_memory(model.decoder, memory, lengths, model.eos, beam, best)[0]
    assert whole[0].score >= offline[0].score - 1e-5
    assert decode_memory(model.decoder, memory, lengths, model.eos, beam, [])[0] == offline  # no prefix: offline
    sos, eos, banned = token_conventions(model.decoder)
    unsaid = {best[0], greedy[0], sos, eos, *banned}
    wrong = [t for t in range(model.decoder.output_layer.out_features) if t not in unsaid][-1:]
    for prefix in ([], greedy[:1], greedy[:2], wrong, [*greedy[:1], *wrong]):  # also a prefix the model would not say
        tokens = decode_memory(model.decoder, memory, lengths, model.eos, GREEDY, prefix)[0][0].tokens
        rest = continue_prefix(model, memory, prefix, GREEDY)
        assert tokens == prefix + rest.tokens
        assert complete(model, memory, prefix, GREEDY) == rest.tokens


def test_our_decoder(trained_mt: SateModel, text_batch: dict[str, Any]) -> None:
    with torch.no_grad():
        memory, lengths = trained_mt.encode_text(text_batch["src"], text_batch["src_lengths"])
    _check(trained_mt, memory, lengths)


@pytest.mark.slow
def test_a_marian_decoder(marian_dir: Path) -> None:
    pytest.importorskip("transformers")
    pieces = marian_pieces(marian_dir)
    model = build_model("mt", {"textual": {"type": "hf_marian", "path": str(marian_dir)},
                               "decoder": {"type": "hf_marian"}}, len(pieces), len(pieces))
    load_hub_parts(model, pieces, pieces, log=lambda _: None)
    src = torch.tensor([[5, 9, 12, 7, 30, 0], [14, 3, 0, -1, -1, -1]])  # eos (0) last
    with torch.no_grad():
        memory, lengths = model.eval().encode_text(src, torch.tensor([6, 3]))
    _check(model, memory, lengths)
