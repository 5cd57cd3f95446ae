"""SATE speech translation: acoustic encoder -> CTC -> adaptor -> textual encoder -> decoder.

The acoustic encoder and CTC head come from an ASR model, the source embedding, textual
encoder and decoder from an MT model (`sate.models.pretrained`). Optional multi-teacher distillation: a
frozen ASR teacher supervises the CTC posteriors frame by frame, a frozen MT teacher fed the
gold transcript supervises the decoder token by token (`sate.models.losses`).

With ``adaptor.type: none`` and ``textual.layers: 0`` the same class is the conventional E2E ST
baseline (ESPnet/fairseq): acoustic encoder with CTC, then the decoder. It then owns no adaptor,
source embedding or textual encoder (DDP refuses parameters that get no gradient).

With a Marian textual side (``textual.type: hf_marian``), CTC runs over a subset of Marian's source pieces
(`sate.data.marian_vocab`) and the buffer ``marian_ids`` maps each CTC id to its Marian id (``<blank>`` to pad,
whose embedding opus-mt keeps at zero), filled from the token lists when the hub weights load
(`sate.models.hub.load`). The soft branch's E is then Marian's embedding of those ids: a copy of its rows
(``adaptor.embedding: source``) or the decoder's own embedding indexed through the map (``decoder``). The
textual input ends with ``</s>``'s embedding, as every source Marian was trained on does.
"""

from __future__ import annotations

import torch

from sate.errors import SateError
from sate.models.acoustic import build_acoustic
from sate.models.adaptor import build_adaptor
from sate.models.base import Batch, Encoded, SateModel, Stats, cut_to_longest, stats, token_accuracy
from sate.models.config import STConfig
from sate.models.ctc import build_ctc, ctc_logits, draws_new_mask
from sate.models.decoder import build_decoder, decoder_embedding, teacher_forced
from sate.models.losses import combine, ctc_loss, kd_ctc, kd_decoder, label_smoothed_ce, normalization_factor
from sate.models.mt import build_source_embedding, marian_hub
from sate.models.textual import TextualEncoder


def append_at_lengths(x: torch.Tensor, lengths: torch.Tensor,
                      vector: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T, D), (B,), (D,) -> (B, T + 1, D) with `vector` at position lengths[b] of each row, and lengths + 1."""
    out = torch.cat([x, x.new_zeros(x.size(0), 1, x.size(2))], dim=1)
    at = torch.arange(out.size(1), device=x.device)[None, :] == lengths[:, None]
    return torch.where(at[..., None], vector.to(x.dtype), out), lengths + 1


class FrozenTeacher:
    """A teacher kept outside the student's module tree.

    Not being an `nn.Module` attribute, it is absent from the student's ``state_dict`` and
    ``parameters()`` (so checkpoints and the optimiser never see it) and ``student.train()``
    cannot switch it out of eval mode. It follows the student to its device on first use.
    """

    def __init__(self, model: SateModel) -> None:
        self.model = model.eval().requires_grad_(False)

    def on(self, device: torch.device, dtype: torch.dtype) -> SateModel:
        """The teacher on the student's device, its floating weights in the student's dtype: under a `true`
        precision (`trainer.precision: bf16-true`, `16-true`, `64-true`) Lightning converts the student and its
        batches, never the teacher, whose float32 weights met bf16 features in torch's 'Input type (c10::BFloat16)
        and bias type (float) should be the same' at the first step (32nd hostile pass)."""
        first = next(self.model.parameters())
        if first.device != device or first.dtype != dtype:
            self.model.to(device=device, dtype=dtype)
        return self.model


