"""Health basics: pain, symptoms and since when, medicines and doses, allergies, doctor's appointments."""

from __future__ import annotations

import random

from sate.synth.phrasebook.grammar import Noun, de_np, de_pp, en_np
from sate.synth.phrasebook.lexicon.food import ALLERGENS
from sate.synth.phrasebook.lexicon.health import (
    BODY_PARTS,
    COMPLAINTS,
    DOSAGES,
    DOSE_TIMES,
    MEDICINES,
    PAIRED_BODY_PARTS,
    SYMPTOMS,
)
from sate.synth.phrasebook.lexicon.people import PEOPLE, RELATIVES_CLEAR, RELATIVES_F, RELATIVES_M, SURNAMES
from sate.synth.phrasebook.lexicon.places import TOWN_PLACES
from sate.synth.phrasebook.numbers import WEEKDAYS, Duration, de_count, duration, en_number, office_time
from sate.synth.phrasebook.templates.base import Realisation, Slots, Topic
from sate.synth.phrasebook.words import find, nouns, pairs

TOPIC = Topic("health")
DOSE_FORMS = nouns("""
tablet | f Tablette -n
capsule | f Kapsel -n
drop | m Tropfen =
""")
DOCTORS = pairs("""
the dentist | beim Zahnarzt
the eye doctor | beim Augenarzt
the dermatologist | beim Hautarzt
the children's doctor | beim Kinderarzt
my family doctor | bei meinem Hausarzt
the physiotherapist | beim Physiotherapeuten
the surgeon | beim Chirurgen
the vet | beim Tierarzt
""")
INJURIES = (  # English participle, German participle, body parts it fits (English)
    ("hurt", "verletzt", None),
    ("broken", "gebrochen", ("arm", "leg", "finger", "wrist", "ankle", "foot", "toe", "nose")),
    ("sprained", "verstaucht", ("ankle", "wrist", "finger")),
    ("burnt", "verbrannt", ("hand", "finger", "arm")),
)
OPEN_PLACES = tuple(p for p in TOWN_PLACES if p.de in ("Apotheke", "Drogerie")) + nouns("""
doctor's surgery/doctors' surgeries | f Arztpraxis Arztpraxen
""")
FIXED = pairs("""
Call an ambulance! | Rufen Sie einen Krankenwagen!
I need a doctor. | Ich brauche einen Arzt.
I feel sick. | Mir ist schlecht.
I feel dizzy. | Mir ist schwindelig.
I have hurt myself. | Ich habe mich verletzt.
I can't sleep. | Ich kann nicht schlafen.
Is it serious? | Ist es schlimm?
Do I need a prescription? | Brauche ich ein Rezept?
Where does it hurt? | Wo tut es weh?
Get well soon! | Gute Besserung!
""")


def body_part(rng: random.Random) -> tuple[Noun, bool]:
    part = rng.choice(BODY_PARTS)
    return part, part.de in PAIRED_BODY_PARTS and rng.random() < 0.4


def since(rng: random.Random) -> tuple[str, str]:
    """("since Monday", "seit Montag") or ("for three days", "seit drei Tagen"): German uses "seit" for both."""
    r = rng.random()
    if r < 0.25:
        en, de = rng.choice(WEEKDAYS)
        return f"since {en}", f"seit {de}"
    if r < 0.4:
        return rng.choice((("since yesterday", "seit gestern"), ("since last night", "seit gestern Abend"),
                           ("since this morning", "seit heute Morgen")))
    length = duration(rng, ("day", "week"), 5)
    return f"for {length.en}", f"seit {length.de('dat')}"


def relative(rng: random.Random) -> tuple[Noun, str]:
    """A family member and the English possessive that refers back to them."""
    female = rng.random() < 0.5
    noun = rng.choice(RELATIVES_F if female else RELATIVES_M)
    return noun, "her" if female else "his"


def injury(rng: random.Random) -> tuple[str, str, Noun]:
    en, de, fits = rng.choice(INJURIES)
    parts = BODY_PARTS if fits is None else tuple(find(BODY_PARTS, p) for p in fits)
    return en, de, rng.choice(parts)


def dose(rng: random.Random) -> tuple[Noun, int]:
    form = rng.choice(DOSE_FORMS)
    return form, rng.choice((5, 10, 15, 20)) if form.de == "Tropfen" else rng.choice((1, 1, 2, 2, 3))


@TOPIC.template(part=body_part)
def hurts(s: Slots) -> Realisation:
    noun, plural = s.part
    en = en_np(noun, "my", plural=plural)
    return ([f"{en} {'hurt' if plural else 'hurts'}.", f"{en} {'are' if plural else 'is'} hurting."],
            f"{de_np(noun, 'nom', 'mein', plural=plural)} {'tun' if plural else 'tut'} weh.")


