"""Lexicon entry types and the compact table notation the lexicon modules are written in.

Hundreds of nouns with gender and plural are easier to check by eye as one line each than as constructor
calls, so each lexicon is a block of `english | german` lines parsed once at import:

    nouns:       "umbrella | m Regenschirm -e"       gender, singular, plural ("-e" suffix, "=" unchanged,
                 "knife/knives | n Messer ="          or a full word; "_" is a space); English plural after "/",
                 "trousers* | f Hose -n"              "*" marks an English plural-only noun (a pair of trousers),
                 "colleague | m Kollege -n | Kollegen"  a third field is a weak noun's oblique singular.
    adjectives:  "expensive | teuer | teur"          predicative form, then the attributive stem if different.
    places:      "Munich | München", "Switzerland | f Schweiz", "the Netherlands | pl Niederlande".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from sate.synth.phrasebook.grammar import Adj, Case, Noun, contract

T = TypeVar("T")


def english_plural(word: str) -> str:
    """The regular English plural of the last word: bus -> buses, city -> cities, key -> keys."""
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
        return word[:-1] + "ies"
    return word + "s"


def _lines(table: str) -> list[list[str]]:
    return [[field.strip() for field in line.split("|")] for line in table.strip().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def parse_noun(english: str, german: str, oblique: str = "") -> Noun:
    pair = english.endswith("*")
    english = english.rstrip("*")
    en, _, en_pl = english.partition("/")
    gender, singular, *plural = german.split()
    if gender not in ("m", "f", "n"):
        raise ValueError(f"noun {german!r}: gender must be m, f or n")
    spec = plural[0] if plural else "="
    de_pl = singular if spec == "=" else singular + spec[1:] if spec.startswith("-") else spec
    singular, de_pl = singular.replace("_", " "), de_pl.replace("_", " ")  # "Latte_macchiato"
    return Noun(en, en_pl or (en if pair else english_plural(en)), singular, de_pl, gender,  # type: ignore[arg-type]
                oblique=oblique, en_pair=pair)


def nouns(table: str) -> tuple[Noun, ...]:
    """Parse a block of noun lines (see the module docstring)."""
    return tuple(parse_noun(*fields) for fields in _lines(table))


def adjectives(table: str) -> tuple[Adj, ...]:
    return tuple(Adj(*fields) for fields in _lines(table))


def pairs(table: str) -> tuple[tuple[str, str], ...]:
    """Fixed English/German phrase pairs, one `english | german` per line."""
    return tuple((en, de) for en, de in _lines(table))


@dataclass(frozen=True)
class Place:
    """A city or country. `article` is set for names that take one in German: die Schweiz, die USA."""

    en: str
    de: str
    article: str = ""  # "", "f", "m" or "pl"

    def _np(self, case: Case) -> str:
        if not self.article:
            return self.de
        table = {"nom": {"m": "der", "f": "die", "pl": "die"}, "acc": {"m": "den", "f": "die", "pl": "die"},
                 "dat": {"m": "dem", "f": "der", "pl": "den"}}
        noun = self.de + ("n" if case == "dat" and self.article == "pl" and self.de.endswith("e") else "")
        return f"{table[case][self.article]} {noun}"

    @property
    def de_nom(self) -> str:
        return self._np("nom")

    @property
    def de_to(self) -> str:
        """Direction: "nach München", but "in die Schweiz" (two-way preposition, accusative)."""
        return contract("in", self._np("acc")) if self.article else f"nach {self.de}"

    @property
    def de_in(self) -> str:
        """Location: "in München", "in der Schweiz" (dative)."""
        return contract("in", self._np("dat"))

    @property
    def de_from(self) -> str:
        return f"aus {self._np('dat')}"


def places(table: str) -> tuple[Place, ...]:
    result = []
    for en, de in _lines(table):
        article, _, name = de.partition(" ")
        result.append(Place(en, name, article) if article in ("m", "f", "pl") and name else Place(en, de))
    return tuple(result)


@dataclass(frozen=True)
class Person:
    """A first name with the grammatical gender German needs (Anna ist Ärztin, Peter ist Arzt)."""

    name: str
    female: bool


def people(names: str, female: bool) -> tuple[Person, ...]:
    return tuple(Person(name, female) for name in names.split())


@dataclass(frozen=True)
class Profession:
    """A job: German has a masculine and a feminine form and uses no article (Sie ist Lehrerin)."""

    en: str
    de_m: str
    de_f: str

    def de(self, female: bool) -> str:
        return self.de_f if female else self.de_m


def professions(table: str) -> tuple[Profession, ...]:
    """Lines `english | masculine | feminine`; a feminine "-in" appends to the masculine form."""
    result = []
    for en, masc, fem in _lines(table):
        result.append(Profession(en, masc, masc + fem[1:] if fem.startswith("-") else fem))
    return tuple(result)


def find(entries: Sequence[T], english: str) -> T:
    """The entry of a lexicon whose English is `english` (for templates and tests that need one word)."""
    for entry in entries:
        key = entry[0] if isinstance(entry, tuple) else getattr(entry, "en", getattr(entry, "name", None))
        if key == english:
            return entry
    raise KeyError(f"no entry {english!r} in the lexicon")
