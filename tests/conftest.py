"""Fixtures shared by the whole suite: a small real corpus made by `sate synth`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sate.data import synth

# Per split, how many Ding sentence pairs the shared corpus voices (about 20 in all).
FIXTURE_SIZES = {"train": 12, "dev": 5, "tst-COMMON": 5}


@pytest.fixture(scope="session")
def fixture_sizes() -> dict[str, int]:
    return dict(FIXTURE_SIZES)


@pytest.fixture(scope="session")
def ding_pairs() -> list[tuple[str, str]]:
    """Every sentence pair of the Ding dictionary (fetched once into the cache)."""
    return synth.read_ding_pairs(synth.fetch_ding(synth.default_cache_dir()))


@pytest.fixture(scope="session")
def fixture_pairs(ding_pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The first Ding pairs of each split, as many as FIXTURE_SIZES says."""
    chosen: list[tuple[str, str]] = []
    left = dict(FIXTURE_SIZES)
    for en, de in ding_pairs:
        split = synth.split_of(en)
        if left[split] > 0:
            chosen.append((en, de))
            left[split] -= 1
        if not any(left.values()):
            return chosen
    raise AssertionError(f"the dictionary is too small for the fixture: {left} missing")


@pytest.fixture(scope="session")
def synth_corpus(tmp_path_factory: pytest.TempPathFactory, fixture_pairs: list[tuple[str, str]]) -> Path:
    """A MuST-C layout corpus of about 20 voiced sentences; returns the root holding `en-de/`."""
    out = tmp_path_factory.mktemp("synth")
    synth.build_corpus(out, fixture_pairs, train_size=FIXTURE_SIZES["train"], seed=0, jobs=2, progress=False)
    return out


@pytest.fixture(scope="session")
def prepared_data(tmp_path_factory: pytest.TempPathFactory, synth_corpus: Path) -> Path:
    """The fixture corpus through `sate prep`, `sate features` and `sate vocab` (tiny vocabularies)."""
    from sate.cli import main

    data = tmp_path_factory.mktemp("data")
    for argv in (["prep", "--mustc-root", str(synth_corpus), "--out", str(data)],
                 ["features", "--data", str(data), "--jobs", "1"],
                 ["vocab", "--data", str(data), "--src-size", "48", "--tgt-size", "64"]):
        assert main(argv) == 0, argv
    return data


@pytest.fixture(scope="session")
def sacrebleu_cli() -> Callable[..., str]:
    """sacrebleu_cli(ref, hyp, *extra) -> what the sacrebleu command prints for BLEU, chrF and TER."""
    tool = str(Path(sys.executable).parent / "sacrebleu")

    def run(ref: Path, hyp: Path, *extra: str) -> str:
        return subprocess.run([tool, str(ref), "-i", str(hyp), "-m", "bleu", "chrf", "ter", *extra],
                              check=True, capture_output=True, text=True).stdout

    return run


@pytest.fixture(autouse=True)
def _close_progress_bars() -> Iterator[None]:
    """Close the progress bars a test's training left open (a run stopped by an error), while its output is
    still captured: left open, tqdm redraws them when the interpreter exits, after pytest's summary line."""
    yield
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()
