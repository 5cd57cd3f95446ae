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

import os
import time
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import Checkpoint, EarlyStopping, ModelCheckpoint
from lightning.pytorch.loops.fit_loop import _FitLoop
from lightning.pytorch.loops.loop import _Loop
from lightning.pytorch.plugins.io import TorchCheckpointIO

from sate.files import atomic_torch_save
from sate.train.resume import early_stopping_key


class _EpochEndResumingFitLoop(_FitLoop):
    """Lightning's fit loop, resuming a checkpoint of an epoch's end at the next epoch with `max_steps` set too.

    Lightning takes every run of `max_steps` as restarting inside an epoch (`_FitLoop.restarting`): from an epoch's
    end it ran an empty epoch, counted it as trained, and ended on "`max_epochs` reached" with nothing trained, exit 0;
    the count went into the checkpoints it wrote, so every later resume trained nothing too (review33c). Here a
    finished epoch is never restarted, as without `max_steps`; a checkpoint inside an epoch restarts there as before.
    The count of such an empty epoch, in checkpoints written by an earlier sate, is taken back."""

    def _load_from_state_dict(self, state_dict: dict, prefix: str) -> None:
        super()._load_from_state_dict(state_dict, prefix)
        for count in (self.epoch_progress.current, self.epoch_progress.total):
            # an epoch counted as processed that never started: the empty epoch of Lightning's rule, in checkpoints an
            # earlier sate wrote at such a resume, which then trained nothing at every resume (review33c)
            count.processed = min(count.processed, count.started)

    @property
    def restarting(self) -> bool:
        return self._restarting

    @restarting.setter
    def restarting(self, restarting: bool) -> None:
        current = self.epoch_progress.current
        unfinished = current.ready != current.processed or current.started != current.processed
        _Loop.restarting.fset(self, restarting and unfinished)  # type: ignore[attr-defined]


def resume_epoch_ends(trainer: L.Trainer) -> None:
    """Make `trainer` resume a checkpoint of an epoch's end at the next epoch whatever its budget
    (`_EpochEndResumingFitLoop`): the loop keeps its state, only the rule of restarting changes."""
    trainer.fit_loop.__class__ = _EpochEndResumingFitLoop


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
        from sate.train.resume import check_progress, read_checkpoint

        if self._preloaded is not None and self._preloaded[0] == Path(path):
            checkpoint, self._preloaded = self._preloaded[1], None
            return checkpoint
        checkpoint = read_checkpoint(Path(path))
        check_progress(Path(path), checkpoint)  # the step and epoch Lightning resumes from
        return checkpoint


class MovableCheckpoint(ModelCheckpoint):
    """Lightning's ModelCheckpoint, whose record of the best and latest checkpoints follows an experiment moved or
    copied elsewhere. Lightning keeps that record by the folder's path and drops it when the path changed (a
    warning), so the resumed run kept every checkpoint it found beside those it wrote, past keep_best and
    keep_last. The record is taken over when each file it names is in this folder under its name: `sate train`
    resumes only from this experiment's own checkpoint folder."""

    @property
    def state_key(self) -> str:
        # the key Lightning files the state under in a checkpoint: a plain ModelCheckpoint's, so that checkpoints
        # written before this class still restore into it
        return super().state_key.replace(type(self).__qualname__, ModelCheckpoint.__qualname__, 1)

    def _save_last_checkpoint(self, trainer: L.Trainer, monitor_candidates: dict[str, Any]) -> None:
        # A run that trainer.max_steps or max_minutes ends inside an epoch: `MidEpochCheckpoint` wrote last.ckpt at
        # that update, with the loader's place in the epoch. Rewritten here at the epoch's early end, it recorded the
        # epoch as trained, and a resume with a larger budget began the next epoch, the rest of this one never
        # trained, exit 0 (31st hostile pass).
        if any(isinstance(cb, MidEpochCheckpoint) and cb.saved_step == trainer.global_step for cb in trainer.callbacks):
            return
        super()._save_last_checkpoint(trainer, monitor_candidates)

    def take_other_mode(self, callbacks: dict[str, Any]) -> None:
        """File the record a checkpoint keeps for this monitor under the other mode (`callbacks`, the checkpoint's
        states by key) under this one's key: Lightning's key holds the mode, so with trainer.monitor_mode changed at a
        resume (a safe key) it restored no record at all, warned "Please add the following callbacks:
        [\"ModelCheckpoint{...}\"]", and the run's best-N began afresh, the files of the old record kept past
        keep_best for good (thirty-third hostile pass). Taken, `_fit_record` ranks it by this mode."""
        if self.state_key in callbacks:
            return
        other = "max" if self.mode == "min" else "min"
        key = self._generate_state_key(monitor=self.monitor, mode=other, every_n_train_steps=self._every_n_train_steps,
                                       every_n_epochs=self._every_n_epochs,
                                       train_time_interval=self._train_time_interval)
        key = key.replace(type(self).__qualname__, ModelCheckpoint.__qualname__, 1)
        if key in callbacks:
            callbacks[self.state_key] = callbacks.pop(key)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        old = state_dict.get("dirpath")
        if old is not None and self.dirpath is not None and old != self.dirpath:
            state_dict = self._moved(state_dict, str(old)) or state_dict
        super().load_state_dict(state_dict)
        self._fit_record()

    def _fit_record(self) -> None:
        """The restored record cut to this run's number of checkpoints (save_top_k: trainer.keep_last or keep_best,
        which a resume may change) and ranked by this run's mode (trainer.monitor_mode, which a resume may change
        too), its best and k-th named again. Lowered, the record named no k-th checkpoint where it held fewer than
        the old number, and the first save after an epoch's training was a KeyError traceback inside Lightning, at
        every resume; one longer than the new number was never cut (twentieth hostile pass). The checkpoints left
        out of the record stay on disk."""
        k = self.save_top_k
        if k < 0 or not self.best_k_models:
            return
        ranked = sorted(self.best_k_models, key=lambda path: float(self.best_k_models[path]),
                        reverse=self.mode == "max")  # best first
        self.best_model_path, self.best_model_score = ranked[0], self.best_k_models[ranked[0]]
        if len(ranked) < k:  # a record not full: Lightning keeps the next checkpoint whatever its score
            return
        self.best_k_models = {path: self.best_k_models[path] for path in ranked[:k]}
        if k:  # a full record: its k-th is what a new checkpoint must beat
            self.kth_best_model_path = ranked[k - 1]
            self.kth_value = self.best_k_models[ranked[k - 1]]

    def _moved(self, state: dict[str, Any], old: str) -> dict[str, Any] | None:
        """``state`` with its paths in this folder, or None when one names a file of another folder. A file it names
        that is not here (deleted by hand) leaves the record, as it stays harmlessly in a record restored in place:
        the whole record was dropped, and a moved experiment kept every checkpoint past keep_last and keep_best where
        the same one in place kept them (29th hostile pass: last.ckpt, hand29c; an epoch checkpoint, review29c).
        last.ckpt is named for its name alone, which this run writes again."""
        def here(path: str) -> str | None:
            if not path:
                return path
            if os.path.dirname(path) != old:
                return None
            return os.path.join(str(self.dirpath), os.path.basename(path))

        best = {here(str(path)): score for path, score in (state.get("best_k_models") or {}).items()}
        named = [here(str(state.get(key) or "")) for key in ("best_model_path", "kth_best_model_path",
                                                           "last_model_path")]
        if None in best or None in named:
            return None
        best = {path: score for path, score in best.items() if os.path.isfile(path)}  # type: ignore[arg-type]
        named[:2] = [path if path and os.path.isfile(path) else "" for path in named[:2]]
        return {**state, "dirpath": self.dirpath, "best_k_models": best,
                **dict(zip(("best_model_path", "kth_best_model_path", "last_model_path"), named, strict=True))}


