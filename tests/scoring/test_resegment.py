"""Re-segmenting a talk's output to the reference segments by edit distance, and StreamLAAL over the result, on
hand-computed cases."""

from __future__ import annotations

import pytest

from sate.decode.talks import Segment, TalkWords, reference_length, split_talk
from sate.scoring.latency import corpus_latency, sentence_latency
from sate.scoring.resegment import align_words, join_units, resegment, units


def test_alignment_places_each_hypothesis_word() -> None:
    assert align_words("a b c".split(), "a b c".split()) == [0, 1, 2]
    # x before everything: before reference word 0; y after b; z after c; the rest matched
    assert align_words("x a b y c z".split(), "a b c".split()) == [-1, 0, 1, 1, 2, 2]
    assert align_words([], "a b".split()) == []
    assert align_words("a b".split(), []) == [-1, -1]


def test_resegment_cuts_at_reference_boundaries() -> None:
    assert resegment("a b c d".split(), ["a b", "c d"]) == [[0, 1], [2, 3]]
    assert resegment("a b X c d".split(), ["a b", "c d"]) == [[0, 1, 2], [3, 4]]  # an extra word: the segment before
    assert resegment("X a b c d".split(), ["a b", "c d"]) == [[0, 1, 2], [3, 4]]  # at the start: the first segment
    assert resegment("a b e f".split(), ["a b", "c d", "e f"]) == [[0, 1], [], [2, 3]]  # nothing for c d
    # case and the punctuation at word ends do not count; a substituted word stays in its segment
    assert resegment("Hello there. How are you today?".split(), ["hello there!", "how are you?"]) == [
        [0, 1], [2, 3, 4, 5]]
    assert resegment("one two three four five".split(), ["one two", "THREE four six"]) == [[0, 1], [2, 3, 4]]
    assert resegment("a b".split(), []) == []


def test_chinese_and_japanese_are_aligned_a_character_at_a_time() -> None:
    """An unspaced output is one whitespace token per VAD segment: a segment holding two sentences went whole to one
    row and the other row got nothing (twenty-seventh hostile pass). A Han or kana character is a unit of its own,
    the punctuation after it goes with it, other text stays whole, and a row's text keeps the spacing written."""
    assert units("我用 iPhone拍照。 「好」") == (["我", "用", "iPhone", "拍", "照。", "「", "好」"],
                                                [False, True, False, True, True, False, True])
    text = "他今天去了学校。我们明天见。 天気がいいです。"
    refs = ["他今天去了学校。", "我们明天见。", "天気がいいです。"]
    parts, glued = units(text)
    rows = resegment(parts, refs)
    assert [join_units(parts, glued, r) for r in rows] == refs
    assert resegment("a b c d".split(), ["a b", "c d"]) == [[0, 1], [2, 3]]  # spaced text as before
    # the streamed path: a shown word of Chinese split between two rows, each character with the word's delays
    talk = TalkWords(["我们明天见。你好。"], [False], [3.0], [3.5], 10.0, 20)
    first, second = split_talk(talk, [{"tgt": "我们明天见。", "offset": 0.0, "duration": 2.0},
                                      {"tgt": "你好。", "offset": 2.0, "duration": 1.0}])
    assert first == Segment("我们明天见。", 2.0, [3.0] * 5, [3.5] * 5)
    assert second == Segment("你好。", 1.0, [1.0] * 2, [1.5] * 2)


def test_a_talks_chinese_reference_is_counted_in_the_units_its_delays_count() -> None:
    """A whole talk's Chinese words are split into characters, each with its word's delays: a reference counted in
    whitespace words (one a sentence) paced AL at a sentence a character, and a row whose output all came at 1.0 s
    gave a negative AL (review27z). Counted in characters, as the delays are: five characters at 1.0 s against an
    ideal pace of 2 s / 5 = 0.4 s each, AL = (5 · 1.0 - 0.4 · (0 + 1 + 2 + 3 + 4)) / 5 = 0.2 s (counted in words,
    the pace was 2 s a character: (5 - 2 · 10) / 5 = -3 s). Spaced text is counted in whitespace words."""
    row = {"tgt": "我们明天见。", "offset": 0.0, "duration": 2.0}
    (segment,) = split_talk(TalkWords(["我们明天见。"], [False], [1.0], [1.0], 2.0, 4), [row])
    latency = sentence_latency(segment.delays, segment.elapsed, segment.duration, reference_length(row["tgt"]))
    assert latency is not None and latency.al == pytest.approx(0.2)
    words = sentence_latency(segment.delays, segment.elapsed, segment.duration, 1)
    assert words is not None and words.al == pytest.approx(-3.0)  # what it was
    assert reference_length("The cat sat.") == 3 and reference_length("我们明天见。") == 5


