"""OPUS-MT (Marian) models on ESPnet's Transformer blocks: the three patches, the positions and the key names.

Marian is a post-norm Transformer: each sub-layer is ``x = LN(x + f(x))``, with no final norm. Its weights map
one to one onto ESPnet's `TransformerEncoder`/`TransformerDecoder` built with ``normalize_before=False``, which
then equal Hugging Face's outputs to float rounding after three patches; without them they differ by up to 3.0
(measured on tiny random models) without any error:

- the feed-forward activation is the config's ``activation_function`` (opus-mt: swish; ESPnet's blocks: ReLU);
- every LayerNorm has eps 1e-5 (ESPnet's: 1e-12);
- the sinusoidal table has the sines in the first half of the dimensions and the cosines in the second, at
  ESPnet's frequencies (ESPnet interleaves them).

Marian's conventions, kept by the modules built here: token embeddings are scaled by √d when
``scale_embedding`` (opus-mt: true), in the encoder and the decoder; the decoder starts from
``decoder_start_token_id`` (= pad = the last id in opus-mt), ends with ``eos_token_id`` (0), never emits pad, and
adds ``final_logits_bias`` to its tied output logits (here: the output layer's bias); at most
``max_position_embeddings`` (512) positions on either side. Hugging Face's encoder does not scale
``inputs_embeds``; SATE's adaptor output stands in for token embeddings and is scaled as token ids are
(docs/models.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from sate.errors import SateError
from sate.models.espnet_blocks import PositionalEncoding
from sate.models.hub.settings import MarianHub
from sate.numbers import is_digits

LAYER_NORM_EPS = 1e-5


def activation(name: str) -> nn.Module:
    """transformers' activation of that name as a module (swish is SiLU; gelu is the exact erf form)."""
    modules = {"swish": nn.SiLU, "silu": nn.SiLU, "gelu": nn.GELU, "relu": nn.ReLU}
    if name == "gelu_new":
        return nn.GELU(approximate="tanh")
    return modules[name]()


def marian_table(positions: int, d_model: int) -> torch.Tensor:
    """(positions, d_model) sinusoids: sin(p·w_i) in dimensions [0, d/2), cos(p·w_i) in [d/2, d), w_i = 10000^(-2i/d).

    Computed in float64 as transformers computes it, then rounded to float32.
    """
    pos = torch.arange(positions, dtype=torch.float64)[:, None]
    freq = torch.pow(10000.0, -torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)[None, :]
    return torch.cat([torch.sin(pos * freq), torch.cos(pos * freq)], dim=1).float()


class TooManyPositions(SateError):
    """A sequence longer than Marian's position table; `translate_text` names the sentence and gives text's advice
    (this message's is speech's)."""

    def __init__(self, positions: int, limit: int) -> None:
        self.positions, self.limit = positions, limit
        super().__init__(f"a sequence of {positions} positions is longer than the Marian model's {limit} "
                         "(max_position_embeddings); for speech use adaptor.type shrink (the default with "
                         "textual.type hf_marian) or shorter segments")


class MarianPositions(PositionalEncoding):
    """ESPnet's ``x·xscale + PE`` then dropout, with Marian's table, its embedding scale and its position limit.

    ``xscale`` is √d with ``scale_embedding``, else 1. A longer input is a `SateError`: Marian has no weights for
    positions past ``max_positions`` and would extrapolate a table it never saw.
    """

    def __init__(self, d_model: int, dropout_rate: float, scale_embedding: bool, max_positions: int) -> None:
        self.max_positions = max_positions
        super().__init__(d_model, dropout_rate, max_len=max_positions)
        self.xscale = math.sqrt(d_model) if scale_embedding else 1.0

    def extend_pe(self, x: torch.Tensor) -> None:
        if x.size(1) > self.max_positions:
            raise TooManyPositions(x.size(1), self.max_positions)
        if self.pe is None:
            self.pe = marian_table(self.max_positions, self.d_model)[None]
        if self.pe.dtype != x.dtype or self.pe.device != x.device:
            self.pe = self.pe.to(dtype=x.dtype, device=x.device)


