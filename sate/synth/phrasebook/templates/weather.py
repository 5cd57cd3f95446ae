"""Weather: forecasts with a fronted time phrase (the German verb comes second), temperatures, gear."""

from __future__ import annotations

import random

from sate.synth.phrasebook.grammar import Noun, de_np, en_np
from sate.synth.phrasebook.lexicon.leisure import (
    FUTURE_TIMES,
    GEAR_PLURAL,
    PAST_TIMES,
    SEASONS,
    WEATHER,
    WEATHER_GEAR,
    WEATHER_NOUNS,
    WEATHER_VERBS,
)
from sate.synth.phrasebook.lexicon.places import CITIES, COUNTRIES
from sate.synth.phrasebook.numbers import en_number
from sate.synth.phrasebook.templates.base import Realisation, Slots, Topic

TOPIC = Topic("weather")


def degrees(rng: random.Random) -> tuple[str, str]:
    """A temperature: ("minus five degrees", "minus 5 Grad"); German weather reports use digits."""
    n = rng.randint(-15, 38)
    word = "degree" if abs(n) == 1 else "degrees"
    en = f"minus {en_number(-n)} {word}" if n < 0 else f"{en_number(n)} {word}"
    return en, f"minus {-n} Grad" if n < 0 else f"{n} Grad"


def gear(rng: random.Random) -> tuple[Noun, bool]:
    """Something to take along, singular or (gloves, boots) plural."""
    return (rng.choice(GEAR_PLURAL), True) if rng.random() < 0.25 else (rng.choice(WEATHER_GEAR), False)


@TOPIC.template(when=FUTURE_TIMES, weather=WEATHER, city=CITIES)
def will_be(s: Slots) -> Realisation:
    when, city, w = s.when, s.city, s.weather
    return ([f"{when[0]} it will be {w.en} in {city.en}.", f"It will be {w.en} in {city.en} {when[0]}.",
             f"{when[0]} the weather in {city.en} will be {w.en}."],
            f"{when[1]} wird es in {city.de} {w.de}.")


@TOPIC.template(when=FUTURE_TIMES, verb=WEATHER_VERBS, city=CITIES)
def will_rain(s: Slots) -> Realisation:
    when, city, verb = s.when, s.city, s.verb
    return ([f"{when[0]} it will {verb[0]} in {city.en}.", f"It is going to {verb[0]} in {city.en} {when[0]}.",
             f"It will {verb[0]} in {city.en} {when[0]}."],
            f"{when[1]} {verb[1]} es in {city.de}.")


@TOPIC.template(when=FUTURE_TIMES, what=WEATHER_NOUNS, city=CITIES)
def there_will_be(s: Slots) -> Realisation:
    when, city, what = s.when, s.city, s.what
    return ([f"{when[0]} there will be {what[0]} in {city.en}.", f"There will be {what[0]} in {city.en} {when[0]}."],
            f"{when[1]} gibt es in {city.de} {what[1]}.")


@TOPIC.template(city=CITIES, degrees=degrees)
def temperature(s: Slots) -> Realisation:
    return ([f"It is {s.degrees[0]} in {s.city.en} today.", f"Today it is {s.degrees[0]} in {s.city.en}.",
             f"The temperature in {s.city.en} today is {s.degrees[0]}."],
            f"In {s.city.de} sind es heute {s.degrees[1]}.")


@TOPIC.template(when=FUTURE_TIMES, direction=(("rise", "steigen"), ("fall", "sinken")), degrees=degrees)
def temperatures_change(s: Slots) -> Realisation:
    when, d = s.when, s.direction
    return ([f"{when[0]} temperatures will {d[0]} to {s.degrees[0]}.",
             f"Temperatures will {d[0]} to {s.degrees[0]} {when[0]}."],
            f"{when[1]} {d[1]} die Temperaturen auf {s.degrees[1]}.")


@TOPIC.template(when=FUTURE_TIMES)
def what_weather(s: Slots) -> Realisation:
    return ([f"What will the weather be like {s.when[0]}?", f"How will the weather be {s.when[0]}?"],
            f"Wie wird das Wetter {s.when[1]}?")


@TOPIC.template(gear=gear)
def dont_forget(s: Slots) -> Realisation:
    noun, plural = s.gear
    return ([f"Don't forget {en_np(noun, 'your', plural=plural)}!",
             f"Do not forget {en_np(noun, 'your', plural=plural)}!"],
            f"Vergessen Sie {de_np(noun, 'acc', 'Ihr', plural=plural)} nicht!")


@TOPIC.template(gear=gear, weather=WEATHER)
def take_along(s: Slots) -> Realisation:
    noun, plural = s.gear
    en = en_np(noun, "your" if plural else "a", plural=plural)
    de = de_np(noun, "acc", "Ihr" if plural else "ein", plural=plural)
    return ([f"Take {en} with you, it is going to be {s.weather.en}.", f"Take {en}, it's going to be {s.weather.en}."],
            f"Nehmen Sie {de} mit, es wird {s.weather.de}.")


@TOPIC.template(past=PAST_TIMES, weather=WEATHER, city=CITIES + COUNTRIES)
def was_it(s: Slots) -> Realisation:
    past, place, w = s.past, s.city, s.weather
    return ([f"Was it {w.en} in {place.en} {past[0]}?"],
            f"War es {past[1]} {place.de_in} {w.de}?")


@TOPIC.template(past=PAST_TIMES, weather=WEATHER, city=CITIES + COUNTRIES)
def it_was(s: Slots) -> Realisation:
    past, place, w = s.past, s.city, s.weather
    return ([f"{past[0]} it was very {w.en} in {place.en}.", f"It was very {w.en} in {place.en} {past[0]}."],
            f"{past[1]} war es {place.de_in} sehr {w.de}.")


def season_weather(rng: random.Random) -> tuple[tuple[str, str], tuple[str, str]]:
    """A season and what often happens in it: rain in any season, snow in winter."""
    season = rng.choice(SEASONS)
    snow = season[0] == "winter" and rng.random() < 0.5
    return season, ("snows", "schneit") if snow else ("rains", "regnet")


@TOPIC.template(what=season_weather, city=CITIES)
def in_season(s: Slots) -> Realisation:
    (season, verb), city = s.what, s.city
    return ([f"In {season[0]} it often {verb[0]} in {city.en}.", f"It often {verb[0]} in {city.en} in {season[0]}."],
            f"Im {season[1]} {verb[1]} es oft in {city.de}.")


@TOPIC.template(when=(("", ""),) + FUTURE_TIMES, city=CITIES)
def sun_shines(s: Slots) -> Realisation:
    when, city = s.when, s.city
    if not when[0]:
        return [f"The sun is shining in {city.en}.",
                f"In {city.en} the sun is shining."], f"In {city.de} scheint die Sonne."
    return ([f"{when[0]} the sun will shine in {city.en}.", f"The sun will shine in {city.en} {when[0]}."],
            f"{when[1]} scheint in {city.de} die Sonne.")
