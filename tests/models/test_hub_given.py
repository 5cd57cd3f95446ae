"""A hub section's ``hub`` given in the config instead of read from the directory (24th hostile pass)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sate.errors import SateError
from sate.models.config import resolve_config


def test_a_given_marian_hub_is_whole(marian_dir: Path) -> None:
    """textual.hub given in part (`--set model.textual.hub.d_model=8`) was a KeyError traceback ('encoder_layers');
    a whole one, as a model file or `sate config` stores it, still resolves without the directory.
    (tests/models/test_whisper_acoustic.py::test_a_given_hub_is_whole: the acoustic side.)"""
    model = {"textual": {"type": "hf_marian", "path": str(marian_dir)}, "decoder": {"type": "hf_marian"}}
    conf = resolve_config("mt", model)
    stored = conf.to_dict()
    stored["textual"]["path"] = None
    assert resolve_config("mt", stored).textual.hub == conf.textual.hub
    with pytest.raises(SateError, match=r"^model config: textual.hub has no encoder_layers, encoder_attention_heads, "
                                        r"encoder_ffn_dim and 12 more: it is filled from textual.path when left out"):
        resolve_config("mt", model | {"textual": {"type": "hf_marian", "hub": {"d_model": 8}}})
    stored["textual"]["hub"] = stored["textual"]["hub"] | {"encoder_layers": 0}
    with pytest.raises(SateError, match=r"^model config: textual.hub.encoder_layers is 0; expected a whole number"):
        resolve_config("mt", stored)
