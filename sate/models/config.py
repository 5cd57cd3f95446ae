"""The model configuration: typed sections with their defaults and ranges, the type registries, and validation.

A config names only what it changes (YAML ``model:``); `resolve_config` reads it into the task's frozen
dataclass (`ASRConfig`, `MTConfig`, `STConfig`) with every default filled in. Unknown keys, wrong types,
out-of-range values and keys that do nothing for the chosen task or type all raise `SateError`: a typo
must never train the wrong model. A model file stores the resolved config as a plain dict (`to_dict`), so a
model is rebuilt exactly even if the defaults here change later, and reads back into the same dataclass.

Each choice (acoustic, adaptor, textual and decoder types) is an entry of `sate.models.registry`; the modules
build from the typed sections (docs/development.md). Torch-free: `sate config` resolves configs without torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from sate.errors import SateError
from sate.models.hub.settings import MarianHub, SpeechHub, fill_hub_sections
from sate.models.registry import (
    ACOUSTIC_TYPES,
    ADAPTOR_EMBEDDINGS,
    ADAPTOR_TYPES,
    LOSS_NORMALIZATIONS,
    MAX_BLOCKS,
    MAX_WIDTH,
    SHRINK_MODES,
    TEXT_TYPES,
    AcousticKind,
    AdaptorKind,
)
from sate.settings import (
    FRACTION,
    PATH,
    POSITIVE,
    RATE,
    Check,
    Section,
    at_least,
    helps,
    merge,
    one_of,
    section,
    setting,
)
from sate.settings import build as build_section

TASKS = ("asr", "mt", "st")
PREFIX = "model config: "


# ----------------------------------------------------------------------------------------------------------------
# The sections.

def _up_to(low: int, high: int, wanted: str) -> Check:
    return (lambda v: low <= v <= high, f"{wanted} up to {high:,}")


_BLOCKS: Check = _up_to(1, MAX_BLOCKS, "at least 1 and")
_WIDTH: Check = _up_to(1, MAX_WIDTH, "at least 1 and")


def _freeze_value(value: str | int) -> bool:
    return value in ("all", "none") if isinstance(value, str) else value >= 0


@dataclass(frozen=True)
class AcousticConfig(Section):
    type: str = setting("conformer", "conformer | transformer (on fbank) | hf_wav2vec2 | hf_hubert | hf_wavlm | "
                        "whisper (a downloaded model on 16 kHz waveforms, data.features waveform)",
                        one_of(ACOUSTIC_TYPES))
    layers: int = setting(12, "blocks", _BLOCKS)
    heads: int = setting(4, "attention heads", _BLOCKS)
    ffn: int = setting(1024, "feed-forward width", _WIDTH)
    kernel: int = setting(15, "conformer only: the depthwise convolution's kernel",
                          (lambda v: 0 < v < MAX_WIDTH and v % 2 == 1,
                           f"a positive odd number up to {MAX_WIDTH - 1:,}"))
    frontend_channels: int | None = setting(None, "channels of the conv2d front-end (null: d_model, as ESPnet; "
                                            "fewer is faster)", _up_to(1, MAX_WIDTH, "positive or null,"))
    dropout: float = setting(0.1, "dropout of every sub-layer", RATE)
    path: str | None = setting(None, "hf_*, whisper: the downloaded model directory (hf_*: config.json, "
                               "preprocessor_config.json, weights; whisper: Hugging Face's or faster-whisper's)", PATH)
    # whisper: `sate.models.hub.whisper_files.WhisperSizes` as a dict of ints
    hub: SpeechHub | dict[str, int] | None = setting(None, "hf_*, whisper: filled from acoustic.path when the "
                                                     "config is resolved (leave it out)")
    freeze_feature_extractor: bool = setting(True, "hf_* only: the convolutional feature extractor is not trained")
    freeze: str | int = setting("none", "whisper only: all | none | N (the convolutions and the lowest N layers "
                                "keep their pre-trained weights)", (_freeze_value, "all, none or a layer count >= 0"))

    @property
    def kind(self) -> AcousticKind:
        return ACOUSTIC_TYPES[self.type]


@dataclass(frozen=True)
class CTCConfig(Section):
    layer: int | None = setting(None, "the acoustic layer it reads (null: the top); the layers above continue from "
                                "that layer", (lambda v: v >= 1, "null (the top layer) or at least 1"))
    dropout: float = setting(0.0, "dropout on its input, drawn anew for the loss and for the adaptor's posteriors",
                             RATE)
    bias: bool = setting(True, "the projection has a bias (ESPnet; false: the authors' code)")


@dataclass(frozen=True)
class AdaptorConfig(Section):
    type: str = setting("league", "none | linear | soft | league | gated | inter | shrink (docs/models.md says what "
                        "each does)", one_of(ADAPTOR_TYPES))
    temperature: float = setting(1.0, "softmax temperature of the CTC posteriors in the soft branch", POSITIVE)
    dropout: float = setting(0.1, "dropout of the linear branch", RATE)
    shrink_mode: str = setting("league", "shrink only: soft | league, the adaptor applied to the shrunk sequence",
                               one_of(SHRINK_MODES))
    keep_blank: bool = setting(False, "shrink only: keep the segments where CTC says blank")
    embedding: str = setting("source", "E of the soft branch: source (the MT source embedding) | decoder (the "
                             "decoder's input embedding; needs one joint vocabulary, sate vocab --joint)",
                             one_of(ADAPTOR_EMBEDDINGS))

    @property
    def kind(self) -> AdaptorKind:
        return ADAPTOR_TYPES[self.type]

    @property
    def inner(self) -> AdaptorKind:
        """The adaptor that maps states to embeddings: shrink_mode's for shrink, else this type's."""
        return ADAPTOR_TYPES[self.shrink_mode] if self.kind.shrinks else self.kind

    @property
    def uses_source_embedding(self) -> bool:
        """Whether an ST model has E_src: a soft branch multiplying CTC posteriors by the source embedding.

        linear and none have no soft branch; with ``embedding: decoder`` it multiplies by the decoder's.
        """
        return self.kind.soft and self.embedding == "source"


@dataclass(frozen=True)
class TextualConfig(Section):
    type: str = setting("transformer", "transformer (ours) | hf_marian (an OPUS-MT model's encoder; its sizes come "
                        "from textual.path)", one_of(TEXT_TYPES))
    layers: int = setting(6, "blocks", _BLOCKS)
    heads: int = setting(4, "attention heads", _BLOCKS)
    ffn: int = setting(1024, "feed-forward width", _WIDTH)
    dropout: float = setting(0.1, "dropout of every sub-layer", RATE)
    path: str | None = setting(None, "hf_marian only: the downloaded Marian directory (config.json, weights, *.spm, "
                               "vocab.json)", PATH)
    hub: MarianHub | None = setting(None, "hf_marian only: filled from textual.path when the config is "
                                      "resolved (leave it out)")


@dataclass(frozen=True)
class STTextualConfig(TextualConfig):
    """An ST model's textual encoder may have no layers: the E2E baseline."""

    layers: int = setting(6, "blocks",
                          _up_to(0, MAX_BLOCKS, "0 (no textual encoder, with adaptor.type none) or more,"))


