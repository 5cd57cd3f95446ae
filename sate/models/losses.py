"""Training losses: label-smoothed CE, CTC, the two distillation terms, and how they combine.

Every term is summed over the positions of an utterance and averaged over the batch, as ESPnet
does by default, so the weights below mean the same as ESPnet's ``ctc_weight``.

The ST loss, with λ = ctc_weight, α = kd.asr_weight, β = kd.mt_weight:

    L = (1 − λ)·((1 − β)·CE_ls + β·KD_mt) + λ·((1 − α)·CTC + α·KD_asr)

With α = β = 0 this is the paper's ``(1 − λ)·CE_ls + λ·CTC`` (0.7/0.3 by default); each
distillation term is interpolated with the gold-label loss on its own side.
"""

from __future__ import annotations

import math

import torch
from espnet2.asr.ctc import CTC

from sate.data.tokens import IGNORE_ID
from sate.errors import SateError


def label_smoothed_ce(logits: torch.Tensor, targets: torch.Tensor, smoothing: float) -> torch.Tensor:
    """ESPnet's label-smoothed CE: logits (B, L, V), targets (B, L) padded with -1 -> scalar.

    ESPnet's `LabelSmoothingLoss` is the KL divergence from a target distribution t (1 - s on the gold token,
    s / (V - 1) on every other) summed over tokens, divided by B. It builds t and the KL term as (tokens, V)
    tensors, twelve passes over the logits' size; in closed form, Σ_v t_v log t_v is a constant and
    Σ_v t_v log p_v needs only Σ_v log p_v and the gold log p: the same loss and gradients (to float rounding;
    the sums are taken in float64) at half the cost, which is a tenth of an MT update on the demo. Computed in
    float32 whatever the logits' dtype: under CPU autocast a bf16 log-softmax stays bf16."""
    vocab = logits.size(-1)
    logp = torch.log_softmax(logits.float(), dim=-1)
    gold = logp.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    confidence, other = 1.0 - smoothing, smoothing / (vocab - 1)
    entropy = sum(p * math.log(p) * n for p, n in ((confidence, 1), (other, vocab - 1)) if p > 0)
    per_token = entropy - other * logp.sum(-1, dtype=torch.float64) - (confidence - other) * gold.double()
    return (per_token.masked_fill(targets == IGNORE_ID, 0.0).sum() / logits.size(0)).float()


def ctc_loss(
    ctc: CTC, logits: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor, target_lengths: torch.Tensor
) -> torch.Tensor:
    """ESPnet's CTC loss on precomputed logits (B, T, V), lengths (B,); targets (B, S) padded with -1.

    Computed in float32 whatever the logits' dtype (ESPnet takes the log-softmax before casting)."""
    flat = torch.cat([row[:n] for row, n in zip(targets, target_lengths.tolist(), strict=True)])
    return ctc.loss_fn(logits.float().transpose(0, 1), flat, lengths, target_lengths)


def _kl(student: torch.Tensor, teacher: torch.Tensor, mask: torch.Tensor, topk: int) -> torch.Tensor:
    """Σ over masked positions of KL(teacher ‖ student), averaged over the batch.

    student, teacher (B, N, V) logits; mask (B, N). With topk > 0 the teacher keeps only its k
    most likely tokens, renormalised; the loss is then zero only for a student that matches this
    truncated distribution.
    """
    log_s = torch.log_softmax(student.float(), dim=-1)
    log_t = torch.log_softmax(teacher.float(), dim=-1)
    if topk > 0:
        top, index = log_t.topk(min(topk, log_t.size(-1)), dim=-1)
        log_t = torch.log_softmax(top, dim=-1)
        log_s = log_s.gather(-1, index)
    per_position = (log_t.exp() * (log_t - log_s)).sum(-1)
    return per_position.masked_fill(~mask, 0.0).sum() / student.size(0)


def kd_ctc(
    student_logits: torch.Tensor,
    student_lengths: torch.Tensor,
    teacher_logits: torch.Tensor,
    teacher_lengths: torch.Tensor,
    topk: int = 0,
) -> torch.Tensor:
    """Frame-level KL between the ASR teacher's CTC posteriors and the student's.

    Both (B, T, V_src) with lengths (B,). The frames must correspond one to one: the student's
    acoustic encoder starts from the teacher's, so a different frame count means a teacher with
    another front-end, which is a configuration error.
    """
    if student_logits.shape != teacher_logits.shape or not torch.equal(student_lengths, teacher_lengths):
        raise SateError(
            f"ASR teacher and student disagree on CTC frames: teacher {tuple(teacher_logits.shape)} "
            f"lengths {teacher_lengths.tolist()}, student {tuple(student_logits.shape)} lengths "
            f"{student_lengths.tolist()}; the teacher must have the student's acoustic front-end and vocabulary"
        )
    frames = torch.arange(student_logits.size(1), device=student_lengths.device)
    return _kl(student_logits, teacher_logits, frames[None, :] < student_lengths[:, None], topk)


def kd_decoder(
    student_logits: torch.Tensor, teacher_logits: torch.Tensor, targets: torch.Tensor, topk: int = 0
) -> torch.Tensor:
    """Token-level KL between the MT teacher's next-token distribution and the ST decoder's.

    Both (B, L, V_tgt) computed on the same gold prefix; targets (B, L) padded with -1 mark the
    positions that count.
    """
    return _kl(student_logits, teacher_logits, targets != IGNORE_ID, topk)


def combine(
    ce: torch.Tensor,
    ctc: torch.Tensor,
    ctc_weight: float,
    kd_mt: torch.Tensor | None = None,
    mt_weight: float = 0.0,
    kd_asr: torch.Tensor | None = None,
    asr_weight: float = 0.0,
) -> torch.Tensor:
    """L = (1 − λ)·((1 − β)·CE + β·KD_mt) + λ·((1 − α)·CTC + α·KD_asr); absent KD terms count as 0."""
    decoder_side = (1 - mt_weight) * ce + (mt_weight * kd_mt if kd_mt is not None else 0.0)
    ctc_side = (1 - asr_weight) * ctc + (asr_weight * kd_asr if kd_asr is not None else 0.0)
    return (1 - ctc_weight) * decoder_side + ctc_weight * ctc_side


def normalization_factor(mode: str, target_lengths: torch.Tensor) -> float:
    """What turns the per-utterance loss above into `mode`'s: 1 for "utterance", B / N for "token".

    ESPnet sums every term over an utterance and averages over the B utterances of a batch; fairseq
    (the authors' code) divides the summed loss by the N target tokens the decoder predicts, one eos
    per utterance included: N = Σ (target_lengths + 1). Adam is nearly blind to the scale of a loss,
    so the difference shows where clip-norm binds (docs/models.md, the loss section).
    """
    if mode != "token":
        return 1.0
    return len(target_lengths) / float((target_lengths + 1).sum())
