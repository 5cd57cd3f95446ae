"""What the model config takes from a downloaded hub directory: the ``hub`` dicts and the sizes.

``textual: {type: hf_marian, path: DIR}`` (with ``decoder: {type: hf_marian}``) and ``acoustic: {type:
hf_wav2vec2 | hf_hubert | hf_wavlm, path: DIR}`` name a directory; resolving the config reads its JSON files
once and stores what the modules need under the section's ``hub`` key, and the sizes (layers, heads,
feed-forward, d_model) in the section's own keys. A config without a path (a recipe's, which sets it) resolves
as it is; building its model is then an error (`require_hub`). A model file stores that resolved config, so a model is
rebuilt and decodes without the directory, which it never reads again. A training config that gives ``hub`` beside
a path that is there has the sizes of its hub (the keys that shape the weights) compared with the directory's.

Every value comes from the directory's files, never from the `transformers` class defaults: MarianConfig's
defaults (d_model 1024, gelu, no embedding scale) are not those of the opus-mt files (512, swish, √d). Settings
that the modules here do not implement are refused with the key that has them. Pure Python: `sate config`
resolves configs without importing torch.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import NotRequired, Protocol, TypedDict

from sate.errors import SateError, first_few, shown
from sate.files import RawMapping, require_file
from sate.layout import CT2_MODEL
from sate.models.hub.files import (
    Claims,
    check_config_sizes,
    ctranslate2_spec,
    get_key,
    hub_directory,
    read_json,
    safetensors_shapes,
)
from sate.models.registry import MAX_BLOCKS, MAX_WIDTH
from sate.numbers import is_number

MARIAN = "hf_marian"
WHISPER = "whisper"
# Our acoustic type -> the model_type of its config.json.
SPEECH_TYPES = {"hf_wav2vec2": "wav2vec2", "hf_hubert": "hubert", "hf_wavlm": "wavlm"}
# Feed-forward activations of Marian configs we build (transformers' names).
MARIAN_ACTIVATIONS = ("swish", "silu", "gelu", "gelu_new", "relu")
# Marian keys without a file default: read from config.json or refused.
MARIAN_REQUIRED = ("d_model", "encoder_layers", "encoder_attention_heads", "encoder_ffn_dim", "decoder_layers",
                   "decoder_attention_heads", "decoder_ffn_dim", "activation_function", "scale_embedding",
                   "max_position_embeddings", "vocab_size", "pad_token_id", "eos_token_id", "decoder_start_token_id")
# Of those, the sizes: whole numbers of at least 1.
MARIAN_SIZES = ("d_model", "encoder_layers", "encoder_attention_heads", "encoder_ffn_dim", "decoder_layers",
                "decoder_attention_heads", "decoder_ffn_dim", "max_position_embeddings", "vocab_size")
# Keys every transformers config has, with the default a file may leave out.
MARIAN_OPTIONAL = {"tie_word_embeddings": True, "share_encoder_decoder_embeddings": True}
# Speech config.json keys -> our hub names (the torchaudio builder's arguments, shortened).
SPEECH_KEYS = {"conv_bias": "conv_bias", "hidden_size": "hidden_size", "num_conv_pos_embeddings": "pos_conv_kernel",
               "num_conv_pos_embedding_groups": "pos_conv_groups", "num_hidden_layers": "layers",
               "num_attention_heads": "heads", "intermediate_size": "ffn", "do_stable_layer_norm": "layer_norm_first",
               "feat_proj_dropout": "projection_dropout", "attention_dropout": "attention_dropout",
               "activation_dropout": "ff_interm_dropout", "hidden_dropout": "dropout", "layerdrop": "layer_drop",
               "layer_norm_eps": "layer_norm_eps"}
SPEECH_BOOLS = ("conv_bias", "do_stable_layer_norm")
WAVLM_KEYS = {"num_buckets": "num_buckets", "max_bucket_distance": "max_distance"}
# Of those, the sizes (whole numbers >= 1) and the rates (dropouts, from 0 to 1).
SPEECH_SIZES = ("hidden_size", "num_conv_pos_embeddings", "num_conv_pos_embedding_groups", "num_hidden_layers",
                "num_attention_heads", "intermediate_size", "num_buckets", "max_bucket_distance")
SPEECH_RATES = ("feat_proj_dropout", "attention_dropout", "activation_dropout", "hidden_dropout", "layerdrop")
SAMPLE_RATE = 16000
# acoustic.hub of a Whisper: the fields of `sate.models.hub.whisper_files.WhisperSizes` (a test says they agree)
WHISPER_HUB_KEYS = ("d_model", "layers", "heads", "ffn", "mel_bins", "positions")
# The keys of a given hub that decide which weights the model has and their shapes (a Whisper's are all sizes;
# WavLM's buckets size its relative position table): a training config's hub is compared on these alone with its
# path's folder (`_check_hub_against_path`), its dropouts and Marian's positions (a table computed, not a weight)
# being the user's to change.
SPEECH_SHAPING = ("model_type", "extractor_mode", "conv_layers", "feat_proj_layer_norm", "conv_bias", "hidden_size",
                  "pos_conv_kernel", "pos_conv_groups", "layers", "heads", "ffn", "num_buckets")
MARIAN_SHAPING = ("d_model", "encoder_layers", "encoder_attention_heads", "encoder_ffn_dim", "decoder_layers",
                  "decoder_attention_heads", "decoder_ffn_dim", "vocab_size")
# Marian's sinusoidal table is computed for max_position_embeddings positions when the model is built: a config.json
# saying 1e9 asked for 64 GB before any weight was read, and the line blamed model.d_model. OPUS-MT says 512.
MAX_MARIAN_POSITIONS = 1 << 16


class MarianHub(TypedDict):
    """``textual.hub``: the keys of a Marian config.json that change the model (MARIAN_REQUIRED, MARIAN_OPTIONAL)."""

    d_model: int
    encoder_layers: int
    encoder_attention_heads: int
    encoder_ffn_dim: int
    decoder_layers: int
    decoder_attention_heads: int
    decoder_ffn_dim: int
    activation_function: str
    scale_embedding: bool
    max_position_embeddings: int
    vocab_size: int
    pad_token_id: int
    eos_token_id: int
    decoder_start_token_id: int
    tie_word_embeddings: bool
    share_encoder_decoder_embeddings: bool


class SpeechHub(TypedDict):
    """``acoustic.hub``: a wav2vec2, HuBERT or WavLM directory in the names of torchaudio's builder (SPEECH_KEYS)."""

    model_type: str  # wav2vec2 | hubert | wavlm
    extractor_mode: str  # group_norm | layer_norm
    conv_layers: list[list[int]]  # (channels, kernel, stride) per convolution
    feat_proj_layer_norm: bool
    conv_bias: bool
    hidden_size: int
    pos_conv_kernel: int
    pos_conv_groups: int
    layers: int
    heads: int
    ffn: int
    layer_norm_first: bool
    projection_dropout: float
    attention_dropout: float
    ff_interm_dropout: float
    dropout: float
    layer_drop: float
    layer_norm_eps: float
    do_normalize: bool  # preprocessor_config.json: the model reads zero-mean unit-variance audio
    num_buckets: NotRequired[int]  # WavLM only
    max_distance: NotRequired[int]  # WavLM only


