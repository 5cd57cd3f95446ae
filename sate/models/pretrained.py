"""Initialising model components from checkpoints: the point of SATE, done loudly.

The ``init:`` config section maps components to checkpoints::

    init:
      acoustic:  {path: exp/asr/model.pt}
      ctc:       {path: exp/asr/model.pt}
      src_embed: {path: exp/mt/model.pt}
      textual:   {path: exp/mt/model.pt}
      decoder:   {path: exp/mt/model.pt}

or ``model: {path: ...}`` for the whole model. A checkpoint is one of our model files, a
Lightning checkpoint of ours (weights under ``state_dict`` with a ``model.`` prefix, our header
under ``sate``), or an ESPnet2 experiment's ``.pth`` with its ``config.yaml`` beside it (or
named by ``config:``). ``prefix:`` overrides where the component's keys sit in the checkpoint.

Where the authors' code loaded with ``strict=False`` and only logged mismatches, every problem
here stops the run, naming the keys, and nothing is loaded: a component with no matching keys,
missing or leftover keys, a shape mismatch, another token list, or settings that change the
computation without changing shapes (heads, attention type). A table of matched, missing and
unexpected keys is printed first. Checkpoints are read with ``weights_only=True``.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NotRequired, TypedDict

import torch
import yaml

from sate import layout
from sate.config import PyYAMLValues, bounded, invalid_yaml, yaml_bytes
from sate.data.cmvn_record import cmvn_difference, recorded_kinds, require_cmvn
from sate.data.manifest import read_text_lines
from sate.errors import SateError, one_line, shown
from sate.files import RawMapping, hub_hint, read_json, relative_note, require_file
from sate.models.base import SateModel
from sate.models.config import ASRConfig, STConfig, check_init_parts, resolve_config
from sate.models.espnet_blocks import ConformerEncoder, EspnetKwargs, TransformerDecoder, TransformerEncoder
from sate.models.hub.files import ctranslate2_spec
from sate.models.init_from import SOURCE_COMPONENTS
from sate.models.init_section import check_init_section
from sate.models.model_file import (
    check_meta,
    model_from_file,
    name_list,
    note_older_average,
    read_checkpoint,
    refuse_not_averaged,
    type_misfits,
)
from sate.models.sharing import check_joint_vocabulary, tied_problems
from sate.models.st import STModel
from sate.settings import Section

# component -> the module it fills (its path in our models). "model" is the whole model.
COMPONENTS: dict[str, str] = {
    "acoustic": "acoustic.encoder",
    "ctc": "ctc",
    "adaptor": "adaptor",
    "src_embed": "src_embed",
    "textual": "textual.encoder",
    "decoder": "decoder",
    "model": "",
}
# Where ESPnet2 ASR/MT experiments keep each component.
ESPNET_PREFIXES = {"acoustic": "encoder.", "ctc": "ctc.", "src_embed": "frontend.embed.0.",
                   "textual": "encoder.", "decoder": "decoder."}
ESPNET_CLASSES = {("encoder", "conformer"): ConformerEncoder, ("encoder", "transformer"): TransformerEncoder,
                  ("decoder", "transformer"): TransformerDecoder}
# ESPnet arguments that only matter for training, sizes checked through shapes, or not settable.
ESPNET_IGNORED = {"input_size", "vocab_size", "encoder_output_size", "pos_enc_class", "use_flash_attn",
                  "gradient_checkpoint_layers", "layer_drop_rate", "stochastic_depth_rate", "max_pos_emb_len",
                  "padding_idx", "interctc_layer_idx"}  # where CTC reads the encoder is ctc.layer, not a weight
# Our config section that holds each component's settings.
SECTIONS = {"acoustic": "acoustic", "adaptor": "adaptor", "textual": "textual", "decoder": "decoder"}


class InitEntry(TypedDict):
    """One component of the ``init:`` section, as `_validate` has checked it."""

    path: str  # the checkpoint
    prefix: NotRequired[str]  # where the component's keys sit in it (default: `Checkpoint.default_prefix`)
    config: NotRequired[str]  # an ESPnet experiment's config.yaml, where it is not beside the checkpoint


@dataclass
class Checkpoint:
    """A checkpoint read once, whatever its kind, with the vocabularies it was trained on."""

    path: Path
    kind: str  # "sate", "lightning" or "espnet"
    state: dict[str, torch.Tensor]
    config: RawMapping  # our resolved model config as a model file stores it, or the ESPnet experiment's config.yaml
    task: str  # ours: asr/mt/st; ESPnet: "asr" or "mt" (has src_token_list)
    src_tokens: list[str]
    tgt_tokens: list[str]
    meta: RawMapping = field(default_factory=dict)  # a sate file's header (its CMVN record), else empty

    def tokens(self, side: str) -> list[str]:
        return self.src_tokens if side == "source" else self.tgt_tokens

    def default_prefix(self, component: str) -> str:
        if self.kind == "espnet":
            if component not in ESPNET_PREFIXES:
                raise SateError(f"init.{component}: an ESPnet experiment ({self.path}) has no SATE {component}; "
                                "load it from one of our checkpoints")
            return ESPNET_PREFIXES[component]
        base = "model." if self.kind == "lightning" else ""
        module = COMPONENTS[component]
        return base + (module + "." if module else "")


@dataclass
class InitRow:
    """One line of the init table."""

    component: str
    source: str
    prefix: str
    matched: int
    missing: int
    unexpected: int
    ok: bool
    note: str = ""  # said after "ok": what loads but is not what the file was trained for


def _read_token_list(value: object, config_path: Path) -> list[str]:
    if isinstance(value, list):
        index = next((i for i, token in enumerate(value) if not isinstance(token, str)), None)
        if index is None:
            return value
        raise SateError(f"{config_path}: token_list[{index}] is {shown(value[index])}, not a token (text)")
    if isinstance(value, str):
        for candidate in (Path(value), config_path.parent / value):
            if candidate.exists():  # read as corpus text is: lines split on \n alone, no NUL, 1 GB at most
                return read_text_lines(candidate)
        raise SateError(f"{config_path}: token list file {value} not found")
    raise SateError(f"{config_path}: token_list must be a list or a path, got {type(value).__name__}")


def read_espnet(path: Path, state: dict[str, torch.Tensor], config_path: Path | None) -> Checkpoint:
    """An ESPnet2 experiment: the .pth state dict plus its config.yaml (for token lists and settings)."""
    if config_path is None and not (path.parent / layout.CONFIG).exists() and (hint := hub_hint(path.parent)):
        # a Hugging Face model's pytorch_model.bin is a plain state dict too: "set init.<component>.config" was
        # advice that could not be followed (28th hostile pass)
        raise SateError(f"{path}: a downloaded model's weights, not a checkpoint of ours or an ESPnet experiment"
                        f"{hint}")
    config_path = config_path or path.parent / layout.CONFIG
    require_file(config_path, "an ESPnet config",
                 f"{path} is an ESPnet-style state dict but {config_path} is missing; "
                        "its token list must be checked (set init.<component>.config)")
    try:
        # at most MAX_YAML_BYTES, as every config: it was read whole and parsed, whatever its size
        config = bounded(yaml.load(yaml_bytes(config_path).decode("utf-8"), Loader=PyYAMLValues),  # noqa: S506
                         str(config_path))
    except UnicodeDecodeError as err:
        raise SateError(f"{config_path}: not UTF-8 text (byte {err.start})") from None
    except yaml.YAMLError as err:
        raise invalid_yaml(config_path, err) from None
    except RecursionError:
        raise SateError(f"{config_path}: nested too deeply to read") from None
    if not isinstance(config, dict) or "token_list" not in config:
        raise SateError(f"{config_path}: no token_list; is this an ESPnet2 experiment config?")
    tokens = _read_token_list(config["token_list"], config_path)
    if "src_token_list" in config:
        return Checkpoint(path, "espnet", state, config, "mt",
                          _read_token_list(config["src_token_list"], config_path), tokens)
    return Checkpoint(path, "espnet", state, config, "asr", tokens, [])


def require_there(path: str, keys: str) -> None:
    """The file a config key names (``init.acoustic.path``, ``model.loss.kd.asr_teacher``) is there, or one line that
    names the key as well as the path: "checkpoint not found: exp/asr/model.pt" named no key, so a config with five
    init entries and two teachers left the user to find which one (hand31t, 32nd hostile pass). A name that is there
    (a broken link, a folder) is the reader's to tell."""
    if os.path.lexists(path):
        return
    try:
        refuse_not_averaged(Path(path))  # EXP/model.pt before `sate average`: how it is made
    except SateError as err:
        raise SateError(f"{keys}: {err}") from None
    raise SateError(f"{keys}: checkpoint not found: {path}{relative_note(path)}")


