"""Health basics: body parts, symptoms, medicines."""

from __future__ import annotations

from sate.synth.phrasebook.words import nouns, pairs

BODY_PARTS = nouns("""
head | m Kopf Köpfe
back | m Rücken =
stomach | m Bauch Bäuche
throat | m Hals Hälse
ear | n Ohr -en
eye | n Auge -n
tooth/teeth | m Zahn Zähne
knee | n Knie =
foot/feet | m Fuß Füße
leg | n Bein -e
arm | m Arm -e
hand | f Hand Hände
shoulder | f Schulter -n
neck | m Nacken =
finger | m Finger =
ankle | m Knöchel =
wrist | n Handgelenk -e
hip | f Hüfte -n
elbow | m Ellbogen =
toe | m Zeh -en
nose | f Nase -n
""")
PAIRED_BODY_PARTS = frozenset({"Ohr", "Auge", "Knie", "Fuß", "Bein", "Arm", "Hand", "Schulter", "Zeh",
                               "Finger", "Knöchel", "Hüfte", "Ellbogen", "Zahn", "Handgelenk"})

# What one "has": English with its article, German as German says it (often without one).
SYMPTOMS = pairs("""
a fever | Fieber
a temperature | Fieber
a cough | Husten
a cold | eine Erkältung
a sore throat | Halsschmerzen
a headache | Kopfschmerzen
a stomach ache | Bauchschmerzen
back pain | Rückenschmerzen
toothache | Zahnschmerzen
earache | Ohrenschmerzen
diarrhoea | Durchfall
a runny nose | Schnupfen
a rash | einen Ausschlag
chills | Schüttelfrost
heartburn | Sodbrennen
hay fever | Heuschnupfen
a migraine | Migräne
a blocked nose | eine verstopfte Nase
sunburn | einen Sonnenbrand
an insect bite | einen Insektenstich
trouble sleeping | Schlafstörungen
a sprained ankle | einen verstauchten Knöchel
a nosebleed | Nasenbluten
""")

# "Something for ..." ("etwas gegen Kopfschmerzen"): the complaint itself, no article on either side.
COMPLAINTS = pairs("""
a headache | Kopfschmerzen
a cough | Husten
a fever | Fieber
a sore throat | Halsschmerzen
diarrhoea | Durchfall
hay fever | Heuschnupfen
heartburn | Sodbrennen
insect bites | Insektenstiche
sunburn | Sonnenbrand
a cold | Erkältung
travel sickness | Reiseübelkeit
toothache | Zahnschmerzen
back pain | Rückenschmerzen
""")

MEDICINES = nouns("""
plaster | n Pflaster =
bandage | m Verband Verbände
painkiller | n Schmerzmittel =
thermometer | n Fieberthermometer =
cough syrup | m Hustensaft Hustensäfte
nasal spray | n Nasenspray -s
ointment | f Salbe -n
tablet | f Tablette -n
prescription | n Rezept -e
antibiotic | n Antibiotikum Antibiotika
throat lozenge | f Halstablette -n
sleeping pill | f Schlaftablette -n
ice pack | m Kühlakku -s
""")

# How often to take a medicine.
DOSAGES = pairs("""
once a day | einmal täglich
twice a day | zweimal täglich
three times a day | dreimal täglich
every four hours | alle vier Stunden
every six hours | alle sechs Stunden
every eight hours | alle acht Stunden
in the morning and in the evening | morgens und abends
""")

# When to take it.
DOSE_TIMES = pairs("""
before meals | vor dem Essen
after meals | nach dem Essen
with plenty of water | mit viel Wasser
before breakfast | vor dem Frühstück
after breakfast | nach dem Frühstück
before going to bed | vor dem Schlafengehen
on an empty stomach | auf nüchternen Magen
with food | zum Essen
""")
