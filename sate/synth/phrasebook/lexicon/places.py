"""Cities, countries and places in town.

English names are the usual English exonyms without diacritics (Munich, Cologne, Dusseldorf) so that
espeak-ng and flite read them as English words; German names are the German ones (München, Köln,
Düsseldorf). Countries that take an article in German carry its gender: "in die Schweiz", "in den USA".
"""

from __future__ import annotations

from sate.synth.phrasebook.words import nouns, places

CITIES = places("""
Berlin | Berlin
Hamburg | Hamburg
Munich | München
Cologne | Köln
Frankfurt | Frankfurt
Stuttgart | Stuttgart
Dusseldorf | Düsseldorf
Leipzig | Leipzig
Dortmund | Dortmund
Essen | Essen
Bremen | Bremen
Dresden | Dresden
Hanover | Hannover
Nuremberg | Nürnberg
Duisburg | Duisburg
Bochum | Bochum
Bielefeld | Bielefeld
Bonn | Bonn
Munster | Münster
Mannheim | Mannheim
Karlsruhe | Karlsruhe
Augsburg | Augsburg
Wiesbaden | Wiesbaden
Aachen | Aachen
Kiel | Kiel
Freiburg | Freiburg
Rostock | Rostock
Mainz | Mainz
Erfurt | Erfurt
Potsdam | Potsdam
Heidelberg | Heidelberg
Regensburg | Regensburg
Wurzburg | Würzburg
Ulm | Ulm
Lubeck | Lübeck
Magdeburg | Magdeburg
Kassel | Kassel
Trier | Trier
Jena | Jena
Weimar | Weimar
Constance | Konstanz
Passau | Passau
Bamberg | Bamberg
Brunswick | Braunschweig
Saarbrucken | Saarbrücken
Oldenburg | Oldenburg
Osnabruck | Osnabrück
Gottingen | Göttingen
Koblenz | Koblenz
Schwerin | Schwerin
Chemnitz | Chemnitz
Flensburg | Flensburg
Vienna | Wien
Salzburg | Salzburg
Graz | Graz
Linz | Linz
Innsbruck | Innsbruck
Zurich | Zürich
Geneva | Genf
Basel | Basel
Bern | Bern
Lucerne | Luzern
Paris | Paris
London | London
Rome | Rom
Milan | Mailand
Venice | Venedig
Florence | Florenz
Naples | Neapel
Turin | Turin
Madrid | Madrid
Barcelona | Barcelona
Seville | Sevilla
Valencia | Valencia
Lisbon | Lissabon
Porto | Porto
Amsterdam | Amsterdam
Rotterdam | Rotterdam
Brussels | Brüssel
Antwerp | Antwerpen
Copenhagen | Kopenhagen
Stockholm | Stockholm
Oslo | Oslo
Helsinki | Helsinki
Prague | Prag
Warsaw | Warschau
Krakow | Krakau
Budapest | Budapest
Ljubljana | Ljubljana
Zagreb | Zagreb
Athens | Athen
Istanbul | Istanbul
Dublin | Dublin
Edinburgh | Edinburgh
Manchester | Manchester
Lyon | Lyon
Marseille | Marseille
Nice | Nizza
Strasbourg | Straßburg
Bruges | Brügge
Gdansk | Danzig
Bucharest | Bukarest
Belgrade | Belgrad
Sofia | Sofia
Moscow | Moskau
New York | New York
Chicago | Chicago
Boston | Boston
Toronto | Toronto
Montreal | Montreal
Tokyo | Tokio
Beijing | Peking
Cairo | Kairo
Sydney | Sydney
Singapore | Singapur
Bangkok | Bangkok
Cape Town | Kapstadt
Buenos Aires | Buenos Aires
San Francisco | San Francisco
Washington | Washington
Seoul | Seoul
Havana | Havanna
Marrakesh | Marrakesch
""")

