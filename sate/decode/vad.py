"""From 16 kHz mono samples (`sate.data.audio.audio_blocks` reads any audio file) to speech segments: VAD.

Models are trained on sentence-like segments of a few seconds, while users hand us whole talks.
We cut a recording at its pauses. Which 10-30 ms frames are speech is decided by one of two
detectors (``VadOptions.method``): silero-vad, a small trained network shipped inside its wheel
(`sate.decode.silero`, the default), or an energy threshold set from the recording's own level
distribution (the fallback when silero-vad is not installed; it works on clean audio but takes
music and loud noise for speech). What follows is shared: silences shorter than ``min_pause``
are bridged (they are pauses between words, not between sentences); speech bursts shorter than
``min_speech`` are dropped (clicks); a run of speech longer than ``max_segment`` is cut at its
least speech-like point (lowest energy, or lowest speech probability) until every piece fits.
Each segment keeps up to ``padding`` seconds of the surrounding silence, as training segments
do, never overlapping its neighbour.

A file is read twice, block by block, never whole: once to find its segments (`file_segments`; the detectors keep
per-frame values, a few KB a second against 64 KB of samples, because the energy threshold and silero's
foreground rule use the whole recording's levels), and once to cut them (`cut_blocks`, one segment at a time).
Both give exactly what the recording in memory gives (`speech_segments`, `cut`). A pipe, which can be read once, is
copied into an unnamed temporary file while its segments are found, and cut from there (`spooled_segments`).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sate.data.audio import SAMPLE_RATE, SHIFT, WINDOW, DcFreeEnergy, audio_blocks, check_finite, true_runs
from sate.decode import silero
from sate.decode.frames import Frames
from sate.errors import SateError, shown
from sate.numbers import bound_text, is_number, plain

# A frame quieter than this is never speech, whatever the recording's level: -60 dBFS RMS is
# well below any usable speech and above dither and quantisation noise.
ABSOLUTE_FLOOR_DB = -60.0
# The threshold sits this far from the quiet level (10th percentile) towards the loud level
# (95th percentile): robust to a constant noise floor and to the overall gain.
THRESHOLD_POSITION = 0.3
# No segment may be longer: attention memory grows with the square of a segment's length, and models are
# trained on segments of at most 30 s (`sate prep --max-duration`); four times that is the useful limit.
MAX_SEGMENT = 120.0
METHODS = ("silero", "energy")
# Lower-score points within this span count as one dip when a long run of speech is cut: a pause, not a blip.
CUT_SMOOTHING_S = 0.2
SPOOL_READ = 1 << 20  # samples read back at a time from a pipe's temporary copy (`spooled_segments`)


@dataclass(frozen=True)
class VadOptions:
    """Segmentation settings, in seconds."""

    max_segment: float = 20.0  # no segment is longer (padding included)
    min_pause: float = 0.3  # shorter silences do not split
    min_speech: float = 0.15  # shorter bursts of energy are not speech
    padding: float = 0.1  # silence kept on each side of a segment
    method: str | None = None  # "silero", "energy", or None: silero when installed, else energy (with a note)

    def __post_init__(self) -> None:
        if self.method is not None and self.method not in METHODS:
            raise SateError(f"unknown VAD {self.method!r} (--vad): choose {' or '.join(METHODS)}")
        # A NaN compares False with everything and would pass every range check unseen.
        for name in ("max_segment", "min_pause", "min_speech", "padding"):
            value = getattr(self, name)
            # a NumPy scalar (a sweep over np.arange), a 0-d array or tensor read as its number, as DecodeOptions
            # reads one: np.float64(0.2) was "must be a finite number", and so was np.array(0.2) after it (33rd pass);
            # np.bool_ is then a bool, refused as True is
            if (number := plain(value)) is not value:
                value = number
                object.__setattr__(self, name, value)
            # "5", None: TypeErrors of isfinite. A max_segment number is named with its range below: ">= 0" was
            # advice for -1 or nan that 0 then broke (twenty-fifth hostile pass)
            if name == "max_segment" and (is_number(value) or isinstance(value, float | int)) \
                    and not isinstance(value, bool):  # 10**400 too, named with the range
                continue
            if not is_number(value) or not math.isfinite(value) or value < 0:
                flag = f" (--{name.replace('_', '-')})" if name in ("max_segment", "min_pause") else ""
                raise SateError(f"{name}{flag} must be a finite number of seconds >= 0, got {shown(value)}")
        if 1.0 + 2 * self.padding > MAX_SEGMENT:  # no max_segment would do: "at least 121 s and at most 120 s"
            raise SateError(f"padding must be at most {(MAX_SEGMENT - 1.0) / 2:g} s (a segment holds it on both "
                            f"sides, and is at most {MAX_SEGMENT:g} s), got {bound_text(self.padding)}")
        if not 1.0 + 2 * self.padding <= self.max_segment <= MAX_SEGMENT:
            raise SateError(f"max_segment (--max-segment) must be at least {bound_text(1.0 + 2 * self.padding)} s and "
                            f"at most {MAX_SEGMENT:g} s, got {bound_text(self.max_segment)}")
        if self.min_speech > self.max_segment:  # every piece is at most max_segment long, so none would be kept
            raise SateError(f"min_speech ({bound_text(self.min_speech)} s) must be at most max_segment "
                            f"(--max-segment, {bound_text(self.max_segment)} s): no segment can be longer, so no "
                            "speech would ever be found")


def _split_long(start: int, stop: int, smooth: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """Cut frames [start, stop) at their lowest points (of ``smooth``) until no piece exceeds ``limit``."""
    pieces = []
    while stop - start > limit:
        length = stop - start
        if length <= 2 * limit:  # one cut leaving both sides within the limit
            lo, hi = stop - limit, start + limit
        else:  # cut off a first piece between half and the whole limit, then continue
            lo, hi = start + limit // 2, start + limit
        cut = lo + int(np.argmin(smooth[lo:hi + 1]))
        pieces.append((start, cut))
        start = cut
    pieces.append((start, stop))
    return pieces


class EnergyStream:
    """The energy detector fed block by block: frames above a threshold between the recording's quiet (10th
    percentile) and loud (95th) levels, which are known only at its end, so the frame energies are kept (8 bytes
    per 10 ms, 2.9 MB an hour), not the samples."""

    def __init__(self) -> None:
        self.energy = DcFreeEnergy(WINDOW, SHIFT)  # a DC offset is no sound

    def add(self, block: np.ndarray) -> EnergyStream:
        self.energy.add(block)
        return self

    def finish(self) -> Frames:
        energy = self.energy.finish()
        quiet, loud = np.percentile(energy, [10, 95])
        threshold = max(ABSOLUTE_FLOOR_DB, quiet + THRESHOLD_POSITION * (loud - quiet))
        # Frame k stands for the 10 ms around its window's centre, so pieces cut apart meet exactly.
        return Frames(energy > threshold, energy, SHIFT / SAMPLE_RATE, (WINDOW - SHIFT) / 2 / SAMPLE_RATE,
                      (WINDOW - SHIFT) / SAMPLE_RATE)


_fallback_noted = False


def add_vad_argument(parser: argparse.ArgumentParser) -> None:
    """``--vad``, shared by `sate translate` and `sate segment`."""
    parser.add_argument("--vad", choices=METHODS, default=None,
                        help="voice activity detector: silero (a trained network, robust to noise and music) or "
                             "energy (a level threshold, for clean audio) (default: silero; energy, with a note, "
                             "when silero-vad is not installed)")


def resolve_method(method: str | None) -> str:
    """The detector to use: ``method`` if given (silero must then be installed), else silero when installed."""
    global _fallback_noted
    if method == "silero" and not silero.available():
        raise SateError("--vad silero: the silero-vad package is not installed (pip install silero-vad), "
                        "or use --vad energy")
    if method is not None:
        return method
    if silero.available():
        return "silero"
    if not _fallback_noted:
        _fallback_noted = True
        print("note: silero-vad is not installed; segmenting with the energy VAD, which takes music and loud "
              "noise for speech (pip install silero-vad)", file=sys.stderr)
    return "energy"


def detect(wave: np.ndarray, method: str) -> Frames:
    """Frame-level speech decisions of one detector."""
    return _detector(method).add(wave).finish()


def _detector(method: str) -> silero.SileroStream | EnergyStream:
    return silero.SileroStream() if method == "silero" else EnergyStream()


def speech_segments(wave: np.ndarray, options: VadOptions | None = None) -> list[tuple[float, float]]:
    """(start, end) seconds of the speech segments of 16 kHz mono samples, in order; [] if there is no speech."""
    options = options or VadOptions()
    # stereo samples as soundfile reads them, (n, 2), gave the energy VAD wrong segments (its frames ran over both
    # channels interleaved), silero a torch traceback; a list had no dtype (thirtieth hostile pass)
    if not isinstance(wave, np.ndarray) or wave.ndim != 1:
        shape = wave.shape if isinstance(wave, np.ndarray) else type(wave).__name__
        raise SateError(f"speech_segments: expected 16 kHz mono samples, an array of shape (n,), got {shape}; "
                        "sate.data.audio.to_mono_16k(samples, sample_rate) mixes channels and resamples")
    if not len(wave):  # silero's foreground rule has no level to read ("a cannot be empty"); the energy VAD gave []
        return []
    check_finite(wave, "waveform")
    return frames_to_segments(detect(wave, resolve_method(options.method)), len(wave) / SAMPLE_RATE, options)


def block_segments(blocks: Iterable[np.ndarray], options: VadOptions | None = None) -> tuple[list[tuple[float, float]],
                                                                                              float]:
    """`speech_segments` of a recording given as blocks of finite 16 kHz mono samples (`audio_blocks`), and its
    length in seconds: the same segments, holding one block and the detector's per-frame values, not the
    recording."""
    options = options or VadOptions()
    detector, samples = _detector(resolve_method(options.method)), 0
    for block in blocks:
        detector.add(block)
        samples += len(block)
    return frames_to_segments(detector.finish(), samples / SAMPLE_RATE, options), samples / SAMPLE_RATE


def no_speech(seconds: float, options: VadOptions | None = None) -> str:
    """Why an input gave no segment. Loud noise was once called "silence or near-silence": a VAD finds no speech in
    silence, nor in sounds it does not take for speech. ``options`` whose min_speech is above the default: speech in
    shorter bursts is dropped, and said to be: `VadOptions(min_speech=2)` over a talk of short sentences was "13.1 s
    of silence, or of ... noise, music, tones", of a recording that was fine (33rd hostile pass)."""
    # under 0.1 s in whole milliseconds: a 0.05-s file was "0.1 s of silence", a 1-ms one "0.0 s" (twenty-eighth
    # hostile pass). The length is the 16 kHz signal's, within 1/16 ms of the file's, so no finer (review28s).
    ms = round(seconds * 1000)
    length = f"{seconds:.1f} s" if seconds >= 0.1 else f"{ms} ms" if ms else "under 1 ms"
    if options is not None and options.min_speech > VadOptions.min_speech:
        return (f"no speech found ({length} of silence, of sounds the VAD does not take for speech: noise, music, "
                f"tones, or of speech in bursts shorter than min_speech, {bound_text(options.min_speech)} s)")
    return (f"no speech found ({length} of silence, or of sounds the VAD does not take for speech: noise, "
            "music, tones)")


