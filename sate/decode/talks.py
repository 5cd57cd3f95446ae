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

A talk is its rows' stretch of the file (`talk_span`): where the file holds speech before its first row or after its
last (a manifest cut by hand, `head -n 60`, ends inside a talk), that speech is not decoded, since no row of the
split would be scored against it: its words went to the nearest rows (twenty-fourth hostile pass). A talk so cut is
said on stderr (`cut_note`). Only its ends: a gap between two rows cannot be told from one the corpus leaves, and a
streamed talk is one continuous stream.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from sate.data.audio import END_TOLERANCE_S, SAMPLE_RATE, audio_blocks, rechunk, wav_info
from sate.decode.api import PreparedAudio, SpeechTranslator
from sate.decode.options import DecodeOptions, StreamPolicy, check_chunk
from sate.decode.simultaneous import live
from sate.decode.vad import VadOptions, cut_blocks, file_segments, no_speech
from sate.errors import SateError, one_line
from sate.scoring.resegment import join_units, resegment, units

# how far past the rows (beyond `padding`) a VAD span may reach and still be the rows' own speech: the spans of a
# prep-cut talk's first and last sentences end 0.11-0.14 s past them (energy and silero VAD, the synthetic talks)
SPAN_SLACK = 0.15


@dataclass(frozen=True)
class TalkWords:
    """A talk's shown units in order (whitespace words, a Chinese or Japanese character each), each with its ideal and
    computation-aware delay from the talk's start."""

    words: list[str]
    glued: list[bool]  # per unit: written without a space after the one before it
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
                options: DecodeOptions | None = None, vad: VadOptions | None = None, start: float = 0.0) -> TalkWords:
    """Translate a whole talk, given as blocks of 16 kHz samples (`audio_blocks` of its file: read as it is
    streamed, so the talk is never held; ``[samples]`` for one in memory), with `live`; every shown word and its
    delays. ``start``: the seconds of the file before the first block (a talk read from its first row's start), added
    to every time so that delays count from the file's start as the rows' offsets do."""
    chunk = check_chunk(chunk)
    clock = _Clock(blocks, chunk)
    words: list[str] = []
    glued: list[bool] = []
    delays: list[float] = []
    elapsed: list[float] = []
    shown = 0  # units of the current segment already taken
    for commit in live(translator, clock.pieces(), spec, options, vad):
        parts, joined = units(commit.text)
        new = parts[shown:]
        now = clock.elapsed()
        words += new
        glued += joined[shown:]
        delays += [start + commit.t] * len(new)
        elapsed += [start + now] * len(new)
        shown = 0 if commit.final else shown + len(new)
    return TalkWords(words, glued, delays, elapsed, start + clock.samples / SAMPLE_RATE, clock.count)


def split_talk(talk: TalkWords, rows: list[dict]) -> list[Segment]:
    """The talk's words re-segmented to its rows (in the rows' order), delays from each row's offset."""
    # rows share the talk's units: a Chinese or Japanese character each, as `live` shows them (a word given whole,
    # as a Python caller may, is split so too, each part with the word's delays)
    words, glued, delays, elapsed = [], [], [], []
    for word, joined, delay, done in zip(talk.words, talk.glued, talk.delays, talk.elapsed, strict=True):
        parts, within = units(word)
        words += parts
        glued += [joined, *within[1:]]
        delays += [delay] * len(parts)
        elapsed += [done] * len(parts)
    out = []
    for row, indices in zip(rows, resegment(words, [str(r["tgt"]) for r in rows]), strict=True):
        start = float(row["offset"])
        out.append(Segment(join_units(words, glued, indices), float(row["duration"]),
                           [delays[i] - start for i in indices], [elapsed[i] - start for i in indices]))
    return out


def reference_length(text: object) -> int:
    """A reference row's length in the units its delays count: whitespace words, and a Chinese or Japanese character
    each, since those are shown and timed one at a time (`sate.decode.simultaneous`); a reference counted in
    whitespace words paced AL at a sentence a unit (a row whose output all came at 1.0 s gave a negative AL; review27z,
    twenty-seventh pass)."""
    return len(units(str(text))[0])


def count_talks(rows: list[dict]) -> int:
    """How many talks (files) the rows hold, as `group_talks` groups them: by real path (rows naming one file through
    a link, or as `./wav/x.wav` and `wav/x.wav`, were counted as two in `results.json`'s ``talks``)."""
    return len({os.path.realpath(str(row["audio"])) for row in rows})


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


def talk_span(spans: list[tuple[float, float]], rows: list[dict], vad: VadOptions | None = None
              ) -> tuple[float, float | None]:
    """The seconds of a talk's file to decode, given its VAD ``spans`` and its rows: from its start to its end (0,
    None) when no speech lies outside the rows, as a split that prep cuts holds its talks; else from ``padding``
    before the first row's start where speech comes before it, to ``padding`` after the last row's end where speech
    goes on after it (a span reaching more than SPAN_SLACK past the rows: the VAD's own spans end ``padding`` and a few
    frames after the speech). Cut there, as `sate translate` cuts a segment, the words of rows a hand-cut manifest
    left out are not given to the rows it kept."""
    padding = (vad or VadOptions()).padding
    first = min(float(r["offset"]) for r in rows)
    last = max(float(r["offset"]) + float(r["duration"]) for r in rows)
    begin = first - padding if any(a < first - padding - SPAN_SLACK for a, _ in spans) else 0.0
    end = last + padding if any(b > last + padding + SPAN_SLACK for _, b in spans) else None
    return max(0.0, begin), end