@dataclass(frozen=True)
class DecoderConfig(Section):
    type: str = setting("transformer", "transformer | hf_marian (the Marian model's decoder, with textual.type "
                        "hf_marian)", one_of(TEXT_TYPES))
    layers: int = setting(6, "blocks", _BLOCKS)
    heads: int = setting(4, "attention heads", _BLOCKS)
    ffn: int = setting(1024, "feed-forward width", _WIDTH)
    dropout: float = setting(0.1, "dropout of every sub-layer", RATE)
    tie_embeddings: bool = setting(False, "the output projection shares the input embedding's weights")


@dataclass(frozen=True)
class ASRDecoderConfig(DecoderConfig):
    """An ASR model is CTC-only unless it has decoder layers (hybrid CTC/attention)."""

    layers: int = setting(0, "blocks", _up_to(0, MAX_BLOCKS, "0 (CTC only) or more,"))


_LABEL_SMOOTHING = ("label smoothing of the cross-entropy", RATE)
_NORMALIZE = ("utterance (summed per utterance, averaged over the batch: ESPnet) | token (divided by the target "
              "tokens: fairseq); clip_norm binds far more often with utterance", one_of(LOSS_NORMALIZATIONS))
_CTC_WEIGHT = ("weight of the CTC side", FRACTION)


@dataclass(frozen=True)
class KDConfig(Section):
    asr_weight: float = setting(0.0, "distillation of the CTC posteriors from the ASR teacher", FRACTION)
    mt_weight: float = setting(0.0, "distillation of the decoder outputs from the MT teacher", FRACTION)
    topk: int = setting(0, "distil over the teacher's top k tokens only (0: the full distribution)",
                        at_least(0, "0 (full distribution) or a positive number"))
    asr_teacher: str | None = setting(None, "the ASR teacher's model file (sate train --init-from asr=PATH fills it)",
                                      PATH)
    mt_teacher: str | None = setting(None, "the MT teacher's model file (sate train --init-from mt=PATH fills it)",
                                     PATH)

    def weight(self, side: str) -> float:
        return self.asr_weight if side == "asr" else self.mt_weight


