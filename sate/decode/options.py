"""Decoding options: what the beam search does, with the values a pack stores and `--decode` changes.

Kept apart from the search itself so that a command's `--help` can list them without importing torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from sate.errors import SateError


@dataclass(frozen=True)
class DecodeOptions:
    """How to search; the defaults are SATE's (beam 5, fairseq length normalisation 1.0)."""

    beam: int = 5  # 1 = greedy
    lenpen: float = 1.0  # fairseq: final score = (logp + length_bonus * m) / n ** lenpen (module doc); 0 = none
    length_bonus: float = 0.0  # ESPnet's penalty: added per token the search chooses (eos included)
    min_len_ratio: float = 0.0  # min output length = floor(ratio x memory length)
    # max output length = ceil(ratio x memory length), at least 1. The memory is the source tokens for MT
    # and shrink ST, frames / 4 for other ST (25 a second): 1.5 lets a translation be half as long again as
    # its source, and is ample for frame memories (a 10k vocabulary needs about 0.2 there; 0.5-1 decodes
    # faster with lenpen > 0, whose stopping bound looks ahead to the max length).
    max_len_ratio: float = 1.5
    nbest: int = 1

    def __post_init__(self) -> None:
        if self.beam < 1:
            raise SateError(f"beam must be at least 1, got {self.beam}")
        if not 1 <= self.nbest <= self.beam:
            raise SateError(f"nbest must be between 1 and the beam ({self.beam}), got {self.nbest}")
        if self.max_len_ratio <= 0:
            raise SateError(f"max_len_ratio must be positive, got {self.max_len_ratio}")
        if not 0 <= self.min_len_ratio <= self.max_len_ratio:
            raise SateError(f"min_len_ratio must be between 0 and max_len_ratio ({self.max_len_ratio}), "
                            f"got {self.min_len_ratio}")
        for name in ("lenpen", "length_bonus"):
            if not math.isfinite(getattr(self, name)):
                raise SateError(f"{name} must be a finite number, got {getattr(self, name)}")


# One line per option for the commands' --help (a test checks that every option has one).
HELP = {
    "beam": "hypotheses kept per utterance (1: greedy)",
    "lenpen": "fairseq length normalisation: score = (logp + length_bonus x m) / n ** lenpen (0: none)",
    "length_bonus": "ESPnet's length bonus, added per chosen token",
    "min_len_ratio": "the shortest output, as a ratio of the memory length (source tokens, or frames / 4)",
    "max_len_ratio": "the longest output, as a ratio of the memory length",
    "nbest": "hypotheses returned per utterance",
}


def options_help() -> str:
    """The decoding options with their defaults, for a command's --help."""
    lines = ["decoding options (--decode KEY=VALUE ...; a pack's sate.yaml stores the values it decodes with):"]
    lines += [f"  {f'{f.name}={f.default}':<20} {HELP[f.name]}" for f in fields(DecodeOptions)]
    return "\n".join(lines)
