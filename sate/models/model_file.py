"""Our model file: everything needed to rebuild a trained model, and nothing executable.

A model file is a dict saved with `torch.save` holding only tensors, strings, numbers, lists
and dicts, so `torch.load(weights_only=True)` reads it without running any code:

    {"format": "sate-model", "version": 1, "task": "asr" | "mt" | "st",
     "config": <resolved model config>, "src_vocab_size": int, "tgt_vocab_size": int,
     "src_tokens": [str, ...], "tgt_tokens": [str, ...], "model": <state_dict>,
     "cmvn": {"mean": [float, ...], "std": [float, ...]}, "cmvn_kind": "global" | "utterance" | "none"}

The token lists let `sate.models.pretrained` refuse weights trained on another vocabulary, and let a packed
model decode without the data directory. ``cmvn`` (a model trained on globally normalised fbank; absent
otherwise, and in files written before sate kept it) lets `sate pack` and a pack's reader refuse a `cmvn.json`
of other statistics (`sate.data.cmvn_record`). ``cmvn_kind`` (a speech model's ``data.cmvn``; absent in files
written before sate kept it) lets `sate pack` and `sate analyze` take the normalisation the model was trained with
from the file itself, not from a config.yaml beside it, which a model file copied elsewhere has not.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import torch

from sate import layout
from sate.data.cmvn_record import CMVN_KINDS
from sate.errors import SateError, first_few, one_line, shell_word, shown
from sate.files import RawMapping, UnsafeCheckpoint, atomic_torch_save, given_path, hub_hint, read_checkpoint
from sate.models.base import SateModel
from sate.models.build import build_model
from sate.models.config import TASKS
from sate.numbers import is_int64

FORMAT = layout.MODEL_FORMAT
VERSION = 1
META_KEYS = ("task", "config", "src_vocab_size", "tgt_vocab_size", "src_tokens", "tgt_tokens")


class ModelMeta(TypedDict):
    """A model file's header: everything but the weights (the module docstring)."""

    format: str
    version: int
    task: str  # asr | mt | st
    config: dict[str, object]  # the resolved model config (`Section.to_dict`)
    src_vocab_size: int
    tgt_vocab_size: int
    src_tokens: list[str]
    tgt_tokens: list[str]
    cmvn: NotRequired[dict[str, list[float]]]  # the global CMVN statistics it was trained with, if any
    cmvn_kind: NotRequired[str]  # a speech model's data.cmvn: global, utterance or none
    averaged: NotRequired[dict[str, object]]  # `sate average`'s: the run, its epochs and the update it had reached


class ModelFile(ModelMeta):
    """A whole model file: the header and the weights."""

    model: dict[str, torch.Tensor]


def model_meta(model: SateModel, src_tokens: list[str], tgt_tokens: list[str],
               cmvn: dict[str, list[float]] | None = None, cmvn_kind: str | None = None) -> ModelMeta:
    """Everything but the weights; Lightning checkpoints carry this dict under the key "sate"."""
    for side, tokens, size in (("source", src_tokens, model.src_vocab_size),
                               ("target", tgt_tokens, model.tgt_vocab_size)):
        if len(tokens) != size:
            raise SateError(f"{side} token list has {len(tokens)} entries but the model was built for {size}")
    meta = ModelMeta(format=FORMAT, version=VERSION, task=model.task, config=model.conf.to_dict(),
                     src_vocab_size=model.src_vocab_size, tgt_vocab_size=model.tgt_vocab_size,
                     src_tokens=list(src_tokens), tgt_tokens=list(tgt_tokens))
    if cmvn is not None:
        meta["cmvn"] = cmvn
    if cmvn_kind is not None:
        meta["cmvn_kind"] = cmvn_kind
    return meta


def token_sides(task: object) -> tuple[str, ...]:
    """The token lists a model of ``task`` is indexed by: an ASR model's CTC and decoder use the source list alone.
    Its target list, recorded as the data directory held it, says nothing of its weights: `sate vocab` run again for
    another target size after the ASR pre-training made its resume and `sate pack` refuse it as "trained on another
    tgt vocabulary", advice to retrain a model that never read that vocabulary (27th hostile pass)."""
    return ("src",) if task == "asr" else ("src", "tgt")