@dataclass(frozen=True)
class MTLoss(Section):
    label_smoothing: float = setting(0.1, *_LABEL_SMOOTHING)
    normalize: str = setting("utterance", *_NORMALIZE)


@dataclass(frozen=True)
class ASRLoss(Section):
    ctc_weight: float = setting(0.3, *_CTC_WEIGHT)
    label_smoothing: float = setting(0.1, *_LABEL_SMOOTHING)
    normalize: str = setting("utterance", *_NORMALIZE)


@dataclass(frozen=True)
class STLoss(Section):
    ctc_weight: float = setting(0.3, *_CTC_WEIGHT)
    label_smoothing: float = setting(0.1, *_LABEL_SMOOTHING)
    normalize: str = setting("utterance", *_NORMALIZE)
    kd: KDConfig = section(KDConfig, "knowledge distillation from frozen teachers")
    mt_text_weight: float = setting(0.0, "μ: beside each speech batch an MT text batch (data.mt_text, else the "
                                    "train splits' transcript/translation pairs; batch.mt_tokens) runs through the "
                                    "source embedding, textual encoder and decoder, adding μ·CE_mt to the loss "
                                    "(0: none)", at_least(0))


_LOSS = ("L = (1-ctc_weight)((1-mt_weight) CE + mt_weight KD_mt) + ctc_weight((1-asr_weight) CTC + asr_weight "
         "KD_asr)")
_D_MODEL = ("the width of every part; ASR, MT and SATE share it so that weights can move between them",
            (lambda v: 0 < v <= MAX_WIDTH and v % 2 == 0, f"a positive even number up to {MAX_WIDTH:,}"))
_ACOUSTIC = "the acoustic encoder: conv2d subsampling (4x) and Conformer or Transformer blocks, with CTC on top"
_CTC = "the CTC head: a linear projection of an acoustic layer's output onto the source vocabulary"
_TEXTUAL = "the textual encoder (Transformer) on top of the adaptor; 0 layers for the E2E baseline"
_DECODER = "the Transformer decoder (for ASR: 0 layers is CTC only, more is hybrid CTC/attention)"


@dataclass(frozen=True)
class ASRConfig(Section):
    """acoustic encoder + CTC, optionally an attention decoder."""

    d_model: int = setting(256, *_D_MODEL)
    acoustic: AcousticConfig = section(AcousticConfig, _ACOUSTIC)
    ctc: CTCConfig = section(CTCConfig, _CTC)
    decoder: ASRDecoderConfig = section(ASRDecoderConfig, _DECODER)
    loss: ASRLoss = section(ASRLoss, _LOSS)


@dataclass(frozen=True)
class MTConfig(Section):
    """source embedding + textual encoder + decoder."""

    d_model: int = setting(256, *_D_MODEL)
    textual: TextualConfig = section(TextualConfig, _TEXTUAL)
    decoder: DecoderConfig = section(DecoderConfig, _DECODER)
    loss: MTLoss = section(MTLoss, _LOSS)


@dataclass(frozen=True)
class STConfig(Section):
    """SATE: acoustic encoder + CTC + adaptor + textual encoder + decoder (or the E2E baseline)."""

    d_model: int = setting(256, *_D_MODEL)
    acoustic: AcousticConfig = section(AcousticConfig, _ACOUSTIC)
    ctc: CTCConfig = section(CTCConfig, _CTC)
    adaptor: AdaptorConfig = section(AdaptorConfig, "maps acoustic states into the MT embedding space")
    textual: STTextualConfig = section(STTextualConfig, _TEXTUAL)
    decoder: DecoderConfig = section(DecoderConfig, _DECODER)
    loss: STLoss = section(STLoss, _LOSS + " + mt_text_weight CE_mt (on text batches)")

    @property
    def has_source_embedding(self) -> bool:
        """Whether the model has E_src: for the soft branch, or for the MT text batches of loss.mt_text_weight."""
        return self.adaptor.uses_source_embedding or self.loss.mt_text_weight > 0


