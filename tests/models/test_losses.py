"""Loss terms: distillation is zero for a perfect student, frames are checked, weights combine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from sate.errors import SateError
from sate.models.losses import combine, kd_ctc, kd_decoder, label_smoothed_ce, normalization_factor


def test_kd_losses_are_zero_when_student_equals_teacher() -> None:
    logits = torch.randn(2, 7, 11)
    lengths = torch.tensor([7, 4])
    assert kd_ctc(logits, lengths, logits.clone(), lengths.clone()).abs().item() < 1e-6
    targets = torch.tensor([[3, 4, 5, 6, -1, -1, -1], [1, 2, -1, -1, -1, -1, -1]])
    assert kd_decoder(logits, logits.clone(), targets).abs().item() < 1e-6
    assert kd_decoder(logits + 1.0, logits, targets).abs().item() < 1e-6  # softmax is shift-invariant


def test_kd_is_positive_and_ignores_padding() -> None:
    student, teacher = torch.randn(1, 4, 5), torch.randn(1, 4, 5)
    targets = torch.tensor([[1, 2, -1, -1]])
    loss = kd_decoder(student, teacher, targets)
    assert loss > 0
    changed = student.clone()
    changed[0, 2:] = 100.0  # padded positions
    assert torch.allclose(kd_decoder(changed, teacher, targets), loss)
    p = torch.softmax(teacher[0, :2], -1)
    expected = (p * (p.log() - torch.log_softmax(student[0, :2], -1))).sum()
    assert torch.allclose(loss, expected, atol=1e-6)


def test_topk_teacher_is_renormalised_over_its_top_tokens() -> None:
    logits = torch.randn(1, 3, 9)
    targets = torch.tensor([[1, 1, 1]])
    log_p = torch.log_softmax(logits, -1)
    top_mass = log_p.topk(3, -1).values.exp().sum(-1)
    # Equal student and teacher: the truncated target differs from the full student by -log(top mass).
    assert torch.allclose(kd_decoder(logits, logits, targets, topk=3), -top_mass.log().sum(), atol=1e-5)
    # A student that is exactly the truncated teacher scores zero.
    truncated = torch.full_like(logits, -1e4).scatter(-1, logits.topk(3, -1).indices, logits.topk(3, -1).values)
    assert kd_decoder(truncated, logits, targets, topk=3).abs().item() < 1e-5


def test_kd_ctc_refuses_different_frame_counts() -> None:
    with pytest.raises(SateError, match="disagree on CTC frames"):
        kd_ctc(torch.randn(1, 5, 4), torch.tensor([5]), torch.randn(1, 6, 4), torch.tensor([6]))
    with pytest.raises(SateError, match="disagree on CTC frames"):
        kd_ctc(torch.randn(2, 5, 4), torch.tensor([5, 3]), torch.randn(2, 5, 4), torch.tensor([5, 4]))


def test_combine_formula() -> None:
    ce, ctc, kd_mt, kd_asr = (torch.tensor(v) for v in (2.0, 10.0, 3.0, 5.0))
    assert combine(ce, ctc, 0.3).item() == pytest.approx(0.7 * 2 + 0.3 * 10)
    got = combine(ce, ctc, 0.3, kd_mt, 0.4, kd_asr, 0.5).item()
    assert got == pytest.approx(0.7 * (0.6 * 2 + 0.4 * 3) + 0.3 * (0.5 * 10 + 0.5 * 5))


def test_label_smoothing_ignores_padding() -> None:
    logits = torch.randn(2, 3, 6)
    targets = torch.tensor([[1, 2, 3], [4, -1, -1]])
    plain = label_smoothed_ce(logits, targets, 0.0)
    nll = -torch.log_softmax(logits, -1)
    expected = (nll[0, 0, 1] + nll[0, 1, 2] + nll[0, 2, 3] + nll[1, 0, 4]) / 2  # summed, per utterance
    assert torch.allclose(plain, expected, atol=1e-5)
    assert label_smoothed_ce(logits, targets, 0.1) != plain


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_label_smoothing_in_closed_form_equals_espnets_loss_and_gradients(smoothing: float) -> None:
    """The closed form gives ESPnet's LabelSmoothingLoss to float rounding, and the same gradients."""
    from espnet.nets.pytorch_backend.transformer.label_smoothing_loss import LabelSmoothingLoss

    torch.manual_seed(0)
    logits = (3 * torch.randn(4, 9, 50)).requires_grad_()
    targets = torch.randint(0, 50, (4, 9))
    targets[1, 6:], targets[3, 2:] = -1, -1
    ours = label_smoothed_ce(logits, targets, smoothing)
    (grad_ours,) = torch.autograd.grad(ours, logits)
    espnet = LabelSmoothingLoss(50, -1, smoothing, normalize_length=False)(logits, targets)
    (grad_espnet,) = torch.autograd.grad(espnet, logits)
    assert torch.allclose(ours, espnet, rtol=1e-6) and ours.item() > 0
    assert torch.allclose(grad_ours, grad_espnet, atol=1e-7)