def patch_blocks(module: nn.Module, activation_name: str) -> None:
    """Marian's LayerNorm eps and feed-forward activation in every ESPnet block of `module`, in place."""
    for child in module.modules():
        if isinstance(child, nn.LayerNorm):
            child.eps = LAYER_NORM_EPS
        if hasattr(child, "w_1") and hasattr(child, "activation"):  # ESPnet's PositionwiseFeedForward
            child.activation = activation(activation_name)


# Hugging Face's module names inside one layer -> ESPnet's.
ENCODER_LAYER = {"self_attn.q_proj": "self_attn.linear_q", "self_attn.k_proj": "self_attn.linear_k",
                 "self_attn.v_proj": "self_attn.linear_v", "self_attn.out_proj": "self_attn.linear_out",
                 "self_attn_layer_norm": "norm1", "fc1": "feed_forward.w_1", "fc2": "feed_forward.w_2",
                 "final_layer_norm": "norm2"}
DECODER_LAYER = {**{k: v for k, v in ENCODER_LAYER.items() if k != "final_layer_norm"},
                 "encoder_attn.q_proj": "src_attn.linear_q", "encoder_attn.k_proj": "src_attn.linear_k",
                 "encoder_attn.v_proj": "src_attn.linear_v", "encoder_attn.out_proj": "src_attn.linear_out",
                 "encoder_attn_layer_norm": "norm2", "final_layer_norm": "norm3"}
# Where a Marian file may keep the one shared embedding (transformers 5 keeps one copy, older files all of them).
EMBEDDING_KEYS = ("shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight")
POSITION_KEYS = ("encoder.embed_positions.weight", "decoder.embed_positions.weight")


@dataclass
class MarianWeights:
    """A Marian state dict in ESPnet's names: encoder and decoder blocks, the embedding, the output bias."""

    encoder: dict[str, torch.Tensor] = field(default_factory=dict)  # keys of TransformerEncoder (no prefix)
    decoder: dict[str, torch.Tensor] = field(default_factory=dict)  # keys of TransformerDecoder, embed and output
    embedding: torch.Tensor | None = None
    notes: list[str] = field(default_factory=list)


def _layer_key(rest: str, names: dict[str, str], prefix: str) -> str | None:
    """``3.fc1.weight`` -> ``{prefix}3.feed_forward.w_1.weight``; None for a name no layer has."""
    index, _, tail = rest.partition(".")
    module, _, param = tail.rpartition(".")
    if not is_digits(index) or module not in names:
        return None
    return f"{prefix}{index}.{names[module]}.{param}"


# Our decoder keys that are no layer's -> the Marian file's (`split_marian_state` fills them from these), without the
# "model." prefix a MarianMTModel file gives its base model's keys ("final_logits_bias", "lm_head.weight" have none).
DECODER_OTHERS = {"output_layer.bias": "final_logits_bias", "output_layer.weight": "shared.weight",
                  "embed.0.weight": "shared.weight"}


def marian_name(ours: str, prefix: str = "model.", tied: bool = True) -> str:
    """The name a Marian file gives one of our encoder or decoder keys, for messages (`split_marian_state`'s map read
    backwards): a tensor missing from the file was named as ``encoders.0.feed_forward.w_1.bias``, a name the file
    does not use (30th hostile pass); it is ``model.encoder.layers.0.fc1.bias`` there. `prefix` is the file's for
    its base model's keys ("" in a MarianModel file, whose keys were all named with "model." once, fix30h); `tied`
    the config's tie_word_embeddings (false: the output layer is ``lm_head.weight``)."""
    for start, side, names in (("encoders.", "encoder", ENCODER_LAYER), ("decoders.", "decoder", DECODER_LAYER)):
        index, _, tail = ours.removeprefix(start).partition(".")
        module, _, param = tail.rpartition(".")
        theirs = {v: k for k, v in names.items()}.get(module)
        if ours.startswith(start) and theirs is not None:
            return f"{prefix}{side}.layers.{index}.{theirs}.{param}"
    if ours == "output_layer.weight" and not tied:
        return "lm_head.weight"
    other = DECODER_OTHERS.get(ours)
    if other is None:
        return ours
    return other if other == "final_logits_bias" else prefix + other


