"""SpecAugment for training batches: frequency and time masks, aware of each utterance's length.

Default policy: the paper's "LB" (1 frequency mask of width up to F=27, 1 time mask of width up to
T=100, no time warping), with the time-mask width also capped at ``max_time_ratio`` (20%) of
each utterance's own length. Without that cap a 100-frame mask would hide most of a 1 s
segment; with it, short utterances lose at most a fifth. Masks are drawn per utterance inside
its real length (padding is never "masked"), and filled with 0, the mean after CMVN, so apply
it to CMVN-normalised features. The module is the identity in ``eval()`` mode: only training
batches are augmented.
"""

from __future__ import annotations

import torch
from torch import nn


def _random_masks(limits: torch.Tensor, max_width: torch.Tensor, count: int, size: int,
                  generator: torch.Generator | None) -> torch.Tensor:
    """(B, size) bool: ``count`` masks per row, width in [0, max_width], inside [0, limits)."""
    batch = limits.shape[0]
    u = torch.rand(batch, count, 2, generator=generator, device=limits.device)
    width = (u[..., 0] * (max_width.unsqueeze(1) + 1).float()).long().clamp(max=max_width.unsqueeze(1))
    start = (u[..., 1] * (limits.unsqueeze(1) - width + 1).clamp(min=1).float()).long()
    pos = torch.arange(size, device=limits.device).view(1, 1, size)
    mask = (pos >= start.unsqueeze(-1)) & (pos < (start + width).unsqueeze(-1))
    return mask.any(dim=1)


class SpecAugment(nn.Module):
    """``forward(feats (B, T, D), lengths (B,)) -> (feats, lengths)``; masks only in training mode."""

    def __init__(self, freq_mask_width: int = 27, num_freq_masks: int = 1, time_mask_width: int = 100,
                 num_time_masks: int = 1, max_time_ratio: float = 0.2) -> None:
        super().__init__()
        if min(freq_mask_width, num_freq_masks, time_mask_width, num_time_masks) < 0 or not 0 <= max_time_ratio <= 1:
            raise ValueError("SpecAugment widths and counts must be >= 0 and max_time_ratio within [0, 1]")
        self.freq_mask_width, self.num_freq_masks = freq_mask_width, num_freq_masks
        self.time_mask_width, self.num_time_masks = time_mask_width, num_time_masks
        self.max_time_ratio = max_time_ratio

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.training:
            return feats, lengths
        batch, frames, dim = feats.shape
        lengths = lengths.to(feats.device)
        mask = torch.zeros(batch, frames, dim, dtype=torch.bool, device=feats.device)
        if self.num_freq_masks and self.freq_mask_width:
            limits = torch.full((batch,), dim, device=feats.device)
            width = torch.full((batch,), min(self.freq_mask_width, dim), device=feats.device)
            mask |= _random_masks(limits, width, self.num_freq_masks, dim, generator).unsqueeze(1)
        if self.num_time_masks and self.time_mask_width:
            width = (lengths.float() * self.max_time_ratio).long().clamp(max=self.time_mask_width)
            mask |= _random_masks(lengths, width, self.num_time_masks, frames, generator).unsqueeze(2)
        return feats.masked_fill(mask, 0.0), lengths

    def extra_repr(self) -> str:
        return (f"F={self.freq_mask_width} x{self.num_freq_masks}, T={self.time_mask_width} x{self.num_time_masks}, "
                f"max_time_ratio={self.max_time_ratio}")
