"""Dropout for training on the CPU at under half of PyTorch's cost, and dropout fused with a residual add.

PyTorch's CPU dropout draws one Bernoulli sample per element and multiplies by a boolean mask that it first
converts to floats; together that was 15% of the demo SATE model's training step (BENCHMARKS.md, "Training
step"). Here a mask element is a 16-bit slice of a 64-bit random word (SFC64, NumPy's fastest generator,
seeded from torch's default generator so `torch.manual_seed` makes masks reproducible), kept as bytes (which
widen to floats three times faster than bools), and the 1/(1-p) rescaling goes where it costs least: into
the residual add that follows most dropouts (`dropout_add`) or into the weight of the next matrix product
(`masked`). On a GPU PyTorch's fused dropout kernel is used instead.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

_INT16_VALUES = 1 << 16
_SEED_RANGE = 1 << 62


def keep_mask(shape: torch.Size, p: float) -> torch.Tensor:
    """A boolean CPU mask of `shape`, True with probability 1 - p (to 1/65536): one 16-bit slice of a 64-bit
    random word per element, the words drawn by SFC64 from a seed drawn from torch's default generator."""
    count = math.prod(shape)
    seed = int(torch.randint(_SEED_RANGE, (1,)))
    words = torch.from_numpy(np.random.SFC64(seed).random_raw((count + 3) // 4).view(np.int64))
    threshold = round(-(_INT16_VALUES // 2) + p * _INT16_VALUES)
    return (words.view(torch.int16)[:count] >= threshold).view(shape)


class _Masked(torch.autograd.Function):
    """x * keep * scale, the byte mask kept for the backward pass as PyTorch's dropout keeps its mask."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor, keep: torch.Tensor,
                scale: float) -> torch.Tensor:
        ctx.save_for_backward(keep)
        ctx.scale = scale
        out = x.mul(keep.view(torch.uint8))  # bytes widen to floats 3x faster than bools do
        return out if scale == 1.0 else out.mul_(scale)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (keep,) = ctx.saved_tensors
        out = grad.mul(keep.view(torch.uint8))
        return (out if ctx.scale == 1.0 else out.mul_(ctx.scale)), None, None


class _DropAdd(torch.autograd.Function):
    """residual + alpha * (y * keep): dropout, its rescaling and the residual connection in one multiply by
    the byte mask (which PyTorch widens to floats on the way) and one add."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, residual: torch.Tensor, y: torch.Tensor,
                keep: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.save_for_backward(keep)
        ctx.alpha = alpha
        return torch.add(residual, y.mul(keep.view(torch.uint8)), alpha=alpha)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx,
                 grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None, None]:
        (keep,) = ctx.saved_tensors
        return grad, grad.mul(keep.view(torch.uint8)).mul_(ctx.alpha), None, None


def masked(x: torch.Tensor, p: float) -> tuple[torch.Tensor, float]:
    """Dropout without its rescaling, on the CPU in training: (x with a fraction p of its entries zeroed,
    1 / (1 - p)). The caller multiplies the scale into its next step (the weight of a matrix product)."""
    if p == 0.0:
        return x, 1.0
    return _Masked.apply(x, keep_mask(x.shape, p), 1.0), 1.0 / (1.0 - p)


def dropout_add(residual: torch.Tensor, y: torch.Tensor, p: float, alpha: float = 1.0) -> torch.Tensor:
    """residual + alpha * dropout(y, p) in training mode: ESPnet's ``x = residual + c * self.dropout(f(x))``."""
    if p == 0.0:
        return torch.add(residual, y, alpha=alpha)
    if y.device.type != "cpu":
        return torch.add(residual, F.dropout(y, p, True), alpha=alpha)
    return _DropAdd.apply(residual, y, keep_mask(y.shape, p), alpha / (1.0 - p))


class FastDropout(nn.Dropout):
    """`nn.Dropout` with the cheaper mask on the CPU; PyTorch's fused kernel elsewhere."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu" or self.p == 1.0:
            return F.dropout(x, self.p, True, self.inplace)
        return _Masked.apply(x, keep_mask(x.shape, self.p), 1.0 / (1.0 - self.p))