COUNTRIES = places("""
Germany | Deutschland
Austria | Österreich
Switzerland | f Schweiz
France | Frankreich
Italy | Italien
Spain | Spanien
Portugal | Portugal
the Netherlands | pl Niederlande
Belgium | Belgien
Luxembourg | Luxemburg
Denmark | Dänemark
Sweden | Schweden
Norway | Norwegen
Finland | Finnland
Poland | Polen
Czechia | Tschechien
Hungary | Ungarn
Greece | Griechenland
Turkey | f Türkei
Croatia | Kroatien
Slovenia | Slowenien
Slovakia | f Slowakei
Romania | Rumänien
Bulgaria | Bulgarien
Ireland | Irland
Scotland | Schottland
England | England
Wales | Wales
Iceland | Island
Ukraine | f Ukraine
Canada | Kanada
the United States | pl USA
Mexico | Mexiko
Brazil | Brasilien
Argentina | Argentinien
Chile | Chile
Peru | Peru
Japan | Japan
China | China
India | Indien
Australia | Australien
New Zealand | Neuseeland
Egypt | Ägypten
Morocco | Marokko
Tunisia | Tunesien
South Africa | Südafrika
Kenya | Kenia
Thailand | Thailand
Vietnam | Vietnam
Indonesia | Indonesien
South Korea | Südkorea
Cyprus | Zypern
Malta | Malta
Estonia | Estland
Latvia | Lettland
Lithuania | Litauen
Cuba | Kuba
the Philippines | pl Philippinen
Lebanon | m Libanon
Jordan | Jordanien
""")

# Buildings and places one asks the way to; all take "zu" (zum Bahnhof, zur Post).
TOWN_PLACES = nouns("""
station | m Bahnhof Bahnhöfe
main station | m Hauptbahnhof Hauptbahnhöfe
airport | m Flughafen Flughäfen
bus station | m Busbahnhof Busbahnhöfe
museum | n Museum Museen
church | f Kirche -n
cathedral | m Dom -e
town hall | n Rathaus Rathäuser
post office | f Post -en
bank | f Bank -en
pharmacy/pharmacies | f Apotheke -n
hospital | n Krankenhaus Krankenhäuser
supermarket | m Supermarkt Supermärkte
bakery/bakeries | f Bäckerei -en
butcher's/butcher's | f Metzgerei -en
market | m Markt Märkte
market square | m Marktplatz Marktplätze
library/libraries | f Bibliothek -en
school | f Schule -n
university/universities | f Universität -en
park | m Park -s
zoo | m Zoo -s
theatre | n Theater =
cinema | n Kino -s
stadium | n Stadion Stadien
swimming pool | n Schwimmbad Schwimmbäder
police station | f Polizeiwache -n
tourist office | f Touristeninformation -en
bookshop | f Buchhandlung -en
cafe | n Café -s
hotel | n Hotel -s
castle | n Schloss Schlösser
harbour | m Hafen Häfen
beach | m Strand Strände
bridge | f Brücke -n
tower | m Turm Türme
old town | f Altstadt Altstädte
car park | m Parkplatz Parkplätze
petrol station | f Tankstelle -n
underground station | f U-Bahn-Station -en
tram stop | f Straßenbahnhaltestelle -n
bus stop | f Bushaltestelle -n
taxi rank | m Taxistand Taxistände
cash machine | m Geldautomat -en | Geldautomaten
department store | n Kaufhaus Kaufhäuser
shopping centre | n Einkaufszentrum Einkaufszentren
launderette | m Waschsalon -s
opera house | n Opernhaus Opernhäuser
concert hall | f Konzerthalle -n
art gallery/art galleries | f Kunstgalerie -n
monument | n Denkmal Denkmäler
fountain | m Brunnen =
playground | m Spielplatz Spielplätze
cemetery/cemeteries | m Friedhof Friedhöfe
embassy/embassies | f Botschaft -en
consulate | n Konsulat -e
city centre | n Stadtzentrum Stadtzentren
youth hostel | f Jugendherberge -n
campsite | m Campingplatz Campingplätze
chemist's/chemist's | f Drogerie -n
flower shop | m Blumenladen Blumenläden
town square | m Platz Plätze
exhibition hall | f Messehalle -n
ferry terminal | m Fähranleger =
car hire office | f Autovermietung -en
""")

# What one turns at: "at the traffic lights" is "an der Ampel"; used with the definite article only.
LANDMARKS = nouns("""
traffic lights/traffic lights | f Ampel -n
crossroads/crossroads | f Kreuzung -en
roundabout | m Kreisverkehr -e
corner | f Ecke -n
church | f Kirche -n
petrol station | f Tankstelle -n
bakery/bakeries | f Bäckerei -en
bridge | f Brücke -n
pedestrian crossing | m Zebrastreifen =
post office | f Post -en
fountain | m Brunnen =
town hall | n Rathaus Rathäuser
supermarket | m Supermarkt Supermärkte
park | m Park -s
cinema | n Kino -s
bus stop | f Bushaltestelle -n
""")

# Things one walks across ("über die Brücke", two-way preposition with the accusative); none is a landmark.
CROSSINGS = nouns("""
square | m Platz Plätze
market square | m Marktplatz Marktplätze
road | f Straße -n
river | m Fluss Flüsse
railway line | f Bahnlinie -n
footbridge | m Steg -e
""")

