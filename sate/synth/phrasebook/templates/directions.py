"""Directions: asking the way, where things are (dative after two-way prepositions), turning, walking."""

from __future__ import annotations

import random

from sate.synth.phrasebook.grammar import Adj, Noun, de_np, de_pp, en_indefinite
from sate.synth.phrasebook.lexicon.places import CROSSINGS, LANDMARKS, TOWN_PLACES
from sate.synth.phrasebook.numbers import Count, Number
from sate.synth.phrasebook.templates.base import Realisation, Slots, Topic
from sate.synth.phrasebook.words import pairs

TOPIC = Topic("directions")
NEAREST = Adj("nearest", "nächst")
ORDINALS = (Adj("first", "erst"), Adj("second", "zweit"), Adj("third", "dritt"), Adj("next", "nächst"))
STREET = Noun("street", "streets", "Straße", "Straßen", "f")
SIDES = (("left", "links"), ("right", "rechts"))
POSITIONS = pairs("""
next to | neben
behind | hinter
in front of | vor
opposite | gegenüber
""")
MODES = pairs("""
by bus | Mit dem Bus
by car | Mit dem Auto
by bike | Mit dem Fahrrad
by taxi | Mit dem Taxi
by tram | Mit der Straßenbahn
by underground | Mit der U-Bahn
""")


def two_places(rng: random.Random) -> tuple[Noun, Noun]:
    first, second = rng.sample(TOWN_PLACES, 2)
    return first, second


def three_places(rng: random.Random) -> tuple[Noun, Noun, Noun]:
    return tuple(rng.sample(TOWN_PLACES, 3))


def minutes(rng: random.Random) -> Count:
    return Count(rng.choice((2, 3, 5, 5, 10, 10, 15, 15, 20, 25, 30)))


@TOPIC.template(place=TOWN_PLACES)
def how_get(s: Slots) -> Realisation:
    p = s.place.en
    return ([f"How do I get to the {p}?", f"How can I get to the {p}?"],
            f"Wie komme ich {de_pp('zu', s.place)}?")


@TOPIC.template(place=TOWN_PLACES)
def tell_me_how(s: Slots) -> Realisation:
    p = s.place.en
    return ([f"Could you tell me how to get to the {p}?", f"Can you tell me how I get to the {p}?"],
            f"Können Sie mir sagen, wie ich {de_pp('zu', s.place)} komme?")


@TOPIC.template(place=TOWN_PLACES)
def nearest(s: Slots) -> Realisation:
    return ([f"Where is the nearest {s.place.en}?", f"Where's the nearest {s.place.en}?"],
            f"Wo ist {de_np(s.place, 'nom', 'def', NEAREST)}?")


@TOPIC.template(place=TOWN_PLACES)
def is_there(s: Slots) -> Realisation:
    a = en_indefinite(s.place.en)
    return ([f"Is there {a} {s.place.en} near here?", f"Is there {a} {s.place.en} nearby?"],
            f"Gibt es hier in der Nähe {de_np(s.place, 'acc', 'ein')}?")


@TOPIC.template(places=two_places, position=POSITIONS)
def is_next_to(s: Slots) -> Realisation:
    first, second = s.places
    return ([f"The {first.en} is {s.position[0]} the {second.en}."],
            f"{de_np(first)} ist {de_pp(s.position[1], second, 'dat')}.")


@TOPIC.template(places=three_places)
def between(s: Slots) -> Realisation:
    first, second, third = s.places
    return ([f"The {first.en} is between the {second.en} and the {third.en}."],
            f"{de_np(first)} liegt zwischen {de_np(second, 'dat')} und {de_np(third, 'dat')}.")


def turning_point(rng: random.Random) -> tuple[Noun, Adj | None]:
    """A landmark and maybe an ordinal: only repeated things get one ("the second traffic lights")."""
    landmark = rng.choice(LANDMARKS)
    countable = landmark.de in ("Ampel", "Kreuzung", "Kreisverkehr", "Ecke", "Zebrastreifen")
    return landmark, rng.choice(ORDINALS) if countable and rng.random() < 0.5 else None


