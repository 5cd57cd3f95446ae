"""Corpus builders for the data pipeline tests, and shared helpers.

``write_mustc`` writes ``ROOT/en-<tgt>/data/<split>/{wav/<talk>.wav, txt/<split>.{yaml,en,<tgt>}}``
with synthetic audio (tones and noise bursts), so each bad-input case can be made by editing one
file of a good corpus. The voiced LibriSpeech, Kaldi and Augmented LibriSpeech fixtures are in tests/conftest.py
(the recipe tests use them too).
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