def file_segments(path: str | Path, options: VadOptions | None = None) -> tuple[list[tuple[float, float]], float]:
    """The speech segments of an audio file and its length in seconds, read block by block (`block_segments`)."""
    return block_segments(audio_blocks(path), options)


def spooled_segments(path: str | Path, options: VadOptions | None = None) -> tuple[list[tuple[float, float]], float,
                                                                                   Iterator[np.ndarray]]:
    """`file_segments` of a pipe (a FIFO, a piped ``/dev/stdin``), which can be read only once, and the samples of
    its segments (`cut_blocks`). While the VAD reads it, its 16 kHz samples are copied into an unnamed temporary file
    (gone however the process ends) and read back from there: a ten-hour recording piped to `sate translate` was held
    in memory, 2.3 GB."""
    spool = tempfile.TemporaryFile(prefix="sate-pipe-")

    def kept() -> Iterator[np.ndarray]:
        for block in audio_blocks(path):
            try:
                spool.write(np.ascontiguousarray(block, dtype=np.float32).tobytes())
            except OSError as err:  # a full disk names no file: say where the copy goes
                raise OSError(err.errno, err.strerror, f"{tempfile.gettempdir()} (the temporary copy of the pipe "
                                                       f"{path}, read twice)") from None
            yield block

    def read_back() -> Iterator[np.ndarray]:
        with spool:
            while data := spool.read(SPOOL_READ * 4):
                yield np.frombuffer(data, dtype=np.float32)

    try:
        segments, seconds = block_segments(kept(), options)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return segments, seconds, cut_blocks(read_back(), segments)


