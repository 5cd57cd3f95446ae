"""The decoder: ESPnet's Transformer decoder, trained with teacher forcing.

ESPnet's `TransformerDecoder` already implements the scorer interface (``score``,
``batch_score``, ``forward_one_step``) that beam search needs. sos and eos are both the last
index of the decoder's vocabulary, as in ESPnet token lists.

``tie_embeddings`` makes the output projection's weight the input embedding's, one tensor (fairseq's
``share-decoder-input-output-embed``, which the authors' configs set). ESPnet's projection keeps its
bias; fairseq's projection has none.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from sate.data.dataset import IGNORE_ID
from sate.models.espnet_blocks import TransformerDecoder, add_sos_eos, block_kwargs


def espnet_decoder_kwargs(conf: dict[str, Any]) -> dict[str, Any]:
    """ESPnet `TransformerDecoder` arguments for our `decoder` config section."""
    return block_kwargs(conf, input_layer="embed",
                        attention_dropout_keys=("self_attention_dropout_rate", "src_attention_dropout_rate"))


def build_decoder(conf: dict[str, Any], vocab_size: int, d_model: int) -> TransformerDecoder:
    """ESPnet's decoder over `vocab_size` tokens attending to d_model-sized memory.

    A tied matrix starts as fairseq's embeddings do, normal with std d^-1/2: ESPnet's N(0, 1)
    embedding would give the output projection logits of about √d standard deviation.
    """
    decoder = TransformerDecoder(vocab_size, d_model, **espnet_decoder_kwargs(conf))
    if conf["tie_embeddings"]:
        embedding = decoder.embed[0]
        nn.init.normal_(embedding.weight, std=d_model**-0.5)
        decoder.output_layer.weight = embedding.weight
    decoder.espnet_name = "transformer"
    decoder.espnet_kwargs = espnet_decoder_kwargs(conf)
    return decoder


def decoder_embedding(decoder: TransformerDecoder) -> torch.Tensor:
    """The decoder's input embedding matrix (V, D): with ``adaptor.embedding: decoder``, E of the soft branch."""
    return decoder.embed[0].weight


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
