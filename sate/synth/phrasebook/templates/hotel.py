"""Hotel: bookings, rooms and prices, arrival and departure dates, things that are broken or missing."""

from __future__ import annotations

import random

from sate.synth.phrasebook.grammar import Case, Noun, de_np, en_np
from sate.synth.phrasebook.lexicon.hotel import (
    BREAKFAST_PLACES,
    EXTRAS,
    FACILITIES,
    ROOM_FEATURES,
    ROOM_ITEMS,
    ROOM_TYPES,
)
from sate.synth.phrasebook.lexicon.people import SURNAMES
from sate.synth.phrasebook.numbers import Count, Date, Number, Time, clock_time, date, date_after, duration, price
from sate.synth.phrasebook.templates.base import Realisation, Slots, Topic
from sate.synth.phrasebook.words import pairs

TOPIC = Topic("hotel")
PLURAL_ROOM_ITEMS = frozenset({"Lampe", "Steckdose", "Fenster", "Vorhang"})
FLOORS = pairs("""
on the ground floor | im Erdgeschoss
on the first floor | im ersten Stock
on the second floor | im zweiten Stock
on the third floor | im dritten Stock
on the fourth floor | im vierten Stock
on the top floor | im obersten Stock
in the basement | im Untergeschoss
""")


def room(rng: random.Random) -> tuple[Noun, tuple[str, str] | None]:
    """A room type, with a feature ("mit Balkon") a third of the time."""
    return rng.choice(ROOM_TYPES), rng.choice(ROOM_FEATURES) if rng.random() < 0.35 else None


def room_number(rng: random.Random) -> Number:
    return Number(100 * rng.randint(1, 6) + rng.randint(1, 40))


def stay(rng: random.Random) -> tuple[Date, Date]:
    start = date(rng)
    return start, date_after(start, rng.randint(1, 14))


def broken_item(rng: random.Random) -> tuple[Noun, bool]:
    item = rng.choice(ROOM_ITEMS)
    return item, item.de in PLURAL_ROOM_ITEMS and rng.random() < 0.4


def _room(room: tuple, case: Case, det: str) -> tuple[str, str]:
    kind, feature = room
    en = en_np(kind, "a") + (f" with {feature[0]}" if feature else "")
    return en, de_np(kind, case, det) + (f" mit {feature[1]}" if feature else "")


@TOPIC.template(name=SURNAMES)
def reservation(s: Slots) -> Realisation:
    return ([f"I have a reservation in the name of {s.name}.", f"I have a booking under the name {s.name}."],
            f"Ich habe eine Reservierung auf den Namen {s.name}.")


@TOPIC.template(room=room, nights=lambda rng: duration(rng, ("night",), 7))
def have_room(s: Slots) -> Realisation:
    en, de = _room(s.room, "acc", "ein")
    return ([f"Do you have {en} for {s.nights.en}?", f"Have you got {en} for {s.nights.en}?"],
            f"Haben Sie {de} für {s.nights.de('acc')}?")


@TOPIC.template(room=room)
def room_price(s: Slots) -> Realisation:
    en, de = _room(s.room, "nom", "ein")
    return ([f"How much is {en} per night?", f"How much does {en} cost per night?"], f"Was kostet {de} pro Nacht?")


@TOPIC.template(room=room, price=lambda rng: price(rng, 45, 390))
def room_costs(s: Slots) -> Realisation:
    en, de = _room(s.room, "nom", "ein")
    return ([f"{en} costs {s.price.en} per night, including breakfast."],
            f"{de} kostet {s.price.de} pro Nacht, inklusive Frühstück.")


@TOPIC.template(start=lambda rng: Time(rng.randint(6, 8), rng.choice((0, 30))),
                end=lambda rng: Time(rng.randint(10, 11), rng.choice((0, 30))), place=BREAKFAST_PLACES)
