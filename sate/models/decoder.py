"""The decoder: ESPnet's Transformer decoder, trained with teacher forcing.

ESPnet's `TransformerDecoder` already implements the scorer interface (``score``,
``batch_score``, ``forward_one_step``) that beam search needs. sos and eos are both the last
index of the decoder's vocabulary, as in ESPnet token lists.
"""

from __future__ import annotations

from typing import Any

import torch

from sate.data.dataset import IGNORE_ID
from sate.models.espnet_blocks import TransformerDecoder, add_sos_eos, block_kwargs


def espnet_decoder_kwargs(conf: dict[str, Any]) -> dict[str, Any]:
    """ESPnet `TransformerDecoder` arguments for our `decoder` config section."""
    return block_kwargs(conf, input_layer="embed",
                        attention_dropout_keys=("self_attention_dropout_rate", "src_attention_dropout_rate"))


def build_decoder(conf: dict[str, Any], vocab_size: int, d_model: int) -> TransformerDecoder:
    """ESPnet's decoder over `vocab_size` tokens attending to d_model-sized memory."""
    decoder = TransformerDecoder(vocab_size, d_model, **espnet_decoder_kwargs(conf))
    decoder.espnet_name = "transformer"
    decoder.espnet_kwargs = espnet_decoder_kwargs(conf)
    return decoder


def teacher_forced(
    decoder: TransformerDecoder,
    memory: torch.Tensor,
    memory_lengths: torch.Tensor,
    tokens: torch.Tensor,
    token_lengths: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits for every next token given the gold prefix.

    memory (B, T, D), memory_lengths (B,), tokens (B, L) padded with -1 and without sos/eos ->
    logits (B, L + 1, V) and the targets they predict (B, L + 1): tokens then eos, -1 padded.
    """
    eos = decoder.output_layer.out_features - 1
    ys_in, ys_out = add_sos_eos(tokens, eos, eos, IGNORE_ID)
    logits, _ = decoder(memory, memory_lengths, ys_in, token_lengths + 1)
    return logits, ys_out
