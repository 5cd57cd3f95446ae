"""Build an English->German speech translation corpus offline, in MuST-C v1 layout.

Text: the example sentences of the Ding German-English dictionary (Debian package
`trans-de-en`, GPL-2+, fetched at run time and never shipped). Speech: each English
sentence voiced by espeak-ng or flite with a random rate and pitch. Consecutive sentences
of one voice form a "talk" wav, segmented by a MuST-C style yaml, so that every later stage
runs on this corpus exactly as on the real MuST-C.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import soundfile as sf

from sate.errors import SateError
from sate.files import atomic_open, atomic_write_text

SAMPLE_RATE = 16000
SPLITS = ("train", "dev", "tst-COMMON")
DING_PACKAGE = "trans-de-en"
DING_PATH_IN_PACKAGE = "usr/share/trans/de-en"

# Voices used for training corpora. flite's `rms` and any neural voice (e.g. Piper) are
# reserved for evaluating robustness to unseen voices and must never be selected here.
ESPEAK_ACCENTS = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-us-nyc")
ESPEAK_VARIANTS = tuple(f"m{i}" for i in range(1, 8)) + tuple(f"f{i}" for i in range(1, 5))
FLITE_VOICES = ("awb", "slt", "kal16")
RESERVED_VOICES = frozenset({"flite:rms", "piper"})

_ANNOTATION = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|\([^()]*\)")
_TYPOGRAPHY = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201a": "'", "\u00b4": "'", "`": "'",
                             "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
                             "\u2013": "-", "\u2014": "-", "\u00a0": " "})


# ----------------------------------------------------------------------------- text

def default_cache_dir() -> Path:
    return Path(os.environ.get("SATE_CACHE", Path.home() / ".cache" / "sate"))


def fetch_ding(cache_dir: Path) -> Path:
    """Return the Ding dictionary file, downloading `trans-de-en` with apt-get if needed."""
    target = cache_dir / "ding" / "de-en"
    if target.exists():
        return target
    installed = Path("/") / DING_PATH_IN_PACKAGE
    if installed.exists():
        return installed
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise SateError(f"cannot fetch the Ding dictionary: `{tool}` is missing. Download the Debian "
                            f"package {DING_PACKAGE} by hand, unpack it and pass --ding PATH/{DING_PATH_IN_PACKAGE}")
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run(["apt-get", "download", DING_PACKAGE], cwd=tmp, capture_output=True, text=True)
        debs = list(Path(tmp).glob(f"{DING_PACKAGE}_*.deb"))
        if got.returncode != 0 or not debs:
            raise SateError(f"`apt-get download {DING_PACKAGE}` failed ({got.stderr.strip()[-300:]}). "
                            f"Run `apt-get update` (as root) and retry, or pass --ding PATH to the unpacked "
                            f"file {DING_PATH_IN_PACKAGE}")
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(Path(tmp) / "x")], check=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(target, "wb") as f, open(Path(tmp) / "x" / DING_PATH_IN_PACKAGE, "rb") as src:
            shutil.copyfileobj(src, f)
    return target


def normalize_typography(text: str) -> str:
    """Straight quotes and apostrophes, plain dashes and spaces, single spaces."""
    return " ".join(text.translate(_TYPOGRAPHY).split())


def _clean(text: str) -> str:
    previous = None
    while previous != text:  # annotations may nest: "(… {n} …)"
        previous, text = text, _ANNOTATION.sub(" ", text)
    text = normalize_typography(text)
    return re.sub(r"\s+([.,;:?!])", r"\1", text)


def _is_sentence(text: str) -> bool:
    return (len(text.split()) >= 4 and text[:1].isupper() and text[-1:] in ".?!"
            and not any(c in text for c in "/~\u2026") and "..." not in text)


def parse_ding_line(line: str) -> list[tuple[str, str]]:
    """The (English, German) example-sentence pairs of one dictionary line.

    A line is `de | de2 | ... :: en | en2 | ...`; the `|` sub-entries correspond one to one.
    Lines whose two sides have different numbers of sub-entries cannot be aligned and give none.
    Annotations `{...}`, `[...]`, `(...)` are stripped; both sides must be capitalised sentences
    ending in . ? or !, of at least 4 words, without "/", "~" or an ellipsis.
    """
    if line.startswith("#") or " :: " not in line:
        return []
    de_side, en_side = line.rstrip("\n").split(" :: ", 1)
    de_parts, en_parts = de_side.split(" | "), en_side.split(" | ")
    if len(de_parts) != len(en_parts):
        return []
    pairs = []
    for de, en in zip(de_parts, en_parts, strict=True):
        de_first, en_first = _first_sentence(de), _first_sentence(en)
        if de_first and en_first:
            pairs.append((en_first, de_first))
    return pairs


def _first_sentence(entry: str) -> str | None:
    """The first well-formed sentence among an entry's `;`-separated variants, e.g.
    "Shake well before using!; Shake well before use!" gives the first one."""
    for variant in entry.split(";"):
        variant = _clean(variant)
        if _is_sentence(variant):
            return variant
    return None


def read_ding_pairs(path: Path) -> list[tuple[str, str]]:
    """All distinct (English, German) sentence pairs of the dictionary, in file order."""
    seen: set[tuple[str, str]] = set()
    pairs = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            for pair in parse_ding_line(line):
                if pair not in seen:
                    seen.add(pair)
                    pairs.append(pair)
    return pairs


def split_of(english: str) -> str:
    """The fixed split of a sentence: a stable hash of its normalised English side."""
    h = int(hashlib.sha1(english.encode("utf-8")).hexdigest(), 16) % 100
    return "tst-COMMON" if h < 4 else "dev" if h < 8 else "train"


def split_pairs(pairs: Iterable[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
    """Split by hash, then drop train pairs whose German also occurs in dev or tst-COMMON."""
    splits: dict[str, list[tuple[str, str]]] = {name: [] for name in SPLITS}
    for en, de in pairs:
        splits[split_of(en)].append((en, de))
    held_out_german = {de for name in ("dev", "tst-COMMON") for _, de in splits[name]}
    splits["train"] = [(en, de) for en, de in splits["train"] if de not in held_out_german]
    return splits


# ----------------------------------------------------------------------------- speech

@dataclass(frozen=True)
class Voice:
    engine: str  # "espeak" or "flite"
    name: str  # espeak "en-us+m3", flite "slt"

    @property
    def key(self) -> str:
        return f"{self.engine}:{self.name}"


def voice_pool() -> list[Voice]:
    """Every voice the corpus may use; reserved evaluation voices are never in it."""
    pool = [Voice("espeak", f"{accent}+{variant}") for accent in ESPEAK_ACCENTS for variant in ESPEAK_VARIANTS]
    pool += [Voice("flite", name) for name in FLITE_VOICES]
    reserved = [v.key for v in pool if v.key in RESERVED_VOICES]
    assert not reserved, f"reserved voices in the pool: {reserved}"
    return pool


def check_engines(pool: Sequence[Voice]) -> None:
    """Fail early, saying exactly what to install, when a TTS engine is missing."""
    needed = {"espeak": "espeak-ng", "flite": "flite"}
    missing = sorted({needed[v.engine] for v in pool if shutil.which(needed[v.engine]) is None})
    if missing:
        raise SateError(f"missing text-to-speech engine(s): {', '.join(missing)}. "
                        f"Install them with: sudo apt-get install {' '.join(missing)}")


def _resample(audio: np.ndarray, rate: int) -> np.ndarray:
    if rate == SAMPLE_RATE:
        return audio
    from math import gcd

    from scipy.signal import resample_poly

    g = gcd(rate, SAMPLE_RATE)
    return resample_poly(audio, SAMPLE_RATE // g, rate // g).astype(np.float32)


def _trim(audio: np.ndarray, margin: int = 800) -> np.ndarray:
    """Cut the engine's leading and trailing silence, keeping a 50 ms margin."""
    loud = np.flatnonzero(np.abs(audio) > 0.01)
    if loud.size == 0:
        return audio
    return audio[max(loud[0] - margin, 0): loud[-1] + margin]


