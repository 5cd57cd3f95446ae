"""Whisper's decoder, from either directory format: what turns the encoder's states into Whisper's own transcript.

The computation is Whisper's: token embeddings plus a learned position table, pre-LN layers of causal
self-attention, cross-attention over the encoder's states and a GELU feed-forward, a final LayerNorm, and output
logits through the token embedding itself (tied). Keys, values and the cross-attention's projections of the
encoder's states are cached, so a greedy step costs one position (`sate.models.hub.whisper_asr` decodes with it).

Weights in the two formats (`sate.models.hub.whisper_files` reads the encoder's):

- Hugging Face: ``model.decoder.*`` (``decoder.*`` for WhisperModel), q, k and v separate, k without a bias;
- CTranslate2: ``decoder/*`` in model.bin, self-attention's q, k, v fused (``linear_0``), cross-attention's q
  alone (``linear_0``) and k, v fused (``linear_1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
from torch import nn
from torch.nn import functional as F

from sate.errors import SateError
from sate.models.hub.ctranslate2_file import ModelIndex, read_tensors
from sate.models.hub.files import Claims, check_config_sizes, check_weights, positive_sizes, read_json, read_weights
from sate.models.hub.whisper_files import ct2_index, ct2_stack, header_shapes, reads, refuse_unused, whisper_format

KV = tuple[torch.Tensor, torch.Tensor]  # keys, values: (B, heads, T, head_dim)
Gelu = Literal["none", "tanh"]  # the feed-forward's GELU: exact, or the tanh approximation (`F.gelu`'s approximate)


@dataclass(frozen=True)
class DecoderSizes:
    """What builds the decoder."""

    d_model: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    positions: int  # the longest token sequence (448 in every release)


def _attend(q: torch.Tensor, kv: KV, heads: int, mask: torch.Tensor | None) -> torch.Tensor:
    """(B, S, D) queries over cached (B, H, T, hd) keys and values -> (B, S, D)."""
    batch, steps, d_model = q.shape
    q = q.view(batch, steps, heads, -1).transpose(1, 2)
    out = F.scaled_dot_product_attention(q, kv[0], kv[1], attn_mask=mask)
    return out.transpose(1, 2).reshape(batch, steps, d_model)


def _split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """(B, T, D) -> (B, H, T, D / H)."""
    return x.view(x.size(0), x.size(1), heads, -1).transpose(1, 2)


class DecoderLayer(nn.Module):
    """x + self_attn(LN(x)) (causal, cached), x + cross_attn(LN(x), encoder states), x + fc2(gelu(fc1(LN(x))))."""

    def __init__(self, d_model: int, heads: int, ffn: int, gelu: Gelu = "none") -> None:
        super().__init__()
        self.heads, self.gelu = heads, gelu
        self.self_norm = nn.LayerNorm(d_model)
        self.self_qkv = nn.Linear(d_model, 3 * d_model)  # fused q, k, v (CTranslate2's layout); k's bias is 0
        self.self_out = nn.Linear(d_model, d_model)
        self.cross_norm = nn.LayerNorm(d_model)
        self.cross_q = nn.Linear(d_model, d_model)
        self.cross_kv = nn.Linear(d_model, 2 * d_model)  # fused k, v of the encoder's states; k's bias is 0
        self.cross_out = nn.Linear(d_model, d_model)
        self.ffn_norm = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn)
        self.fc2 = nn.Linear(ffn, d_model)

    def cross_states(self, memory: torch.Tensor) -> KV:
        """(B, T, D) encoder states -> this layer's cross-attention keys and values, computed once per utterance."""
        k, v = self.cross_kv(memory).chunk(2, dim=-1)
        return _split_heads(k, self.heads), _split_heads(v, self.heads)

    def forward(self, x: torch.Tensor, past: KV | None, causal: torch.Tensor, cross: KV,
                keep: torch.Tensor) -> tuple[torch.Tensor, KV]:
        """(B, S, D) new positions, the cache of the earlier ones, their (S, past + S) mask, the cross keys and
        values and the (B, 1, 1, T) mask of real encoder frames -> (B, S, D) and the cache with the new positions."""
        q, k, v = self.self_qkv(self.self_norm(x)).chunk(3, dim=-1)
        k, v = _split_heads(k, self.heads), _split_heads(v, self.heads)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        x = x + self.self_out(_attend(q, (k, v), self.heads, causal))
        x = x + self.cross_out(_attend(self.cross_q(self.cross_norm(x)), cross, self.heads, keep))
        return x + self.fc2(F.gelu(self.fc1(self.ffn_norm(x)), approximate=self.gelu)), (k, v)