def breakfast(s: Slots) -> Realisation:
    return ([f"Breakfast is served from {s.start.en} to {s.end.en} {s.place[0]}.",
             f"Breakfast is from {s.start.en} to {s.end.en} {s.place[0]}."],
            f"Das Frühstück gibt es von {s.start.de} bis {s.end.de} {s.place[1]}.")


@TOPIC.template(item=broken_item)
def not_working(s: Slots) -> Realisation:
    noun, plural = s.item
    en = en_np(noun, "the", plural=plural)
    work = "do not work" if plural else "does not work"
    work_short = "don't work" if plural else "doesn't work"
    return ([f"{en} in my room {work}.", f"{en} in my room {work_short}."],
            f"{de_np(noun, plural=plural)} in meinem Zimmer {'funktionieren' if plural else 'funktioniert'} nicht.")


@TOPIC.template(item=broken_item, room=room_number)
def broken_in_room(s: Slots) -> Realisation:
    noun, plural = s.item
    return ([f"{en_np(noun, 'the', plural=plural)} in room {s.room.en} {'are' if plural else 'is'} broken."],
            f"{de_np(noun, plural=plural)} in Zimmer {s.room.de} {'sind' if plural else 'ist'} kaputt.")


@TOPIC.template(extra=EXTRAS, n=(1, 1, 2, 2, 3, 4), room=room_number)
def bring_extra(s: Slots) -> Realisation:
    noun, n = s.extra, s.n
    en = f"another {noun.en}" if n == 1 else f"{Count(n).en} more {noun.en_pl}"
    de = de_np(noun, "acc", "ein") if n == 1 else f"{Count(n).de} {noun.de_pl}"
    return ([f"Could you bring {en} to room {s.room.en}, please?", f"Could you please bring {en} to room {s.room.en}?"],
            f"Könnten Sie bitte noch {de} auf Zimmer {s.room.de} bringen?")


@TOPIC.template(time=lambda rng: clock_time(rng, 5, 9))
def wake_me(s: Slots) -> Realisation:
    return ([f"Could you wake me at {s.time.en}?", f"Could you wake me up at {s.time.en}?"],
            f"Können Sie mich um {s.time.de} wecken?")


@TOPIC.template(dates=stay)
def arrive_leave(s: Slots) -> Realisation:
    start, end = s.dates
    return ([f"We arrive on {start.en} and leave on {end.en}.",
             f"We are arriving on {start.en} and leaving on {end.en}."],
            f"Wir reisen am {start.de} an und am {end.de} ab.")


@TOPIC.template(facility=FACILITIES)
def hotel_has(s: Slots) -> Realisation:
    en = en_np(s.facility, "a")
    return ([f"Is there {en} in the hotel?",
             f"Does the hotel have {en}?"], f"Gibt es im Hotel {de_np(s.facility, 'acc', 'ein')}?")


@TOPIC.template(facility=FACILITIES, floor=FLOORS)
def on_floor(s: Slots) -> Realisation:
    return ([f"The {s.facility.en} is {s.floor[0]}.", f"You will find the {s.facility.en} {s.floor[0]}."],
            f"{de_np(s.facility)} ist {s.floor[1]}.")


@TOPIC.template(time=lambda rng: Time(rng.randint(12, 18), rng.choice((0, 30))))
def leave_luggage(s: Slots) -> Realisation:
    return ([f"Can I leave my luggage here until {s.time.en}?", f"Could I leave my luggage here until {s.time.en}?"],
            f"Kann ich mein Gepäck bis {s.time.de} hier lassen?")


@TOPIC.template(kind=(("Checkout is at", "Der Check-out ist um"), ("Check-in is from", "Der Check-in ist ab")),
                time=lambda rng: Time(rng.randint(10, 16), rng.choice((0, 0, 30))))
def check_times(s: Slots) -> Realisation:
    return [f"{s.kind[0]} {s.time.en}."], f"{s.kind[1]} {s.time.de}."
