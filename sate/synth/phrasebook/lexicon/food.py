"""Food and drink: dishes, desserts, drinks, containers, market goods, side dishes and allergens."""

from __future__ import annotations

from sate.synth.phrasebook.words import adjectives, nouns, pairs

# Main dishes and starters, ordered with the definite article ("I'll have the schnitzel").
DISHES = nouns("""
soup of the day | f Tagessuppe -n
tomato soup | f Tomatensuppe -n
potato soup | f Kartoffelsuppe -n
onion soup | f Zwiebelsuppe -n
pea soup | f Erbsensuppe -n
chicken soup | f Hühnersuppe -n
fish soup | f Fischsuppe -n
goulash | n Gulasch -s
goulash soup | f Gulaschsuppe -n
roast pork | m Schweinebraten =
roast beef | m Rinderbraten =
schnitzel | n Schnitzel =
pork chop | n Kotelett -s
steak | n Steak -s
salmon | m Lachs -e
trout | f Forelle -n
cod | m Kabeljau -e
roast chicken | n Brathähnchen =
duck breast | f Entenbrust Entenbrüste
leg of lamb | f Lammkeule -n
bratwurst | f Bratwurst Bratwürste
curry sausage | f Currywurst Currywürste
lasagne | f Lasagne -n
pizza | f Pizza Pizzen
mushroom risotto | n Pilzrisotto -s
omelette | n Omelett -s
pancake | m Pfannkuchen =
vegetable curry/vegetable curries | n Gemüsecurry -s
chicken curry/chicken curries | n Hähnchencurry -s
lentil stew | m Linseneintopf Linseneintöpfe
beef stew | m Rindereintopf Rindereintöpfe
vegetable stew | m Gemüseeintopf Gemüseeintöpfe
burger | m Burger =
cheeseburger | m Cheeseburger =
veggie burger | m Gemüseburger =
potato salad | m Kartoffelsalat -e
tuna salad | m Thunfischsalat -e
pork knuckle | f Schweinshaxe -n
quiche | f Quiche -s
meatloaf | m Hackbraten =
spinach lasagne | f Spinatlasagne -n
vegetable soup | f Gemüsesuppe -n
shepherd's pie | m Hirtenauflauf Hirtenaufläufe
pasta bake | m Nudelauflauf Nudelaufläufe
fish fillet | n Fischfilet -s
""")

DESSERTS = nouns("""
apple strudel | m Apfelstrudel =
cheesecake | m Käsekuchen =
chocolate cake | m Schokoladenkuchen =
apple cake | m Apfelkuchen =
fruit salad | m Obstsalat -e
chocolate mousse | f Mousse_au_Chocolat -s
rice pudding | m Milchreis -e
plum cake | m Pflaumenkuchen =
Black Forest gateau/Black Forest gateaux | f Schwarzwälder_Kirschtorte Schwarzwälder_Kirschtorten
vanilla ice cream | n Vanilleeis =
chocolate ice cream | n Schokoladeneis =
strawberry tart | f Erdbeertorte -n
crumble | m Streuselkuchen =
""")

DRINKS = nouns("""
water | n Wasser
mineral water | n Mineralwasser
orange juice | m Orangensaft
apple juice | m Apfelsaft
apple spritzer | f Apfelschorle
coffee | m Kaffee
tea | m Tee
peppermint tea | m Pfefferminztee
camomile tea | m Kamillentee
cocoa | m Kakao
milk | f Milch
beer | n Bier
wheat beer | n Weizenbier
red wine | m Rotwein
white wine | m Weißwein
rose wine | m Roséwein
sparkling wine | m Sekt
lemonade | f Limonade
cola | f Cola
espresso | m Espresso
cappuccino | m Cappuccino
mulled wine | m Glühwein
cider | m Apfelwein
champagne | m Champagner
tomato juice | m Tomatensaft
""")

# Containers as measures: German keeps masculine and neuter measures in the singular ("zwei Glas
# Wasser") but feminine ones take the plural ("zwei Tassen Kaffee"); the plural column says which.
CONTAINERS = nouns("""
glass/glasses | n Glas =
cup | f Tasse -n
bottle | f Flasche -n
jug | f Karaffe -n
pot | n Kännchen =
""")

