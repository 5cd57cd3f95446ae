"""The model configuration: defaults, validation and the resolved dict we store in model files.

A config is a plain dict (from YAML). Every key has a default here, so a config names only
what it changes. Unknown keys, wrong types, out-of-range values and keys that do nothing for
the chosen task or type all raise `SateError`: a typo must never train the wrong model.
The resolved config (all defaults filled in) is what a model file stores, so a model is
rebuilt exactly even if the defaults here change later.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from sate.errors import SateError
from sate.models.hub.settings import fill_hub_sections

TASKS = ("asr", "mt", "st")
# The hf_* types are models downloaded from the Hugging Face hub (sate.models.hub): raw 16 kHz waveforms in.
HUB_ACOUSTIC_TYPES = ("hf_wav2vec2", "hf_hubert", "hf_wavlm")
ACOUSTIC_TYPES = ("conformer", "transformer", *HUB_ACOUSTIC_TYPES)
# hf_marian: an OPUS-MT (Marian) model's encoder and decoder, on ESPnet's post-norm blocks.
TEXT_TYPES = ("transformer", "hf_marian")
# "none" passes the acoustic states to the decoder unchanged: the E2E ST baseline (textual.layers 0).
ADAPTOR_TYPES = ("none", "linear", "soft", "league", "gated", "inter", "shrink")
SHRINK_MODES = ("soft", "league")
# Adaptor types whose output contains the linear branch ReLU(Dropout(LN(W·h + b))).
LINEAR_ADAPTORS = ("linear", "league", "gated")
# Adaptor types with the soft branch P·E: they read the CTC posteriors P.
SOFT_ADAPTORS = ("soft", "league", "gated", "inter", "shrink")
# E of the soft branch: the MT source embedding (the paper), or the decoder's (the authors' code, joint vocabulary).
ADAPTOR_EMBEDDINGS = ("source", "decoder")
# Loss scale: summed per utterance and averaged over the batch (ESPnet), or divided by target tokens (fairseq).
LOSS_NORMALIZATIONS = ("utterance", "token")

# section -> key -> default. None defaults are "optional" values (a path, or "same as d_model").
DEFAULTS: dict[str, Any] = {
    "d_model": 256,
    "acoustic": {
        "type": "conformer",
        "layers": 12,
        "heads": 4,
        "ffn": 1024,
        "kernel": 15,
        "frontend_channels": None,
        "dropout": 0.1,
        "path": None,
        "hub": None,
        "freeze_feature_extractor": True,
    },
    "ctc": {"layer": None, "dropout": 0.0, "bias": True},
    "adaptor": {"type": "league", "temperature": 1.0, "dropout": 0.1, "shrink_mode": "league", "keep_blank": False,
                "embedding": "source"},
    "textual": {"type": "transformer", "layers": 6, "heads": 4, "ffn": 1024, "dropout": 0.1, "path": None,
                "hub": None},
    "decoder": {"type": "transformer", "layers": 6, "heads": 4, "ffn": 1024, "dropout": 0.1, "tie_embeddings": False},
    "loss": {
        "ctc_weight": 0.3,
        "label_smoothing": 0.1,
        "normalize": "utterance",
        "kd": {"asr_weight": 0.0, "mt_weight": 0.0, "topk": 0, "asr_teacher": None, "mt_teacher": None},
    },
}

# One line per key for `sate config`; a test checks that every key of DEFAULTS has one.
HELP: dict[str, str] = {
    "d_model": "the width of every part; ASR, MT and SATE share it so that weights can move between them",
    "acoustic": "the acoustic encoder: conv2d subsampling (4x) and Conformer or Transformer blocks, with CTC on top",
    "acoustic.type": "conformer | transformer (on fbank) | hf_wav2vec2 | hf_hubert | hf_wavlm (a downloaded model "
                     "on 16 kHz waveforms, data.features waveform)",
    "acoustic.layers": "blocks",
    "acoustic.heads": "attention heads",
    "acoustic.ffn": "feed-forward width",
    "acoustic.kernel": "conformer only: the depthwise convolution's kernel",
    "acoustic.frontend_channels": "channels of the conv2d front-end (null: d_model, as ESPnet; fewer is faster)",
    "acoustic.dropout": "dropout of every sub-layer",
    "acoustic.path": "hf_* only: the downloaded model directory (config.json, preprocessor_config.json, weights)",
    "acoustic.hub": "hf_* only: filled from acoustic.path when the config is resolved (leave it out)",
    "acoustic.freeze_feature_extractor": "hf_* only: the convolutional feature extractor is not trained",
    "ctc": "the CTC head: a linear projection of an acoustic layer's output onto the source vocabulary",
    "ctc.layer": "the acoustic layer it reads (null: the top); the layers above continue from that layer",
    "ctc.dropout": "dropout on its input, drawn anew for the loss and for the adaptor's posteriors",
    "ctc.bias": "the projection has a bias (ESPnet; false: the authors' code)",
    "adaptor": "maps acoustic states into the MT embedding space",
    "adaptor.type": "none | linear | soft | league | gated | inter | shrink (docs/models.md says what each does)",
    "adaptor.temperature": "softmax temperature of the CTC posteriors in the soft branch",
    "adaptor.dropout": "dropout of the linear branch",
    "adaptor.shrink_mode": "shrink only: soft | league, the adaptor applied to the shrunk sequence",
    "adaptor.keep_blank": "shrink only: keep the segments where CTC says blank",
    "adaptor.embedding": "E of the soft branch: source (the MT source embedding) | decoder (the decoder's input "
                         "embedding; needs one joint vocabulary, sate vocab --joint)",
    "textual": "the textual encoder (Transformer) on top of the adaptor; 0 layers for the E2E baseline",
    "textual.type": "transformer (ours) | hf_marian (an OPUS-MT model's encoder; its sizes come from textual.path)",
    "textual.layers": "blocks",
    "textual.heads": "attention heads",
    "textual.ffn": "feed-forward width",
    "textual.dropout": "dropout of every sub-layer",
    "textual.path": "hf_marian only: the downloaded Marian directory (config.json, weights, *.spm, vocab.json)",
    "textual.hub": "hf_marian only: filled from textual.path when the config is resolved (leave it out)",
    "decoder": "the Transformer decoder (for ASR: 0 layers is CTC only, more is hybrid CTC/attention)",
    "decoder.type": "transformer | hf_marian (the Marian model's decoder, with textual.type hf_marian)",
    "decoder.layers": "blocks",
    "decoder.heads": "attention heads",
    "decoder.ffn": "feed-forward width",
    "decoder.dropout": "dropout of every sub-layer",
    "decoder.tie_embeddings": "the output projection shares the input embedding's weights",
    "loss": "L = (1-ctc_weight)((1-mt_weight) CE + mt_weight KD_mt) "
            "+ ctc_weight((1-asr_weight) CTC + asr_weight KD_asr)",
    "loss.ctc_weight": "weight of the CTC side",
    "loss.label_smoothing": "label smoothing of the cross-entropy",
    "loss.normalize": "utterance (summed per utterance, averaged over the batch: ESPnet) | "
                      "token (divided by the target tokens: fairseq); clip_norm binds far more often with utterance",
    "loss.kd": "knowledge distillation from frozen teachers",
    "loss.kd.asr_weight": "distillation of the CTC posteriors from the ASR teacher",
    "loss.kd.mt_weight": "distillation of the decoder outputs from the MT teacher",
    "loss.kd.topk": "distil over the teacher's top k tokens only (0: the full distribution)",
    "loss.kd.asr_teacher": "the ASR teacher's model file (sate train --init-from asr=PATH fills it)",
    "loss.kd.mt_teacher": "the MT teacher's model file (sate train --init-from mt=PATH fills it)",
}

# Which sections (and loss keys) each task has.
TASK_SECTIONS = {
    "asr": ("d_model", "acoustic", "ctc", "decoder", "loss"),
    "mt": ("d_model", "textual", "decoder", "loss"),
    "st": ("d_model", "acoustic", "ctc", "adaptor", "textual", "decoder", "loss"),
}
TASK_LOSS_KEYS = {"asr": ("ctc_weight", "label_smoothing", "normalize"), "mt": ("label_smoothing", "normalize"),
                  "st": ("ctc_weight", "label_smoothing", "normalize", "kd")}
# An ASR model is CTC-only unless it has decoder layers (hybrid CTC/attention).
ASR_DECODER_LAYERS = 0

# Types a key may hold (None-default keys say so here; bools never pass as ints).
OPTIONAL_TYPES = {"frontend_channels": int, "layer": int, "asr_teacher": str, "mt_teacher": str, "path": str,
                  "hub": dict}
# Keys whose value is a dict kept whole (not a config section).
LEAF_DICTS = ("hub",)


def _in(choices: tuple[str, ...]) -> Callable[[Any], bool]:
    return lambda v: v in choices


CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "d_model": (lambda v: v > 0 and v % 2 == 0, "a positive even number"),
    "acoustic.type": (_in(ACOUSTIC_TYPES), f"one of {', '.join(ACOUSTIC_TYPES)}"),
    "acoustic.kernel": (lambda v: v > 0 and v % 2 == 1, "a positive odd number"),
    "acoustic.frontend_channels": (lambda v: v is None or v > 0, "positive or null"),
    "adaptor.type": (_in(ADAPTOR_TYPES), f"one of {', '.join(ADAPTOR_TYPES)}"),
    "textual.type": (_in(TEXT_TYPES), f"one of {', '.join(TEXT_TYPES)}"),
    "decoder.type": (_in(TEXT_TYPES), f"one of {', '.join(TEXT_TYPES)}"),
    "adaptor.temperature": (lambda v: v > 0, "positive"),
    "adaptor.shrink_mode": (_in(SHRINK_MODES), f"one of {', '.join(SHRINK_MODES)}"),
    "adaptor.embedding": (_in(ADAPTOR_EMBEDDINGS), f"one of {', '.join(ADAPTOR_EMBEDDINGS)}"),
    "ctc.layer": (lambda v: v is None or v >= 1, "null (the top layer) or at least 1"),
    "ctc.dropout": (lambda v: 0.0 <= v < 1.0, "in [0, 1)"),
    "loss.normalize": (_in(LOSS_NORMALIZATIONS), f"one of {', '.join(LOSS_NORMALIZATIONS)}"),
    "loss.ctc_weight": (lambda v: 0.0 <= v <= 1.0, "in [0, 1]"),
    "loss.label_smoothing": (lambda v: 0.0 <= v < 1.0, "in [0, 1)"),
    "loss.kd.asr_weight": (lambda v: 0.0 <= v <= 1.0, "in [0, 1]"),
    "loss.kd.mt_weight": (lambda v: 0.0 <= v <= 1.0, "in [0, 1]"),
    "loss.kd.topk": (lambda v: v >= 0, "0 (full distribution) or a positive number"),
}
for _section in ("acoustic", "textual", "decoder"):
    CHECKS[f"{_section}.layers"] = (lambda v: v >= 1, "at least 1")
    CHECKS[f"{_section}.heads"] = (lambda v: v >= 1, "at least 1")
    CHECKS[f"{_section}.ffn"] = (lambda v: v >= 1, "at least 1")
    CHECKS[f"{_section}.dropout"] = (lambda v: 0.0 <= v < 1.0, "in [0, 1)")
CHECKS["adaptor.dropout"] = (lambda v: 0.0 <= v < 1.0, "in [0, 1)")


def _inapplicable(task: str, conf: dict[str, Any]) -> dict[str, str]:
    """Keys that do nothing given the other values -> why. Setting one of them is an error."""
    why: dict[str, str] = {}
    acoustic_type = conf.get("acoustic", {}).get("type")
    if acoustic_type == "transformer":
        why["acoustic.kernel"] = "it only applies to acoustic.type conformer"
    if acoustic_type in HUB_ACOUSTIC_TYPES:
        for key in ("kernel", "frontend_channels", "dropout"):
            why[f"acoustic.{key}"] = f"acoustic.type {acoustic_type} takes it from acoustic.path's config.json"
    elif acoustic_type is not None:
        for key in ("path", "hub", "freeze_feature_extractor"):
            why[f"acoustic.{key}"] = "it only applies to the hf_* acoustic types"
    if conf.get("textual", {}).get("type") == "transformer":
        why["textual.path"] = why["textual.hub"] = "it only applies to textual.type hf_marian"
    adaptor = conf.get("adaptor", {})
    kind = adaptor.get("type")
    if kind == "none":
        for key in ("temperature", "dropout", "shrink_mode", "keep_blank", "embedding"):
            why[f"adaptor.{key}"] = "adaptor.type none has no adaptor"
    elif kind is not None:
        if kind == "linear":
            why["adaptor.temperature"] = "adaptor.type linear uses no CTC posteriors"
            why["adaptor.embedding"] = "adaptor.type linear has no soft branch"
        if kind != "shrink":
            why["adaptor.shrink_mode"] = why["adaptor.keep_blank"] = "it only applies to adaptor.type shrink"
        inner = adaptor["shrink_mode"] if kind == "shrink" else kind
        if inner not in LINEAR_ADAPTORS:
            why["adaptor.dropout"] = f"adaptor {kind!r} has no linear branch"
    if task == "asr" and conf["decoder"]["layers"] == 0:
        for key in ("heads", "ffn", "dropout", "tie_embeddings"):
            why[f"decoder.{key}"] = "the ASR model has no decoder (decoder.layers is 0)"
        why["loss.ctc_weight"] = why["loss.label_smoothing"] = "a CTC-only ASR model has only the CTC loss"
    if task == "st":
        if conf["textual"]["layers"] == 0:
            for key in ("heads", "ffn", "dropout"):
                why[f"textual.{key}"] = "the ST model has no textual encoder (textual.layers is 0)"
        kd, ctc_weight = conf["loss"]["kd"], conf["loss"]["ctc_weight"]
        if ctc_weight == 0:
            why["loss.kd.asr_weight"] = "loss.ctc_weight is 0, and KD_asr is part of the CTC side"
        if ctc_weight == 1:
            why["loss.kd.mt_weight"] = "loss.ctc_weight is 1, and KD_mt is part of the decoder side"
        if kd["asr_weight"] == 0:
            why["loss.kd.asr_teacher"] = "loss.kd.asr_weight is 0"
        if kd["mt_weight"] == 0:
            why["loss.kd.mt_teacher"] = "loss.kd.mt_weight is 0"
        if kd["asr_weight"] == 0 and kd["mt_weight"] == 0:
            why["loss.kd.topk"] = "no distillation weight is set"
    return why


def _check_baseline_pair(conf: dict[str, Any]) -> None:
    """adaptor.type none and textual.layers 0 only come together: the E2E ST baseline, acoustic encoder -> decoder.

    An adaptor only prepares textual-encoder input (the encoder then adds √d scaling and positions,
    as MT does to embeddings): without a textual encoder it has no purpose. A textual encoder fed
    raw acoustic states would just be a deeper acoustic encoder, neither SATE nor the baseline.
    """
    kind, layers = conf["adaptor"]["type"], conf["textual"]["layers"]
    if kind == "none" and layers:
        raise SateError(f"model config: adaptor.type none (the E2E ST baseline) needs textual.layers 0, "
                        f"got {layers}: the acoustic states go to the decoder unchanged")
    if kind != "none" and not layers:
        raise SateError(f"model config: textual.layers 0 (no textual encoder) needs adaptor.type none, "
                        f"got {kind!r}: an adaptor only prepares the textual encoder's input")


def _check_ctc_layer(task: str, conf: dict[str, Any]) -> None:
    """ctc.layer at most the acoustic depth; below the top only where the layers above still serve a loss.

    A CTC-only ASR model has nothing above its CTC layer to train. An adaptor with a soft branch reads
    the CTC posteriors next to the acoustic states, so both must come from the same layer: SATE's
    boundary between acoustic and textual encoding is the CTC layer, moved by changing acoustic.layers.
    """
    layer, depth = conf["ctc"]["layer"], conf["acoustic"]["layers"]
    if layer is None or layer == depth:
        return
    if conf["acoustic"]["type"] in HUB_ACOUSTIC_TYPES:
        raise SateError(f"model config: ctc.layer {layer} below the top is not supported for acoustic.type "
                        f"{conf['acoustic']['type']}; CTC reads its top layer")
    if layer > depth:
        raise SateError(f"model config: ctc.layer {layer} is above the top acoustic layer (acoustic.layers {depth})")
    if task == "asr" and conf["decoder"]["layers"] == 0:
        raise SateError(f"model config: ctc.layer {layer} below the top of a CTC-only ASR model would leave "
                        f"acoustic layers {layer + 1}-{depth} untrained; set acoustic.layers: {layer} instead")
    kind = conf.get("adaptor", {}).get("type")
    if kind in SOFT_ADAPTORS:
        raise SateError(f"model config: ctc.layer {layer} below the top does not combine with adaptor.type "
                        f"{kind}, whose soft branch reads the CTC posteriors beside the top acoustic states; "
                        f"to end the acoustic encoder at layer {layer}, set acoustic.layers: {layer}")


def _check_type(name: str, value: Any, default: Any) -> Any:
    leaf = name.rsplit(".", 1)[-1]
    want = OPTIONAL_TYPES.get(leaf, type(default))
    if default is None and value is None:
        return None
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bool) != (want is bool) or not isinstance(value, want):
        raise SateError(f"model config: {name} must be {want.__name__}, got {value!r}")
    return value


def _merge(name: str, default: Any, given: Any) -> Any:
    """Fill defaults into `given`, checking names and types, recursively."""
    if not isinstance(default, dict):
        return _check_type(name, given, default)
    if not isinstance(given, dict):
        raise SateError(f"model config: {name or 'the model section'} must be a mapping, got {given!r}")
    keys = tuple(default)
    unknown = sorted(set(given) - set(keys))
    if unknown:
        where = f"{name}." if name else ""
        raise SateError(f"model config: unknown key(s) {', '.join(where + k for k in unknown)}; "
                        f"known: {', '.join(where + k for k in keys)}")
    return {k: _merge(f"{name}.{k}" if name else k, default[k], given.get(k, copy.deepcopy(default[k])))
            for k in keys}


def _flatten(conf: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in conf.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and key not in LEAF_DICTS:
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def task_defaults(task: str) -> dict[str, Any]:
    """Every model key of `task` with its default: the sections and loss terms that task has."""
    if task not in TASKS:
        raise SateError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    defaults = {k: copy.deepcopy(DEFAULTS[k]) for k in TASK_SECTIONS[task]}
    defaults["loss"] = {k: copy.deepcopy(DEFAULTS["loss"][k]) for k in TASK_LOSS_KEYS[task]}
    if task == "asr":
        defaults["decoder"]["layers"] = ASR_DECODER_LAYERS
    return defaults


def uses_source_embedding(adaptor: dict[str, Any]) -> bool:
    """Whether an ST model has E_src: a soft branch multiplying CTC posteriors by the source embedding.

    linear and none have no soft branch; with ``embedding: decoder`` it multiplies by the decoder's.
    """
    return adaptor["type"] in SOFT_ADAPTORS and adaptor["embedding"] == "source"


def resolve_config(task: str, conf: dict[str, Any] | None) -> dict[str, Any]:
    """Return the full config for `task` with defaults filled in, or raise `SateError`."""
    given = {} if conf is None else conf
    defaults = task_defaults(task)
    resolved = _merge("", defaults, given)
    fill_hub_sections(task, resolved, given)
    flat = _flatten(resolved)
    checks = dict(CHECKS)
    if task == "asr":
        checks["decoder.layers"] = (lambda v: v >= 0, "0 (CTC only) or more")
    if task == "st":
        checks["textual.layers"] = (lambda v: v >= 0, "0 (no textual encoder, with adaptor.type none) or more")
    for name, value in flat.items():
        check = checks.get(name)
        if check is not None and not check[0](value):
            raise SateError(f"model config: {name} must be {check[1]}, got {value!r}")
    if task == "st":
        _check_baseline_pair(resolved)
    if task in ("asr", "st"):
        _check_ctc_layer(task, resolved)
    # A key that does nothing may still appear with its default value: resolved configs
    # (stored in model files) list every key and must resolve again unchanged.
    given_flat, default_flat = _flatten(given), _flatten(defaults)
    for name, reason in _inapplicable(task, resolved).items():
        if name in given_flat and given_flat[name] != default_flat[name]:
            raise SateError(f"model config: {name} is set but does nothing: {reason}")
    for section in ("acoustic", "textual", "decoder"):
        if section in resolved and resolved[section]["layers"] and resolved["d_model"] % resolved[section]["heads"]:
            raise SateError(f"model config: d_model {resolved['d_model']} is not divisible by "
                            f"{section}.heads {resolved[section]['heads']}")
    if task == "st":
        kd = resolved["loss"]["kd"]
        for side in ("asr", "mt"):
            if kd[f"{side}_weight"] > 0 and not kd[f"{side}_teacher"]:
                raise SateError(f"model config: loss.kd.{side}_weight is {kd[f'{side}_weight']} "
                                f"but loss.kd.{side}_teacher (a model file) is not set "
                                f"(`sate train --init-from {side}=PATH` sets it)")
    return resolved


# Keys that change no computation of trained weights: where a hub model was read from, what training freezes.
TRAINING_ONLY = ("dropout", "path", "freeze_feature_extractor")


def without_dropout(section: Any) -> Any:
    """A config section minus dropout rates (and the keys of TRAINING_ONLY): the settings two models must share to
    swap weights."""
    if isinstance(section, dict):
        return {k: without_dropout(v) if k not in LEAF_DICTS else v for k, v in section.items()
                if k not in TRAINING_ONLY}
    return section
