"""Faster stand-ins for ESPnet's parameter-free modules in training, swapped in after a model is built.

A profile of the demo SATE model's training step on the CPU (BENCHMARKS.md, "Training step") put 15% of
it in drawing dropout masks: PyTorch's CPU dropout draws one Bernoulli sample per element. The same
masks cut from 16-bit slices of 64-bit random words are about four times cheaper to draw. ESPnet's Swish
is ``x * sigmoid(x)`` in two kernels forward and three backward, where ``nn.SiLU`` is one each. On a
GPU, attention in training goes through PyTorch's fused scaled-dot-product kernels (flash or
memory-efficient attention, with their own dropout); on the CPU it stays ESPnet's, whose fused path is
no faster there.

Nothing here owns a parameter, so state dicts and ESPnet weight loading are unchanged. In eval mode
every module computes exactly what ESPnet's does (attention weights are still kept in ``.attn`` for
`sate.analysis`); in training the results are the same up to float rounding and the random stream.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from espnet.nets.pytorch_backend.conformer.swish import Swish
from torch import nn

from sate.models.espnet_blocks import attention

_INT16_VALUES = 1 << 16


class _MaskedScale(torch.autograd.Function):
    """x * mask / (1 - p) with the boolean mask kept for the backward pass (as PyTorch's dropout keeps it)."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor, keep: torch.Tensor,
                scale: float) -> torch.Tensor:
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return x.mul(keep).mul_(scale)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (keep,) = ctx.saved_tensors
        return grad.mul(keep).mul_(ctx.scale), None, None


def keep_mask(shape: torch.Size, p: float, device: torch.device) -> torch.Tensor:
    """A boolean mask, True with probability 1 - p (to 1/65536): one 16-bit slice of a 64-bit random word
    per element, drawn from the default generator (so `torch.manual_seed` makes it reproducible)."""
    count = math.prod(shape)
    words = torch.randint(-(1 << 63), (1 << 63) - 1, ((count + 3) // 4,), dtype=torch.int64, device=device)
    threshold = round(-(_INT16_VALUES // 2) + p * _INT16_VALUES)
    return (words.view(torch.int16)[:count] >= threshold).view(shape)


class FastDropout(nn.Dropout):
    """`nn.Dropout` with the cheaper mask on the CPU; PyTorch's fused kernel elsewhere."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu" or self.p == 1.0:
            return F.dropout(x, self.p, True, self.inplace)
        return _MaskedScale.apply(x, keep_mask(x.shape, self.p, x.device), 1.0 / (1.0 - self.p))


def fused_in(module: nn.Module, query: torch.Tensor) -> bool:
    """Whether attention takes PyTorch's fused kernel: in training, on a GPU (on the CPU it is no faster
    than ESPnet's path with `FastDropout`, and it keeps no weights for analysis)."""
    return module.training and query.device.type == "cuda"


def _fused(module: attention.MultiHeadedAttention, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
           mask: torch.Tensor | None, bias: torch.Tensor | None = None) -> torch.Tensor:
    """softmax(q k^T / sqrt(d_k) + bias) v over (B, H, T, d_k), keys outside `mask` (B, 1|T1, T2) excluded."""
    attn_mask = None if mask is None else mask.unsqueeze(1).bool()
    if bias is not None:
        attn_mask = bias if attn_mask is None else bias.masked_fill(~attn_mask, torch.finfo(bias.dtype).min)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                         dropout_p=module.dropout.p if module.training else 0.0)
    return module.linear_out(out.transpose(1, 2).reshape(q.size(0), -1, module.h * module.d_k))


class FusedAttention(attention.MultiHeadedAttention):
    """ESPnet's attention, fused where `fused_in` says so; ESPnet's own forward otherwise."""

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None,
                expand_kv: bool = False) -> torch.Tensor:
        if not fused_in(self, query):
            return super().forward(query, key, value, mask, expand_kv)
        return _fused(self, *self.forward_qkv(query, key, value, expand_kv), mask)


class FusedRelPositionAttention(attention.RelPositionMultiHeadedAttention):
    """The Conformer's relative-position attention, fused where `fused_in` says so: the position term
    (matrix b + d of Transformer-XL, shifted as ESPnet shifts it) enters the kernel as an additive mask."""

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, pos_emb: torch.Tensor,
                mask: torch.Tensor | None) -> torch.Tensor:
        if not fused_in(self, query):
            return super().forward(query, key, value, pos_emb, mask)
        q, k, v = self.forward_qkv(query, key, value)
        q = q.transpose(1, 2)  # (B, T1, H, d_k)
        p = self.linear_pos(pos_emb).view(pos_emb.size(0), -1, self.h, self.d_k).transpose(1, 2)
        q_u = (q + self.pos_bias_u).transpose(1, 2)
        q_v = (q + self.pos_bias_v).transpose(1, 2)
        bias = self.rel_shift(torch.matmul(q_v, p.transpose(-2, -1))) / math.sqrt(self.d_k)
        return _fused(self, q_u, k, v, mask, bias)


_ATTENTION = {attention.MultiHeadedAttention: FusedAttention,
              attention.RelPositionMultiHeadedAttention: FusedRelPositionAttention}


def use_fast_modules(model: nn.Module) -> nn.Module:
    """Swap, in place, every plain `nn.Dropout` for `FastDropout`, ESPnet's Swish for `nn.SiLU`, and ESPnet's
    attention classes for their fused subclasses. Returns the model."""
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if type(child) is nn.Dropout:
                setattr(parent, name, FastDropout(child.p, child.inplace))
            elif type(child) is Swish:
                setattr(parent, name, nn.SiLU())
            elif type(child) in _ATTENTION:
                child.__class__ = _ATTENTION[type(child)]  # same state, a forward that can take the fused path
    return model
