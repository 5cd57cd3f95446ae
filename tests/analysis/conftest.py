"""Tiny untrained ASR, MT and SATE model files on the token lists of the shared `prepared_data` corpus.

Untrained weights are enough here: the analysis reads attention, it does not judge translations.
Two layers per encoder so that plots and tables have more than one point per line.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from sate.data.vocab import Vocabulary
from sate.models import SateModel, build_model, save_model_file
from sate.models.tiny import tiny_config

CONFIGS = {
    # the ASR encoder is a Conformer, so the relative-position attention subclass is covered too
    "asr": tiny_config("asr", 16, layers=2, kernel=3),
    "asr_hybrid": tiny_config("asr", 16, layers=2, acoustic_type="transformer", decoder_layers=1),
    "mt": tiny_config("mt", 16, layers=2),
    "st": tiny_config("st", 16, layers=2, acoustic_type="transformer"),
    "st_shrink": tiny_config("st", 16, layers=2, acoustic_type="transformer", adaptor="shrink", decoder_layers=3),
    # the E2E ST baseline: no adaptor, no textual encoder; the decoder attends to the acoustic states
    "st_baseline": tiny_config("st", 16, layers=2, acoustic_type="transformer", baseline=True),
}


def _tiny_model(name: str, src_size: int, tgt_size: int) -> SateModel:
    torch.manual_seed(0)
    return build_model(name.split("_")[0], CONFIGS[name], src_size, tgt_size)


@pytest.fixture
def tiny_model() -> Callable[[str, int, int], SateModel]:
    """tiny_model(name, src_size, tgt_size) -> the seeded tiny model of CONFIGS[name], eval mode."""
    return lambda name, src_size, tgt_size: _tiny_model(name, src_size, tgt_size).eval()


@pytest.fixture(scope="session")
def vocabs(prepared_data: Path) -> tuple[Vocabulary, Vocabulary]:
    return Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")


@pytest.fixture(scope="session")
def model_files(tmp_path_factory: pytest.TempPathFactory, vocabs: tuple[Vocabulary, Vocabulary]) -> dict[str, Path]:
    """name -> model file, written as `sate average` writes them (exp/<name>/model.pt)."""
    src, tgt = vocabs
    root = tmp_path_factory.mktemp("analysis_exp")
    out = {}
    for name in CONFIGS:
        out[name] = root / name / "model.pt"
        save_model_file(out[name], _tiny_model(name, len(src), len(tgt)), src.tokens, tgt.tokens)
    return out


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    assert data[-8:-4] == b"IEND", f"{path} is truncated"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def png_size() -> Callable[[Path], tuple[int, int]]:
    """png_size(path) -> (width, height) from the IHDR chunk; fails unless the file is a complete PNG."""
    return _png_size
