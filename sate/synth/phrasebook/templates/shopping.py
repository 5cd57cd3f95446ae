"""Shopping and prices: asking for and about clothes and goods, weights at the market, paying, opening hours."""

from __future__ import annotations

import random

from sate.synth.phrasebook.grammar import Adj, Noun, de_np, de_pronoun, en_be, en_np, en_verb
from sate.synth.phrasebook.lexicon.food import MASS_GOODS, PRODUCE
from sate.synth.phrasebook.lexicon.people import RELATIVES_CLEAR
from sate.synth.phrasebook.lexicon.places import TOWN_PLACES
from sate.synth.phrasebook.lexicon.things import BROKEN, CLOTHES, COLOUR_NOUNS, COLOURS, FIT, GOODS, QUALITIES
from sate.synth.phrasebook.numbers import Time, price
from sate.synth.phrasebook.templates.base import Realisation, Slots, Topic
from sate.synth.phrasebook.words import pairs

TOPIC = Topic("shopping")
PLURAL_CLOTHES = frozenset({"Schuh", "Stiefel", "Sandale", "Handschuh", "Socke"})
SHOPS = tuple(p for p in TOWN_PLACES if p.de in (
    "Bäckerei", "Apotheke", "Supermarkt", "Post", "Bank", "Buchhandlung", "Metzgerei", "Kaufhaus", "Drogerie",
    "Blumenladen", "Bibliothek", "Museum", "Touristeninformation", "Einkaufszentrum", "Markt", "Waschsalon"))
WEIGHTS = pairs("""
a kilo | ein Kilo
two kilos | zwei Kilo
three kilos | drei Kilo
half a kilo | ein halbes Kilo
a hundred grams | 100 Gramm
two hundred grams | 200 Gramm
two hundred and fifty grams | 250 Gramm
three hundred grams | 300 Gramm
five hundred grams | 500 Gramm
""")
PAYMENTS = pairs("""
by card | mit Karte
in cash | bar
by credit card | mit Kreditkarte
with my phone | mit dem Handy
by bank transfer | per Überweisung
""")


def clothing(rng: random.Random) -> tuple[Noun, bool, Adj]:
    """(noun, plural, adjective): shoes and boots come in the plural, everything else singular."""
    noun = rng.choice(CLOTHES)
    return noun, noun.de in PLURAL_CLOTHES, rng.choice(COLOURS + QUALITIES)


def market_good(rng: random.Random) -> tuple[Noun, bool]:
    """(noun, plural): mass goods are singular ("Käse"), produce plural ("Äpfel")."""
    return (rng.choice(PRODUCE), True) if rng.random() < 0.6 else (rng.choice(MASS_GOODS), False)


def opening_hours(rng: random.Random) -> tuple[Time, Time]:
    return Time(rng.randint(7, 10), rng.choice((0, 30))), Time(rng.randint(16, 22), rng.choice((0, 0, 30)))


@TOPIC.template(item=clothing)
def how_much(s: Slots) -> Realisation:
    noun, plural, adj = s.item
    en = en_np(noun, "the", adj, plural)
    return ([f"How much {en_verb(noun, 'does', 'do', plural)} {en} cost?", f"How much {en_be(noun, plural)} {en}?"],
            f"Wie viel {'kosten' if plural else 'kostet'} {de_np(noun, 'nom', 'def', adj, plural)}?")


@TOPIC.template(item=clothing, price=price)
def costs(s: Slots) -> Realisation:
    noun, plural, adj = s.item
    en = en_np(noun, "the", adj, plural)
    return ([f"{en} {en_verb(noun, 'costs', 'cost', plural)} {s.price.en}.",
             f"{en} {en_be(noun, plural)} {s.price.en}."],
            f"{de_np(noun, 'nom', 'def', adj, plural)} {'kosten' if plural else 'kostet'} {s.price.de}.")


@TOPIC.template(item=clothing)
def looking_for(s: Slots) -> Realisation:
    noun, plural, adj = s.item
    en = en_np(noun, "a", adj, plural)
    return ([f"I am looking for {en}.", f"I'm looking for {en}."],
            f"Ich suche {de_np(noun, 'acc', 'ein', adj, plural)}.")


@TOPIC.template(item=clothing, colour=COLOUR_NOUNS)
def in_colour(s: Slots) -> Realisation:
    noun, plural, _ = s.item
    en = en_np(noun, "this", plural=plural)
    return ([f"Do you also have {en} in {s.colour[0]}?", f"Do you have {en} in {s.colour[0]} as well?"],
            f"Haben Sie {de_np(noun, 'acc', 'dies', plural=plural)} auch in {s.colour[1]}?")


