"""Segmentation scores on hand-made segments: boundaries within the tolerance, speech lost, utterances cut."""

from __future__ import annotations

import pytest

from sate.scoring.segments import matched, score_segments

REF = [(1.0, 3.0), (4.0, 6.0), (7.0, 9.0)]


def test_a_perfect_segmentation_with_padding_scores_one() -> None:
    padded = [(a - 0.1, b + 0.1) for a, b in REF]
    assert score_segments(padded, REF, REF) == {"segments": 3, "reference_segments": 3, "precision": 1.0,
                                                "recall": 1.0, "f1": 1.0, "speech_lost": 0.0,
                                                "utterances_cut": 0, "utterances": 3}


def test_merged_split_and_late_segments() -> None:
    # The first two merged (two boundaries missed), the third cut in its middle (two extra, one utterance cut),
    # and its end 0.4 s late (beyond the 0.3 s tolerance).
    hyp = [(0.9, 6.1), (6.9, 8.0), (8.0, 9.4)]
    s = score_segments(hyp, REF, REF)
    assert s["precision"] == pytest.approx(3 / 6) and s["recall"] == pytest.approx(3 / 6)
    assert s["utterances_cut"] == 1 and s["speech_lost"] == 0.0


def test_speech_lost_counts_uncovered_reference_time() -> None:
    s = score_segments([(1.5, 3.0), (4.0, 6.0)], REF, REF)  # 0.5 s of the first and all of the third missed
    assert s["speech_lost"] == pytest.approx(2.5 / 6)
    assert score_segments([], REF, REF)["f1"] == 0.0 and score_segments([], [], [])["speech_lost"] == 0.0


def test_matching_is_one_to_one_and_maximal() -> None:
    assert matched([1.0, 1.1], [1.05]) == 1  # two hypotheses cannot share one reference
    assert matched([0.8, 1.3], [1.0, 1.5]) == 2  # greedy in time order finds both pairs
    assert matched([1.0], [1.31]) == 0
