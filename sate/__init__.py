"""sate: end-to-end speech translation with Stacked Acoustic-and-Textual Encoding."""

__version__ = "0.1.0"
