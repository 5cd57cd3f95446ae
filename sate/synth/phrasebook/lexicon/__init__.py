"""Slot lexicons by subject, written in the compact table notation of `sate.synth.phrasebook.words`."""