class WhisperDecoder(nn.Module):
    """(B, S) tokens and the encoder's (B, T, d_model) states -> (B, S, vocab) logits (see the module docstring);
    ``gelu``: the feed-forward's (`decoder_gelu`: Whisper's exact GELU, or the tanh approximation an old CTranslate2
    file asks for)."""

    def __init__(self, d_model: int, layers: int, heads: int, ffn: int, vocab: int, positions: int = 448,
                 gelu: Gelu = "none") -> None:
        super().__init__()
        if d_model % heads:
            raise SateError(f"Whisper decoder: d_model {d_model} is not divisible by {heads} heads")
        self.sizes = DecoderSizes(d_model, layers, heads, ffn, vocab, positions)
        self.embed = nn.Embedding(vocab, d_model)
        self.register_buffer("positions", torch.zeros(positions, d_model))
        self.layers = nn.ModuleList(DecoderLayer(d_model, heads, ffn, gelu) for _ in range(layers))
        self.layer_norm = nn.LayerNorm(d_model)

    def cross_states(self, memory: torch.Tensor) -> list[KV]:
        """Every layer's cross-attention keys and values of (B, T, d_model) encoder states."""
        return [layer.cross_states(memory) for layer in self.layers]

    def step(self, tokens: torch.Tensor, cache: list[KV] | None, cross: list[KV],
             memory_lengths: torch.Tensor) -> tuple[torch.Tensor, list[KV]]:
        """(B, S) tokens after the cached positions -> (B, S, vocab) logits and the cache with them."""
        past = 0 if cache is None else cache[0][0].size(2)
        steps = tokens.size(1)
        if past + steps > self.sizes.positions:
            raise SateError(f"Whisper's decoder takes {self.sizes.positions} tokens at most, asked for {past + steps}")
        x = self.embed(tokens) + self.positions[past:past + steps]
        rows = torch.arange(steps, device=tokens.device)[:, None] + past
        causal = torch.arange(past + steps, device=tokens.device)[None, :] <= rows
        frames = cross[0][0].size(2)
        keep = (torch.arange(frames, device=tokens.device)[None, :] < memory_lengths[:, None])[:, None, None, :]
        new_cache = []
        for i, layer in enumerate(self.layers):
            x, kv = layer(x, None if cache is None else cache[i], causal, cross[i], keep)
            new_cache.append(kv)
        return self.layer_norm(x) @ self.embed.weight.T, new_cache

    def forward(self, tokens: torch.Tensor, memory: torch.Tensor, memory_lengths: torch.Tensor) -> torch.Tensor:
        """(B, S) tokens, (B, T, d_model) encoder states, (B,) -> (B, S, vocab) logits, each position seeing the
        tokens up to it (teacher forcing)."""
        return self.step(tokens, None, self.cross_states(memory), memory_lengths)[0]


# ------------------------------------------------------------------------------------------------ the files


def decoder_claims(sizes: DecoderSizes) -> Claims:
    """What config.json says of the decoder's tensors (`check_config_sizes`)."""
    return [("d_model", sizes.d_model, "embed_tokens.weight", 1), ("vocab_size", sizes.vocab, "embed_tokens.weight", 0),
            ("max_target_positions", sizes.positions, "embed_positions.weight", 0),
            ("decoder_ffn_dim", sizes.ffn, "layers.0.fc1.weight", 0), ("decoder_layers", sizes.layers, "layers", 0)]


def decoder_sizes(directory: Path) -> DecoderSizes:
    """The decoder's sizes from a Whisper directory's headers (either format)."""
    if whisper_format(directory) == "huggingface":
        path = directory / "config.json"
        config = read_json(path)
        keys = ("d_model", "decoder_layers", "decoder_attention_heads", "decoder_ffn_dim", "vocab_size",
                "max_target_positions")
        sizes = DecoderSizes(*positive_sizes(config, keys, path))
        if sizes.d_model % sizes.heads:  # named here: the decoder's own check names no file
            raise SateError(f"{path}: d_model {sizes.d_model} is not divisible by decoder_attention_heads "
                            f"{sizes.heads}")
        found = header_shapes(directory, "decoder")
        if found is not None:  # before anything is built of these sizes
            check_config_sizes(path, *found, decoder_claims(sizes))
        return sizes
    shapes, layers, heads, d_model = ct2_stack(directory, "decoder", ("embeddings/weight", 2, 1))
    vocab = shapes["decoder/embeddings/weight"][0]
    return DecoderSizes(d_model, layers, heads, shapes["decoder/layer_0/ffn/linear_0/weight"][0], vocab,
                        shapes["decoder/position_encodings/encodings"][0])