def init_keys(task: str, entries: RawMapping, path: str) -> str:
    """The ``init:`` keys that name ``path``, as a message names them, with the ``--init-from`` that fills them where
    they are the components one fills in a SATE model: "init.acoustic.path and init.ctc.path (or --init-from asr=)"."""
    components = [c for c, entry in entries.items() if isinstance(entry, dict) and entry.get("path") == path]
    keys = " and ".join(f"init.{c}.path" for c in components)
    side = next((s for s, parts in SOURCE_COMPONENTS.items() if set(components) <= set(parts)), None) \
        if task == "st" else None
    return keys + (f" (or --init-from {side}=)" if side is not None else "")


def _require_espnet_config(entries: RawMapping, entry: InitEntry) -> None:
    """An entry's ``config:`` (an ESPnet experiment's config.yaml) is there, or one line naming its key: the reader
    said "set init.<component>.config" to a user who had set it to a file that is not there (fix32h)."""
    config = entry.get("config")
    if config is None or os.path.lexists(config):
        return
    keys = " and ".join(f"init.{c}.config" for c, other in entries.items()
                        if isinstance(other, dict) and other.get("config") == config)
    raise SateError(f"{keys}: the ESPnet config of {entry['path']} not found: {config}{relative_note(config)}")


def read_source(path: str | Path, config_path: str | Path | None = None) -> Checkpoint:
    """Read any supported checkpoint kind (see the module docstring)."""
    path = Path(path)
    refuse_not_averaged(path)
    data = read_checkpoint(path)
    if not isinstance(data, dict):
        raise SateError(f"{path}: unrecognised checkpoint (a {type(data).__name__}, not a dict)")
    if "state_dict" in data or "format" in data:
        if config_path is not None:
            raise SateError(f"init: 'config' only applies to ESPnet experiments, not to {path}")
        meta = data.get("sate", {}) if "state_dict" in data else data
        if not isinstance(meta, dict) or not meta:
            raise SateError(f"{path}: Lightning checkpoint without our 'sate' header (task, config, token lists)")
        check_meta(path, meta)
        kind, state = ("lightning", data["state_dict"]) if "state_dict" in data else ("sate", data.get("model"))
        if not isinstance(state, dict):
            raise SateError(f"{path}: no state dict inside")
        # Resolved again, so that files written before a key existed compare with its default.
        config = resolve_config(meta["task"], meta["config"]).to_dict()
        return Checkpoint(path, kind, state, config, meta["task"], meta["src_tokens"], meta["tgt_tokens"], meta)
    if data and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in data.items()):
        return read_espnet(path, data, Path(config_path) if config_path else None)
    raise SateError(f"{path}: unrecognised checkpoint: neither a sate model file, a Lightning checkpoint "
                    f"nor a plain state dict (top-level keys: {name_list(sorted(map(str, data)))})")


