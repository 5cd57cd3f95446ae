"""Recording attention weights with forward hooks, without touching the models.

ESPnet's `MultiHeadedAttention` (and its relative-position subclasses used by the Conformer)
keeps the softmax of its last call in ``.attn`` (B, H, T1, T2), padded keys set to 0. A forward
hook reads it, together with the key mask the module was called with, and hands both to a sink.
Hooks only read, so the model computes exactly what it computes without them (a test checks it),
and they are removed when the ``with`` block ends.

Where the weights are, per model (verified against our model classes):

| key                  | module                                       | models      |
|----------------------|----------------------------------------------|-------------|
| ``("acoustic", l)``  | ``model.acoustic.encoder.encoders[l-1].self_attn`` | asr, st |
| ``("textual", l)``   | ``model.textual.encoder.encoders[l-1].self_attn``  | mt, st (not the baseline) |
| ``("cross", l)``     | ``model.decoder.decoders[l-1].src_attn``           | mt, st, hybrid asr |

Layers are numbered from 1, as in the paper's figure. An encoder a model lacks (the E2E ST
baseline has no textual encoder: ``model.textual`` is None) contributes no keys.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import nn

from sate.errors import SateError
from sate.models.base import SateModel
from sate.models.espnet_blocks import attention

AttentionKey = tuple[str, int]  # (encoder name or "cross", 1-based layer)
# sink(key, attn (B, H, T1, T2), key_mask (B, T2) bool): called once per forward of a hooked module
AttentionSink = Callable[[AttentionKey, torch.Tensor, torch.Tensor], None]
ENCODERS = ("acoustic", "textual")


def encoder_attention(model: SateModel) -> dict[AttentionKey, nn.Module]:
    """The self-attention module of every encoder layer the model has, keyed (encoder, layer)."""
    out: dict[AttentionKey, nn.Module] = {}
    for name in ENCODERS:
        encoder = getattr(model, name, None)
        if encoder is not None:
            out.update({(name, k + 1): layer.self_attn for k, layer in enumerate(encoder.encoder.encoders)})
    return out


def cross_attention(model: SateModel) -> dict[AttentionKey, nn.Module]:
    """The decoder's source attention of every layer, keyed ("cross", layer); {} without a decoder."""
    decoder = getattr(model, "decoder", None)
    if decoder is None:
        return {}
    return {("cross", k + 1): layer.src_attn for k, layer in enumerate(decoder.decoders)}


def _key_mask(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], attn: torch.Tensor) -> torch.Tensor:
    """The call's ``mask`` argument as a (B, T2) bool key mask; all keys when the call had none."""
    mask = inspect.signature(module.forward).bind(*args, **kwargs).arguments.get("mask")
    if mask is None:
        return torch.ones(attn.size(0), attn.size(-1), dtype=torch.bool, device=attn.device)
    return mask[:, -1].bool()  # (B, 1, T2) or (B, T1, T2): the last query row masks exactly the padding


@contextlib.contextmanager
def capture_attention(modules: Mapping[AttentionKey, nn.Module], sink: AttentionSink) -> Iterator[None]:
    """Within the block, every forward of a listed module calls ``sink(key, attn, key_mask)``.

    Weights exist only on ESPnet's plain attention path; a module switched to flash attention or
    PyTorch SDPA never computes them, so it is refused rather than reporting stale weights.
    """
    handles = []
    try:
        for key, module in modules.items():
            if not isinstance(module, attention.MultiHeadedAttention):
                raise TypeError(f"{key}: {type(module).__name__} is not an ESPnet MultiHeadedAttention")
            if module.use_flash_attn or getattr(module, "use_sdpa", False):
                raise SateError(f"{key[0]} layer {key[1]} uses fused attention (flash/SDPA), "
                                "which keeps no attention weights to analyse")

            def hook(mod: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any,
                     key: AttentionKey = key) -> None:
                attn = mod.attn.detach()
                sink(key, attn, _key_mask(mod, args, kwargs, attn))

            handles.append(module.register_forward_hook(hook, with_kwargs=True))
        yield
    finally:
        for handle in handles:
            handle.remove()


class AttentionStore:
    """A sink that keeps the last weights of each key: for one forward pass of a single utterance."""

    def __init__(self) -> None:
        self.maps: dict[AttentionKey, torch.Tensor] = {}

    def __call__(self, key: AttentionKey, attn: torch.Tensor, key_mask: torch.Tensor) -> None:
        self.maps[key] = attn
