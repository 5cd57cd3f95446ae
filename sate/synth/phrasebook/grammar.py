"""German and English noun phrases built from a noun's gender, number and the case a template asks for.

Slot fillers combine freely with templates, so an article, an adjective ending or a contraction such as
"zum" can never be written by hand per combination: a wrong article would teach the model wrong German.
Every template goes through these functions instead. German covers nominative, accusative and dative
(the phrasebook avoids the genitive except for names, see `de_genitive`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Case = Literal["nom", "acc", "dat"]
Gender = Literal["m", "f", "n"]


@dataclass(frozen=True)
class Noun:
    """A countable or mass noun in both languages.

    `oblique` is the accusative/dative singular of a weak masculine noun (der Kollege, den Kollegen).
    `en_pair` marks English plural-only nouns (trousers, glasses): German "eine Hose" is English
    "a pair of trousers", and English verbs agree in the plural.
    """

    en: str
    en_pl: str
    de: str
    de_pl: str
    gender: Gender
    oblique: str = ""
    en_pair: bool = False


@dataclass(frozen=True)
class Adj:
    """An adjective; `stem` is the attributive stem where it differs (teuer -> teure, dunkel -> dunkle)."""

    en: str
    de: str
    stem: str = ""

    @property
    def de_stem(self) -> str:
        return self.stem or self.de


# --------------------------------------------------------------------------- German tables

def _table(nom: str, acc: str, dat: str) -> dict[str, dict[str, str]]:
    """Endings written as 'm f n pl' per case, e.g. _table('er e es e', ...)."""
    return {case: dict(zip(("m", "f", "n", "pl"), row.split(), strict=True))
            for case, row in (("nom", nom), ("acc", acc), ("dat", dat))}


DEFINITE = _table("der die das die", "den die das die", "dem der dem den")
DER_WORD_ENDINGS = _table("er e es e", "en e es e", "em er em en")  # dieser, jeder, welcher
EIN_WORD_ENDINGS = _table("_ e _ e", "en e _ e", "em er em en")  # ein, kein, mein, Ihr ("_": no ending)
ADJECTIVE_ENDINGS = {
    "weak": _table("e e e en", "en e e en", "en en en en"),  # after der, dieser
    "mixed": _table("er e es en", "en e es en", "en en en en"),  # after ein, kein, mein
    "strong": _table("er e es e", "en e es e", "em er em en"),  # no article, or a numeral
}
DER_WORDS = ("dies", "jed", "welch")
EIN_WORDS = ("ein", "kein", "mein", "dein", "sein", "ihr", "unser", "Ihr")
PREPOSITION_CASE: dict[str, Case] = {
    "mit": "dat", "nach": "dat", "aus": "dat", "zu": "dat", "von": "dat", "bei": "dat", "seit": "dat",
    "gegenüber": "dat", "bis zu": "dat", "für": "acc", "ohne": "acc", "gegen": "acc", "um": "acc",
    "durch": "acc",
}
TWO_WAY = ("in", "an", "auf", "über", "unter", "vor", "hinter", "neben", "zwischen")  # acc: motion, dat: place
CONTRACTIONS = {("zu", "dem"): "zum", ("zu", "der"): "zur", ("in", "dem"): "im", ("in", "das"): "ins",
                ("an", "dem"): "am", ("an", "das"): "ans", ("von", "dem"): "vom", ("bei", "dem"): "beim"}


def _slot(gender: Gender, plural: bool) -> str:
    return "pl" if plural else gender


def determiner(det: str, case: Case, gender: Gender, plural: bool) -> tuple[str, str]:
    """The determiner word and the adjective declension it calls for.

    `det`: "def" (der), a der-word stem ("dies"), an ein-word ("ein", "mein", "Ihr"), "" for none, or any
    other word (a numeral such as "zwei"), which does not inflect and takes strong adjectives.
    """
    slot = _slot(gender, plural)
    if det == "def":
        return DEFINITE[case][slot], "weak"
    if det in DER_WORDS:
        return det + DER_WORD_ENDINGS[case][slot], "weak"
    if det in EIN_WORDS:
        if det == "ein" and plural:
            return "", "strong"  # "ein" has no plural: "rote Äpfel"
        return det + EIN_WORD_ENDINGS[case][slot].strip("_"), "mixed"
    return det, "strong"


def de_adjective(adj: Adj, declension: str, case: Case, gender: Gender, plural: bool) -> str:
    return adj.de_stem + ADJECTIVE_ENDINGS[declension][case][_slot(gender, plural)]


def de_noun(noun: Noun, case: Case, plural: bool = False) -> str:
    """The bare noun: dative plural adds -n (den Kindern), weak nouns take their oblique form."""
    if plural:
        form = noun.de_pl
        return form + "n" if case == "dat" and not form.endswith(("n", "s")) else form
    return noun.oblique if noun.oblique and case != "nom" else noun.de


def de_np(noun: Noun, case: Case = "nom", det: str = "def", adj: Adj | None = None, plural: bool = False) -> str:
    """A German noun phrase, e.g. de_np(Pullover, "acc", "ein", rot) == "einen roten Pullover"."""
    word, declension = determiner(det, case, noun.gender, plural)
    parts = [word] if word else []
    if adj is not None:
        parts.append(de_adjective(adj, declension, case, noun.gender, plural))
    parts.append(de_noun(noun, case, plural))
    return " ".join(parts)


def de_pp(prep: str, noun: Noun, case: Case | None = None, det: str = "def", adj: Adj | None = None,
          plural: bool = False) -> str:
    """A prepositional phrase with the preposition's case and the usual contraction (zum, im, am, vom).

    Two-way prepositions (in, an, auf, ...) need `case`: accusative for motion, dative for place.
    """
    if case is None:
        if prep in TWO_WAY or prep not in PREPOSITION_CASE:
            raise ValueError(f"preposition {prep!r} needs an explicit case")
        case = PREPOSITION_CASE[prep]
    phrase = de_np(noun, case, det, adj, plural)
    return contract(prep, phrase)


def contract(prep: str, phrase: str) -> str:
    """Join a preposition and a noun phrase, contracting "zu dem" to "zum", "in das" to "ins" etc."""
    head, _, last = prep.rpartition(" ")
    first, _, rest = phrase.partition(" ")
    fused = CONTRACTIONS.get((last, first))
    if fused is None:
        return f"{prep} {phrase}"
    return " ".join(part for part in (head, fused, rest) if part)


def de_genitive(name: str) -> str:
    """A name's German genitive: "Annas", but "Klaus'" after s, x, z (no apostrophe otherwise)."""
    return name + "'" if name.endswith(("s", "ß", "x", "z")) else name + "s"


