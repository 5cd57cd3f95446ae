"""What training data must satisfy, without Lightning: the global-batch arithmetic and Whisper's window (the checks
of a config's features, which `sate config` makes too, are `sate.train.schema.check_feature_mode`).
`sate.train.datamodule` (the datasets and loaders of a run) is apart because importing Lightning costs seconds that
these checks do not need.

The global batch is explicit: `batch.global` (frames for asr/st, tokens for mt, per optimizer update)
and `batch.per_device` (the cap of one forward pass). Gradient accumulation is derived from both and
the world size, so adding GPUs changes the accumulation, never the effective batch; when the devices together
hold more than `batch.global` in one pass, the per-device cap is lowered to `global / devices`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from torch.utils.data import Dataset

from sate.data.features import SPEEDS
from sate.data.rows import is_training_split
from sate.data.whisper_mel import beyond_window, window_samples
from sate.errors import SateError
from sate.train.schema import BatchConfig


@dataclass(frozen=True)
class BatchPlan:
    per_device: int
    world_size: int
    accumulation: int
    unit: str  # "frames", "tokens" or "samples"
    asked: int = 0  # batch.per_device when it was lowered to keep batch.global, else 0

    @property
    def cap_key(self) -> str:
        """What sets the per-device cap, for messages: the config key, or the arithmetic that lowered it."""
        return "batch.global / devices" if self.asked else "batch.per_device"

    @property
    def effective(self) -> int:
        return self.per_device * self.world_size * self.accumulation

    def describe(self) -> str:
        lowered = f" (batch.per_device {self.asked} lowered to keep batch.global)" if self.asked else ""
        return (f"batch: {self.per_device} {self.unit} per device{lowered} x {self.world_size} device(s) x "
                f"{self.accumulation} accumulation = {self.effective} {self.unit} per update")


def batch_unit(task: str, features: str = "fbank") -> str:
    """What batch.per_device and batch.global count: tokens (mt), frames (fbank) or samples (waveform)."""
    return "tokens" if task == "mt" else ("samples" if features == "waveform" else "frames")


# The most samples that give 3,000 log-mel frames: every Whisper release's 1,500 positions, 30 s.
WHISPER_MAX_SAMPLES = window_samples()
WHISPER_SECONDS = 30


class PrepLimit(NamedTuple):
    """The `sate prep --max-duration` that drops a split's rows too long for a limit (`prep_limit`)."""

    seconds: float
    perturbed: bool  # the rows are speed copies (`sate features --speed-perturb` makes them again after prep)


def prep_limit(dataset: Dataset, longer: list[int], split: str, seconds: float) -> PrepLimit | None:
    """What `sate prep --max-duration` drops items `longer` of `split` (too long for `seconds` of audio), or None
    where it drops none of them: a split not named train... (prep keeps every row of it) -- advice to prep it,
    followed, brought the same refusal back. Where they are speed copies, prep measures the row before its copy at
    the slowest speed (0.9 is 1/0.9 longer): `seconds` x 0.9, rounded down (review30c; Whisper's window, 24th pass)."""
    rows = getattr(dataset, "rows", None)
    if rows is not None and any(rows[i].get("speed", 1.0) != 1.0 for i in longer):
        return PrepLimit(slowed(seconds), True)
    if not is_training_split(split):
        return None
    return PrepLimit(math.floor(seconds * 100 + 1e-6) / 100, False)


def slowed(seconds: float) -> float:
    """The longest row whose slowest speed copy lasts `seconds` at most, in hundredths rounded down: `:g` of the plain
    quotient could round up past the cap (review30c)."""
    return math.floor(seconds * min(SPEEDS) * 100 + 1e-6) / 100


def check_whisper_window(dataset: Dataset, split: str) -> None:
    """Whisper's encoder takes 30 s at most: a longer item is refused before training, not mid-epoch."""
    lengths = dataset.lengths  # samples (waveform mode)
    longer = [i for i, n in enumerate(lengths) if n > WHISPER_MAX_SAMPLES]
    if longer:
        worst = max(longer, key=lambda i: lengths[i])
        rows = getattr(dataset, "rows", None)
        # the row named, with the digits that show the excess: "the longest 30.0 s" was said of 480,160 samples
        name = rows[worst].get("id") if rows is not None else None
        longest = (f"row {name}, " if name is not None else "") + str(beyond_window(lengths[worst]))
        # "with speed perturbation" and --max-duration 27 were said of a split without any as well (24th hostile pass)
        limit = prep_limit(dataset, longer, split, WHISPER_SECONDS)
        if limit is not None and limit.perturbed:
            advice = "(the longest {}, with speed perturbation); run `sate prep` with a lower --max-duration " \
                     f"({limit.seconds:g} leaves room for speed {min(SPEEDS):g})"
        elif limit is not None:
            advice = f"(the longest {{}}); run `sate prep` with --max-duration {limit.seconds:g} or lower " \
                     f"({slowed(limit.seconds):g} where `sate features --speed-perturb` will slow it to " \
                     f"{min(SPEEDS):g})"
        else:  # `sate prep` drops no row of it, whatever --max-duration says
            advice = "(the longest {}); `sate prep --max-duration` drops rows only from training splits " \
                     "(named train...): give data.valid (or data.train) a split whose rows are 30 s at most"
        raise SateError(f"split {split}: {len(longer)} utterance(s) longer than Whisper's 30-s window "
                        f"{advice.format(longest)}")


def plan_batch(batch_conf: BatchConfig, world_size: int, task: str, features: str = "fbank") -> BatchPlan:
    """Accumulation steps that make `per_device x world x accumulation` as close as possible to `global`. Devices
    that together hold more than `global` in one pass get a lower cap (`global // world`): the docs promise that
    adding GPUs never changes the effective batch, and a cap is an upper bound, so lowering it keeps its meaning."""
    unit = batch_unit(task, features)
    per_device, wanted = batch_conf.per_device, batch_conf.global_
    if per_device <= 0 or wanted <= 0:
        raise SateError(f"batch.per_device and batch.global must be > 0 {unit}, got {per_device} and {wanted}")
    if per_device * world_size > wanted:
        return BatchPlan(max(1, wanted // world_size), world_size, 1, unit, asked=per_device)
    accumulation = max(1, round(wanted / (per_device * world_size)))
    return BatchPlan(per_device, world_size, accumulation, unit)
