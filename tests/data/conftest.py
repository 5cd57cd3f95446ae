"""Corpus builders for the data pipeline tests, and shared helpers.

``write_mustc`` writes ``ROOT/en-<tgt>/data/<split>/{wav/<talk>.wav, txt/<split>.{yaml,en,<tgt>}}``
with synthetic audio (tones and noise bursts), so each bad-input case can be made by editing one
file of a good corpus. ``write_librispeech`` and ``write_kaldi_dir`` voice a few Ding sentences offline
(training voices) into a LibriSpeech subset and a Kaldi data directory (fixtures ``librispeech_subset`` and
``kaldi_corpus``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from sate.cli import main as sate_main
from sate.data.text import normalize_source

WORDS = ("the cat sat on a mat while we're talking about music and science every day people don't "
         "know how small things grow into big ideas").split()
GERMAN = ("die katze sitzt auf einer matte während wir über musik und wissenschaft sprechen jeden tag "
          "wissen leute nicht wie kleine dinge zu großen ideen werden").split()


@dataclass
class Segment:
    offset: float
    duration: float
    en: str
    de: str


@dataclass
class Talk:
    name: str
    seconds: float
    segments: list[Segment] = field(default_factory=list)


def make_talks(split: str, n_talks: int, per_talk: int, seed: int) -> list[Talk]:
    """Talks of ``per_talk`` segments of 0.5-1.4 s each, separated by short gaps."""
    rng = random.Random(seed)
    talks = []
    for t in range(n_talks):
        talk = Talk(f"ted_{seed}{t}", 0.0)
        pos = 0.3
        for _ in range(per_talk):
            dur = round(rng.uniform(0.5, 1.4), 2)
            k = rng.randint(3, 8)
            en = " ".join(rng.choice(WORDS) for _ in range(k))
            en = en[0].upper() + en[1:] + rng.choice([".", "?", "!", ", (Applause)"])
            de = " ".join(rng.choice(GERMAN) for _ in range(k)).capitalize() + "."
            talk.segments.append(Segment(round(pos, 2), dur, en, de))
            pos += dur + 0.2
        talk.seconds = pos + 0.3
        talks.append(talk)
    return talks


def synth_audio(seconds: float, sample_rate: int, seed: int) -> np.ndarray:
    """A tone that changes pitch every 0.3 s plus noise: cheap and not silent."""
    rng = np.random.default_rng(seed)
    n = int(seconds * sample_rate)
    t = np.arange(n) / sample_rate
    freqs = np.repeat(rng.uniform(200, 2000, size=math.ceil(seconds / 0.3) + 1), int(0.3 * sample_rate) + 1)[:n]
    return (0.3 * np.sin(2 * np.pi * freqs * t) + 0.05 * rng.standard_normal(n)).astype(np.float32)


DEFAULT_LAYOUT = {"train": (3, 5), "dev": (1, 4), "tst-COMMON": (2, 3)}


def write_mustc(root: Path, tgt_lang: str = "de", layout: dict | None = None, sample_rate: int = 16000,
                channels: int = 1, v2: bool = False) -> Path:
    """Write a small corpus; returns ``root``. ``layout``: split -> (talks, segments per talk)."""
    layout = DEFAULT_LAYOUT if layout is None else layout
    for s, (split, (n_talks, per_talk)) in enumerate(layout.items()):
        base = root / f"en-{tgt_lang}" / "data" / split
        (base / "wav").mkdir(parents=True)
        (base / "txt").mkdir(parents=True)
        yaml_lines, en_lines, tgt_lines = [], [], []
        for k, talk in enumerate(make_talks(split, n_talks, per_talk, seed=s + 1)):
            audio = synth_audio(talk.seconds, sample_rate, seed=100 * s + k)
            if channels > 1:
                audio = np.stack([audio] * channels, axis=1)
            sf.write(base / "wav" / f"{talk.name}.wav", audio, sample_rate, subtype="PCM_16")
            for seg in talk.segments:
                extra = f"rW: {len(seg.en.split())}, uW: 0, " if v2 else ""
                yaml_lines.append(f"- {{duration: {seg.duration:.6f}, offset: {seg.offset:.6f}, {extra}"
                                  f"speaker_id: spk.{s}{k}, wav: {talk.name}.wav}}")
                en_lines.append(seg.en)
                tgt_lines.append(seg.de)
        for name, lines in (("yaml", yaml_lines), ("en", en_lines), (tgt_lang, tgt_lines)):
            (base / "txt" / f"{split}.{name}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def edit_lines(path: Path, edit) -> None:
    """Apply ``edit(list_of_lines) -> list_of_lines`` to a text file."""
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    path.write_text("\n".join(edit(lines)) + "\n", encoding="utf-8")


@pytest.fixture(name="write_mustc")
def write_mustc_fixture():
    """``write_mustc`` itself (helpers reach test modules as fixtures: pytest runs in importlib mode)."""
    return write_mustc


@pytest.fixture(name="edit_lines")
def edit_lines_fixture():
    return edit_lines


@pytest.fixture
def run_sate(capsys):
    """Run the ``sate`` CLI in-process: returns (exit code, stdout, stderr)."""

    def run(*argv: object) -> tuple[int, str, str]:
        rc = sate_main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return rc, out, err

    return run


@pytest.fixture
def corpus(tmp_path) -> Path:
    return write_mustc(tmp_path / "mustc")


@pytest.fixture(scope="session")
def prepared(tmp_path_factory) -> Path:
    """A data dir after prep, features and vocab on the default corpus (built once, read-only)."""
    root = write_mustc(tmp_path_factory.mktemp("mustc"))
    data = tmp_path_factory.mktemp("data")
    for argv in (["prep", "--mustc-root", root, "--out", data],
                 ["features", "--data", data, "--jobs", "1"],
                 ["vocab", "--data", data, "--src-size", "40", "--tgt-size", "40"]):
        assert sate_main([str(a) for a in argv]) == 0
    return data


# ------------------------------------------------------------------------- LibriSpeech and Kaldi, voiced offline

@dataclass(frozen=True)
class Voiced:
    """What a fixture voiced for one utterance: prep's rows are checked against it."""

    id: str
    speaker: str
    text: str  # the transcript as the corpus writes it
    offset: float
    samples: int  # at 16 kHz


