"""The ASR, MT and SATE speech-translation models, built from ESPnet modules plus SATE's parts.

Read in pipeline order: acoustic (encoder), ctc, adaptor (and shrink), textual, decoder; then
asr, mt and st assemble them, build maps a config to a model, model_file saves and loads them.
losses holds the training losses, pretrained loads components from other checkpoints (sharing checks
what tied embeddings and a joint vocabulary need), config holds every model key's default, tiny the
small configs that tests and benchmarks share.

The names below are imported on first use, so that reading ``sate.models.config`` (the defaults,
for `sate config`) does not import ESPnet and torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "ASRModel": "asr",
    "Encoded": "base",
    "MTModel": "mt",
    "STModel": "st",
    "SateModel": "base",
    "build_model": "build",
    "ctc_greedy": "ctc",
    "load_model_file": "model_file",
    "model_from_file": "model_file",
    "model_meta": "model_file",
    "resolve_config": "config",
    "save_model_file": "model_file",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'sate.models' has no attribute {name!r}")
    return getattr(importlib.import_module(f"sate.models.{_HOMES[name]}"), name)
