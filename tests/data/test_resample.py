"""Resampling in blocks (`sate.data.audio.resample`): the same samples as the whole signal at once, in bounded memory
and time at any rate sate accepts."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
import torchaudio.functional as AF
from scipy.signal import resample_poly

from sate.data import audio
from sate.data.audio import read_audio, resample
from sate.errors import SateError


@pytest.mark.parametrize("rate", [8000, 11025, 22050, 44100, 48000, 24000])
def test_blocks_equal_torchaudio_on_the_whole_signal(rate: int, monkeypatch: pytest.MonkeyPatch) -> None:
    wave = np.random.default_rng(rate).standard_normal(int(rate * 1.37)).astype(np.float32) * 0.1
    whole = AF.resample(torch.from_numpy(wave), rate, 16000).numpy()
    monkeypatch.setattr(audio, "RESAMPLE_BLOCK_S", 0.05)  # 27 blocks: every edge is crossed
    blocks = resample(wave, rate)
    assert len(blocks) == -(-16000 * len(wave) // rate) and blocks.dtype == np.float32
    assert abs(len(blocks) - len(whole)) <= 1  # torchaudio computes its length in float32
    common = min(len(blocks), len(whole))
    np.testing.assert_allclose(blocks[:common], whole[:common], atol=2e-6)


@pytest.mark.slow
def test_a_rate_coprime_with_16k_is_exact_and_quick(monkeypatch: pytest.MonkeyPatch) -> None:
    wave = np.random.default_rng(0).standard_normal(44101 * 2).astype(np.float32) * 0.1
    started = time.perf_counter()
    out = resample(wave, 44101)  # torchaudio: 16000 phases of 44000 taps, 12 GB and minutes
    assert time.perf_counter() - started < 10
    np.testing.assert_allclose(out, resample_poly(wave, 16000, 44101), atol=1e-6)
    monkeypatch.setattr(audio, "RESAMPLE_BLOCK_S", 0.1)
    np.testing.assert_allclose(resample(wave, 44101), out, atol=1e-6)


def test_a_file_below_the_lowest_rate_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "an-hour-at-1hz.wav"
    sf.write(path, np.zeros(3600, dtype=np.int16), 1)  # an hour of "audio" in 7 KB; 16000-fold when resampled
    with pytest.raises(SateError, match=r"1hz.wav: a sample rate of 1 Hz is not audio sate reads \(4,000 to 768,000"):
        read_audio(path)



def test_prep_and_features_refuse_a_file_below_the_lowest_rate(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`sate prep` took a 1 Hz WAV (256 KB) as a 128,000 s recording, and `sate features` then asked for 7.6 GiB for
    its one row: the header's rate is checked where it is read (`wav_info`), as the samples' reader checks it."""
    from sate.cli import main

    wav = tmp_path / "1hz.wav"
    sf.write(wav, np.zeros(128_000, dtype=np.int16), 1)
    kaldi = tmp_path / "kaldi"
    kaldi.mkdir()
    (kaldi / "wav.scp").write_text(f"u1 {wav}\n")
    (kaldi / "text").write_text("u1 hello there\n")
    assert main(["prep", "--kaldi-dir", str(kaldi), "--out", str(tmp_path / "data")]) == 2
    assert capsys.readouterr().err.strip() == (f"sate prep: error: {kaldi / 'wav.scp'}:1: {wav}: a sample rate of 1 "
                                               "Hz is not audio sate reads (4,000 to 768,000 Hz)")
    assert not (tmp_path / "data").exists()
    with pytest.raises(SateError, match=r"1hz.wav: a sample rate of 1 Hz is not audio sate reads"):
        audio.wav_info(wav)

def test_a_file_above_the_highest_rate_is_refused(tmp_path: Path) -> None:
    """A WAV header may say any rate up to 4.3 GHz: 80 KB "at" 100,000,001 Hz (co-prime with 16 kHz) asked SciPy
    for a filter of 2e9 taps (15 GB) before a sample was resampled."""
    path = tmp_path / "100mhz.wav"
    sf.write(path, np.zeros(20000, dtype=np.float32), 100_000_001, subtype="FLOAT")
    with pytest.raises(SateError, match=r"100mhz.wav: a sample rate of 100,000,001 Hz is not audio sate reads"):
        read_audio(path)
    with pytest.raises(SateError, match="a sample rate of 100,000,001 Hz"):
        resample(np.zeros(20000, dtype=np.float32), 100_000_001)
    assert len(resample(np.zeros(768_000, dtype=np.float32), 768_000)) == 16000  # the fastest hardware's rate


@pytest.mark.slow
def test_scipys_filter_is_designed_once_per_ratio_and_equals_firwin(monkeypatch: pytest.MonkeyPatch) -> None:
    """resample_poly designed its filter on every call: at 767,999 Hz (co-prime with 16 kHz, below the limit) 15M
    taps per 30-s block, 65 s of audio in 9.5 s and 991 MB. The same filter, designed once in chunks."""
    from scipy.signal import firwin

    monkeypatch.setattr(audio, "FILTER_CHUNK", 1000)  # 883 chunks: every edge is crossed
    audio._poly_filter.cache_clear()
    design = audio._poly_filter(44101, 16000)
    np.testing.assert_array_equal(design, firwin(882021, 1 / 44101, window=("kaiser", 5.0)).astype(np.float32))
    monkeypatch.setattr(audio, "RESAMPLE_BLOCK_S", 1.0)
    wave = np.random.default_rng(1).standard_normal(44101 * 3).astype(np.float32) * 0.1  # three blocks
    np.testing.assert_array_equal(resample(wave, 44101), resample_poly(wave, 16000, 44101).astype(np.float32))
    assert (audio._poly_filter.cache_info().misses, audio._poly_filter.cache_info().hits) == (1, 3)
