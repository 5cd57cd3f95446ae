"""ESPnet's encoder and decoder layers and feed-forward module with a leaner training forward.

ESPnet writes each sub-layer as ``x = residual + c * self.dropout(f(x))``: on the CPU that is four passes over
x for the dropout (mask, convert, multiply, rescale), one for ``c`` (even when it is 1) and one for the
add, and as many again backwards. Here the dropout, the constant and the add are one operation
(`sate.models.fast_dropout.dropout_add`: two passes each way), and the feed-forward module's inner dropout
folds its rescaling into the second matrix product. The layers run exactly ESPnet's sequence of
sub-layers, for the configuration our models use (pre-LN, no concat_after, no stochastic depth, no cache);
any other configuration, eval mode and decoding run ESPnet's forward unchanged.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from espnet.nets.pytorch_backend.conformer.encoder_layer import EncoderLayer as ConformerLayer
from espnet.nets.pytorch_backend.transformer.decoder_layer import DecoderLayer
from espnet.nets.pytorch_backend.transformer.encoder_layer import EncoderLayer
from espnet.nets.pytorch_backend.transformer.positionwise_feed_forward import PositionwiseFeedForward

from sate.models.fast_dropout import dropout_add, masked


def _lean(layer: torch.nn.Module, cache: Any) -> bool:
    """Whether a layer's training forward is the lean one: training, pre-LN, no concat, no cache."""
    return (layer.training and layer.normalize_before and not layer.concat_after and cache is None
            and getattr(layer, "stochastic_depth_rate", 0.0) == 0.0)


class FastFeedForward(PositionwiseFeedForward):
    """w_2(dropout(activation(w_1(x)))); on the CPU in training the dropout's 1/(1-p) scales w_2's weight
    (144 x 576 numbers) instead of the hidden states (576 per frame), forwards and backwards."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or x.device.type != "cpu":
            return super().forward(x)
        hidden, scale = masked(self.activation(self.w_1(x)), self.dropout.p)
        return F.linear(hidden, self.w_2.weight * scale, self.w_2.bias)


class FastConformerLayer(ConformerLayer):
    """ESPnet's Conformer layer (macaron feed-forward, attention, convolution, feed-forward, final norm)."""

    def forward(self, x_input: torch.Tensor | tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor,
                cache: torch.Tensor | None = None) -> tuple[Any, torch.Tensor]:
        if not _lean(self, cache):
            return super().forward(x_input, mask, cache)
        x, pos_emb = x_input if isinstance(x_input, tuple) else (x_input, None)
        p = self.dropout.p
        if self.feed_forward_macaron is not None:
            x = dropout_add(x, self.feed_forward_macaron(self.norm_ff_macaron(x)), p, self.ff_scale)
        h = self.norm_mha(x)
        att = self.self_attn(h, h, h, mask) if pos_emb is None else self.self_attn(h, h, h, pos_emb, mask)
        x = dropout_add(x, att, p)
        if self.conv_module is not None:
            x = dropout_add(x, self.conv_module(self.norm_conv(x)), p)
        x = dropout_add(x, self.feed_forward(self.norm_ff(x)), p, self.ff_scale)
        if self.conv_module is not None:
            x = self.norm_final(x)
        return ((x, pos_emb) if pos_emb is not None else x), mask


class FastEncoderLayer(EncoderLayer):
    """ESPnet's Transformer encoder layer (attention, feed-forward)."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor,
                cache: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        if not _lean(self, cache):
            return super().forward(x, mask, cache)
        h = self.norm1(x)
        x = dropout_add(x, self.self_attn(h, h, h, mask), self.dropout.p)
        return dropout_add(x, self.feed_forward(self.norm2(x)), self.dropout.p), mask


class FastDecoderLayer(DecoderLayer):
    """ESPnet's Transformer decoder layer (self-attention, source attention, feed-forward)."""

    def forward(self, tgt: torch.Tensor, tgt_mask: torch.Tensor, memory: torch.Tensor,
                memory_mask: torch.Tensor | None, cache: torch.Tensor | None = None,
                pre_memory: torch.Tensor | None = None, pre_memory_mask: torch.Tensor | None = None) -> tuple:
        if not _lean(self, cache) or self.sequential_attn is not None or pre_memory is not None:
            return super().forward(tgt, tgt_mask, memory, memory_mask, cache, pre_memory, pre_memory_mask)
        p = self.dropout.p
        h = self.norm1(tgt)
        x = dropout_add(tgt, self.self_attn(h, h, h, tgt_mask), p)
        x = dropout_add(x, self.src_attn(self.norm2(x), memory, memory, memory_mask), p)
        x = dropout_add(x, self.feed_forward(self.norm3(x)), p)
        return x, tgt_mask, memory, memory_mask


LAYER_CLASSES = {PositionwiseFeedForward: FastFeedForward, ConformerLayer: FastConformerLayer,
                 EncoderLayer: FastEncoderLayer, DecoderLayer: FastDecoderLayer}
