"""Corpus build speed of `sate synth`: utterances per second and seconds per hour of audio.

Usage: python bench/synth_bench.py [--train-size N] [--jobs J]
Builds a fresh corpus in a temporary directory (nothing reused) and prints the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from sate.data import synth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-size", type=int, default=3000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    args = parser.parse_args()
    pairs = synth.read_ding_pairs(synth.fetch_ding(synth.default_cache_dir()))
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        summary = synth.build_corpus(Path(tmp), pairs, args.train_size, seed=0, jobs=args.jobs, progress=False)
        seconds = time.perf_counter() - start
    utterances = sum(s["segments"] for s in summary["splits"].values())
    hours = sum(s["hours"] for s in summary["splits"].values())
    result = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
              "jobs": args.jobs, "utterances": utterances, "audio_hours": round(hours, 3),
              "seconds": round(seconds, 1), "utterances_per_second": round(utterances / seconds, 1),
              "seconds_per_audio_hour": round(seconds / hours, 1), "x_real_time": round(hours * 3600 / seconds, 1)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