# config.json keys CTranslate2 writes for a Whisper conversion, and for a Transformer (OPUS-MT, NLLB) one
CT2_WHISPER_KEYS = ("suppress_ids", "alignment_heads", "lang_ids")
CT2_TRANSFORMER_KEYS = ("decoder_start_token", "add_source_bos")


def _converted(directory: Path, config: RawMapping) -> str:
    """What a CTranslate2 conversion named as textual.path is, for the line refusing it ('' for other directories):
    an OPUS-MT conversion is told to name the Hugging Face download it came from (its config.json, of decoding
    settings, has no model_type); a Whisper one, as `sate fetch-whisper` prints, was told the same, and its Hugging
    Face download is no Marian model either (30th hostile pass): it is said to be a speech model, for acoustic.path."""
    model_bin = directory / CT2_MODEL
    if "model_type" in config or not model_bin.is_file():
        return ""
    spec = ctranslate2_spec(model_bin)
    if spec == "WhisperSpec" or (spec is None and any(key in config for key in CT2_WHISPER_KEYS)):
        return (f"; {directory} is a CTranslate2 Whisper ({CT2_MODEL}): a speech model, which belongs in "
                "model.acoustic.path (acoustic.type whisper)")
    if spec == "TransformerSpec" or (spec is None and any(key in config for key in CT2_TRANSFORMER_KEYS)):
        return (f"; {directory} is a CTranslate2 conversion ({CT2_MODEL}): name the Hugging Face download it was "
                "converted from (config.json with model.safetensors or pytorch_model.bin)")
    return f"; {directory} is a CTranslate2 conversion ({CT2_MODEL}, {spec or 'an unknown spec'}), not an OPUS-MT model"


