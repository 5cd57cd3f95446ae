"""Travel and timetables: departures, arrivals, tickets, delays, changes, luggage and car hire."""

from __future__ import annotations

import random

from sate.synth.phrasebook.grammar import Adj, Noun, de_np, de_pp, en_np
from sate.synth.phrasebook.lexicon.places import CITIES, COUNTRIES, TOWN_PLACES
from sate.synth.phrasebook.lexicon.things import LOST_ITEMS, RENTALS, VEHICLES
from sate.synth.phrasebook.numbers import Count, Number, clock_time, date, de_count, duration, en_number
from sate.synth.phrasebook.templates.base import Realisation, Slots, Topic
from sate.synth.phrasebook.words import find, nouns, pairs

TOPIC = Topic("travel")
NEXT = Adj("next", "nächst")
TRAIN = find(VEHICLES, "train")
LOCAL_VEHICLES = tuple(v for v in VEHICLES if v.en in ("train", "bus", "tram", "underground train",
                                                       "regional train", "night train"))
CITY_VEHICLES = tuple(v for v in VEHICLES if v.en in ("bus", "tram", "underground train"))
TICKETS = nouns("""
return ticket | f Rückfahrkarte -n
day ticket | f Tageskarte -n
weekly ticket | f Wochenkarte -n
seat reservation | f Platzreservierung -en
child's ticket/children's tickets | f Kinderfahrkarte -n
first-class ticket | f Fahrkarte_erster_Klasse Fahrkarten_erster_Klasse
ticket | f Fahrkarte -n
""")
SINGLE = Adj("single", "einfach")
MODES = pairs("""
by train | mit dem Zug
by bus | mit dem Bus
by car | mit dem Auto
by bike | mit dem Fahrrad
by ferry | mit der Fähre
by coach | mit dem Fernbus
by taxi | mit dem Taxi
by tram | mit der Straßenbahn
""")


def platform(rng: random.Random) -> Number:
    return Number(rng.randint(1, 24))


def ticket(rng: random.Random) -> tuple[Noun, Adj | None]:
    """A ticket kind: a noun and maybe an adjective ("a single ticket" = "eine einfache Fahrkarte")."""
    plain = find(TICKETS, "ticket")
    return (plain, SINGLE) if rng.random() < 0.3 else (rng.choice(TICKETS), None)


def hours(rng: random.Random) -> tuple[int, bool]:
    return rng.randint(1, 9), rng.random() < 0.4


def journey_time(n: int, half: bool) -> tuple[str, str]:
    """("about two and a half hours", "ungefähr zweieinhalb Stunden")."""
    if n == 1:
        return ("about an hour and a half", "ungefähr eineinhalb Stunden") if half else (
            "about an hour", "ungefähr eine Stunde")
    if half:
        return f"about {en_number(n)} and a half hours", f"ungefähr {de_count(n)}einhalb Stunden"
    return f"about {en_number(n)} hours", f"ungefähr {de_count(n)} Stunden"


@TOPIC.template(city=CITIES, time=clock_time, platform=platform)
def train_departs(s: Slots) -> Realisation:
    return ([f"The train to {s.city.en} leaves at {s.time.en} from platform {s.platform.en}.",
             f"The train to {s.city.en} departs from platform {s.platform.en} at {s.time.en}."],
            f"Der Zug nach {s.city.de} fährt um {s.time.de} von Gleis {s.platform.de} ab.")


@TOPIC.template(vehicle=VEHICLES, city=CITIES, time=clock_time)
def arrives(s: Slots) -> Realisation:
    v = s.vehicle.en
    return ([f"The {v} from {s.city.en} arrives at {s.time.en}.",
             f"The {v} from {s.city.en} gets in at {s.time.en}."],
            f"{de_np(s.vehicle)} aus {s.city.de} kommt um {s.time.de} an.")


@TOPIC.template(vehicle=VEHICLES, city=CITIES)
def next_departure(s: Slots) -> Realisation:
    v, city = s.vehicle.en, s.city.en
    return ([f"When does the next {v} to {city} leave?", f"When is the next {v} to {city}?",
             f"What time does the next {v} to {city} leave?"],
            f"Wann fährt {de_np(s.vehicle, 'nom', 'def', NEXT)} nach {s.city.de}?")


@TOPIC.template(n=(1, 1, 1, 2, 3, 4, 5), ticket=ticket, city=CITIES)
def buy_tickets(s: Slots) -> Realisation:
    noun, adj = s.ticket
    plural = s.n > 1
    en = en_np(noun, en_number(s.n) if plural else "a", adj, plural)
    de = de_np(noun, "acc", de_count(s.n) if plural else "ein", adj, plural)
    return ([f"I would like {en} to {s.city.en}, please.", f"I'd like {en} to {s.city.en}, please."],
            f"Ich möchte {de} nach {s.city.de}, bitte.")


@TOPIC.template(city=CITIES)
def change_trains(s: Slots) -> Realisation:
    return ([f"Do I have to change trains in {s.city.en}?", f"Do I need to change in {s.city.en}?"],
            f"Muss ich in {s.city.de} umsteigen?")


