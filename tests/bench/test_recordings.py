"""Long recordings built from short utterances (`sate.bench.recordings`) and the Asterisk prompt list reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from sate.bench import recordings
from sate.bench.asterisk import TEXTS, fetch_asterisk, load_prompt, read_prompts
from sate.errors import SateError

SR = 16000


def burst(seconds: float, silence: float = 0.3, freq: float = 300.0) -> np.ndarray:
    """A tone of ``seconds`` with ``silence`` seconds of silence on both sides (an utterance with its margins)."""
    t = np.arange(round(seconds * SR)) / SR
    pad = np.zeros(round(silence * SR), dtype=np.float32)
    return np.concatenate([pad, (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32), pad])


def test_utterances_are_trimmed_and_laid_out_with_known_pauses() -> None:
    utts = [burst(1.0), burst(0.5), burst(2.0), burst(0.8)]
    rec = recordings.build(utts, np.random.default_rng(0))
    assert rec.spans[0][0] == pytest.approx(recordings.LEAD)
    assert rec.duration == pytest.approx(rec.spans[-1][1] + recordings.LEAD)
    for (a, b), seconds in zip(rec.spans, (1.0, 0.5, 2.0, 0.8), strict=True):
        assert b - a == pytest.approx(seconds, abs=0.03)  # the margins are gone: the span is the speech
        inside = rec.wave[round(a * SR) + 80:round(b * SR) - 80]
        assert np.abs(inside).max() > 0.2
    pauses = [b[0] - a[1] for a, b in zip(rec.spans, rec.spans[1:], strict=False)]
    assert all(recordings.PAUSES[0] - 0.03 <= p <= recordings.PAUSES[1] + 0.03 for p in pauses)
    quiet = [rec.wave[round((a[1] + 0.03) * SR):round((b[0] - 0.03) * SR)] for a, b in zip(rec.spans, rec.spans[1:],
                                                                                        strict=False)]
    assert all(np.abs(q).max() < 1e-3 for q in quiet)
    with pytest.raises(SateError, match="at least one utterance"):
        recordings.build([], np.random.default_rng(0))


def test_the_reference_joins_utterances_across_pauses_shorter_than_min_pause() -> None:
    spans = [(1.0, 2.0), (2.2, 3.0), (4.0, 5.0)]
    assert recordings.reference_segments(spans, 0.3) == [(1.0, 3.0), (4.0, 5.0)]
    assert recordings.reference_segments(spans, 0.1) == spans


@pytest.mark.parametrize("noise", recordings.NOISES)
def test_noise_is_mixed_at_the_asked_snr_over_the_whole_recording(noise: str) -> None:
    utts = [burst(1.0, freq=f) for f in (200, 300, 400, 500)]
    rec = recordings.build(utts, np.random.default_rng(0))
    mixed = recordings.mix(rec, noise, 10.0, utts, np.random.default_rng(1))
    added = (mixed - rec.wave).astype(np.float64)
    assert 10 * np.log10(recordings.speech_power(rec) / np.mean(added**2)) == pytest.approx(10.0, abs=0.01)
    assert np.abs(added[: round(0.9 * SR)]).max() > 0  # under the pauses too
    with pytest.raises(SateError, match="unknown noise"):
        recordings.mix(rec, "pink", 10.0, utts, np.random.default_rng(1))
    with pytest.raises(SateError, match="babble needs"):
        recordings.babble(100, [], np.random.default_rng(0))


def fake_asterisk(root: Path) -> Path:
    """An Asterisk prompt directory as `fetch_asterisk` leaves it in the cache: 8 kHz wavs and the text list."""
    sounds = root / "asterisk-en" / "sounds"
    (sounds / "digits").mkdir(parents=True)
    (sounds / "silence").mkdir()
    for name in ("auth-thankyou", "digits/5", "beep", "silence/1"):
        sf.write(sounds / f"{name}.wav", np.zeros(8000, dtype=np.int16), 8000, subtype="PCM_16")
    (root / "asterisk-en" / TEXTS).write_text("; Core Asterisk Sounds in English\n\nauth-thankyou: Thank you.\n"
                                             "digits/5: five\nbeep: [this is a simple beep tone]\n"
                                             "silence/1: 1 second of silence\nno-such-file: Nothing.\n")
    return root


def test_prompts_are_the_spoken_ones_and_read_at_16k(tmp_path: Path) -> None:
    root = fetch_asterisk(fake_asterisk(tmp_path))  # already in the cache: nothing is downloaded
    prompts = read_prompts(root)
    assert [(p.name, p.text) for p in prompts] == [("auth-thankyou", "Thank you."), ("digits/5", "five")]
    assert len(load_prompt(prompts[0])) == SR  # one second at 8 kHz, read at 16 kHz
    (root / TEXTS).write_text("auth-thankyou Thank you.\n")
    with pytest.raises(SateError, match=f"{TEXTS}:1: expected NAME: TEXT"):
        read_prompts(root)
    with pytest.raises(SateError, match="not an Asterisk prompt directory"):
        read_prompts(tmp_path)
