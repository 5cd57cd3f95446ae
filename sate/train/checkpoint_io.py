"""Checkpoint writing that a kill can never corrupt: temp file in the same directory, fsync, rename."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO


def atomic_torch_save(obj: Any, path: str | Path) -> None:
    """torch.save to `path` so that readers see either the old file or the complete new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoint IO with same-directory atomic replacement."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: str | Path, storage_options: Any = None) -> None:
        atomic_torch_save(checkpoint, path)
