"""The phrasebook corpus as text: topics and templates, size, vocabulary, splits, determinism, number formats.

All fast: text generation only (the default corpus is generated once per module, in about half a second).
"""

from __future__ import annotations

import random
import re

import pytest

from sate.errors import SateError
from sate.synth import splits as split_rule
from sate.synth.phrasebook import generate
from sate.synth.phrasebook.numbers import Date, Price, Time, date_after, en_number, en_ordinal
from sate.synth.phrasebook.templates import TEMPLATES, TOPICS, Template
from sate.synth.phrasebook.templates.base import Topic

REQUIRED_TOPICS = {"travel", "weather", "shopping", "directions", "appointments", "restaurant", "hotel", "health",
                   "smalltalk"}
GERMAN_TIME = re.compile(r"\b\d{1,2}(:\d{2})? Uhr\b")


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[tuple[str, str]]]:
    return generate.phrasebook_splits()


def test_topics_and_templates() -> None:
    assert set(TOPICS) >= REQUIRED_TOPICS and len(TOPICS) >= 8
    assert len(TEMPLATES) >= 60
    assert all(len(topic.templates) >= 5 for topic in TOPICS.values())
    assert len({t.name for t in TEMPLATES}) == len(TEMPLATES)
    rng = random.Random(0)
    several = sum(len(t.render(t.sample(rng))[0]) > 1 for t in TEMPLATES)
    assert several >= 0.75 * len(TEMPLATES)  # most meanings have several English phrasings


@pytest.mark.slow
def test_default_sizes_and_vocabulary(corpus: dict[str, list[tuple[str, str]]]) -> None:
    sizes = {name: len(pairs) for name, pairs in corpus.items()}
    assert sizes == {"train": generate.DEFAULT_TEXT_SIZE, "dev": generate.DEFAULT_DEV_SIZE,
                     "tst-COMMON": generate.DEFAULT_TEST_SIZE}
    every = [pair for pairs in corpus.values() for pair in pairs]
    assert len(generate.english_word_types(every)) >= 1500
    used = {t.name.split(".")[0] for t in TEMPLATES}
    assert used == set(TOPICS)


@pytest.mark.slow
def test_split_rule_and_disjoint_splits(corpus: dict[str, list[tuple[str, str]]]) -> None:
    for name, pairs in corpus.items():
        assert all(split_rule.split_of(en) == name for en, _ in pairs), name
        assert len({en for en, _ in pairs}) == len(pairs), f"repeated English in {name}"
    english = {name: {en for en, _ in pairs} for name, pairs in corpus.items()}
    german = {name: {de for _, de in pairs} for name, pairs in corpus.items()}
    assert not english["train"] & (english["dev"] | english["tst-COMMON"])
    assert not german["train"] & (german["dev"] | german["tst-COMMON"])


@pytest.mark.slow
def test_deterministic_for_a_seed_and_dev_test_independent_of_text_size(
        corpus: dict[str, list[tuple[str, str]]]) -> None:
    small = generate.phrasebook_splits(2000, 300, 300, seed=0)
    assert small["dev"] == corpus["dev"] and small["tst-COMMON"] == corpus["tst-COMMON"]
    assert small == generate.phrasebook_splits(2000, 300, 300, seed=0)
    other = generate.phrasebook_splits(2000, 300, 300, seed=1)
    assert other["dev"] != small["dev"] and other["train"][:50] != small["train"][:50]


@pytest.mark.slow
def test_sentences_are_clean_and_numbers_are_written_for_each_side(
        corpus: dict[str, list[tuple[str, str]]]) -> None:
    for en, de in (pair for pairs in corpus.values() for pair in pairs):
        assert not re.search(r"\d|[$%€&/]", en), en  # the English is read aloud: numbers in words
        assert en[:1].isupper() and de[:1].isupper() and en[-1] in ".?!" and de[-1] in ".?!", (en, de)
        assert "  " not in en + de and "None" not in en + de and " ," not in en + de, (en, de)
        if "Uhr" in de:
            assert GERMAN_TIME.search(de), de
        if "Euro" in de:
            assert re.search(r"\b\d+(,\d\d)? Euro\b", de), de


def test_too_many_sentences_for_the_templates_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    tiny = Topic("tiny")
    tiny.template(n=range(30))(lambda s: ([f"Number {en_number(s.n)} is here."], f"Nummer {s.n} ist hier."))
    monkeypatch.setattr(generate, "TEMPLATES", tuple(tiny.templates))
    monkeypatch.setattr(generate, "MAX_FRUITLESS_DRAWS", 2000)
    with pytest.raises(SateError, match="--text-size"):
        generate.phrasebook_splits(100, 5, 5)


def test_numbers_times_prices_and_dates() -> None:
    assert [en_number(n) for n in (7, 21, 100, 345, 1000, 2012)] == [
        "seven", "twenty-one", "one hundred", "three hundred and forty-five", "one thousand",
        "two thousand and twelve"]
    assert [en_ordinal(n) for n in (1, 2, 3, 12, 20, 21, 30, 31)] == [
        "first", "second", "third", "twelfth", "twentieth", "twenty-first", "thirtieth", "thirty-first"]
    times = [Time(7, 30), Time(7, 30, "past"), Time(19, 45, "past"), Time(7, 5), Time(14, 0), Time(11, 40, "past")]
    assert [(t.en, t.de) for t in times] == [
        ("seven thirty", "7:30 Uhr"), ("half past seven", "7:30 Uhr"),
        ("a quarter to eight in the evening", "19:45 Uhr"), ("seven oh five", "7:05 Uhr"),
        ("two o'clock in the afternoon", "14 Uhr"), ("twenty to twelve", "11:40 Uhr")]
    assert [(p.en, p.de) for p in (Price(12, 50), Price(1), Price(3, 5))] == [
        ("twelve euros fifty", "12,50 Euro"), ("one euro", "1 Euro"), ("three euros five", "3,05 Euro")]
    assert (Date(3, 5).en, Date(3, 5, "month").en, Date(3, 5).de) == ("the third of May", "May the third", "3. Mai")
    assert date_after(Date(30, 12), 5) == Date(4, 1) and date_after(Date(27, 2), 3) == Date(2, 3)


def test_every_template_renders_for_many_seeds() -> None:
    for template in TEMPLATES:
        rng = random.Random(template.name)
        for _ in range(30):
            en, de = template.generate(rng)
            assert en and de and "{" not in en + de, template.name
    assert isinstance(TEMPLATES[0], Template)
