"""Read LibriSpeech subsets: the LibriSpeech reader of `sate prep` (`sate.data.prep`), transcripts only.

A subset (``LibriSpeech/train-clean-100``) holds ``<reader>/<chapter>/<reader>-<chapter>.trans.txt`` with one
line ``<reader>-<chapter>-<n> <TRANSCRIPT>`` per utterance, beside ``<reader>-<chapter>-<n>.flac``. Each
utterance becomes one row: its whole flac, speaker = the reader, ``src`` the uppercase transcript as given
(normalised into ``src_norm`` like MuST-C's, so lowercased), ``tgt`` null: LibriSpeech trains ASR only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sate.data.audio import segment_samples
from sate.data.manifest import read_text_lines, refuse_line_break
from sate.data.rows import RowFilter, SplitResult, audio_info
from sate.errors import SateError, shown


def _transcript_files(subset: Path) -> list[Path]:
    """``READER/CHAPTER/*.trans.txt`` under ``subset``, as ``glob`` finds them (hidden names left out), each folder
    listed with os.listdir: `Path.glob` found nothing in a reader's or chapter's folder of mode 0300, and its
    transcripts were left out of the split without a word (nineteenth hostile pass); now Permission denied names
    it."""
    def folders(parent: Path) -> list[Path]:
        return [parent / name for name in os.listdir(parent) if not name.startswith(".") and (parent / name).is_dir()]

    return [chapter / name for reader in folders(subset) for chapter in folders(reader)
            for name in os.listdir(chapter) if name.endswith(".trans.txt") and not name.startswith(".")]


def _utterance_audio(chapter: Path, utt: str) -> Path:
    """An utterance's audio: its ``.flac``, or where that is not there its ``.wav``, a subset converted to WAV (for
    faster reading, by Kaldi-era scripts): "UTT.flac: audio file is missing" named the one name the folder did not
    hold (twenty-seventh hostile pass)."""
    flac, wav = chapter / f"{utt}.flac", chapter / f"{utt}.wav"
    return wav if not os.path.lexists(flac) and os.path.lexists(wav) else flac


def prepare_split(subset: Path, split: str, row_filter: RowFilter) -> SplitResult:
    """One subset's rows, transcript files in path order and lines in file order (nothing is written here)."""
    if not subset.is_dir():
        raise SateError(f"{subset}: not a directory (give a LibriSpeech subset such as LibriSpeech/train-clean-100)")
    transcripts = sorted(_transcript_files(subset))
    if not transcripts:
        raise SateError(f"{subset}: no transcripts (<reader>/<chapter>/<reader>-<chapter>.trans.txt); give a "
                        "LibriSpeech subset such as LibriSpeech/train-clean-100")
    result = SplitResult(split)
    seen: dict[str, str] = {}
    for path in transcripts:
        reader, chapter = path.parent.parent.name, path.parent.name
        if path.name != f"{reader}-{chapter}.trans.txt":
            raise SateError(f"{path}: a transcript file in {reader}/{chapter}/ must be named "
                            f"{reader}-{chapter}.trans.txt")
        utterance = re.compile(rf"{re.escape(reader)}-{re.escape(chapter)}-\d+")
        for lineno, text in enumerate(read_text_lines(path, strip_bom=True), start=1):
            if not text.strip():
                continue
            where = f"{path}:{lineno}"
            # a file whose lines end with one was one utterance holding the others, exit 0
            refuse_line_break(text, where, "a transcript line")
            parts = text.split(maxsplit=1)
            if len(parts) < 2 or not utterance.fullmatch(parts[0]):
                raise SateError(f"{where}: expected '{reader}-{chapter}-<n> <TRANSCRIPT>', got {shown(text.strip())}")
            utt, transcript = parts
            if utt in seen:
                raise SateError(f"{where}: utterance {utt} appears twice (first at {seen[utt]})")
            seen[utt] = where
            info = audio_info(_utterance_audio(path.parent, utt), where)
            row_filter.add(result, utt, info.path, 0.0, segment_samples(0.0, info.duration, info), reader,
                           transcript, None)
    return result


def prepare(subsets: list[Path], splits: list[str], row_filter: RowFilter) -> list[SplitResult]:
    """Each subset into the split of the same position in ``splits``, checked before anything is written."""
    return [prepare_split(subset, split, row_filter) for subset, split in zip(subsets, splits, strict=True)]
