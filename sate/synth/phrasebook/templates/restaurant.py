"""Restaurant: ordering dishes and drinks, tables, allergies, complaints and the bill."""

from __future__ import annotations

import random

from sate.synth.phrasebook.grammar import Noun, de_np, en_np
from sate.synth.phrasebook.lexicon.food import (
    ALLERGENS,
    CONTAINERS,
    DESSERTS,
    DISH_QUALITIES,
    DISHES,
    DRINKS,
    SIDE_ADJ_FOR,
    SIDE_ADJECTIVES,
    SIDE_NOUNS,
    SIDE_PLURAL,
    TABLEWARE,
)
from sate.synth.phrasebook.lexicon.leisure import FUTURE_TIMES
from sate.synth.phrasebook.numbers import Count, clock_time, day, de_count, en_number, price
from sate.synth.phrasebook.templates.base import Realisation, Slots, Topic
from sate.synth.phrasebook.words import find, pairs

TOPIC = Topic("restaurant")
STARTERS = tuple(d for d in DISHES if d.de.endswith(("suppe", "salat")))
MAINS = tuple(d for d in DISHES if d not in STARTERS)
FOOD_ALLERGENS = tuple(a for a in ALLERGENS if a[0] in (
    "nuts", "peanuts", "lactose", "gluten", "eggs", "shellfish", "soya", "sesame", "fish", "milk", "celery",
    "mustard"))
# Which drinks each container holds, by German drink name.
POURS = {
    "Glas": ("Wasser", "Mineralwasser", "Orangensaft", "Apfelsaft", "Apfelschorle", "Milch", "Bier", "Weizenbier",
             "Rotwein", "Weißwein", "Roséwein", "Sekt", "Limonade", "Cola", "Apfelwein", "Champagner", "Tomatensaft"),
    "Tasse": ("Kaffee", "Tee", "Pfefferminztee", "Kamillentee", "Kakao", "Espresso", "Cappuccino"),
    "Flasche": ("Wasser", "Mineralwasser", "Rotwein", "Weißwein", "Roséwein", "Sekt", "Bier", "Limonade", "Cola",
                "Champagner", "Apfelwein", "Apfelsaft"),
    "Karaffe": ("Wasser", "Rotwein", "Weißwein"),
    "Kännchen": ("Kaffee", "Tee", "Pfefferminztee", "Kamillentee"),
}
FIXED = pairs("""
Could we have the bill, please? | Können wir bitte die Rechnung haben?
Can we pay separately? | Können wir getrennt bezahlen?
Everything was delicious. | Es war alles köstlich.
Keep the change. | Stimmt so.
Is this table free? | Ist dieser Tisch frei?
We would like to order, please. | Wir möchten bitte bestellen.
Could we see the menu, please? | Könnten wir bitte die Speisekarte sehen?
What do you recommend? | Was empfehlen Sie?
Do you have any vegetarian dishes? | Haben Sie vegetarische Gerichte?
I'm full, thank you. | Ich bin satt, danke.
""")


def drink(rng: random.Random) -> tuple[Noun, Noun, int]:
    """(container, drink, count): "two cups of tea" / "zwei Tassen Tee"."""
    container = rng.choice(CONTAINERS)
    name = rng.choice(POURS[container.de])
    return container, next(d for d in DRINKS if d.de == name), rng.choice((1, 1, 1, 2, 2, 3, 4))


def dish_with_side(rng: random.Random) -> tuple[str, str, Noun]:
    """English and German for "the fish with steamed rice" (German dative, no article, strong ending)."""
    side = rng.choice(SIDE_NOUNS)
    adj = find(SIDE_ADJECTIVES, rng.choice(SIDE_ADJ_FOR[side.de]))
    de_side = de_np(side, "dat", "", adj, plural=side.de in SIDE_PLURAL)
    return f"with {adj.en} {side.en}", f"mit {de_side}", rng.choice(MAINS)


def people(rng: random.Random) -> Count:
    return Count(rng.randint(2, 12))


@TOPIC.template(order=dish_with_side)
def would_like_dish(s: Slots) -> Realisation:
    en_side, de_side, dish = s.order
    return ([f"I would like the {dish.en} {en_side}, please.", f"I'd like the {dish.en} {en_side}, please."],
            f"Ich hätte gern {de_np(dish, 'acc')} {de_side}, bitte.")


@TOPIC.template(dish=MAINS + DESSERTS)
def ill_have(s: Slots) -> Realisation:
    return ([f"I'll have the {s.dish.en}.", f"I will have the {s.dish.en}."], f"Ich nehme {de_np(s.dish, 'acc')}.")


@TOPIC.template(n=people)
def table_for(s: Slots) -> Realisation:
    return ([f"A table for {s.n.en}, please.", f"A table for {s.n.en} people, please."],
            f"Einen Tisch für {s.n.de} Personen, bitte.")


