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

Each type is one class here and one entry in `ADAPTORS`; `sate.models.config.ADAPTOR_TYPES` says which
branches it has, so that the config knows which keys apply (docs/development.md: adding an adaptor).
Every class is built from the typed ``adaptor`` section and ``d_model``, and maps
h (B, T, D), lengths (B,), ctc_logits (B, T, V), E (V, D) or None -> (B, T', D), (B,).
"""

from __future__ import annotations

import torch
from torch import nn

from sate.models.config import AdaptorConfig
from sate.models.shrink import ctc_shrink


def linear_branch(d_model: int, dropout: float) -> nn.Sequential:
    """ReLU(Dropout(LN(W·h + b)))."""
    return nn.Sequential(nn.Linear(d_model, d_model), nn.LayerNorm(d_model), nn.Dropout(dropout), nn.ReLU())


class LinearAdaptor(nn.Module):
    """linear: the states through one projection; no CTC posteriors, no embedding."""

    def __init__(self, conf: AdaptorConfig, d_model: int) -> None:
        super().__init__()
        self.linear = linear_branch(d_model, conf.dropout)

    def forward(self, h: torch.Tensor, lengths: torch.Tensor, ctc_logits: torch.Tensor,
                embedding: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        return self.linear(h), lengths


class SoftAdaptor(nn.Module):
    """soft: the expected source embedding under the CTC posteriors."""

    def __init__(self, conf: AdaptorConfig, d_model: int) -> None:
        super().__init__()
        self.temperature = conf.temperature

    def soft(self, ctc_logits: torch.Tensor, embedding: torch.Tensor) -> torch.Tensor:
        """Expected source embedding under the CTC posteriors: (B, T, V) x (V, D) -> (B, T, D)."""
        return torch.softmax(ctc_logits / self.temperature, dim=-1) @ embedding

    def forward(self, h: torch.Tensor, lengths: torch.Tensor, ctc_logits: torch.Tensor,
                embedding: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        assert embedding is not None
        return self.soft(ctc_logits, embedding), lengths


class InterAdaptor(SoftAdaptor):
    """inter: the states plus the soft branch."""

    def forward(self, h: torch.Tensor, lengths: torch.Tensor, ctc_logits: torch.Tensor,
                embedding: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        assert embedding is not None
        return h + self.soft(ctc_logits, embedding), lengths


class LeagueAdaptor(SoftAdaptor):
    """league: the linear branch plus the soft branch (SATE's adaptor)."""

    def __init__(self, conf: AdaptorConfig, d_model: int) -> None:
        super().__init__(conf, d_model)
        self.linear = linear_branch(d_model, conf.dropout)

    def forward(self, h: torch.Tensor, lengths: torch.Tensor, ctc_logits: torch.Tensor,
                embedding: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        assert embedding is not None
        return self.linear(h) + self.soft(ctc_logits, embedding), lengths


class GatedAdaptor(LeagueAdaptor):
    """gated: a learned per-dimension mix of the linear and soft branches."""

    def __init__(self, conf: AdaptorConfig, d_model: int) -> None:
        super().__init__(conf, d_model)
        self.gate = nn.Linear(2 * d_model, d_model)

    def forward(self, h: torch.Tensor, lengths: torch.Tensor, ctc_logits: torch.Tensor,
                embedding: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        assert embedding is not None
        linear, soft = self.linear(h), self.soft(ctc_logits, embedding)
        g = torch.sigmoid(self.gate(torch.cat([linear, soft], dim=-1)))
        return g * linear + (1 - g) * soft, lengths


class ShrinkAdaptor(nn.Module):
    """shrink: CTC compression (`sate.models.shrink`), then the soft or league adaptor (shrink_mode) on the
    segments: (B, T, D) -> (B, S, D)."""

    def __init__(self, conf: AdaptorConfig, d_model: int) -> None:
        super().__init__()
        self.inner = ADAPTORS[conf.shrink_mode](conf, d_model)
        self.keep_blank = conf.keep_blank

    def forward(self, h: torch.Tensor, lengths: torch.Tensor, ctc_logits: torch.Tensor,
                embedding: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        h, ctc_logits, lengths = ctc_shrink(h, ctc_logits, lengths, self.keep_blank)
        return self.inner(h, lengths, ctc_logits, embedding)


# adaptor.type -> its module; "none" has none (the E2E baseline).
ADAPTORS: dict[str, type[nn.Module]] = {
    "linear": LinearAdaptor,
    "soft": SoftAdaptor,
    "league": LeagueAdaptor,
    "gated": GatedAdaptor,
    "inter": InterAdaptor,
    "shrink": ShrinkAdaptor,
}


def build_adaptor(conf: AdaptorConfig, d_model: int) -> nn.Module | None:
    """The adaptor for the `adaptor` config section; None for type none (the model has no adaptor)."""
    return None if conf.type == "none" else ADAPTORS[conf.type](conf, d_model)
