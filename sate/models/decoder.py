"""The decoder: ESPnet's Transformer decoder, trained with teacher forcing.

ESPnet's `TransformerDecoder` already implements the scorer interface (``score``,
``batch_score``, ``forward_one_step``) that beam search needs. sos and eos are both the last
index of the decoder's vocabulary, as in ESPnet token lists.

``tie_embeddings`` makes the output projection's weight the input embedding's, one tensor (fairseq's
``share-decoder-input-output-embed``, which the authors' configs set). ESPnet's projection keeps its
bias; fairseq's projection has none.

Every decoder carries its token conventions as attributes, which training and decoding read: ``sos_id``,
``eos_id`` and ``banned_ids`` (tokens decoding never emits). Ours: sos = eos = the last id, nothing banned. A
Marian decoder (``type: hf_marian``, `sate.models.hub.marian`): post-LN blocks, Marian's positions, sos =
``decoder_start_token_id``, eos = ``eos_token_id``, pad banned, ``final_logits_bias`` as the output bias.
"""

from __future__ import annotations

import torch
from torch import nn

from sate.data.tokens import IGNORE_ID
from sate.errors import SateError
from sate.models.config import DecoderConfig
from sate.models.espnet_blocks import EspnetKwargs, TransformerDecoder, add_sos_eos, block_kwargs
from sate.models.hub.settings import MarianHub


def espnet_decoder_kwargs(conf: DecoderConfig) -> EspnetKwargs:
    """ESPnet `TransformerDecoder` arguments for our `decoder` config section."""
    return block_kwargs(conf, input_layer="embed",
                        attention_dropout_keys=("self_attention_dropout_rate", "src_attention_dropout_rate"))


def build_decoder(conf: DecoderConfig, vocab_size: int, d_model: int,
                  marian: MarianHub | None = None) -> TransformerDecoder:
    """ESPnet's decoder over `vocab_size` tokens attending to d_model-sized memory.

    A tied matrix starts as fairseq's embeddings do, normal with std d^-1/2: ESPnet's N(0, 1)
    embedding would give the output projection logits of about √d standard deviation. `marian` is the
    ``textual.hub`` dict of a ``type: hf_marian`` decoder.
    """
    decoder = TransformerDecoder(vocab_size, d_model, **espnet_decoder_kwargs(conf))
    if conf.tie_embeddings:
        embedding = decoder.embed[0]
        nn.init.normal_(embedding.weight, std=d_model**-0.5)
        decoder.output_layer.weight = embedding.weight
    decoder.espnet_name = "transformer"
    decoder.espnet_kwargs = espnet_decoder_kwargs(conf)
    decoder.sos_id = decoder.eos_id = vocab_size - 1
    decoder.banned_ids = ()
    if conf.type == "hf_marian":
        assert marian is not None  # a Marian decoder comes with a Marian textual encoder (sate.models.hub.settings)
        _make_marian(decoder, conf, vocab_size, marian)
    return decoder


def _make_marian(decoder: TransformerDecoder, conf: DecoderConfig, vocab_size: int, hub: MarianHub) -> None:
    from sate.models.hub.marian import MarianPositions, patch_blocks

    if vocab_size != hub["vocab_size"]:
        raise SateError(f"decoder.type hf_marian: the target token list has {vocab_size} tokens, the Marian model "
                        f"{hub['vocab_size']} (use the Marian vocabulary: sate vocab --marian DIR)")
    decoder.embed[1] = MarianPositions(decoder.embed[1].d_model, conf.dropout, hub["scale_embedding"],
                                       hub["max_position_embeddings"])
    patch_blocks(decoder, hub["activation_function"])
    decoder.sos_id, decoder.eos_id = hub["decoder_start_token_id"], hub["eos_token_id"]
    decoder.banned_ids = (hub["pad_token_id"],)
    decoder.espnet_name = "hf_marian"  # never an ESPnet experiment's decoder


def token_conventions(decoder: TransformerDecoder) -> tuple[int, int, tuple[int, ...]]:
    """sos, eos and the banned ids of a decoder; one that ESPnet built itself has ESPnet's (the last id, none)."""
    last = decoder.output_layer.out_features - 1
    return getattr(decoder, "sos_id", last), getattr(decoder, "eos_id", last), getattr(decoder, "banned_ids", ())


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
    sos, eos, _ = token_conventions(decoder)
    ys_in, ys_out = add_sos_eos(tokens, sos, eos, IGNORE_ID)
    logits, _ = decoder(memory, memory_lengths, ys_in, token_lengths + 1)
    return logits, ys_out
