"""Phrasebook German, word for word: templates rendered with chosen slot fillings against hand-written German.

Each case names the phenomenon it pins down (articles by gender and case, strong/weak/mixed adjective endings,
dative/accusative and two-way prepositions, verb-second after a fronted time phrase, separable verbs, plurals,
numbers, prices, times and dates); together they cover every topic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sate.synth.phrasebook.grammar import Adj, de_genitive, de_np, de_pp, en_indefinite, en_np
from sate.synth.phrasebook.lexicon import food, health, hotel, leisure, people, places, things
from sate.synth.phrasebook.numbers import Count, Date, Day, Duration, Number, Price, Time
from sate.synth.phrasebook.templates import (
    TOPICS,
    Slots,
    appointments,
    directions,
    restaurant,
    shopping,
    smalltalk,
    travel,
    weather,
)
from sate.synth.phrasebook.templates import health as health_topic
from sate.synth.phrasebook.templates import hotel as hotel_topic
from sate.synth.phrasebook.words import find


def noun(lexicon: tuple, english: str) -> Any:
    return find(lexicon, english)


def person(name: str) -> Any:
    return next(p for p in people.PEOPLE if p.name == name)


MUNICH, HAMBURG, VIENNA = (find(places.CITIES, c) for c in ("Munich", "Hamburg", "Vienna"))
SWITZERLAND, USA, NETHERLANDS = (find(places.COUNTRIES, c) for c in ("Switzerland", "the United States",
                                                                     "the Netherlands"))
RED, BLACK, NEW, COMFORTABLE = (find(things.COLOURS + things.QUALITIES, a) for a in ("red", "black", "new",
                                                                                      "comfortable"))
SECOND = Adj("second", "zweit")

# (template, slots, one of its English phrasings, the German, the phenomena it checks)
CASES: list[tuple[Callable, dict, str, str, str]] = [
    (travel.train_departs, dict(city=MUNICH, time=Time(7, 30), platform=Number(4)),
     "The train to Munich leaves at seven thirty from platform four.",
     "Der Zug nach München fährt um 7:30 Uhr von Gleis 4 ab.", "separable verb, clock time, platform number"),
    (travel.buy_tickets, dict(n=2, ticket=(noun(travel.TICKETS, "ticket"), travel.SINGLE), city=HAMBURG),
     "I would like two single tickets to Hamburg, please.",
     "Ich möchte zwei einfache Fahrkarten nach Hamburg, bitte.", "plural, strong adjective after a numeral"),
    (travel.buy_tickets, dict(n=1, ticket=(noun(travel.TICKETS, "ticket"), travel.SINGLE), city=HAMBURG),
     "I'd like a single ticket to Hamburg, please.",
     "Ich möchte eine einfache Fahrkarte nach Hamburg, bitte.", "mixed adjective, feminine accusative"),
    (travel.left_behind, dict(item=noun(things.LOST_ITEMS, "glasses"), vehicle=noun(things.VEHICLES, "tram")),
     "I left my glasses on the tram.",
     "Ich habe meine Brille in der Straßenbahn liegen lassen.", "English plural-only noun, two-way dative"),
    (travel.left_behind, dict(item=noun(things.LOST_ITEMS, "passport"), vehicle=noun(things.VEHICLES, "bus")),
     "I have left my passport on the bus.",
     "Ich habe meinen Reisepass im Bus liegen lassen.", "possessive accusative masculine, contraction im"),
    (travel.flying_on, dict(date=Date(3, 5), country=SWITZERLAND),
     "On the third of May we are flying to Switzerland.",
     "Am 3. Mai fliegen wir in die Schweiz.", "verb second after a fronted date, two-way accusative"),
    (travel.flying_on, dict(date=Date(21, 10, "month"), country=USA),
     "We are flying to the United States on October the twenty-first.",
     "Am 21. Oktober fliegen wir in die USA.", "country with a plural article"),
    (travel.delay, dict(vehicle=noun(things.VEHICLES, "ferry"), city=find(places.CITIES, "Kiel"), n=Count(20)),
     "The ferry to Kiel is twenty minutes late.",
     "Die Fähre nach Kiel hat 20 Minuten Verspätung.", "counts above twelve in digits"),
    (weather.will_rain, dict(when=("tomorrow", "morgen"), verb=("rain", "regnet"), city=HAMBURG),
     "It will rain in Hamburg tomorrow.", "Morgen regnet es in Hamburg.", "verb second after a fronted time"),
    (weather.temperatures_change, dict(when=("at the weekend", "am Wochenende"), direction=("fall", "sinken"),
                                       degrees=("minus three degrees", "minus 3 Grad")),
     "Temperatures will fall to minus three degrees at the weekend.",
     "Am Wochenende sinken die Temperaturen auf minus 3 Grad.", "verb second, auf with accusative"),
    (weather.dont_forget, dict(gear=(noun(leisure.GEAR_PLURAL, "glove"), True)),
     "Don't forget your gloves!", "Vergessen Sie Ihre Handschuhe nicht!", "possessive Ihr, plural accusative"),
    (weather.take_along, dict(gear=(noun(leisure.WEATHER_GEAR, "umbrella"), False),
                              weather=find(leisure.WEATHER, "rainy")),
     "Take an umbrella with you, it is going to be rainy.",
     "Nehmen Sie einen Regenschirm mit, es wird regnerisch.", "separable mitnehmen, English an"),
    (shopping.looking_for, dict(item=(noun(things.CLOTHES, "sweater"), False, RED)),
     "I'm looking for a red sweater.", "Ich suche einen roten Pullover.", "mixed adjective, masculine accusative"),
    (shopping.looking_for, dict(item=(noun(things.CLOTHES, "dress"), False, NEW)),
     "I am looking for a new dress.", "Ich suche ein neues Kleid.", "mixed adjective, neuter accusative"),
    (shopping.looking_for, dict(item=(noun(things.CLOTHES, "shoe"), True, COMFORTABLE)),
     "I am looking for comfortable shoes.", "Ich suche bequeme Schuhe.", "strong adjective, plural"),
    (shopping.looking_for, dict(item=(noun(things.CLOTHES, "trousers"), False, BLACK)),
     "I am looking for a pair of black trousers.", "Ich suche eine schwarze Hose.", "a pair of = eine"),
    (shopping.how_much, dict(item=(noun(things.CLOTHES, "trousers"), False, BLACK)),
     "How much do the black trousers cost?", "Wie viel kostet die schwarze Hose?",
     "English plural agreement, German singular, weak adjective"),
    (shopping.costs, dict(item=(noun(things.CLOTHES, "shoe"), True, RED), price=Price(49, 99)),
     "The red shoes cost forty-nine euros ninety-nine.", "Die roten Schuhe kosten 49,99 Euro.",
     "weak adjective plural, price"),
    (shopping.give_back, dict(good=noun(things.GOODS, "lamp"), broken=find(things.BROKEN, "broken")),
     "I would like to return this lamp, it is broken.",
     "Ich möchte diese Lampe zurückgeben, sie ist kaputt.", "dieser, pronoun by gender, separable infinitive"),
    (shopping.give_back, dict(good=noun(things.GOODS, "toaster"), broken=find(things.BROKEN, "faulty")),
     "I would like to return this toaster, it is faulty.",
     "Ich möchte diesen Toaster zurückgeben, er ist defekt.", "dieser masculine accusative, pronoun er"),
    (shopping.price_per_kilo, dict(good=(noun(food.PRODUCE, "apple"), True), price=Price(2, 50)),
     "A kilo of apples costs two euros fifty.", "Ein Kilo Äpfel kostet 2,50 Euro.", "measure, plural, price"),
    (shopping.present_for, dict(relative=noun(people.RELATIVES_M, "colleague")),
     "I am looking for a present for my colleague.",
     "Ich suche ein Geschenk für meinen Kollegen.", "für + accusative, weak noun"),
    (directions.how_get, dict(place=noun(places.TOWN_PLACES, "station")),
     "How do I get to the station?", "Wie komme ich zum Bahnhof?", "zu + dative, contraction zum"),
    (directions.how_get, dict(place=noun(places.TOWN_PLACES, "post office")),
     "How can I get to the post office?", "Wie komme ich zur Post?", "contraction zur"),
    (directions.is_there, dict(place=noun(places.TOWN_PLACES, "cash machine")),
     "Is there a cash machine near here?",
     "Gibt es hier in der Nähe einen Geldautomaten?", "weak noun accusative"),
    (directions.nearest, dict(place=noun(places.TOWN_PLACES, "pharmacy")),
     "Where is the nearest pharmacy?", "Wo ist die nächste Apotheke?", "weak adjective nominative"),
    (directions.is_next_to, dict(places=(noun(places.TOWN_PLACES, "museum"), noun(places.TOWN_PLACES, "church")),
                                 position=("next to", "neben")),
     "The museum is next to the church.", "Das Museum ist neben der Kirche.", "two-way preposition, dative"),
    (directions.is_next_to, dict(places=(noun(places.TOWN_PLACES, "bakery"), noun(places.TOWN_PLACES, "town hall")),
                                 position=("opposite", "gegenüber")),
     "The bakery is opposite the town hall.", "Die Bäckerei ist gegenüber dem Rathaus.", "gegenüber + dative"),
    (directions.turn, dict(side=("left", "links"), at=(noun(places.LANDMARKS, "traffic lights"), SECOND)),
     "Turn left at the second traffic lights.", "Biegen Sie an der zweiten Ampel links ab.",
     "separable abbiegen, weak adjective dative"),
    (directions.turn, dict(side=("right", "rechts"), at=(noun(places.LANDMARKS, "roundabout"), None)),
     "At the roundabout, turn right.", "Biegen Sie am Kreisverkehr rechts ab.", "contraction am"),
    (directions.across_and_past, dict(crossing=noun(places.CROSSINGS, "square"),
                                      landmark=noun(places.LANDMARKS, "church")),
     "Go across the square and past the church.", "Gehen Sie über den Platz und an der Kirche vorbei.",
     "two-way accusative (motion) and dative (place), separable vorbeigehen"),
    (appointments.today_is, dict(weekday=("Monday", "Montag"), date=Date(3, 5)),
     "Today is Monday, the third of May.", "Heute ist Montag, der 3. Mai.", "date in the nominative"),
    (appointments.appointment_on_date, dict(date=Date(1, 12, "month")),
     "I would like to make an appointment for December the first.",
     "Ich möchte einen Termin für den 1. Dezember vereinbaren.", "für + accusative date"),
    (appointments.have_meeting, dict(day=Day(0), time=Time(9), event=noun(leisure.EVENTS, "meeting"),
                                     person=person("Anna")),
     "On Monday at nine o'clock I have a meeting with Anna.",
     "Am Montag um 9 Uhr habe ich eine Besprechung mit Anna.", "verb second after fronted day and time"),
    (appointments.pick_up, dict(person=person("Peter"), time=Time(19, 45, "past"),
                                place=noun(places.TOWN_PLACES, "station")),
     "Peter will pick you up at a quarter to eight in the evening at the station.",
     "Peter holt Sie um 19:45 Uhr am Bahnhof ab.", "separable abholen, evening time in 24 hours"),
    (appointments.birthday, dict(owner=person("Markus"), date=Date(2, 1)),
     "Markus's birthday is on the second of January.", "Markus' Geburtstag ist am 2. Januar.", "genitive -s'"),
    (appointments.send_by, dict(document=noun(appointments.DOCUMENTS, "invoice"),
                                by=("by the third of May", "bis zum 3. Mai")),
     "Please send me the invoice by the third of May.",
     "Bitte schicken Sie mir die Rechnung bis zum 3. Mai.", "bis zum + date"),
    (appointments.can_we_meet, dict(day=Day(4, "afternoon")),
     "Can we meet on Friday afternoon?", "Können wir uns am Freitagnachmittag treffen?", "weekday compound"),
    (restaurant.a_glass_of, dict(order=(noun(food.CONTAINERS, "glass"), noun(food.DRINKS, "water"), 2)),
     "I would like two glasses of water, please.", "Ich hätte gern zwei Glas Wasser, bitte.",
     "neuter measure stays singular"),
    (restaurant.a_glass_of, dict(order=(noun(food.CONTAINERS, "cup"), noun(food.DRINKS, "coffee"), 3)),
     "I'd like three cups of coffee, please.", "Ich hätte gern drei Tassen Kaffee, bitte.",
     "feminine measure plural"),
    (restaurant.starter_and_main, dict(starter=noun(food.DISHES, "tomato soup"), main=noun(food.DISHES, "roast pork")),
     "As a starter I'll have the tomato soup, and as a main course the roast pork.",
     "Als Vorspeise nehme ich die Tomatensuppe und als Hauptgericht den Schweinebraten.",
     "verb second after a fronted phrase, accusative"),
    (restaurant.bring_another, dict(item=noun(food.TABLEWARE, "spoon")),
     "Could you bring me another spoon, please?", "Könnten Sie mir bitte noch einen Löffel bringen?",
     "dative pronoun, masculine accusative"),
    (hotel_topic.bring_extra, dict(extra=noun(hotel.EXTRAS, "towel"), n=2, room=Number(214)),
     "Could you bring two more towels to room two hundred and fourteen, please?",
     "Könnten Sie bitte noch zwei Handtücher auf Zimmer 214 bringen?", "plural with umlaut, room number"),
    (hotel_topic.arrive_leave, dict(dates=(Date(3, 5), Date(7, 5))),
     "We arrive on the third of May and leave on the seventh of May.",
     "Wir reisen am 3. Mai an und am 7. Mai ab.", "two separable verbs, dates"),
    (hotel_topic.have_room, dict(room=(noun(hotel.ROOM_TYPES, "double room"), ("a balcony", "Balkon")),
                                 nights=Duration(3, "night")),
     "Do you have a double room with a balcony for three nights?",
     "Haben Sie ein Doppelzimmer mit Balkon für drei Nächte?", "für + accusative plural"),
    (hotel_topic.not_working, dict(item=(noun(hotel.ROOM_ITEMS, "lamp"), True)),
     "The lamps in my room do not work.", "Die Lampen in meinem Zimmer funktionieren nicht.",
     "plural agreement, dative possessive"),
    (health_topic.hurts, dict(part=(noun(health.BODY_PARTS, "foot"), True)),
     "My feet hurt.", "Meine Füße tun weh.", "plural with umlaut, verb agreement"),
    (health_topic.pain_in, dict(part=noun(health.BODY_PARTS, "shoulder")),
     "I have a pain in my shoulder.", "Ich habe Schmerzen in der Schulter.", "in + dative, article for my"),
    (health_topic.have_had, dict(symptom=("a fever", "Fieber"), since=("for three days", "seit drei Tagen")),
     "I have had a fever for three days.", "Ich habe seit drei Tagen Fieber.", "seit + dative plural"),
    (health_topic.injured, dict(who=(noun(people.RELATIVES_F, "sister"), "her"),
                                injury=("broken", "gebrochen", noun(health.BODY_PARTS, "arm"))),
     "My sister has broken her arm.", "Meine Schwester hat sich den Arm gebrochen.", "reflexive, article for her"),
    (smalltalk.is_a, dict(person=person("Anna"), job=find(people.PROFESSIONS, "doctor")),
     "Anna is a doctor.", "Anna ist Ärztin.", "feminine profession, no article"),
    (smalltalk.is_a, dict(person=person("Peter"), job=find(people.PROFESSIONS, "engineer")),
     "Peter is an engineer.", "Peter ist Ingenieur.", "masculine profession, English an"),
    (smalltalk.likes_when, dict(when=("at the weekend", "Am Wochenende"), who=("I", "like", "ich", "1sg"),
                                hobby=find(leisure.HOBBIES, "cycling")),
     "At the weekend I like cycling.", "Am Wochenende fahre ich gern Rad.", "verb second, subject after the verb"),
    (smalltalk.lived_for, dict(city=VIENNA, length=Duration(5, "year")),
     "I have lived in Vienna for five years.", "Ich wohne seit fünf Jahren in Wien.", "seit + dative plural"),
    (smalltalk.lived_for, dict(city=VIENNA, length=Duration(1, "year")),
     "I've been living in Vienna for a year.", "Ich wohne seit einem Jahr in Wien.", "seit + dative singular"),
    (smalltalk.comes_from, dict(person=person("Sarah"), country=NETHERLANDS, city=MUNICH),
     "Sarah comes from the Netherlands but lives in Munich.",
     "Sarah kommt aus den Niederlanden, wohnt aber in München.", "aus + dative plural country"),
    (smalltalk.has_pet, dict(person=person("Anna"), adj=find(smalltalk.PET_ADJECTIVES, "old"),
                             pet=noun(leisure.PETS, "horse")),
     "Anna has an old horse.", "Anna hat ein altes Pferd.", "mixed adjective, neuter accusative"),
    (smalltalk.this_is, dict(pair=(person("Peter"), noun(people.RELATIVES_M, "colleague"))),
     "This is my colleague Peter.", "Das ist mein Kollege Peter.", "weak noun nominative"),
]


@pytest.mark.parametrize(("render", "slots", "english", "german", "checks"), CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_template_german_word_for_word(render: Callable, slots: dict, english: str, german: str,
                                       checks: str) -> None:
    phrasings, got = render(Slots(slots))
    finished = [p[:1].upper() + p[1:] for p in phrasings]
    assert got[:1].upper() + got[1:] == german, checks
    assert english in finished, finished


def test_cases_cover_every_topic() -> None:
    covered = {render.__module__.rsplit(".", 1)[1] for render, *_ in CASES}
    assert covered == set(TOPICS) and len(CASES) >= 15


@pytest.mark.parametrize(("case", "det", "adj", "plural", "expected"), [
    ("nom", "def", None, False, "der Pullover"), ("acc", "def", None, False, "den Pullover"),
    ("dat", "def", None, False, "dem Pullover"), ("dat", "def", None, True, "den Pullovern"),
    ("acc", "ein", "rot", False, "einen roten Pullover"), ("nom", "ein", "rot", False, "ein roter Pullover"),
    ("dat", "mein", "rot", False, "meinem roten Pullover"), ("acc", "", "rot", True, "rote Pullover"),
    ("dat", "", "rot", True, "roten Pullovern"), ("nom", "dies", "rot", True, "diese roten Pullover"),
    ("acc", "kein", "rot", True, "keine roten Pullover"), ("acc", "unser", None, False, "unseren Pullover"),
])
def test_noun_phrase_tables(case: str, det: str, adj: str | None, plural: bool, expected: str) -> None:
    sweater = noun(things.CLOTHES, "sweater")
    assert de_np(sweater, case, det, Adj("red", adj) if adj else None, plural) == expected  # type: ignore[arg-type]


def test_strong_endings_without_article_and_contractions() -> None:
    bread, sauce, beans = (noun(food.SIDE_NOUNS, n) for n in ("bread", "sauce", "beans"))
    fresh = Adj("fresh", "frisch")
    assert de_np(bread, "dat", "", fresh) == "frischem Brot"
    assert de_np(sauce, "dat", "", Adj("homemade", "hausgemacht")) == "hausgemachter Soße"
    assert de_np(beans, "dat", "", Adj("green", "grün"), plural=True) == "grünen Bohnen"
    assert de_np(noun(things.GOODS, "lamp"), "nom", "ein", Adj("e", "teuer", "teur")) == \
        "eine teure Lampe"
    museum, bank = noun(places.TOWN_PLACES, "museum"), noun(places.TOWN_PLACES, "bank")
    assert de_pp("in", museum, "acc") == "ins Museum" and de_pp("in", museum, "dat") == "im Museum"
    assert de_pp("bis zu", bank) == "bis zur Bank" and de_pp("von", museum) == "vom Museum"
    assert de_pp("mit", museum, det="ein") == "mit einem Museum"
    with pytest.raises(ValueError, match="explicit case"):
        de_pp("in", museum)


def test_english_articles_and_genitives() -> None:
    assert [en_indefinite(w) for w in ("umbrella", "hour", "university", "one-way ticket", "egg")] == \
        ["an", "an", "a", "a", "an"]
    assert en_np(noun(things.CLOTHES, "trousers"), "this") == "these trousers"
    assert en_np(noun(things.CLOTHES, "sweater"), "a", Adj("old", "alt")) == "an old sweater"
    assert [de_genitive(n) for n in ("Anna", "Klaus", "Max", "Moritz")] == ["Annas", "Klaus'", "Max'", "Moritz'"]
    assert [(p.de_to, p.de_in, p.de_from) for p in (MUNICH, SWITZERLAND, USA)] == [
        ("nach München", "in München", "aus München"), ("in die Schweiz", "in der Schweiz", "aus der Schweiz"),
        ("in die USA", "in den USA", "aus den USA")]
