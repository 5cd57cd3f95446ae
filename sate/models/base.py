"""What the three models share: their identity (task, resolved config, vocabularies) and outputs."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from sate.data.tokens import IGNORE_ID
from sate.models.config import ModelConfig

# A batch as the models read it: name -> tensor (feats, feats_lengths, src, src_lengths, tgt, tgt_lengths, ...).
Batch = dict[str, torch.Tensor]
# What forward() returns: "loss" (the tensor to optimise) and floats for logging.
Stats = dict[str, torch.Tensor | float]


class Encoded(NamedTuple):
    """What decoding needs from a speech input.

    memory (B, T, D) and memory_lengths (B,): what the decoder attends to.
    ctc_logits (B, T', V_src) and ctc_lengths (B,): full-length CTC outputs (T' >= T after shrink).
    """

    memory: torch.Tensor
    memory_lengths: torch.Tensor
    ctc_logits: torch.Tensor
    ctc_lengths: torch.Tensor


class SateModel(nn.Module):
    """Base of ASRModel, MTModel and STModel; ``forward(batch)["loss"]`` is what training calls."""

    task: str

    def __init__(self, conf: ModelConfig, src_vocab_size: int, tgt_vocab_size: int) -> None:
        super().__init__()
        self.conf = conf
        self.src_vocab_size = src_vocab_size
        self.tgt_vocab_size = tgt_vocab_size

    @property
    def eos(self) -> int:
        """The decoder's end token: the last index of our vocabularies, 0 in Marian's (`sate.models.decoder`)."""
        from sate.models.decoder import token_conventions

        return token_conventions(self.decoder)[1]

    @property
    def sos(self) -> int:
        """The decoder's start token: the last index of our vocabularies and of Marian's."""
        from sate.models.decoder import token_conventions

        return token_conventions(self.decoder)[0]


def token_accuracy(logits: torch.Tensor, targets: torch.Tensor) -> float:
    """Share of non-padding positions where the argmax is the target: (B, L, V), (B, L) -> float."""
    mask = targets != IGNORE_ID
    correct = (logits.argmax(-1) == targets) & mask
    return float(correct.sum()) / max(int(mask.sum()), 1)


def stats(loss: torch.Tensor, **terms: torch.Tensor | float | None) -> Stats:
    """The forward() result: the loss to optimise plus detached floats for logging."""
    out: Stats = {"loss": loss}
    out.update({k: float(v.detach()) if isinstance(v, torch.Tensor) else float(v)
                for k, v in terms.items() if v is not None})
    return out
