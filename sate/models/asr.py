"""ASR: acoustic encoder + CTC over the source vocabulary, optionally with an attention decoder.

It is SATE's ASR teacher and the source of the acoustic encoder and CTC head. With
``decoder.layers > 0`` it is a hybrid CTC/attention model trained with
``(1 − λ)·CE_ls + λ·CTC``; otherwise CTC alone.
"""

from __future__ import annotations

from typing import Any

import torch

from sate.models.acoustic import AcousticEncoder
from sate.models.base import Encoded, SateModel, stats, token_accuracy
from sate.models.ctc import build_ctc
from sate.models.decoder import build_decoder, teacher_forced
from sate.models.losses import combine, ctc_loss, label_smoothed_ce


class ASRModel(SateModel):
    """Speech -> source tokens. Batches need feats, feats_lengths, src, src_lengths."""

    task = "asr"

    def __init__(self, conf: dict[str, Any], src_vocab_size: int, tgt_vocab_size: int) -> None:
        super().__init__(conf, src_vocab_size, tgt_vocab_size)
        d_model = conf["d_model"]
        self.acoustic = AcousticEncoder(conf["acoustic"], d_model)
        self.ctc = build_ctc(src_vocab_size, d_model)
        self.decoder = build_decoder(conf["decoder"], src_vocab_size, d_model) if conf["decoder"]["layers"] else None

    def encode(self, feats: torch.Tensor, feats_lengths: torch.Tensor) -> Encoded:
        """feats (B, T, 80), feats_lengths (B,) -> acoustic states as memory, and CTC logits."""
        h, lengths = self.acoustic(feats, feats_lengths)
        return Encoded(h, lengths, self.ctc.ctc_lo(h), lengths)

    def forward(self, batch: dict[str, Any]) -> dict[str, Any]:
        enc = self.encode(batch["feats"], batch["feats_lengths"])
        ctc = ctc_loss(self.ctc, enc.ctc_logits, enc.ctc_lengths, batch["src"], batch["src_lengths"])
        if self.decoder is None:
            return stats(ctc, loss_ctc=ctc)
        logits, targets = teacher_forced(self.decoder, enc.memory, enc.memory_lengths,
                                         batch["src"], batch["src_lengths"])
        ce = label_smoothed_ce(logits, targets, self.conf["loss"]["label_smoothing"])
        loss = combine(ce, ctc, self.conf["loss"]["ctc_weight"])
        return stats(loss, loss_ce=ce, loss_ctc=ctc, acc=token_accuracy(logits, targets))