def _token_problem(ours: list[str], theirs: list[str], what: str) -> str | None:
    if ours == theirs:
        return None
    diff = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), min(len(ours), len(theirs)))
    first = f"index {diff}: checkpoint {shown(theirs[diff] if diff < len(theirs) else '(end)')}, " \
            f"ours {shown(ours[diff] if diff < len(ours) else '(end)')}"
    return f"{what} token list differs (checkpoint {len(theirs)} tokens, ours {len(ours)}; first at {first})"


def vocab_sides(task: str, component: str) -> tuple[str, ...]:
    """Which vocabularies a component's weights are indexed by, in a model of `task`."""
    if component in ("ctc", "src_embed") or (component in ("decoder", "model") and task == "asr"):
        return ("source",)
    if component == "decoder":
        return ("target",)
    if component == "model":
        return ("source", "target")
    return ()


# Keys that change no computation of trained weights: where a hub model was read from, what training freezes.
TRAINING_ONLY = ("dropout", "path", "freeze_feature_extractor", "freeze")


def without_dropout(section: object) -> object:
    """A config section (as a plain dict or typed) minus dropout rates (and the keys of TRAINING_ONLY): the settings
    two models must share to swap weights."""
    if isinstance(section, Section):
        section = section.to_dict()
    if isinstance(section, dict):
        return {k: without_dropout(v) if k != "hub" else v for k, v in section.items() if k not in TRAINING_ONLY}
    return section