def frames_to_segments(frames: Frames, total: float, options: VadOptions) -> list[tuple[float, float]]:
    """Bridge short pauses, drop short bursts, split long runs at their lowest score, pad: segments in seconds."""
    merged: list[list[int]] = []
    for start, stop in true_runs(frames.speech):
        if merged and (start - merged[-1][1]) * frames.hop + frames.overhang < options.min_pause:
            merged[-1][1] = stop
        else:
            merged.append([start, stop])
    kept = [(a, b) for a, b in merged if (b - a) * frames.hop >= options.min_speech - 1e-9]
    limit = int((options.max_segment - 2 * options.padding) / frames.hop + 1e-6)
    width = max(1, round(CUT_SMOOTHING_S / frames.hop)) | 1
    smooth = np.convolve(frames.score, np.ones(width) / width, mode="same")
    pieces = [p for a, b in kept for p in _split_long(a, b, smooth, limit)]
    bounds = [(min(a * frames.hop + frames.offset, total), min(b * frames.hop + frames.offset, total))
              for a, b in pieces]
    # Each time is rounded to the millisecond, which can add 1 ms to a piece max_segment long (padding 0: 1.201 s for
    # --max-segment 1.2, thirtieth hostile pass): an end is cut to the whole milliseconds max_segment allows.
    longest = math.floor(options.max_segment * 1000 + 1e-6) / 1000
    out = []
    for k, (start, end) in enumerate(bounds):
        # Pad into the silence on each side, up to the middle of the pause to the neighbour.
        left = (bounds[k - 1][1] + start) / 2 if k else 0.0
        right = (end + bounds[k + 1][0]) / 2 if k + 1 < len(bounds) else total
        first = round(max(start - options.padding, left), 3)
        out.append((first, min(round(min(end + options.padding, right), 3), round(first + longest, 3))))
    return out