def marian_settings(path: str | Path) -> MarianHub:
    """The ``textual.hub`` dict of a Marian (OPUS-MT) directory: its config.json keys that change the model."""
    directory = hub_directory(path, "textual.path")
    config_path = directory / "config.json"
    config = read_json(config_path)
    if config.get("model_type") != "marian":
        raise SateError(f"{config_path}: model_type is {shown(config.get('model_type'))}, textual.type hf_marian "
                        f"needs a Marian (OPUS-MT) model{_converted(directory, config)}")
    kinds = {"activation_function": str, "scale_embedding": bool}
    hub = MarianHub(**{key: get_key(config, key, config_path, kinds.get(key, int)) for key in MARIAN_REQUIRED},
                    **{key: config.get(key, default) for key, default in MARIAN_OPTIONAL.items()})
    if not hub["share_encoder_decoder_embeddings"]:
        raise SateError(f"{config_path}: separate source and target vocabularies (share_encoder_decoder_embeddings "
                        "false) are not supported; OPUS-MT bilingual models share one")
    # null is vocab_size, as transformers reads it; another size was called share_encoder_decoder_embeddings false, a
    # key the file did not set, when vocab_size alone was edited (28th hostile pass)
    decoder_vocab = config.get("decoder_vocab_size") or hub["vocab_size"]
    if decoder_vocab != hub["vocab_size"]:
        raise SateError(f"{config_path}: decoder_vocab_size {shown(decoder_vocab)} differs from vocab_size "
                        f"{hub['vocab_size']}; OPUS-MT bilingual models share one vocabulary, so the two are equal "
                        "(was one of them edited?)")
    if hub["activation_function"] not in MARIAN_ACTIVATIONS:
        raise SateError(f"{config_path}: activation_function {shown(hub['activation_function'])} is not one of "
                        f"{', '.join(MARIAN_ACTIVATIONS)}")
    for key in MARIAN_SIZES:  # 0 heads was a ZeroDivisionError traceback in the check below
        if hub[key] < 1:
            raise SateError(f"{config_path}: {key} is {hub[key]}; a size must be at least 1")
    # the model config's own bounds, named here: past them, the refusal named the training config and a key
    # (model.d_model, model.decoder.layers) the user never wrote, whose value came from this file
    caps = {**dict.fromkeys(("encoder_layers", "decoder_layers"), MAX_BLOCKS),
            **dict.fromkeys(("d_model", "encoder_ffn_dim", "decoder_ffn_dim", "encoder_attention_heads",
                             "decoder_attention_heads"), MAX_WIDTH)}
    for key, cap in caps.items():
        if hub[key] > cap:
            raise SateError(f"{config_path}: {key} is {shown(hub[key])}; sate builds at most {cap:,}")
    for key in MARIAN_OPTIONAL:
        if not isinstance(hub[key], bool):  # a number went on to the config, refused as model.decoder.tie_embeddings
            raise SateError(f"{config_path}: {key} must be true or false, got {shown(hub[key])}")
    if hub["max_position_embeddings"] > MAX_MARIAN_POSITIONS:
        raise SateError(f"{config_path}: max_position_embeddings is {hub['max_position_embeddings']:,}; at most "
                        f"{MAX_MARIAN_POSITIONS:,} positions are built (OPUS-MT models have 512)")
    if hub["d_model"] % 2 or hub["d_model"] % hub["encoder_attention_heads"] or \
            hub["d_model"] % hub["decoder_attention_heads"]:
        raise SateError(f"{config_path}: d_model {hub['d_model']} must be even and divisible by the heads")
    for key in ("pad_token_id", "eos_token_id", "decoder_start_token_id"):
        if not 0 <= hub[key] < hub["vocab_size"]:
            raise SateError(f"{config_path}: {key} {hub[key]} is outside the vocabulary of {hub['vocab_size']}")
    if hub["eos_token_id"] == hub["pad_token_id"]:  # trained and decoded without a word, every output at its longest
        raise SateError(f"{config_path}: eos_token_id and pad_token_id are both {hub['eos_token_id']}; the decoder "
                        "never emits pad, so it could never end a sentence (OPUS-MT: eos 0, pad the last id)")
    return hub


