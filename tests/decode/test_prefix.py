"""Greedy continuation of a committed prefix: from nothing it is the offline greedy search; from any prefix of that
output it gives the rest; a veto stops it. On our decoder and on a Marian one (sos, eos and a banned pad of its
own, post-LN layers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from sate.data.marian_vocab import marian_pieces
from sate.decode.beam_search import DecodeOptions, decode_memory
from sate.decode.prefix import continue_prefix
from sate.models import build_model
from sate.models.base import SateModel
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


def test_our_decoder(trained_mt: SateModel, text_batch: dict[str, Any]) -> None:
    with torch.no_grad():
        memory, lengths = trained_mt.encode_text(text_batch["src"], text_batch["src_lengths"])
    _check(trained_mt, memory, lengths)


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
