"""AL and LAAL on cases worked out by hand from the definitions. Given the same delays, SimulEval 1.1.4's ALScorer
and LAALScorer (its last release; its main branch computes them alike) give the same numbers on every case here but
an empty reference's AL (SimulEval counts `"".split(" ")`, one word: 0.0 where sate paces it by the hypothesis,
0.75; `test_an_empty_reference_paces_al_by_the_hypothesis`), the computation-aware ones and words shown after the
source ended included: checked by running them (`pip install
simuleval==1.1.4`, not a dependency), again in the review of the twenty-fifth hostile pass. Both count the first
word shown at or after the end of the source (tau) and no later one. SimulEval 1.0's own test of AL summed only
words with d <= |X|, which differs where a word comes strictly after the end: see
`test_the_first_word_after_the_source_end_counts`. What sate's computation-aware figures do not share with
SimulEval's is the delays fed in (the clock of a live stream against compute time summed: docs/inference.md)."""

from __future__ import annotations

import json

import pytest

from sate.errors import SateError
from sate.scoring.latency import Latency, al, corpus_latency, laal, latency_line, sentence_latency

# (delays, source seconds, reference words, AL, LAAL)
CASES = [
    # one word per second of a 3 s source, reference of 3 words: 1 s behind the ideal at every word
    ([1.0, 2.0, 3.0], 3.0, 3, 1.0, 1.0),
    # the same 3 words against a 2-word reference: AL's ideal step is 1.5 s, so (1 + 0.5 + 0) / 3; LAAL keeps 1 s
    ([1.0, 2.0, 3.0], 3.0, 2, 0.5, 1.0),
    # tau stops at the first word after the end of the source: (0.5 + (4 - 1)) / 2, the third word not counted
    ([0.5, 4.0, 4.0], 4.0, 4, 1.75, 1.75),
    # everything after the source ended: the first delay
    ([5.0, 5.0], 4.0, 2, 5.0, 5.0),
    # six words against a 4-word reference of a 2.5 s source. AL: step 0.625, tau 5:
    # (0.3 + (0.3 - 0.625) + (1.2 - 1.25) + (2.0 - 1.875) + (2.5 - 2.5)) / 5 = 0.01;
    # LAAL: step 2.5 / 6, (0.3 - 0 + 0.3 - 5/12 + 1.2 - 10/12 + 2.0 - 15/12 + 2.5 - 20/12) / 5 = 0.42667
    ([0.3, 0.3, 1.2, 2.0, 2.5, 2.5], 2.5, 4, 0.01, 0.4266667),
    # the source never fully read when the last word came: every word counts, (1 + (1 - 0.6)) / 2
    ([1.0, 1.0], 3.0, 5, 0.7, 0.7),
    # four words at once at the start of a 4 s source, as a system that guesses emits them: ahead of the ideal
    # pace, so below 0 (SimulEval's value too): (0 - 0 - 1 - 2 - 3) / 4
    ([0.0, 0.0, 0.0, 0.0], 4.0, 4, -1.5, -1.5),
]


@pytest.mark.parametrize(("delays", "source", "ref", "expect_al", "expect_laal"), CASES)
def test_al_and_laal_fixed_cases(delays: list[float], source: float, ref: int, expect_al: float,
                                 expect_laal: float) -> None:
    assert al(delays, source, ref) == pytest.approx(expect_al, abs=1e-6)
    assert laal(delays, source, ref) == pytest.approx(expect_laal, abs=1e-6)


def test_computation_aware_scores_use_the_wall_clock_delays() -> None:
    # Each word 0.25 s later per word so far: (1.25 + 1.5 + 1.75 - 0 - 1 - 2) / 3 = 0.5 more than the ideal 1.0.
    scores = sentence_latency([1.0, 2.0, 3.0], [1.25, 2.5, 3.75], 3.0, 3)
    assert scores == Latency(al=1.0, laal=1.0, al_ca=pytest.approx(1.5), laal_ca=pytest.approx(1.5))
    assert sentence_latency([], [], 3.0, 3) is None  # no output word: no latency
    with pytest.raises(SateError, match="2 delays but 1"):
        sentence_latency([1.0, 2.0], [1.0], 3.0, 3)


def test_the_first_word_after_the_source_end_counts() -> None:
    """A word shown after the source ended (by a slow decoder, or a talk's word shown after its row ended) is tau's
    and counts (the first at or after the end); the ones after it do not, as in SimulEval 1.1.4's scorers (they add
    d, then stop at d >= |X|).
    Leaving late words out, as SimulEval 1.0's test of AL did (`if d <= src_len`), gives other figures, shown here
    so that the sentence in docs/inference.md is checked. A 3 s source, a 3-word reference:"""
    delays = [1.0, 2.0, 3.5, 4.0]
    # AL: (1 + (2 - 1) + (3.5 - 2)) / 3; LAAL over max(4, 3) words, a step of 0.75: (1 + 1.25 + 2) / 3
    assert al(delays, 3.0, 3) == pytest.approx(7 / 6)
    assert laal(delays, 3.0, 3) == pytest.approx(17 / 12)
    # what leaving the late word out gives: (1 + 1) / 2, and (1 + 1.25) / 2 at LAAL's step of 4 words shown
    assert al(delays[:2], 3.0, 3) == pytest.approx(1.0) and laal(delays[:2], 3.0, 4) == pytest.approx(1.125)
    # computation-aware: the second word only came at 3.5 s on the wall clock, (1 + 2.5) / 2, not 1.0
    scores = sentence_latency([1.0, 2.0, 2.5], [1.0, 3.5, 4.0], 3.0, 3)
    assert scores is not None and scores.al_ca == pytest.approx(1.75) and scores.al == pytest.approx(5 / 6)


def test_an_empty_reference_paces_al_by_the_hypothesis() -> None:
    """A row whose reference is empty (kept, flagged, in a test split by `sate prep`) ended `sate evaluate --stream`
    after the whole split was decoded: "average lagging needs a positive ... target length, got 2.779 and 0". AL has
    no reference pace there and takes LAAL's, the hypothesis's: (1 + (2 - 1.5)) / 2 = 0.75 over a 3 s source."""
    scores = sentence_latency([1.0, 2.0], [1.5, 2.5], 3.0, 0)
    assert scores == Latency(al=pytest.approx(0.75), laal=pytest.approx(0.75), al_ca=pytest.approx(1.25),
                             laal_ca=pytest.approx(1.25))


def test_corpus_averages_leave_out_silent_sentences() -> None:
    scores = corpus_latency([Latency(1.0, 2.0, 3.0, 4.0), None, Latency(3.0, 4.0, 5.0, 6.0)])
    assert scores == {"sentences": 2, "al": 2.0, "laal": 3.0, "al_ca": 4.0, "laal_ca": 5.0}
    assert "LAAL 3.00 s" in latency_line(scores)
    # 33rd hostile pass: NaN, which Python's json writes into results.json, is no JSON (JavaScript's JSON.parse
    # refused the file); null is
    silent = corpus_latency([None])
    assert silent == {"sentences": 0, "al": None, "laal": None, "al_ca": None, "laal_ca": None}
    assert json.loads(json.dumps(silent, allow_nan=False)) == silent
    # no sentence showed a word: said, not "AL nan s" (twenty-fifth hostile pass)
    assert latency_line(corpus_latency([None])) == "latency: no sentence showed a word, so there is none to measure"


def test_bad_lengths_are_one_line() -> None:
    with pytest.raises(SateError, match="positive source duration"):
        al([1.0], 0.0, 3)
    with pytest.raises(SateError, match="empty output"):
        laal([], 3.0, 3)
