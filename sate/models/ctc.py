"""The CTC head over the source vocabulary, and greedy CTC transcripts.

The head is ESPnet's `CTC` (its ``ctc_lo`` projection and loss). Index 0 is the blank, as in
our token lists (``<blank>``, ``<unk>``, pieces, ``<sos/eos>``).
"""

from __future__ import annotations

import torch

from sate.models.espnet_blocks import CTC

BLANK = 0


def build_ctc(vocab_size: int, d_model: int) -> CTC:
    """ESPnet's CTC head; zero_infinity so an impossible alignment cannot poison a batch."""
    return CTC(odim=vocab_size, encoder_output_size=d_model, dropout_rate=0.0, zero_infinity=True)


def ctc_greedy(logits: torch.Tensor, lengths: torch.Tensor) -> list[list[int]]:
    """Best-path transcripts: argmax per frame, merge repeats, drop blanks.

    logits (B, T, V), lengths (B,) -> one list of source token ids per utterance.
    """
    best = logits.argmax(-1).tolist()
    out = []
    for path, n in zip(best, lengths.tolist(), strict=True):
        ids, prev = [], None
        for label in path[:n]:
            if label != prev and label != BLANK:
                ids.append(label)
            prev = label
        out.append(ids)
    return out