def cut(wave: np.ndarray, segments: list[tuple[float, float]]) -> list[np.ndarray]:
    """The samples of each (start, end) segment."""
    return [wave[round(start * SAMPLE_RATE):round(end * SAMPLE_RATE)] for start, end in segments]


def cut_blocks(blocks: Iterable[np.ndarray], segments: list[tuple[float, float]]) -> Iterator[np.ndarray]:
    """`cut` of a recording given as blocks of 16 kHz samples, one segment at a time: the samples held are those
    from the start of the next segment on (a segment and a block), never the recording's."""
    bounds = [(round(start * SAMPLE_RATE), round(end * SAMPLE_RATE)) for start, end in segments]
    # samples before the earliest start still to come are dropped
    keep = np.minimum.accumulate([a for a, _ in bounds][::-1])[::-1].tolist() if bounds else []
    held, held_from, k = np.empty(0, dtype=np.float32), 0, 0
    for block in blocks:
        held = np.concatenate([held, block]) if len(held) else block
        while k < len(bounds) and held_from + len(held) >= bounds[k][1]:
            yield np.array(held[max(0, bounds[k][0] - held_from):max(0, bounds[k][1] - held_from)])
            k += 1
        drop = min(len(held), max(0, (keep[k] if k < len(bounds) else held_from + len(held)) - held_from))
        held, held_from = held[drop:], held_from + drop
    for a, b in bounds[k:]:  # past the end of the recording: cut short, as slicing a whole one is
        yield np.array(held[max(0, a - held_from):max(0, b - held_from)])
