"""Reading audio (any format soundfile reads: WAV, FLAC, ...) as 16 kHz mono, and its 25 ms frames.

MuST-C stores one wav per TED talk, sliced by offset and duration; we never cut it into per-segment files.
LibriSpeech and Augmented LibriSpeech store one file per utterance (offset 0, the whole file). Every stage that
needs a segment's length (prep's ``n_frames``, the feature extractor, speed perturbation) goes
through the functions here, so the frame count in the manifest always equals the number of
feature frames stored. Whole recordings (`sate translate`, `sate segment`) are read by ``read_audio``; the frame
constants ``WINDOW`` and ``SHIFT`` are those of the features and of the energy VAD alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from sate.errors import SateError

SAMPLE_RATE = 16000
WINDOW = 400  # 25 ms at 16 kHz
SHIFT = 160  # 10 ms at 16 kHz
SILENCE_DB = -100.0  # the energy of digital silence (log floor)
READ_BLOCK = 1 << 20  # samples per channel read at a time while down-mixing
# Segments shorter than this (0.1 s) are zero-padded to it, so every kept row (dev/test keep
# even zero-length segments) yields 8 frames: enough for a 4x convolutional subsampling front-end.
MIN_SAMPLES = 1600
# A segment may end this far past the end of its wav (rounding in the yaml); it is clipped.
END_TOLERANCE_S = 0.02
MIN_SAMPLE_RATE = 4000  # below this a file is not speech audio: 1 Hz "audio" would grow 16000-fold when resampled
RESAMPLE_BLOCK_S = 30.0  # seconds of input resampled at a time: the temporary memory of resampling stays small
RESAMPLE_KERNEL = 1 << 22  # torchaudio's filter up to this many values (16 MB); SciPy's beyond (see `resample`)
LOWPASS_WIDTH, ROLLOFF = 6, 0.99  # torchaudio's sinc resampling defaults, which `resample` keeps
POLY_HALF_WIDTH = 10  # SciPy's resample_poly: its filter spans 10 * max(up, down) upsampled samples each side


@dataclass(frozen=True)
class WavInfo:
    """What prep needs to know about an audio file (a talk's wav, an utterance's flac), read once per file."""

    path: Path
    sample_rate: int
    frames: int
    channels: int

    @property
    def duration(self) -> float:
        return self.frames / self.sample_rate


def wav_info(path: str | Path) -> WavInfo:
    """Header of an audio file, its format read from its content (a FLAC named .wav reads as FLAC); a missing or
    unreadable file becomes a SateError naming it."""
    path = Path(path)
    if not path.is_file():
        raise SateError(f"{path}: audio file is missing")
    try:
        info = sf.info(str(path))
    except Exception as err:  # soundfile raises LibsndfileError/RuntimeError/TypeError by version
        raise SateError(f"{path}: cannot read audio: {err}") from None
    if info.frames <= 0 or info.samplerate <= 0:
        raise SateError(f"{path}: holds no audio samples")
    return WavInfo(path, int(info.samplerate), int(info.frames), int(info.channels))


def segment_samples(offset: float, duration: float, wav: WavInfo) -> int:
    """Number of 16 kHz samples of the segment, clipped at the end of the audio file.

    The caller has already checked the segment does not run past the end by more than
    ``END_TOLERANCE_S``.
    """
    wanted = round(duration * SAMPLE_RATE)
    available = math.floor((wav.duration - offset) * SAMPLE_RATE + 1e-6)
    return max(0, min(wanted, available))


def perturbed_samples(n_samples: int, speed: float) -> int:
    """Length of a segment of ``n_samples`` played ``speed`` times faster."""
    return round(n_samples / speed)


def num_frames(n_samples: int) -> int:
    """Fbank frames (25 ms window, 10 ms shift, snip_edges) after padding to ``MIN_SAMPLES``."""
    n = max(n_samples, MIN_SAMPLES)
    return 1 + (n - WINDOW) // SHIFT


def _fit(wave: np.ndarray, n: int) -> np.ndarray:
    """Trim or zero-pad to exactly ``n`` samples (resampling rounds lengths differently)."""
    if len(wave) >= n:
        return wave[:n]
    return np.concatenate([wave, np.zeros(n - len(wave), dtype=wave.dtype)])


def check_finite(wave: np.ndarray, name: str, sample_rate: int = SAMPLE_RATE, start: float = 0.0) -> None:
    """Refuse NaN or inf samples (a damaged float wav): they would spread through features, CMVN and the
    VAD's running sums, silently. ``start`` is the time of ``wave[0]`` in the file, for the message."""
    bad = ~np.isfinite(wave)
    if bad.ndim > 1:  # (samples, channels): a sample is bad if any channel is
        bad = bad.any(axis=1)
    if bad.any():
        first = start + int(np.argmax(bad)) / sample_rate
        raise SateError(f"{name}: {int(bad.sum())} samples are not finite (NaN or inf), the first at {first:.3f} s; "
                        "the audio is damaged")