@TOPIC.template(side=SIDES, at=turning_point)
def turn(s: Slots) -> Realisation:
    side, (landmark, adj) = s.side, s.at
    at = f"the {adj.en} {landmark.en}" if adj else f"the {landmark.en}"
    return ([f"Turn {side[0]} at {at}.", f"At {at}, turn {side[0]}."],
            f"Biegen Sie {de_pp('an', landmark, 'dat', 'def', adj)} {side[1]} ab.")


@TOPIC.template(ordinal=ORDINALS[:3], side=SIDES)
def take_street(s: Slots) -> Realisation:
    return ([f"Take the {s.ordinal.en} street on the {s.side[0]}.",
             f"Take the {s.ordinal.en} road on the {s.side[0]}."],
            f"Nehmen Sie {de_np(STREET, 'acc', 'def', s.ordinal)} {s.side[1]}.")


@TOPIC.template(place=TOWN_PLACES)
def straight_on(s: Slots) -> Realisation:
    p = s.place.en
    return ([f"Go straight ahead as far as the {p}.", f"Walk straight on until you reach the {p}."],
            f"Gehen Sie geradeaus bis {de_pp('zu', s.place)}.")


@TOPIC.template(crossing=CROSSINGS, landmark=LANDMARKS)  # different lexicons: never "über die Brücke ... an der Brücke"
def across_and_past(s: Slots) -> Realisation:
    return ([f"Go across the {s.crossing.en} and past the {s.landmark.en}.",
             f"Cross the {s.crossing.en} and go past the {s.landmark.en}."],
            f"Gehen Sie über {de_np(s.crossing, 'acc')} und {de_pp('an', s.landmark, 'dat')} vorbei.")


@TOPIC.template(n=minutes)
def on_foot(s: Slots) -> Realisation:
    return ([f"It is about {s.n.en} minutes on foot.", f"It's about {s.n.en} minutes on foot."],
            f"Zu Fuß sind es ungefähr {s.n.de} Minuten.")


@TOPIC.template(mode=MODES, n=minutes, place=TOWN_PLACES)
def takes_minutes(s: Slots) -> Realisation:
    return ([f"{s.mode[0]} it takes about {s.n.en} minutes to the {s.place.en}.",
             f"It takes about {s.n.en} minutes {s.mode[0]} to the {s.place.en}."],
            f"{s.mode[1]} dauert es ungefähr {s.n.de} Minuten bis {de_pp('zu', s.place)}.")


@TOPIC.template(line=lambda rng: Number(rng.randint(1, 120)), place=TOWN_PLACES)
def take_line(s: Slots) -> Realisation:
    return ([f"Take the number {s.line.en} bus to the {s.place.en}.",
             f"Take bus number {s.line.en} to the {s.place.en}."],
            f"Nehmen Sie den Bus der Linie {s.line.de} bis {de_pp('zu', s.place)}.")


@TOPIC.template(place=TOWN_PLACES)
def is_it_far(s: Slots) -> Realisation:
    return ([f"Is it far to the {s.place.en}?", f"Is the {s.place.en} far from here?"],
            f"Ist es weit bis {de_pp('zu', s.place)}?")


@TOPIC.template(place=TOWN_PLACES)
def show_on_map(s: Slots) -> Realisation:
    return ([f"Could you show me on the map where the {s.place.en} is?",
             f"Can you show me on the map where the {s.place.en} is?"],
            f"Können Sie mir auf der Karte zeigen, wo {de_np(s.place)} ist?")


@TOPIC.template(place=TOWN_PLACES)
def looking_for_place(s: Slots) -> Realisation:
    return ([f"I am looking for the {s.place.en}.", f"I'm looking for the {s.place.en}."],
            f"Ich suche {de_np(s.place, 'acc')}.")
