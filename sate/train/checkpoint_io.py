"""Checkpoint files: written so that a kill can never corrupt one, read without running pickled code, and
written inside an epoch too, so that a preempted job loses minutes rather than most of an epoch.

Writing goes through `sate.files.atomic_torch_save` (temporary file, fsync, rename). Reading goes through
`sate.train.resume.read_checkpoint` (weights_only=True). `MidEpochCheckpoint` rewrites `last.ckpt` every
`trainer.checkpoint_every_steps` updates and/or `trainer.checkpoint_every_minutes`; it holds everything a
resume needs to continue at the exact batch (model, optimizer, scheduler, precision scaler, per-rank RNG
states, the loader's place in the epoch, step and epoch), and leaves the epoch checkpoints
(`epochNNN.ckpt`, `best-*.ckpt`) and their keep-last/keep-best policy alone.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.plugins.io import TorchCheckpointIO

from sate.files import atomic_torch_save


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoint IO with atomic writes and weights-only reads.

    `preload` hands over a checkpoint that resuming has already read (to choose it and check its config),
    so that a large file is not read twice."""

    def __init__(self) -> None:
        super().__init__()
        self._preloaded: tuple[Path, dict[str, Any]] | None = None

    def preload(self, path: Path, checkpoint: dict[str, Any]) -> None:
        self._preloaded = (Path(path), checkpoint)

    def save_checkpoint(self, checkpoint: dict[str, Any], path: str | Path, storage_options: Any = None) -> None:
        atomic_torch_save(checkpoint, path)

    def load_checkpoint(self, path: str | Path, map_location: Any = None, weights_only: bool | None = None
                        ) -> dict[str, Any]:
        from sate.train.resume import read_checkpoint

        if self._preloaded is not None and self._preloaded[0] == Path(path):
            checkpoint, self._preloaded = self._preloaded[1], None
            return checkpoint
        return read_checkpoint(Path(path))


class MidEpochCheckpoint(Callback):
    """Rewrite `path` (last.ckpt) inside an epoch, at update boundaries, every `steps` updates and/or `minutes`,
    and when `max_steps` ends the run inside an epoch.

    Step-based saves fall on multiples of `steps`, so they are the same on every rank and across resumes;
    a time-based decision is taken on rank 0 and broadcast, so that every rank saves together."""

    def __init__(self, path: Path, steps: int = 0, minutes: float | None = None) -> None:
        self.path = Path(path)
        self.steps = int(steps)
        self.seconds = None if minutes is None else float(minutes) * 60.0
        self._last = time.monotonic()

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._last = time.monotonic()

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        loop = trainer.fit_loop.epoch_loop
        if loop._should_accumulate() or loop.batch_progress.is_last_batch:
            return  # inside an update, or at the epoch's end where the epoch checkpoints are written
        # Lightning writes no checkpoint when max_steps ends a run inside an epoch: this one does.
        due = trainer.max_steps != -1 and trainer.global_step >= trainer.max_steps
        due = due or (bool(self.steps) and trainer.global_step % self.steps == 0)
        if self.seconds is not None:
            due_now = time.monotonic() - self._last >= self.seconds
            due = due or bool(trainer.strategy.broadcast(due_now, src=0))
        if due:  # the whole state, said so: left unsaid, Lightning logged "`weights_only` was not set" at each one
            trainer.save_checkpoint(self.path, weights_only=False)
            self._last = time.monotonic()
