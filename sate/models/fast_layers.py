"""ESPnet's layers, convolution module, feed-forward module and front-end with leaner training forwards.

ESPnet writes each sub-layer as ``x = residual + c * self.dropout(f(x))``: on the CPU, besides drawing the
mask, that is three passes over x for the dropout (convert the mask, multiply, rescale), one for ``c`` (even
when it is 1) and one for the add, and four backwards. Here the dropout, the constant and the add are one
operation (`sate.models.fast_dropout.dropout_add`: three passes forward, three backward), and the
feed-forward module's inner dropout folds its rescaling into the second matrix product's weight. The layers
run exactly ESPnet's sequence of sub-layers, for the configuration our models use (pre-LN, no concat_after,
no stochastic depth, no cache); any other configuration, eval mode and decoding run ESPnet's forward
unchanged. On the CPU the Conformer's convolutions also take faster kernels (the classes below say which).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from espnet.nets.pytorch_backend.conformer.convolution import ConvolutionModule
from espnet.nets.pytorch_backend.conformer.encoder_layer import EncoderLayer as ConformerLayer
from espnet.nets.pytorch_backend.transformer.decoder_layer import DecoderLayer
from espnet.nets.pytorch_backend.transformer.encoder_layer import EncoderLayer
from espnet.nets.pytorch_backend.transformer.positionwise_feed_forward import PositionwiseFeedForward
from espnet.nets.pytorch_backend.transformer.subsampling import Conv2dSubsampling
from torch import nn

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


class FastConvolutionModule(ConvolutionModule):
    """The Conformer's convolution module; on the CPU in training its pointwise convolutions are matrix
    products on (B, T, C), which need neither transposes nor a convolution kernel (1.6x faster there)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or x.device.type != "cpu":
            return super().forward(x)
        first, second = self.pointwise_conv1, self.pointwise_conv2
        h = F.glu(F.linear(x, first.weight.squeeze(-1), first.bias), dim=-1)  # (B, T, C)
        h = self.activation(self.norm(self.depthwise_conv(h.transpose(1, 2))))  # (B, C, T)
        return F.linear(h.transpose(1, 2), second.weight.squeeze(-1), second.bias)


class FastDepthwiseConv1d(nn.Conv1d):
    """A depthwise `nn.Conv1d`; on the CPU in training run as a 2-D convolution over (T, 1), for which
    oneDNN picks a kernel three times faster than for its own 1-D mapping over (1, T)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or x.device.type != "cpu":
            return super().forward(x)
        return F.conv2d(x.unsqueeze(-1), self.weight.unsqueeze(-1), self.bias, (self.stride[0], 1),
                        (self.padding[0], 0), (self.dilation[0], 1), self.groups).squeeze(-1)


def is_depthwise(conv: nn.Module) -> bool:
    """A plain zero-padded depthwise `nn.Conv1d` (the Conformer's), which `FastDepthwiseConv1d` can run."""
    return (type(conv) is nn.Conv1d and conv.groups > 1 and conv.groups == conv.in_channels == conv.out_channels
            and conv.padding_mode == "zeros" and isinstance(conv.padding, tuple))


class FastConv2dSubsampling(Conv2dSubsampling):
    """ESPnet's conv2d front-end; on the CPU in training its first convolution (one input channel) is a matrix
    product over the 3 x 3 windows, written channels-last, so the second runs on channels-last input."""

    def forward(self, x: torch.Tensor, x_mask: torch.Tensor | None) -> tuple[Any, torch.Tensor | None]:
        first, second = self.conv[0], self.conv[2]
        if not self.training or x.device.type != "cpu" or first.kernel_size != (3, 3) or first.stride != (2, 2):
            return super().forward(x, x_mask)
        windows = x.unfold(1, 3, 2).unfold(2, 3, 2)  # (B, T1, F1, 3, 3): a view
        b, t1, f1 = windows.shape[:3]
        h = torch.addmm(first.bias, windows.reshape(-1, 9), first.weight.view(-1, 9).t()).relu_()
        h = F.relu(second(h.view(b, t1, f1, -1).permute(0, 3, 1, 2)))  # (B, C, T2, F2)
        _, c, t, f = h.shape
        x = self.out(h.transpose(1, 2).contiguous().view(b, t, c * f))
        return x, (None if x_mask is None else x_mask[:, :, :-2:2][:, :, :-2:2])


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
                 EncoderLayer: FastEncoderLayer, DecoderLayer: FastDecoderLayer,
                 ConvolutionModule: FastConvolutionModule, Conv2dSubsampling: FastConv2dSubsampling}
