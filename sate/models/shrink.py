"""CTC compression ("shrink"): one vector per CTC segment instead of one per frame.

The greedy CTC path is cut into runs of equal labels. Blank runs are dropped (unless
``keep_blank``), and the frames of each remaining run are averaged, both the acoustic states
and the CTC logits. The soft or league adaptor then works on the shorter sequence, which makes
the textual encoder and the decoder's cross-attention cheaper (`sate.models.adaptor.ShrinkAdaptor`).
The CTC loss is computed on the full-length logits before this step.

An utterance whose greedy path is entirely blank would have no segment left; it becomes a
single segment, the mean of all its frames, so every non-empty utterance keeps at least one
vector.
"""

from __future__ import annotations

import torch

from sate.models.ctc import BLANK


def ctc_shrink(
    h: torch.Tensor, ctc_logits: torch.Tensor, lengths: torch.Tensor, keep_blank: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Average frames per greedy CTC segment.

    h (B, T, D), ctc_logits (B, T, V), lengths (B,) -> h' (B, S, D), logits' (B, S, V), lengths' (B,)
    with S the longest segment count; positions past lengths' are zero.
    """
    batch, frames = ctc_logits.shape[:2]
    valid = torch.arange(frames, device=lengths.device)[None, :] < lengths[:, None]
    labels = ctc_logits.argmax(-1)
    starts = torch.ones_like(valid)
    starts[:, 1:] = labels[:, 1:] != labels[:, :-1]
    keep = valid if keep_blank else valid & (labels != BLANK)
    all_blank = ~keep.any(dim=1)
    keep = torch.where(all_blank[:, None], valid, keep)
    first = torch.zeros_like(valid)
    first[:, 0] = True
    starts = torch.where(all_blank[:, None], first, starts) & keep
    segment = (starts.cumsum(dim=1) - 1).clamp(min=0)  # segment index of each frame
    out_lengths = starts.sum(dim=1)
    size = max(int(out_lengths.max()), 1)
    weight = keep.float()[..., None]
    count = weight.new_zeros(batch, size, 1).scatter_add(1, segment[..., None], weight).clamp(min=1)

    def pool(x: torch.Tensor) -> torch.Tensor:
        """Sums and means in float32, returned in x's dtype: under CUDA autocast the states (after a LayerNorm, which
        autocast runs in float32) and the logits (bf16 or fp16) differ, which scatter_add refused (30th hostile pass);
        a segment's frame count and sum need not round to 8 bits either."""
        wide = torch.promote_types(x.dtype, torch.float32)
        index = segment[..., None].expand(-1, -1, x.size(-1))
        total = x.new_zeros(batch, size, x.size(-1), dtype=wide).scatter_add(1, index, x.to(wide) * weight.to(wide))
        return (total / count.to(wide)).to(x.dtype)

    return pool(h), pool(ctc_logits), out_lengths
