"""Checkpoint writing that a kill can never corrupt: Lightning's IO through `sate.files.atomic_torch_save`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightning.pytorch.plugins.io import TorchCheckpointIO

from sate.files import atomic_torch_save


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoint IO with a same-directory temporary file, fsync and rename."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: str | Path, storage_options: Any = None) -> None:
        atomic_torch_save(checkpoint, path)
