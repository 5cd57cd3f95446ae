"""Whisper's encoder as an acoustic encoder (``acoustic.type whisper``), from either directory format.

`sate.models.hub.whisper_files` reads the directories (Hugging Face's or CTranslate2's).

Sizes come from the directory (`whisper_sizes`); a model file stores that dict and rebuilds the encoder with
``WhisperEncoder(**sizes)`` without the directory. The computation is Whisper's: two convolutions with GELU (the
second of stride 2: 100 -> 50 frames a second), the position table, pre-LN Transformer layers, a final LayerNorm.

Whisper was trained on 30-s windows padded with silence and attends to all of it. Here the input keeps its natural
length: the position table is sliced to it and a padding mask keeps an utterance's output independent of the
batch. Its window is a hard limit: the table has ``positions`` rows (1,500 = 3,000 input frames = 30 s), and a
longer input is refused rather than given positions Whisper never learned; `max_segment_seconds` is the cap the
segmenter uses.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path
from typing import Literal, cast

import torch
from torch import nn
from torch.nn import functional as F

from sate.data.whisper_mel import FRAMES_PER_SECOND, whisper_log_mel
from sate.errors import SateError
from sate.models.config import AcousticConfig
from sate.models.espnet_blocks import EspnetKwargs
from sate.models.hub.files import hub_directory
from sate.models.hub.settings import require_hub
from sate.models.hub.whisper_files import WhisperSizes, whisper_sizes, whisper_weights

Freeze = Literal["all", "none"] | int


class WhisperLayer(nn.Module):
    """One pre-LN Transformer layer: x + attn(LN(x)), then x + fc2(gelu(fc1(LN(x))))."""

    def __init__(self, d_model: int, heads: int, ffn: int, dropout: float) -> None:
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.attn_norm = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)  # fused q, k, v (CTranslate2's layout)
        self.out = nn.Linear(d_model, d_model)
        self.ffn_norm = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn)
        self.fc2 = nn.Linear(ffn, d_model)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """(B, T, D), (B, 1, 1, T) True where a key is a real frame -> (B, T, D)."""
        batch, frames, d_model = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).view(batch, frames, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        attn = attn.transpose(1, 2).reshape(batch, frames, d_model)
        x = x + F.dropout(self.out(attn), self.dropout, self.training)
        h = self.fc2(F.gelu(self.fc1(self.ffn_norm(x))))
        return x + F.dropout(h, self.dropout, self.training)


class WhisperEncoder(nn.Module):
    """(B, T, mel_bins) Whisper log-mel at 100 frames a second -> (B, T', d_model) at 50 (see the module docstring).

    Args:
        d_model, layers, heads, ffn, mel_bins, positions: the sizes of the directory (`whisper_sizes`).
        dropout: on the positions' sum and each residual branch, as Whisper's ``dropout`` (0 in every release).
        freeze: "all", "none", or N (0 to layers): the convolutions and the lowest N layers keep their weights.
    """

    def __init__(self, d_model: int, layers: int, heads: int, ffn: int, mel_bins: int = 80, positions: int = 1500,
                 dropout: float = 0.0, freeze: Freeze = "none") -> None:
        super().__init__()
        if d_model % heads:
            raise SateError(f"Whisper encoder: d_model {d_model} is not divisible by {heads} heads")
        self.sizes = WhisperSizes(d_model, layers, heads, ffn, mel_bins, positions)
        self.dropout = dropout
        self.conv1 = nn.Conv1d(mel_bins, d_model, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(d_model, d_model, kernel_size=3, stride=2, padding=1)
        self.register_buffer("positions", torch.zeros(positions, d_model))  # from the weights; never trained
        self.layers = nn.ModuleList(WhisperLayer(d_model, heads, ffn, dropout) for _ in range(layers))
        self.layer_norm = nn.LayerNorm(d_model)
        self.freeze(freeze)

    def freeze(self, what: Freeze) -> None:
        """Stop training all, none, or the convolutions and the lowest N layers (0: the convolutions only)."""
        if what == "all":
            self.requires_grad_(False)
        elif what == "none":
            self.requires_grad_(True)
        elif isinstance(what, bool) or not isinstance(what, int) or not 0 <= what <= len(self.layers):
            raise SateError(f"acoustic.freeze: {what!r} is not all, none or a layer count from 0 to "
                            f"{len(self.layers)}")
        else:
            self.requires_grad_(True)
            for module in (self.conv1, self.conv2, *self.layers[:what]):
                module.requires_grad_(False)
        self.frozen = what

    def frozen_layers(self) -> int | None:
        """How many layers the frozen part ends after (all of them for "all"); None when nothing is frozen."""
        return None if self.frozen == "none" else len(self.layers) if self.frozen == "all" else int(self.frozen)

    def max_frames(self) -> int:
        """The longest input (frames at 100 a second) the position table covers: 3,000 for every Whisper."""
        return 2 * self.sizes.positions

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T, mel_bins), (B,) -> (B, T', d_model), (B,) with T' = ceil(T / 2); padded frames out are 0."""
        x, out_lengths = self._stem(feats, lengths)
        return self._rest(x, out_lengths, 0), out_lengths

    def frozen_part(self, feats: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What the frozen part computes: the states `after_frozen` continues from (padded frames 0).

        It never changes while training, so `sate.train.frozen_cache` computes it once per utterance.
        """
        depth = self.frozen_layers()
        if depth is None:
            raise SateError("the Whisper encoder has no frozen part (acoustic.freeze is none)")
        x, out_lengths = self._stem(feats, lengths)
        keep = self._keep(x, out_lengths)
        for layer in self.layers[:depth]:
            x = layer(x, keep[:, None, None, :])
        if self.frozen == "all":
            x = self.layer_norm(x)
        return x.masked_fill(~keep[..., None], 0.0), out_lengths

    def after_frozen(self, states: torch.Tensor, out_lengths: torch.Tensor) -> torch.Tensor:
        """(B, T', d_model) outputs of `frozen_part` -> the encoder's output, as `forward` gives it."""
        if self.frozen == "all":
            return states.masked_fill(~self._keep(states, out_lengths)[..., None], 0.0)
        depth = self.frozen_layers()
        if depth is None:
            raise SateError("the Whisper encoder has no frozen part (acoustic.freeze is none)")
        return self._rest(states, out_lengths, depth)

    @staticmethod
    def _keep(x: torch.Tensor, out_lengths: torch.Tensor) -> torch.Tensor:
        return torch.arange(x.size(1), device=x.device)[None, :] < out_lengths[:, None]

    def _stem(self, feats: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-mel -> the convolutions' output plus positions, 50 a second."""
        if feats.dim() != 3 or feats.size(2) != self.sizes.mel_bins:
            raise SateError(f"the Whisper encoder reads (B, T, {self.sizes.mel_bins}) Whisper log-mel features, got "
                            f"{tuple(feats.shape)} (sate.data.whisper_mel computes them)")
        if feats.size(1) > self.max_frames():
            raise SateError(f"an input of {feats.size(1)} frames ({feats.size(1) / FRAMES_PER_SECOND:.2f} s) is longer "
                            f"than Whisper's window of {self.max_frames()} frames ({max_segment_seconds(self.sizes)}"
                            " s): split it into shorter segments")
        frames = torch.arange(feats.size(1), device=feats.device)[None, :]
        x = feats.masked_fill((frames >= lengths[:, None])[..., None], 0.0).transpose(1, 2)
        x = F.gelu(self.conv1(x))
        x = x.masked_fill((frames >= lengths[:, None])[:, None, :], 0.0)  # conv2 reads one frame past the end
        x = F.gelu(self.conv2(x)).transpose(1, 2)
        out_lengths = output_lengths(lengths)
        return F.dropout(x + self.positions[: x.size(1)], self.dropout, self.training), out_lengths

    def _rest(self, x: torch.Tensor, out_lengths: torch.Tensor, start: int) -> torch.Tensor:
        """Layers `start`.. and the final LayerNorm."""
        keep = self._keep(x, out_lengths)
        for layer in self.layers[start:]:
            x = layer(x, keep[:, None, None, :])
        return self.layer_norm(x).masked_fill(~keep[..., None], 0.0)

    @classmethod
    def from_directory(cls, path: str | Path, dropout: float = 0.0, freeze: Freeze = "none") -> WhisperEncoder:
        """The encoder of a Whisper directory of either format, with its weights (float32)."""
        directory = hub_directory(path, "acoustic.path")
        encoder = cls(**asdict(whisper_sizes(directory)), dropout=dropout, freeze=freeze)
        state, source = whisper_weights(directory)
        ours = encoder.state_dict()
        problems = [f"missing {k}" for k in sorted(set(ours) - set(state))]
        problems += [f"unexpected {k}" for k in sorted(set(state) - set(ours))]
        problems += [f"{k}: {list(v.shape)} in the file, {list(ours[k].shape)} here" for k, v in state.items()
                     if k in ours and v.shape != ours[k].shape]
        if problems:
            raise SateError(f"{source}: not the encoder its sizes describe: {'; '.join(problems[:5])}")
        encoder.load_state_dict(state)
        return encoder


class WhisperStack(nn.Module):
    """Whisper's encoder and the projection to d_model: everything `init: acoustic:` moves between models."""

    def __init__(self, sizes: WhisperSizes, d_model: int, freeze: Freeze) -> None:
        super().__init__()
        self.model = WhisperEncoder(**asdict(sizes), freeze=freeze)
        self.proj = nn.Linear(sizes.d_model, d_model)


class WhisperAcousticEncoder(nn.Module):
    """``acoustic.type whisper``: 16 kHz waveforms -> Whisper log-mel -> Whisper's encoder -> d_model, 50 a second.

    The front-end runs inside the model, as wav2vec2's normalisation does (`sate.models.hub.speech`): a pack
    cannot be decoded with other features than it was trained on, and ``data.features waveform`` serves every
    hub encoder. It runs in float32 under autocast too (log10 of a bf16 power spectrum loses the quiet bins).
    """

    def __init__(self, conf: AcousticConfig, d_model: int) -> None:
        super().__init__()
        hub = require_hub(conf, "acoustic")
        self.sizes = WhisperSizes(**{f.name: int(hub[f.name]) for f in fields(WhisperSizes)})
        self.espnet_name = conf.type  # never an ESPnet experiment's encoder
        self.espnet_kwargs: EspnetKwargs = {}
        self.encoder = WhisperStack(self.sizes, d_model, cast(Freeze, conf.freeze))  # checked by the config

    def max_seconds(self) -> float:
        """The longest segment the encoder takes (`max_segment_seconds`)."""
        return max_segment_seconds(self.sizes)

    def forward(self, wave: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, N) samples, (B,) -> (B, T', d_model), (B,) with T' = ceil((N // 160) / 2).

        In training with ``data.frozen_cache`` the input is instead the frozen part's output (B, T', Whisper's
        d_model) with T' lengths, which `WhisperEncoder.after_frozen` continues.
        """
        encoder = self.encoder.model
        if wave.dim() == 3 and wave.size(2) == self.sizes.d_model:  # the frozen part's cached output (training)
            return self.encoder.proj(encoder.after_frozen(wave, lengths)), lengths
        if wave.dim() != 2:
            raise SateError(f"acoustic.type whisper reads waveforms (B, N), got a tensor of shape {tuple(wave.shape)}"
                            ": set data.features waveform")
        mel, frames = self.log_mel(wave, lengths)
        # in the weights' dtype: under trainer.precision bf16-true/16-true/64-true the float32 log-mel met bf16 convs,
        # torch's "Input type (float) and bias type (c10::BFloat16)" at the first step (review32m); autocast's
        # weights stay float32, so the mixed precisions read it as before
        states, out_lengths = encoder(mel.to(next(encoder.parameters()).dtype), frames)
        return self.encoder.proj(states), out_lengths

    def log_mel(self, wave: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, N) samples -> Whisper's log-mel (B, T, mel_bins), frames (B,), in float32 even under autocast."""
        with torch.no_grad(), torch.autocast(wave.device.type, enabled=False):
            return whisper_log_mel(wave.float(), lengths, self.sizes.mel_bins)

    def with_ctc_input(self, wave: torch.Tensor,
                       lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """As `AcousticEncoder.with_ctc_input`: CTC reads the top layer."""
        out, out_lengths = self.forward(wave, lengths)
        return out, out, out_lengths


def output_lengths(frames: torch.Tensor) -> torch.Tensor:
    """The encoder's positions for ``frames`` log-mel frames: ceil(frames / 2), from the stride-2 convolution."""
    return torch.div(frames - 1, 2, rounding_mode="floor") + 1


def max_segment_seconds(sizes: WhisperSizes) -> float:
    """The longest segment, in seconds, the encoder takes (30.0 for every Whisper): the segmenter's cap."""
    return 2 * sizes.positions / FRAMES_PER_SECOND