@TOPIC.template(city=CITIES, vehicle=LOCAL_VEHICLES, destination=CITIES)
def change_and_take(s: Slots) -> Realisation:
    v = s.vehicle
    return ([f"Change in {s.city.en} and take the {v.en} to {s.destination.en}.",
             f"Change trains in {s.city.en} and then take the {v.en} to {s.destination.en}."],
            f"Steigen Sie in {s.city.de} um und nehmen Sie {de_np(v, 'acc')} nach {s.destination.de}.")


@TOPIC.template(vehicle=VEHICLES, city=CITIES, n=lambda rng: Count(rng.choice((5, 10, 15, 20, 25, 30, 40, 45, 50, 90))))
def delay(s: Slots) -> Realisation:
    v, city = s.vehicle.en, s.city.en
    return ([f"The {v} to {city} is {s.n.en} minutes late.", f"The {v} to {city} is running {s.n.en} minutes late.",
             f"The {v} to {city} has a delay of {s.n.en} minutes."],
            f"{de_np(s.vehicle)} nach {s.city.de} hat {s.n.de} Minuten Verspätung.")


@TOPIC.template(vehicle=VEHICLES, city=CITIES)
def cancelled(s: Slots) -> Realisation:
    return ([f"The {s.vehicle.en} to {s.city.en} has been cancelled.",
             f"The {s.vehicle.en} to {s.city.en} is cancelled."],
            f"{de_np(s.vehicle)} nach {s.city.de} fällt aus.")


@TOPIC.template(owner=(("my", "Mein"), ("our", "Unser")), city=CITIES)
def flight_cancelled(s: Slots) -> Realisation:
    return ([f"{s.owner[0]} flight to {s.city.en} has been cancelled.",
             f"{s.owner[0]} flight to {s.city.en} was cancelled."],
            f"{s.owner[1]} Flug nach {s.city.de} wurde gestrichen.")


@TOPIC.template(mode=MODES, city=CITIES, hours=hours)
def journey_takes(s: Slots) -> Realisation:
    en_time, de_time = journey_time(*s.hours)
    return ([f"{s.mode[0]} the journey to {s.city.en} takes {en_time}.",
             f"The journey to {s.city.en} takes {en_time} {s.mode[0]}."],
            f"{s.mode[1]} dauert die Fahrt nach {s.city.de} {de_time}.")


@TOPIC.template(city=CITIES)
def how_long(s: Slots) -> Realisation:
    return ([f"How long does the journey to {s.city.en} take?", f"How long is the journey to {s.city.en}?"],
            f"Wie lange dauert die Fahrt nach {s.city.de}?")


@TOPIC.template(date=date, country=COUNTRIES)
def flying_on(s: Slots) -> Realisation:
    return ([f"On {s.date.en} we are flying to {s.country.en}.", f"We are flying to {s.country.en} on {s.date.en}.",
             f"We're flying to {s.country.en} on {s.date.en}."],
            f"Am {s.date.de} fliegen wir {s.country.de_to}.")


@TOPIC.template(vehicle=VEHICLES)
def where_ticket(s: Slots) -> Realisation:
    return ([f"Where can I buy a ticket for the {s.vehicle.en}?", f"Where do I buy a ticket for the {s.vehicle.en}?"],
            f"Wo kann ich eine Fahrkarte für {de_np(s.vehicle, 'acc')} kaufen?")


@TOPIC.template(item=LOST_ITEMS, vehicle=LOCAL_VEHICLES + (find(VEHICLES, "coach"), find(RENTALS, "car")))
def left_behind(s: Slots) -> Realisation:
    en = en_np(s.item, "my")
    where = f"in the {s.vehicle.en}" if s.vehicle.en == "car" else f"on the {s.vehicle.en}"
    return ([f"I left {en} {where}.", f"I have left {en} {where}."],
            f"Ich habe {de_np(s.item, 'acc', 'mein')} {de_pp('in', s.vehicle, 'dat')} liegen lassen.")


@TOPIC.template(vehicle=CITY_VEHICLES, place=TOWN_PLACES)
def does_this_go(s: Slots) -> Realisation:
    return ([f"Does this {s.vehicle.en} go to the {s.place.en}?",
             f"Does this {s.vehicle.en} stop at the {s.place.en}?"],
            f"Fährt {de_np(s.vehicle, 'nom', 'dies')} {de_pp('zu', s.place)}?")


@TOPIC.template(vehicle=RENTALS, time=lambda rng: duration(rng, ("day", "week"), 4))
def rent(s: Slots) -> Realisation:
    en = en_np(s.vehicle, "a")
    return ([f"I would like to rent {en} for {s.time.en}.", f"I'd like to hire {en} for {s.time.en}."],
            f"Ich möchte {de_np(s.vehicle, 'acc', 'ein')} für {s.time.de('acc')} mieten.")


@TOPIC.template(city=CITIES, time=clock_time)
def we_arrive(s: Slots) -> Realisation:
    return ([f"We arrive in {s.city.en} at {s.time.en}.", f"We will arrive in {s.city.en} at {s.time.en}.",
             f"We get to {s.city.en} at {s.time.en}."],
            f"Wir kommen um {s.time.de} in {s.city.de} an.")


@TOPIC.template(city=CITIES)
def which_platform(s: Slots) -> Realisation:
    return ([f"Which platform does the train to {s.city.en} leave from?",
             f"From which platform does the train to {s.city.en} leave?"],
            f"Von welchem Gleis fährt der Zug nach {s.city.de} ab?")
