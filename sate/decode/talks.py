"""Whole talks as one stream: `sate evaluate --stream POLICY --talks` (StreamLAAL, Papi et al. 2024).

The split's rows that share an ``audio`` file are one talk. Each talk is read from its start, block by block as it
is streamed (`audio_blocks`: a talk is never held whole), and fed ``chunk`` seconds at a time to
`sate.decode.simultaneous.live` (the VAD cuts it as it goes, as `sate stream` does, so the reference segmentation
is never seen), and every shown word gets the seconds of the talk read when it was shown (ideal delay) and when it
was shown in a live stream, decoding included (computation-aware, as in `simulate`: piece j arrives at a_j, is done
at f_j = max(a_j, f_(j-1)) + its compute time). The talk's words are then re-segmented to the reference rows
(`sate.scoring.resegment`), and each row gets its words, with delays counted from the row's start (its
``offset``): StreamLAAL is the LAAL of these per row (source = the row's duration), averaged as usual.

Its offline counterpart (`sate evaluate --talks` without ``--stream``) translates each talk whole as `sate
translate` does (VAD segments, the pack's beam search) and re-segments the words the same way: the quality that
the streamed talk is compared with.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from sate.data.audio import END_TOLERANCE_S, SAMPLE_RATE, audio_blocks, rechunk, wav_info
from sate.decode.api import SpeechTranslator
from sate.decode.options import DecodeOptions, StreamPolicy, check_chunk
from sate.decode.simultaneous import live
from sate.decode.vad import VadOptions
from sate.errors import SateError
from sate.scoring.resegment import resegment


@dataclass(frozen=True)
class TalkWords:
    """A talk's shown words in order, each with its ideal and computation-aware delay from the talk's start."""

    words: list[str]
    delays: list[float]
    elapsed: list[float]
    duration: float
    chunks: int


@dataclass(frozen=True)
class Segment:
    """One reference row's share of a re-segmented talk; delays from the row's start, `duration` the row's."""

    translation: str
    duration: float
    delays: list[float]
    elapsed: list[float]


class _Clock:
    """The pieces of a recording (blocks of 16 kHz samples), read as they are asked for and timed: when the consumer
    of `live` sees a commit, `elapsed()` is the live time at which the piece being decoded is done so far. Reading
    the file is not counted (in a live stream the audio arrives by itself)."""

    def __init__(self, blocks: Iterable[np.ndarray], chunk: float) -> None:
        self.blocks, self.step = blocks, round(chunk * SAMPLE_RATE)
        self.count = 0
        self.samples = 0  # read so far
        self.done = 0.0  # f of the previous piece
        self.arrived = 0.0
        self.started = 0.0

    def pieces(self) -> Iterator[np.ndarray]:
        source = rechunk(self.blocks, self.step)
        while True:
            now = time.perf_counter()
            piece = next(source, None)
            if piece is None:
                self.started += time.perf_counter() - now
                return
            if self.count:
                self.done = max(self.arrived, self.done) + now - self.started
            self.count += 1
            self.samples += len(piece)
            self.arrived = self.samples / SAMPLE_RATE
            self.started = time.perf_counter()
            yield piece

    def elapsed(self) -> float:
        return max(self.arrived, self.done) + time.perf_counter() - self.started


def stream_talk(translator: SpeechTranslator, blocks: Iterable[np.ndarray], spec: StreamPolicy, chunk: float,
                options: DecodeOptions | None = None, vad: VadOptions | None = None) -> TalkWords:
    """Translate a whole talk, given as blocks of 16 kHz samples (`audio_blocks` of its file: read as it is
    streamed, so the talk is never held; ``[samples]`` for one in memory), with `live`; every shown word and its
    delays."""
    check_chunk(chunk)
    clock = _Clock(blocks, chunk)
    words: list[str] = []
    delays: list[float] = []
    elapsed: list[float] = []
    shown = 0  # words of the current segment already taken
    for commit in live(translator, clock.pieces(), spec, options, vad):
        new = commit.text.split()[shown:]
        now = clock.elapsed()
        words += new
        delays += [commit.t] * len(new)
        elapsed += [now] * len(new)
        shown = 0 if commit.final else shown + len(new)
    return TalkWords(words, delays, elapsed, clock.samples / SAMPLE_RATE, clock.count)


def split_talk(talk: TalkWords, rows: list[dict]) -> list[Segment]:
    """The talk's words re-segmented to its rows (in the rows' order), delays from each row's offset."""
    parts = resegment(talk.words, [str(r["tgt"]) for r in rows])
    out = []
    for row, indices in zip(rows, parts, strict=True):
        start = float(row["offset"])
        out.append(Segment(" ".join(talk.words[i] for i in indices), float(row["duration"]),
                           [talk.delays[i] - start for i in indices], [talk.elapsed[i] - start for i in indices]))
    return out


def group_talks(rows: list[dict]) -> dict[str, list[int]]:
    """The row indices of each talk (rows sharing an ``audio`` file, however named), in the order of their offsets;
    every talk's file is checked before any is decoded: it must be readable audio that its rows do not run past (rows
    of another file would be given the words of this one)."""
    talks: dict[str, list[int]] = {}
    named: dict[str, str] = {}  # a file as its first row names it, by its real path: rows naming it through a
    for k, row in enumerate(rows):  # link are the same talk (as two talks, each got the whole talk's words)
        audio = str(row["audio"])
        talks.setdefault(named.setdefault(os.path.realpath(audio), audio), []).append(k)
    for audio, members in talks.items():
        duration = wav_info(audio).duration
        last = max(members, key=lambda k: float(rows[k]["offset"]) + float(rows[k]["duration"]))
        end = float(rows[last]["offset"]) + float(rows[last]["duration"])
        if end > duration + END_TOLERANCE_S:
            raise SateError(f"{audio}: row {rows[last]['id']} ends at {end:.2f} s, past the end of the audio "
                            f"({duration:.2f} s): is the manifest of another file?")
    return {audio: sorted(members, key=lambda k: float(rows[k]["offset"])) for audio, members in talks.items()}


def translate_talks(translator: SpeechTranslator, rows: list[dict], options: DecodeOptions | None = None,
                    batch_size: int = 16) -> list[str]:
    """Every talk of manifest rows translated whole as `sate translate` does, re-segmented: a line per row."""
    out: dict[int, str] = {}
    for audio, members in group_talks(rows).items():
        words = (translator.translate([audio], options, batch_size)[0].translation or "").split()
        for k, indices in zip(members, resegment(words, [str(rows[k]["tgt"]) for k in members]), strict=True):
            out[k] = " ".join(words[i] for i in indices)
    return [out[k] for k in range(len(rows))]


def stream_talks(translator: SpeechTranslator, rows: list[dict], spec: StreamPolicy, chunk: float,
                 options: DecodeOptions | None = None) -> tuple[list[Segment], int]:
    """Every talk of manifest rows streamed whole and re-segmented: a `Segment` per row in row order, and the
    number of chunks read. A talk's rows are matched to its words in the order of their offsets."""
    from tqdm import tqdm  # slow: tqdm, only while progress shows

    out: dict[int, Segment] = {}
    chunks = 0
    for audio, members in tqdm(group_talks(rows).items(), unit="talk", desc=f"stream {spec}", file=sys.stderr):
        talk = stream_talk(translator, audio_blocks(audio), spec, chunk, options)
        chunks += talk.chunks
        for k, segment in zip(members, split_talk(talk, [rows[k] for k in members]), strict=True):
            out[k] = segment
    return [out[k] for k in range(len(rows))], chunks