def speech_settings(path: str | Path, kind: str) -> SpeechHub:
    """The ``acoustic.hub`` dict of a wav2vec2, HuBERT or WavLM directory (config.json, preprocessor_config.json)."""
    directory = hub_directory(path, "acoustic.path")
    config_path = directory / "config.json"
    config = read_json(config_path)
    model_type = SPEECH_TYPES[kind]
    if config.get("model_type") != model_type:
        # a Whisper (Hugging Face's, or CTranslate2's whose config.json has no model_type) was "model_type is None"
        # without saying which acoustic.type reads it (33rd hostile pass)
        whisper = config.get("model_type") == "whisper" or "CTranslate2 Whisper" in _converted(directory, config)
        hint = "; it is a Whisper, which acoustic.type whisper reads" if whisper else ""
        raise SateError(f"{config_path}: model_type is {shown(config.get('model_type'))}, acoustic.type {kind} needs "
                        f"{shown(model_type)}{hint}")
    norm = get_key(config, "feat_extract_norm", config_path, str)
    if norm not in ("group", "layer"):
        raise SateError(f"{config_path}: feat_extract_norm {shown(norm)} is not group or layer")
    for key in ("feat_extract_activation", "hidden_act"):
        if config.get(key, "gelu") != "gelu":
            raise SateError(f"{config_path}: {key} {shown(config[key])} is not supported (only gelu)")
    for key in ("add_adapter", "conv_pos_batch_norm"):
        if config.get(key):
            raise SateError(f"{config_path}: {key} true is not supported")
    layers = [get_key(config, key, config_path, list) for key in ("conv_dim", "conv_kernel", "conv_stride")]
    if len({len(x) for x in layers}) != 1 or not all(isinstance(v, int) for x in layers for v in x):
        raise SateError(f"{config_path}: conv_dim, conv_kernel and conv_stride must be integer lists of one length")
    keys = {**SPEECH_KEYS, **(WAVLM_KEYS if model_type == "wavlm" else {})}
    sizes = {name: get_key(config, key, config_path, bool if key in SPEECH_BOOLS else (int, float))
             for key, name in keys.items()}
    check_speech_values(config, list(keys), layers, config_path)
    shapes = safetensors_shapes(directory / "model.safetensors")
    if shapes is not None:  # before anything is built of these sizes
        check_speech_shapes(config, layers, model_type, shapes, config_path)
    prep_path = directory / "preprocessor_config.json"
    require_file(prep_path, "a preprocessor config",
                 f"{prep_path} is missing: it says whether the model reads normalised audio. Download it "
                        'with the model, or write {"do_normalize": true, "sampling_rate": 16000} (false where the '
                        "model was pre-trained on raw samples, as its model card says)")
    prep = read_json(prep_path)
    if prep.get("sampling_rate", SAMPLE_RATE) != SAMPLE_RATE:
        raise SateError(f"{prep_path}: sampling_rate {prep['sampling_rate']}; sate reads {SAMPLE_RATE} Hz audio")
    return SpeechHub(model_type=model_type, extractor_mode=f"{norm}_norm",
                     conv_layers=[list(t) for t in zip(*layers, strict=True)],
                     feat_proj_layer_norm=bool(config.get("feat_proj_layer_norm", True)), **sizes,
                     do_normalize=bool(get_key(prep, "do_normalize", prep_path, bool)))