def speak(text: str, voice: Voice, rate: float, pitch: float, workdir: Path) -> np.ndarray:
    """Voice one sentence: float32 mono audio at 16 kHz.

    `rate` scales the speaking speed (1.0 = engine default) and `pitch` lies in [0, 1].
    """
    if voice.key in RESERVED_VOICES:
        raise ValueError(f"voice {voice.key} is reserved for evaluation")
    out = workdir / "utt.wav"
    if voice.engine == "espeak":
        cmd = ["espeak-ng", "-v", voice.name, "-s", str(round(165 * rate)), "-p", str(round(20 + 60 * pitch)),
               "-w", str(out), "--stdin"]
    else:
        cmd = ["flite", "-voice", voice.name, "--setf", f"duration_stretch={1 / rate:.3f}",
               "--setf", f"int_f0_target_mean={round(90 + 80 * pitch)}", "-f", "/dev/stdin", "-o", str(out)]
    done = subprocess.run(cmd, input=text, capture_output=True, text=True)
    if done.returncode != 0 or not out.exists():
        raise SateError(f"{cmd[0]} failed on voice {voice.name}: {done.stderr.strip()[-300:]}")
    audio, sr = sf.read(out, dtype="float32", always_2d=True)
    return _trim(_resample(audio.mean(axis=1), sr))


