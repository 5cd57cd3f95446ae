"""Appointments: weekdays, dates and clock times; fronted time phrases and separable verbs."""

from __future__ import annotations

import random

from sate.synth.phrasebook.grammar import de_genitive, de_np, de_pp, en_np
from sate.synth.phrasebook.lexicon.leisure import EVENTS
from sate.synth.phrasebook.lexicon.people import PEOPLE
from sate.synth.phrasebook.lexicon.places import COUNTRIES, TOWN_PLACES
from sate.synth.phrasebook.numbers import MONTHS, WEEKDAYS, Time, clock_time, date, day, duration, office_time
from sate.synth.phrasebook.templates.base import Realisation, Slots, Topic
from sate.synth.phrasebook.words import find, nouns

TOPIC = Topic("appointments")
SOCIAL_EVENTS = tuple(find(EVENTS, e) for e in ("meeting", "appointment", "lesson", "dinner", "team meeting",
                                                "training session", "job interview"))
MY_EVENTS = tuple(find(EVENTS, e) for e in ("appointment", "dentist appointment", "meeting", "lesson", "course",
                                            "job interview", "language course", "training session"))
OFFICES = nouns("""
office | n Büro -s
doctor's surgery/doctors' surgeries | f Arztpraxis Arztpraxen
reception | f Rezeption -en
ticket office | m Fahrkartenschalter =
shop | m Laden Läden
""") + tuple(p for p in TOWN_PLACES if p.de in ("Bibliothek", "Museum", "Touristeninformation", "Post", "Bank"))
DOCUMENTS = nouns("""
report | m Bericht -e
invoice | f Rechnung -en
contract | m Vertrag Verträge
application | f Bewerbung -en
form | n Formular -e
presentation | f Präsentation -en
offer | n Angebot -e
timetable | m Fahrplan Fahrpläne
list | f Liste -n
""")
PICKUP_PLACES = tuple(p for p in TOWN_PLACES if p.de in (
    "Bahnhof", "Hauptbahnhof", "Flughafen", "Busbahnhof", "Hotel", "Bushaltestelle", "Hafen", "Rathaus",
    "Museum", "Kino", "Theater", "Taxistand", "Marktplatz", "Brunnen", "Dom"))


def deadline(rng: random.Random) -> tuple[str, str]:
    """("by Friday", "bis Freitag") or ("by the third of May", "bis zum 3. Mai")."""
    if rng.random() < 0.5:
        en, de = rng.choice(WEEKDAYS)
        return f"by {en}", f"bis {de}"
    d = date(rng)
    return f"by {d.en}", f"bis zum {d.de}"


def new_day(rng: random.Random) -> tuple[str, str]:
    """("to Thursday", "auf Donnerstag") or ("to the third of May", "auf den 3. Mai")."""
    if rng.random() < 0.5:
        en, de = rng.choice(WEEKDAYS)
        return f"to {en}", f"auf {de}"
    d = date(rng)
    return f"to {d.en}", f"auf den {d.de}"


def weekday_range(rng: random.Random) -> tuple[tuple[str, str], tuple[str, str]]:
    first, last = sorted(rng.sample(range(7), 2))
    return WEEKDAYS[first], WEEKDAYS[last]


