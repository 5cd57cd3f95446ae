"""Latency of simultaneous translation: Average Lagging (AL), its length-adaptive form (LAAL), and both
computation-aware, per sentence and over a corpus.

A streaming system emits target words while it reads the source. Word i's *delay* d_i is the seconds of source
audio read when it was emitted. With |X| the source duration, |Y| the hypothesis and |Y*| the reference length in
words (SimulEval's definitions, `simuleval.evaluator.scorers.latency_scorer`, here in seconds rather than ms):

    AL   = 1/tau * sum_{i=1..tau} (d_i - (i - 1) * |X| / |Y*|)
    LAAL = the same with max(|Y|, |Y*|) in place of |Y*|

where tau is the first word emitted after the whole source was read (d_tau >= |X|; all words when none is). An ideal
wait-0 system that speaks at the reference's pace scores 0, one that speaks ahead of it (words before the audio
that carries them, as a system that guesses does) scores below 0, as in SimulEval; a system that waits for the end
scores |X|. When the
first word already comes after the source ends, both are d_1. LAAL does not reward a hypothesis longer than the
reference (Papi et al. 2022): with AL, over-generation lowers the subtracted term's step and so the score.

The computation-aware variants put in each d_i the wall-clock time at which the word was available instead, counted
from the start of the audio: decoding time adds to the lag. How `sate.decode.simultaneous` obtains them (a live
stream, where decoding overlaps the next chunk's arrival) is said there. A sentence with no output word has no
latency and is left out of the corpus averages, as SimulEval leaves it out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import mean

from sate.errors import SateError


def average_lagging(delays: Sequence[float], source: float, target_length: float) -> float:
    """AL of one sentence: delays (seconds, non-decreasing) of its output words, source duration (seconds) and the
    target length the ideal policy is paced by (reference words for AL, max(hypothesis, reference) for LAAL)."""
    if not delays:
        raise SateError("average lagging of an empty output: no word was emitted")
    if source <= 0 or target_length <= 0:
        raise SateError(f"average lagging needs a positive source duration and target length, got {source} and "
                        f"{target_length}")
    if delays[0] > source:
        return float(delays[0])
    step = source / target_length  # seconds of source per target word at the ideal pace
    total, tau = 0.0, 0
    for i, d in enumerate(delays):
        total += d - i * step
        tau = i + 1
        if d >= source:
            break
    return total / tau


def al(delays: Sequence[float], source: float, reference_words: int) -> float:
    """Average Lagging (Ma et al. 2019), paced by the reference length."""
    return average_lagging(delays, source, reference_words)


def laal(delays: Sequence[float], source: float, reference_words: int) -> float:
    """Length-adaptive Average Lagging: paced by the longer of hypothesis and reference."""
    return average_lagging(delays, source, max(len(delays), reference_words))


@dataclass(frozen=True)
class Latency:
    """One sentence's lag in seconds: ideal (source read) and computation-aware (wall clock)."""

    al: float
    laal: float
    al_ca: float
    laal_ca: float


def sentence_latency(delays: Sequence[float], elapsed: Sequence[float], source: float,
                     reference_words: int) -> Latency | None:
    """All four scores of one sentence; None when it emitted no word. `elapsed` holds the wall-clock delays.

    An empty reference (a test split's row `sate prep` keeps and flags, "empty text") gives AL no pace: it is paced
    by the hypothesis, as LAAL is. It was a SateError naming no row once the whole split had been decoded, where the
    offline evaluation of the split scores it (twenty-fifth hostile pass)."""
    if len(delays) != len(elapsed):
        raise SateError(f"{len(delays)} delays but {len(elapsed)} computation-aware delays")
    if not delays:
        return None
    pace = reference_words or len(delays)
    return Latency(al(delays, source, pace), laal(delays, source, reference_words),
                   al(elapsed, source, pace), laal(elapsed, source, reference_words))


def corpus_latency(sentences: Sequence[Latency | None]) -> dict[str, float | int | None]:
    """The corpus averages (seconds) of each score over the sentences that emitted something, and their count; each
    None (JSON's null) where none did: NaN, which Python's json writes, is no JSON, and the results.json of a
    streamed run without a word was refused by strict readers (JavaScript's "not valid JSON"; 33rd hostile pass)."""
    scored = [s for s in sentences if s is not None]
    out: dict[str, float | int | None] = {"sentences": len(scored)}
    for name in ("al", "laal", "al_ca", "laal_ca"):
        out[name] = mean(getattr(s, name) for s in scored) if scored else None
    return out


def latency_line(scores: dict[str, float | int | None]) -> str:
    """One line of a report: the corpus averages of `corpus_latency`; none when no sentence showed a word (it said
    "AL nan s")."""
    if not scores["sentences"]:
        return "latency: no sentence showed a word, so there is none to measure"
    return (f"latency over {scores['sentences']} sentences: AL {scores['al']:.2f} s, LAAL {scores['laal']:.2f} s; "
            f"computation-aware AL {scores['al_ca']:.2f} s, LAAL {scores['laal_ca']:.2f} s")
