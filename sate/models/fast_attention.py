"""ESPnet's attention with faster training paths, the same parameters and ESPnet's own forward in eval mode.

On a GPU, training goes through PyTorch's fused scaled-dot-product kernels (flash or memory-efficient
attention, with their own dropout); the Conformer's position term enters them as an additive mask. On the
CPU those kernels take no dropout, so training takes ESPnet's computation with fewer passes over the
(B, H, T1, T2) scores, which on the CPU cost as much as the matrix products themselves:

- heads first, (H·B, T, d_k), so that the relative positions (the same for every utterance) are one
  batched product per head instead of a copy per utterance;
- 1/√d_k applied to the queries, not to the scores;
- the relative shift (Transformer-XL's matrix b + d) read through a strided view of the (T, 2T-1)
  products instead of ESPnet's pad-and-copy, and added inside the matrix product of q and k (``baddbmm``);
- padded keys filled in place before the softmax; ESPnet's second fill after it is skipped, since a row
  with one key left gives padded keys exactly 0 (rows without keys take ESPnet's path);
- the dropout's 1/(1-p) folded into the output projection's weight.

The results are ESPnet's to float rounding (tests/models/test_fast_modules.py). In eval mode every module is
ESPnet's: attention weights stay in ``.attn`` for `sate.analysis`, and decoding matches ESPnet exactly.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from sate.models.espnet_blocks import attention
from sate.models.fast_dropout import masked


def fused_in(module: attention.MultiHeadedAttention, query: torch.Tensor) -> bool:
    """Whether attention takes PyTorch's fused kernel: in training, on a GPU."""
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


def _padded_keys(mask: torch.Tensor | None) -> tuple[bool, torch.Tensor | None]:
    """ESPnet's mask (B, 1|T1, T2), nonzero = attend, -> (whether the lean path applies, the keys to exclude
    as (1, B, 1|T1, T2) bool, or None). It does not apply when a query has no key left."""
    if mask is None:
        return True, None
    excluded = mask.eq(0)
    return not bool(excluded.all(-1).any()), excluded.unsqueeze(0)


def _heads(x: torch.Tensor, h: int, d_k: int) -> torch.Tensor:
    """(B, T, H·d_k) -> (H·B, T, d_k), heads first."""
    b, t, _ = x.shape
    return x.view(b, t, h, d_k).permute(2, 0, 1, 3).reshape(h * b, t, d_k)


def _attend(module: attention.MultiHeadedAttention, scores: torch.Tensor, excluded: torch.Tensor | None,
            v: torch.Tensor, batch: int) -> torch.Tensor:
    """scores (H·B, T1, T2) already scaled, v (H·B, T2, d_k) -> the output projection's (B, T1, D)."""
    h, d_k = module.h, module.d_k
    t1 = scores.size(1)
    if excluded is not None:
        # No gradient for the fill: the softmax gives excluded keys probability 0, hence gradient 0.
        with torch.no_grad():
            scores.view(h, batch, t1, -1).masked_fill_(excluded, torch.finfo(scores.dtype).min)
    probs, scale = masked(torch.softmax(scores, dim=-1), module.dropout.p)
    x = torch.bmm(probs, v).view(h, batch, t1, d_k).permute(1, 2, 0, 3).reshape(batch, t1, h * d_k)
    out = module.linear_out
    return F.linear(x, out.weight * scale, out.bias)


class FusedAttention(attention.MultiHeadedAttention):
    """ESPnet's attention: fused on a GPU in training, the lean path on the CPU in training, ESPnet's in eval."""

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None,
                expand_kv: bool = False) -> torch.Tensor:
        if fused_in(self, query):
            return _fused(self, *self.forward_qkv(query, key, value, expand_kv), mask)
        lean, excluded = _padded_keys(mask) if self.training and not expand_kv else (False, None)
        if not lean:
            return super().forward(query, key, value, mask, expand_kv)
        q = _heads(self.linear_q(query) * (1.0 / math.sqrt(self.d_k)), self.h, self.d_k)
        k = _heads(self.linear_k(key), self.h, self.d_k)
        scores = torch.bmm(q, k.transpose(1, 2))
        return _attend(self, scores, excluded, _heads(self.linear_v(value), self.h, self.d_k), query.size(0))


class FusedRelPositionAttention(attention.RelPositionMultiHeadedAttention):
    """The Conformer's relative-position attention: fused on a GPU in training (the position term, shifted
    as ESPnet shifts it, as an additive mask), the lean path on the CPU in training, ESPnet's in eval."""

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, pos_emb: torch.Tensor,
                mask: torch.Tensor | None) -> torch.Tensor:
        if fused_in(self, query):
            q, k, v = self.forward_qkv(query, key, value)
            q = q.transpose(1, 2)  # (B, T1, H, d_k)
            p = self.linear_pos(pos_emb).view(pos_emb.size(0), -1, self.h, self.d_k).transpose(1, 2)
            q_u = (q + self.pos_bias_u).transpose(1, 2)
            q_v = (q + self.pos_bias_v).transpose(1, 2)
            bias = self.rel_shift(torch.matmul(q_v, p.transpose(-2, -1))) / math.sqrt(self.d_k)
            return _fused(self, q_u, k, v, mask, bias)
        relative = pos_emb.size(0) == 1 and pos_emb.size(1) == 2 * query.size(1) - 1 == 2 * key.size(1) - 1
        lean, excluded = _padded_keys(mask) if self.training and relative else (False, None)
        if not lean:
            return super().forward(query, key, value, pos_emb, mask)
        b, t = query.shape[:2]
        h, d_k, positions = self.h, self.d_k, pos_emb.size(1)  # 2T - 1 relative positions
        q = self.linear_q(query).view(b, t, h, d_k) * (1.0 / math.sqrt(d_k))
        q_u = _heads((q + self.pos_bias_u / math.sqrt(d_k)).view(b, t, h * d_k), h, d_k)
        q_v = _heads((q + self.pos_bias_v / math.sqrt(d_k)).view(b, t, h * d_k), h, d_k)
        p = self.linear_pos(pos_emb).view(positions, h, d_k).permute(1, 2, 0)  # (H, d_k, 2T - 1)
        bd = torch.bmm(q_v.view(h, b * t, d_k), p)  # (H, B·T, 2T - 1): one product per head
        # ESPnet's rel_shift: row i keeps columns T-1-i .. 2T-2-i, a strided view of the same storage
        shifted = bd.as_strided((h * b, t, t), (t * positions, positions - 1, 1), bd.storage_offset() + t - 1)
        scores = torch.baddbmm(shifted, q_u, _heads(self.linear_k(key), h, d_k).transpose(1, 2))
        return _attend(self, scores, excluded, _heads(self.linear_v(value), h, d_k), b)


ATTENTION_CLASSES = {attention.MultiHeadedAttention: FusedAttention,
                     attention.RelPositionMultiHeadedAttention: FusedRelPositionAttention}
