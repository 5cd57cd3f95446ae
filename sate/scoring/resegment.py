"""Re-segmenting a long hypothesis to the reference segments, by minimum edit distance (what mwerSegmenter does).

A talk translated as one stream is cut where the system's own segmenter heard pauses, not where the reference
sentences end, so its output cannot be scored line by line against them. Matusov et al. (2005) align the
concatenated hypothesis words to the concatenated reference words with a Levenshtein alignment and cut the
hypothesis where the reference segments end. Here: words are whitespace tokens (a Chinese or Japanese character is
a word of its own, `units`) compared lowercased, with the punctuation at their ends stripped ("Hood." matches
"hood"); a substitution, insertion or deletion costs 1. A hypothesis word aligned to a reference word goes to that
word's segment; an inserted one to the segment of the reference word before it (the first segment at the start), so
a segment's words stay contiguous and in order.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

import numpy as np

from sate.data.text import HAN_KANA

PUNCTUATION = string.punctuation + "«»„“”‚‘’…–—¿¡"
# Chinese and Japanese (Han, kana) are written without spaces: a whitespace token of theirs is a clause or a whole
# segment's output, so aligning whitespace tokens gave a VAD segment holding two sentences whole to one row and
# nothing to the other (twenty-seventh hostile pass). Each such character, with the punctuation after it, is a unit
# of its own; other text stays whole.
_UNIT = re.compile(f"[{HAN_KANA}][^\\w\\s{HAN_KANA}]*|[^{HAN_KANA}]+")


def units(text: str) -> tuple[list[str], list[bool]]:
    """The units `resegment` aligns (whitespace tokens, a Chinese or Japanese character each), and for each whether
    it continues the token before it (no space between them when joined again)."""
    out: list[str] = []
    glued: list[bool] = []
    for token in text.split():
        parts = _UNIT.findall(token)
        out += parts
        glued += [False] + [True] * (len(parts) - 1)
    return out, glued


def join_units(parts: Sequence[str], glued: Sequence[bool], indices: Sequence[int]) -> str:
    """The text of the units at `indices` (consecutive), spaced as they were written."""
    text = ""
    for k, i in enumerate(indices):
        text += ("" if k == 0 or glued[i] and indices[k - 1] == i - 1 else " ") + parts[i]
    return text


def _key(word: str) -> str:
    return word.strip(PUNCTUATION).lower()


def align_words(hypothesis: Sequence[str], reference: Sequence[str]) -> list[int]:
    """Where each hypothesis word lands in a minimum edit distance alignment: the index of the reference word it is
    aligned to (matched or substituted), or for a word without one, the index of the reference word before it (-1
    at the start). Non-decreasing.

    The distance table D (hypothesis prefix x reference prefix) is built a row at a time: from the row above, a
    hypothesis word matched, substituted or left unmatched (T), then reference words left unmatched along the row
    as a running minimum, D[i, j] = min over k <= j of T[k] + j - k."""
    n, m = len(hypothesis), len(reference)
    keys = {w: k for k, w in enumerate({_key(w) for w in [*hypothesis, *reference]})}
    hyp = np.array([keys[_key(w)] for w in hypothesis], dtype=np.int64)
    ref = np.array([keys[_key(w)] for w in reference], dtype=np.int64)
    table = np.zeros((n + 1, m + 1), dtype=np.int32)
    table[0] = np.arange(m + 1)
    cols = np.arange(m + 1)
    for i in range(1, n + 1):
        best = np.empty(m + 1, dtype=np.int32)
        best[0] = i
        best[1:] = np.minimum(table[i - 1, 1:] + 1, table[i - 1, :-1] + (ref != hyp[i - 1]))
        table[i] = np.minimum.accumulate(best - cols) + cols
    # Back from the end: prefer the diagonal, then an unmatched hypothesis word, then an unmatched reference word.
    place = [0] * n
    i, j = n, m
    while i > 0:
        if j > 0 and table[i, j] == table[i - 1, j - 1] + (ref[j - 1] != hyp[i - 1]):
            i, j = i - 1, j - 1
            place[i] = j
        elif table[i, j] == table[i - 1, j] + 1:
            i -= 1
            place[i] = j - 1 if j > 0 else -1
        else:
            j -= 1
    return place


def resegment(hypothesis: Sequence[str], references: Sequence[str]) -> list[list[int]]:
    """The indices of the hypothesis units (`units` of its text) that fall in each reference segment (texts)."""
    split = [units(ref)[0] for ref in references]
    words = [w for ref in split for w in ref]
    segment_of = [k for k, ref in enumerate(split) for _ in ref]
    out: list[list[int]] = [[] for _ in references]
    if not references:
        return out
    for index, position in enumerate(align_words(hypothesis, words)):
        out[segment_of[position] if position >= 0 else 0].append(index)
    return out