# Our names -> CTranslate2's under decoder/ ({i}: layer, {p}: weight or bias, {n}: gamma or beta).
_CT2 = {"layer_norm.{p}": "layer_norm/{n}",
        "layers.{i}.self_norm.{p}": "layer_{i}/self_attention/layer_norm/{n}",
        "layers.{i}.self_qkv.{p}": "layer_{i}/self_attention/linear_0/{p}",
        "layers.{i}.self_out.{p}": "layer_{i}/self_attention/linear_1/{p}",
        "layers.{i}.cross_norm.{p}": "layer_{i}/attention/layer_norm/{n}",
        "layers.{i}.cross_q.{p}": "layer_{i}/attention/linear_0/{p}",
        "layers.{i}.cross_kv.{p}": "layer_{i}/attention/linear_1/{p}",
        "layers.{i}.cross_out.{p}": "layer_{i}/attention/linear_2/{p}",
        "layers.{i}.ffn_norm.{p}": "layer_{i}/ffn/layer_norm/{n}",
        "layers.{i}.fc1.{p}": "layer_{i}/ffn/linear_0/{p}", "layers.{i}.fc2.{p}": "layer_{i}/ffn/linear_1/{p}"}
# Our names -> Hugging Face's under the decoder; the fused projections are built from q_proj, k_proj, v_proj.
_HF = {"layer_norm.{p}": "layer_norm.{p}",
       "layers.{i}.self_norm.{p}": "layers.{i}.self_attn_layer_norm.{p}",
       "layers.{i}.self_out.{p}": "layers.{i}.self_attn.out_proj.{p}",
       "layers.{i}.cross_norm.{p}": "layers.{i}.encoder_attn_layer_norm.{p}",
       "layers.{i}.cross_q.{p}": "layers.{i}.encoder_attn.q_proj.{p}",
       "layers.{i}.cross_out.{p}": "layers.{i}.encoder_attn.out_proj.{p}",
       "layers.{i}.ffn_norm.{p}": "layers.{i}.final_layer_norm.{p}",
       "layers.{i}.fc1.{p}": "layers.{i}.fc1.{p}", "layers.{i}.fc2.{p}": "layers.{i}.fc2.{p}"}


def _names(table: dict[str, str], layers: int) -> dict[str, str]:
    out = {}
    for ours, theirs in table.items():
        for i in range(layers) if "{i}" in ours else [0]:
            for p, n in (("weight", "gamma"), ("bias", "beta")):
                out[ours.format(i=i, p=p)] = theirs.format(i=i, p=p, n=n)
    return out