def check_speech_values(config: RawMapping, keys: list[str], layers: list[list], path: Path) -> None:
    """The sizes of a speech config.json whole numbers >= 1 that build a model, the rates from 0 to 1, the epsilon
    positive: a size of 16.5 was a TypeError traceback, a negative one torch's "negative dimension", a conv_dim of
    0 a ZeroDivisionError, a stride of 0 failed at the first batch, 3 heads of 16 and a dropout of 2 were
    ValueError tracebacks, and a NaN epsilon trained on NaN without a word."""
    for key in keys:
        value = config[key]
        if key in SPEECH_SIZES and (not isinstance(value, int) or value < 1):
            raise SateError(f"{path}: {key} is {shown(value)}; a size must be a whole number of at least 1")
        if key in SPEECH_RATES and not (is_number(value) and 0 <= value <= 1):
            raise SateError(f"{path}: {key} is {shown(value)}; a dropout must be a number from 0 to 1")
        if key == "layer_norm_eps" and not (is_number(value) and value > 0):
            raise SateError(f"{path}: layer_norm_eps is {shown(value)}; it must be a positive number")
    for key, values in zip(("conv_dim", "conv_kernel", "conv_stride"), layers, strict=True):
        if not values or any(isinstance(v, bool) or v < 1 for v in values):
            raise SateError(f"{path}: {key} is {shown(values)}; each layer's size must be at least 1")
    hidden = config["hidden_size"]
    for key in ("num_attention_heads", "num_conv_pos_embedding_groups"):
        if hidden % config[key]:
            raise SateError(f"{path}: hidden_size {hidden} is not divisible by {key} {config[key]}")


def check_speech_shapes(config: RawMapping, layers: list[list], model_type: str,
                        shapes: dict[str, tuple[int, ...]], path: Path) -> None:
    """A speech config.json's sizes against its model.safetensors header, before anything is built: one line for
    the first that differs, where the weights' loader listed every tensor that did not fit."""
    prefix = f"{model_type}."  # a model saved with a head (Wav2Vec2ForCTC) names its base model so
    shapes = {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in shapes.items()}
    encoder = {k[len("encoder."):]: v for k, v in shapes.items() if k.startswith("encoder.")}
    check_config_sizes(path, encoder, "encoder.", [
        ("intermediate_size", config["intermediate_size"], "layers.0.feed_forward.intermediate_dense.weight", 0),
        ("num_hidden_layers", config["num_hidden_layers"], "layers", 0)])
    conv_dim, conv_kernel, _ = layers
    claims: Claims = [("hidden_size", config["hidden_size"], "feature_projection.projection.weight", 0)]
    claims += [(f"conv_dim[{i}]", size, f"feature_extractor.conv_layers.{i}.conv.weight", 0)
               for i, size in enumerate(conv_dim)]
    claims += [(f"conv_kernel[{i}]", size, f"feature_extractor.conv_layers.{i}.conv.weight", 2)
               for i, size in enumerate(conv_kernel)]
    check_config_sizes(path, shapes, "", claims)
    convs = sum(1 for k in shapes if k.startswith("feature_extractor.conv_layers.") and k.endswith(".conv.weight"))
    if convs and convs != len(conv_dim):
        raise SateError(f"{path} says {len(conv_dim)} convolutions (conv_dim), the weights have {convs} "
                        "(feature_extractor.conv_layers)")