LIBRISPEECH_READERS = (("19", ("198", "227")), ("250", ("142276", "142286")))  # reader -> two chapters


def write_librispeech(subset: Path, pairs: list[tuple[str, str]], voice) -> list[Voiced]:  # noqa: ANN001
    """A LibriSpeech subset in small: 2 readers x 2 chapters x 2 utterances, ``<reader>/<chapter>/`` holding
    ``<reader>-<chapter>-<n>.flac`` and ``<reader>-<chapter>.trans.txt`` with LibriSpeech's uppercase transcripts
    (no punctuation but apostrophes). Each reader has one voice. Returns the utterances in file order."""
    voiced = []
    k = 0
    for r, (reader, chapters) in enumerate(LIBRISPEECH_READERS):
        for chapter in chapters:
            directory = subset / reader / chapter
            directory.mkdir(parents=True)
            lines = []
            for n in range(2):
                utt = f"{reader}-{chapter}-{n:04d}"
                text = normalize_source(pairs[k][0]).upper()
                audio = voice(pairs[k][0], r)
                sf.write(directory / f"{utt}.flac", audio, 16000, subtype="PCM_16")
                lines.append(f"{utt} {text}")
                voiced.append(Voiced(utt, reader, text, 0.0, len(audio)))
                k += 1
            (directory / f"{reader}-{chapter}.trans.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return voiced


def _padded(audio: np.ndarray, seconds: float) -> np.ndarray:
    """`audio` followed by silence up to a whole number of 10 ms, then `seconds` more."""
    n = -(-len(audio) // 160) * 160 + round(seconds * 16000)
    return np.concatenate([audio, np.zeros(n - len(audio), dtype=np.float32)])


def write_kaldi_dir(directory: Path, audio_dir: Path, pairs: list[tuple[str, str]], voice) -> list[Voiced]:  # noqa: ANN001
    """A Kaldi data directory over two recordings of three sentences each: ``wav.scp`` (absolute paths),
    ``segments`` (seconds; the last segment of recB ends at -1), ``text`` (the English as written), ``utt2spk``.
    recA is 16 kHz mono and ends with 0.5 s of noise that ``segments`` lists without a line in ``text``; recB is
    8 kHz stereo (right = half the left). Returns the transcribed utterances in text order."""
    from scipy.signal import resample_poly

    directory.mkdir(parents=True)
    audio_dir.mkdir(parents=True)
    voiced, scp, segments, text, utt2spk = [], [], [], [], []
    for r, rec in enumerate(("recA", "recB")):
        speaker = f"spk{r}"
        pieces, pos = [np.zeros(3200, dtype=np.float32)], 0.2
        for n in range(3):
            en = pairs[3 * r + n][0]
            audio = _padded(voice(en, 2 + r), 0.3)
            utt = f"{speaker}-{rec}-{n}"
            length = len(audio) / 16000 - 0.3
            end = "-1" if (r, n) == (1, 2) else f"{pos + length:.2f}"
            segments.append(f"{utt} {rec} {pos:.2f} {end}")
            text.append(f"{utt} {en}")
            utt2spk.append(f"{utt} {speaker}")
            voiced.append(Voiced(utt, speaker, en, round(pos, 2), round(length * 16000) if end != "-1" else -1))
            pieces.append(audio)
            pos += len(audio) / 16000
        if r == 0:
            pieces.append((0.1 * np.random.default_rng(0).standard_normal(8000)).astype(np.float32))
            segments.append(f"{speaker}-{rec}-noise {rec} {pos:.2f} {pos + 0.5:.2f}")
        wave = np.concatenate(pieces)
        path = audio_dir / f"{rec}.wav"
        if r == 0:
            sf.write(path, wave, 16000, subtype="PCM_16")
        else:
            wave = resample_poly(wave, 1, 2).astype(np.float32)
            sf.write(path, np.stack([wave, 0.5 * wave], axis=1), 8000, subtype="PCM_16")
            last = voiced[-1]  # to the end of the file: what remains of it at 16 kHz
            samples = round((len(wave) / 8000 - last.offset) * 16000)
            voiced[-1] = Voiced(last.id, last.speaker, last.text, last.offset, samples)
        scp.append(f"{rec} {path}")
    for name, lines in (("wav.scp", scp), ("segments", segments), ("text", text), ("utt2spk", utt2spk)):
        (directory / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return voiced


@pytest.fixture(scope="session")
def librispeech_subset(tmp_path_factory, extra_pairs, voice) -> tuple[Path, list[Voiced]]:
    """(a LibriSpeech subset named train-clean-5, its utterances): extra pairs 0-7, read-only."""
    subset = tmp_path_factory.mktemp("LibriSpeech") / "train-clean-5"
    return subset, write_librispeech(subset, extra_pairs, voice)


@pytest.fixture(scope="session")
def kaldi_corpus(tmp_path_factory, extra_pairs, voice) -> tuple[Path, list[Voiced]]:
    """(a Kaldi data directory named kaldi_train, its transcribed utterances): extra pairs 8-13, read-only."""
    root = tmp_path_factory.mktemp("kaldi")
    return root / "kaldi_train", write_kaldi_dir(root / "kaldi_train", root / "audio", extra_pairs[8:14], voice)