def _fused(part: dict[str, torch.Tensor], prefix: str, which: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Hugging Face's separate projections `which` (e.g. "qkv") fused; k has no bias there."""
    weight = torch.cat([part[f"{prefix}{p}_proj.weight"] for p in which])
    bias = torch.cat([torch.zeros_like(part[f"{prefix}q_proj.bias"]) if p == "k" else part[f"{prefix}{p}_proj.bias"]
                      for p in which])
    return weight, bias


def decoder_weights(directory: Path, sizes: DecoderSizes) -> tuple[dict[str, torch.Tensor], Path]:
    """The decoder's float32 tensors of a Whisper directory in `WhisperDecoder`'s names, and the file read."""
    if whisper_format(directory) == "ctranslate2":
        index = ct2_index(directory)
        names = {ours: f"decoder/{theirs}" for ours, theirs in _names(_CT2, sizes.layers).items()}
        names |= {"embed.weight": "decoder/embeddings/weight", "positions": "decoder/position_encodings/encodings"}
        tensors = {name: tensor.float() for name, tensor in read_tensors(index, list(names.values())).items()}
        check_weights(tensors, index.path)  # in float32, where it is fastest
        _tied_projection(index, tensors["decoder/embeddings/weight"])
        return {ours: tensors[theirs] for ours, theirs in names.items()}, index.path
    state, source = read_weights(directory, used=reads("decoder", "proj_out.weight"))
    prefix = "model.decoder." if any(k.startswith("model.decoder.") for k in state) else "decoder."
    part = {k[len(prefix):]: v.float() for k, v in state.items() if k.startswith(prefix)}
    check_config_sizes(directory / "config.json", {k: tuple(v.shape) for k, v in part.items()}, prefix,
                       decoder_claims(sizes))
    names = _names(_HF, sizes.layers) | {"embed.weight": "embed_tokens.weight", "positions": "embed_positions.weight"}
    fused = [f"layers.{i}.{a}.{p}_proj.{w}" for i in range(sizes.layers) for a in ("self_attn", "encoder_attn")
             for p in "qkv" for w in ("weight", "bias") if not (p == "k" and w == "bias")]
    missing = [f"{prefix}{k}" for k in [*names.values(), *fused] if k not in part]
    if missing:
        raise SateError(f"{source}: no {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    refuse_unused(part, [*names.values(), *fused], source, prefix, "decoder")
    head = state.get("proj_out.weight")  # the output layer: ours is the embedding, as Whisper ties them
    if head is not None and not torch.equal(head.float(), part["embed_tokens.weight"]):
        raise SateError(f"{source}: proj_out.weight differs from {prefix}embed_tokens.weight; sate's Whisper decoder "
                        "ties its output layer to the embedding, as Whisper's own models do")
    out = {ours: part[theirs] for ours, theirs in names.items()}
    for i in range(sizes.layers):
        out[f"layers.{i}.self_qkv.weight"], out[f"layers.{i}.self_qkv.bias"] = _fused(
            part, f"layers.{i}.self_attn.", "qkv")
        out[f"layers.{i}.cross_kv.weight"], out[f"layers.{i}.cross_kv.bias"] = _fused(
            part, f"layers.{i}.encoder_attn.", "kv")
    return out, source


def _tied_projection(index: ModelIndex, embedding: torch.Tensor) -> None:
    """Refuse a CTranslate2 file whose output layer (``decoder/projection/weight``) is not the embedding, as a
    Hugging Face ``proj_out.weight`` that differs is refused: the converter stores an untied model's ``proj_out``
    there, and sate's decoder, which ties them, decoded with the embedding instead without a word (29th hostile
    pass). A tied model's projection is an alias of the embedding (the same variable), read for nothing."""
    name = "decoder/projection/weight"
    projection = index.variables.get(name)
    if projection is None or projection == index.variables["decoder/embeddings/weight"]:
        return
    if not torch.equal(read_tensors(index, [name])[name].float(), embedding):
        raise SateError(f"{index.path}: {name} differs from decoder/embeddings/weight; sate's Whisper decoder ties "
                        "its output layer to the embedding, as Whisper's own models do")


# CTranslate2's ActivationType ids (include/ctranslate2/ops/activation.h), stored in a decoder's ``activation``.
CT2_ACTIVATIONS = ("ReLU", "GELUTanh", "Swish", "GELU", "GELUSigmoid", "Tanh", "Sigmoid")
# Those sate's decoder runs: 3, exact GELU, is Whisper's, what CTranslate2 >= 3.5 writes (WhisperSpec revision 3);
# 1 is what CTranslate2 3.0-3.4 wrote (revisions 1-2), their "GELU" then and the tanh approximation then and now:
# CTranslate2 4 runs that file's decoder with it, as it says
CT2_GELU: dict[int, Gelu] = {3: "none", 1: "tanh"}


def decoder_gelu(directory: Path) -> Gelu:
    """The GELU of a Whisper directory's decoder: a Hugging Face config's ``activation_function`` other than gelu is
    refused (`whisper_sizes`); a CTranslate2 file's is its ``decoder/activation``. Revision 1-2 files (CTranslate2
    3.0-3.4) store 1, the tanh approximation, which CTranslate2 4 runs: sate read them with exact GELU, so its
    scores were not CTranslate2's, and a revision 3 file of another activation was decoded with GELU without a word
    (review33w). Its encoder has no such variable: CTranslate2 4 runs exact GELU there, as sate does."""
    if whisper_format(directory) == "huggingface":
        return "none"
    index = ct2_index(directory)
    name = "decoder/activation"
    if name not in index.variables:  # CTranslate2 would run ReLU: every converter writes it
        raise SateError(f"{index.path}: no {name} (the decoder's activation, which every ct2-transformers-converter "
                        "writes): convert the model again")
    value = read_tensors(index, [name])[name].float()
    if value.numel() != 1:
        raise SateError(f"{index.path}: {name} has the shape {list(value.shape)}; expected one number")
    number = float(value.reshape(-1)[0])
    if not number.is_integer() or int(number) not in CT2_GELU:
        known = number.is_integer() and 0 <= number < len(CT2_ACTIVATIONS)
        raise SateError(f"{index.path}: {name} is {number:g}{f' ({CT2_ACTIVATIONS[int(number)]})' if known else ''}"
                        "; sate's Whisper decoder runs 3 (GELU, Whisper's) or 1 (GELUTanh, what CTranslate2 3.0-3.4 "
                        "wrote): is this a Whisper converted by ct2-transformers-converter? Convert the model again")
    return CT2_GELU[int(number)]


def load_decoder(directory: Path) -> WhisperDecoder:
    """The decoder of a Whisper directory of either format, with its weights (float32)."""
    sizes = decoder_sizes(directory)
    decoder = WhisperDecoder(**vars(sizes), gelu=decoder_gelu(directory))
    state, source = decoder_weights(directory, sizes)
    ours = decoder.state_dict()
    problems = [f"{k}: {list(v.shape)} in the file, {list(ours[k].shape)} here" for k, v in state.items()
                if v.shape != ours[k].shape]
    if problems:
        raise SateError(f"{source}: not the decoder its sizes describe: {'; '.join(problems[:5])}")
    decoder.load_state_dict(state)
    return decoder
