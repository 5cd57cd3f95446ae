"""wav2vec2, HuBERT and WavLM as SATE's acoustic encoder: torchaudio's modules, Hugging Face's weights.

torchaudio's `wav2vec2_model` and `wavlm_model` builders hold the same computation as Hugging Face's models
under other key names (`hf_key_map` renames them; WavLM's q/k/v projections become one ``in_proj``), so a
downloaded directory loads without `transformers`. Our forward pass differs from torchaudio's in three places,
each so that an utterance's output does not depend on what it is batched with (our rule for every encoder,
tests/models/test_padding.py):

- the waveform is normalised per utterance over its own samples, where the directory's
  ``preprocessor_config.json`` says ``do_normalize`` (zero mean, unit variance, as transformers' feature
  extractor does); it happens here, inside the model, so decoding cannot forget it;
- a group-norm feature extractor (wav2vec2-base, HuBERT-base: ``feat_extract_norm: group``) normalises each
  channel of the first convolution over time, padding included: batched with a longer utterance, an output
  changed by up to 1.7 (measured). Here the statistics cover each utterance's own valid frames;
- torchaudio's WavLM attention takes no padding mask from its encoder (it asserts ``attention_mask is None``);
  the padding is passed to it as the ``key_padding_mask`` it does take.

A linear projection maps the model's hidden size to d_model. Its output is 50 frames a second.
"""

from __future__ import annotations

import re

import torch
from torch import nn
from torch.nn import functional as F

from sate.errors import SateError
from sate.models.config import AcousticConfig
from sate.models.espnet_blocks import EspnetKwargs
from sate.models.hub.settings import SpeechHub, require_hub

NORMALIZE_EPS = 1e-7  # transformers' Wav2Vec2FeatureExtractor.zero_mean_unit_var_norm
MASK_VALUE = -10000.0  # torchaudio's additive attention mask for padded keys


def build_hub_model(hub: SpeechHub) -> nn.Module:
    """torchaudio's Wav2Vec2Model of a ``acoustic.hub`` dict, without an output layer."""
    from torchaudio.models import wav2vec2_model, wavlm_model

    wavlm = hub["model_type"] == "wavlm"
    build = wavlm_model if wavlm else wav2vec2_model
    relative: dict[str, int] = ({"encoder_num_buckets": hub["num_buckets"], "encoder_max_distance": hub["max_distance"]}
                                if wavlm else {})
    model = build(
        extractor_mode=hub["extractor_mode"], extractor_conv_layer_config=[tuple(t) for t in hub["conv_layers"]],
        extractor_conv_bias=hub["conv_bias"], encoder_embed_dim=hub["hidden_size"],
        encoder_projection_dropout=hub["projection_dropout"], encoder_pos_conv_kernel=hub["pos_conv_kernel"],
        encoder_pos_conv_groups=hub["pos_conv_groups"], encoder_num_layers=hub["layers"],
        encoder_num_heads=hub["heads"], encoder_attention_dropout=hub["attention_dropout"],
        encoder_ff_interm_features=hub["ffn"], encoder_ff_interm_dropout=hub["ff_interm_dropout"],
        encoder_dropout=hub["dropout"], encoder_layer_norm_first=hub["layer_norm_first"],
        encoder_layer_drop=hub["layer_drop"], aux_num_out=None, **relative)
    if not hub["feat_proj_layer_norm"]:  # HuBERT configs may leave the projection's LayerNorm out
        model.encoder.feature_projection.layer_norm = nn.Identity()
    for module in model.encoder.modules():
        if isinstance(module, nn.LayerNorm):
            module.eps = hub["layer_norm_eps"]
    return model


class HubStack(nn.Module):
    """The torchaudio model and the projection to d_model: everything `init: acoustic:` moves between models."""

    def __init__(self, hub: SpeechHub, d_model: int) -> None:
        super().__init__()
        self.model = build_hub_model(hub)
        self.proj = nn.Linear(hub["hidden_size"], d_model)


