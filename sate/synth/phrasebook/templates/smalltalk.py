"""Small talk: names and origins, jobs (no article in German), family, hobbies, languages, pets."""

from __future__ import annotations

import random

from sate.synth.phrasebook.grammar import Noun, de_np, en_np
from sate.synth.phrasebook.grammar import en_indefinite as a_or_an
from sate.synth.phrasebook.lexicon.leisure import HOBBIES, LANGUAGES, PETS
from sate.synth.phrasebook.lexicon.people import (
    MEN,
    PEOPLE,
    PROFESSIONS,
    RELATIVES_CLEAR,
    RELATIVES_F,
    RELATIVES_M,
    WOMEN,
)
from sate.synth.phrasebook.lexicon.places import CITIES, COUNTRIES
from sate.synth.phrasebook.numbers import Count, duration
from sate.synth.phrasebook.templates.base import Realisation, Slots, Topic
from sate.synth.phrasebook.words import Person, adjectives, nouns, pairs

TOPIC = Topic("smalltalk")
PLACES = CITIES + COUNTRIES
HOBBY_TIMES = pairs("""
at the weekend | Am Wochenende
in the summer | Im Sommer
in winter | Im Winter
in the evening | Abends
on Sundays | Sonntags
after work | Nach der Arbeit
on holiday | Im Urlaub
""")
PET_ADJECTIVES = adjectives("""
small | klein
big | groß
old | alt
young | jung
black | schwarz
white | weiß
brown | braun
grey | grau
lazy | faul
cute | süß
clever | klug
friendly | freundlich
shy | schüchtern
fat | dick
""")
EXPERIENCES = nouns("""
weekend | n Wochenende -n
holiday | m Urlaub -e
trip | f Reise -n
flight | m Flug Flüge
journey | f Fahrt -en
day | m Tag -e
evening | m Abend -e
birthday | m Geburtstag -e
exam | f Prüfung -en
course | m Kurs -e
job interview | n Vorstellungsgespräch -e
party/parties | f Party -s
stay | m Aufenthalt -e
visit | m Besuch -e
""")
FAMILY_GROUPS = pairs("""
parents | Eltern
grandparents | Großeltern
children | Kinder
parents-in-law | Schwiegereltern
""")
FIXED = pairs("""
Nice to meet you. | Freut mich, Sie kennenzulernen.
How are you? | Wie geht es Ihnen?
I'm fine, thank you. | Mir geht es gut, danke.
Where do you come from? | Woher kommen Sie?
What do you do for a living? | Was machen Sie beruflich?
Have a nice weekend! | Schönes Wochenende!
What a pity! | Wie schade!
See you soon! | Bis bald!
""")


def subject(rng: random.Random) -> tuple[str, str, str, str]:
    """(English subject, its "like" form, German subject, German person) for hobby sentences."""
    r = rng.random()
    if r < 0.3:
        return "I", "like", "ich", "1sg"
    if r < 0.45:
        return "we", "like", "wir", "1pl"
    name = rng.choice(PEOPLE).name
    return name, "likes", name, "3sg"


def person_and_relative(rng: random.Random) -> tuple[Person, Noun]:
    female = rng.random() < 0.5
    return rng.choice(WOMEN if female else MEN), rng.choice(RELATIVES_F if female else RELATIVES_M)


def relative(rng: random.Random) -> Noun:
    """A relative whose English says the sex (German differs: "mein Kollege" / "meine Kollegin")."""
    return rng.choice(RELATIVES_CLEAR)


@TOPIC.template(person=PEOPLE, place=PLACES)
def introduce(s: Slots) -> Realisation:
    return ([f"My name is {s.person.name} and I come from {s.place.en}.",
             f"My name is {s.person.name} and I am from {s.place.en}."],
            f"Ich heiße {s.person.name} und komme {s.place.de_from}.")


@TOPIC.template(person=PEOPLE, country=COUNTRIES, city=CITIES)
def comes_from(s: Slots) -> Realisation:
    name = s.person.name
    return ([f"{name} comes from {s.country.en} but lives in {s.city.en}.",
             f"{name} is from {s.country.en} but lives in {s.city.en}."],
            f"{name} kommt {s.country.de_from}, wohnt aber in {s.city.de}.")


@TOPIC.template(person=PEOPLE, job=PROFESSIONS)
def is_a(s: Slots) -> Realisation:
    return [f"{s.person.name} is {a_or_an(s.job.en)} {s.job.en}."], f"{s.person.name} ist {s.job.de(s.person.female)}."


@TOPIC.template(person=PEOPLE, job=PROFESSIONS, city=CITIES)
def works_as(s: Slots) -> Realisation:
    job = f"{a_or_an(s.job.en)} {s.job.en}"
    return ([f"{s.person.name} works as {job} in {s.city.en}."],
            f"{s.person.name} arbeitet als {s.job.de(s.person.female)} in {s.city.de}.")


@TOPIC.template(relative=relative, job=PROFESSIONS)
def relative_is_a(s: Slots) -> Realisation:
    noun = s.relative
    return ([f"My {noun.en} is {a_or_an(s.job.en)} {s.job.en}."],
            f"{de_np(noun, 'nom', 'mein')} ist {s.job.de(noun.gender == 'f')}.")


