"""Small talk and weather: hobbies, languages, pets, events, weather words and time expressions."""

from __future__ import annotations

from dataclasses import dataclass

from sate.synth.phrasebook.words import adjectives, nouns, pairs


@dataclass(frozen=True)
class Hobby:
    """An activity with the German verb conjugated for ich/er,sie/wir and what follows "gern".

    "Ich fahre gern Rad": verb "fahre", then "gern", then the rest "Rad".
    """

    en: str
    de_1sg: str
    de_3sg: str
    de_1pl: str
    rest: str = ""

    def de(self, person: str) -> str:
        verb = {"1sg": self.de_1sg, "3sg": self.de_3sg, "1pl": self.de_1pl}[person]
        return f"{verb} gern {self.rest}".rstrip()


def _hobbies(table: str) -> tuple[Hobby, ...]:
    rows = [[f.strip() for f in line.split("|")] for line in table.strip().splitlines()]
    return tuple(Hobby(*row) for row in rows)


HOBBIES = _hobbies("""
swimming | schwimme | schwimmt | schwimmen
cooking | koche | kocht | kochen
reading | lese | liest | lesen
dancing | tanze | tanzt | tanzen
hiking | wandere | wandert | wandern
cycling | fahre | fährt | fahren | Rad
skiing | fahre | fährt | fahren | Ski
playing football | spiele | spielt | spielen | Fußball
playing tennis | spiele | spielt | spielen | Tennis
playing chess | spiele | spielt | spielen | Schach
playing the piano | spiele | spielt | spielen | Klavier
playing the guitar | spiele | spielt | spielen | Gitarre
playing the violin | spiele | spielt | spielen | Geige
playing cards | spiele | spielt | spielen | Karten
playing golf | spiele | spielt | spielen | Golf
playing volleyball | spiele | spielt | spielen | Volleyball
playing video games | spiele | spielt | spielen | Videospiele
painting | male | malt | malen
drawing | zeichne | zeichnet | zeichnen
singing | singe | singt | singen
travelling | reise | reist | reisen
gardening | arbeite | arbeitet | arbeiten | im Garten
taking photos | fotografiere | fotografiert | fotografieren
running | laufe | läuft | laufen
climbing | klettere | klettert | klettern
fishing | angle | angelt | angeln
sailing | segle | segelt | segeln
knitting | stricke | strickt | stricken
baking | backe | backt | backen
horse riding | reite | reitet | reiten
jogging | jogge | joggt | joggen
doing yoga | mache | macht | machen | Yoga
going to the cinema | gehe | geht | gehen | ins Kino
going to the theatre | gehe | geht | gehen | ins Theater
watching films | sehe | sieht | sehen | Filme
listening to music | höre | hört | hören | Musik
ice skating | laufe | läuft | laufen | Schlittschuh
surfing | surfe | surft | surfen
rowing | rudere | rudert | rudern
""")

LANGUAGES = pairs("""
English | Englisch
German | Deutsch
French | Französisch
Spanish | Spanisch
Italian | Italienisch
Portuguese | Portugiesisch
Dutch | Niederländisch
Polish | Polnisch
Czech | Tschechisch
Russian | Russisch
Turkish | Türkisch
Greek | Griechisch
Swedish | Schwedisch
Danish | Dänisch
Norwegian | Norwegisch
Finnish | Finnisch
Hungarian | Ungarisch
Romanian | Rumänisch
Croatian | Kroatisch
Arabic | Arabisch
Chinese | Chinesisch
Japanese | Japanisch
Korean | Koreanisch
Hindi | Hindi
Hebrew | Hebräisch
Persian | Persisch
Vietnamese | Vietnamesisch
Ukrainian | Ukrainisch
Bulgarian | Bulgarisch
Icelandic | Isländisch
Latin | Latein
""")

PETS = nouns("""
dog | m Hund -e
cat | f Katze -n
rabbit | n Kaninchen =
hamster | m Hamster =
guinea pig | n Meerschweinchen =
parrot | m Papagei -en
budgie | m Wellensittich -e
goldfish/goldfish | m Goldfisch -e
tortoise | f Schildkröte -n
horse | n Pferd -e
pony/ponies | n Pony -s
mouse/mice | f Maus Mäuse
snake | f Schlange -n
chicken | n Huhn Hühner
goat | f Ziege -n
sheep/sheep | n Schaf -e
donkey | m Esel =
duck | f Ente -n
canary/canaries | m Kanarienvogel Kanarienvögel
lizard | f Eidechse -n
""")