def _listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _given_otherwise(given: RawMapping, sizes: dict[str, object]) -> list[str]:
    """The keys of `sizes` (dotted: ``acoustic.layers``, ``d_model``) that the user's config gives otherwise."""
    differ = []
    for dotted, value in sizes.items():
        section, _, key = dotted.rpartition(".")
        part = given.get(section) if section else given
        mine = part.get(key) if isinstance(part, dict) else None
        if mine is not None and mine != value:
            differ.append(dotted)
    return differ


def _named(dotted: str, keys: str) -> str:
    """A size's dotted key as its file spells it: the model section's own (``d_model``) under `keys` (``model.``);
    `sate.models.config._keyed` names a section's (``acoustic.layers``)."""
    return dotted if "." in dotted else f"{keys}{dotted}"


def _take_sizes(resolved: RawMapping, given: RawMapping, sizes: dict[str, object], where: str, keys: str = "") \
        -> None:
    """Sizes from a directory into the config (dotted keys: ``acoustic.layers``, ``d_model``); those the config
    gives must agree with them, all that do not named in one line: named one a try, a config saved for another
    model took four tries (twenty-eighth hostile pass, review). `keys`: the model section's place in its file
    (``model.``), which names the section's own ``d_model`` (`sate.models.config._keyed` names the others): a
    training config was told to leave out ``d_model``, a key it does not have (thirty-second hostile pass)."""
    differ = _given_otherwise(given, sizes)
    if differ:
        def mine(dotted: str) -> object:
            section, _, key = dotted.rpartition(".")
            return (given[section] if section else given)[key]

        names = [_named(key, keys) for key in differ]
        given_as = _listed([f"{name} is {shown(mine(key))}" for name, key in zip(names, differ, strict=True)])
        raise SateError(f"model config: {given_as} but {where} says {_listed([shown(sizes[key]) for key in differ])}; "
                        f"a hub model's sizes come from its directory (leave {_listed(names)} out)")
    for dotted, value in sizes.items():
        section, _, key = dotted.rpartition(".")
        (resolved[section] if section else resolved)[key] = value