def read_segment(path: str | Path, offset: float, duration: float, speed: float = 1.0,
                 sample_rate: int | None = None) -> np.ndarray:
    """Float32 16 kHz mono samples of one segment: ``round(duration * 16000)`` of them.

    Other sample rates are resampled and extra channels averaged, so corpora that are not
    16 kHz mono need no conversion step. ``speed`` != 1 resamples the segment afterwards (tempo
    and pitch change together, like sox ``speed``), giving ``perturbed_samples`` samples.
    ``sample_rate`` saves reopening the header when the caller already knows it.
    """
    import torch  # heavy: torch
    import torchaudio.functional as AF  # heavy: torch

    n_samples = round(duration * SAMPLE_RATE)
    if not (math.isfinite(offset) and offset >= 0 and math.isfinite(duration) and duration >= 0):
        raise SateError(f"{path}: offset {offset} and duration {duration} must be finite and >= 0")
    if sample_rate is None:
        sample_rate = wav_info(path).sample_rate
    start = round(offset * sample_rate)
    count = math.ceil(n_samples * sample_rate / SAMPLE_RATE) + (2 if sample_rate != SAMPLE_RATE else 0)
    try:
        data, sr = sf.read(str(path), start=start, frames=count, dtype="float32", always_2d=True)
    except Exception as err:
        raise SateError(f"{path}: cannot read samples at offset {offset:.3f} s: {err}") from None
    if len(data) < count - (2 if sr != SAMPLE_RATE else 0) - round(END_TOLERANCE_S * sr):
        raise SateError(f"{path}: the segment at {offset:.3f} s of {duration:.3f} s runs past the end of the audio "
                        f"({(start + len(data)) / sr:.3f} s): is the manifest row of another file?")
    check_finite(data, str(path), sr, start / sr)
    wave = data.mean(axis=1) if data.shape[1] > 1 else data[:, 0]
    if sr != SAMPLE_RATE and len(wave):
        wave = resample(wave, sr, name=str(path))
    wave = _fit(wave.astype(np.float32, copy=False), n_samples)
    if speed != 1.0:
        n_out = perturbed_samples(n_samples, speed)
        if len(wave):
            wave = AF.resample(torch.from_numpy(wave), round(SAMPLE_RATE * speed), SAMPLE_RATE).numpy()
        wave = _fit(wave, n_out)
    return wave


def _half_width(o: int, n: int) -> int:
    """Input samples torchaudio's filter reaches on each side of an output sample (its ``width``)."""
    return math.ceil(LOWPASS_WIDTH * o / (min(o, n) * ROLLOFF))