def event_times(rng: random.Random) -> tuple[Time, Time]:
    start = clock_time(rng, 8, 20)
    minutes = start.hour * 60 + start.minute + rng.choice((30, 45, 60, 90, 120, 150, 180))
    return start, Time(minutes // 60, minutes % 60, start.style)  # starts by 20:55, so ends by 23:55


@TOPIC.template(date=date)
def appointment_on_date(s: Slots) -> Realisation:
    return ([f"I would like to make an appointment for {s.date.en}.",
             f"I'd like to make an appointment for {s.date.en}."],
            f"Ich möchte einen Termin für den {s.date.de} vereinbaren.")


@TOPIC.template(day=lambda rng: day(rng, parts=False), time=office_time)
def appointment_on_day(s: Slots) -> Realisation:
    return ([f"I would like to make an appointment for {s.day.en} at {s.time.en}.",
             f"I'd like to make an appointment for {s.day.en} at {s.time.en}."],
            f"Ich möchte einen Termin für {s.day.de} um {s.time.de} vereinbaren.")


@TOPIC.template(day=lambda rng: day(rng, parts=False), time=office_time, event=SOCIAL_EVENTS,
                person=PEOPLE)
def have_meeting(s: Slots) -> Realisation:
    en_event = en_np(s.event, "a")
    return ([f"On {s.day.en} at {s.time.en} I have {en_event} with {s.person.name}.",
             f"I have {en_event} with {s.person.name} on {s.day.en} at {s.time.en}."],
            f"Am {s.day.de} um {s.time.de} habe ich {de_np(s.event, 'acc', 'ein')} mit {s.person.name}.")


@TOPIC.template(day=day)
def can_we_meet(s: Slots) -> Realisation:
    return ([f"Can we meet on {s.day.en}?", f"Could we meet on {s.day.en}?"],
            f"Können wir uns am {s.day.de} treffen?")


@TOPIC.template(event=EVENTS, to=new_day)
def moved(s: Slots) -> Realisation:
    e = s.event.en
    return ([f"The {e} has been moved {s.to[0]}.", f"The {e} has been postponed {s.to[0]}."],
            f"{de_np(s.event)} wurde {s.to[1]} verschoben.")


@TOPIC.template(event=MY_EVENTS, date=date)
def cancel(s: Slots) -> Realisation:
    e = s.event.en
    return ([f"I have to cancel my {e} on {s.date.en}.", f"I need to cancel my {e} on {s.date.en}."],
            f"Ich muss {de_np(s.event, 'acc', 'mein')} am {s.date.de} absagen.")


@TOPIC.template(day=day)
def are_you_free(s: Slots) -> Realisation:
    return ([f"Are you free on {s.day.en}?", f"Do you have time on {s.day.en}?"],
            f"Haben Sie am {s.day.de} Zeit?")


@TOPIC.template(owner=lambda rng: rng.choice(PEOPLE) if rng.random() < 0.7 else None, date=date)
def birthday(s: Slots) -> Realisation:
    en_owner = f"{s.owner.name}'s" if s.owner else "my"
    de_owner = de_genitive(s.owner.name) if s.owner else "mein"
    return ([f"{en_owner} birthday is on {s.date.en}."], f"{de_owner} Geburtstag ist am {s.date.de}.")


@TOPIC.template(weekday=WEEKDAYS, date=date)
def today_is(s: Slots) -> Realisation:
    return ([f"Today is {s.weekday[0]}, {s.date.en}."],
            f"Heute ist {s.weekday[1]}, der {s.date.de}.")


@TOPIC.template(office=OFFICES, days=weekday_range)
def open_days(s: Slots) -> Realisation:
    first, last = s.days
    return ([f"The {s.office.en} is open from {first[0]} to {last[0]}."],
            f"{de_np(s.office)} ist von {first[1]} bis {last[1]} geöffnet.")


@TOPIC.template(time=office_time)
def call_back(s: Slots) -> Realisation:
    return ([f"I will call you back at {s.time.en}.", f"I'll call you back at {s.time.en}."],
            f"Ich rufe Sie um {s.time.de} zurück.")


@TOPIC.template(person=PEOPLE, time=clock_time, place=PICKUP_PLACES)
def pick_up(s: Slots) -> Realisation:
    name, t, p = s.person.name, s.time, s.place
    return ([f"{name} will pick you up at {t.en} at the {p.en}.", f"At {t.en} {name} will pick you up at the {p.en}."],
            f"{name} holt Sie um {t.de} {de_pp('an', p, 'dat')} ab.")


@TOPIC.template(month=MONTHS, country=COUNTRIES)
def holiday_in(s: Slots) -> Realisation:
    return ([f"In {s.month[0]} we are spending our holiday in {s.country.en}.",
             f"We are spending our holiday in {s.country.en} in {s.month[0]}."],
            f"Im {s.month[1]} verbringen wir unseren Urlaub {s.country.de_in}.")


@TOPIC.template(event=EVENTS, times=event_times)
def starts_ends(s: Slots) -> Realisation:
    start, end = s.times
    return ([f"The {s.event.en} starts at {start.en} and ends at {end.en}.",
             f"The {s.event.en} begins at {start.en} and finishes at {end.en}."],
            f"{de_np(s.event)} beginnt um {start.de} und endet um {end.de}.")


@TOPIC.template(event=EVENTS, length=lambda rng: duration(rng, ("hour",), 4))
def lasts(s: Slots) -> Realisation:
    return ([f"The {s.event.en} lasts {s.length.en}.", f"The {s.event.en} takes {s.length.en}."],
            f"{de_np(s.event)} dauert {s.length.de('acc')}.")


@TOPIC.template(document=DOCUMENTS, by=deadline)
def send_by(s: Slots) -> Realisation:
    d = s.document.en
    return ([f"Please send me the {d} {s.by[0]}.", f"Please could you send me the {d} {s.by[0]}."],
            f"Bitte schicken Sie mir {de_np(s.document, 'acc')} {s.by[1]}.")


@TOPIC.template(time=lambda rng: Time(rng.randint(1, 23), 5 * rng.randrange(12), rng.choice(("digital", "past"))))
def it_is(s: Slots) -> Realisation:
    return [f"It is {s.time.en}.", f"It's {s.time.en}."], f"Es ist {s.time.de}."


@TOPIC.template(day=day)
def see_you(s: Slots) -> Realisation:
    return [f"See you on {s.day.en}!"], f"Bis {s.day.de}!"