# Sold by weight: mass nouns (singular) and produce (plural), "500 grams of cheese" / "ein Kilo Äpfel".
MASS_GOODS = nouns("""
cheese | m Käse
ham | m Schinken
salami | f Salami
butter | f Butter
flour | n Mehl
sugar | m Zucker
rice | m Reis
minced meat | n Hackfleisch
smoked salmon | m Räucherlachs
spinach | m Spinat
bacon | m Speck
""")

PRODUCE = nouns("""
apple | m Apfel Äpfel
pear | f Birne -n
potato/potatoes | f Kartoffel -n
tomato/tomatoes | f Tomate -n
onion | f Zwiebel -n
carrot | f Karotte -n
cherry/cherries | f Kirsche -n
strawberry/strawberries | f Erdbeere -n
grape | f Weintraube -n
plum | f Pflaume -n
mushroom | m Pilz -e
orange | f Orange -n
lemon | f Zitrone -n
banana | f Banane -n
bean | f Bohne -n
olive | f Olive -n
walnut | f Walnuss Walnüsse
almond | f Mandel -n
prawn | f Garnele -n
apricot | f Aprikose -n
peach/peaches | m Pfirsich -e
cucumber | f Gurke -n
""")

# Sides in the dative without an article, so adjectives take strong endings ("mit frischem Brot",
# "mit grünen Bohnen"). The English column is the surface form: "pasta" is German plural "Nudeln".
SIDE_NOUNS = nouns("""
bread | n Brot
salad | m Salat -e
rice | m Reis
potatoes | f Kartoffel -n
beans | f Bohne -n
vegetables | n Gemüse
sauce | f Soße -n
pasta | f Nudel -n
chips | f Pommes_frites Pommes_frites
""")
SIDE_PLURAL = frozenset({"Kartoffel", "Bohne", "Nudel", "Pommes frites"})  # German serves these as plurals
SIDE_ADJECTIVES = adjectives("""
fresh | frisch
green | grün
mixed | gemischt
boiled | gekocht
fried | gebraten
white | weiß
steamed | gedämpft
homemade | hausgemacht
""")
SIDE_ADJ_FOR = {  # which adjectives read naturally with which side, by German noun
    "Brot": ("fresh", "homemade", "white"),
    "Salat": ("fresh", "green", "mixed"),
    "Reis": ("boiled", "fried", "white", "steamed"),
    "Kartoffel": ("boiled", "fried"),
    "Bohne": ("green", "fresh"),
    "Gemüse": ("fresh", "steamed", "mixed"),
    "Soße": ("homemade",),
    "Nudel": ("fresh", "homemade"),
    "Pommes frites": ("homemade",),
}

# Allergens and other things one can be allergic to, as German says them after "gegen" (no article).
ALLERGENS = pairs("""
nuts | Nüsse
peanuts | Erdnüsse
penicillin | Penizillin
pollen | Pollen
cats | Katzen
dogs | Hunde
bees | Bienen
wasps | Wespen
lactose | Laktose
gluten | Gluten
eggs | Eier
shellfish | Schalentiere
strawberries | Erdbeeren
house dust | Hausstaub
soya | Soja
sesame | Sesam
fish | Fisch
milk | Milch
aspirin | Aspirin
kiwis | Kiwis
celery | Sellerie
mustard | Senf
horses | Pferde
""")

# What a dish can be or taste like (predicative, so no endings).
DISH_QUALITIES = adjectives("""
delicious | köstlich
cold | kalt
too salty | zu salzig
too spicy | zu scharf
too sweet | zu süß
excellent | ausgezeichnet
still frozen | noch gefroren
overcooked | verkocht
very good | sehr gut
not hot enough | nicht heiß genug
""")

# Table things one asks for ("Könnten Sie mir noch einen Löffel bringen?").
TABLEWARE = nouns("""
spoon | m Löffel =
fork | f Gabel -n
knife/knives | n Messer =
napkin | f Serviette -n
glass/glasses | n Glas Gläser
plate | m Teller =
menu | f Speisekarte -n
straw | m Strohhalm -e
chair | m Stuhl Stühle
teaspoon | m Teelöffel =
ashtray | m Aschenbecher =
high chair | m Kinderstuhl Kinderstühle
""")
