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


def test_a_row_under_a_tenth_of_a_second_is_read_as_evaluate_reads_it(tmp_path: Path, prepared_data: Path,
                                                                       whisper_hub_dir: Path) -> None:
    """A row under 201 samples was refused by Whisper's front-end naming no row, and one under 0.1 s encoded shorter
    than `sate evaluate` encodes it; both are padded to 0.1 s now, as evaluate pads them: its WER (29th hostile
    pass)."""
    import json

    from sate.data.manifest import read_manifest, write_manifest
    from sate.decode.evaluate import evaluate

    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    conf = {"d_model": 16, "acoustic": {"type": "whisper", "path": str(whisper_hub_dir), "freeze": "all"}}
    torch.manual_seed(0)
    save_model_file(tmp_path / "asr.pt", build_model("asr", conf, len(src), len(tgt)), src.tokens, tgt.tokens)
    pack(tmp_path / "asr.pt", prepared_data, tmp_path / "pack", {})
    data = tmp_path / "data"
    data.mkdir()
    rows = read_manifest(prepared_data / "tst-COMMON.jsonl")[:3]
    rows[0] |= {"duration": 0.005, "n_frames": 1}  # 80 samples
    rows[1] |= {"duration": 0.05, "n_frames": 5}
    write_manifest(data / "tst-COMMON.jsonl", rows)
    natural = run(tmp_path / "pack", data, "tst-COMMON")["rows"][0]
    evaluate(tmp_path / "pack", data, "tst-COMMON", tmp_path / "eval")
    assert natural["wer"] == round(json.loads((tmp_path / "eval" / "results.json").read_text())["wer"], 2)
