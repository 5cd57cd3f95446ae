"""Corpus build speed of `sate synth`: utterances per second and seconds per hour of audio.

A fresh corpus is voiced in a temporary directory (nothing reused), with `size` train sentences and
the whole dev and test splits, by `jobs` processes. Voicing (espeak-ng and flite) is all the cost, so
the figure says how long `./run.sh` spends before its first stage, and how it scales with --jobs.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from sate.data import synth


def run(size: int, jobs: int, pairs: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Voice `size` train sentences of `pairs` (default: the whole Ding text) and every dev and test one."""
    if pairs is None:
        pairs = synth.read_ding_pairs(synth.fetch_ding(synth.default_cache_dir()))
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        summary = synth.build_corpus(Path(tmp), pairs, size, seed=0, jobs=jobs, progress=False)
        seconds = time.perf_counter() - start
    utterances = sum(s["segments"] for s in summary["splits"].values())
    hours = sum(s["hours"] for s in summary["splits"].values())
    return {"text": "ding", "train_size": size, "jobs": jobs, "utterances": utterances,
            "audio_hours": round(hours, 3), "seconds": round(seconds, 1),
            "utterances_per_second": round(utterances / seconds, 1),
            "seconds_per_audio_hour": round(seconds / hours, 1), "x_real_time": round(hours * 3600 / seconds, 1)}


def table(result: dict[str, Any]) -> str:
    return (f"Corpus ({result['text']}, {result['train_size']} train sentences + dev + test, {result['jobs']} jobs): "
            f"{result['utterances']} utterances, {result['audio_hours']} h of audio in {result['seconds']} s = "
            f"{result['utterances_per_second']} utt/s, {result['seconds_per_audio_hour']} s per audio hour "
            f"({result['x_real_time']}x real time)")