def test_normalization_factor_counts_one_eos_per_utterance() -> None:
    lengths = torch.tensor([5, 2, 3])
    assert normalization_factor("utterance", lengths) == 1.0
    assert normalization_factor("token", lengths) == pytest.approx(3 / 13)  # B = 3, N = 6 + 3 + 4


@pytest.mark.parametrize(("task", "changes", "lengths_key"), [
    ("st", {}, "tgt_lengths"),
    ("mt", {}, "tgt_lengths"),
    ("asr", {}, "src_lengths"),  # CTC only: the transcript is the target
    ("asr", {"decoder": {"layers": 1, "heads": 2, "ffn": 32}}, "src_lengths"),
])
def test_per_token_loss_is_the_per_utterance_loss_times_b_over_n(build: Callable[..., Any], batch: dict[str, Any],
                                                                 task: str, changes: dict, lengths_key: str) -> None:
    per_utt = build(task, **changes).eval()
    per_token = build(task, **changes, loss={**per_utt.conf.loss.to_dict(), "normalize": "token"}).eval()
    lengths = batch[lengths_key]
    factor = len(lengths) / float((lengths + 1).sum())
    with torch.no_grad():
        a, b = per_utt(batch), per_token(batch)
    assert b["loss"].item() == pytest.approx(factor * a["loss"].item(), rel=1e-5)
    for term in set(a) - {"loss", "acc"}:  # the logged terms follow the loss
        assert b[term] == pytest.approx(factor * a[term], rel=1e-5)


@pytest.mark.parametrize(("task", "changes"), [("asr", {}), ("st", {}), ("st", {"adaptor": {"type": "shrink"}})])
def test_a_transcript_longer_than_its_ctc_input_counts_zero_and_stays_finite(
        build: Callable[..., Any], make_batch: Callable[..., dict[str, Any]], task: str, changes: dict) -> None:
    """The shortest stored utterance (8 frames, `sate features` pads shorter audio to it) has one encoder frame, too
    few for a transcript of 3 tokens: its CTC term is 0 (zero_infinity), not inf or NaN, and the batch trains."""
    model = build(task, **changes)
    batch = make_batch(frames=(48, 8))  # transcripts of 4 and 3 tokens
    model.train()
    out = model(batch)
    out["loss"].backward()
    assert torch.isfinite(out["loss"]) and all(torch.isfinite(p.grad).all() for p in model.parameters()
                                               if p.grad is not None)
    model.eval()
    alone = {k: v[:1] for k, v in batch.items() if isinstance(v, torch.Tensor)}
    alone["src"], alone["tgt"] = alone["src"][:, :4], alone["tgt"][:, :5]
    with torch.no_grad():
        assert model(batch)["loss_ctc"] == pytest.approx(model(alone)["loss_ctc"] / 2, rel=1e-5)


def test_teachers_follow_the_students_dtype_under_a_true_precision(build: Callable[..., Any],
                                                                   batch: dict[str, Any]) -> None:
    """Under `trainer.precision: 64-true` (or bf16-true, 16-true) Lightning converts the student and its batches, never
    the teachers, kept outside its module tree: their float32 weights met float64 (bf16) features in torch's 'Input type
    (double) and bias type (float) should be the same' at the first step (32nd hostile pass). They follow the student's
    dtype as they follow its device; the losses equal float32's."""
    kd = {"asr_weight": 0.5, "mt_weight": 0.5, "asr_teacher": "asr.pt", "mt_teacher": "mt.pt"}
    student = build("st", loss={"kd": kd}).eval()  # eval: no dropout, the same numbers in both dtypes
    student.set_teachers(asr=build("asr", seed=1), mt=build("mt", seed=2))
    single = student(batch)
    wide = student.double()
    out = wide({k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in batch.items()})
    out["loss"].backward()
    assert torch.isfinite(out["loss"]) and next(wide.teachers["asr"].model.parameters()).dtype == torch.float64
    for term in ("loss_kd_asr", "loss_kd_mt"):
        assert out[term] == pytest.approx(single[term], rel=1e-4)