def _check_given_hub(hub: RawMapping, required: Collection[str], whole: Collection[str],
                     section: str = "acoustic") -> None:
    """A ``hub`` the config gives (a resolved config copied, `sate config`'s output) must hold every key the model
    is built from, those in `whole` whole numbers of at least 1: one key set alone (``--set
    model.acoustic.hub.mel_bins=128``) was a KeyError traceback."""
    missing = [key for key in required if key not in hub]
    if missing:
        raise SateError(f"model config: {section}.hub has no {first_few(missing)}: it is filled from {section}.path "
                        f"when left out (leave it out and give {section}.path, the model's folder; or give all of it "
                        f"as `sate config` prints it once {section}.path is given)")
    for key in whole:
        value = hub[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SateError(f"model config: {section}.hub.{key} is {shown(value)}; expected a whole number of at "
                            "least 1")


def _check_hub_against_path(section: str, hub: RawMapping, path: object, read: Callable[[str], RawMapping],
                            shaping: Collection[str], given: RawMapping,
                            taken: Callable[[RawMapping], dict[str, object]], keys: str = "") -> None:
    """A ``hub`` a training config gives beside a `path` that is a folder here must say what that folder says in
    `shaping`, the keys that decide which weights the model has and their shapes: the sizes `sate config` printed
    for one Whisper, kept when the path was changed to another (or edited), built the model of the hub and failed
    only when `sate train` loaded the weights, with a line of unmatched weight names naming no key (twenty-eighth
    hostile pass). Its other keys (the dropouts of an hf_* model, which only its hub sets; Marian's positions) are
    the user's to change. One line names every key to leave out, the section's sizes the config gives otherwise
    (`taken`: dotted keys from a hub) with the hub. A path not there yet is left to `sate train`, and so is a folder
    whose files cannot be read (`read_weights` loads a Marian or speech model without its config files)."""
    if not isinstance(path, str) or not path or not Path(path).is_dir():
        return
    try:
        there = read(path)
    except SateError:
        return
    differ = [key for key in shaping if key in there and key in hub and hub[key] != there[key]]
    if not differ:
        return
    leave = [f"{section}.hub", *(_named(key, keys) for key in _given_otherwise(given, taken(there)))]
    them = f"leave {leave[0]} out (it is" if len(leave) == 1 else f"leave out {_listed(leave)} (they are"
    raise SateError(f"model config: {_listed([f'{section}.hub.{key} is {shown(hub[key])}' for key in differ])} but "
                    f"{section}.path ({path}) says {_listed([shown(there[key]) for key in differ])}; {them} filled "
                    f"from {section}.path)")


def _acoustic_sizes(hub: RawMapping) -> dict[str, object]:
    """The acoustic section's sizes of a Whisper or speech ``hub``."""
    return {f"acoustic.{key}": hub[key] for key in ("layers", "heads", "ffn")}


def _marian_sizes(hub: RawMapping) -> dict[str, object]:
    """The model config's sizes of a Marian ``hub``: d_model, the encoder's and the decoder's."""
    return {"d_model": hub["d_model"], "textual.layers": hub["encoder_layers"],
            "textual.heads": hub["encoder_attention_heads"], "textual.ffn": hub["encoder_ffn_dim"],
            "decoder.layers": hub["decoder_layers"], "decoder.heads": hub["decoder_attention_heads"],
            "decoder.ffn": hub["decoder_ffn_dim"], "decoder.tie_embeddings": hub["tie_word_embeddings"]}


def _fill_whisper(acoustic: RawMapping, resolved: RawMapping, given: RawMapping, check_path: bool = False) -> None:
    """acoustic.hub of a Whisper directory: its sizes (`sate.models.hub.whisper_files.whisper_sizes`)."""
    if acoustic["hub"] is None:
        from sate.models.hub.whisper_files import whisper_settings  # heavy: torch, only for a Whisper directory

        acoustic["hub"] = whisper_settings(acoustic["path"])
    else:
        _check_given_hub(acoustic["hub"], WHISPER_HUB_KEYS, WHISPER_HUB_KEYS)
        if check_path:
            from sate.models.hub.whisper_files import whisper_settings  # heavy: torch, only for a Whisper directory

            _check_hub_against_path("acoustic", acoustic["hub"], acoustic["path"], whisper_settings,  # type: ignore[arg-type]
                                    WHISPER_HUB_KEYS, given, _acoustic_sizes)
    hub = acoustic["hub"]
    _take_sizes(resolved, given, _acoustic_sizes(hub), f"acoustic.hub ({acoustic['path']})")
    freeze = acoustic["freeze"]
    if isinstance(freeze, int) and not isinstance(freeze, bool) and freeze > hub["layers"]:
        raise SateError(f"model config: acoustic.freeze {freeze} is more than the encoder's {hub['layers']} layers "
                        "(all freezes every layer)")


def fill_hub_sections(task: str, resolved: RawMapping, given: RawMapping, check_paths: bool = False,
                      keys: str = "") -> None:
    """Read the hub directories a resolved config names (unless its ``hub`` is set) and fill in their sizes.

    `resolved` is the config merged over the defaults, `given` the user's YAML (`sate.settings.merge`), both raw:
    the sizes must be in place before the typed sections are built and their ranges checked. `check_paths` (a
    training config's, not a model file's: its weights are its own) compares a ``hub`` given beside a path with
    what the path's folder says, where it is there. `keys`: as `_take_sizes`'s.
    """
    acoustic = resolved.get("acoustic")
    # a hub given empty (`hub: {}`, `--set model.acoustic.hub={}`) is a hub given, judged whole: it passed as none
    # given and no path, and the model's build was a KeyError traceback (25th hostile pass)
    named = acoustic is not None and (acoustic["hub"] is not None or bool(acoustic["path"]))
    if named and acoustic["type"] == WHISPER:
        _fill_whisper(acoustic, resolved, given, check_paths)
    if named and acoustic["type"] in SPEECH_TYPES:
        if acoustic["hub"] is None:
            acoustic["hub"] = speech_settings(acoustic["path"], acoustic["type"])
        else:
            # WavLM's own keys apart (NotRequired is not seen in the annotations as strings)
            _check_given_hub(acoustic["hub"], [key for key in SpeechHub.__annotations__ if key not in
                                               WAVLM_KEYS.values()], ("layers", "heads", "ffn"))
            if check_paths:
                kind = acoustic["type"]
                _check_hub_against_path("acoustic", acoustic["hub"], acoustic["path"],
                                        lambda path: speech_settings(path, kind),  # type: ignore[arg-type,return-value]
                                        SPEECH_SHAPING, given, _acoustic_sizes)
        hub = acoustic["hub"]
        _take_sizes(resolved, given, _acoustic_sizes(hub), f"acoustic.hub ({acoustic['path']})")
    textual, decoder = resolved.get("textual"), resolved.get("decoder")
    marian_textual = textual is not None and textual["type"] == MARIAN
    marian_decoder = decoder is not None and decoder["type"] == MARIAN
    if marian_textual != marian_decoder and task != "asr":
        raise SateError("model config: textual.type and decoder.type hf_marian come together (one Marian model)")
    if marian_decoder and task == "asr":
        raise SateError("model config: decoder.type hf_marian needs a Marian textual encoder; an ASR model has none")
    if not marian_textual:
        return
    adaptor = resolved.get("adaptor")
    if adaptor is not None and not (isinstance(given.get("adaptor"), dict) and "type" in given["adaptor"]):
        adaptor["type"] = "shrink"  # keeps the textual input under Marian's positions (docs/models.md)
    if textual["hub"] is None and textual["path"] is None:
        return  # a recipe's config, whose path the recipe sets; building the model needs it (require_hub)
    if textual["hub"] is None:
        textual["hub"] = marian_settings(textual["path"])
    else:
        _check_given_hub(textual["hub"], [*MARIAN_REQUIRED, *MARIAN_OPTIONAL], MARIAN_SIZES, "textual")
        if check_paths:
            _check_hub_against_path("textual", textual["hub"], textual["path"], marian_settings,  # type: ignore[arg-type]
                                    MARIAN_SHAPING, given, _marian_sizes, keys)
    _take_sizes(resolved, given, _marian_sizes(textual["hub"]), f"textual.hub ({textual['path']})", keys)


class HubSection(Protocol):
    """A resolved section of an hf_* type (`sate.models.config`: acoustic, textual)."""

    type: str
    hub: SpeechHub | MarianHub | None


def require_hub(section: HubSection, name: str) -> SpeechHub | MarianHub:
    """The ``hub`` dict of a resolved hf_* section; a config that names no directory cannot build its model."""
    if section.hub is None:
        what = "Marian model" if name == "textual" else "model"
        # a Whisper config run by hand without the path its recipe sets was sent to recipes/mustc/README.md, which
        # says nothing of Whisper; `sate fetch-whisper` gives tiny.en offline
        where = ("`sate fetch-whisper` prints tiny.en's, docs/whisper.md says where to get others; --set "
                 f"model.{name}.path=DIR" if section.type == WHISPER else "recipes/mustc/README.md says how to "
                 "download one")
        raise SateError(f"model config: {name}.type {section.type} needs {name}.path, the directory of the "
                        f"downloaded {what} ({where})")
    return section.hub
