"""Numbers, prices, clock times and dates: English in words, German as a German writer writes them.

The English side is both the text the TTS engines read and the ASR transcript, so it is written the way it
is spoken ("seven thirty in the evening", "twelve euros fifty", "the third of May"): espeak-ng and flite
read digits, "$" and "3rd" inconsistently, and spelled-out words make the transcript match the audio.
The German side follows German print conventions: "19:30 Uhr", "12,50 Euro", "am 3. Mai", "Gleis 4",
and counts up to twelve in words ("zwei Fahrkarten", "20 Minuten").
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from sate.synth.phrasebook.grammar import Case, Noun, de_noun, de_np, en_indefinite

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_ORDINAL_WORDS = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
                  "nine": "ninth", "twelve": "twelfth"}
_DE_WORDS = "null ein zwei drei vier fünf sechs sieben acht neun zehn elf zwölf".split()
MONTHS = (("January", "Januar"), ("February", "Februar"), ("March", "März"), ("April", "April"),
          ("May", "Mai"), ("June", "Juni"), ("July", "Juli"), ("August", "August"),
          ("September", "September"), ("October", "Oktober"), ("November", "November"),
          ("December", "Dezember"))
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
WEEKDAYS = (("Monday", "Montag"), ("Tuesday", "Dienstag"), ("Wednesday", "Mittwoch"),
            ("Thursday", "Donnerstag"), ("Friday", "Freitag"), ("Saturday", "Samstag"), ("Sunday", "Sonntag"))


def en_number(n: int) -> str:
    """0 <= n < 10000 in British English words: 345 -> "three hundred and forty-five"."""
    if not 0 <= n < 10000:
        raise ValueError(f"number out of range: {n}")
    if n < 20:
        return _ONES[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")
    for size, word in ((1000, "thousand"), (100, "hundred")):
        if n >= size:
            head, rest = divmod(n, size)
            text = f"{en_number(head)} {word}"
            if not rest:
                return text
            return f"{text} and {en_number(rest)}" if rest < 100 else f"{text} {en_number(rest)}"
    raise AssertionError(n)


def en_ordinal(n: int) -> str:
    """1 -> "first", 23 -> "twenty-third", 30 -> "thirtieth"."""
    words = en_number(n)
    head, sep, last = words.rpartition("-") if "-" in words else ("", "", words)
    if last in _ORDINAL_WORDS:
        last = _ORDINAL_WORDS[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return f"{head}{sep}{last}"


def de_count(n: int) -> str:
    """A German count as written in running text: words up to twelve, digits above ("zwei", "20")."""
    return _DE_WORDS[n] if 0 <= n <= 12 else str(n)


@dataclass(frozen=True)
class Count:
    """A number of things, e.g. Count(2).en == "two"; German uses `de_count`."""

    n: int

    @property
    def en(self) -> str:
        return en_number(self.n)

    @property
    def de(self) -> str:
        return de_count(self.n)


@dataclass(frozen=True)
class Number:
    """A label written in digits in German (Gleis 4, Zimmer 214, Linie 12): English says it in words."""

    n: int

    @property
    def en(self) -> str:
        return en_number(self.n)

    @property
    def de(self) -> str:
        return str(self.n)


@dataclass(frozen=True)
class Time:
    """A clock time. `style` "digital" says "seven thirty", "past" says "half past seven".

    English uses the 12-hour clock with "in the afternoon"/"in the evening" from noon on (mornings are
    unmarked), so the English alone fixes the German 24-hour time.
    """

    hour: int
    minute: int = 0
    style: str = "digital"

    def _hour_word(self, hour: int) -> str:
        return en_number(hour % 12 or 12)

    @property
    def daypart(self) -> str:
        if self.hour < 12:
            return ""
        return " in the afternoon" if self.hour < 18 else " in the evening"

    @property
    def en(self) -> str:
        h, m = self.hour, self.minute
        if m == 0:
            words = f"{self._hour_word(h)} o'clock"
        elif self.style == "past":
            names = {15: "a quarter", 30: "half", 45: "a quarter"}
            minutes = names.get(m if m <= 30 else 60 - m) or en_number(m if m <= 30 else 60 - m)
            words = (f"{minutes} past {self._hour_word(h)}" if m <= 30
                     else f"{minutes} to {self._hour_word(h + 1)}")
        else:
            words = f"{self._hour_word(h)} {'oh ' + en_number(m) if m < 10 else en_number(m)}"
        return words + self.daypart

    @property
    def de(self) -> str:
        return f"{self.hour} Uhr" if self.minute == 0 else f"{self.hour}:{self.minute:02d} Uhr"


@dataclass(frozen=True)
class Price:
    """An amount in euros: English "twelve euros fifty", German "12,50 Euro"."""

    euros: int
    cents: int = 0

    @property
    def en(self) -> str:
        text = f"{en_number(self.euros)} euro{'' if self.euros == 1 else 's'}"
        return f"{text} {en_number(self.cents)}" if self.cents else text

    @property
    def de(self) -> str:
        return f"{self.euros},{self.cents:02d} Euro" if self.cents else f"{self.euros} Euro"


@dataclass(frozen=True)
class Date:
    """A day of the year. English "the third of May" / "May the third"; German "3. Mai"."""

    day: int
    month: int  # 1-12
    style: str = "of"  # "of": the third of May, "month": May the third

    @property
    def en(self) -> str:
        month = MONTHS[self.month - 1][0]
        if self.style == "month":
            return f"{month} the {en_ordinal(self.day)}"
        return f"the {en_ordinal(self.day)} of {month}"

    @property
    def de(self) -> str:
        return f"{self.day}. {MONTHS[self.month - 1][1]}"


# --------------------------------------------------------------------------- samplers

def clock_time(rng: random.Random, first: int = 6, last: int = 22) -> Time:
    """A time between `first` and `last` o'clock in five-minute steps, either spoken style."""
    return Time(rng.randint(first, last), 5 * rng.randrange(12), rng.choice(("digital", "past")))