ModelConfig = ASRConfig | MTConfig | STConfig
CONFIG_CLASSES: dict[str, type[ModelConfig]] = {"asr": ASRConfig, "mt": MTConfig, "st": STConfig}


def config_class(task: str) -> type[ModelConfig]:
    if task not in CONFIG_CLASSES:
        raise SateError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    return CONFIG_CLASSES[task]


def task_defaults(task: str) -> dict[str, object]:
    """Every model key of `task` with its default: the sections and loss terms that task has."""
    return config_class(task)().to_dict()


def model_help() -> dict[str, str]:
    """dotted key -> one line, over the three tasks' model sections (for `sate config`)."""
    return {k: v for cls in CONFIG_CLASSES.values() for k, v in helps(cls).items()}


# ----------------------------------------------------------------------------------------------------------------
# Checks across keys.


# What Whisper's encoder has in place of each ESPnet setting it lacks: "without dropout" was said of all three.
WHISPER_HAS_NONE = {"kernel": "with no Conformer convolution module",
                    "frontend_channels": "its own two convolutions for a front-end",
                    "dropout": "without dropout"}

def _inapplicable(conf: ModelConfig) -> dict[str, str]:
    """Keys that do nothing given the other values -> why. Setting one of them is an error."""
    why: dict[str, str] = {}
    if not isinstance(conf, MTConfig):
        acoustic = conf.acoustic
        if acoustic.kind.hub:
            for key, released in WHISPER_HAS_NONE.items():
                why[f"acoustic.{key}"] = (  # whisper reads none of them: config.json was named, whose dropout an
                    # edit changed nothing of (a faster-whisper config.json has none) (29th hostile pass)
                    f"acoustic.type whisper has no such setting: Whisper's encoder runs as released, {released}"
                    if acoustic.type == "whisper" else
                    f"acoustic.type {acoustic.type} takes it from acoustic.path's config.json")
            if acoustic.type == "whisper":
                why["acoustic.freeze_feature_extractor"] = "it only applies to the hf_* acoustic types (whisper: " \
                    "acoustic.freeze)"
            else:
                why["acoustic.freeze"] = "it only applies to acoustic.type whisper"
        else:
            if not acoustic.kind.kernel:
                kernels = " or ".join(name for name, kind in ACOUSTIC_TYPES.items() if kind.kernel)
                why["acoustic.kernel"] = f"it only applies to acoustic.type {kernels}"
            for key in ("path", "hub", "freeze_feature_extractor", "freeze"):
                why[f"acoustic.{key}"] = "it only applies to the hf_* and whisper acoustic types"
    if not isinstance(conf, ASRConfig) and not TEXT_TYPES[conf.textual.type].hub:
        why["textual.path"] = why["textual.hub"] = "it only applies to textual.type hf_marian"
    if isinstance(conf, STConfig):
        why |= _inapplicable_adaptor(conf.adaptor)
    if isinstance(conf, ASRConfig) and conf.decoder.layers == 0:
        for key in ("heads", "ffn", "dropout", "tie_embeddings"):
            why[f"decoder.{key}"] = "the ASR model has no decoder (decoder.layers is 0)"
        why["loss.ctc_weight"] = why["loss.label_smoothing"] = "a CTC-only ASR model has only the CTC loss"
    if isinstance(conf, STConfig):
        if conf.textual.layers == 0:
            for key in ("heads", "ffn", "dropout"):
                why[f"textual.{key}"] = "the ST model has no textual encoder (textual.layers is 0)"
        kd, ctc_weight = conf.loss.kd, conf.loss.ctc_weight
        if ctc_weight == 0:
            why["loss.kd.asr_weight"] = "loss.ctc_weight is 0, and KD_asr is part of the CTC side"
        if ctc_weight == 1:
            why["loss.kd.mt_weight"] = "loss.ctc_weight is 1, and KD_mt is part of the decoder side"
        if kd.asr_weight == 0:
            why["loss.kd.asr_teacher"] = "loss.kd.asr_weight is 0"
        if kd.mt_weight == 0:
            why["loss.kd.mt_teacher"] = "loss.kd.mt_weight is 0"
        if kd.asr_weight == 0 and kd.mt_weight == 0:
            why["loss.kd.topk"] = "no distillation weight is set"
        if conf.textual.layers == 0:
            why["loss.mt_text_weight"] = "the E2E baseline has no textual encoder for text batches"
    return why


_SIBLING_KEY = re.compile(r"(?<![\w./\\-])(?=(?:acoustic|textual|decoder|adaptor|ctc|loss)\.[a-z])")  # not in paths


