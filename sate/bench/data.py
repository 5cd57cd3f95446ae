"""Data pipeline: fbank extraction (x real time per core) and data loading (utterances/s).

Feature extraction runs `sate features` with 1 job and with `jobs` jobs on the first `minutes` of the
benchmarked data dir's train audio, copied to a temporary directory. Without a data dir it writes a
MuST-C-layout corpus of `minutes` of tones instead (fbank cost does not depend on what is said), with
segment lengths drawn like MuST-C's (log-normal, median about 5 s, 0.3-25 s), and runs `sate prep` and
`sate vocab` on it. Times are the command's wall time: reading audio, writing the feature store and CMVN,
and with several jobs the start of the worker processes (spawned, so each imports torch again), which a
small corpus does not amortise; `sate features` splits the work into shards of 500 utterances, so J jobs
need at least 500 x J utterances to all be busy.

The loader is the train loader (our bucketed sampler, global CMVN, SpecAugment) over the data dir's
train split (or the tones) with 0 and 2 worker processes; its rate counts from the first batch on (up to
5000 utterances or 10 epochs), so worker start-up (given apart) does not hide the steady state.
"""

from __future__ import annotations

import contextlib
import io
import random
import shutil
import tempfile
from pathlib import Path
from typing import TypedDict

import numpy as np
import soundfile as sf
import torch

from sate import layout
from sate.bench.measure import stopwatch
from sate.bench.steps import run_sate as sate
from sate.data.manifest import manifest_splits, read_manifest, write_manifest
from sate.data.sampler import BucketBatchSampler
from sate.data.vocab import Vocabulary
from sate.errors import SateError

# A made-up lexicon of 400 words, enough text for 100-piece vocabularies.
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
WORDS = ["".join(random.Random(k).choices(_SYLLABLES, k=1 + k % 3)) for k in range(400)]
LOADER_WORKERS = (0, 2)
LOADER_UTTERANCES = 5000  # enough for a steady state; a MuST-C epoch would take minutes
LOADER_EPOCHS = 10  # a small corpus is read several times over


def mustc_like_durations(rng: np.random.Generator, n: int) -> np.ndarray:
    """Segment durations (s) drawn like MuST-C's: log-normal, median about 5 s, within 0.3-25 s."""
    return np.clip(rng.lognormal(mean=np.log(5.0), sigma=0.6, size=n), 0.3, 25.0)


def write_tone_corpus(root: Path, minutes: float, seed: int = 0) -> None:
    """train (80% of the audio), dev and tst-COMMON: 16 kHz mono talks of about 60 s, 12 segments each."""
    rng = np.random.default_rng(seed)
    words = random.Random(seed)
    for split, share in (("train", 0.8), ("dev", 0.1), ("tst-COMMON", 0.1)):
        base = root / "en-de" / "data" / split
        (base / "wav").mkdir(parents=True)
        (base / "txt").mkdir(parents=True)
        yaml_lines, en, de = [], [], []
        left, talk = minutes * 60 * share, 0
        while left > 0:
            durations = mustc_like_durations(rng, 12)
            offsets = np.cumsum(np.concatenate([[0.5], durations[:-1] + 0.3]))
            seconds = float(offsets[-1] + durations[-1] + 0.5)
            t = np.arange(int(seconds * 16000)) / 16000
            audio = 0.3 * np.sin(2 * np.pi * (300 + 200 * np.sin(t)) * t) + 0.02 * rng.standard_normal(len(t))
            name = f"ted_{split}{talk}"
            sf.write(base / "wav" / f"{name}.wav", audio.astype(np.float32), 16000, subtype="PCM_16")
            for off, dur in zip(offsets, durations, strict=True):
                yaml_lines.append(f"- {{duration: {dur:.6f}, offset: {off:.6f}, speaker_id: spk.{talk}, "
                                  f"wav: {name}.wav}}")
                sentence = " ".join(words.choice(WORDS) for _ in range(max(2, int(dur * 2.5))))
                en.append(sentence.capitalize() + ".")
                de.append(sentence[::-1].capitalize() + ".")
            left -= seconds
            talk += 1
        for ext, lines in (("yaml", yaml_lines), ("en", en), ("de", de)):
            (base / "txt" / f"{split}.{ext}").write_text("\n".join(lines) + "\n", encoding="utf-8")


class FeatureSpeed(TypedDict):
    """`sate features` with `jobs` processes."""

    jobs: int
    seconds: float
    x_real_time: float
    x_real_time_per_core: float


class LoaderSpeed(TypedDict):
    """The train loader with `workers` processes (`loader_speed`)."""

    workers: int
    utts_per_s: float
    first_batch_seconds: float


class DataResult(TypedDict):
    """The data part's figures."""

    audio: str  # where the audio came from
    utterances: int
    audio_minutes: float
    features: list[FeatureSpeed]  # with 1 job, then with --jobs
    loader_data: str
    max_frames: int
    loader_utterances: int
    loader: list[LoaderSpeed]  # per LOADER_WORKERS