@TOPIC.template(part=BODY_PARTS)
def pain_in(s: Slots) -> Realisation:
    return ([f"I have a pain in my {s.part.en}.", f"I've got a pain in my {s.part.en}."],
            f"Ich habe Schmerzen {de_pp('in', s.part, 'dat')}.")


@TOPIC.template(symptom=SYMPTOMS, since=since)
def have_had(s: Slots) -> Realisation:
    return ([f"I have had {s.symptom[0]} {s.since[0]}.", f"I've had {s.symptom[0]} {s.since[0]}."],
            f"Ich habe {s.since[1]} {s.symptom[1]}.")


@TOPIC.template(relative=RELATIVES_CLEAR, symptom=SYMPTOMS, since=since)
def relative_has_had(s: Slots) -> Realisation:
    noun = s.relative
    return ([f"My {noun.en} has had {s.symptom[0]} {s.since[0]}."],
            f"{de_np(noun, 'nom', 'mein')} hat {s.since[1]} {s.symptom[1]}.")


@TOPIC.template(dose=dose, dosage=DOSAGES, when=DOSE_TIMES)
def take_tablets(s: Slots) -> Realisation:
    form, n = s.dose
    en = f"{en_number(n)} {form.en if n == 1 else form.en_pl}"
    de = de_np(form, "acc", "ein") if n == 1 else f"{de_count(n)} {form.de_pl}"
    return ([f"Take {en} {s.dosage[0]} {s.when[0]}.", f"Take {en} {s.when[0]}, {s.dosage[0]}."],
            f"Nehmen Sie {s.dosage[1]} {de} {s.when[1]}.")


@TOPIC.template(who=lambda rng: rng.choice(PEOPLE) if rng.random() < 0.5 else None, allergen=ALLERGENS)
def allergic(s: Slots) -> Realisation:
    if s.who is None:
        return ([f"I am allergic to {s.allergen[0]}.", f"I'm allergic to {s.allergen[0]}."],
                f"Ich bin allergisch gegen {s.allergen[1]}.")
    return [f"{s.who.name} is allergic to {s.allergen[0]}."], f"{s.who.name} ist allergisch gegen {s.allergen[1]}."


@TOPIC.template(complaint=COMPLAINTS)
def something_for(s: Slots) -> Realisation:
    return ([f"Do you have something for {s.complaint[0]}?", f"Have you got anything for {s.complaint[0]}?"],
            f"Haben Sie etwas gegen {s.complaint[1]}?")


@TOPIC.template(doctor=lambda rng: rng.choice(DOCTORS) if rng.random() < 0.5 else (
    f"Doctor {(name := rng.choice(SURNAMES))}", f"bei Dr. {name}"), time=office_time)
def doctor_appointment(s: Slots) -> Realisation:
    return ([f"I have an appointment with {s.doctor[0]} at {s.time.en}.",
             f"I've got an appointment with {s.doctor[0]} at {s.time.en}."],
            f"Ich habe um {s.time.de} einen Termin {s.doctor[1]}.")


@TOPIC.template(medicine=MEDICINES)
def need_medicine(s: Slots) -> Realisation:
    return [f"I need {en_np(s.medicine, 'a')}."], f"Ich brauche {de_np(s.medicine, 'acc', 'ein')}."


@TOPIC.template(length=lambda rng: duration(rng, ("day",), 7) if rng.random() < 0.8 else Duration(1, "week"))
def stay_in_bed(s: Slots) -> Realisation:
    return ([f"You should stay in bed for {s.length.en}.", f"You ought to stay in bed for {s.length.en}."],
            f"Sie sollten {s.length.de('acc')} im Bett bleiben.")


@TOPIC.template(who=lambda rng: relative(rng) if rng.random() < 0.5 else None, injury=injury)
def injured(s: Slots) -> Realisation:
    en_verb, de_verb, part = s.injury
    if s.who is None:
        return ([f"I have {en_verb} my {part.en}.", f"I've {en_verb} my {part.en}."],
                f"Ich habe mir {de_np(part, 'acc')} {de_verb}.")
    noun, pronoun = s.who
    return ([f"My {noun.en} has {en_verb} {pronoun} {part.en}."],
            f"{de_np(noun, 'nom', 'mein')} hat sich {de_np(part, 'acc')} {de_verb}.")


@TOPIC.template(place=OPEN_PLACES, day=WEEKDAYS)
def open_on(s: Slots) -> Realisation:
    return ([f"Is the {s.place.en} open on {s.day[0]}?"], f"Hat {de_np(s.place)} am {s.day[1]} geöffnet?")


@TOPIC.template(phrase=FIXED)
def phrases(s: Slots) -> Realisation:
    return [s.phrase[0]], s.phrase[1]

