"""Long recordings with known speech boundaries, built from short clean utterances, to measure a segmenter.

Each utterance is trimmed to its speech (frames within 40 dB of its loudest), then the utterances are
laid end to end with pauses drawn uniformly from ``PAUSES`` seconds, after a lead-in of silence. The
speech spans of the construction are the reference. A condition then adds one noise under the whole
recording, pauses included, at a signal-to-noise ratio measured against the speech alone:
  white   Gaussian white noise
  babble  five other talkers at once (utterances not in the recording, each looped from a random point)
  music   chords of harmonic tones that change every 0.2-0.6 s, a crude stand-in for music under a talk
A pause shorter than ``min_pause`` does not separate two segments by the segmenter's own rule, so
`reference_segments` joins the utterances on either side of one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sate.data.audio import SAMPLE_RATE, SHIFT, WINDOW, frame_energy_db
from sate.errors import SateError

PAUSES = (0.2, 2.0)  # seconds of silence between utterances
LEAD = 1.0  # seconds of silence before the first utterance and after the last
TRIM_DB = 40.0  # an utterance's speech: frames within this many dB of its loudest frame
NOISES = ("white", "babble", "music")
BABBLE_TALKERS = 5
SCALE = (0, 2, 4, 7, 9)  # a major pentatonic scale, semitones above A3


@dataclass(frozen=True)
class Recording:
    """A clean recording and the (start, end) seconds of each utterance's speech in it."""

    wave: np.ndarray
    spans: list[tuple[float, float]]

    @property
    def duration(self) -> float:
        return len(self.wave) / SAMPLE_RATE


def speech_extent(wave: np.ndarray) -> tuple[int, int]:
    """[start, stop) samples of a clean utterance's speech: leading and trailing silence removed."""
    energy = frame_energy_db(wave)
    loud = np.flatnonzero(energy > energy.max() - TRIM_DB)
    centre = (WINDOW - SHIFT) // 2  # frame k stands for the 10 ms around its window's centre, as in the VAD
    return int(loud[0]) * SHIFT + centre, min(len(wave), int(loud[-1] + 1) * SHIFT + centre)


def build(utterances: list[np.ndarray], rng: np.random.Generator, pauses: tuple[float, float] = PAUSES) -> Recording:
    """Trimmed utterances end to end with random pauses between them and ``LEAD`` seconds around."""
    if not utterances:
        raise SateError("a recording needs at least one utterance")
    lead = np.zeros(round(LEAD * SAMPLE_RATE), dtype=np.float32)
    parts, spans, t = [lead], [], len(lead)
    for k, utt in enumerate(utterances):
        a, b = speech_extent(utt)
        if k:
            pause = np.zeros(round(rng.uniform(*pauses) * SAMPLE_RATE), dtype=np.float32)
            parts.append(pause)
            t += len(pause)
        parts.append(utt[a:b].astype(np.float32))
        spans.append((t / SAMPLE_RATE, (t + b - a) / SAMPLE_RATE))
        t += b - a
    parts.append(lead)
    return Recording(np.concatenate(parts), spans)


def reference_segments(spans: list[tuple[float, float]], min_pause: float) -> list[tuple[float, float]]:
    """The segments a perfect segmenter gives: utterances, joined across pauses shorter than ``min_pause``."""
    out: list[list[float]] = []
    for start, end in spans:
        if out and start - out[-1][1] < min_pause:
            out[-1][1] = end
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def speech_power(recording: Recording) -> float:
    """Mean power of the speech spans (pauses excluded), the signal of the SNR."""
    total, count = 0.0, 0
    for start, end in recording.spans:
        x = recording.wave[round(start * SAMPLE_RATE):round(end * SAMPLE_RATE)].astype(np.float64)
        total, count = total + float(np.sum(x * x)), count + len(x)
    return total / max(count, 1)


def white(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(n).astype(np.float32)


def babble(n: int, others: list[np.ndarray], rng: np.random.Generator, talkers: int = BABBLE_TALKERS) -> np.ndarray:
    """``talkers`` voices at once: each a random other utterance sequence, looped, from a random point."""
    if not others:
        raise SateError("babble needs utterances that are not in the recording")
    out = np.zeros(n, dtype=np.float32)
    for _ in range(talkers):
        order = rng.permutation(len(others))
        stream = np.concatenate([others[i] for i in order])
        stream = np.tile(stream, n // len(stream) + 2)
        offset = int(rng.integers(len(stream) - n))
        voice = stream[offset:offset + n]
        out += voice / (np.sqrt(np.mean(voice.astype(np.float64) ** 2)) + 1e-9)
    return out


def music(n: int, rng: np.random.Generator) -> np.ndarray:
    """Chords of three harmonic tones from a pentatonic scale, changing every 0.2-0.6 s, with a soft attack."""
    out = np.zeros(n, dtype=np.float32)
    t0 = 0
    while t0 < n:
        length = min(n - t0, round(rng.uniform(0.2, 0.6) * SAMPLE_RATE))
        t = np.arange(length) / SAMPLE_RATE
        envelope = np.minimum(1.0, t / 0.02) * np.exp(-t / 0.8)
        for _ in range(3):
            semitone = SCALE[int(rng.integers(len(SCALE)))] + 12 * int(rng.integers(0, 3))
            f0 = 220.0 * 2 ** (semitone / 12)
            for harmonic, weight in ((1, 1.0), (2, 0.5), (3, 0.25), (4, 0.12)):
                if f0 * harmonic < SAMPLE_RATE / 2:
                    out[t0:t0 + length] += (weight * envelope * np.sin(2 * np.pi * f0 * harmonic * t)).astype(
                        np.float32)
        t0 += length
    return out


def mix(recording: Recording, noise: str, snr_db: float, others: list[np.ndarray],
        rng: np.random.Generator) -> np.ndarray:
    """The recording with ``noise`` under all of it at ``snr_db`` (speech power over noise power)."""
    n = len(recording.wave)
    if noise == "white":
        x = white(n, rng)
    elif noise == "babble":
        x = babble(n, others, rng)
    elif noise == "music":
        x = music(n, rng)
    else:
        raise SateError(f"unknown noise {noise!r}: choose from {', '.join(NOISES)}")
    gain = np.sqrt(speech_power(recording) / (np.mean(x.astype(np.float64) ** 2) * 10 ** (snr_db / 10)))
    mixed = recording.wave + (gain * x).astype(np.float32)
    peak = float(np.abs(mixed).max())
    return mixed / peak * 0.9 if peak > 0.9 else mixed  # no clipping when written as PCM