class MidEpochCheckpoint(Checkpoint):
    """Rewrite `path` (last.ckpt) inside an epoch, at update boundaries, every `steps` updates and/or `minutes`,
    and when `max_steps` or `max_minutes` (Lightning's Timer) ends the run inside an epoch.

    Step-based saves fall on multiples of `steps`, so they are the same on every rank and across resumes;
    a time-based decision is taken on rank 0 and broadcast, so that every rank saves together. A `Checkpoint`, so that
    Lightning runs it after its Timer, which stops a run of `max_minutes` at a batch's end (`trainer.should_stop`);
    a stop asked inside an update is held back to the update's end, so that the run stops where it can be saved."""

    def __init__(self, path: Path, steps: int = 0, minutes: float | None = None) -> None:
        self.path = Path(path)
        self.steps = int(steps)
        self.seconds = None if minutes is None else float(minutes) * 60.0
        self._last = time.monotonic()
        self.saved_step: int | None = None  # the update of its last save, which the epoch's last.ckpt leaves alone
        self._stop_asked = False  # a stop asked inside an update, held back until the update's end

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._last = time.monotonic()

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        loop = trainer.fit_loop.epoch_loop
        if loop._should_accumulate():
            # A stop asked inside an update (the Timer of max_minutes checks at every batch, with accumulation too)
            # waits for the update's end: stopped here, no checkpoint could keep the place, Lightning's at the
            # epoch's early end counted the epoch as trained, and a resume skipped the rest of it (review31c).
            self._stop_asked = self._stop_asked or trainer.should_stop
            trainer.should_stop = False
            return
        if self._stop_asked:  # the update asked to stop inside has ended: stop now, saved below
            trainer.should_stop, self._stop_asked = True, False
        if loop.batch_progress.is_last_batch:
            return  # at the epoch's end, where the epoch checkpoints are written
        # A budget ending the run inside an epoch: Lightning's own checkpoint of it, at the epoch's early end, records
        # the epoch as trained (`MovableCheckpoint._save_last_checkpoint`); this one keeps the place in it.
        due = trainer.max_steps != -1 and trainer.global_step >= trainer.max_steps
        due = due or trainer.should_stop  # the Timer of max_minutes, which ran before this (a `Checkpoint`)
        due = due or (bool(self.steps) and trainer.global_step % self.steps == 0)
        if self.seconds is not None:
            due_now = time.monotonic() - self._last >= self.seconds
            due = due or bool(trainer.strategy.broadcast(due_now, src=0))
        if due:  # the whole state, said so: left unsaid, Lightning logged "`weights_only` was not set" at each one
            trainer.save_checkpoint(self.path, weights_only=False)
            self._last = time.monotonic()
            self.saved_step = trainer.global_step


class ConfiguredPatience(EarlyStopping):
    """Lightning's early stopping with the patience this run was given: Lightning put back the checkpoint's, so a
    resume with trainer.patience raised (a key a resume may change, said "resuming with trainer.patience changed")
    stopped at the old patience all the same (32nd hostile pass). Its state is kept under Lightning's own key, so
    checkpoints of either class resume with the other."""

    @property
    def state_key(self) -> str:
        return early_stopping_key(self.monitor, self.mode)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        patience = self.patience
        super().load_state_dict(state_dict)
        self.patience = patience
