"""Tiny models, token lists and batches shared by the model tests (CPU, milliseconds each)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from sate.models.tiny import tiny_config

SRC_TOKENS = ["<blank>", "<unk>"] + [f"s{i}" for i in range(10)] + ["<sos/eos>"]
TGT_TOKENS = ["<blank>", "<unk>"] + [f"t{i}" for i in range(12)] + ["<sos/eos>"]



def _tiny_conf(task: str, **changes: Any) -> dict[str, Any]:
    """The tiny config of `task`; keyword arguments replace whole sections or values."""
    conf = tiny_config(task, 16, kernel=3)
    conf.update(copy.deepcopy(changes))
    return conf


def _make_batch(seed: int = 0, frames: tuple[int, ...] = (48, 40, 33)) -> dict[str, Any]:
    """A batch in the data pipeline's contract: -1 padding, no sos/eos."""
    g = torch.Generator().manual_seed(seed)
    b = len(frames)
    src_lengths = torch.tensor([4, 3, 2][:b])
    tgt_lengths = torch.tensor([5, 2, 3][:b])

    def padded(lengths: torch.Tensor, vocab: int) -> torch.Tensor:
        out = torch.full((b, int(lengths.max())), -1, dtype=torch.long)
        for i, n in enumerate(lengths.tolist()):
            out[i, :n] = torch.randint(2, vocab - 1, (n,), generator=g)
        return out

    feats = torch.randn(b, max(frames), 80, generator=g)
    return {"feats": feats, "feats_lengths": torch.tensor(frames), "src": padded(src_lengths, len(SRC_TOKENS)),
            "src_lengths": src_lengths, "tgt": padded(tgt_lengths, len(TGT_TOKENS)), "tgt_lengths": tgt_lengths,
            "ids": [f"utt{i}" for i in range(b)]}


@pytest.fixture
def build() -> Callable[..., Any]:
    """build(task, **changes) -> a tiny model with seeded weights."""
    from sate.models import build_model

    def _build(task: str, seed: int = 0, **changes: Any) -> Any:
        torch.manual_seed(seed)
        return build_model(task, _tiny_conf(task, **changes), len(SRC_TOKENS), len(TGT_TOKENS))

    return _build


@pytest.fixture
def batch() -> dict[str, Any]:
    return _make_batch()


@pytest.fixture
def make_batch() -> Callable[..., dict[str, Any]]:
    """make_batch(seed, frames) -> a batch."""
    return _make_batch


@pytest.fixture
def tiny_conf() -> Callable[..., dict[str, Any]]:
    """tiny_conf(task, **changes) -> the tiny config dict."""
    return _tiny_conf


@pytest.fixture
def src_tokens() -> list[str]:
    return list(SRC_TOKENS)


@pytest.fixture
def tgt_tokens() -> list[str]:
    return list(TGT_TOKENS)


@pytest.fixture
def files(tmp_path: Path, build: Callable[..., Any], src_tokens: list[str], tgt_tokens: list[str]) -> dict[str, Any]:
    """An ASR and an MT model file, as the recipe's pre-training stages leave them, and the two models."""
    from sate.models import save_model_file

    asr, mt = build("asr", seed=1), build("mt", seed=2)
    save_model_file(tmp_path / "asr.pt", asr, src_tokens, tgt_tokens)
    save_model_file(tmp_path / "mt.pt", mt, src_tokens, tgt_tokens)
    return {"asr": asr.eval(), "mt": mt.eval(), "asr_path": str(tmp_path / "asr.pt"),
            "mt_path": str(tmp_path / "mt.pt")}
