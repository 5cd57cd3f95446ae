"""Manifests: what `sate prep` writes and every command reads back."""

from __future__ import annotations

import os
from pathlib import Path

from sate.data.manifest import manifest_bytes, read_manifest, write_manifest


def test_a_row_naming_audio_that_is_not_utf8_is_written_and_read_back(tmp_path: Path) -> None:
    """Nineteenth hostile pass: `sate prep` of a corpus under a folder named in bytes that are not UTF-8 (Latin-1
    "café") ended in a UnicodeEncodeError traceback as the manifest was written."""
    audio = os.fsdecode(b"/corpora/caf\xe9/ted_1.wav")
    row = {"id": "ted_1_0", "audio": audio, "offset": 0.0, "duration": 1.5, "n_frames": 148, "speaker": "spk.1",
           "src": "Hello.", "src_norm": "hello", "tgt": "Hallo."}
    write_manifest(tmp_path / "dev.jsonl", [row])
    assert read_manifest(tmp_path / "dev.jsonl") == [row]
    assert manifest_bytes([row]) == (tmp_path / "dev.jsonl").read_bytes()