def _keyed(reason: str, keys: str) -> str:
    """An `_inapplicable` reason with the other keys it names under `keys` (``model.``), as the key refused is:
    `model.loss.kd.asr_teacher is set but does nothing: model.loss.kd.asr_weight is 0`, not `loss.kd.asr_weight`,
    a key the training config does not have."""
    return _SIBLING_KEY.sub(keys, reason) if keys else reason


def _inapplicable_adaptor(adaptor: AdaptorConfig) -> dict[str, str]:
    why: dict[str, str] = {}
    kind = adaptor.type
    if kind == "none":
        for key in ("temperature", "dropout", "shrink_mode", "keep_blank", "embedding"):
            why[f"adaptor.{key}"] = "adaptor.type none has no adaptor"
        return why
    if not adaptor.kind.soft:
        why["adaptor.temperature"] = f"adaptor.type {kind} uses no CTC posteriors"
        why["adaptor.embedding"] = f"adaptor.type {kind} has no soft branch"
    if not adaptor.kind.shrinks:
        why["adaptor.shrink_mode"] = why["adaptor.keep_blank"] = "it only applies to adaptor.type shrink"
    if not adaptor.inner.linear:
        why["adaptor.dropout"] = f"adaptor {kind!r} has no linear branch"
    return why


def _check_baseline_pair(conf: STConfig, head: str, keys: str) -> None:
    """adaptor.type none and textual.layers 0 only come together: the E2E ST baseline, acoustic encoder -> decoder.

    An adaptor only prepares textual-encoder input (the encoder then adds √d scaling and positions,
    as MT does to embeddings): without a textual encoder it has no purpose. A textual encoder fed
    raw acoustic states would just be a deeper acoustic encoder, neither SATE nor the baseline.
    """
    kind, layers = conf.adaptor.type, conf.textual.layers
    if kind == "none" and layers:
        raise SateError(f"{head}{keys}adaptor.type none (the E2E ST baseline) needs {keys}textual.layers 0, "
                        f"got {layers}: the acoustic states go to the decoder unchanged")
    if kind != "none" and not layers:
        raise SateError(f"{head}{keys}textual.layers 0 (no textual encoder) needs {keys}adaptor.type none, "
                        f"got {kind!r}: an adaptor only prepares the textual encoder's input")


def _check_ctc_layer(conf: ASRConfig | STConfig, head: str, keys: str) -> None:
    """{keys}ctc.layer at most the acoustic depth; below the top only where the layers above still serve a loss.

    A CTC-only ASR model has nothing above its CTC layer to train. An adaptor with a soft branch reads
    the CTC posteriors next to the acoustic states, so both must come from the same layer: SATE's
    boundary between acoustic and textual encoding is the CTC layer, moved by changing {keys}acoustic.layers.
    """
    layer, depth = conf.ctc.layer, conf.acoustic.layers
    if layer is None or layer == depth:
        return
    if conf.acoustic.kind.hub:
        raise SateError(f"{head}{keys}ctc.layer {layer} below the top is not supported for {keys}acoustic.type "
                        f"{conf.acoustic.type}; CTC reads its top layer")
    if layer > depth:
        raise SateError(f"{head}{keys}ctc.layer {layer} is above the top acoustic layer "
                        f"({keys}acoustic.layers {depth})")
    if isinstance(conf, ASRConfig) and conf.decoder.layers == 0:
        raise SateError(f"{head}{keys}ctc.layer {layer} below the top of a CTC-only ASR model would leave "
                        f"acoustic layers {layer + 1}-{depth} untrained; set {keys}acoustic.layers: {layer} instead")
    if isinstance(conf, STConfig) and conf.adaptor.kind.soft:
        raise SateError(f"{head}{keys}ctc.layer {layer} below the top does not combine with {keys}adaptor.type "
                        f"{conf.adaptor.type}, whose soft branch reads the CTC posteriors beside the top acoustic "
                        f"states; to end the acoustic encoder at layer {layer}, set {keys}acoustic.layers: {layer}")


def absent_part(conf: ModelConfig, component: str) -> str | None:
    """Why the model of `conf` has no `component` (an ``init:`` entry's part), or None where it has one."""
    if component == "decoder" and isinstance(conf, ASRConfig) and not conf.decoder.layers:
        return "a CTC-only ASR model: decoder.layers is 0"
    if not isinstance(conf, STConfig):
        return None  # an MT model has every part an init: entry may name, an ASR model its acoustic side and CTC
    if component == "textual" and not conf.textual.layers:
        return "textual.layers is 0"
    if component == "src_embed" and not conf.has_source_embedding:
        if conf.adaptor.kind.soft:
            return "adaptor.embedding is decoder: the soft branch uses the decoder's embedding"
        return f"adaptor.type is {conf.adaptor.type}"
    if component == "adaptor" and conf.adaptor.type == "none":
        return "adaptor.type is none"
    return None