# --------------------------------------------------------------------------- English

_AN_WORDS = ("hour", "honest", "heir")
_A_PREFIXES = ("uni", "use", "usu", "eu", "one", "uk", "ur")


def en_indefinite(phrase: str) -> str:
    """"a" or "an" before `phrase`, by its sound: "an umbrella", "a university", "an hour"."""
    word = phrase.split()[0].lower()
    if word.startswith(_AN_WORDS):
        return "an"
    if word.startswith(_A_PREFIXES):
        return "a"
    return "an" if word[:1] in "aeiou" else "a"


def en_is_plural(noun: Noun, plural: bool = False) -> bool:
    """Whether English verbs agree in the plural ("the trousers are" even for one pair)."""
    return plural or noun.en_pair


def en_np(noun: Noun, det: str = "the", adj: Adj | None = None, plural: bool = False) -> str:
    """An English noun phrase: det is "the", "a", "this", "", or a possessive/numeral word ("my", "two")."""
    english_plural = en_is_plural(noun, plural)
    head = noun.en_pl if english_plural else noun.en
    if adj is not None:
        head = f"{adj.en} {head}"
    if det == "a":
        if plural:
            return head
        if noun.en_pair:
            return f"a pair of {head}"
        return f"{en_indefinite(head)} {head}"
    if det == "this":
        return f"{'these' if english_plural else 'this'} {head}"
    return f"{det} {head}" if det else head


def en_be(noun: Noun, plural: bool = False) -> str:
    return "are" if en_is_plural(noun, plural) else "is"


def en_verb(noun: Noun, singular: str, plural_form: str, plural: bool = False) -> str:
    """The English verb form agreeing with `noun`: en_verb(n, "costs", "cost")."""
    return plural_form if en_is_plural(noun, plural) else singular


def de_pronoun(noun: Noun, plural: bool = False, case: Case = "nom") -> str:
    """The German personal pronoun for `noun`: er/sie/es/sie (acc ihn/sie/es/sie, dat ihm/ihr/ihm/ihnen)."""
    table = {"nom": {"m": "er", "f": "sie", "n": "es", "pl": "sie"},
             "acc": {"m": "ihn", "f": "sie", "n": "es", "pl": "sie"},
             "dat": {"m": "ihm", "f": "ihr", "n": "ihm", "pl": "ihnen"}}
    return table[case][_slot(noun.gender, plural)]