def _settings_problems(model: SateModel, component: str, ckpt: Checkpoint) -> list[str]:
    """Settings that would change the computation without changing any weight shape."""
    if ckpt.kind == "espnet":
        if component not in ("acoustic", "textual", "decoder"):
            return []
        ours = getattr(model, component)  # AcousticEncoder, TextualEncoder or ESPnet's decoder
        role = "decoder" if component == "decoder" else "encoder"
        return _espnet_settings_problems(role, ours.espnet_name, ours.espnet_kwargs, ckpt.config)
    if component == "model":
        if ckpt.task != model.task:
            return [f"the checkpoint is an {ckpt.task} model, ours is {model.task}"]
        mine, filed = model.conf.to_dict(), dict(ckpt.config)
        if isinstance(mine.get("ctc"), dict) and isinstance(filed.get("ctc"), dict):
            # compared as the layers they stand for, below (`_whole_ctc_layer`)
            mine, filed = ({**conf, "ctc": {k: v for k, v in conf["ctc"].items() if k != "layer"}}
                           for conf in (mine, filed))
        pairs = [(k, mine[k], filed.get(k)) for k in mine if k != "loss"]
    else:
        pairs = [("d_model", model.conf.d_model, ckpt.config.get("d_model"))]
        section = SECTIONS.get(component)
        if section is not None:
            if section not in ckpt.config:
                return [f"the checkpoint is an {ckpt.task} model, which has no {section}"]
            pairs.append((section, getattr(model.conf, section).to_dict(), ckpt.config[section]))
        if component == "ctc" and isinstance(ckpt.config.get("ctc"), dict) and hasattr(model.conf, "ctc"):
            # ctc.bias is a setting: it was named as a missing or unexpected `ctc_lo.bias` (28th hostile pass).
            # Where CTC reads the encoder (ctc.layer) changes no weight, so it is not compared: the head loads, and
            # the table's line says where it was trained (`_ctc_layer_note`).
            pairs.append(("ctc.bias", model.conf.ctc.bias, ckpt.config["ctc"].get("bias", True)))
    pairs = [(name, *_same_front_end(name, mine, theirs, model.conf.d_model, ckpt.config.get("d_model")))
             for name, mine, theirs in pairs]
    problems = []
    for name, mine, theirs in pairs:
        problems += _differences(name, without_dropout(mine), without_dropout(theirs))
    if component == "model":
        problems += _whole_ctc_layer(model.conf.to_dict(), ckpt.config)
    return problems


def _ctc_layer_note(model: SateModel, ckpt: Checkpoint) -> str:
    """Where an ``init: ctc`` head was trained over another acoustic layer than ours reads, the table's line says so:
    the head was put over states it never read under a bare "ok" (28th hostile pass). It loads, as docs/models.md
    says: Fig. 1(b)'s models start from an ASR model whose CTC was on top, and fine-tuning trains the head at its new
    layer. An ESPnet2 head reads its encoder's top block, counted in the experiment's weights."""
    ours = model.conf.to_dict()
    mine = _ctc_layer(ours)
    if ckpt.kind == "espnet":
        blocks = {int(m.group(1)) for key in ckpt.state if (m := re.match(r"encoder\.encoders\.(\d+)\.", key))}
        if not blocks or max(blocks) + 1 == mine:
            return ""
        theirs, of = f"{max(blocks) + 1} (its encoder's top)", "experiment"
    elif isinstance(ckpt.config.get("ctc"), dict):
        if _ctc_layer(ckpt.config) == mine:
            return ""
        theirs, of = _ctc_layer_words(ckpt.config), "model"
    else:
        return ""
    return f"trained over acoustic layer {theirs} of its {of}, reads layer {_ctc_layer_words(ours)} here"


def _ctc_layer(config: RawMapping) -> object:
    """The acoustic layer a resolved config's CTC head reads: ``ctc.layer``, or the top one where it is null."""
    layer = config["ctc"].get("layer")
    acoustic = config.get("acoustic")
    return layer if layer is not None or not isinstance(acoustic, dict) else acoustic.get("layers")


def _ctc_layer_words(config: RawMapping) -> str:
    """The layer a resolved config's CTC head reads, as a message says it: the top is said to be the top (`ctc.layer:
    null` was "checkpoint None": 28th hostile pass, review)."""
    layer = _ctc_layer(config)
    return f"{shown(layer)} (the top)" if _ctc_reads_top(config) else shown(layer)


def _ctc_reads_top(config: RawMapping) -> bool:
    """Whether a resolved config's CTC head reads its top acoustic layer (``ctc.layer`` null, or written as the top)."""
    acoustic = config.get("acoustic")
    return isinstance(acoustic, dict) and _ctc_layer(config) == acoustic.get("layers")


