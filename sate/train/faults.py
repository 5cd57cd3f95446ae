"""Faults a training step survives: a non-finite loss, or running out of memory in forward, backward or the
optimizer step.

A batch with a non-finite loss contributes zero gradient. An out-of-memory error anywhere in an update, on
any rank, skips that whole update on every rank: gradients cleared, no optimizer or scheduler step, memory
released, so the run goes on exactly as one without those batches. Each is counted and logged; too many
in a row stop the run with a message that says what to change (for memory: the largest batch that fitted).
"""

from __future__ import annotations

import gc
import logging

import torch

from sate.errors import SateError

log = logging.getLogger("sate.train")


def release_memory() -> None:
    """Give cached accelerator memory back after an out-of-memory error (the failed tensors are gone by now)."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def lower_lr(lr: float, where: str) -> str:
    """The advice of a diverged run: the optim.lr it trained with, where to lower it (a --set given, or the config
    file: `sate.train.trainer.lr_where`), and to train into a new --exp: the same one resumes its checkpoints, and a
    resume with optim.lr changed is refused (24th hostile pass, review)."""
    lowered = f"lower optim.lr (now {lr:g}, from {where})" if where.startswith("--set ") else \
        f"lower optim.lr (now {lr:g}) in {where}"
    return f"{lowered} and train into a new --exp"


def batch_cost(batch: dict, task: str) -> int:
    """A batch's padded size in the unit of batch.per_device: frames (asr, st) or tokens (mt)."""
    if task != "mt":
        return int(batch["feats"].shape[0] * batch["feats"].shape[1])
    return int(len(batch["ids"]) * max(batch["src"].shape[1], batch["tgt"].shape[1]))


class FaultCounter:
    """Counts skipped batches and updates; stops a run that keeps failing."""

    def __init__(self, nan_patience: int, oom_patience: int, unit: str = "frames", per_device: int = 0,
                 lr: float = 0.0, lr_where: str = "the config") -> None:
        self.nan_patience, self.oom_patience = nan_patience, oom_patience
        self.lr, self.lr_where = lr, lr_where  # for the advice of a diverged run
        self.unit, self.per_device = unit, per_device
        self.nonfinite = self.oom = self.in_row = self.oom_in_row = 0
        self.largest_fit = 0  # the largest batch (padded cost) whose update completed without running out of memory
        self.smallest_oom = 0
        self._sizes: list[int] = []  # costs of this update's batches

    def batch(self, cost: int) -> None:
        self._sizes.append(cost)

    def ok(self) -> None:
        self.in_row = 0

    def nonfinite_loss(self, ids: list[str]) -> None:
        self.nonfinite += 1
        self.in_row += 1
        log.warning("non-finite loss: batch skipped (%d so far, %d in a row); ids %s",
                    self.nonfinite, self.in_row, ", ".join(ids[:4]))

    @property
    def diverged(self) -> bool:
        return self.in_row >= self.nan_patience

    def diverged_error(self) -> SateError:
        return SateError(f"{self.in_row} batches in a row had a non-finite loss (trainer.nan_patience="
                         f"{self.nan_patience}): training diverged; {lower_lr(self.lr, self.lr_where)}, or check "
                         "the data")

    def out_of_memory(self, where: str, detail: str) -> None:
        self.oom += 1
        if self._sizes:
            cost = max(self._sizes)
            self.smallest_oom = cost if not self.smallest_oom else min(self.smallest_oom, cost)
        log.warning("out of memory in the %s: update skipped (%d so far); %s", where, self.oom, detail)

    def update_done(self, had_oom: bool) -> None:
        """Close an update: a clean one records what fitted; too many failed ones in a row stop the run."""
        if had_oom:
            self.oom_in_row += 1
        else:
            self.oom_in_row = 0
            if self._sizes:
                self.largest_fit = max(self.largest_fit, max(self._sizes))
        self._sizes = []
        if self.oom_in_row >= self.oom_patience:
            raise self.oom_error()

    def oom_error(self) -> SateError:
        if self.largest_fit:
            fits = (f"the largest batch that fitted had {self.largest_fit} {self.unit} (padded: batch x longest); "
                    f"set batch.per_device to at most {self.largest_fit}")
        else:
            fits = (f"no batch has fitted in this run (the smallest that failed had {self.smallest_oom} "
                    f"{self.unit}); set batch.per_device well below that")
        return SateError(f"{self.oom_in_row} updates in a row ran out of memory (trainer.oom_patience="
                         f"{self.oom_patience}): {fits} (now {self.per_device}; batch.global keeps the update size)")

    def state_dict(self) -> dict[str, int]:
        return {"nonfinite": self.nonfinite, "oom": self.oom, "largest_fit": self.largest_fit}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.nonfinite, self.oom = int(state.get("nonfinite", 0)), int(state.get("oom", 0))
        self.largest_fit = int(state.get("largest_fit", 0))
