"""Whisper's log-mel front-end in torch, at each utterance's natural length, batched.

The values are those of transformers' `WhisperFeatureExtractor` on one utterance without padding
(``padding="longest"``): a centred STFT (n_fft 400, hop 160, periodic Hann, reflect padding at both ends), the power
spectrum, Slaney mel filters from 0 to 8 kHz, log10 of at least 1e-10, then ``max(x, m - 8)`` and ``(x + 4) / 4``;
one frame per 160 samples (the STFT's last frame is dropped, as Whisper drops it).

``m`` is the largest log-mel value of the utterance itself, over its own frames only, so a batched utterance gets
what it gets alone. Whisper's own pipeline pads the audio to 30 s with zeros first. Silence only adds low values, so
``m`` is the same; of the frames both have, only the last can differ, and only when the sample count modulo 160 is
under 40 (its window then reads up to 40 samples past the end: reflected here, zeros there). Measured on 3
espeak-ng utterances with noise to the last sample: every other frame bit-identical, the last up to 0.03
(tests/data/test_whisper_mel.py). Kaldi fbank, dither and CMVN play no part here.
"""

from __future__ import annotations

import torch

from sate.data.audio import SAMPLE_RATE
from sate.errors import SateError

N_FFT = 400  # 25 ms
HOP_LENGTH = 160  # 10 ms: 100 frames a second
FRAMES_PER_SECOND = SAMPLE_RATE // HOP_LENGTH
WINDOW_FRAMES = 3000  # Whisper's 30-s training window; every release's encoder has 1,500 positions for it
NUM_MEL_BINS = 80  # large-v3 has 128: the encoder's directory says how many
LOG_FLOOR = 1e-10
DYNAMIC_RANGE = 8.0  # in log10 units below the utterance's maximum


def window_samples(seconds: float = WINDOW_FRAMES / FRAMES_PER_SECOND) -> int:
    """The most 16-kHz samples whose log-mel fits a window of ``seconds`` (3,000 frames for Whisper's 30 s): n
    samples give n // 160 frames, so 480,159 fit and 480,160 do not. The one bound of training, `sate evaluate`,
    the API and the whisper-window bench: in seconds, `sate evaluate` refused a row of 480,080 samples ("30.00 s,
    longer than the 30 s") that the others took (29th hostile pass, review)."""
    return (round(seconds * FRAMES_PER_SECOND) + 1) * HOP_LENGTH - 1


def beyond_window(samples: int, seconds: float = WINDOW_FRAMES / FRAMES_PER_SECOND) -> str | None:
    """None where ``samples`` fit the window of ``seconds`` (`window_samples`); else their length against it, with
    the digits that show the excess: "30.0100 s (480,160 samples), more than the 480,159 samples (3,000 log-mel
    frames, 30 s)"."""
    limit = window_samples(seconds)
    if samples <= limit:
        return None
    return (f"{samples / SAMPLE_RATE:.4f} s ({samples:,} samples), more than the {limit:,} samples "
            f"({round(seconds * FRAMES_PER_SECOND):,} log-mel frames, {seconds:g} s)")


def num_frames(samples: torch.Tensor) -> torch.Tensor:
    """Frames of Whisper's front-end for these sample counts: one per hop."""
    return torch.div(samples, HOP_LENGTH, rounding_mode="floor")


def mel_filters(mel_bins: int) -> torch.Tensor:
    """(N_FFT // 2 + 1, mel_bins) Slaney-scale, Slaney-normalised triangles from 0 Hz to 8 kHz, float32.

    torchaudio's, within 1e-7 of transformers' float64 ones.
    """
    import torchaudio.functional as AF  # heavy: torchaudio, only when a mel table is built

    filters = AF.melscale_fbanks(N_FFT // 2 + 1, 0.0, SAMPLE_RATE / 2, mel_bins, SAMPLE_RATE, norm="slaney",
                                 mel_scale="slaney")
    return filters.to(torch.float32)


def _reflect_padded(wave: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(B, N) -> (B, N + N_FFT): each utterance with N_FFT // 2 reflected samples on each side of its own end."""
    half = N_FFT // 2
    src = torch.arange(wave.size(1) + 2 * half, device=wave.device)[None, :] - half
    ends = lengths[:, None] - 1
    src = src.abs()  # the start: x[-i] -> x[i]
    src = torch.where(src > ends, 2 * ends - src, src)  # the end: x[L - 1 + i] -> x[L - 1 - i]
    inside = src >= 0  # past the reflected end: zero
    return torch.gather(wave, 1, src.clamp(min=0)) * inside


def whisper_log_mel(wave: torch.Tensor, lengths: torch.Tensor,
                    mel_bins: int = NUM_MEL_BINS) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, N) 16 kHz samples in [-1, 1], (B,) sample counts -> (B, T, mel_bins) log-mel, (B,) frame counts.

    Frames past an utterance's count are 0. Every utterance needs more than N_FFT // 2 samples (12.5 ms), or none:
    an empty item (length 0) has no frame, as `beam_search` gives it an empty hypothesis beside longer items; it was
    refused as "an utterance of 0 samples", and a short item beside others was named by its length alone (31st
    hostile pass).
    """
    if wave.dim() != 2 or lengths.shape != wave.shape[:1]:
        raise SateError(f"whisper_log_mel reads (B, N) samples and (B,) lengths, got {tuple(wave.shape)} and "
                        f"{tuple(lengths.shape)}")
    short = ((lengths > 0) & (lengths <= N_FFT // 2)).nonzero()
    if len(short):
        i = int(short[0])
        raise SateError(f"item {i} of the batch: {int(lengths[i])} samples, too short for Whisper's front-end (it "
                        f"needs more than {N_FFT // 2}): pad it to 0.1 s, as stored features and "
                        "`SpeechTranslator.features` do")
    wave = wave.to(torch.float32)
    frames = num_frames(lengths)
    count = int(frames.max()) if len(frames) else 0
    padded = _reflect_padded(wave, lengths)
    windows = padded.unfold(1, N_FFT, HOP_LENGTH)[:, :count]  # (B, T, N_FFT)
    window = torch.hann_window(N_FFT, device=wave.device)
    power = torch.fft.rfft(windows * window, dim=-1).abs() ** 2
    log_mel = torch.clamp(power @ mel_filters(mel_bins).to(wave.device), min=LOG_FLOOR).log10()
    valid = (torch.arange(count, device=wave.device)[None, :] < frames[:, None])[..., None]
    peak = log_mel.masked_fill(~valid, float("-inf")).amax(dim=(1, 2), keepdim=True)
    log_mel = torch.maximum(log_mel, peak - DYNAMIC_RANGE)
    return ((log_mel + 4.0) / 4.0).masked_fill(~valid, 0.0), frames
