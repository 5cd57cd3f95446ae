"""Data pipeline speed: fbank extraction (x real time per core), loader throughput, padding waste.

Usage: python bench/data_bench.py [--minutes M] [--jobs J] [--mustc-root ROOT]
Without --mustc-root it writes a MuST-C-layout corpus of M minutes of tones in a temporary directory
(fbank cost does not depend on what is said), with segment lengths drawn like MuST-C's (log-normal,
median about 5 s, 0.3-25 s). Then it runs prep, features with 1 job and with J jobs, vocab, and one
epoch of the train loader, and prints the figures as JSON. The padding comparison also runs on
230k lengths drawn from the same distribution (the size of MuST-C train).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import random
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from sate.cli import main as sate
from sate.data.mustc import read_manifest
from sate.data.sampler import BucketBatchSampler, pack_batches, padding_ratio

# A made-up lexicon of 400 words, enough text for 100-piece vocabularies.
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
WORDS = ["".join(random.Random(k).choices(_SYLLABLES, k=1 + k % 3)) for k in range(400)]


def mustc_like_durations(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.clip(rng.lognormal(mean=np.log(5.0), sigma=0.6, size=n), 0.3, 25.0)


def write_tone_corpus(root: Path, minutes: float, seed: int = 0) -> None:
    """train (most of the audio), dev and tst-COMMON, 16 kHz mono talks of about 60 s."""
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


def quiet(argv: list[object]) -> float:
    """Run a sate command without its output; returns wall seconds."""
    start = time.perf_counter()
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = sate([str(a) for a in argv])
    if rc != 0:
        raise SystemExit(err.getvalue().strip().splitlines()[-1])
    return time.perf_counter() - start


def loader_speed(data: Path, workers: int, max_frames: int) -> tuple[float, float]:
    """(utterances/s, padding ratio) of one epoch of train batches with CMVN and SpecAugment."""
    import torch
    from torch.utils.data import DataLoader

    from sate.data.dataset import SpeechDataset, collate
    from sate.data.specaug import SpecAugment
    from sate.data.vocab import Vocabulary

    ds = SpeechDataset.from_data_dir(data, "train", Vocabulary.load(data, "src"), Vocabulary.load(data, "tgt"),
                                     cmvn=data / "cmvn.json")
    sampler = BucketBatchSampler(ds.lengths, max_frames=max_frames, seed=0)
    loader = DataLoader(ds, batch_sampler=sampler, collate_fn=collate, num_workers=workers)
    augment = SpecAugment()
    torch.set_num_threads(1)
    start = time.perf_counter()
    count = 0
    for batch in loader:
        augment(batch["feats"], batch["feats_lengths"])
        count += len(batch["ids"])
    return count / (time.perf_counter() - start), sampler.padding_ratio()


def padding_comparison(lengths: np.ndarray, max_frames: int) -> dict[str, float]:
    bucketed = BucketBatchSampler(lengths, max_frames=max_frames, seed=0).padding_ratio()
    order = np.random.default_rng(0).permutation(len(lengths))
    return {"bucketed": round(bucketed, 4), "random": round(padding_ratio(pack_batches(order, lengths, max_frames),
                                                                            lengths), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="audio to generate (without --mustc-root)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--mustc-root", type=Path, default=None, help="benchmark this corpus instead")
    parser.add_argument("--max-frames", type=int, default=20000, help="batch cap in frames")
    args = parser.parse_args()
    result: dict = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"}
    with tempfile.TemporaryDirectory() as tmp:
        root = args.mustc_root or Path(tmp) / "mustc"
        if args.mustc_root is None:
            write_tone_corpus(root, args.minutes)
        data = Path(tmp) / "data"
        quiet(["prep", "--mustc-root", root, "--out", data])
        rows = [r for split in ("train", "dev", "tst-COMMON") for r in read_manifest(data / f"{split}.jsonl")]
        audio_s = sum(r["duration"] for r in rows)
        result["utterances"], result["audio_minutes"] = len(rows), round(audio_s / 60, 1)
        for jobs in sorted({1, args.jobs}):
            shutil.rmtree(data / "fbank", ignore_errors=True)
            seconds = quiet(["features", "--data", data, "--jobs", jobs])
            result[f"fbank_jobs{jobs}"] = {"seconds": round(seconds, 2), "x_real_time": round(audio_s / seconds, 1),
                                           "x_real_time_per_core": round(audio_s / seconds / jobs, 1)}
        quiet(["vocab", "--data", data, "--src-size", "100", "--tgt-size", "100"])
        for workers in (0, 2):
            speed, _ = loader_speed(data, workers, args.max_frames)
            result[f"loader_utterances_per_s_workers{workers}"] = round(speed, 1)
        train_lengths = np.array([r["n_frames"] for r in read_manifest(data / "train.jsonl")])
        result["padding_ratio_this_corpus_train"] = padding_comparison(train_lengths, args.max_frames)
    mustc_like = np.round(mustc_like_durations(np.random.default_rng(1), 229_700) * 100).astype(int)
    result["padding_ratio_mustc_like_229k"] = padding_comparison(mustc_like, args.max_frames)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