@dataclass
class Talk:
    """A group of consecutive sentences voiced by one voice into one wav."""

    split: str
    number: int
    voice: Voice
    seed: int
    pairs: list[tuple[str, str]]

    @property
    def wav_name(self) -> str:
        return f"ted_{self.number}.wav"

    def fingerprint(self) -> str:
        """Changes whenever anything that shapes the audio changes, so stale talks are redone."""
        blob = json.dumps([self.voice.key, self.seed, self.pairs, SAMPLE_RATE], ensure_ascii=False)
        return hashlib.sha1(blob.encode()).hexdigest()


def plan_talks(splits: dict[str, list[tuple[str, str]]], train_size: int, seed: int) -> list[Talk]:
    """Group each split's voiced sentences into talks of 20-60 sentences, one voice each.

    The train sentences to voice are a seeded shuffle's first `train_size`, and talks are cut
    from the front, so a larger `train_size` keeps every earlier talk (and its audio) as it was.
    """
    pool = voice_pool()
    talks: list[Talk] = []
    number = 1
    for split in SPLITS:
        pairs = list(splits[split])
        rng = random.Random(f"{seed}:{split}")
        if split == "train":
            rng.shuffle(pairs)
            pairs = pairs[:train_size]
        start = 0
        while start < len(pairs):
            size = rng.randint(20, 60)
            voice = rng.choice(pool)
            talks.append(Talk(split, number, voice, rng.randrange(2**31), pairs[start:start + size]))
            number += 1
            start += size
    return talks


def voice_talk(job: tuple[Talk, Path]) -> list[dict]:
    """Voice one talk into its wav (atomically) and return its segments; reuse finished talks."""
    talk, split_dir = job
    wav_path = split_dir / "wav" / talk.wav_name
    sidecar = split_dir / ".synth" / f"{Path(talk.wav_name).stem}.json"
    fingerprint = talk.fingerprint()
    if wav_path.exists() and sidecar.exists():
        saved = json.loads(sidecar.read_text())
        if saved.get("fingerprint") == fingerprint:
            return saved["segments"]
    rng = random.Random(talk.seed)
    pieces = [np.zeros(int(rng.uniform(0.2, 0.6) * SAMPLE_RATE), np.float32)]
    segments = []
    cursor = len(pieces[0])
    with tempfile.TemporaryDirectory() as tmp:
        for en, de in talk.pairs:
            audio = speak(en, talk.voice, rate=rng.uniform(0.8, 1.25), pitch=rng.random(), workdir=Path(tmp))
            gap = np.zeros(int(rng.uniform(0.2, 0.6) * SAMPLE_RATE), np.float32)
            segments.append({"offset": cursor / SAMPLE_RATE, "duration": len(audio) / SAMPLE_RATE,
                             "speaker_id": f"spk.{talk.number}", "wav": talk.wav_name, "en": en, "de": de})
            pieces += [audio, gap]
            cursor += len(audio) + len(gap)
    wav = np.concatenate(pieces)
    peak = float(np.abs(wav).max()) or 1.0
    wav_path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(wav_path, "wb") as f:
        sf.write(f, wav * min(1.0, 0.95 / peak), SAMPLE_RATE, subtype="PCM_16", format="WAV")
    sidecar.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(sidecar, json.dumps({"fingerprint": fingerprint, "segments": segments}, ensure_ascii=False))
    return segments


# ----------------------------------------------------------------------------- corpus