@TOPIC.template(n=people, when=FUTURE_TIMES)
def have_table(s: Slots) -> Realisation:
    return ([f"Do you have a table for {s.n.en} people {s.when[0]}?",
             f"Have you got a table for {s.n.en} {s.when[0]}?"],
            f"Haben Sie {s.when[1]} einen Tisch für {s.n.de} Personen?")


@TOPIC.template(n=people, day=lambda rng: day(rng, parts=False), time=lambda rng: clock_time(rng, 11, 21))
def reserve(s: Slots) -> Realisation:
    return ([f"We would like to reserve a table for {s.n.en} people on {s.day.en} at {s.time.en}.",
             f"We'd like to book a table for {s.n.en} on {s.day.en} at {s.time.en}."],
            f"Wir möchten einen Tisch für {s.n.de} Personen am {s.day.de} um {s.time.de} reservieren.")


@TOPIC.template(order=drink)
def a_glass_of(s: Slots) -> Realisation:
    container, liquid, n = s.order
    en_measure = en_np(container, en_number(n) if n > 1 else "a", plural=n > 1)
    de_measure = de_np(container, "acc", de_count(n) if n > 1 else "ein", plural=n > 1)
    return ([f"I would like {en_measure} of {liquid.en}, please.", f"I'd like {en_measure} of {liquid.en}, please."],
            f"Ich hätte gern {de_measure} {liquid.de}, bitte.")


@TOPIC.template(dish=DISHES + DESSERTS)
def is_vegetarian(s: Slots) -> Realisation:
    return [f"Is the {s.dish.en} vegetarian?"], f"Ist {de_np(s.dish)} vegetarisch?"


@TOPIC.template(dish=DISHES + DESSERTS, allergen=FOOD_ALLERGENS)
def contains(s: Slots) -> Realisation:
    return ([f"Does the {s.dish.en} contain {s.allergen[0]}?", f"Does the {s.dish.en} have {s.allergen[0]} in it?"],
            f"Enthält {de_np(s.dish)} {s.allergen[1]}?")


@TOPIC.template(dish=DISHES, quality=DISH_QUALITIES)
def dish_is(s: Slots) -> Realisation:
    return [f"The {s.dish.en} is {s.quality.en}."], f"{de_np(s.dish)} ist {s.quality.de}."


@TOPIC.template(item=TABLEWARE)
def bring_another(s: Slots) -> Realisation:
    return ([f"Could you bring me another {s.item.en}, please?", f"Could you please bring me another {s.item.en}?"],
            f"Könnten Sie mir bitte noch {de_np(s.item, 'acc', 'ein')} bringen?")


@TOPIC.template(item=TABLEWARE, n=lambda rng: Count(rng.randint(2, 6)))
def need_more(s: Slots) -> Realisation:
    return ([f"We need {s.n.en} more {s.item.en_pl}.", f"We need another {s.n.en} {s.item.en_pl}."],
            f"Wir brauchen noch {s.n.de} {s.item.de_pl}.")


@TOPIC.template(starter=STARTERS, main=MAINS)
def starter_and_main(s: Slots) -> Realisation:
    return ([f"As a starter I'll have the {s.starter.en}, and as a main course the {s.main.en}.",
             f"For my starter I'll have the {s.starter.en} and for my main course the {s.main.en}."],
            f"Als Vorspeise nehme ich {de_np(s.starter, 'acc')} und als Hauptgericht {de_np(s.main, 'acc')}.")


@TOPIC.template(dessert=DESSERTS)
def for_dessert(s: Slots) -> Realisation:
    return ([f"For dessert I would like the {s.dessert.en}.", f"For dessert I'd like the {s.dessert.en}."],
            f"Zum Nachtisch hätte ich gern {de_np(s.dessert, 'acc')}.")


@TOPIC.template(price=lambda rng: price(rng, 5, 180))
def that_makes(s: Slots) -> Realisation:
    return [f"That comes to {s.price.en}, please.",
            f"That makes {s.price.en}, please."], f"Das macht {s.price.de}, bitte."


@TOPIC.template(dishes=lambda rng: tuple(rng.sample(MAINS, 2)))
def recommend(s: Slots) -> Realisation:
    first, second = s.dishes
    return ([f"What do you recommend, the {first.en} or the {second.en}?",
             f"Which do you recommend, the {first.en} or the {second.en}?"],
            f"Was empfehlen Sie, {de_np(first, 'acc')} oder {de_np(second, 'acc')}?")


@TOPIC.template(dish=DISHES, allergen=FOOD_ALLERGENS)
def without(s: Slots) -> Realisation:
    return [f"The {s.dish.en} without {s.allergen[0]}, please."], f"{de_np(s.dish, 'acc')} ohne {s.allergen[1]}, bitte."


@TOPIC.template(phrase=FIXED)
def phrases(s: Slots) -> Realisation:
    return [s.phrase[0]], s.phrase[1]