def _same_front_end(name: str, mine: object, theirs: object, my_d_model: object,
                    their_d_model: object) -> tuple[object, object]:
    """Two acoustic sections, where one's ``frontend_channels: null`` (its own d_model) and the other's written value
    build front-ends of one width (`sate.models.acoustic.AcousticEncoder`), with both written as that value: it was
    refused as `acoustic.frontend_channels: checkpoint None, ours 256` (28th hostile pass), and named beside another
    d_model as if it differed too (review)."""
    if name != "acoustic":
        return mine, theirs
    ours, its = (s.to_dict() if isinstance(s, Section) else s for s in (mine, theirs))
    if not isinstance(ours, dict) or not isinstance(its, dict):
        return mine, theirs
    channels = ours.get("frontend_channels", 0), its.get("frontend_channels", 0)
    if channels in ((None, my_d_model), (their_d_model, None)):
        width = channels[1] if channels[0] is None else channels[0]
        return {**ours, "frontend_channels": width}, {**its, "frontend_channels": width}
    return mine, theirs


def _whole_ctc_layer(mine: RawMapping, theirs: RawMapping) -> list[str]:
    """A whole model's CTC layer against its file's, each as the layer it stands for (`_ctc_layer`): `ctc.layer: null`
    and the top layer's number are one model (`init: model:` was refused as `ctc.layer: checkpoint None, ours 12`:
    28th hostile pass), and another layer is named with the words of the table's note (`_ctc_layer_words`). Where
    both read the top of encoders of other depths, `acoustic.layers` names the cause alone."""
    if not isinstance(mine.get("ctc"), dict) or not isinstance(theirs.get("ctc"), dict) \
            or _ctc_layer(mine) == _ctc_layer(theirs) or (_ctc_reads_top(mine) and _ctc_reads_top(theirs)):
        return []
    return [f"ctc.layer: checkpoint {_ctc_layer_words(theirs)}, ours {_ctc_layer_words(mine)}"]


