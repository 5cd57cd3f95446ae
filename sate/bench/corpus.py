"""Corpus build speed of `sate synth`: utterances per second and seconds per hour of audio.

A fresh phrasebook corpus, the demo's (40,000 text pairs, 300 dev and 300 test sentences, the test
sentences voiced again in the held-out voices), is built in a temporary directory (nothing reused),
with `size` train sentences voiced, by `jobs` processes. Voicing (espeak-ng and flite) is nearly all
the cost, so the figure says how long `./run.sh` spends before its first stage.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import TypedDict

from sate.synth import corpus as synth


class CorpusSizes(TypedDict):
    """Sentences of the phrasebook corpus besides the voiced train ones (`build_phrasebook_corpus`)."""

    text_size: int
    dev_size: int
    test_size: int


class CorpusResult(CorpusSizes):
    """The corpus part's figures."""

    text: str  # which corpus
    train_size: int
    jobs: int
    utterances: int
    audio_hours: float
    seconds: float
    utterances_per_second: float
    seconds_per_audio_hour: float
    x_real_time: float


DEMO_SIZES = CorpusSizes(text_size=40000, dev_size=300, test_size=300)  # recipes/synth/run.sh's defaults


def run(size: int, jobs: int, sizes: CorpusSizes | None = None) -> CorpusResult:
    """Build the phrasebook corpus with `size` voiced train sentences (other sizes: the demo's, or `sizes`)."""
    sizes = sizes or DEMO_SIZES
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        summary = synth.build_phrasebook_corpus(Path(tmp), train_size=size, seed=0, jobs=jobs, progress=False,
                                                **sizes)
        seconds = time.perf_counter() - start
    utterances = sum(s["segments"] for s in summary["splits"].values())
    hours = sum(s["hours"] for s in summary["splits"].values())
    return CorpusResult(text="phrasebook", **sizes, train_size=size, jobs=jobs, utterances=utterances,
                        audio_hours=round(hours, 3), seconds=round(seconds, 1),
                        utterances_per_second=round(utterances / seconds, 1),
                        seconds_per_audio_hour=round(seconds / hours, 1), x_real_time=round(hours * 3600 / seconds, 1))


def table(result: CorpusResult) -> str:
    return (f"Corpus ({result['text']}, {result['train_size']} train sentences voiced + dev + 2 x test, "
            f"{result['jobs']} jobs): "
            f"{result['utterances']} utterances, {result['audio_hours']} h of audio in {result['seconds']} s = "
            f"{result['utterances_per_second']} utt/s, {result['seconds_per_audio_hour']} s per audio hour "
            f"({result['x_real_time']}x real time)")
