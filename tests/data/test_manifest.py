"""Manifests: what `sate prep` writes and every command reads back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sate.data.manifest import csv_records, csv_rows, manifest_bytes, read_manifest, write_manifest
from sate.errors import SateError


def test_a_row_naming_audio_that_is_not_utf8_is_written_and_read_back(tmp_path: Path) -> None:
    """Nineteenth hostile pass: `sate prep` of a corpus under a folder named in bytes that are not UTF-8 (Latin-1
    "café") ended in a UnicodeEncodeError traceback as the manifest was written."""
    audio = os.fsdecode(b"/corpora/caf\xe9/ted_1.wav")
    row = {"id": "ted_1_0", "audio": audio, "offset": 0.0, "duration": 1.5, "n_frames": 148, "speaker": "spk.1",
           "src": "Hello.", "src_norm": "hello", "tgt": "Hallo."}
    write_manifest(tmp_path / "dev.jsonl", [row])
    assert read_manifest(tmp_path / "dev.jsonl") == [row]
    assert manifest_bytes([row]) == (tmp_path / "dev.jsonl").read_bytes()


@pytest.mark.parametrize("brk", ["\x85", "\u2028", "\u2029"])
def test_a_csv_log_whose_lines_end_with_nel_or_a_separator_is_said_so(tmp_path: Path, brk: str) -> None:
    """The csv module splits on neither: the whole log was its header, and `sate report --curves` said the experiment
    "holds no training logs to draw" (twentieth hostile pass). Inside a later row such a character is text."""
    path = tmp_path / "metrics.csv"
    path.write_text(f"epoch,step,loss{brk}0,1,5.0{brk}", encoding="utf-8")
    for read in (csv_rows, csv_records):
        with pytest.raises(SateError, match=rf"^{path}:1: not a CSV log: .* inside its header line \(lines that end "
                                            r"with it\?\); save it with \\n or \\r\\n line ends$"):
            read(path)
    path.write_text(f"epoch,step,note\n0,1,a{brk}b\n", encoding="utf-8")
    assert csv_rows(path) == [{"epoch": "0", "step": "1", "note": f"a{brk}b"}]