EVENTS = nouns("""
meeting | f Besprechung -en
appointment | m Termin -e
job interview | n Vorstellungsgespräch -e
concert | n Konzert -e
party/parties | f Party -s
exam | f Prüfung -en
course | m Kurs -e
lesson | f Unterrichtsstunde -n
workshop | m Workshop -s
conference | f Konferenz -en
wedding | f Hochzeit -en
birthday party/birthday parties | f Geburtstagsfeier -n
dinner | n Abendessen =
lecture | f Vorlesung -en
football match/football matches | n Fußballspiel -e
guided tour | f Führung -en
film | m Film -e
play | n Theaterstück -e
dentist appointment | m Zahnarzttermin -e
training session | n Training -s
seminar | n Seminar -e
exhibition | f Ausstellung -en
language course | m Sprachkurs -e
team meeting | n Teamtreffen =
""")

WEATHER = adjectives("""
sunny | sonnig
cloudy | bewölkt
windy | windig
rainy | regnerisch
foggy | neblig
cold | kalt
warm | warm
hot | heiß
cool | kühl
humid | schwül
stormy | stürmisch
frosty | frostig
mild | mild
wet | nass
dry | trocken
grey | grau
icy | eisig
""")

# "There will be ..." -> "es gibt ...": weather as a noun.
WEATHER_NOUNS = pairs("""
snow | Schnee
rain | Regen
thunderstorms | Gewitter
fog | Nebel
frost | Frost
hail | Hagel
sunshine | Sonnenschein
showers | Schauer
strong winds | starken Wind
heavy rain | starken Regen
black ice | Glatteis
""")

# Verbs for weather events ("Morgen regnet es in Hamburg"): English future, German present.
WEATHER_VERBS = pairs("""
rain | regnet
snow | schneit
thunder | donnert
hail | hagelt
""")

# Things to take along against the weather, for "Vergessen Sie Ihren Regenschirm nicht".
WEATHER_GEAR = nouns("""
umbrella | m Regenschirm -e
scarf/scarves | m Schal -s
sunglasses* | f Sonnenbrille -n
raincoat | m Regenmantel Regenmäntel
hat | m Hut Hüte
jacket | f Jacke -n
sun cream | f Sonnencreme -s
woolly hat | f Mütze -n
water bottle | f Wasserflasche -n
winter coat | m Wintermantel Wintermäntel
""")
GEAR_PLURAL = nouns("""
glove | m Handschuh -e
boot | m Stiefel =
rain boot | m Gummistiefel =
""")

SEASONS = pairs("""
spring | Frühling
summer | Sommer
autumn | Herbst
winter | Winter
""")

# Future time expressions that can open a German main clause (the verb then comes second).
FUTURE_TIMES = pairs("""
today | heute
tomorrow | morgen
the day after tomorrow | übermorgen
tonight | heute Abend
this afternoon | heute Nachmittag
tomorrow morning | morgen früh
tomorrow afternoon | morgen Nachmittag
tomorrow evening | morgen Abend
at the weekend | am Wochenende
next week | nächste Woche
this week | diese Woche
on Monday | am Montag
on Tuesday | am Dienstag
on Wednesday | am Mittwoch
on Thursday | am Donnerstag
on Friday | am Freitag
on Saturday | am Samstag
on Sunday | am Sonntag
on Monday morning | am Montagmorgen
on Friday afternoon | am Freitagnachmittag
on Saturday evening | am Samstagabend
on Sunday morning | am Sonntagmorgen
""")

PAST_TIMES = pairs("""
yesterday | gestern
last week | letzte Woche
last weekend | letztes Wochenende
last year | letztes Jahr
last month | letzten Monat
in the summer | im Sommer
at Christmas | an Weihnachten
at Easter | an Ostern
on Saturday | am Samstag
two weeks ago | vor zwei Wochen
""")

DAYPARTS = pairs("""
morning | Morgen
afternoon | Nachmittag
evening | Abend
""")