def check_init_parts(conf: ModelConfig, components: Iterable[str], keys: str = "") -> None:
    """Each ``init:`` component a part of the model of `conf`: told from the config alone, so that `sate config`
    refuses what `sate train` refused once the model was built (`init.src_embed` over an adaptor of type linear
    passed `sate config`; 25th hostile pass). `keys`: the model section's place in its file (``model.``)."""
    task = next(name for name, cls in CONFIG_CLASSES.items() if isinstance(conf, cls))
    for component in components:
        why = None if component == "model" else absent_part(conf, component)
        if why is not None:
            raise SateError(f"init.{component}: this {task} model has no {component} ({_keyed(why, keys)})")


def _flatten(conf: dict, prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in conf.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and key != "hub":
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def resolve_in_file(task: str, conf: dict, path: object) -> ModelConfig:
    """`resolve_config` for the ``model:`` section of the training config file `path`: a refusal names the file and
    the full key (``conf/st.yaml: model.textual.layers must be ...``), as the other sections' do."""
    return resolve_config(task, conf, head=f"{path}: ", keys="model.", check_paths=True)


def resolve_config(task: str, conf: dict | ModelConfig | None, head: str = PREFIX, keys: str = "",
                   check_paths: bool = False) -> ModelConfig:
    """The task's typed config with defaults filled in (a model file's dict resolves again unchanged), or raise
    `SateError`: a line that starts with `head` (where the config came from) and names each key after `keys` (the
    dotted path of the config within its file)."""
    cls = config_class(task)
    if isinstance(conf, cls):
        return conf
    given = {} if conf is None else conf.to_dict() if isinstance(conf, ASRConfig | MTConfig | STConfig) else conf
    try:
        merged = merge(cls, given, path=keys)
    except SateError as err:
        raise SateError(f"{head}{err}") from None
    try:
        fill_hub_sections(task, merged, given, check_paths, keys)  # sizes from the hub directories, before their ranges
    except SateError as err:  # its keys are the model section's own: in a file, named as the file spells them
        if not keys:
            raise
        raise SateError(f"{head}{_keyed(str(err).removeprefix(PREFIX), keys)}") from None
    try:
        resolved = build_section(cls, merged, keys)
    except SateError as err:
        raise SateError(f"{head}{err}") from None
    if isinstance(resolved, STConfig):
        _check_baseline_pair(resolved, head, keys)
    if not isinstance(resolved, MTConfig):
        _check_ctc_layer(resolved, head, keys)
    # A key that does nothing may still appear with its default value: resolved configs
    # (stored in model files) list every key and must resolve again unchanged.
    given_flat, default_flat = _flatten(given), _flatten(cls().to_dict())
    for name, reason in _inapplicable(resolved).items():
        if name in given_flat and given_flat[name] != default_flat[name]:
            raise SateError(f"{head}{keys}{name} is set but does nothing: {_keyed(reason, keys)}")
    for name in ("acoustic", "textual", "decoder"):
        part = getattr(resolved, name, None)
        hub_acoustic = name == "acoustic" and part is not None and part.kind.hub  # projected to d_model
        if part is not None and part.layers and not hub_acoustic and resolved.d_model % part.heads:
            raise SateError(f"{head}{keys}d_model {resolved.d_model} is not divisible by "
                            f"{keys}{name}.heads {part.heads}")
    if isinstance(resolved, STConfig):
        kd = resolved.loss.kd
        for side in ("asr", "mt"):
            if kd.weight(side) > 0 and not getattr(kd, f"{side}_teacher"):
                raise SateError(f"{head}{keys}loss.kd.{side}_weight is {kd.weight(side)} "
                                f"but {keys}loss.kd.{side}_teacher (a model file) is not set "
                                f"(`sate train --init-from {side}=PATH` sets it)")
        if resolved.loss.mt_text_weight > 0 and resolved.textual.type == "hf_marian":
            raise SateError(f"{head}{keys}loss.mt_text_weight is not supported with {keys}textual.type hf_marian "
                            "(its text batches would need Marian's ids and end-of-source token); set it to 0")
    return resolved