def save_model_file(path: str | Path, model: SateModel, src_tokens: list[str], tgt_tokens: list[str],
                    state_dict: dict[str, torch.Tensor] | None = None,
                    cmvn: dict[str, list[float]] | None = None, cmvn_kind: str | None = None,
                    averaged: dict[str, object] | None = None) -> None:
    """Write a model file atomically (temp file + rename): a crash never leaves half a file.

    `state_dict` replaces the model's own weights, e.g. an average of several checkpoints; `cmvn` records the
    statistics it was trained with, `cmvn_kind` the normalisation (a speech model's data.cmvn); `averaged` what
    `sate average` took, for `sate pack` to tell an average older than its run.
    """
    path = Path(path)
    weights = model.state_dict() if state_dict is None else state_dict
    payload = ModelFile(**model_meta(model, src_tokens, tgt_tokens, cmvn, cmvn_kind),
                        model={k: v.detach().cpu() for k, v in weights.items()})
    if averaged is not None:
        payload["averaged"] = averaged
    atomic_torch_save(payload, path)


def check_meta(path: str | Path, meta: RawMapping) -> None:
    """Raise `SateError` unless `meta` is a complete header of our format."""
    if meta.get("format") != FORMAT and isinstance(meta.get("sate"), dict) and "state_dict" in meta:
        # a checkpoint given for a model file (`sate pack --model EXP/checkpoints/last.ckpt`) was "format None"
        raise SateError(f"{path}: a `sate train` checkpoint, not a model file; {layout.average_advice(Path(path))}")
    if meta.get("format") != FORMAT:  # a downloaded model's pytorch_model.bin as a teacher: where it goes instead
        raise SateError(f"{path}: not a sate model file (format {shown(meta.get('format'))})"
                        f"{hub_hint(Path(path).parent)}")
    if meta.get("version") != VERSION:
        raise SateError(f"{path}: sate model file version {shown(meta.get('version'))}; this sate reads {VERSION}")
    missing = [k for k in META_KEYS if k not in meta]
    if missing:
        raise SateError(f"{path}: model file lacks {', '.join(missing)}")
    # a task of another type was a TypeError traceback ('unhashable type: list'), and a config that is no mapping
    # (None) was packed, exit 0, to fail at decoding as weights that fit no model (twentieth hostile pass)
    if not isinstance(meta["task"], str) or meta["task"] not in TASKS:
        raise SateError(f"{path}: task is {shown(meta['task'])}, not one of {', '.join(TASKS)} (a damaged or foreign "
                        "header)")
    if not isinstance(meta["config"], dict):
        raise SateError(f"{path}: config is {shown(meta['config'])}, not the mapping of model settings `sate train` "
                        "records (a damaged or foreign header)")
    for side in ("src", "tgt"):  # as `model_meta` writes them: a size of -1 or 10**12 reached torch's allocator
        tokens, size = meta[f"{side}_tokens"], meta[f"{side}_vocab_size"]
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise SateError(f"{path}: {side}_tokens is not a list of tokens (a damaged or foreign header)")
        if not isinstance(size, int) or isinstance(size, bool) or size != len(tokens):
            raise SateError(f"{path}: {side}_vocab_size is {shown(size)} but {side}_tokens holds {len(tokens)} tokens "
                            "(a damaged or foreign header)")
    if "cmvn_kind" in meta and meta["cmvn_kind"] not in CMVN_KINDS:  # one of another value was taken for none
        # recorded: packed and decoded with global statistics whatever it was trained with (nineteenth hostile pass)
        raise SateError(f"{path}: cmvn_kind is {shown(meta['cmvn_kind'])}, not one of {', '.join(CMVN_KINDS)} (a "
                        "damaged or foreign header)")


def load_model_file(path: str | Path) -> ModelFile:
    """Read and validate a model file; returns the dict described in the module docstring.

    `read_checkpoint` verifies the zip checksums too: torch itself would decode a damaged tensor into wrong
    weights without a word.
    """
    path = given_path(path, "model file")  # `model_from_file(None)` (an unset variable), a NUL in the name
    _refuse_checkpoint_folder(path)
    try:
        data = read_checkpoint(path)
    except UnsafeCheckpoint as err:  # torch's first line: "This file can still be loaded, to do so you have two
        # options, \x1b[1mdo those steps only if ...", options never shown, of a file no sate writes (28th hostile pass)
        # any pickled file, not only a module's: fairseq's Namespace, a Lightning checkpoint's paths, numpy arrays
        raise UnsafeCheckpoint(f"{path}: not a sate model file: it holds pickled objects ({err.names}) that would "
                               "run code when loaded, as a module saved whole (`torch.save(model)`), another "
                               "toolkit's checkpoint (fairseq's, Lightning's) or numpy arrays hold; sate reads the "
                               "model files `sate average` writes (or sate.models.save_model_file, of a sate model)",
                               err.names) from None
    if not isinstance(data, dict):
        raise SateError(f"{path}: not a sate model file")
    check_meta(path, data)
    if not isinstance(data.get("model"), dict):
        raise SateError(f"{path}: model file has no state dict under 'model'")
    for key, value in data["model"].items():  # a list or None there was an AttributeError traceback, a sparse
        # tensor torch's RuntimeError of several lines, an int key a TypeError (thirtieth hostile pass)
        if not isinstance(key, str):
            why = f"the key {shown(key)}, not a parameter's name"
        elif not isinstance(value, torch.Tensor):
            why = f"{key} as {type(value).__name__}, not a tensor"
        elif value.layout != torch.strided:
            why = f"{key} as a {str(value.layout).removeprefix('torch.')} tensor, not a dense one"
        else:
            continue
        raise SateError(f"{path}: its weights (under 'model') hold {why} (a damaged or foreign file)")
    return data


