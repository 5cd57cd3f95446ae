"""Training-test helpers: a tiny training config on the shared fixture corpus."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from sate.models.tiny import tiny_config


def write_config(tmp_path: Path, task: str, data_dir: Path, seed: int = 0, **sections: dict) -> Path:
    config = {
        "task": task,
        "seed": seed,
        "data": {"dir": str(data_dir), "num_workers": 0},
        # One batch holds the whole (12-utterance) train split: every step sees the same batch.
        "batch": {"per_device": 100000, "global": 100000},
        "specaug": {"enabled": False},
        "model": tiny_config(task, adaptor=None),
        "optim": {"lr": 1e-2, "warmup_steps": 2},
        "trainer": {"max_epochs": 1, "log_every_n_steps": 1, "keep_last": 3, "keep_best": 1, "valid_bleu_utts": 4},
    }
    for name, values in sections.items():
        config.setdefault(name, {}).update(values)
    path = tmp_path / f"{task}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="session")
def make_config(fixture_seed: int) -> Callable[..., Path]:
    """make_config(tmp_path, task, data, **sections) -> a tiny training YAML whose batch is the whole train split,
    seeded with SATE_TEST_SEED."""
    return functools.partial(write_config, seed=fixture_seed)


# The head of a training script that a test runs in a subprocess and kills with SIGKILL, as a preemption
# would: before the update given as its third argument (0: never). Its tail calls `train` with `KillAt()`.
KILL_AT = """
import os, signal, sys
import torch
from lightning.pytorch.callbacks import Callback
from sate.train.trainer import load_training_config, train

class KillAt(Callback):
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if int(sys.argv[3]) and trainer.global_step >= int(sys.argv[3]):
            os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture
def kill_script() -> Callable[[Path, str], Path]:
    """kill_script(path, tail) -> `path` written as KILL_AT followed by `tail` (the lines that train)."""

    def write(path: Path, tail: str) -> Path:
        path.write_text(KILL_AT + tail)
        return path

    return write


class Stopped(Exception):
    """What `stop_at`'s callback raises: a run stopped from inside, its checkpoints as it left them."""


def stop_at(step: int) -> object:
    """A Lightning callback that stops a run (raising `Stopped`) before its update number `step`: with
    trainer.checkpoint_every_minutes tiny, last.ckpt is then a mid-epoch checkpoint."""
    from lightning.pytorch.callbacks import Callback  # heavy: Lightning, for the tests that train

    class StopAt(Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:  # noqa: ANN001
            if trainer.global_step >= step:
                raise Stopped

    return StopAt()
