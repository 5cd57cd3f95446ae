"""MT: source embedding -> textual encoder -> decoder over the target vocabulary.

SATE takes its source embedding (for the soft adaptor), textual encoder and decoder from here.
Source ids share CTC's index space, so ``<blank>`` (0) has an embedding that text never uses.

A Marian MT model (``textual.type`` and ``decoder.type`` hf_marian) reads Marian's ids on both sides, with
``</s>`` ending the source (`sate.data.marian_vocab`), and its source embedding, decoder embedding and output
projection are one tensor, as in Marian.
"""

from __future__ import annotations

import torch
from torch import nn

from sate.errors import SateError
from sate.models.base import Batch, SateModel, Stats, cut_to_longest, stats, token_accuracy
from sate.models.config import ModelConfig, MTConfig, STConfig
from sate.models.decoder import build_decoder, teacher_forced
from sate.models.hub.settings import MarianHub, require_hub
from sate.models.losses import label_smoothed_ce, normalization_factor
from sate.models.textual import TextualEncoder


def marian_hub(conf: ModelConfig) -> MarianHub | None:
    """The ``textual.hub`` dict of a model with a Marian textual side, else None."""
    if not isinstance(conf, MTConfig | STConfig) or conf.textual.type != "hf_marian":
        return None
    return require_hub(conf.textual, "textual")


def build_source_embedding(vocab_size: int, d_model: int) -> nn.Embedding:
    """Source token embedding with std d^-1/2, so that √d·E (the textual input) has unit scale."""
    embed = nn.Embedding(vocab_size, d_model)
    nn.init.normal_(embed.weight, std=d_model**-0.5)
    return embed


class MTModel(SateModel):
    """Source tokens -> target tokens. Batches need src, src_lengths, tgt, tgt_lengths."""

    task = "mt"
    conf: MTConfig

    def __init__(self, conf: MTConfig, src_vocab_size: int, tgt_vocab_size: int) -> None:
        super().__init__(conf, src_vocab_size, tgt_vocab_size)
        d_model = conf.d_model
        self.src_embed = build_source_embedding(src_vocab_size, d_model)
        self.textual = TextualEncoder(conf.textual, d_model)
        self.decoder = build_decoder(conf.decoder, tgt_vocab_size, d_model, marian_hub(conf))
        if marian_hub(conf) is not None:
            if src_vocab_size != tgt_vocab_size:
                raise SateError(f"a Marian MT model reads Marian ids on both sides, but the source token list has "
                                f"{src_vocab_size} tokens and the target's {tgt_vocab_size}")
            self.src_embed.weight = self.decoder.embed[0].weight

    def encode_text(self, src: torch.Tensor, src_lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """src (B, S) padded with -1, src_lengths (B,) -> memory (B, S', D), lengths (B,), S' the longest length."""
        src, src_lengths = cut_to_longest(src, src_lengths, ("src", "src_lengths"))
        return self.textual(self.src_embed(src.clamp(min=0)), src_lengths)

    def forward(self, batch: Batch) -> Stats:
        memory, lengths = self.encode_text(batch["src"], batch["src_lengths"])
        logits, targets = teacher_forced(self.decoder, memory, lengths, batch["tgt"], batch["tgt_lengths"])
        ce = label_smoothed_ce(logits, targets, self.conf.loss.label_smoothing)
        ce = normalization_factor(self.conf.loss.normalize, batch["tgt_lengths"]) * ce
        return stats(ce, loss_ce=ce, acc=token_accuracy(logits, targets))