def quiet(argv: list[object]) -> float:
    """Run a sate command without its output; returns wall seconds."""
    lap = stopwatch()
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = sate([str(a) for a in argv])
    if rc != 0:
        raise SateError(f"sate {argv[0]} failed: {err.getvalue().strip()}")
    return lap()


def loader_speed(data: Path, workers: int, max_frames: int) -> LoaderSpeed:
    """Steady-state utterances/s of the train loader (CMVN, SpecAugment) from its first batch on, over up to
    LOADER_UTTERANCES utterances or LOADER_EPOCHS epochs, and the seconds until that first batch (start-up)."""
    from torch.utils.data import DataLoader  # heavy: torch

    from sate.data.dataset import SpeechDataset, collate  # heavy: torch
    from sate.data.specaug import SpecAugment  # heavy: torch

    ds = SpeechDataset.from_data_dir(data, "train", Vocabulary.load(data, "src"), Vocabulary.load(data, "tgt"),
                                     cmvn=data / layout.CMVN)
    sampler = BucketBatchSampler(ds.lengths, max_frames=max_frames, seed=0)
    loader = DataLoader(ds, batch_sampler=sampler, collate_fn=collate, num_workers=workers,
                        persistent_workers=workers > 0)
    augment = SpecAugment()
    lap = stopwatch()
    first, count = 0.0, 0
    for epoch in range(LOADER_EPOCHS):
        sampler.set_epoch(epoch)
        for batch in loader:
            augment(batch["feats"], batch["feats_lengths"])
            if not first:
                first = lap()
            else:
                count += len(batch["ids"])
            if count >= LOADER_UTTERANCES:
                break
        if count >= LOADER_UTTERANCES:
            break
    return LoaderSpeed(workers=workers, utts_per_s=round(count / (lap() - first), 1),
                       first_batch_seconds=round(first, 3))


def first_minutes(data: Path, minutes: float, out: Path) -> str:
    """Copy the first `minutes` of audio of DATA's train manifest into `out` (features get recomputed there)."""
    rows, total = [], 0.0
    for row in read_manifest(data / "train.jsonl"):
        if total >= minutes * 60:
            break
        rows.append(row)
        total += float(row["duration"])
    out.mkdir(parents=True)
    write_manifest(out / "train.jsonl", rows)
    return f"the first {len(rows)} train utterances of {data}"


def run(data: Path | None, minutes: float, jobs: int, max_frames: int) -> DataResult:
    """Feature extraction on `minutes` of DATA's train audio (or of generated tones), then its loader."""
    threads = torch.get_num_threads()  # `sate features` and the loader run torch on 1 thread
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "data"
            if data is None:
                write_tone_corpus(Path(tmp) / "mustc", minutes)
                quiet(["prep", "--mustc-root", Path(tmp) / "mustc", "--out", work])
                source = "generated tones in talks of about 60 s, MuST-C-like segment lengths"
            else:
                source = first_minutes(data, minutes, work)
            rows = [r for split in manifest_splits(work) for r in read_manifest(work / f"{split}.jsonl")]
            audio = sum(float(r["duration"]) for r in rows)
            features = []
            for n in sorted({1, jobs}):
                shutil.rmtree(work / layout.FBANK_DIR, ignore_errors=True)
                seconds = quiet(["features", "--data", work, "--jobs", n])
                features.append(FeatureSpeed(jobs=n, seconds=round(seconds, 2), x_real_time=round(audio / seconds, 1),
                                             x_real_time_per_core=round(audio / seconds / n, 1)))
            if data is None:
                quiet(["vocab", "--data", work, "--src-size", "100", "--tgt-size", "100"])
            torch.set_num_threads(1)
            loaded = data or work
            return DataResult(audio=source, utterances=len(rows), audio_minutes=round(audio / 60, 1),
                              features=features, loader_data=str(loaded) if data else "the generated tones",
                              max_frames=max_frames, loader_utterances=LOADER_UTTERANCES,
                              loader=[loader_speed(loaded, w, max_frames) for w in LOADER_WORKERS])
    finally:
        torch.set_num_threads(threads)


def table(result: DataResult) -> str:
    lines = [f"Data: {result['audio']} ({result['utterances']} utterances, {result['audio_minutes']} min)",
             "fbank extraction (sate features, wall time): " + "; ".join(
                 f"{f['jobs']} job(s) {f['seconds']:.1f} s = {f['x_real_time']:g}x real time "
                 f"({f['x_real_time_per_core']:g}x per core)" for f in result["features"]),
             f"train loader of {result['loader_data']} (CMVN + SpecAugment, cap {result['max_frames']} frames, "
             f"from the first batch on, up to {result['loader_utterances']} utterances): "
             + "; ".join(f"{x['workers']} workers {x['utts_per_s']:g} utt/s (first batch after "
                         f"{x['first_batch_seconds']:g} s)" for x in result["loader"])]
    return "\n".join(lines)
