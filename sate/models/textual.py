"""The textual encoder: positions re-added, then ESPnet's Transformer encoder without input layer.

SATE scales the adaptor output by √d and adds sinusoidal positions before the textual encoder,
exactly what the MT model does to its token embeddings, so MT weights see familiar inputs.
ESPnet's `TransformerEncoder(input_layer=None)` adds no positions when input and output sizes
match (its ``embed`` is None), so the step is explicit here: ESPnet's `PositionalEncoding`
(``x·√d + PE``, then dropout). It has no weights; ``.encoder`` holds all of them, keyed as
ESPnet's ``encoder.*``.

With ``type: hf_marian`` the blocks are post-LN and patched as an OPUS-MT encoder (`sate.models.hub.marian`):
Marian's positions, its embedding scale and its limit of ``max_position_embeddings`` positions.
"""

from __future__ import annotations

import torch
from torch import nn

from sate.models.config import TextualConfig
from sate.models.espnet_blocks import EspnetKwargs, PositionalEncoding, TransformerEncoder, block_kwargs


def espnet_textual_kwargs(conf: TextualConfig, d_model: int) -> EspnetKwargs:
    """ESPnet `TransformerEncoder` arguments for our `textual` config section."""
    return EspnetKwargs(output_size=d_model, **block_kwargs(conf, input_layer=None))


class TextualEncoder(nn.Module):
    """Token-like vectors (MT embeddings or adaptor output) -> textual states."""

    def __init__(self, conf: TextualConfig, d_model: int) -> None:
        super().__init__()
        self.espnet_name = "transformer"
        self.espnet_kwargs = espnet_textual_kwargs(conf, d_model)
        marian = conf.type == "hf_marian"
        if marian:
            from sate.models.hub.marian import MarianPositions, patch_blocks
            from sate.models.hub.settings import require_hub

            hub = require_hub(conf, "textual")
            self.positions: nn.Module = MarianPositions(d_model, conf.dropout, hub["scale_embedding"],
                                                        hub["max_position_embeddings"])
        else:
            self.positions = PositionalEncoding(d_model, conf.dropout)
        self.encoder = TransformerEncoder(d_model, **self.espnet_kwargs)
        if marian:
            patch_blocks(self.encoder, hub["activation_function"])

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, S, D), (B,) -> (B, S, D), (B,). Input is unscaled: √d·x + PE happens here."""
        out, out_lengths, _ = self.encoder(self.positions(x), lengths)
        return out, out_lengths
