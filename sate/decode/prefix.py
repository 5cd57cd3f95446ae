"""Greedy decoding that continues a committed prefix: the decoder step every streaming policy is built on.

A simultaneous policy re-decodes after every chunk of audio over a memory that has grown, so it cannot keep the
decoder's caches (every layer's states depend on the memory); what it keeps is the prefix it has already shown the
user. `continue_prefix` feeds that prefix to the decoder in one teacher-forced pass (`PrefixDecoder.feed`: every
layer over all prefix positions at once under a causal mask, which fills the same self-attention caches as one step
per token, in a fraction of the time), then extends it one argmax at a time with the same
arithmetic, length limits and eos rule as the offline search at beam 1 (`sate.decode.beam_search`): with an empty
prefix and the whole input, it returns what offline greedy decoding returns (a test checks this). Each new token
can be vetoed from the source attention weights that produced it (AlignAtt).

`complete` is what a policy uses where it needs the whole rest of the translation (LocalAgreement's hypotheses,
the final decision once the input has ended): the pack's beam search with the prefix forced
(`sate.decode.beam_search.decode_memory`'s ``prefix``), or at beam 1 `continue_prefix` itself, so that ``--beam 1``
decodes exactly as the greedy policies did.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from sate.decode.beam_search import _IncrementalDecoder, decode_memory, eval_mode, length_limits
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


class PrefixDecoder(_IncrementalDecoder):
    """The incremental decoder of one hypothesis (beam 1) that can take a whole prefix in one forward pass."""

    def feed(self, tokens: list[int]) -> None:
        """Fill the (empty) self-attention caches with `tokens` at positions 0..L-1 (sos first), as L calls of `step`
        would, in one pass: each layer's keys and values over all positions at once, a causal mask on the queries.
        Their predictions are not computed (the caller knows the prefix), nor the last layer's output."""
        n = len(tokens)
        ids = torch.tensor([tokens], device=self.pe.device)
        x = self.embed(ids) * self.xscale + self.pe[:n]  # (1, L, D)
        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        causal = torch.zeros(n, n, dtype=x.dtype, device=x.device).masked_fill(future, -math.inf)
        kv = []
        layers = self.decoder.decoders
        for i, layer in enumerate(layers):
            sa, ca = layer.self_attn, layer.src_attn
            h = x if self.post_norm else layer.norm1(x)
            key, value = self._split(sa.k_norm, sa.linear_k(h)), self._split(None, sa.linear_v(h))  # (1, H, L, dk)
            kv.append((key, value))
            if i == len(layers) - 1:  # the next layer would read its output; there is none
                break
            q = self._split(sa.q_norm, sa.linear_q(h))
            att = torch.softmax(q @ key.transpose(-2, -1) / math.sqrt(self.d_k) + causal, dim=-1)
            x = self._residual(layer.norm1, x, sa.linear_out((att @ value).transpose(1, 2).reshape(1, n, -1)))
            h = x if self.post_norm else layer.norm2(x)
            q = self._split(ca.q_norm, ca.linear_q(h))  # (1, H, L, dk)
            mem_k, mem_v = self.memory_kv[i]
            att = torch.softmax(q @ mem_k / math.sqrt(self.d_k) + self.memory_bias, dim=-1)  # (1, H, L, T)
            x = self._residual(layer.norm2, x, ca.linear_out((att @ mem_v).transpose(1, 2).reshape(1, n, -1)))
            x = self._residual(layer.norm3, x, layer.feed_forward(x if self.post_norm else layer.norm3(x)))
        self.self_kv = kv


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
        inc = PrefixDecoder(decoder, memory, lengths, 1, max_len + 1)
        history = [sos, *prefix]
        if prefix:  # the states of sos and the prefix but its last token, which the first step reads
            inc.feed(history[:-1])
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


def complete(model: SateModel, memory: torch.Tensor, prefix: list[int], options: DecodeOptions) -> list[int]:
    """The tokens that finish the translation after `prefix` over one utterance's memory (1, T, D): the best
    hypothesis of the beam search that starts with the prefix (beam, length penalty and limits from `options`), or
    at beam 1 the greedy continuation."""
    if options.beam == 1:
        return continue_prefix(model, memory, prefix, options).tokens
    lengths = torch.tensor([memory.size(1)], device=memory.device)
    nbest = decode_memory(model.decoder, memory, lengths, model.eos, replace(options, nbest=1), prefix)[0]
    return nbest[0].tokens[len(prefix):] if nbest else []
