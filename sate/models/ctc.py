"""The CTC head over the source vocabulary, and greedy CTC transcripts.

The head is ESPnet's `CTC` (its ``ctc_lo`` projection and loss). Index 0 is the blank, as in
our token lists (``<blank>``, ``<unk>``, pieces, ``<sos/eos>``). Two options follow the authors'
code (fairseq ``S2TTransformerEncoder.compute_ctc_logit``): dropout on the acoustic states before
the projection, drawn anew on every call, so the CTC loss and the adaptor's posteriors see
different masks; and a projection without bias. The defaults (no dropout, a bias) are ESPnet's,
whose ASR experiments therefore still load.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from sate.models.config import CTCConfig
from sate.models.espnet_blocks import CTC

BLANK = 0


def build_ctc(vocab_size: int, d_model: int, conf: CTCConfig) -> CTC:
    """ESPnet's CTC head for the `ctc` config section.

    zero_infinity, so an impossible alignment cannot poison a batch. Without bias, the projection
    starts as fairseq's does: normal with std d^-1/2.
    """
    ctc = CTC(odim=vocab_size, encoder_output_size=d_model, dropout_rate=conf.dropout, zero_infinity=True)
    if not conf.bias:
        ctc.ctc_lo = nn.Linear(d_model, vocab_size, bias=False)
        nn.init.normal_(ctc.ctc_lo.weight, std=d_model**-0.5)
    return ctc


def ctc_logits(ctc: CTC, states: torch.Tensor) -> torch.Tensor:
    """(B, T, D) -> (B, T, V): dropout (in training, a fresh mask per call), then the projection."""
    return ctc.ctc_lo(F.dropout(states, p=ctc.dropout_rate, training=ctc.training))


def draws_new_mask(ctc: CTC) -> bool:
    """Whether a second `ctc_logits` call on the same states gives other values (training with dropout)."""
    return ctc.training and ctc.dropout_rate > 0


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