@TOPIC.template(who=subject, hobby=HOBBIES)
def likes(s: Slots) -> Realisation:
    en_subject, like, de_subject, person = s.who
    enjoy = "enjoys" if person == "3sg" else "enjoy"
    return ([f"{en_subject} {like} {s.hobby.en}.", f"{en_subject} {enjoy} {s.hobby.en}."],
            f"{de_subject} {s.hobby.de(person)}.")


@TOPIC.template(when=HOBBY_TIMES, who=subject, hobby=HOBBIES)
def likes_when(s: Slots) -> Realisation:
    en_subject, like, de_subject, person = s.who
    verb, _, rest = s.hobby.de(person).partition(" gern")
    return ([f"{s.when[0]} {en_subject} {like} {s.hobby.en}.", f"{en_subject} {like} {s.hobby.en} {s.when[0]}."],
            f"{s.when[1]} {verb} {de_subject} gern{rest}.")


@TOPIC.template(place=PLACES)
def been_to(s: Slots) -> Realisation:
    return ([f"Have you ever been to {s.place.en}?", f"Have you been to {s.place.en} before?"],
            f"Waren Sie schon einmal {s.place.de_in}?")


@TOPIC.template(city=CITIES, length=lambda rng: duration(rng, ("year",), 30))
def lived_for(s: Slots) -> Realisation:
    return ([f"I have lived in {s.city.en} for {s.length.en}.", f"I've been living in {s.city.en} for {s.length.en}."],
            f"Ich wohne seit {s.length.de('dat')} in {s.city.de}.")


@TOPIC.template(thing=EXPERIENCES, place=(None, None) + CITIES)
def how_was(s: Slots) -> Realisation:
    where_en = f" in {s.place.en}" if s.place else ""
    where_de = f" in {s.place.de}" if s.place else ""
    return [f"How was your {s.thing.en}{where_en}?"], f"Wie war {de_np(s.thing, 'nom', 'Ihr')}{where_de}?"


@TOPIC.template(pair=person_and_relative)
def this_is(s: Slots) -> Realisation:
    person, noun = s.pair
    return ([f"This is my {noun.en} {person.name}.", f"This is my {noun.en}, {person.name}."],
            f"Das ist {de_np(noun, 'nom', 'mein')} {person.name}.")


@TOPIC.template(person=PEOPLE, languages=lambda rng: tuple(rng.sample(LANGUAGES, 2)))
def speaks(s: Slots) -> Realisation:
    first, second = s.languages
    return ([f"{s.person.name} speaks {first[0]} and {second[0]}.",
             f"{s.person.name} can speak {first[0]} and {second[0]}."],
            f"{s.person.name} spricht {first[1]} und {second[1]}.")


LANGUAGE_USES = (("Do you speak", "Sprechen Sie", "?"), ("I speak a little", "Ich spreche ein bisschen", "."),
                 ("I am learning", "Ich lerne", "."), ("We are learning", "Wir lernen", "."))


@TOPIC.template(language=LANGUAGES, kind=LANGUAGE_USES)
def speak_language(s: Slots) -> Realisation:
    en, de, mark = s.kind
    return [f"{en} {s.language[0]}{mark}"], f"{de} {s.language[1]}{mark}"


@TOPIC.template(pet=PETS, n=(1, 1, 1, 2, 2, 3))
def we_have_pets(s: Slots) -> Realisation:
    plural = s.n > 1
    en = en_np(s.pet, Count(s.n).en if plural else "a", plural=plural)
    de = de_np(s.pet, "acc", Count(s.n).de if plural else "ein", plural=plural)
    return [f"We have {en}.", f"We've got {en}."], f"Wir haben {de}."


@TOPIC.template(person=PEOPLE, adj=PET_ADJECTIVES, pet=PETS)
def has_pet(s: Slots) -> Realisation:
    return ([f"{s.person.name} has {en_np(s.pet, 'a', s.adj)}.",
             f"{s.person.name} has got {en_np(s.pet, 'a', s.adj)}."],
            f"{s.person.name} hat {de_np(s.pet, 'acc', 'ein', s.adj)}.")


@TOPIC.template(who=lambda rng: rng.choice(FAMILY_GROUPS) if rng.random() < 0.3 else relative(rng), city=PLACES)
def lives_in(s: Slots) -> Realisation:
    if isinstance(s.who, tuple):
        return [f"My {s.who[0]} live in {s.city.en}."], f"Meine {s.who[1]} wohnen {s.city.de_in}."
    return [f"My {s.who.en} lives in {s.city.en}."], f"{de_np(s.who, 'nom', 'mein')} wohnt {s.city.de_in}."


@TOPIC.template(person=PEOPLE, age=lambda rng: Count(rng.randint(2, 95)))
def age(s: Slots) -> Realisation:
    return [f"{s.person.name} is {s.age.en} years old."], f"{s.person.name} ist {s.age.de} Jahre alt."


@TOPIC.template(phrase=FIXED)
def phrases(s: Slots) -> Realisation:
    return [s.phrase[0]], s.phrase[1]