def office_time(rng: random.Random) -> Time:
    """Appointments: full, half and quarter hours between 8 and 18 o'clock."""
    return Time(rng.randint(8, 18), rng.choice((0, 0, 15, 30, 45)), rng.choice(("digital", "past")))


def full_hour(rng: random.Random, first: int = 6, last: int = 22) -> Time:
    return Time(rng.randint(first, last))


def price(rng: random.Random, low: int = 1, high: int = 300) -> Price:
    """Shop prices: round euros or cents in steps of 5, mostly ending in 0, 50 or 99."""
    cents = rng.choice((0, 0, 50, 99, 95, 5 * rng.randrange(1, 20)))
    return Price(rng.randint(low, high), cents)


def date(rng: random.Random) -> Date:
    month = rng.randint(1, 12)
    return Date(rng.randint(1, _MONTH_DAYS[month - 1]), month, rng.choice(("of", "month")))


def count(rng: random.Random, low: int = 2, high: int = 12) -> Count:
    return Count(rng.randint(low, high))


def weekday(rng: random.Random) -> tuple[str, str]:
    return rng.choice(WEEKDAYS)


# --------------------------------------------------------------------------- durations and days

UNITS = {
    "minute": Noun("minute", "minutes", "Minute", "Minuten", "f"),
    "hour": Noun("hour", "hours", "Stunde", "Stunden", "f"),
    "day": Noun("day", "days", "Tag", "Tage", "m"),
    "night": Noun("night", "nights", "Nacht", "Nächte", "f"),
    "week": Noun("week", "weeks", "Woche", "Wochen", "f"),
    "month": Noun("month", "months", "Monat", "Monate", "m"),
    "year": Noun("year", "years", "Jahr", "Jahre", "n"),
}


@dataclass(frozen=True)
class Duration:
    """A length of time: English "a week", "three days"; German by case ("drei Tage", "seit drei Tagen")."""

    n: int
    unit: str  # a key of UNITS

    @property
    def en(self) -> str:
        noun = UNITS[self.unit]
        if self.n == 1:
            return f"{en_indefinite(noun.en)} {noun.en}"
        return f"{en_number(self.n)} {noun.en_pl}"

    def de(self, case: Case = "acc") -> str:
        noun = UNITS[self.unit]
        if self.n == 1:
            return de_np(noun, case, "ein")
        return f"{de_count(self.n)} {de_noun(noun, case, plural=True)}"


def duration(rng: random.Random, units: tuple[str, ...] = ("day", "week", "month", "year"), high: int = 10) -> Duration:
    return Duration(rng.randint(1, high), rng.choice(units))


@dataclass(frozen=True)
class Day:
    """A weekday, optionally with a part of the day: "on Friday afternoon" / "am Freitagnachmittag"."""

    weekday: int  # 0 = Monday
    part: str = ""  # "", "morning", "afternoon", "evening"

    @property
    def en(self) -> str:
        return " ".join(filter(None, (WEEKDAYS[self.weekday][0], self.part)))

    @property
    def de(self) -> str:
        parts = {"": "", "morning": "morgen", "afternoon": "nachmittag", "evening": "abend"}
        return WEEKDAYS[self.weekday][1] + parts[self.part]


def day(rng: random.Random, parts: bool = True) -> Day:
    part = rng.choice(("", "", "morning", "afternoon", "evening")) if parts else ""
    return Day(rng.randrange(7), part)


def date_after(start: Date, days: int) -> Date:
    """`days` days after `start` in a non-leap year (wrapping from December into January)."""
    day_of_year = sum(_MONTH_DAYS[:start.month - 1]) + start.day - 1 + days
    day_of_year %= 365
    month = 0
    while day_of_year >= _MONTH_DAYS[month]:
        day_of_year -= _MONTH_DAYS[month]
        month += 1
    return Date(day_of_year + 1, month + 1, start.style)
