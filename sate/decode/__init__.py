"""Decoding: greedy and batched beam search, the packed-model API, translation of audio files."""