def check_sizes(plain: dict[str, torch.Tensor], hub: MarianHub, source: str) -> None:
    """config.json's sizes against the weights', one line for the first that differs ("config.json says d_model 64,
    the weights have 32"), before any tensor is mapped: otherwise every tensor would be listed as a mismatch."""
    found: list[tuple[str, int, str]] = []  # (config key, size in the weights, the tensor that says so)
    embedding = next((k for k in EMBEDDING_KEYS if k in plain), None)
    if embedding is not None and plain[embedding].dim() == 2:
        found += [("vocab_size", plain[embedding].size(0), embedding), ("d_model", plain[embedding].size(1), embedding)]
    for side in ("encoder", "decoder"):
        parts = [k.split(".") for k in plain if k.startswith(f"{side}.layers.")]
        indices = {int(part[2]) for part in parts if is_digits(part[2])}
        if indices:
            found.append((f"{side}_layers", max(indices) + 1, f"{side}.layers.{max(indices)}"))
        fc1 = f"{side}.layers.0.fc1.weight"
        if fc1 in plain and plain[fc1].dim() == 2:
            found.append((f"{side}_ffn_dim", plain[fc1].size(0), fc1))
    for key, size, tensor in found:
        if size != hub[key]:
            raise SateError(f"{source}: config.json says {key} {hub[key]}, the weights have {size} ({tensor}): "
                            "the config and the weights are of different models")


def split_marian_state(state: dict[str, torch.Tensor], hub: MarianHub, source: str) -> MarianWeights:
    """Map every tensor of a Marian checkpoint (MarianMTModel or MarianModel keys) onto ESPnet's names.

    A tensor that fits nowhere, tied copies that differ, or a stored position table that is not Marian's formula
    stop with a `SateError`: nothing is silently dropped.
    """
    out = MarianWeights()
    plain = {k.removeprefix("model."): v for k, v in state.items()}
    check_sizes(plain, hub, source)
    unknown, copies = [], {}
    for key, tensor in plain.items():
        if key.startswith("encoder.layers."):
            ours = _layer_key(key[len("encoder.layers."):], ENCODER_LAYER, "encoders.")
            target = out.encoder
        elif key.startswith("decoder.layers."):
            ours = _layer_key(key[len("decoder.layers."):], DECODER_LAYER, "decoders.")
            target = out.decoder
        elif key in EMBEDDING_KEYS or key == "lm_head.weight":
            copies[key] = tensor
            continue
        elif key == "final_logits_bias":
            out.decoder["output_layer.bias"] = tensor.reshape(-1)
            continue
        elif key in POSITION_KEYS:
            table = marian_table(tensor.size(0), tensor.size(1))
            if tensor.shape != (hub["max_position_embeddings"], hub["d_model"]) or \
                    not torch.allclose(tensor.float(), table, atol=1e-4):
                raise SateError(f"{source}: {key} is not Marian's sinusoidal table; this model's positions are not "
                                "supported")
            out.notes.append(f"{key}: the stored table equals Marian's sinusoids (computed, not loaded)")
            continue
        else:
            ours = None
        if ours is None:
            unknown.append(key)
        else:
            target[ours] = tensor
    if unknown:
        raise SateError(f"{source}: tensors that fit no part of a Marian model: {', '.join(sorted(unknown)[:8])}")
    shared = [copies[k] for k in EMBEDDING_KEYS if k in copies]
    if not shared:
        raise SateError(f"{source}: no token embedding ({', '.join('model.' + k for k in EMBEDDING_KEYS)})")
    if any(not torch.equal(shared[0], other) for other in shared[1:]):
        raise SateError(f"{source}: the encoder's and decoder's token embeddings differ, but the config shares them")
    out.embedding = shared[0]
    lm_head = copies.get("lm_head.weight")
    if hub["tie_word_embeddings"]:
        if lm_head is not None and not torch.equal(lm_head, out.embedding):
            raise SateError(f"{source}: lm_head.weight differs from the embedding, but tie_word_embeddings is true")
    elif lm_head is None:
        raise SateError(f"{source}: tie_word_embeddings is false but there is no lm_head.weight")
    else:
        out.decoder["output_layer.weight"] = lm_head
    if "output_layer.bias" not in out.decoder:
        out.decoder["output_layer.bias"] = torch.zeros(hub["vocab_size"])
        out.notes.append("final_logits_bias: absent, zeros (as transformers loads such a file)")
    out.decoder["embed.0.weight"] = out.embedding
    if hub["tie_word_embeddings"]:
        out.decoder["output_layer.weight"] = out.embedding
    return out