def _differences(name: str, mine: object, theirs: object) -> list[str]:
    """Each setting under ``name`` that differs, named down to the value: `acoustic.hub` of a 128-mel Whisper and an
    80-mel one was two dicts cut at 80 characters, alike to the eye (24th hostile pass, review)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        return [line for k in sorted(set(mine) | set(theirs), key=str) if mine.get(k) != theirs.get(k)
                for line in _differences(f"{name}.{k}", mine.get(k), theirs.get(k))]
    return [] if mine == theirs else [f"{name}: checkpoint {shown(theirs)}, ours {shown(mine)}"]


def _espnet_settings_problems(role: str, name: str, kwargs: EspnetKwargs, config: RawMapping) -> list[str]:
    theirs_name = config.get(role)
    if theirs_name != name:
        return [f"{role}: experiment {shown(theirs_name)}, ours {shown(name)}"]
    cls = ESPNET_CLASSES[(role, name)]
    defaults = {p.name: p.default for p in inspect.signature(cls).parameters.values()
                if p.default is not inspect.Parameter.empty}
    theirs = {**defaults, **(config.get(f"{role}_conf") or {})}
    mine = {**defaults, **kwargs}
    return [f"{role}_conf.{k}: experiment {shown(theirs.get(k))}, ours {shown(mine.get(k))}"
            for k in sorted(set(theirs) | set(mine))
            if k not in ESPNET_IGNORED and "dropout" not in k and theirs.get(k) != mine.get(k)]


def _key_prefixes(state: dict[str, torch.Tensor]) -> str:
    return name_list(sorted({".".join(k.split(".")[:2]) + "." for k in state}))


def _module(model: SateModel, component: str) -> torch.nn.Module | None:
    """The module `component` fills, or None where this model has no such part."""
    path = COMPONENTS[component]
    if not path:
        return model
    if getattr(model, path.split(".")[0], None) is None:
        return None
    return model.get_submodule(path)


def _validate(model: SateModel, init_conf: object) -> dict[str, InitEntry]:
    check_init_section(model.task, init_conf)
    assert isinstance(init_conf, dict)
    check_init_parts(model.conf, init_conf)
    return init_conf


def format_table(rows: list[InitRow]) -> str:
    """The init table: what was loaded into what, with key counts."""
    header = ("component", "checkpoint", "prefix", "matched", "missing", "unexpected", "status")
    lines = [header] + [(r.component, r.source, r.prefix or "(none)", str(r.matched), str(r.missing),
                         str(r.unexpected), ("ok; " + r.note if r.note else "ok") if r.ok else "FAILED") for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
                     for line in lines)


def initialize(model: SateModel, init_conf: RawMapping | None, src_tokens: list[str], tgt_tokens: list[str],
               log: Callable[[str], None] = print, cmvn: Path | None = None,
               cmvn_kind: str | None = None) -> list[InitRow]:
    """Load the components named in `init_conf` into `model`, or raise `SateError` loading nothing.

    `src_tokens`/`tgt_tokens` are our token lists (tokens_src.txt, tokens_tgt.txt); ``cmvn`` and ``cmvn_kind`` the
    run's `cmvn.json` and `data.cmvn`, against which an acoustic encoder's file is noted (`_cmvn_note`).
    """
    if not init_conf:
        return []
    entries = _validate(model, init_conf)
    cache: dict[tuple[str, str | None], Checkpoint] = {}
    rows, problems, loads = [], [], []
    for component, entry in entries.items():
        key = (entry["path"], entry.get("config"))
        if key not in cache:
            keys = init_keys(model.task, entries, entry["path"])
            require_there(entry["path"], keys)
            _require_espnet_config(entries, entry)
            try:
                cache[key] = read_source(*key)
            except SateError as err:  # the reader's line names the file alone (a broken link, a damaged file, ...)
                raise SateError(f"{keys}: {err}") from None
            if cache[key].kind == "sate":  # EXP/model.pt averaged before a resume trained on: taken without a word
                note_older_average(cache[key].path, cache[key].meta, keys)
        ckpt = cache[key]
        prefix = entry.get("prefix", ckpt.default_prefix(component))
        module = _module(model, component)
        own = module.state_dict()
        theirs = {k[len(prefix):]: v for k, v in ckpt.state.items() if k.startswith(prefix)}
        matched = sorted(set(own) & set(theirs))
        missing, unexpected = sorted(set(own) - set(theirs)), sorted(set(theirs) - set(own))
        # Settings that differ (model.acoustic.layers 12 where the ASR model has 6) are the cause, said first and
        # alone: they came after every key and shape they changed, a line of 1,700 characters for one d_model
        # (twenty-first hostile pass). The keys are named where the settings agree (an edited or foreign file).
        found = _settings_problems(model, component, ckpt)
        if not found and not matched:
            found.append(f"zero keys matched under prefix {prefix!r} (the checkpoint has {_key_prefixes(ckpt.state)})")
        elif not found:
            shapes = [f"{k} {tuple(theirs[k].shape)} vs {tuple(own[k].shape)}" for k in matched
                      if theirs[k].shape != own[k].shape]
            found += [f"{label}: {name_list(keys)}" for label, keys in
                      (("missing from checkpoint", missing), ("unexpected in checkpoint", unexpected),
                       ("shape mismatch (checkpoint vs ours)", shapes)) if keys]
            kinds = [] if shapes else type_misfits(own, theirs, lambda key, start=prefix: start + key)
            found += [f"type mismatch (checkpoint vs ours): {name_list(kinds)}"] * bool(kinds)
            found += [] if shapes else tied_problems(module, theirs)
        ours = {"source": src_tokens, "target": tgt_tokens}
        for mine, theirs_side in zip(vocab_sides(model.task, component), vocab_sides(ckpt.task, component),
                                     strict=False):
            problem = _token_problem(ours[mine], ckpt.tokens(theirs_side), mine)
            if problem:
                found.append(problem)
        note = _ctc_layer_note(model, ckpt) if component == "ctc" and not found else ""
        rows.append(InitRow(component, one_line(str(ckpt.path)), prefix, len(matched), len(missing), len(unexpected),
                            not found, note))
        if found:
            problems.append(f"{component} <- {ckpt.path}: " + "; ".join(found))
        else:
            loads.append((module, theirs))
    log(format_table(rows))
    if problems:
        raise SateError("init failed, nothing was loaded: " + " | ".join(problems))  # one line: the CLI escapes \n
    for module, state in loads:
        module.load_state_dict(state)
    # the acoustic encoder's file: an `acoustic` entry's, else a whole-model entry's, which loads the encoder too; a
    # note, on stderr as every note is (it went to stdout, with the table, and a whole-model init said nothing: 24th
    # hostile pass, review)
    component = next((c for c in ("acoustic", "model") if c in entries), None)
    if component is not None and _module(model, "acoustic") is not None:
        note = _cmvn_note(cache[(entries[component]["path"], entries[component].get("config"))], cmvn, cmvn_kind,
                          component)
        if note:
            print(note, file=sys.stderr)
    return rows


def _cmvn_note(ckpt: Checkpoint, cmvn: Path | None, cmvn_kind: str | None, component: str = "acoustic") -> str | None:
    """A note where the acoustic encoder comes from a file trained on other features than the run's: another
    normalisation (data.cmvn) or other global statistics. `--init-from asr=exp/asr/model.pt` after `sate features`
    was run again, or with another data dir's statistics, started SATE from an encoder that had never read such
    features, without a word (24th hostile pass); a frozen teacher is refused for it, but a trained encoder may
    well be fine-tuned on another corpus's features (an ASR model of LibriSpeech), so this one is said, not refused."""
    if cmvn_kind is None or not ckpt.meta:
        return None
    other = next(((theirs, why) for theirs, why in recorded_kinds(ckpt.meta) if theirs != cmvn_kind), None)
    if other is not None:
        return (f"note: init {component} <- {one_line(str(ckpt.path))}: trained with {other[0]} CMVN ({other[1]}), "
                f"this run normalises with data.cmvn {cmvn_kind}: fine-tuning starts from features it never read")
    if cmvn_kind == "global" and cmvn is not None and ckpt.meta.get("cmvn") is not None:
        why = cmvn_difference(ckpt.meta["cmvn"], cmvn)
        if why is not None:
            return (f"note: init {component} <- {one_line(str(ckpt.path))}: trained on other CMVN statistics than "
                    f"{one_line(str(cmvn))} ({why}): fine-tuning starts from features normalised otherwise (was "
                    "`sate features` run again, or is it another data directory's model?)")
    return None


