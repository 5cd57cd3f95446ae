"""Learning-rate warmup then inverse-square-root decay (fairseq `inverse_sqrt`).

ESPnet's Noam-style `WarmupLR` with the same peak is the same curve, `peak * min(s / w, sqrt(w / s))`,
so one schedule serves configs written for either toolkit.
"""

from __future__ import annotations

import math

import torch


def inverse_sqrt_factor(step: int, warmup_steps: int) -> float:
    """Multiplier of the peak lr at optimizer step `step` (0-based): linear up to 1 at `warmup_steps`."""
    step = step + 1
    if warmup_steps <= 0:
        return 1.0 / math.sqrt(step)
    return min(step / warmup_steps, math.sqrt(warmup_steps / step))


def inverse_sqrt_schedule(optimizer: torch.optim.Optimizer, warmup_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: inverse_sqrt_factor(step, warmup_steps))
