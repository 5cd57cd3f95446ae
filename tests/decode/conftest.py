"""Decoding fixtures: tiny MT and ST models trained until their outputs are peaked.

A beam search test on an untrained model says little: its next-token distributions are nearly flat,
so every hypothesis runs to the maximum length and ties are everywhere. These models are trained for
a hundred or so full-batch Adam steps on the 12 train utterances (a few seconds in all): their outputs
are peaked and resemble their targets. How close they come differs between machines (the same seed
takes another path where BLAS rounds differently), so no test may assert their quality: tests compare
two code paths on the same model, or a property that any model has. They are written as sate model
files like `sate average` writes, once per run (the pytest-xdist workers share them).

Fixtures (session scope; tests must not change the models):
- ``decode_vocabs``: (src, tgt) `Vocabulary` of `prepared_data`.
- ``trained_mt_file``, ``trained_st_file``: paths of the model files.
- ``trained_mt``, ``trained_st``: the models, loaded from those files, in eval mode.
- ``text_batch``, ``speech_batch``: every train and dev utterance of `prepared_data` in one collated
  batch (17 items; the first 12 are the train split), text only and with features (global CMVN).
- ``st_pack``: an untrained tiny ST model, packed (for what reads audio, not for what it translates).
- ``utterances``: every utterance of `prepared_data` (about 1 minute of speech), as 16 kHz samples.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from sate.data.audio import read_segment
from sate.data.dataset import SpeechDataset, TextDataset, collate
from sate.data.manifest import read_manifest
from sate.data.vocab import Vocabulary
from sate.decode.pack import pack
from sate.models import build_model
from sate.models.base import SateModel
from sate.models.model_file import model_from_file, save_model_file
from sate.models.tiny import tiny_config

Seeded = Callable[[], AbstractContextManager[None]]
BuiltOnce = Callable[[pytest.TempPathFactory, str, Callable[[Path], None]], Path]
STEPS = {"mt": 80, "st": 150}  # fewer ST steps leave a decoder that ignores the audio


def _train(task: str, batch: dict[str, Any], src: Vocabulary, tgt: Vocabulary, seeded: Seeded) -> SateModel:
    """Full-batch Adam on the train utterances: SATE_TEST_SEED, one thread, deterministic algorithms."""
    with seeded():
        conf = tiny_config(task, acoustic_type="transformer", decoder_layers=2, dropout=0.0)
        model = build_model(task, conf, len(src), len(tgt))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        model.train()
        for _ in range(STEPS[task]):
            optimizer.zero_grad()
            model(batch)["loss"].backward()
            optimizer.step()
    return model.eval()


def _rows(prepared_data: Path, split: str) -> int:
    return sum(1 for line in (prepared_data / f"{split}.jsonl").read_text().splitlines() if line.strip())


@pytest.fixture(scope="session")
def decode_vocabs(prepared_data: Path) -> tuple[Vocabulary, Vocabulary]:
    return Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")


@pytest.fixture(scope="session")
def speech_batch(prepared_data: Path, decode_vocabs: tuple[Vocabulary, Vocabulary]) -> dict[str, Any]:
    src, tgt = decode_vocabs
    items = [item for split in ("train", "dev")
             for item in SpeechDataset.from_data_dir(prepared_data, split, src, tgt, cmvn=prepared_data / "cmvn.json")]
    return collate(items)


@pytest.fixture(scope="session")
def text_batch(prepared_data: Path, decode_vocabs: tuple[Vocabulary, Vocabulary]) -> dict[str, Any]:
    src, tgt = decode_vocabs
    items = [item for split in ("train", "dev")
             for item in TextDataset.from_manifest(prepared_data / f"{split}.jsonl", src, tgt)]
    return collate(items)


def _model_file(tmp_path_factory: pytest.TempPathFactory, built_once: BuiltOnce, task: str, batch: dict[str, Any],
                vocabs: tuple[Vocabulary, Vocabulary], n_train: int, seeded: Seeded) -> Path:
    """The model trained once per run (the xdist workers share it: training is seeded and deterministic)."""
    def build(out: Path) -> None:
        model = _train(task, {k: v[:n_train] for k, v in batch.items()}, *vocabs, seeded)
        save_model_file(out / "model.pt", model, vocabs[0].tokens, vocabs[1].tokens)

    return built_once(tmp_path_factory, f"decode_{task}", build) / "model.pt"


@pytest.fixture(scope="session")
def trained_mt_file(tmp_path_factory: pytest.TempPathFactory, built_once: BuiltOnce, prepared_data: Path,
                    text_batch: dict[str, Any], decode_vocabs: tuple[Vocabulary, Vocabulary], seeded: Seeded) -> Path:
    return _model_file(tmp_path_factory, built_once, "mt", text_batch, decode_vocabs, _rows(prepared_data, "train"),
                       seeded)


@pytest.fixture(scope="session")
def trained_st_file(tmp_path_factory: pytest.TempPathFactory, built_once: BuiltOnce, prepared_data: Path,
                    speech_batch: dict[str, Any], decode_vocabs: tuple[Vocabulary, Vocabulary],
                    seeded: Seeded) -> Path:
    return _model_file(tmp_path_factory, built_once, "st", speech_batch, decode_vocabs,
                       _rows(prepared_data, "train"), seeded)


@pytest.fixture(scope="session")
def trained_mt(trained_mt_file: Path) -> SateModel:
    return model_from_file(trained_mt_file)[0]


@pytest.fixture(scope="session")
def trained_st(trained_st_file: Path) -> SateModel:
    return model_from_file(trained_st_file)[0]


@pytest.fixture(scope="session")
def st_pack(tmp_path_factory: pytest.TempPathFactory, prepared_data: Path) -> Path:
    """An untrained tiny ST model, packed; a short maximum length keeps its decoding fast."""
    root = tmp_path_factory.mktemp("translate")
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    torch.manual_seed(0)
    model = build_model("st", tiny_config("st", 16, kernel=3), len(src), len(tgt))
    save_model_file(root / "st.pt", model, src.tokens, tgt.tokens)
    pack(root / "st.pt", prepared_data, root / "pack", {"max_len_ratio": 0.05})
    return root / "pack"


@pytest.fixture(scope="session")
def utterances(prepared_data: Path) -> list[np.ndarray]:
    """Every utterance of the fixture corpus (about 1 minute of speech), as 16 kHz samples."""
    return [read_segment(r["audio"], r["offset"], r["duration"])
            for split in ("train", "dev", "tst-COMMON") for r in read_manifest(prepared_data / f"{split}.jsonl")]
