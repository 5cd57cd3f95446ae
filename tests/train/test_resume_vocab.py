"""A resume on other vocabularies than the run began with is refused, naming the checkpoint and the token list."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from sate.cli import main
from sate.data.vocab import Vocabulary

MakeConfig = Callable[..., Path]


def fake_run(exp: Path, src: list[str], tgt: list[str]) -> Path:
    """A checkpoint as far as resuming reads it before building the model: the header with the token lists."""
    (exp / "checkpoints").mkdir(parents=True)
    path = exp / "checkpoints" / "last.ckpt"
    torch.save({"sate": {"run_id": "0123456789ab", "src_tokens": src, "tgt_tokens": tgt}, "state_dict": {},
                "global_step": 7, "epoch": 1}, path)
    return path


@pytest.mark.parametrize("side", ["src", "tgt"])
def test_a_resume_on_a_reordered_vocabulary_is_refused(tmp_path: Path, prepared_data: Path, make_config: MakeConfig,
                                                       side: str, capsys: pytest.CaptureFixture[str]) -> None:
    tokens = {s: Vocabulary.load(prepared_data, s).tokens for s in ("src", "tgt")}
    other = dict(tokens)
    other[side] = tokens[side][:4] + [tokens[side][5], tokens[side][4]] + tokens[side][6:]  # same size, same set
    ckpt = fake_run(tmp_path / "exp", other["src"], other["tgt"])
    config = make_config(tmp_path, "asr" if side == "src" else "st", prepared_data)
    assert main(["train", "--config", str(config), "--exp", str(tmp_path / "exp")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"{ckpt}: trained on another {side} vocabulary than {prepared_data} holds now" in err
    assert f"first difference at line 5 of tokens_{side}.txt" in err
    assert not (tmp_path / "exp" / "config.yaml").exists()  # refused before the run wrote anything
