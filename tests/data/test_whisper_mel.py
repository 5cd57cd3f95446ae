"""Whisper's log-mel front-end against transformers' WhisperFeatureExtractor, on voiced utterances, batched."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

from sate.data.whisper_mel import HOP_LENGTH, whisper_log_mel
from sate.errors import SateError

transformers = pytest.importorskip("transformers")

SENTENCES = ("Where is the railway station?", "The cash machine is between the youth hostel and the airport.",
             "Two coffees, please.")
VOICES = (0, 1, 3)  # espeak-ng voices of the fixture corpus (en-us+m3, en-gb+f2, en-029+m1)


@pytest.fixture(scope="module")
def utterances(voice: Callable[[str, int], np.ndarray]) -> list[np.ndarray]:
    """Three voiced utterances of different lengths, the first two with a little noise to the last sample (as a
    recording has), the third clean (its silences are clamped at max - 8); cut to lengths whose last frame reads
    past the end (length modulo 160 under 40) in the first two."""
    g = np.random.default_rng(0)
    out = []
    for text, k, rest, noise in zip(SENTENCES, VOICES, (0, 20, 100), (0.003, 0.003, 0.0), strict=True):
        audio = voice(text, k)
        audio = audio + noise * g.standard_normal(len(audio)).astype(np.float32)
        out.append(audio[: len(audio) // HOP_LENGTH * HOP_LENGTH - HOP_LENGTH + rest])
    return out


def batch(audio: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(a) for a in audio])
    wave = torch.zeros(len(audio), int(lengths.max()))
    for i, a in enumerate(audio):
        wave[i, : len(a)] = torch.from_numpy(a)
    return wave, lengths


@pytest.mark.parametrize("mel_bins", [80, 128])
def test_equals_feature_extractor(utterances: list[np.ndarray], mel_bins: int) -> None:
    """Each utterance of a batch equals the extractor on it alone at natural length, to 1e-4."""
    extractor = transformers.WhisperFeatureExtractor(feature_size=mel_bins)
    feats, frames = whisper_log_mel(*batch(utterances), mel_bins=mel_bins)
    assert feats.shape == (3, int(frames.max()), mel_bins)
    for i, audio in enumerate(utterances):
        want = extractor(audio, sampling_rate=16000, padding="longest", return_tensors="pt")["input_features"][0].T
        assert int(frames[i]) == want.size(0) == len(audio) // HOP_LENGTH
        assert float((feats[i, : want.size(0)] - want).abs().max()) <= 1e-4
        assert not feats[i, want.size(0):].any()
    assert float(want.max() - want.min()) == pytest.approx(2.0, abs=1e-5)  # the clean one: the clamp at max - 8 bites


def test_padding_to_30_s_changes_only_the_last_frame(utterances: list[np.ndarray]) -> None:
    """Whisper's own 30-s padding: the same maximum, every frame equal but the last, which differs only when the
    length modulo 160 is under 40 (the docstring's measurement)."""
    extractor = transformers.WhisperFeatureExtractor()
    feats, frames = whisper_log_mel(*batch(utterances))
    for i, audio in enumerate(utterances):
        padded = extractor(audio, sampling_rate=16000, return_tensors="pt")["input_features"][0].T
        n = int(frames[i])
        diff = (padded[:n] - feats[i, :n]).abs().amax(dim=1)
        assert padded.size(0) == 3000 and float(diff[:-1].max()) <= 1e-4
        if len(audio) % HOP_LENGTH < 40:
            assert 1e-4 < float(diff[-1]) < 0.1
        else:
            assert float(diff[-1]) <= 1e-4


def test_short_and_malformed_input() -> None:
    feats, frames = whisper_log_mel(torch.randn(1, 201), torch.tensor([201]))
    assert feats.shape == (1, 1, 80) and frames.tolist() == [1]
    # the short item is named (31st hostile pass: "an utterance of 200 samples", no item of the batch)
    with pytest.raises(SateError, match=r"^item 1 of the batch: 200 samples, too short for Whisper's front-end "
                                        r"\(it needs more than 200\): pad it to 0.1 s"):
        whisper_log_mel(torch.randn(2, 300), torch.tensor([300, 200]))
    with pytest.raises(SateError, match=r"reads \(B, N\) samples"):
        whisper_log_mel(torch.randn(300), torch.tensor([300]))
