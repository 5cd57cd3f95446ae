"""ASR: acoustic encoder + CTC over the source vocabulary, optionally with an attention decoder.

It is SATE's ASR teacher and the source of the acoustic encoder and CTC head. With
``decoder.layers > 0`` it is a hybrid CTC/attention model trained with
``(1 − λ)·CE_ls + λ·CTC``; otherwise CTC alone.
"""

from __future__ import annotations

import torch

from sate.models.acoustic import build_acoustic
from sate.models.base import Batch, Encoded, SateModel, Stats, cut_to_longest, stats, token_accuracy
from sate.models.config import ASRConfig
from sate.models.ctc import build_ctc, ctc_logits
from sate.models.decoder import build_decoder, teacher_forced
from sate.models.losses import combine, ctc_loss, label_smoothed_ce, normalization_factor


class ASRModel(SateModel):
    """Speech -> source tokens. Batches need feats, feats_lengths, src, src_lengths."""

    task = "asr"
    conf: ASRConfig

    def __init__(self, conf: ASRConfig, src_vocab_size: int, tgt_vocab_size: int) -> None:
        super().__init__(conf, src_vocab_size, tgt_vocab_size)
        d_model = conf.d_model
        self.acoustic = build_acoustic(conf.acoustic, d_model, ctc_layer=conf.ctc.layer)
        self.ctc = build_ctc(src_vocab_size, d_model, conf.ctc)
        self.decoder = build_decoder(conf.decoder, src_vocab_size, d_model) if conf.decoder.layers else None

    def encode(self, feats: torch.Tensor, feats_lengths: torch.Tensor) -> Encoded:
        """feats (B, T, 80) or waveforms (B, T), feats_lengths (B,) -> the top acoustic states as memory, and CTC
        logits."""
        feats, feats_lengths = cut_to_longest(feats, feats_lengths, ("feats", "feats_lengths"))
        h, ctc_input, lengths = self.acoustic.with_ctc_input(feats, feats_lengths)
        return Encoded(h, lengths, ctc_logits(self.ctc, ctc_input), lengths)

    def forward(self, batch: Batch) -> Stats:
        enc = self.encode(batch["feats"], batch["feats_lengths"])
        ctc = ctc_loss(self.ctc, enc.ctc_logits, enc.ctc_lengths, batch["src"], batch["src_lengths"])
        scale = normalization_factor(self.conf.loss.normalize, batch["src_lengths"])
        if self.decoder is None:
            return stats(scale * ctc, loss_ctc=scale * ctc)
        logits, targets = teacher_forced(self.decoder, enc.memory, enc.memory_lengths,
                                         batch["src"], batch["src_lengths"])
        ce = label_smoothed_ce(logits, targets, self.conf.loss.label_smoothing)
        loss = combine(ce, ctc, self.conf.loss.ctc_weight)
        return stats(scale * loss, loss_ce=scale * ce, loss_ctc=scale * ctc, acc=token_accuracy(logits, targets))
