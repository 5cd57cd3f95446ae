"""When to emit: the streaming policies over an offline model (no retraining).

After each chunk of audio the encoder has re-read everything heard so far, and a policy decides which tokens to
add to the committed prefix (tokens once committed are never taken back). When the input ends, every policy
finishes the prefix over the whole memory with the decoding options' beam search, the prefix forced
(`sate.decode.prefix.complete`; at beam 1, greedily).

- ``wait-k=K``: wait for K chunks, then commit one token per chunk (Ma et al. 2019's test-time wait-k, read in
  chunks of audio rather than source words): the baseline, blind to what was said.
- ``local-agreement=N``: decode a full hypothesis after every chunk (the beam search's best, as Polák et al.
  2022 do) and commit the longest prefix on which the last N hypotheses agree (Liu et al. 2020; Polák et al.
  2022 with N = 2).
- ``alignatt=F``: extend greedily and commit each token unless its source attention (averaged over the heads and
  layers of the decoder) peaks on one of the last F memory positions, i.e. on audio that may still be cut off
  (Papi et al. 2023). F counts encoder frames: 40 ms each behind a 4x subsampling, 20 ms behind Whisper's encoder
  (2x; the docs said 40 ms alone, which the Whisper demo's pack, the default, halves), or source tokens behind a
  shrinking adaptor.

wait-k and AlignAtt decide one token at a time, and stay greedy whatever the beam: the token is final once shown,
and a beam would rank whole continuations over audio not yet heard. Measured (docs/inference.md, the Whisper demo
pack, wait-k=3 over 0.5-s chunks), the first tokens of the beam's best completion instead scored within the
confidence interval of greedy tokens (46.3 against 44.1 BLEU, chrF 62.4 against 62.5) for 3.7 times the decoder time.

A spec ``NAME`` or ``NAME=VALUE`` names one (`sate.decode.options.parse_policy`); `start` makes it.
"""

from __future__ import annotations

import torch

from sate.decode.options import DecodeOptions, StreamPolicy
from sate.decode.prefix import complete, continue_prefix
from sate.models.base import SateModel


def start(spec: StreamPolicy) -> Policy:
    """A fresh policy for one utterance (local agreement remembers the utterance's hypotheses)."""
    return {"wait-k": WaitK, "local-agreement": LocalAgreement, "alignatt": AlignAtt}[spec.name](spec.value)


class Policy:
    """Decides the tokens to commit after a chunk; `finish` completes the translation when the input ends."""

    def __init__(self, value: int) -> None:
        self.value = value

    def step(self, model: SateModel, memory: torch.Tensor, committed: list[int], chunks: int,
             options: DecodeOptions) -> list[int]:
        """Tokens to add after the `chunks`-th chunk (1-based), given the memory (1, T, D) of all audio so far."""
        raise NotImplementedError

    def finish(self, model: SateModel, memory: torch.Tensor, committed: list[int], options: DecodeOptions
               ) -> list[int]:
        """The rest of the translation over the memory of the whole input."""
        return complete(model, memory, committed, options)


class WaitK(Policy):
    """K chunks of waiting, then one token per chunk."""

    def step(self, model: SateModel, memory: torch.Tensor, committed: list[int], chunks: int,
             options: DecodeOptions) -> list[int]:
        allowed = chunks - self.value + 1 - len(committed)
        if allowed < 1:
            return []
        return continue_prefix(model, memory, committed, options, limit=allowed).tokens


class LocalAgreement(Policy):
    """The longest common prefix of the last N full hypotheses (each the beam search's best)."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.history: list[list[int]] = []

    def step(self, model: SateModel, memory: torch.Tensor, committed: list[int], chunks: int,
             options: DecodeOptions) -> list[int]:
        hypothesis = committed + complete(model, memory, committed, options)
        self.history = [*self.history, hypothesis][-self.value:]
        if len(self.history) < self.value:
            return []
        agreed = common_prefix(self.history)
        return agreed[len(committed):]


def common_prefix(sequences: list[list[int]]) -> list[int]:
    """The longest prefix that all sequences share."""
    out = []
    for items in zip(*sequences, strict=False):
        if any(item != items[0] for item in items):
            break
        out.append(items[0])
    return out


class AlignAtt(Policy):
    """Greedy tokens while their attention stays off the last F memory positions."""

    def step(self, model: SateModel, memory: torch.Tensor, committed: list[int], chunks: int,
             options: DecodeOptions) -> list[int]:
        frames = memory.size(1)
        if frames <= self.value:
            return []

        def accept(weights: list[torch.Tensor]) -> bool:
            return int(torch.stack(weights).mean(dim=(0, 1, 2, 3)).argmax()) < frames - self.value

        return continue_prefix(model, memory, committed, options, accept=accept).tokens
