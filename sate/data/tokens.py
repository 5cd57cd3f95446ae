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
    not). Text is no ids (`decode("abc")` was int()'s "invalid literal"), and a float of no whole value is no id
    (`decode([4.5])` read token 4 without a word): 25th hostile pass."""
    if isinstance(ids, str | bytes):
        raise ValueError(f"token ids: expected a sequence of integers, got {type(ids).__name__} (text is encoded, "
                         "not decoded)")
    out = []
    for i in ids:
        try:
            value = i.item() if callable(getattr(i, "item", None)) else i  # a NumPy or torch scalar as its number
        except (RuntimeError, ValueError):  # a row of a batch (2-D ids): torch's or NumPy's "only one element"
            raise ValueError("token ids: expected one sequence of integers, got a sequence of sequences (a batch? "
                             "decode each row)") from None
        if isinstance(value, float) and value.is_integer():  # a float of a whole value reads, as int() read it
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):  # 4.5 (a float tensor's too) read as 4; a bool
            raise ValueError(f"token id {value!r}: not a whole number")
        out.append(value)
    bad = next((i for i in out if not 0 <= i < size), None)
    if bad is not None:
        raise ValueError(f"token id {bad} out of range for a vocabulary of {size}")
    return out


def check_texts(texts: object, many: bool = False) -> None:
    """Refuse what is no text before SentencePiece reads it: None or a list for one text was its own "TypeError: not
    a string" or a list concatenation error (25th hostile pass, from docs/data.md's Vocabulary snippet)."""
    if not many:
        if not isinstance(texts, str):
            raise ValueError(f"encode: expected a str, got {type(texts).__name__}")
        return
    if not isinstance(texts, list | tuple):
        raise ValueError(f"encode_many: expected a list of str, got {type(texts).__name__}")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"encode_many: texts[{index}] is a {type(text).__name__}, not a str")
