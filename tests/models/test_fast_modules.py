"""The faster stand-ins for ESPnet's parameter-free modules: same statistics, same results, same weights."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch
from torch import nn

from sate.models import build_model
from sate.models import fast_attention as fa
from sate.models import fast_dropout as fd
from sate.models import fast_layers as fl
from sate.models.build import MODEL_CLASSES
from sate.models.config import resolve_config
from sate.models.tiny import tiny_config


def test_dropout_keeps_one_minus_p_of_the_entries_and_rescales_them() -> None:
    torch.manual_seed(0)
    x = torch.rand(400, 500) + 0.5
    out = fd.FastDropout(0.1).train()(x)
    kept = out != 0
    assert abs(kept.float().mean().item() - 0.9) < 0.003  # 200k draws: the standard error is 0.0007
    assert torch.allclose(out[kept], x[kept] / 0.9)
    assert fd.FastDropout(0.1).eval()(x) is x


def test_dropout_masks_are_reproducible_under_a_seed_and_differ_between_calls() -> None:
    drop = fd.FastDropout(0.3).train()
    x = torch.ones(64, 64)
    torch.manual_seed(3)
    first, second = drop(x), drop(x)
    torch.manual_seed(3)
    assert torch.equal(drop(x), first) and not torch.equal(first, second)


def test_dropout_gradient_is_the_same_mask_and_scale() -> None:
    torch.manual_seed(1)
    x = torch.randn(32, 48, requires_grad=True)
    out = fd.FastDropout(0.25).train()(x)
    grad = torch.randn_like(out)
    out.backward(grad)
    expected = torch.where(out != 0, grad / 0.75, torch.zeros_like(grad))
    assert torch.allclose(x.grad, expected)


def test_keep_mask_of_an_odd_size_has_the_exact_shape() -> None:
    assert fd.keep_mask(torch.Size([3, 5, 7]), 0.5).shape == (3, 5, 7)


def plain_and_fast(task: str, **kwargs: object) -> tuple[nn.Module, nn.Module]:
    """The same weights in a model built as ESPnet builds it and in one with the fast modules."""
    section = tiny_config(task, **kwargs)
    torch.manual_seed(0)
    plain = MODEL_CLASSES[task](resolve_config(task, section), 40, 50)
    fast = build_model(task, section, 40, 50)
    fast.load_state_dict(plain.state_dict())
    return plain, fast


def st_batch() -> dict[str, torch.Tensor]:
    torch.manual_seed(2)
    return {"feats": torch.randn(3, 90, 80), "feats_lengths": torch.tensor([90, 71, 40]),
            "src": torch.randint(1, 39, (3, 6)), "src_lengths": torch.tensor([6, 5, 3]),
            "tgt": torch.randint(1, 49, (3, 7)), "tgt_lengths": torch.tensor([7, 4, 2])}


def test_swapped_modules_keep_the_state_dict_and_every_eval_result() -> None:
    plain, fast = plain_and_fast("st", layers=2)
    assert plain.state_dict().keys() == fast.state_dict().keys()
    kinds = {type(m).__name__ for m in fast.modules()}
    assert {"FastDropout", "SiLU", "FusedAttention", "FusedRelPositionAttention", "FastConformerLayer",
            "FastEncoderLayer", "FastDecoderLayer", "FastFeedForward", "FastConvolutionModule",
            "FastDepthwiseConv1d", "FastConv2dSubsampling"} <= kinds
    assert not kinds & {"Dropout", "Swish", "MultiHeadedAttention", "RelPositionMultiHeadedAttention", "EncoderLayer",
                        "DecoderLayer", "PositionwiseFeedForward", "ConvolutionModule", "Conv2dSubsampling"}
    batch = st_batch()
    with torch.no_grad():
        a, b = plain.eval()(batch), fast.eval()(batch)
    assert torch.allclose(a["loss"], b["loss"], atol=1e-5), (a["loss"], b["loss"])


SLOW_TRANSFORMER = pytest.param("transformer", marks=pytest.mark.slow)  # the textual encoder covers its layers


@pytest.mark.parametrize(("acoustic_type", "path"), [
    ("conformer", "fused"), ("transformer", "fused"), ("conformer", "lean"),
    pytest.param("transformer", "lean", marks=pytest.mark.slow)])
def test_the_training_paths_equal_espnets(monkeypatch: pytest.MonkeyPatch, acoustic_type: str, path: str) -> None:
    """Without dropout, training-mode loss and gradients equal ESPnet's modules to float rounding, relative
    positions and padding included: the GPU path (PyTorch's fused kernel, forced on the CPU) and the CPU's
    lean attention, layers and feed-forward modules."""
    plain, fast = plain_and_fast("st", layers=2, dropout=0.0, acoustic_type=acoustic_type)
    if path == "fused":
        monkeypatch.setattr(fa, "fused_in", lambda module, query: module.training)
    calls = {"attention": 0, "layers": 0}

    def counted(name: str, function: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        def call(*args: object, **kwargs: object) -> torch.Tensor:
            calls[name] += 1
            return function(*args, **kwargs)
        return call

    monkeypatch.setattr(fa, "_attend", counted("attention", fa._attend))
    monkeypatch.setattr(fl, "dropout_add", counted("layers", fl.dropout_add))
    batch = st_batch()
    losses = []
    for model in (plain, fast):
        model.train()
        loss = model(batch)["loss"]
        loss.backward()
        losses.append(loss)
    assert torch.allclose(losses[0], losses[1], atol=1e-5), losses
    # acoustic, textual and decoder layers took the lean forward; attention the lean path on the CPU only
    assert calls["layers"] == 2 * (4 if acoustic_type == "conformer" else 2) + 2 * 2 + 2 * 3
    assert calls["attention"] == (0 if path == "fused" else 2 + 2 + 2 * 2)
    for (name, p), q in zip(plain.named_parameters(), fast.parameters(), strict=True):
        assert torch.allclose(p.grad, q.grad, atol=1e-5, rtol=1e-4), name


class Replay(nn.Module):
    """ESPnet's dropout with the masks another model drew, in the order it drew them."""

    def __init__(self, p: float, masks: Iterator[torch.Tensor]) -> None:
        super().__init__()
        self.p, self.masks = p, masks

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = next(self.masks)
        if keep.shape != x.shape:  # attention weights: the lean path's are heads first, (H·B, T1, T2)
            keep = keep.view(x.size(1), x.size(0), *x.shape[2:]).transpose(0, 1)
        return x * keep / (1 - self.p)


@pytest.mark.parametrize("acoustic_type", ["conformer", SLOW_TRANSFORMER])
def test_training_with_dropout_is_espnets_with_the_same_masks(monkeypatch: pytest.MonkeyPatch,
                                                              acoustic_type: str) -> None:
    """With dropout, our training step (every lean path, masks folded into residual adds and products) equals
    ESPnet's modules given the masks ours drew: loss and every gradient, to float rounding."""
    plain, fast = plain_and_fast("st", layers=2, dropout=0.1, acoustic_type=acoustic_type)
    masks: list[torch.Tensor] = []
    draw = fd.keep_mask
    monkeypatch.setattr(fd, "keep_mask", lambda shape, p: masks.append(draw(shape, p)) or masks[-1])
    batch = st_batch()
    torch.manual_seed(5)
    fast_loss = fast.train()(batch)["loss"]
    fast_loss.backward()
    replayed = iter(masks)
    for parent in list(plain.modules()):
        for name, child in parent.named_children():
            if type(child) is nn.Dropout:
                setattr(parent, name, Replay(child.p, replayed))
    plain_loss = plain.train()(batch)["loss"]
    plain_loss.backward()
    assert len(masks) > 20 and next(replayed, None) is None  # every mask drawn was used, in order
    assert torch.allclose(plain_loss, fast_loss, atol=1e-5), (plain_loss, fast_loss)
    for (name, p), q in zip(plain.named_parameters(), fast.parameters(), strict=True):
        assert torch.allclose(p.grad, q.grad, atol=1e-5, rtol=1e-4), name


def test_dropout_add_is_the_residual_plus_the_rescaled_kept_entries() -> None:
    torch.manual_seed(4)
    residual, y = torch.randn(6, 50, requires_grad=True), torch.randn(6, 50, requires_grad=True)
    out = fd.dropout_add(residual, y, 0.2, alpha=0.5)
    kept = (out - residual).detach() != 0
    assert 0.7 < kept.float().mean().item() < 0.9
    assert torch.allclose(out, residual + 0.5 * torch.where(kept, y / 0.8, 0.0))
    grad = torch.randn_like(out)
    out.backward(grad)
    assert torch.equal(residual.grad, grad)
    assert torch.allclose(y.grad, torch.where(kept, 0.5 * grad / 0.8, 0.0))