def _reads(conf: ASRConfig | STConfig) -> str:
    """What an ASR or ST model's acoustic encoder reads: waveforms (a hub model) or fbank."""
    return "waveforms" if conf.acoustic.kind.hub else "fbank"


def _refuse_espnet_teacher(side: str, path: str) -> None:
    """An ESPnet2 experiment named as a teacher, one line saying what to do: `--init-from asr=EXP/valid.acc.ave.pth`
    under a config that distils (the recipes' st.yaml) makes it the teacher too, and it was "not a sate model file
    (format None)" after the init table had loaded it (30th hostile pass). `init:` reads such a file; a teacher is
    rebuilt from a model file's header, which an ESPnet experiment does not have."""
    try:
        espnet = read_source(path).kind == "espnet"
    except SateError:
        return
    if espnet:
        # naming a model file as the teacher alongside --init-from asr=EXP is refused as two teachers (fill_init): the
        # way out that distils starts the model from init: entries instead, as that refusal says (30th hostile pass)
        entries = ", ".join(f"init.{component}.path" for component in SOURCE_COMPONENTS[side])
        raise SateError(f"model.loss.kd.{side}_teacher {path} is an ESPnet experiment's weights: they can start the "
                        f"model (init:, --init-from) but a teacher must be a sate model file (of sate train and sate "
                        f"average); set model.loss.kd.{side}_weight=0, or name such a file as "
                        f"model.loss.kd.{side}_teacher and, if --init-from {side}= named the experiment (it makes its "
                        f"model the teacher too), give the experiment as init: entries ({entries}) in its "
                        "place") from None


def _hub_is_text(directory: Path) -> bool:
    """Whether a downloaded model's directory holds a text model (Marian, or a CTranslate2 conversion of one), by its
    config.json's model_type, else by the spec its model.bin opens with (a converted OPUS-MT has no model_type)."""
    try:
        model_type = read_json(directory / "config.json").get("model_type")
    except SateError:
        model_type = None
    if model_type is not None:
        return model_type == "marian"
    return ctranslate2_spec(directory / layout.CT2_MODEL) == "TransformerSpec"


def _refuse_hub_teacher(side: str, path: str, student: ASRConfig | STConfig) -> None:
    """A downloaded hub model (its directory, or a file in it) named as a teacher: the reader's hint said to name it
    in the model config as textual.path or acoustic.path, which makes it a part of the student, not its teacher
    (32nd hostile pass). A teacher is rebuilt from a sate model file's header; a Marian model is never an MT teacher
    (its source vocabulary is all of Marian's, the student's CTC side a subset: docs/models.md). The way on follows
    the student and the directory: "train an ASR model from it" was refused when followed for an fbank student (the
    teacher reads the run's batches) and given for a Marian directory too (fix32h)."""
    given = Path(path)
    directory = given if given.is_dir() else given.parent
    weights = {layout.CT2_MODEL, *(name for pair in layout.HUB_WEIGHT_FILES.items() for name in pair)}
    if not hub_hint(directory) or not (given.is_dir() or given.name in weights):
        return  # a damaged model file kept beside some config.json keeps the reader's line
    key, text = f"model.loss.kd.{side}_teacher", _hub_is_text(directory)
    if side == "asr" and text:
        how = ("it is a text (MT) model, no ASR teacher: name an ASR model file of sate train and sate average as "
               f"{key}, or set model.loss.kd.asr_weight=0")
    elif side == "asr" and student.acoustic.kind.hub:
        how = (f"train an ASR model from it (acoustic.type {student.acoustic.type}, acoustic.path {directory}, this "
               f"run's source tokens; docs/models.md), then sate average, and name its model.pt as {key}, or set "
               "model.loss.kd.asr_weight=0")
    elif side == "asr":
        how = (f"the teacher reads this run's batches, fbank (acoustic.type {student.acoustic.type}), so it must be "
               "an ASR model file trained on this run's features and source tokens (sate train --config asr.yaml, "
               f"then sate average) named as {key}, or set model.loss.kd.asr_weight=0")
    else:
        aside = " (a SATE model with textual.type hf_marian has none, docs/models.md)" if text else \
            " (it is a speech model)"
        how = (f"a downloaded model is no MT teacher{aside}: set model.loss.kd.mt_weight=0, or name an MT model file "
               "of sate train and sate average")
    raise SateError(f"{key} {path} is a downloaded model ({directory / 'config.json'}), not a sate model file (of "
                    f"sate train and sate average), which a teacher must be: {how}") from None