def normalize_waveform(wave: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(B, T) -> (B, T): each utterance to zero mean and unit variance over its own samples; padding stays 0."""
    valid = torch.arange(wave.size(1), device=wave.device)[None, :] < lengths[:, None]
    count = lengths.clamp(min=1).to(wave.dtype)[:, None]
    mean = (wave * valid).sum(1, keepdim=True) / count
    var = (((wave - mean) * valid) ** 2).sum(1, keepdim=True) / count
    return ((wave - mean) / torch.sqrt(var + NORMALIZE_EPS)).masked_fill(~valid, 0.0)


def masked_group_norm(norm: nn.GroupNorm, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """`norm` on (B, C, T) with each utterance's statistics taken over its first lengths[b] frames only."""
    batch, channels, frames = x.shape
    groups = norm.num_groups
    valid = (torch.arange(frames, device=x.device)[None, :] < lengths[:, None]).to(x.dtype)
    grouped = x.view(batch, groups, channels // groups, frames)
    weight = valid[:, None, None, :]
    count = (weight.sum(-1, keepdim=True) * (channels // groups)).clamp(min=1)
    mean = (grouped * weight).sum((2, 3), keepdim=True) / count
    var = (((grouped - mean) * weight) ** 2).sum((2, 3), keepdim=True) / count
    y = ((grouped - mean) / torch.sqrt(var + norm.eps)).view(batch, channels, frames)
    return y * norm.weight[None, :, None] + norm.bias[None, :, None]


class HubAcousticEncoder(nn.Module):
    """16 kHz waveforms -> acoustic states at 50 frames a second (see the module docstring).

    ``.encoder`` (a `HubStack`) holds every weight, as ``.encoder`` of our fbank encoder does.
    """

    def __init__(self, conf: AcousticConfig, d_model: int) -> None:
        super().__init__()
        self.hub = require_hub(conf, "acoustic")
        self.espnet_name = conf.type  # never an ESPnet experiment's encoder
        self.espnet_kwargs: EspnetKwargs = {}
        self.encoder = HubStack(self.hub, d_model)
        if conf.freeze_feature_extractor:
            self.encoder.model.feature_extractor.requires_grad_(False)

    def _features(self, wave: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T) samples -> (B, T', C) convolutional features and their lengths."""
        x = wave.unsqueeze(1)
        for layer in self.encoder.model.feature_extractor.conv_layers:
            x = layer.conv(x)
            lengths = torch.div(lengths - layer.kernel_size, layer.stride, rounding_mode="floor") + 1
            lengths = lengths.clamp(min=0)
            if isinstance(layer.layer_norm, nn.GroupNorm):
                x = masked_group_norm(layer.layer_norm, x, lengths)
            elif layer.layer_norm is not None:
                x = layer.layer_norm(x)
            x = F.gelu(x)
        return x.transpose(1, 2), lengths

    def forward(self, wave: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T) samples, (B,) -> (B, T', D), (B,)."""
        if wave.dim() != 2:
            raise SateError(f"acoustic.type {self.espnet_name} reads waveforms (B, T), got a tensor of shape "
                            f"{tuple(wave.shape)}: set data.features waveform")
        if self.hub["do_normalize"]:
            wave = normalize_waveform(wave, lengths)
        # in the weights' precision, as the Whisper encoder's log-mel: a pack whose model a notebook cast
        # (`st.model.to(torch.bfloat16)`) was torch's "expected scalar type Float but found BFloat16" (review33a)
        wave = wave.to(next(self.encoder.parameters()).dtype)
        x, lengths = self._features(wave, lengths)
        encoder = self.encoder.model.encoder
        x = encoder.feature_projection(x)
        pad = torch.arange(x.size(1), device=x.device)[None, :] >= lengths[:, None]
        x = x.masked_fill(pad[..., None], 0.0)
        transformer = encoder.transformer
        x = transformer._preprocess(x)
        if self.hub["model_type"] == "wavlm":
            masks: dict[str, torch.Tensor] = {"key_padding_mask": pad}
        else:
            bias = (MASK_VALUE * pad.to(x.dtype))[:, None, None, :]
            masks = {"attention_mask": bias.expand(-1, 1, x.size(1), -1)}
        position_bias = None
        for layer in transformer.layers:
            if not (self.training and torch.rand(1).item() <= transformer.layer_drop):
                x, position_bias = layer(x, position_bias=position_bias, **masks)
        if not transformer.layer_norm_first:
            x = transformer.layer_norm(x)
        return self.encoder.proj(x), lengths

    def with_ctc_input(self, wave: torch.Tensor,
                       lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """As `AcousticEncoder.with_ctc_input`: CTC reads the top layer."""
        out, out_lengths = self.forward(wave, lengths)
        return out, out, out_lengths


# ----------------------------------------------------------------------------------------------- key names

# Hugging Face (base model, no prefix) -> ours (relative to HubStack), by regular expression, first match wins.
_RENAMES = (
    (r"feature_extractor\.(.*)", r"model.feature_extractor.\1"),
    (r"feature_projection\.(.*)", r"model.encoder.feature_projection.\1"),
    (r"encoder\.pos_conv_embed\.conv\.weight_g", r"model.encoder.transformer.pos_conv_embed.conv.parametrizations."
                                                 r"weight.original0"),
    (r"encoder\.pos_conv_embed\.conv\.weight_v", r"model.encoder.transformer.pos_conv_embed.conv.parametrizations."
                                                 r"weight.original1"),
    (r"encoder\.layers\.(\d+)\.attention\.out_proj\.(.*)", r"model.encoder.transformer.layers.\1.attention.@out.\2"),
    (r"encoder\.(.*)", r"model.encoder.transformer.\1"),
)
# Tensors of other heads or of pre-training that an acoustic encoder does not use.
UNUSED = re.compile(r"^(lm_head|quantizer|project_hid|project_q|final_proj|label_embeddings_concat|masked_spec_embed)"
                    r"(\.|$)")


def unused_key(name: str, hub: SpeechHub) -> bool:
    """Whether a Hugging Face tensor is one `hf_key_map` leaves out (another head's, or pre-training's)."""
    return bool(UNUSED.match(name.removeprefix(hub["model_type"] + ".")))


def hf_key_map(state: dict[str, torch.Tensor],
               hub: SpeechHub) -> tuple[dict[str, torch.Tensor], list[str], dict[str, str]]:
    """A Hugging Face wav2vec2/HuBERT/WavLM state dict (base model or with a head) in `HubStack`'s names.

    Returns the mapped tensors, the names of tensors left out on purpose (other heads, pre-training parts), and
    each mapped name's name in the file (WavLM's fused ``in_proj``: its q_proj's), which messages give.
    """
    prefix = hub["model_type"] + "."
    stripped = any(k.startswith(prefix) for k in state)
    # each name without the model's prefix (a model with a head: wav2vec2.encoder...) -> the file's name
    files = {k[len(prefix):] if stripped and k.startswith(prefix) else k: k for k in state}
    state = {key: state[file] for key, file in files.items()}
    out: dict[str, torch.Tensor] = {}
    origin: dict[str, str] = {}
    skipped = sorted(k for k in state if UNUSED.match(k))
    wavlm = hub["model_type"] == "wavlm"
    for key, tensor in state.items():
        if UNUSED.match(key):
            continue
        name = key
        for pattern, replacement in _RENAMES:
            if re.fullmatch(pattern, key):
                name = re.sub(pattern, replacement, key)
                break
        name = name.replace("@out", "attention.out_proj" if wavlm else "out_proj")
        out[name], origin[name] = tensor, files[key]
    if wavlm:
        for name in [k for k in out if re.search(r"\.attention\.q_proj\.(weight|bias)$", k)]:
            stem, param = name.rsplit(".q_proj.", 1)
            names = [f"{stem}.{p}_proj.{param}" for p in "qkv"]
            if all(n in out for n in names):  # otherwise the leftovers are reported as unexpected
                fused = f"{stem}.attention.in_proj_{param}"
                out[fused], origin[fused] = torch.cat([out.pop(n) for n in names]), origin[name]
    return out, skipped, origin
