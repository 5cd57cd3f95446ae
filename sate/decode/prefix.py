"""Greedy decoding that continues a committed prefix: the decoder step every streaming policy is built on.

A simultaneous policy re-decodes after every chunk of audio over a memory that has grown, so it cannot keep the
decoder's caches (every layer's states depend on the memory); what it keeps is the prefix it has already shown the
user. `continue_prefix` feeds that prefix to the decoder, then extends it one argmax at a time with the same
arithmetic, length limits and eos rule as the offline search at beam 1 (`sate.decode.beam_search`): with an empty
prefix and the whole input, it returns what offline greedy decoding returns (a test checks this). Each new token
can be vetoed from the source attention weights that produced it (AlignAtt).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from sate.decode.beam_search import _IncrementalDecoder, eval_mode, length_limits
from sate.decode.options import DecodeOptions
from sate.models.base import SateModel
from sate.models.decoder import token_conventions

# accept(weights): may the token just chosen be emitted? weights: per decoder layer, the step's source attention
# (1, H, 1, T) over the T memory positions.
Veto = Callable[[list[torch.Tensor]], bool]


@dataclass(frozen=True)
class Continuation:
    """New tokens after the prefix, and whether the translation is complete (eos or the maximum length)."""

    tokens: list[int]
    complete: bool


@torch.no_grad()
def continue_prefix(model: SateModel, memory: torch.Tensor, prefix: list[int], options: DecodeOptions,
                    limit: int | None = None, accept: Veto | None = None) -> Continuation:
    """Greedy tokens after `prefix` (target ids, no sos) over one utterance's memory (1, T, D).

    Stops at eos, at the maximum length (options.max_len_ratio x T), after `limit` new tokens, or before the first
    token that `accept` refuses; only the first two make the continuation complete.
    """
    decoder = model.decoder
    lengths = torch.tensor([memory.size(1)], device=memory.device)
    min_len, max_len = (int(v) for v in length_limits(lengths, options))
    positions = getattr(decoder.embed[1], "max_positions", None)  # a Marian decoder's positions
    if positions is not None:
        max_len = min(max_len, positions)
    if len(prefix) >= max_len:
        return Continuation([], True)
    sos, eos, _ = token_conventions(decoder)
    with eval_mode(decoder):
        inc = _IncrementalDecoder(decoder, memory, lengths, 1, max_len + 1)
        history = [sos, *prefix]
        for position, token in enumerate(history[:-1]):  # the prefix's states; its predictions are not needed
            inc.step(torch.tensor([token], device=memory.device), position)
        new: list[int] = []
        while limit is None or len(new) < limit:
            position = len(history) - 1
            logp = inc.step(torch.tensor([history[-1]], device=memory.device), position)[0]
            if position < min_len:
                logp[eos] = -torch.inf
            token = int(logp.argmax())
            if token == eos:
                return Continuation(new, True)
            if accept is not None and not accept(inc.cross_attention):
                return Continuation(new, False)
            new.append(token)
            history.append(token)
            if len(history) - 1 >= max_len:
                return Continuation(new, True)
    return Continuation(new, False)