@TOPIC.template(item=clothing)
def try_on(s: Slots) -> Realisation:
    noun, plural, adj = s.item
    en = en_np(noun, "the", adj, plural)
    return ([f"Can I try on {en}?", f"Could I try on {en}?"],
            f"Kann ich {de_np(noun, 'acc', 'def', adj, plural)} anprobieren?")


@TOPIC.template(item=clothing)
def will_try_on(s: Slots) -> Realisation:
    noun, plural, adj = s.item
    en = en_np(noun, "the", adj, plural)
    return [f"I will try on {en}.", f"I'll try on {en}."], f"Ich probiere {de_np(noun, 'acc', 'def', adj, plural)} an."


@TOPIC.template(item=clothing)
def will_take(s: Slots) -> Realisation:
    noun, plural, adj = s.item
    en = en_np(noun, "the", adj, plural)
    return [f"I'll take {en}.", f"I will take {en}."], f"Ich nehme {de_np(noun, 'acc', 'def', adj, plural)}."


@TOPIC.template(item=clothing, fit=FIT)
def too_big(s: Slots) -> Realisation:
    noun, plural, _ = s.item
    return ([f"{en_np(noun, 'the', plural=plural)} {en_be(noun, plural)} {s.fit.en}."],
            f"{de_np(noun, plural=plural)} {'sind' if plural else 'ist'} {s.fit.de}.")


@TOPIC.template(good=GOODS, broken=BROKEN)
def give_back(s: Slots) -> Realisation:
    noun = s.good
    return ([f"I would like to return {en_np(noun, 'this')}, it is {s.broken.en}.",
             f"I'd like to return {en_np(noun, 'this')} because it is {s.broken.en}."],
            f"Ich möchte {de_np(noun, 'acc', 'dies')} zurückgeben, {de_pronoun(noun)} ist {s.broken.de}.")


@TOPIC.template(weight=WEIGHTS, good=market_good)
def by_weight(s: Slots) -> Realisation:
    noun, plural = s.good
    en = noun.en_pl if plural else noun.en
    de = noun.de_pl if plural else noun.de
    return ([f"I would like {s.weight[0]} of {en}, please.", f"I'd like {s.weight[0]} of {en}, please."],
            f"Ich hätte gern {s.weight[1]} {de}, bitte.")


@TOPIC.template(good=market_good, price=lambda rng: price(rng, 1, 25))
def price_per_kilo(s: Slots) -> Realisation:
    noun, plural = s.good
    en = noun.en_pl if plural else noun.en
    de = noun.de_pl if plural else noun.de
    return ([f"A kilo of {en} costs {s.price.en}.", f"One kilo of {en} costs {s.price.en}."],
            f"Ein Kilo {de} kostet {s.price.de}.")


@TOPIC.template(payment=PAYMENTS)
def pay_by(s: Slots) -> Realisation:
    return ([f"Can I pay {s.payment[0]}?", f"Could I pay {s.payment[0]}?"], f"Kann ich {s.payment[1]} bezahlen?")


@TOPIC.template(good=market_good)
def where_find(s: Slots) -> Realisation:
    noun, plural = s.good
    en = en_np(noun, "the", plural=plural)
    return ([f"Where can I find {en}?", f"Where do I find {en}?"],
            f"Wo finde ich {de_np(noun, 'acc', 'def', plural=plural)}?")


@TOPIC.template(shop=SHOPS, day=(("Monday", "Montag"), ("Saturday", "Samstag"), ("Sunday", "Sonntag"),
                                 ("Friday", "Freitag"), ("Wednesday", "Mittwoch")))
def when_open(s: Slots) -> Realisation:
    return ([f"When does the {s.shop.en} open on {s.day[0]}?", f"What time does the {s.shop.en} open on {s.day[0]}?"],
            f"Wann öffnet {de_np(s.shop)} am {s.day[1]}?")


@TOPIC.template(shop=SHOPS, hours=opening_hours)
def open_from(s: Slots) -> Realisation:
    start, end = s.hours
    return ([f"The {s.shop.en} is open from {start.en} to {end.en}.",
             f"The {s.shop.en} opens at {start.en} and closes at {end.en}."],
            f"{de_np(s.shop)} hat von {start.de} bis {end.de} geöffnet.")


@TOPIC.template(relative=RELATIVES_CLEAR)
def present_for(s: Slots) -> Realisation:
    return ([f"I am looking for a present for my {s.relative.en}.", f"I'm looking for a gift for my {s.relative.en}."],
            f"Ich suche ein Geschenk für {de_np(s.relative, 'acc', 'mein')}.")
