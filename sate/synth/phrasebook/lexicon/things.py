"""Things one buys, loses, rents or finds broken in a hotel room, and the adjectives that describe them."""

from __future__ import annotations

from sate.synth.phrasebook.words import adjectives, nouns

CLOTHES = nouns("""
sweater | m Pullover =
jacket | f Jacke -n
coat | m Mantel Mäntel
shirt | n Hemd -en
blouse | f Bluse -n
T-shirt | n T-Shirt -s
dress | n Kleid -er
skirt | m Rock Röcke
trousers* | f Hose -n
scarf/scarves | m Schal -s
hat | m Hut Hüte
cap | f Mütze -n
shoe | m Schuh -e
boot | m Stiefel =
sandal | f Sandale -n
tie | f Krawatte -n
belt | m Gürtel =
raincoat | m Regenmantel Regenmäntel
swimsuit | m Badeanzug Badeanzüge
suit | m Anzug Anzüge
pyjamas* | m Schlafanzug Schlafanzüge
cardigan | f Strickjacke -n
waistcoat | f Weste -n
handbag | f Handtasche -n
sunglasses* | f Sonnenbrille -n
tights* | f Strumpfhose -n
""")

# Goods in shops other than clothes.
GOODS = nouns("""
lamp | f Lampe -n
toaster | m Toaster =
kettle | m Wasserkocher =
coffee machine | f Kaffeemaschine -n
hair dryer | m Föhn -e
radio | n Radio -s
camera | f Kamera -s
mobile phone | n Handy -s
laptop | m Laptop -s
tablet | n Tablet -s
charger | n Ladegerät -e
printer | m Drucker =
keyboard | f Tastatur -en
vase | f Vase -n
mirror | m Spiegel =
armchair | m Sessel =
pillow | n Kissen =
blanket | f Decke -n
towel | n Handtuch Handtücher
candle | f Kerze -n
book | n Buch Bücher
map | f Landkarte -n
guidebook | m Reiseführer =
postcard | f Postkarte -n
newspaper | f Zeitung -en
magazine | f Zeitschrift -en
pen | m Kugelschreiber =
notebook | n Notizbuch Notizbücher
battery/batteries | f Batterie -n
light bulb | f Glühbirne -n
toothbrush | f Zahnbürste -n
bicycle | n Fahrrad Fahrräder
helmet | m Helm -e
tent | n Zelt -e
sleeping bag | m Schlafsack Schlafsäcke
football | m Fußball Fußbälle
teddy bear | m Teddybär -en | Teddybären
doll | f Puppe -n
board game | n Brettspiel -e
ring | m Ring -e
necklace | f Halskette -n
bracelet | n Armband Armbänder
perfume | n Parfüm -s
saucepan | m Kochtopf Kochtöpfe
frying pan | f Pfanne -n
backpack | m Rucksack Rucksäcke
suitcase | m Koffer =
wallet | f Geldbörse -n
watch/watches | f Armbanduhr -en
umbrella | m Regenschirm -e
alarm clock | m Wecker =
calendar | m Kalender =
puzzle | n Puzzle -s
picture frame | m Bilderrahmen =
""")

# Things people lose or leave behind.
LOST_ITEMS = nouns("""
suitcase | m Koffer =
passport | m Reisepass Reisepässe
wallet | f Geldbörse -n
key | m Schlüssel =
mobile phone | n Handy -s
ticket | f Fahrkarte -n
bag | f Tasche -n
backpack | m Rucksack Rucksäcke
glasses* | f Brille -n
umbrella | m Regenschirm -e
jacket | f Jacke -n
camera | f Kamera -s
identity card | m Personalausweis -e
credit card | f Kreditkarte -n
laptop | m Laptop -s
charger | n Ladegerät -e
watch/watches | f Armbanduhr -en
scarf/scarves | m Schal -s
hat | m Hut Hüte
glove | m Handschuh -e
book | n Buch Bücher
driving licence | m Führerschein -e
boarding pass/boarding passes | f Bordkarte -n
coat | m Mantel Mäntel
""")

# Colours and qualities used attributively with inflection ("einen dunkelblauen Mantel").
COLOURS = adjectives("""
red | rot
blue | blau
green | grün
yellow | gelb
black | schwarz
white | weiß
grey | grau
brown | braun
dark blue | dunkelblau
light blue | hellblau
dark green | dunkelgrün
light grey | hellgrau
dark red | dunkelrot
colourful | bunt
striped | gestreift
checked | kariert
""")

QUALITIES = adjectives("""
cheap | billig
expensive | teuer | teur
new | neu
old | alt
warm | warm
light | leicht
comfortable | bequem
elegant | elegant
simple | einfach
waterproof | wasserdicht
small | klein
large | groß
modern | modern
practical | praktisch
""")

# Predicative complaints in a shop ("Die Hose ist zu eng").
FIT = adjectives("""
too big | zu groß
too small | zu klein
too long | zu lang
too short | zu kurz
too tight | zu eng
too wide | zu weit
too expensive | zu teuer
too heavy | zu schwer
too dark | zu dunkel
""")

# Colours as German nouns after "in" ("Haben Sie das auch in Blau?").
COLOUR_NOUNS = tuple((adj.en, adj.de.capitalize()) for adj in COLOURS[:13])

BROKEN = adjectives("""
broken | kaputt
damaged | beschädigt
faulty | defekt
""")

# Vehicles to rent, and public transport.
RENTALS = nouns("""
car | n Auto -s
bicycle | n Fahrrad Fahrräder
electric bike | n E-Bike -s
scooter | m Roller =
van | m Transporter =
small car | m Kleinwagen =
motorbike | n Motorrad Motorräder
canoe | n Kanu -s
boat | n Boot -e
camper van | n Wohnmobil -e
""")

VEHICLES = nouns("""
train | m Zug Züge
bus/buses | m Bus Busse
tram | f Straßenbahn -en
ferry/ferries | f Fähre -n
night train | m Nachtzug Nachtzüge
regional train | m Regionalzug Regionalzüge
coach/coaches | m Fernbus Fernbusse
boat | n Schiff -e
underground train | f U-Bahn -en
express train | m Schnellzug Schnellzüge
""")