def yaml_line(seg: dict) -> str:
    """One segment exactly as MuST-C v1 writes it."""
    return (f"- {{duration: {seg['duration']:.6f}, offset: {seg['offset']:.6f}, "
            f"speaker_id: {seg['speaker_id']}, wav: {seg['wav']}}}")


def build_corpus(out: Path, pairs: Sequence[tuple[str, str]], train_size: int, seed: int = 0,
                 tgt_lang: str = "de", jobs: int | None = None, progress: bool = True) -> dict:
    """Write the corpus for `pairs` under `out/en-<tgt_lang>/` and return a summary."""
    from tqdm import tqdm

    pool = voice_pool()
    check_engines(pool)
    root = out / f"en-{tgt_lang}"
    splits = split_pairs(pairs)
    talks = plan_talks(splits, train_size, seed)

    mt_dir = root / "mt"
    mt_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(mt_dir / "train.en", "".join(en + "\n" for en, _ in splits["train"]))
    atomic_write_text(mt_dir / f"train.{tgt_lang}", "".join(de + "\n" for _, de in splits["train"]))

    jobs = jobs or os.cpu_count() or 1
    segments: dict[int, list[dict]] = {}
    work = [(talk, root / "data" / talk.split) for talk in talks]
    bar = tqdm(total=sum(len(t.pairs) for t in talks), unit="utt", desc="voicing", disable=not progress)
    with Pool(jobs) as workers:
        for talk, segs in zip(talks, workers.imap(voice_talk, work), strict=True):
            segments[talk.number] = segs
            bar.update(len(segs))
    bar.close()

    summary: dict = {"root": str(root), "mt_train_pairs": len(splits["train"]), "splits": {}}
    for split in SPLITS:
        segs = [s for t in talks if t.split == split for s in segments[t.number]]
        txt = root / "data" / split / "txt"
        txt.mkdir(parents=True, exist_ok=True)
        (root / "data" / split / "wav").mkdir(parents=True, exist_ok=True)
        atomic_write_text(txt / f"{split}.yaml", "".join(yaml_line(s) + "\n" for s in segs))
        atomic_write_text(txt / f"{split}.en", "".join(s["en"] + "\n" for s in segs))
        atomic_write_text(txt / f"{split}.{tgt_lang}", "".join(s["de"] + "\n" for s in segs))
        summary["splits"][split] = {"segments": len(segs), "talks": sum(t.split == split for t in talks),
                                    "hours": round(sum(s["duration"] for s in segs) / 3600, 3),
                                    "text_pairs": len(splits[split])}
    atomic_write_text(root / "synth.json", json.dumps(summary, indent=2))
    return summary


# ----------------------------------------------------------------------------- CLI

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="output root; the corpus goes to OUT/en-de/")
    parser.add_argument("--tgt-lang", default="de", choices=["de"],
                        help="target language (the Ding dictionary is German-English, so only de)")
    parser.add_argument("--train-size", type=int, default=3000,
                        help="number of train sentences to voice; all train text still goes to the MT corpus, "
                             "and dev and tst-COMMON are always voiced whole")
    parser.add_argument("--seed", type=int, default=0, help="seed for sentence choice, voices, rate and pitch")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="parallel voicing processes")
    parser.add_argument("--ding", type=Path, default=None,
                        help=f"the unpacked Ding file ({DING_PATH_IN_PACKAGE}); default: fetched with "
                             f"`apt-get download {DING_PACKAGE}` into $SATE_CACHE (~/.cache/sate)")


def run(args: argparse.Namespace) -> int:
    if args.train_size < 0:
        raise SateError(f"--train-size must be >= 0, got {args.train_size}")
    if args.ding is not None and not args.ding.is_file():
        raise SateError(f"--ding {args.ding}: no such file")
    ding = args.ding or fetch_ding(default_cache_dir())
    pairs = read_ding_pairs(ding)
    print(f"read {len(pairs)} sentence pairs from {ding}")
    summary = build_corpus(args.out, pairs, args.train_size, args.seed, args.tgt_lang, args.jobs)
    print(f"corpus in {summary['root']} (MT text: {summary['mt_train_pairs']} train pairs)")
    for split, s in summary["splits"].items():
        print(f"  {split:<11} {s['segments']:>6} segments  {s['talks']:>4} talks  {s['hours']:>7.3f} h"
              f"  ({s['text_pairs']} text pairs)")
    return 0
