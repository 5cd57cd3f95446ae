"""The whisper-window part refuses a pack without a Whisper acoustic side (its run on a tiny Whisper pack is in
tests/train/test_whisper_sate.py, which trains one)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sate.bench.whisper_window import run
from sate.data.vocab import Vocabulary
from sate.decode.pack import pack
from sate.errors import SateError
from sate.models import build_model, save_model_file
from sate.models.tiny import tiny_config


def test_a_conformer_pack_is_refused(tmp_path: Path, prepared_data: Path) -> None:
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    torch.manual_seed(0)
    save_model_file(tmp_path / "asr.pt", build_model("asr", tiny_config("asr", 16, kernel=3), len(src), len(tgt)),
                    src.tokens, tgt.tokens)
    pack(tmp_path / "asr.pt", prepared_data, tmp_path / "pack", {})
    with pytest.raises(SateError, match="not a model with a Whisper acoustic encoder"):
        run(tmp_path / "pack", prepared_data, "tst-COMMON")
