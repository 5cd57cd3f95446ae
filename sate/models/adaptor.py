"""The adaptor: turns acoustic states into inputs the MT-initialised textual encoder understands.

With ``P = softmax(ctc_logits / τ)`` and ``E`` the MT source embedding matrix (CTC's index
space), the types are:

| type     | output                                           |
|----------|--------------------------------------------------|
| none     | no adaptor: the decoder attends to ``h`` (E2E ST baseline, with textual.layers 0) |
| linear   | ``ReLU(Dropout(LN(W·h + b)))``                   |
| soft     | ``P·E``                                          |
| league   | ``linear + soft``                                |
| gated    | ``g ⊙ linear + (1 − g) ⊙ soft``, ``g = σ(W_g [linear; soft])`` |
| inter    | ``h + soft``                                     |
| shrink   | CTC compression (`sate.models.shrink`), then soft or league |

`soft` is why the ST model keeps an MT source embedding although it never embeds tokens.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from sate.models.config import LINEAR_ADAPTORS
from sate.models.shrink import ShrinkAdaptor


class Adaptor(nn.Module):
    """One of linear, soft, league, gated, inter (see the module docstring)."""

    def __init__(self, kind: str, d_model: int, temperature: float, dropout: float) -> None:
        super().__init__()
        self.kind = kind
        self.temperature = temperature
        if kind in LINEAR_ADAPTORS:
            self.linear = nn.Sequential(
                nn.Linear(d_model, d_model), nn.LayerNorm(d_model), nn.Dropout(dropout), nn.ReLU()
            )
        if kind == "gated":
            self.gate = nn.Linear(2 * d_model, d_model)

    def soft(self, ctc_logits: torch.Tensor, embedding: torch.Tensor) -> torch.Tensor:
        """Expected source embedding under the CTC posteriors: (B, T, V) x (V, D) -> (B, T, D)."""
        return torch.softmax(ctc_logits / self.temperature, dim=-1) @ embedding

    def forward(
        self, h: torch.Tensor, lengths: torch.Tensor, ctc_logits: torch.Tensor, embedding: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """h (B, T, D), lengths (B,), ctc_logits (B, T, V), embedding (V, D) -> (B, T, D), (B,).

        `embedding` is E_src; the linear type takes None.
        """
        if self.kind == "linear":
            return self.linear(h), lengths
        soft = self.soft(ctc_logits, embedding)
        if self.kind == "soft":
            return soft, lengths
        if self.kind == "inter":
            return h + soft, lengths
        linear = self.linear(h)
        if self.kind == "league":
            return linear + soft, lengths
        g = torch.sigmoid(self.gate(torch.cat([linear, soft], dim=-1)))
        return g * linear + (1 - g) * soft, lengths


def build_adaptor(conf: dict[str, Any], d_model: int) -> nn.Module | None:
    """The adaptor for the `adaptor` config section; None for type none (the model has no adaptor)."""
    if conf["type"] == "none":
        return None
    if conf["type"] == "shrink":
        return ShrinkAdaptor(Adaptor(conf["shrink_mode"], d_model, conf["temperature"], conf["dropout"]),
                             keep_blank=conf["keep_blank"])
    return Adaptor(conf["type"], d_model, conf["temperature"], conf["dropout"])
