"""People: first names with their grammatical gender, surnames, professions and family members.

German inflects for the person's gender where English does not (Anna ist Ärztin, Peter ist Arzt;
meine Kollegin, mein Kollege), so every name carries it and templates pick matching forms. Names are
spelled without diacritics: they are the same word on both sides.
"""

from __future__ import annotations

from sate.synth.phrasebook.words import Person, nouns, people, professions

WOMEN = people("""
Anna Maria Laura Julia Sarah Lisa Lena Sophie Emma Hannah Clara Lea Mia Nina Paula Eva Katharina Johanna
Charlotte Helena Sandra Petra Monika Sabine Claudia Susanne Martina Karin Ursula Heike Birgit Ingrid Greta
Frieda Ida Luisa Marie Amelie Emily Olivia Jessica Jennifer Rachel Rebecca Alice Grace Lucy Chloe Ella Isabel
Nadia Fatima Aisha Leila Yasmin Elena Irina Olga Natalia Carmen Lucia Chiara Giulia Ana Ines Amira Mei Yuki
Priya Anja Jana Tanja Silke Carla Vera Ruth Rosa Marta Alina Agnes Doris Beate Gisela Hilde Erika
""", female=True)

MEN = people("""
Peter Thomas Michael Andreas Stefan Markus Martin Jan Paul Lukas Jonas Felix Max David Daniel Tobias Florian
Simon Tim Ben Leon Noah Elias Finn Jakob Matthias Christian Alexander Sebastian Philipp Frank Klaus Wolfgang
Dieter Hans Karl Otto Fritz Heinz Georg Johannes Moritz Oliver Robert Richard James John George Harry Jack
Oscar Samuel William Henry Charlie Tom Adam Omar Ahmed Mehmet Ali Hassan Yusuf Ivan Igor Pavel Tomasz Luca
Marco Giovanni Carlos Pedro Diego Miguel Javier Pierre Louis Hugo Kenji Hiroshi Wei Raj Arjun Kofi Erik Lars
Sven Nils Ole Bernd Uwe Rainer Holger Dirk Jens Volker Horst Gerhard Rolf
""", female=False)

PEOPLE: tuple[Person, ...] = WOMEN + MEN

SURNAMES = tuple("""
Schneider Fischer Weber Wagner Becker Schulz Hoffmann Koch Richter Klein Wolf Neumann Schwarz Zimmermann Braun
Hartmann Lange Werner Krause Lehmann Schmitt Meier Walter Peters Berger Roth Vogel Fuchs Keller Jung Hahn
Schubert Winkler Lorenz Baumann Franke Albrecht Ludwig Winter Kraus Schumacher Kaiser Brandt Haas Sommer Graf
Dietrich Kuhn Engel Horn Bauer Schmidt Meyer Smith Brown Miller Taylor Wilson Johnson Davies Evans Roberts
Walker Wright Robinson Thompson White Hughes Edwards Green Hall Wood Harris Clarke Jackson Turner Hill Moore
Cooper Ward King Baker Carter Rossi Garcia Lopez Martinez Novak Kowalski Nowak Horvat Jensen Hansen Nielsen
Andersson Larsen Dubois Moreau Bernard Silva Santos Costa Popescu Petrov Ivanov Yilmaz Kaya Demir Tanaka
Suzuki Chen Wang Nguyen Patel Singh Khan Cohen Murphy Kelly Fernandez Bianchi Romano Schuster Seidel Busch
""".split())

PROFESSIONS = professions("""
teacher | Lehrer | -in
doctor | Arzt | Ärztin
nurse | Krankenpfleger | -in
engineer | Ingenieur | -in
architect | Architekt | -in
lawyer | Anwalt | Anwältin
cook | Koch | Köchin
baker | Bäcker | -in
waiter | Kellner | -in
journalist | Journalist | -in
photographer | Fotograf | -in
pilot | Pilot | -in
farmer | Landwirt | -in
electrician | Elektriker | -in
plumber | Installateur | -in
mechanic | Mechaniker | -in
programmer | Programmierer | -in
software developer | Softwareentwickler | -in
accountant | Buchhalter | -in
dentist | Zahnarzt | Zahnärztin
pharmacist | Apotheker | -in
police officer | Polizist | -in
firefighter | Feuerwehrmann | Feuerwehrfrau
hairdresser | Friseur | -in
student | Student | -in
scientist | Wissenschaftler | -in
musician | Musiker | -in
actor | Schauspieler | -in
painter | Maler | -in
writer | Schriftsteller | -in
translator | Übersetzer | -in
interpreter | Dolmetscher | -in
bus driver | Busfahrer | -in
taxi driver | Taxifahrer | -in
shop assistant | Verkäufer | -in
secretary | Sekretär | -in
librarian | Bibliothekar | -in
gardener | Gärtner | -in
carpenter | Schreiner | -in
butcher | Metzger | -in
vet | Tierarzt | Tierärztin
psychologist | Psychologe | Psychologin
physiotherapist | Physiotherapeut | -in
social worker | Sozialarbeiter | -in
designer | Designer | -in
professor | Professor | -in
researcher | Forscher | -in
judge | Richter | -in
tour guide | Reiseleiter | -in
flight attendant | Flugbegleiter | -in
receptionist | Rezeptionist | -in
manager | Manager | -in
consultant | Berater | -in
estate agent | Immobilienmakler | -in
optician | Optiker | -in
tailor | Schneider | -in
bookseller | Buchhändler | -in
chemist | Chemiker | -in
physicist | Physiker | -in
mathematician | Mathematiker | -in
biologist | Biologe | Biologin
historian | Historiker | -in
surgeon | Chirurg | -in
cashier | Kassierer | -in
civil servant | Beamter | Beamtin
economist | Volkswirt | -in
kindergarten teacher | Erzieher | -in
""")

# Family and acquaintances, in masculine and feminine pairs; a template picks the one matching a name.
RELATIVES_M = nouns("""
brother | m Bruder Brüder
father | m Vater Väter
son | m Sohn Söhne
husband | m Mann Männer
uncle | m Onkel =
cousin | m Cousin -s
nephew | m Neffe -n | Neffen
grandfather | m Großvater Großväter
grandson | m Enkel =
friend | m Freund -e
colleague | m Kollege -n | Kollegen
neighbour | m Nachbar -n | Nachbarn
boss | m Chef -s
brother-in-law/brothers-in-law | m Schwager Schwäger
""")

RELATIVES_F = nouns("""
sister | f Schwester -n
mother | f Mutter Mütter
daughter | f Tochter Töchter
wife/wives | f Frau -en
aunt | f Tante -n
cousin | f Cousine -n
niece | f Nichte -n
grandmother | f Großmutter Großmütter
granddaughter | f Enkelin -nen
friend | f Freundin -nen
colleague | f Kollegin -nen
neighbour | f Nachbarin -nen
boss | f Chefin -nen
sister-in-law/sisters-in-law | f Schwägerin -nen
""")

# Relatives whose English already says the sex (brother, aunt; not cousin, friend, colleague): used where no
# name or pronoun tells the translator whether German needs "Kollege" or "Kollegin".
_EITHER = {n.en for n in RELATIVES_M} & {n.en for n in RELATIVES_F}
RELATIVES_CLEAR = tuple(n for n in RELATIVES_M + RELATIVES_F if n.en not in _EITHER)