class STModel(SateModel):
    """Speech -> target tokens. Batches need feats, feats_lengths, src, src_lengths, tgt, tgt_lengths."""

    task = "st"
    conf: STConfig

    def __init__(self, conf: STConfig, src_vocab_size: int, tgt_vocab_size: int) -> None:
        super().__init__(conf, src_vocab_size, tgt_vocab_size)
        d_model = conf.d_model
        self.acoustic = build_acoustic(conf.acoustic, d_model, ctc_layer=conf.ctc.layer)
        self.ctc = build_ctc(src_vocab_size, d_model, conf.ctc)
        self.adaptor = build_adaptor(conf.adaptor, d_model)
        # E_src, built only where it is used (the soft branch, the MT text batches): an unused weight would upset DDP.
        embedding = conf.has_source_embedding
        self.src_embed = build_source_embedding(src_vocab_size, d_model) if embedding else None
        self.textual = TextualEncoder(conf.textual, d_model) if conf.textual.layers else None
        self.marian = marian_hub(conf)
        self.decoder = build_decoder(conf.decoder, tgt_vocab_size, d_model, self.marian)
        if self.marian is not None:
            self.register_buffer("marian_ids", torch.zeros(src_vocab_size, dtype=torch.long))
        self.soft = conf.adaptor.kind.soft
        if self.soft and conf.adaptor.embedding == "decoder" and src_vocab_size != tgt_vocab_size \
                and self.marian is None:
            raise SateError(f"model config: adaptor.embedding decoder multiplies CTC posteriors over the "
                            f"{src_vocab_size} source tokens by the decoder's embedding of {tgt_vocab_size} target "
                            "tokens; it needs one joint vocabulary (sate vocab --joint SIZE)")
        self.teachers: dict[str, FrozenTeacher] = {}

    def set_teachers(self, asr: SateModel | None = None, mt: SateModel | None = None) -> None:
        """Attach frozen teachers (`sate.models.pretrained.load_teachers` reads them from model files)."""
        self.teachers = {name: FrozenTeacher(m) for name, m in (("asr", asr), ("mt", mt)) if m is not None}

    def encode(self, feats: torch.Tensor, feats_lengths: torch.Tensor) -> Encoded:
        """feats (B, T, 80), feats_lengths (B,) -> memory for the decoder, and CTC logits.

        The memory is the textual encoder's output, or the acoustic states for the baseline. The CTC
        logits are those of the loss; with CTC dropout in training, the adaptor's posteriors come
        from a second projection with its own dropout mask, as in the authors' code.
        """
        feats, feats_lengths = cut_to_longest(feats, feats_lengths, ("feats", "feats_lengths"))
        h, ctc_input, lengths = self.acoustic.with_ctc_input(feats, feats_lengths)
        logits = ctc_logits(self.ctc, ctc_input)
        if self.textual is None:  # adaptor.type none, textual.layers 0 (the config allows no other mix)
            return Encoded(h, lengths, logits, lengths)
        adaptor_logits = ctc_logits(self.ctc, ctc_input) if self.soft and draws_new_mask(self.ctc) else logits
        adapted, adapted_lengths = self.adaptor(h, lengths, adaptor_logits, self._soft_embedding())
        if self.marian is not None:
            end = decoder_embedding(self.decoder)[self.marian["eos_token_id"]]
            adapted, adapted_lengths = append_at_lengths(adapted, adapted_lengths, end)
        memory, memory_lengths = self.textual(adapted, adapted_lengths)
        return Encoded(memory, memory_lengths, logits, lengths)

    def _soft_embedding(self) -> torch.Tensor | None:
        """E of the soft branch (V, D): the source embedding, the decoder's (adaptor.embedding), or None."""
        if not self.soft:
            return None
        if self.conf.adaptor.uses_source_embedding:
            assert self.src_embed is not None
            return self.src_embed.weight
        embedding = decoder_embedding(self.decoder)
        return embedding[self.marian_ids] if self.marian is not None else embedding

    def encode_text(self, src: torch.Tensor, src_lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The MT model's path, for the text batches of loss.mt_text_weight: src (B, S) padded with -1, (B,) ->
        the textual encoder's memory (B, S', D), lengths (B,), S' the longest length."""
        assert self.src_embed is not None and self.textual is not None
        src, src_lengths = cut_to_longest(src, src_lengths, ("src", "src_lengths"))
        return self.textual(self.src_embed(src.clamp(min=0)), src_lengths)

    def _text_loss(self, text: Batch) -> torch.Tensor:
        """CE_mt of an MT text batch (src, src_lengths, tgt, tgt_lengths), normalised as the ST loss is."""
        memory, lengths = self.encode_text(text["src"], text["src_lengths"])
        logits, targets = teacher_forced(self.decoder, memory, lengths, text["tgt"], text["tgt_lengths"])
        ce = label_smoothed_ce(logits, targets, self.conf.loss.label_smoothing)
        return normalization_factor(self.conf.loss.normalize, text["tgt_lengths"]) * ce

    def _teacher(self, name: str, device: torch.device) -> SateModel:
        if name not in self.teachers:
            raise SateError(f"loss.kd.{name}_weight is set but no {name.upper()} teacher is attached; "
                            "call sate.models.pretrained.load_teachers(model, ...) after building the model")
        return self.teachers[name].on(device, self.ctc.ctc_lo.weight.dtype)

    def forward(self, batch: Batch) -> Stats:
        """The ST loss of a speech batch; with loss.mt_text_weight μ > 0 and an MT text batch under ``mt`` (training
        batches only, `sate.data.text_mix`), plus μ·CE_mt, whose gradient reaches no acoustic part."""
        loss_conf = self.conf.loss
        kd = loss_conf.kd
        feats, feats_lengths = batch["feats"], batch["feats_lengths"]
        src, src_lengths, tgt, tgt_lengths = batch["src"], batch["src_lengths"], batch["tgt"], batch["tgt_lengths"]
        enc = self.encode(feats, feats_lengths)
        logits, targets = teacher_forced(self.decoder, enc.memory, enc.memory_lengths, tgt, tgt_lengths)
        ce = label_smoothed_ce(logits, targets, loss_conf.label_smoothing)
        ctc = ctc_loss(self.ctc, enc.ctc_logits, enc.ctc_lengths, src, src_lengths)
        kd_asr = kd_mt = None
        if kd.asr_weight > 0:
            teacher = self._teacher("asr", feats.device)
            with torch.no_grad():
                t_enc = teacher.encode(feats, feats_lengths)
            kd_asr = kd_ctc(enc.ctc_logits, enc.ctc_lengths, t_enc.ctc_logits, t_enc.ctc_lengths, kd.topk)
        if kd.mt_weight > 0:
            teacher = self._teacher("mt", feats.device)
            with torch.no_grad():
                t_memory, t_lengths = teacher.encode_text(src, src_lengths)
                t_logits, _ = teacher_forced(teacher.decoder, t_memory, t_lengths, tgt, tgt_lengths)
            kd_mt = kd_decoder(logits, t_logits, targets, kd.topk)
        loss = combine(ce, ctc, loss_conf.ctc_weight, kd_mt, kd.mt_weight, kd_asr, kd.asr_weight)
        scale = normalization_factor(loss_conf.normalize, tgt_lengths)
        terms = {"loss_ce": ce, "loss_ctc": ctc, "loss_kd_asr": kd_asr, "loss_kd_mt": kd_mt}
        out = stats(scale * loss, **{k: scale * v for k, v in terms.items() if v is not None},
                    acc=token_accuracy(logits, targets))
        if loss_conf.mt_text_weight > 0 and "mt" in batch:
            text: Batch = batch["mt"]  # type: ignore[assignment]  # a batch inside the batch
            mt = self._text_loss(text)
            out["loss"] = out["loss"] + loss_conf.mt_text_weight * mt
            out["loss_mt"] = float(mt.detach())
        return out
