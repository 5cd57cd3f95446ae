"""The reserved tokens and the padding id that vocabularies, datasets, models and decoding all agree on.

Our token lists put ``<blank>`` at 0 and ``<unk>`` at 1, then the pieces, then ``<sos/eos>`` last
(`sate.data.vocab`); a Marian vocabulary keeps its own order (`sate.data.marian_vocab`). Id tensors are padded
with ``IGNORE_ID``, which no loss counts.
"""

from __future__ import annotations

from collections.abc import Iterable

BLANK = "<blank>"
UNK = "<unk>"
SOS_EOS = "<sos/eos>"
IGNORE_ID = -1  # padding value of id tensors (`src`, `tgt`); those positions carry no loss


def token_ids(ids: Iterable[int], size: int) -> list[int]:
    """`ids` as ints, each checked to be a token of a vocabulary of `size` (a ValueError names the first that is
    not)."""
    out = [int(i) for i in ids]
    bad = next((i for i in out if not 0 <= i < size), None)
    if bad is not None:
        raise ValueError(f"token id {bad} out of range for a vocabulary of {size}")
    return out
