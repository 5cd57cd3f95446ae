"""Data: the offline corpus, MuST-C reading, features, vocabularies, datasets and batching."""