def resample(wave: np.ndarray, orig: int, new: int = SAMPLE_RATE, name: str = "audio") -> np.ndarray:
    """Float32 samples at ``orig`` Hz resampled to ``new`` Hz, a block of RESAMPLE_BLOCK_S at a time with enough
    context on each side that every output sample equals the whole-signal result: the temporary memory stays that
    of one block, whatever the length.

    torchaudio's sinc filter (what features were always computed with) builds one phase per output sample of the
    reduced ratio: for a rate co-prime with 16 kHz (44101 Hz) that is 16000 phases of 44000 taps, 12 GB and
    minutes for two seconds of audio. Such ratios (a filter over RESAMPLE_KERNEL values) go through SciPy's
    polyphase resampler instead, whose filter grows with the rates, not with their product: exact, in bounded
    memory. Below MIN_SAMPLE_RATE a file is refused: 1 Hz "audio" would grow 16000-fold.
    """
    if orig < MIN_SAMPLE_RATE:
        raise SateError(f"{name}: a sample rate of {orig} Hz is not audio sate reads (at least {MIN_SAMPLE_RATE} Hz)")
    g = math.gcd(orig, new)
    o, n = orig // g, new // g
    if o == n or not len(wave):
        return np.ascontiguousarray(wave, dtype=np.float32)
    sinc = n * (o + 2 * _half_width(o, n)) <= RESAMPLE_KERNEL
    reach = _half_width(o, n) if sinc else math.ceil(POLY_HALF_WIDTH * max(o, n) / n)
    context = math.ceil((reach + 1) / o) * o  # a multiple of o: block edges fall on output samples
    step = max(1, round(RESAMPLE_BLOCK_S * orig / o)) * o
    out = np.zeros(-(-n * len(wave) // o), dtype=np.float32)  # ceil, in integers
    for start in range(0, len(wave), step):
        lo, hi = max(0, start - context), min(len(wave), start + step + context)
        block = _resample_block(np.ascontiguousarray(wave[lo:hi], dtype=np.float32), o, n, sinc)
        first, count = start * n // o, -(-n * min(step, len(wave) - start) // o)
        piece = block[(start - lo) * n // o:][:count]  # torchaudio's float32 length may be one short at the end
        out[first:first + len(piece)] = piece
    return out


def _resample_block(block: np.ndarray, o: int, n: int, sinc: bool) -> np.ndarray:
    if sinc:
        import torch  # heavy: torch
        import torchaudio.functional as AF  # heavy: torch

        return AF.resample(torch.from_numpy(block), o, n).numpy()
    from scipy.signal import resample_poly  # slow: SciPy's signal module, only for rates co-prime with 16 kHz

    return resample_poly(block, n, o).astype(np.float32)


def to_mono_16k(wave: np.ndarray, sample_rate: int, name: str = "waveform") -> np.ndarray:
    """Float32 16 kHz mono samples from float or integer PCM samples of any rate; 2-D input is (samples, channels)."""
    wave = np.asarray(wave)
    if wave.ndim == 2:
        wave = wave.mean(axis=1)
    elif wave.ndim != 1:
        raise SateError(f"{name}: expected samples of shape (n,) or (n, channels), got {wave.shape}")
    if np.issubdtype(wave.dtype, np.integer):  # PCM: int16 spans [-32768, 32767]
        wave = wave / float(np.iinfo(wave.dtype).max + 1)
    elif not np.issubdtype(wave.dtype, np.floating):
        raise SateError(f"{name}: expected float samples in [-1, 1] or integer PCM, got {wave.dtype}")
    if sample_rate <= 0:
        raise SateError(f"{name}: sample rate must be positive, got {sample_rate}")
    check_finite(wave, name, sample_rate)
    return resample(np.ascontiguousarray(wave, dtype=np.float32), sample_rate, name=name)


def read_audio(path: str | Path) -> np.ndarray:
    """A whole audio file as float32 16 kHz mono; bad input becomes one `SateError` naming the file.

    Anything libsndfile reads (wav, flac, ogg, mp3 where the build supports it), any rate, any
    channel count. Channels are averaged block by block, so a long multichannel file never sits
    in memory at full width.
    """
    path = Path(path)
    if not path.exists():
        raise SateError(f"{path}: no such file")
    if path.is_dir():
        raise SateError(f"{path}: is a directory, not an audio file")
    if path.stat().st_size == 0:
        raise SateError(f"{path}: the file is empty (0 bytes)")
    try:
        with sf.SoundFile(str(path)) as f:
            rate = f.samplerate
            wave, filled = np.empty(max(f.frames, 0), dtype=np.float32), 0  # one copy of the samples, not two
            for block in f.blocks(READ_BLOCK, dtype="float32", always_2d=True):
                if filled + len(block) > len(wave):  # a header that undercounts its frames
                    wave = np.concatenate([wave[:filled], np.empty(max(len(wave), len(block)), dtype=np.float32)])
                wave[filled:filled + len(block)] = block.mean(axis=1)
                filled += len(block)
    except Exception as err:  # soundfile raises LibsndfileError/RuntimeError/OSError by case and version
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SateError(f"{path}: cannot read audio ({first})") from None
    wave = wave[:filled]
    if len(wave) == 0:
        raise SateError(f"{path}: holds no audio samples")
    return to_mono_16k(wave, rate, str(path))


def frame_energy_db(wave: np.ndarray, window: int = WINDOW, hop: int = SHIFT) -> np.ndarray:
    """Log energy (dB relative to full scale) of ``window``-sample frames every ``hop`` samples (by default
    25 ms every 10 ms); frame k starts at sample k * hop, and a partial last frame is left out.

    Computed from running sums a chunk at a time, so an hour of audio needs no frame matrix.
    """
    if len(wave) < window:
        wave = np.concatenate([wave, np.zeros(window - len(wave), dtype=np.float32)])
    n_frames = 1 + (len(wave) - window) // hop
    power = np.empty(n_frames)
    chunk = 10000
    for f0 in range(0, n_frames, chunk):
        f1 = min(n_frames, f0 + chunk)
        x = wave[f0 * hop:(f1 - 1) * hop + window].astype(np.float64)
        sums = np.concatenate([[0.0], np.cumsum(x * x)])
        starts = np.arange(f1 - f0) * hop
        power[f0:f1] = (sums[starts + window] - sums[starts]) / window
    return np.maximum(10.0 * np.log10(np.maximum(power, 0.0) + 1e-12), SILENCE_DB)


def true_runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, stop) index pairs of the True runs of a boolean array."""
    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))