def older_average(path: Path, meta: Mapping[str, Any]) -> tuple[str, Path] | None:
    """(what the model file at ``path`` is, the run's last.ckpt) where it is an average older than its run: after a
    resume trained on, EXP/model.pt is the average of the epochs before (hand31c). Told by the update the run had
    reached when `sate average` wrote it (its record, in ``meta``) and by the update of the run's last.ckpt beside it,
    now. A model file of an older sate (no record), one outside its experiment or of another run, and a last.ckpt
    that cannot be read say nothing (None)."""
    record = meta.get("averaged")
    last = path.parent / layout.CHECKPOINTS / layout.LAST_CHECKPOINT
    if not isinstance(record, dict) or not is_int64(record.get("step")) or not last.is_file():
        return None
    try:
        header = read_checkpoint(last, mmap=True).get("sate")
    except (SateError, OSError, AttributeError):
        return None
    if not isinstance(header, dict) or header.get("run_id") != record.get("run_id") or not is_int64(
            header.get("step")) or header["step"] <= record["step"]:
        return None
    epochs = record.get("epochs")
    which = f" of epochs {first_few([str(e) for e in epochs])}" if isinstance(epochs, list) and epochs else ""
    return (f"the average{which} written at update {record['step']:,}, and the run has trained on since: "
            f"{one_line(str(last))} is at update {header['step']:,} (a resume?)", last)


def note_older_average(path: Path, meta: Mapping[str, Any], what: str) -> None:
    """Say on standard error that the model file ``what`` reads (`--init-from`, a teacher, `sate analyze`) is an
    average older than its run (`older_average`): each took it without a word where `sate pack` refuses it. A note,
    not a refusal: starting from, or analysing, an earlier average is a use of its own."""
    older = older_average(path, meta)
    if older is not None:
        print(f"note: {what} {one_line(str(path))} is {older[0]}; to use the run's latest, average again "
              f"({average_again(path)})", file=sys.stderr)


def average_again(path: Path) -> str:
    """The `sate average` that writes the model file ``path`` of its experiment again: the file's own name where it is
    not the default (followed, "sate average --exp EXP --last N" wrote EXP/model.pt, and `--model EXP/avg2.pt` was
    refused again, word for word: review32k)."""
    out = "" if path.name == layout.MODEL else f" --out {shell_word(str(path))}"
    return f"sate average --exp {shell_word(str(path.parent))} --last N{out}, or --best N"


def refuse_not_averaged(path: Path) -> None:
    """EXP/model.pt named where EXP holds checkpoints but no model file yet: how it is made, not "checkpoint not
    found" (a model file's reader, twenty-second pass; an `--init-from` or `loss.kd` teacher, 24th hostile pass)."""
    if path.name == layout.MODEL and not os.path.lexists(path) and \
            (path.parent / layout.CHECKPOINTS / layout.LAST_CHECKPOINT).is_file():
        raise SateError(f"{path}: no such file: the experiment {path.parent} holds checkpoints but no {layout.MODEL} "
                        f"yet; write it with `sate average --exp {path.parent} --last N` (or --best N)")


def _refuse_checkpoint_folder(path: Path) -> None:
    """An experiment not averaged yet (no EXP/model.pt) or its checkpoint folder, given for a model file: the reader's
    hint, "did you mean EXP/checkpoints/last.ckpt?", named a checkpoint that a model file's reader then refused
    (`sate pack --model EXP/checkpoints`, twenty-first hostile pass). Its model file is written by `sate average`;
    EXP/model.pt named when it is not there yet (an average that failed on a full disk, a recipe's stage 6 run by hand)
    was "checkpoint not found", the name of what it is not, with no word of how it is made (twenty-second pass)."""
    refuse_not_averaged(path)
    if not path.is_dir() or (path / layout.MODEL).is_file():
        return  # a folder holding model.pt is named by read_checkpoint's hint
    exp = path.parent if (path / layout.LAST_CHECKPOINT).is_file() else path
    if not (exp / layout.CHECKPOINTS / layout.LAST_CHECKPOINT).is_file():
        return
    if (exp / layout.MODEL).is_file():
        raise SateError(f"{path}: is a directory, not a model file (did you mean {exp / layout.MODEL}?)")
    raise SateError(f"{path}: is a directory, not a model file: the experiment {exp} holds checkpoints but no "
                    f"{layout.MODEL} yet; write it with `sate average --exp {exp} --last N` (or --best N)")


