"""The phrasebook corpus as text: a seeded stream of distinct sentence pairs, split by the corpus split rule.

Sizes are counted in distinct English sentences per split. Every pair goes to the split its English
hashes to (`split_of`, the rule of the Ding corpus), so no English sentence is in two splits; a train pair
whose German is also a dev or tst-COMMON German is dropped (and replaced by a later one), so no German
sentence of dev or test is seen in training either.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator

from sate.errors import SateError
from sate.synth.phrasebook.templates import TEMPLATES
from sate.synth.splits import SPLITS, split_of

DEFAULT_TEXT_SIZE = 40000  # train text pairs (MT data); only --train-size of them are voiced
DEFAULT_DEV_SIZE = 300
DEFAULT_TEST_SIZE = 300
MAX_FRUITLESS_DRAWS = 100_000  # this many draws in a row without a new pair: the templates are exhausted
# The most a split may ask for. Every sentence drawn is held (to keep them distinct) until the splits are full, and
# dev and tst-COMMON each take 4% of the draws: `--text-size 10**20` drew until memory ran out, hours later.
MAX_SIZES = {"train": 1_000_000, "dev": 50_000, "tst-COMMON": 50_000}
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def stream(seed: int) -> Iterator[tuple[str, str]]:
    """An endless, seeded stream of (English, German) pairs: a random template, random slots, a phrasing."""
    rng = random.Random(f"phrasebook:{seed}")
    while True:
        yield rng.choice(TEMPLATES).generate(rng)


def phrasebook_splits(text_size: int = DEFAULT_TEXT_SIZE, dev_size: int = DEFAULT_DEV_SIZE,
                      test_size: int = DEFAULT_TEST_SIZE, seed: int = 0) -> dict[str, list[tuple[str, str]]]:
    """`text_size` train, `dev_size` dev and `test_size` tst-COMMON pairs, in stream order.

    Dev and test depend only on the seed and their own sizes, not on `text_size`.
    """
    wanted = {"train": text_size, "dev": dev_size, "tst-COMMON": test_size}
    splits: dict[str, dict[str, str]] = {name: {} for name in SPLITS}  # English -> German, in order
    train_by_german: dict[str, list[str]] = {}
    held_out_german: set[str] = set()
    seen: set[str] = set()
    fruitless = 0
    for en, de in stream(seed):
        if all(len(splits[name]) >= wanted[name] for name in SPLITS):
            break
        fruitless += 1
        if fruitless > MAX_FRUITLESS_DRAWS:
            short = ", ".join(f"{name} {len(splits[name])} of {wanted[name]}" for name in SPLITS)
            raise SateError(f"the phrasebook has no more distinct sentences ({short}); lower --text-size, "
                            f"--dev-size or --test-size")
        if en in seen:
            continue
        seen.add(en)
        split = split_of(en)
        if len(splits[split]) >= wanted[split]:
            continue
        fruitless = 0
        if split == "train":
            if de not in held_out_german:
                splits["train"][en] = de
                train_by_german.setdefault(de, []).append(en)
            continue
        splits[split][en] = de
        if de not in held_out_german:
            held_out_german.add(de)
            for english in train_by_german.pop(de, ()):
                del splits["train"][english]
    return {name: list(pairs.items()) for name, pairs in splits.items()}


def english_word_types(pairs: Iterable[tuple[str, str]]) -> set[str]:
    """Lower-cased English word types (apostrophes kept inside words: "o'clock", "i'd")."""
    return {word for en, _ in pairs for word in _WORD.findall(en.lower())}
