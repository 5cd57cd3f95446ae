"""Hotel: room types, things in a room, things one asks for, and the hotel's facilities."""

from __future__ import annotations

from sate.synth.phrasebook.words import nouns, pairs

ROOM_TYPES = nouns("""
single room | n Einzelzimmer =
double room | n Doppelzimmer =
twin room | n Zweibettzimmer =
family room | n Familienzimmer =
suite | f Suite -n
apartment | n Apartment -s
room | n Zimmer =
non-smoking room | n Nichtraucherzimmer =
""")

# "with a balcony" -> "mit Balkon": the idiom has no article in German.
ROOM_FEATURES = pairs("""
a balcony | Balkon
a sea view | Meerblick
a view of the mountains | Bergblick
a bath | Badewanne
a shower | Dusche
breakfast | Frühstück
half board | Halbpension
a double bed | Doppelbett
air conditioning | Klimaanlage
a kitchenette | Kochnische
""")

ROOM_ITEMS = nouns("""
heating | f Heizung -en
air conditioning | f Klimaanlage -n
shower | f Dusche -n
television | m Fernseher =
light | n Licht -er
lamp | f Lampe -n
fridge | m Kühlschrank Kühlschränke
minibar | f Minibar -s
safe | m Safe -s
hair dryer | m Föhn -e
kettle | m Wasserkocher =
toilet | f Toilette -n
window | n Fenster =
door | f Tür -en
key card | f Schlüsselkarte -n
telephone | n Telefon -e
radiator | m Heizkörper =
tap | m Wasserhahn Wasserhähne
remote control | f Fernbedienung -en
socket | f Steckdose -n
alarm clock | m Wecker =
curtain | m Vorhang Vorhänge
""")

# Things one asks reception to bring ("noch zwei Handtücher").
EXTRAS = nouns("""
towel | n Handtuch Handtücher
pillow | n Kopfkissen =
blanket | f Decke -n
coat hanger | m Kleiderbügel =
key | m Schlüssel =
bath towel | n Badetuch Badetücher
bar of soap/bars of soap | n Stück_Seife Stück_Seife
bottle of water/bottles of water | f Flasche_Wasser Flaschen_Wasser
cup | f Tasse -n
glass/glasses | n Glas Gläser
""")

FACILITIES = nouns("""
gym | m Fitnessraum Fitnessräume
swimming pool | n Schwimmbad Schwimmbäder
sauna | f Sauna Saunen
car park | m Parkplatz Parkplätze
lift | m Aufzug Aufzüge
laundry service | m Wäscheservice -s
restaurant | n Restaurant -s
bar | f Bar -s
spa | m Wellnessbereich -e
garden | m Garten Gärten
conference room | m Konferenzraum Konferenzräume
bicycle hire | m Fahrradverleih -e
shuttle bus/shuttle buses | m Shuttlebus Shuttlebusse
hairdresser | m Friseur -e
playground | m Spielplatz Spielplätze
""")

# Where breakfast is served, with the preposition each place takes ("im Speisesaal", "auf der Terrasse").
BREAKFAST_PLACES = pairs("""
in the dining room | im Speisesaal
in the restaurant | im Restaurant
in the breakfast room | im Frühstücksraum
on the terrace | auf der Terrasse
in the garden | im Garten
in the lobby | in der Lobby
on the ground floor | im Erdgeschoss
on the first floor | im ersten Stock
""")