def model_from_file(path: str | Path) -> tuple[SateModel, ModelFile]:
    """Rebuild the model stored in a model file, in eval mode and in float32, as sate computes features: built under
    another default dtype (`torch.set_default_dtype(torch.float64)` in a notebook) its weights were of that type, and
    every decoding a torch traceback, "Input type (float) and bias type (double) should be the same" (thirtieth
    hostile pass). Also returns the file's dict."""
    data = load_model_file(path)
    model = built(data, path)
    load_exact(model, data["model"], str(path))
    return model.float().eval(), data


def built(meta: RawMapping, path: str | Path) -> SateModel:
    """The model a model file's or checkpoint's header describes (untrained), a config it records that sate refuses
    named with the file: an edited header was "model config: d_model must be an integer", naming no file."""
    try:
        return build_model(meta["task"], meta["config"], meta["src_vocab_size"], meta["tgt_vocab_size"])
    except SateError as err:
        raise SateError(f"{path}: the model it records: {err}") from None


FIT_LABELS = ("missing", "unexpected", "shape mismatch (file vs model)")


def fit_problems(module: torch.nn.Module, state: dict[str, torch.Tensor],
                 labels: tuple[str, str, str] = FIT_LABELS, name: Callable[[str], str] = str) -> list[str]:
    """Why `state` does not load exactly into `module`: its missing, unexpected and mis-shaped keys, each kind under
    its label and said as `name` gives it (a downloaded model's own name for it); empty when it fits."""
    own = module.state_dict()
    missing = [name(k) for k in sorted(set(own) - set(state))]
    unexpected = [name(k) for k in sorted(set(state) - set(own))]
    shapes = [f"{name(k)} {tuple(state[k].shape)} vs {tuple(own[k].shape)}" for k in sorted(set(own) & set(state))
              if state[k].shape != own[k].shape]
    return [f"{label}: {name_list(keys)}" for label, keys in zip(labels, (missing, unexpected, shapes), strict=True)
            if keys]


def load_exact(model: torch.nn.Module, state: dict[str, torch.Tensor], source: str) -> None:
    """load_state_dict that names every missing, unexpected or mis-shaped key in a `SateError`."""
    problems = fit_problems(model, state)
    kinds = type_misfits(model.state_dict(), state)
    problems += [f"type mismatch (file vs model): {name_list(kinds)}"] * bool(kinds)
    if problems:
        raise SateError(f"{source} does not fit the model: " + "; ".join(problems))
    model.load_state_dict(state)


def type_misfits(own: dict[str, torch.Tensor], state: dict[str, torch.Tensor],
                 name: Callable[[str], str] = str) -> list[str]:
    """The keys of `state` whose values are no weights of the model whose state is `own` (`_number_misfits`), each
    said as `name` gives it with the two types: shared by model files, `init:` entries and hub parts, which cast
    them without a word (review30z)."""
    return [f"{name(k)} {str(state[k].dtype).removeprefix('torch.')} vs {str(own[k].dtype).removeprefix('torch.')}"
            + " (not whole numbers)" * (not own[k].is_floating_point())
            for k in sorted(set(own) & set(state)) if _number_misfits(state[k], own[k])]


def _number_misfits(value: torch.Tensor, own: torch.Tensor) -> bool:
    """Whether `value` is no weight of this model: integers, booleans or complex numbers where it keeps floats were
    cast without a word (complex ones with torch's warning; thirtieth hostile pass). Floats of another precision
    fit, and so do whole-number floats where it keeps an integer buffer: a file cast whole (`{k: v.half()}`,
    `.double()`) turns BatchNorm's num_batches_tracked into floats, which load as they always did."""
    if own.is_floating_point():
        return not value.is_floating_point()
    return value.is_floating_point() and not torch.equal(value, value.round())


def name_list(keys: list[str], limit: int = 8) -> str:
    """At most `limit` names, then how many more: error messages stay readable."""
    shown = ", ".join(keys[:limit])
    return shown + (f" ... and {len(keys) - limit} more" if len(keys) > limit else "")