def load_teachers(model: SateModel, src_tokens: list[str], tgt_tokens: list[str],
                  log: Callable[[str], None] = print, cmvn: Path | None = None, cmvn_kind: str | None = None) -> None:
    """Attach the frozen teachers named in ``loss.kd`` (our model files) to an ST model.

    Training calls this for every model, so it first checks that a model sharing one embedding
    between source and target (adaptor.embedding decoder) got one joint vocabulary. ``cmvn`` is the run's
    `cmvn.json` (global statistics): the frozen ASR teacher reads the run's features, so it must have been trained
    on the same statistics, as a resume must; ``cmvn_kind`` the run's `data.cmvn`, which a teacher that records its
    own (`cmvn_kind`, or global statistics) must share.
    """
    if not isinstance(model, STModel):
        return
    check_joint_vocabulary(model.conf, src_tokens, tgt_tokens)
    kd = model.conf.loss.kd
    teachers: dict[str, SateModel] = {}
    for side in ("asr", "mt"):
        if kd.weight(side) == 0:
            continue
        path = str(getattr(kd, f"{side}_teacher"))
        require_there(path, f"model.loss.kd.{side}_teacher (or --init-from {side}=)")
        try:
            teacher, data = model_from_file(path)
        except SateError as err:
            _refuse_espnet_teacher(side, path)
            _refuse_hub_teacher(side, path, model.conf)
            # the reader's line names the file alone: `--init-from asr=EXP/checkpoints/epoch000.ckpt` loaded the init
            # table "ok", then a line of the checkpoint named no teacher (32nd hostile pass)
            raise SateError(f"model.loss.kd.{side}_teacher (or --init-from {side}=): {err}") from None
        if data["task"] != side:
            raise SateError(f"model.loss.kd.{side}_teacher {path} is an {data['task']} model, not {side}")
        if side == "asr" and _reads(teacher.conf) != _reads(model.conf):  # it reads the run's batches
            raise SateError(f"model.loss.kd.asr_teacher {path} reads {_reads(teacher.conf)} (acoustic.type "
                            f"{teacher.conf.acoustic.type}), this run's model {_reads(model.conf)} (acoustic.type "
                            f"{model.conf.acoustic.type}): the frozen teacher reads the run's batches, so its "
                            "acoustic encoder must read what the student's reads")
        checks = [("source", src_tokens, data["src_tokens"])]
        if side == "mt":
            checks.append(("target", tgt_tokens, data["tgt_tokens"]))
        for what, mine, theirs in checks:
            problem = _token_problem(mine, theirs, what)
            if problem:
                raise SateError(f"model.loss.kd.{side}_teacher {path}: {problem}")
        other = next(((theirs, why) for theirs, why in recorded_kinds(data) if theirs != cmvn_kind), None) \
            if side == "asr" and cmvn_kind is not None else None
        if other is not None:  # an utterance-CMVN teacher in a global run read other features
            raise SateError(f"model.loss.kd.asr_teacher {path} was trained with {other[0]} CMVN ({other[1]}), this run "
                            f"normalises with data.cmvn {cmvn_kind}: the frozen teacher would read features unlike "
                            "any it was trained on")
        if side == "asr" and cmvn is not None:
            require_cmvn(data.get("cmvn"), cmvn, Path(path), ": the frozen model.loss.kd.asr_teacher would read "
                         "features normalised otherwise than it was trained on (was `sate features` run again?)")
        teachers[side] = teacher
        log(f"kd: {side} teacher {one_line(str(path))} (weight {kd.weight(side)}, topk {kd.topk or 'all'})")
    model.set_teachers(**teachers)

