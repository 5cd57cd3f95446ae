"""Training-test helpers: a tiny training config on the shared fixture corpus."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from sate.models.tiny import tiny_config


def write_config(tmp_path: Path, task: str, data: Path, **sections: dict) -> Path:
    config = {
        "task": task,
        "data": {"dir": str(data), "num_workers": 0},
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
def make_config() -> Callable[..., Path]:
    """make_config(tmp_path, task, data, **sections) -> a tiny training YAML whose batch is the whole train split."""
    return write_config