def test_stream_laal_by_hand() -> None:
    """Two reference rows (10-14 s: 4 words; 15-20 s: 4 words) and a third with no output; "down" is missing from
    the output and "so" is extra. Delays from each row's start; LAAL paced by max(|Y|, |Y*|) words."""
    rows = [{"tgt": "The cat sat down.", "offset": 10.0, "duration": 4.0},
            {"tgt": "It was very tired.", "offset": 15.0, "duration": 5.0},
            {"tgt": "Goodbye.", "offset": 30.0, "duration": 1.0}]
    words = "The cat sat. It was so very tired.".split()
    delays = [11.0, 12.0, 14.5, 16.0, 16.0, 18.0, 19.0, 21.0]
    talk = TalkWords(words, [False] * len(words), delays, [d + 0.5 for d in delays], 40.0, 80)
    segments = split_talk(talk, rows)
    assert segments[0] == Segment("The cat sat.", 4.0, [1.0, 2.0, 4.5], [1.5, 2.5, 5.0])
    assert segments[1].translation == "It was so very tired." and segments[1].delays == [1.0, 1.0, 3.0, 4.0, 6.0]
    assert segments[2] == Segment("", 1.0, [], [])
    latencies = [sentence_latency(s.delays, s.elapsed, s.duration, len(r["tgt"].split()))
                 for s, r in zip(segments, rows, strict=True)]
    assert latencies[2] is None  # no output: left out
    # row 1: LAAL = AL = ((1 - 0) + (2 - 1) + (4.5 - 2)) / 3 = 1.5 (tau = 3: 4.5 s >= 4 s)
    # row 2: LAAL, 5 words over 5 s: (1 + 0 + 1 + 1 + 2) / 5 = 1.0; AL, 1.25 s a word: 2.5 / 5 = 0.5
    # computation-aware (0.5 s later): row 1 (1.5 + 1.5 + 3) / 3 = 2.0, row 2 (1.5 + 0.5 + 1.5 + 1.5 + 2.5) / 5 = 1.5
    scores = corpus_latency(latencies)
    assert scores["sentences"] == 2
    assert scores["laal"] == pytest.approx(1.25)
    assert scores["al"] == pytest.approx(1.0)
    assert scores["laal_ca"] == pytest.approx(1.75)


def test_stream_laal_as_fbk_scores_it() -> None:
    """The shape of the fixed case in FBK's simulstream tests (StreamLaal, word level): reference rows of 13 and 17
    words at 12.61 s (4.07 s long) and 16.9 s (5.14 s), an output of 15 + 10 words with the same delays; their
    scorer gives StreamLAAL 0.868587 and 5.86 computation-aware. The figures depend only on the split and the
    counts, so the words here are our own."""
    rows = [{"tgt": "On Monday we met the new team of the small garden project downtown.", "offset": 12.61,
             "duration": 4.07},
            {"tgt": "When it rains we stay inside and read the books that my grandmother left in the attic.",
             "offset": 16.9, "duration": 5.14}]
    words = ("Last Monday we all met the brand new team of the little garden project downtown. "
             "When it rains we stay at home and read books.").split()
    delays = [14.0] * 4 + [16.0] * 9 + [18.0] * 8 + [20.0] * 4
    elapsed = [18.22] * 4 + [19.93] * 9 + [23.01] * 8 + [27.30] * 4
    segments = split_talk(TalkWords(words, [False] * len(words), delays, elapsed, 30.0, 60), rows)
    assert [len(s.translation.split()) for s in segments] == [15, 10]
    scores = corpus_latency([sentence_latency(s.delays, s.elapsed, s.duration, len(r["tgt"].split()))
                             for s, r in zip(segments, rows, strict=True)])
    assert scores["laal"] == pytest.approx(0.868587, abs=1e-5)
    assert scores["laal_ca"] == pytest.approx(5.86, abs=1e-5)
