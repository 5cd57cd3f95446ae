"""`sate stream -`'s reading of raw PCM on stdin (`sate.decode.stream.pcm_pieces`); the streaming itself is tested in
tests/decode/test_simultaneous.py."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from sate.cli import main
from sate.decode import api, simultaneous, stream
from sate.decode.simultaneous import Commit
from sate.errors import SateError


def _speech(seconds: float, seed: int = 0) -> np.ndarray:
    """Speech-like float samples in [-1, 1]: a tone whose loudness comes and goes, with noise."""
    t = np.arange(round(seconds * 16000)) / 16000
    rng = np.random.default_rng(seed)
    return (0.3 * np.sin(2 * np.pi * 180 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))
            + 0.01 * rng.standard_normal(len(t))).astype(np.float32)


def test_float_pcm_on_stdin_is_named_as_such() -> None:
    """`ffmpeg ... -f f32le - | sate stream -` (32-bit floats, as Whisper-style pipelines pipe) was read as s16le:
    noise at twice the length, and the note said "no speech found", exit 0 (twenty-second hostile pass). Refused
    once sound arrives, after any leading silence; s16le, loud or quiet, and silence alone are read as before."""
    wave = _speech(2.0)
    floats = np.concatenate([np.zeros(16000, np.float32), wave]).astype("<f4").tobytes()  # 1 s of silence first
    with pytest.raises(SateError, match=r"^stdin: 32-bit float PCM \(ffmpeg -f f32le\), not 16-bit: give 16 kHz mono "
                                        r"s16le \(ffmpeg -i FILE -f s16le -ac 1 -ar 16000 -\)$"):
        list(stream.pcm_pieces(io.BytesIO(floats), 0.5))
    for scale in (32767, 100, 3):  # loud, quiet and near-silent 16-bit speech
        pcm = np.round(wave * scale).astype("<i2")
        pieces = list(stream.pcm_pieces(io.BytesIO(pcm.tobytes()), 0.5))
        assert np.array_equal(np.concatenate(pieces), pcm.astype(np.float32) / 32768.0)
    silence = np.zeros(32000, "<i2").tobytes()
    assert sum(len(p) for p in stream.pcm_pieces(io.BytesIO(silence), 0.5)) == 32000


def test_unsigned_8_bit_pcm_on_stdin_is_named_as_such() -> None:
    """`arecord -q -t raw | sate stream -` without `-f S16_LE` gives arecord's default, unsigned 8-bit samples: read as
    s16le, speech at half the rate wrapping around full scale, translated, exit 0 (twenty-third hostile pass). Refused
    from the first piece, silence included (unsigned silence is 128); s16le, even a full-scale tone, reads as before."""
    wave = np.concatenate([np.zeros(8000, np.float32), _speech(2.0)])
    for samples in (wave, wave[:8000]):  # speech after silence, and silence alone
        unsigned = np.round(samples * 127 + 128).astype(np.uint8).tobytes()
        with pytest.raises(SateError, match=r"^stdin: looks like 8-bit unsigned PCM \(arecord's default format "
                                            r"when -f is not given\), not 16-bit: give 16 kHz mono s16le "
                                            r"\(arecord -f S16_LE -r 16000 -c 1 -t raw\)$"):
            list(stream.pcm_pieces(io.BytesIO(unsigned), 0.5))
    tone = np.round(32767 * np.sin(2 * np.pi * 1000 * np.arange(16000) / 16000)).astype("<i2")
    pieces = list(stream.pcm_pieces(io.BytesIO(tone.tobytes()), 0.5))
    assert np.array_equal(np.concatenate(pieces), tone.astype(np.float32) / 32768.0)


def test_two_channels_alike_on_stdin_are_named_as_such() -> None:
    """`ffmpeg -i podcast.mp3 -f s16le -ar 16000 - | sate stream -` without `-ac 1`: a stereo file of one voice (both
    channels alike, as most are) interleaved, read as mono speech at half its speed and pitch and translated, exit 0
    (twenty-third hostile pass). Refused once sound arrives; mono, a constant offset in silence and two channels
    that differ (which no rule tells from mono) read as before."""
    mono = np.round(np.concatenate([np.zeros(8000, np.float32), _speech(2.0)]) * 32767).astype("<i2")
    with pytest.raises(SateError, match=r"^stdin: looks like two channels alike \(a stereo file given without "
                                        r"-ac 1\), not mono: give 16 kHz mono s16le \(ffmpeg -i FILE -f s16le -ac 1 "
                                        r"-ar 16000 -\)$"):
        list(stream.pcm_pieces(io.BytesIO(np.repeat(mono, 2).tobytes()), 0.5))
    other = np.round(_speech(2.0, seed=1) * 32767).astype("<i2")
    for pcm in (mono, np.full(16000, -1, "<i2"), np.stack([mono[8000:], other], axis=1).ravel()):
        pieces = list(stream.pcm_pieces(io.BytesIO(pcm.tobytes()), 0.5))
        assert np.array_equal(np.concatenate(pieces), pcm.astype(np.float32) / 32768.0)


def test_two_channels_alike_but_for_a_few_units_are_named_as_such() -> None:
    """Channels alike but not to the sample (a lossy stereo file decoded, dither, a little of the sound a sample
    later) passed as mono: read at half speed and pitch and translated, exit 0 (twenty-fifth hostile pass). A pair's
    own samples differing far less than the pairs do is two channels; mono of any loudness or band reads as before."""
    rng = np.random.default_rng(0)
    mono = np.concatenate([np.zeros(8000, np.float32), _speech(2.0)]) * 32767
    dithered = mono + rng.normal(0, 3, len(mono))  # a few units apart
    beside = 0.8 * mono + 0.2 * np.concatenate([[0.0], mono[:-1]])  # mostly the same sound, a fifth a sample later
    for other in (dithered, beside):
        pcm = np.round(np.stack([mono, other], axis=1)).astype("<i2")
        with pytest.raises(SateError, match=r"^stdin: looks like two channels alike \(a stereo file given without "):
            list(stream.pcm_pieces(io.BytesIO(pcm.tobytes()), 0.5))
    band = np.convolve(mono, np.ones(4) / 4, mode="same")  # telephone-like: only low frequencies
    noise = rng.normal(0, 2000, 32000)  # loud noise, mono
    for samples in (mono, band, mono * 0.01, noise):
        pcm = np.round(samples).astype("<i2")
        pieces = list(stream.pcm_pieces(io.BytesIO(pcm.tobytes()), 0.5))
        assert np.array_equal(np.concatenate(pieces), pcm.astype(np.float32) / 32768.0)


def test_two_channels_alike_at_another_level_are_named_as_such() -> None:
    """One channel at another level than the other (a voice panned to one side, a channel turned down, its polarity
    inverted) passed as mono, read at half speed and pitch, exit 0: only channels alike at one level were told
    (review of the twenty-fifth hostile pass). The pair's right sample, at the best gain, is compared with its left
    as the next pair's left is. Not told, as docs/inference.md says: a channel that lags the other (two microphones
    apart), which is no more alike than neighbouring pairs are. A mono pure tone at exactly 4 kHz (a quarter of the
    rate; artificial) has every pair in one ratio: refused at the phase that makes both samples equal (the rule of
    the twenty-third pass), read as mono at the others."""
    rng = np.random.default_rng(0)
    mono = np.concatenate([np.zeros(8000, np.float32), _speech(2.0)]) * 32767 * 0.9
    noisy = mono + rng.normal(0, 3, len(mono))
    for left, right in ((noisy, 0.5 * mono), (0.1 * noisy, mono), (noisy, -mono), (noisy, 0.02 * mono)):
        pcm = np.round(np.stack([left, right], axis=1)).astype("<i2")
        with pytest.raises(SateError, match=r"^stdin: looks like two channels alike \(a stereo file given without "):
            list(stream.pcm_pieces(io.BytesIO(pcm.tobytes()), 0.5))
    lagging = np.round(np.stack([mono, np.concatenate([[0.0], mono[:-1]])], axis=1)).astype("<i2")
    ticks = np.arange(32000)
    tones = [np.round(8000 * np.sin(np.pi / 2 * ticks + phase)).astype("<i2") for phase in (np.pi / 4, 0.1, 1.0)]
    with pytest.raises(SateError, match=r"^stdin: looks like two channels alike"):
        list(stream.pcm_pieces(io.BytesIO(tones[0].tobytes()), 0.5))
    for pcm in (lagging, *tones[1:]):
        pieces = list(stream.pcm_pieces(io.BytesIO(pcm.tobytes()), 0.5))
        assert np.array_equal(np.concatenate(pieces), pcm.ravel().astype(np.float32) / 32768.0)


def test_32_bit_integer_pcm_on_stdin_is_named_as_such(utterances: list[np.ndarray]) -> None:
    """`arecord -f S32_LE` (a 24-bit USB microphone's format) into `sate stream -` was read as s16le, two interleaved
    streams at twice the length, translated, exit 0 (twenty-ninth hostile pass): refused once sound arrives; 16-bit
    speech, at any level, and 16-bit audio made from 8-bit (every sample a multiple of 256, or every other one where
    it was interpolated) read as before."""
    wave = np.concatenate([np.zeros(8000), _speech(2.0)])
    rng = np.random.default_rng(0)
    for bits in (24,):
        wide = (np.round(wave * (2 ** (bits - 1) - 1) + rng.normal(0, 2, len(wave))).astype("<i4") << (32 - bits))
        with pytest.raises(SateError, match=r"^stdin: looks like 32-bit integer PCM \(arecord -f S32_LE, ffmpeg -f "
                                            r"s32le\), not 16-bit: give 16 kHz mono s16le \(arecord -f S16_LE -r 16000 "
                                            r"-c 1 -t raw; ffmpeg -i FILE -f s16le -ac 1 -ar 16000 -\)$"):
            list(stream.pcm_pieces(io.BytesIO(wide.astype("<i4").tobytes()), 0.5))
    speech = np.concatenate(utterances)
    eight = np.round(speech[::2] / np.abs(speech).max() * 127) * 256  # 8-bit audio at 8 kHz, as 16-bit
    linear = np.empty(2 * len(eight) - 1)  # to 16 kHz by linear interpolation (audioop.ratecv, ALSA's "linear"):
    linear[0::2], linear[1::2] = eight, (eight[:-1] + eight[1:]) / 2  # refused as 32-bit once (review29l)
    for pcm in (*(np.round(speech / np.abs(speech).max() * peak) for peak in (32000, 2000, 300)),
                np.round(speech / np.abs(speech).max() * 127) * 256, linear, linear[1:]):
        pcm = pcm.astype("<i2")
        pieces = list(stream.pcm_pieces(io.BytesIO(pcm.tobytes()), 0.5))
        assert np.array_equal(np.concatenate(pieces), pcm.astype(np.float32) / 32768.0)


@pytest.mark.slow
def test_mono_speech_of_any_band_is_not_taken_for_two_channels(utterances: list[np.ndarray]) -> None:
    """The fixture's voices (espeak-ng and flite) as they are, low-passed (a muffled or telephone voice), high-passed
    (fricatives alone) and quiet, cut into pieces of 0.2, 0.5 and 1 s as stdin brings them: no piece is judged two
    channels alike, at any level."""
    speech = np.concatenate(utterances).astype(np.float64)
    low = np.convolve(speech, np.ones(16) / 16, mode="same")  # below about 1 kHz
    high = np.diff(np.diff(speech))  # mostly above 4 kHz: s, sh, f
    for wave in (speech, low, high):
        for peak in (32000, 2000):
            pcm = np.round(wave / np.abs(wave).max() * peak).astype("<i2").tobytes()
            for chunk in (0.2, 0.5, 1.0):
                size = 2 * round(chunk * 16000)
                assert not any(stream.two_alike_channels(pcm[at:at + size]) for at in range(0, len(pcm), size))


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_a_segment_with_a_line_break_or_tab_stays_one_line(fmt: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A Whisper pack's byte-level text can hold a newline: `--format text` split that segment's line in two (every
    later line a segment off), and `--format jsonl` wrote a U+2028 raw, which `str.splitlines` splits (twenty-eighth
    hostile pass). Each segment is one line now, as `sate translate --format text` writes it."""
    texts = ["hallo\nda", "a\u2028b\tc", "tsch\u00fcss"]

    def fake_live(translator: Any, pieces: Iterator[np.ndarray], *args: Any) -> Iterator[Commit]:
        for _ in pieces:
            pass
        yield from (Commit(float(k), text, True) for k, text in enumerate(texts, 1))

    class Loaded:
        def with_options(self, **options: Any) -> None:
            return None

    monkeypatch.setattr(api.SpeechTranslator, "load", staticmethod(lambda *args, **kwargs: Loaded()))
    monkeypatch.setattr(simultaneous, "live", fake_live)
    path = tmp_path / "talk.wav"
    sf.write(path, _speech(1.0), 16000)
    assert main(["stream", "--model", str(tmp_path), str(path), "--fast", "--vad", "energy", "--format", fmt]) == 0
    lines = capsys.readouterr().out.splitlines()
    if fmt == "text":
        assert lines == ["hallo da", "a b c", "tsch\u00fcss"]
    else:
        assert [json.loads(line)["text"] for line in lines] == texts


@pytest.mark.parametrize(("chunk", "said"), [(120.0001, "got 120.0001"), (0.0499999, "got 0.0499999"),
                                             (float("nan"), "got nan"), (200, "got 200"),
                                             # fix32s: as values in messages are, not 301 digits, not a repr
                                             pytest.param(10**300, r"got 1(0){19}\.\.\. \(301 digits\)", id="1e300"),
                                             (np.float64(120.0001), "got 120.0001"), ("5", "got '5'")])
def test_a_chunk_just_past_a_bound_is_shown_as_given(chunk: float, said: str) -> None:
    """Thirty-second hostile pass: `sate stream --chunk 120.0001` was refused as "at most 120 seconds, got 120"."""
    from sate.decode.options import check_chunk

    with pytest.raises(SateError, match=f"--chunk must be at least 0.05 and at most 120 seconds, {said}$") as err:
        check_chunk(chunk)
    assert len(str(err.value)) < 150


@pytest.mark.parametrize("chunk", [np.float32(0.5), np.float64(0.5), np.int64(2), np.array(0.5)])
def test_a_numpy_chunk_is_taken_as_its_number(chunk: object) -> None:
    """fix32s: `check_chunk` took np.float64 alone, so `evaluate(chunk=np.float32(0.5))` and `stream_talk` refused a
    value of a grid as "must be at least 0.05 and at most 120 seconds, got 0.5"; it returns the plain number, which
    a results file can hold."""
    from sate.decode.options import check_chunk

    got = check_chunk(chunk)
    assert got == chunk and type(got) in (float, int)
