"""Greedy decoding: beam search with a beam of 1, one argmax per step for the whole batch.

Used for validation BLEU during training. Each utterance stops at its own eos or at
``ceil(max_len_ratio x`` its encoder length) tokens, whichever comes first.
"""

from __future__ import annotations

from sate.decode.beam_search import DecodeOptions, beam_search
from sate.models.base import SateModel


def greedy_decode(model: SateModel, batch: dict, max_len_ratio: float = 1.5) -> list[list[int]]:
    """Target token ids (without sos/eos) for every utterance of `batch`."""
    hyps = beam_search(model, batch, DecodeOptions(beam=1, lenpen=0.0, max_len_ratio=max_len_ratio))
    return [nbest[0].tokens for nbest in hyps]
