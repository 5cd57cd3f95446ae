"""The split rule shared by the offline corpora (Ding and phrasebook): a stable hash of the English text.

A sentence's split depends on its English side only, so no English sentence can be in two splits,
whatever the corpus size or order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

SPLITS = ("train", "dev", "tst-COMMON")


def split_of(english: str) -> str:
    """The fixed split of a sentence: a stable hash of its normalised English side (4% test, 4% dev)."""
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
