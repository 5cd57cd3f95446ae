"""The rows every corpus reader of `sate prep` produces, and the one rule that keeps or drops them.

The readers (`sate.data.mustc`, `libri_trans`, `librispeech`, `kaldi_dir`) build a `SplitResult` per split
through one `RowFilter`; `sate.data.prep` is the command that picks a reader and writes the manifests.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sate.data.audio import SAMPLE_RATE, WavInfo, num_frames, wav_info
from sate.data.manifest import row_problem
from sate.data.text import normalize_source
from sate.errors import SateError
from sate.files import real_path


@dataclass
class SplitResult:
    """Rows to write and what was dropped (training splits) or noticed (others)."""

    split: str
    rows: list[dict] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)
    flagged: dict[str, list[str]] = field(default_factory=dict)
    # the audio slices of the dropped rows, by reason: a doubled split (Augmented LibriSpeech's Google Translate rows)
    # drops a segment's two rows, so its rows are not its segments
    dropped_slices: dict[str, set[tuple[str, float, int]]] = field(default_factory=dict)
    # the ids of rows whose text held a carriage return inside a line, read as a space (`RowFilter.add`)
    carriage_returns: list[str] = field(default_factory=list)

    def dropped_count(self, reason: str) -> str:
        """How many rows ``reason`` dropped, as ``6``, or ``6 rows of 3 segments`` where they read fewer slices."""
        rows, segments = self.dropped[reason], len(self.dropped_slices.get(reason, ()))
        return f"{rows} rows of {segments} segments" if 0 < segments < rows else str(rows)


def audio_info(path: Path, where: str) -> WavInfo:
    """`wav_info` of a corpus's audio file, an error also naming the corpus line (`where`) that refers to it."""
    try:
        return wav_info(path)
    except SateError as err:
        raise SateError(f"{where}: {err}") from None


STRAY_CR = re.compile(r"[ \t]*\r[\r \t]*")


def without_carriage_returns(text: str) -> str:
    """``text`` with each carriage return inside it, and the blanks around it, read as one space. A CRLF text whose
    lines were joined at their ``\\n`` alone (a translation's two lines made one) kept the ``\\r`` in `tgt`
    ("Zeile\\r zweite"), exit 0: a reference holding a control character that no hypothesis writes, and a piece of the
    target vocabulary (hand31m, left; 32nd hostile pass). A ``\\r`` is a line break, never a text's content; where a
    line ends with one, `read_text_lines` stripped it with the line end."""
    return STRAY_CR.sub(" ", text) if "\r" in text else text


def is_training_split(name: str) -> bool:
    """Whether `sate prep` filters a split: train, train_sp, train-clean-100, ..."""
    return name.startswith("train")


# `sate prep`'s duration range of training splits when --min-duration/--max-duration are not given (s)
MIN_DURATION = 0.1
MAX_DURATION = 30.0


@dataclass(frozen=True)
class RowFilter:
    """Adds rows to a split's result, dropping bad ones from training splits only. ``range_given``: the duration range
    was the user's (--min-duration, --max-duration), so another split's rows outside it are named."""

    min_duration: float = MIN_DURATION
    max_duration: float = MAX_DURATION
    range_given: bool = False

    def add(self, result: SplitResult, seg_id: str, audio: Path, offset: float, n_samples: int, speaker: str,
            src: str, tgt: str | None) -> None:
        """One segment of `n_samples` 16 kHz samples at `offset` s of `audio`; `tgt` None: no translation."""
        broken = "\r" in src or (tgt is not None and "\r" in tgt)
        if broken:
            src, tgt = without_carriage_returns(src), None if tgt is None else without_carriage_returns(tgt)
        src = src.strip()
        tgt = None if tgt is None else tgt.strip()
        row = {"id": seg_id, "audio": str(real_path(audio)), "offset": offset, "duration": n_samples / SAMPLE_RATE,
               "n_frames": num_frames(n_samples), "speaker": speaker, "src": src, "src_norm": normalize_source(src),
               "tgt": tgt}
        refused = row_problem(row)
        if refused is not None:  # an id with a zero-width space from a Kaldi `text` was written, then refused
            raise SateError(f"{result.split}: a row every later stage would refuse: {refused}; rename it in the "
                            "corpus")
        problems = []
        if not src or tgt == "":
            problems.append("empty text")
        elif not row["src_norm"]:
            problems.append("empty source after normalisation")
        if n_samples == 0:
            problems.append("zero length")
        outside = f"duration outside {self.min_duration:g}-{self.max_duration:g} s"
        if is_training_split(result.split):
            if not problems and not self.min_duration <= row["duration"] <= self.max_duration:
                problems = [outside]
            if problems:
                result.dropped[problems[0]] += 1
                result.dropped_slices.setdefault(problems[0], set()).add((row["audio"], offset, n_samples))
                return
        elif self.range_given and n_samples and not self.min_duration <= row["duration"] <= self.max_duration:
            # said as the other problems are: `--splits kaldi --max-duration 20` (docs/data.md's extra ASR split, then
            # trained on) kept rows of minutes without a word, the option given doing nothing (28th hostile pass); not
            # under the default range, of which an evaluation split's user can do nothing (dev-clean's 30 s and over)
            problems.append(outside)
        for problem in problems:
            result.flagged.setdefault(problem, []).append(seg_id)
        if broken:
            result.carriage_returns.append(seg_id)
        result.rows.append(row)
