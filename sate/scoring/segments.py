"""How good a segmentation is, against reference speech segments: boundaries, speech lost, utterances cut.

A boundary is a segment's start or its end. A hypothesis start is correct when it lies within
``TOLERANCE`` seconds of a reference start (likewise ends), each reference boundary matched at most
once; precision, recall and F1 count matched boundaries. Padding (0.1 s of silence kept around a
segment) is well inside the tolerance. Speech lost is the share of reference speech time that no
segment covers: words the model never hears. An utterance is cut when a hypothesis boundary falls
inside it, more than the tolerance from both of its ends: the model hears half a sentence twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

TOLERANCE = 0.3  # seconds

Spans = Sequence[tuple[float, float]]


def matched(hyp: Sequence[float], ref: Sequence[float], tolerance: float = TOLERANCE) -> int:
    """Largest one-to-one matching of sorted times within ``tolerance`` (greedy in time order is optimal on a line)."""
    i = j = count = 0
    while i < len(hyp) and j < len(ref):
        if abs(hyp[i] - ref[j]) <= tolerance:
            i, j, count = i + 1, j + 1, count + 1
        elif hyp[i] < ref[j]:
            i += 1
        else:
            j += 1
    return count


def covered(spans: Spans, start: float, end: float) -> float:
    """Seconds of [start, end] that the (sorted, disjoint) spans cover."""
    return sum(max(0.0, min(b, end) - max(a, start)) for a, b in spans if a < end and b > start)


class SegmentScores(TypedDict):
    """How well segments found the reference's boundaries and kept its speech (`score_segments`)."""

    segments: int
    reference_segments: int
    precision: float  # of the boundaries
    recall: float
    f1: float
    speech_lost: float  # share of the utterances' speech outside every segment
    utterances_cut: int  # utterances with a boundary inside
    utterances: int


def score_segments(hyp: Spans, ref: Spans, utterances: Spans, tolerance: float = TOLERANCE) -> SegmentScores:
    """Boundary precision/recall/F1 of ``hyp`` against ``ref`` segments, speech lost, ``utterances`` cut."""
    hyp, ref = sorted(hyp), sorted(ref)
    hits = (matched([a for a, _ in hyp], [a for a, _ in ref], tolerance)
            + matched([b for _, b in hyp], [b for _, b in ref], tolerance))
    precision = hits / (2 * len(hyp)) if hyp else 0.0
    recall = hits / (2 * len(ref)) if ref else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    speech = sum(b - a for a, b in utterances)
    lost = speech - sum(covered(hyp, a, b) for a, b in utterances)
    bounds = sorted(t for span in hyp for t in span)
    cut = sum(1 for a, b in utterances if any(a + tolerance < t < b - tolerance for t in bounds))
    return SegmentScores(segments=len(hyp), reference_segments=len(ref), precision=precision, recall=recall, f1=f1,
                         speech_lost=lost / speech if speech else 0.0, utterances_cut=cut, utterances=len(utterances))
