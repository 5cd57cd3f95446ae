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


class SkippableAdam(torch.optim.Adam):
    """Adam whose update can be called off after the closure (forward, backward, gradient sync) has run.

    `skip_update` set during the closure makes this step a no-op: no parameter moves and Adam's moments and
    step count stay as they were, as if the batches of this update never existed. An out-of-memory error in
    the update itself is handed to `on_oom` (when set) instead of propagating.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.skip_update = False
        self.on_oom: object = None

    def step(self, closure=None):  # noqa: ANN001, ANN201 - torch's signature
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if self.skip_update:
            self.skip_update = False
            return loss
        try:
            super().step()
        except torch.OutOfMemoryError:
            if not callable(self.on_oom):
                raise
            self.zero_grad(set_to_none=True)
            self.on_oom()
        return loss