def cut_note(audio: str, begin: float, end: float | None, duration: float) -> str | None:
    """The stderr line of a talk read in part (`talk_span`), naming it and the seconds left out, or None when it is
    read whole. On real talks (MuST-C's: a jingle, applause before the first row) the VAD may find speech beyond a
    split's rows as prep cuts it; such a talk, decoded whole before the twenty-fourth hostile pass, is now cut, and
    its figure moves: said, not silent (its review)."""
    after = 0.0 if end is None else max(0.0, duration - end)
    if begin <= 0 and after <= 0:
        return None
    return (f"sate evaluate: note: {one_line(str(audio))}: speech lies beyond its rows; {begin:.2f} s before the "
            f"first row and {after:.2f} s after the last are not decoded (the talk is read from {begin:.2f} to "
            f"{duration - after:.2f} s of {duration:.2f} s)")


def _clipped(spans: list[tuple[float, float]], begin: float, end: float | None, vad: VadOptions | None = None
             ) -> list[tuple[float, float]]:
    """The VAD spans within [begin, end): those wholly outside dropped, those across a bound cut at it, and what is
    left of one shorter than the VAD keeps as speech (``min_speech`` of ``vad``, the settings that found the spans)
    dropped too: a sliver of a few samples, or of none once rounded, is no segment to decode ("holds no audio
    samples")."""
    stop = float("inf") if end is None else end
    shortest = (vad or VadOptions()).min_speech
    return [(max(a, begin), min(b, stop)) for a, b in spans if min(b, stop) - max(a, begin) >= shortest]


def _window(blocks: Iterable[np.ndarray], begin: float, end: float | None) -> Iterator[np.ndarray]:
    """The samples of a recording's blocks from ``begin`` to ``end`` seconds (None: to its end), block by block."""
    first, stop = round(begin * SAMPLE_RATE), None if end is None else round(end * SAMPLE_RATE)
    at = 0
    for block in blocks:
        lo, hi = max(0, first - at), len(block) if stop is None else max(0, min(len(block), stop - at))
        at += len(block)
        if hi > lo:
            yield block[lo:hi]
        if stop is not None and at >= stop:
            return


def translate_talks(translator: SpeechTranslator, rows: list[dict], options: DecodeOptions | None = None,
                    batch_size: int = 16, vad: VadOptions | None = None) -> list[str]:
    """Every talk of manifest rows translated whole as `sate translate` does, re-segmented: a line per row. ``vad``:
    how the talks are cut (the defaults, as `sate translate`'s)."""
    out: dict[int, str] = {}
    for audio, members in group_talks(rows).items():
        whole = translator.prepare(audio, vad=vad)
        begin, end = talk_span(whole.spans, [rows[k] for k in members], vad)
        note = cut_note(audio, begin, end, whole.duration)
        if note is not None:
            print(note, file=sys.stderr)
        spans = _clipped(whole.spans, begin, end, vad)
        prepared = PreparedAudio(whole.source, whole.duration, spans, cut_blocks(audio_blocks(audio), spans))
        words, glued = units(translator.decode_prepared([prepared], options, batch_size)[0].translation or "")
        for k, indices in zip(members, resegment(words, [str(rows[k]["tgt"]) for k in members]), strict=True):
            out[k] = join_units(words, glued, indices)
    return [out[k] for k in range(len(rows))]


def stream_talks(translator: SpeechTranslator, rows: list[dict], spec: StreamPolicy, chunk: float,
                 options: DecodeOptions | None = None, vad: VadOptions | None = None) -> tuple[list[Segment], int]:
    """Every talk of manifest rows streamed whole and re-segmented: a `Segment` per row in row order, and the
    number of chunks read. A talk's rows are matched to its words in the order of their offsets. ``vad``: how the
    talks are cut (the defaults, as `sate stream`'s)."""
    from tqdm import tqdm  # slow: tqdm, only while progress shows

    out: dict[int, Segment] = {}
    chunks = 0
    for audio, members in tqdm(group_talks(rows).items(), unit="talk", desc=f"stream {spec}", file=sys.stderr):
        spans, duration = file_segments(audio, vad)
        if not spans:  # as `translate_talks` refuses it (`prepare`): streamed, it gave no row a word, exit 0, and
            # latencies of NaN that `sate latency-plot` then called damaged (twenty-fifth hostile pass)
            raise SateError(f"{one_line(audio)}: {no_speech(duration, vad)}")
        begin, end = talk_span(spans, [rows[k] for k in members], vad)
        note = cut_note(audio, begin, end, duration)
        if note is not None:
            tqdm.write(note, file=sys.stderr)  # above the bar, which a plain print would break
        talk = stream_talk(translator, _window(audio_blocks(audio), begin, end), spec, chunk, options, vad,
                           start=begin)
        chunks += talk.chunks
        for k, segment in zip(members, split_talk(talk, [rows[k] for k in members]), strict=True):
            out[k] = segment
    return [out[k] for k in range(len(rows))], chunks
