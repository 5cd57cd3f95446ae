"""The ESPnet building blocks we reuse, imported in one place.

We import the modules directly rather than through ``espnet2.tasks``, whose imports take
seconds. ESPnet prints "Failed to import Flash Attention" on stdout when ``flash_attn`` is
missing; we never use that path (attention goes through PyTorch's SDPA or ours), so the notice is dropped,
and anything else printed at that import goes to stderr so that commands writing results to stdout stay
clean.
"""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Protocol, TypedDict

with contextlib.redirect_stdout(io.StringIO()) as _printed:
    from espnet.nets.pytorch_backend.transformer import attention  # noqa: F401
    sys.stderr.write("".join(line for line in _printed.getvalue().splitlines(keepends=True)
                             if not line.startswith("Failed to import Flash Attention")))

from espnet.nets.pytorch_backend.transformer.add_sos_eos import add_sos_eos
from espnet.nets.pytorch_backend.transformer.embedding import PositionalEncoding
from espnet.nets.pytorch_backend.transformer.label_smoothing_loss import LabelSmoothingLoss
from espnet.nets.pytorch_backend.transformer.subsampling import Conv2dSubsampling
from espnet2.asr.ctc import CTC
from espnet2.asr.decoder.transformer_decoder import TransformerDecoder
from espnet2.asr.encoder.conformer_encoder import ConformerEncoder
from espnet2.asr.encoder.transformer_encoder import TransformerEncoder

__all__ = [
    "EspnetKwargs",
    "block_kwargs",
    "CTC",
    "ConformerEncoder",
    "Conv2dSubsampling",
    "LabelSmoothingLoss",
    "PositionalEncoding",
    "TransformerDecoder",
    "TransformerEncoder",
    "add_sos_eos",
]


class EspnetKwargs(TypedDict, total=False):
    """Keyword arguments of an ESPnet encoder or decoder, named as an ESPnet2 experiment's *_conf sections name them.

    Every stack takes the block settings; the rest belong to one stack (decoder: the two attention dropouts;
    Conformer: its fixed choices, `sate.models.acoustic`).
    """

    output_size: int  # encoders
    attention_heads: int
    linear_units: int
    num_blocks: int
    dropout_rate: float
    positional_dropout_rate: float
    input_layer: str | None
    normalize_before: bool
    attention_dropout_rate: float  # encoders
    self_attention_dropout_rate: float  # decoder
    src_attention_dropout_rate: float  # decoder
    interctc_layer_idx: list[int]  # an acoustic encoder with CTC below its top
    macaron_style: bool  # Conformer
    rel_pos_type: str
    pos_enc_layer_type: str
    selfattention_layer_type: str
    activation_type: str
    use_cnn_module: bool
    cnn_module_kernel: int


class Blocks(Protocol):
    """What a section of block settings has: the acoustic, textual and decoder sections of `sate.models.config`."""

    type: str
    layers: int
    heads: int
    ffn: int
    dropout: float


def block_kwargs(conf: Blocks, input_layer: str | None,
                 attention_dropout_keys: tuple[str, ...] = ("attention_dropout_rate",)) -> EspnetKwargs:
    """ESPnet encoder/decoder keywords from one of our sections (layers, heads, ffn, dropout).

    ESPnet names the same settings alike in every block stack, except the attention dropout (one
    key in encoders, two in the decoder); our sections use one dropout rate for all of them. Our blocks
    are pre-LN; a Marian model's (``type: hf_marian``) are post-LN.
    """
    kwargs: EspnetKwargs = {
        "attention_heads": conf.heads,
        "linear_units": conf.ffn,
        "num_blocks": conf.layers,
        "dropout_rate": conf.dropout,
        "positional_dropout_rate": conf.dropout,
        "input_layer": input_layer,
        "normalize_before": conf.type != "hf_marian",
    }
    kwargs.update(dict.fromkeys(attention_dropout_keys, conf.dropout))
    return kwargs
