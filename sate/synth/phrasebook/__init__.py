"""A generated English->German corpus of everyday spoken phrases, the limited domain of the offline demo.

Templates by topic (travel, weather, shopping, directions, appointments, restaurant, hotel, health, small
talk) are filled from slot lexicons that carry German gender and number; `grammar` inflects articles,
adjectives and prepositions for the case each template asks for. `generate.phrasebook_splits` turns the
seeded stream of sentences into train/dev/tst-COMMON pairs. See docs/phrasebook.md.
"""

from sate.synth.phrasebook.generate import (
    DEFAULT_DEV_SIZE,
    DEFAULT_TEST_SIZE,
    DEFAULT_TEXT_SIZE,
    MAX_SIZES,
    english_word_types,
    phrasebook_splits,
)

__all__ = ["DEFAULT_DEV_SIZE", "DEFAULT_TEST_SIZE", "DEFAULT_TEXT_SIZE", "MAX_SIZES", "english_word_types",
           "phrasebook_splits"]
