"""Write a self-contained model directory: `sate pack --model MODEL_FILE --data DATA_DIR --out DIR`.

A packed directory is all that decoding needs, without the data directory or the experiment:

    DIR/sate.yaml        what this is: task, decoding defaults, feature settings, part names
    DIR/model.pt         the sate model file (config, weights, token lists)
    DIR/spm_src.model    SentencePiece models and ESPnet-order token lists of `sate vocab`
    DIR/spm_tgt.model
    DIR/tokens_src.txt
    DIR/tokens_tgt.txt
    DIR/cmvn.json        global CMVN statistics of the training data (speech models with global CMVN)

A model trained on a Marian vocabulary (`sate vocab --marian`) packs ``DIR/marian/`` (source.spm, target.spm,
vocab.json, ctc_tokens.txt) instead of the SentencePiece files, and ``vocab: marian`` in sate.yaml. A model
whose acoustic encoder is a hub model reads waveforms: its feature section says ``type: waveform``.

The model file's token lists must equal the data directory's, and the CMVN statistics it records (`sate train`
and `sate average` record them) its cmvn.json, so a model is never packed with a vocabulary or a normalisation
it was not trained on. The directory is built in a temporary sibling and renamed into place: a killed run never
leaves a complete-looking pack.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sate.config import read_yaml, write_yaml
from sate.data.cmvn_record import CMVN_KINDS, recorded_kinds, require_cmvn
from sate.decode.options import (
    DecodeOptions,
    add_decode_argument,
    check_best_alone,
    decode_options,
    options_help,
    parse_decode,
)
from sate.errors import SateError, first_few, one_line, shell_word, shown
from sate.files import (
    ABANDONED_AFTER,
    SNIFF,
    ZIP_MAGIC,
    abandoned_temps,
    directory_held,
    folders_held,
    holds_data_files,
    known_kind,
    link_or_what_is_there,
    make_temp_dir,
    read_json,
    relative_note,
    remove_temp_dir,
    require_directory,
    require_file,
    temp_prefix,
    what_is_there,
)
from sate.layout import (
    CHECKPOINTS,
    CMVN,
    CONFIG,
    CT2_MODEL,
    MARIAN_DIR,
    MODEL,
    PACK_YAML,
    RESULTS,
    average_advice,
    spm_model,
    token_list,
    token_source,
)
from sate.models.config import TASKS, ModelConfig, resolve_config
from sate.targets import check_output, check_same_experiment, dir_name, experiment_holding, read_name, same_file

FORMAT = "sate-pack"
VERSION = 1
# file -> what it is, for error messages naming a missing part
VOCAB_PARTS = {
    spm_model("src"): "the source SentencePiece model",
    spm_model("tgt"): "the target SentencePiece model",
    token_list("src"): "the source token list",
    token_list("tgt"): "the target token list",
}
MARIAN_PARTS = {
    "marian/source.spm": "the Marian source SentencePiece model",
    "marian/target.spm": "the Marian target SentencePiece model",
    "marian/vocab.json": "the Marian vocabulary",
    "marian/ctc_tokens.txt": "the CTC token list over Marian's source pieces",
}
# The settings `sate features` computes fbank with; a pack records them and decoding checks them.
FEATURE_KEYS = ("type", "num_mel_bins", "frame_length_ms", "frame_shift_ms", "sample_rate", "dither", "scale",
                "min_samples")


def feature_settings(cmvn: str, kind: str = "fbank") -> dict[str, object]:
    """The feature section of sate.yaml: today's fbank settings plus the CMVN kind, or the waveform mode's."""
    from sate.data.audio import MIN_SAMPLES, SAMPLE_RATE
    from sate.data.features import FEATURE_CONFIG

    if kind == "waveform":
        return {"type": "waveform", "sample_rate": SAMPLE_RATE, "min_samples": MIN_SAMPLES, "cmvn": "none"}
    return {**{k: FEATURE_CONFIG[k] for k in FEATURE_KEYS}, "cmvn": cmvn}


def vocab_parts(kind: str) -> dict[str, str]:
    """file -> what it is, of a vocabulary kind (`sate.data.vocab.vocabulary_kind`)."""
    return MARIAN_PARTS if kind == "marian" else VOCAB_PARTS


def model_features(conf: ModelConfig) -> str:
    """fbank, or waveform for a hub acoustic encoder."""
    acoustic = getattr(conf, "acoustic", None)
    return "waveform" if acoustic is not None and acoustic.kind.hub else "fbank"


def default_decoding() -> dict[str, object]:
    """The SATE recipe's decoding: beam 5, lenpen 1.0; every other option at beam search's default."""
    return DecodeOptions(beam=5, lenpen=1.0).to_dict()


@dataclass(frozen=True)
class PackInfo:
    """What ``sate.yaml`` says."""

    task: str
    decode: dict[str, object]  # the DecodeOptions it decodes with, as sate.yaml stores them
    features: dict[str, object] | None  # None for MT
    vocab: str = "spm"  # or marian

    def to_yaml(self) -> dict[str, object]:
        doc: dict[str, object] = {"format": FORMAT, "version": VERSION, "task": self.task,
                               "decode": self.decode}
        if self.features is not None:
            doc["features"] = self.features
        if self.vocab != "spm":
            doc["vocab"] = self.vocab
        return doc


def training_cmvn(model_file: Path, meta: Mapping[str, Any]) -> tuple[str, Path] | None:
    """The CMVN kind ``model_file`` (its header ``meta``) was trained with: recorded in the file (`sate average`
    since the eleventh hostile pass), else data.cmvn of the config.yaml `sate train` leaves beside it. A file copied
    elsewhere was packed with global CMVN whatever it was trained with."""
    if meta.get("cmvn_kind") in CMVN_KINDS:
        return str(meta["cmvn_kind"]), model_file
    config = model_file.parent / CONFIG
    if not config.is_file():
        return None
    data = read_yaml(config).get("data")
    if not isinstance(data, dict) or "cmvn" not in data:
        return None
    kind = data["cmvn"]
    if not isinstance(kind, str) or kind not in CMVN_KINDS:  # another value was taken for none recorded: packed
        # with global statistics whatever it was trained with, as a model file's own cmvn_kind was (twentieth pass)
        raise SateError(f"{config}: data.cmvn is {shown(kind)}, not one of {', '.join(CMVN_KINDS)}, so what "
                        f"{model_file} was trained with is not known; write the value `sate train` wrote there")
    return kind, config


def check_tokens(meta: dict[str, Any], model_file: Path, data_dir: Path, vocabs: tuple | None = None) -> None:
    """The model's token lists must equal the data directory's (same vocabularies); an ASR model's target list, which
    it never reads, may differ (`token_sides`)."""
    from sate.data.manifest import read_text_lines
    from sate.models.model_file import token_sides  # heavy: torch, loaded already to read the model file

    for k, side in enumerate(("src", "tgt")):
        if side not in token_sides(meta["task"]):
            continue
        # a Marian vocabulary (`vocabs` given): its token lists come from its files
        path = token_source(data_dir, side, "spm" if vocabs is None else "marian")
        tokens = read_text_lines(path) if vocabs is None else vocabs[k].tokens
        ours = meta[f"{side}_tokens"]
        if tokens != ours:
            index = next((i for i, (a, b) in enumerate(zip(tokens, ours, strict=False)) if a != b),
                         min(len(tokens), len(ours)))
            advice = trained_data(model_file, data_dir)
            raise SateError(f"{path} ({len(tokens)} tokens) is not the token list {model_file} was trained with "
                            f"({len(ours)} tokens; first difference at line {index + 1}){advice}")


def trained_data(model_file: Path, data_dir: Path) -> str:
    """The advice that ends a refusal of ``data_dir``: the data directory the run beside ``model_file`` trained on
    (data.dir of its config.yaml), where that is known. The refusals of another vocabulary or CMVN said what
    differed but not where the right files were (25th hostile pass)."""
    config = model_file.parent / CONFIG
    try:
        doc = read_yaml(config) if config.is_file() else None
    except (SateError, OSError):
        doc = None
    data = doc.get("data") if isinstance(doc, dict) else None
    where = data.get("dir") if isinstance(data, dict) else None
    if not isinstance(where, str) or not where:
        return "; give --data the data directory it was trained on"
    # A relative data.dir is relative to the directory `sate train` ran in, which no file records: read from here it
    # may name another directory, or this one by chance (the advice read it from the current directory).
    relative = "" if os.path.isabs(where) else ", relative to the directory `sate train` ran in"
    if same_file(Path(where), data_dir):  # data_dir is there (`pack` required it)
        run = "if `sate train` ran here, the run trained on this directory" if relative else \
            "the run trained on this directory"
        return (f"; {run} (data.dir of {config}: {one_line(where)}), whose files changed since "
                "(`sate vocab` or `sate features` run again?): pack a model trained on them, or restore the run's")
    if not relative and not os.path.isdir(where):  # moved since: the advice named a place that is gone (29th pass)
        return (f"; give --data the data directory it was trained on: {one_line(where)} (data.dir of {config}), which "
                "is not there now (moved, or removed?): give the folder it went to")
    return f"; give --data the data directory it was trained on: {one_line(where)} (data.dir of {config}{relative})"


def check_cmvn_kind(meta: Mapping[str, Any], model_file: Path, kind: str | None, where: str) -> None:
    """A model file that records global CMVN statistics was trained on globally normalised features: packed or
    decoded with ``none`` or ``utterance`` CMVN, it read features unlike any it was trained on, without a word.
    Likewise one that records its normalisation (``cmvn_kind``) is read with no other."""
    other = next(((theirs, why) for theirs, why in recorded_kinds(meta) if theirs != kind), None)
    if other is not None:
        raise SateError(f"{where} {kind}: {model_file} was trained with {other[0]} CMVN ({other[1]}); decoding it "
                        "with other features gives wrong output")


def check_cmvn(meta: Mapping[str, Any], model_file: Path, path: Path) -> None:
    """``path`` (a `cmvn.json`) must hold the statistics the model file records, when it records them: a pack
    with others would decode from differently normalised features."""
    require_cmvn(meta.get("cmvn"), path, model_file)


def check_pack_holds_its_own(out: Path) -> None:
    """An older pack at ``out`` is replaced whole: refuse it while it holds anything `sate pack` did not write (a
    README or licence added to share it), which went with it without a word."""
    if not (out / PACK_YAML).is_file():
        return
    own = {PACK_YAML, MODEL, CMVN, *VOCAB_PARTS, *MARIAN_PARTS, MARIAN_DIR}
    # listed, not globbed: `Path.glob` found nothing in a marian/ of mode 0300, whose files of the user's then went
    # with the old pack; os.listdir names it with Permission denied (nineteenth hostile pass)
    marian = out / MARIAN_DIR
    inside = [marian / name for name in os.listdir(marian)] if marian.is_dir() else []
    found = sorted(str(p.relative_to(out)) for p in (*out.iterdir(), *inside))
    other = [name for name in found if name not in own]
    if other:
        raise SateError(f"--out {out}: refusing to replace the pack: it holds {first_few(other, 1)}, which `sate pack` "
                        "did not write and which would go with the old pack; move it out first")


def decode_word(value: object) -> str:
    """A `--decode` value as the option reads it back (YAML): ``null``, ``true``, ``false``, numbers as written."""
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def check_not_here(out: Path, given: Path, model_file: Path, data_dir: Path, options: list[str]) -> None:
    """Refuse an ``out`` (resolved) that is the current directory or holds it: the folder there is replaced whole,
    renamed aside and removed, so `sate pack --out .` in an empty folder made for the pack (or in an old pack, to
    refresh it) left the shell in a removed folder, where `ls` showed nothing and the next command said "the current
    directory was deleted (by another shell or a clean-up?)" (thirty-first hostile pass). The advice is the whole
    command to run from the folder above, ``--model`` and ``--data`` made absolute: a relative one, given from here,
    named another file there (review31c). ``options`` are the command's other words (``--decode``, ``--cmvn``)."""
    try:
        here = os.getcwd()
    except OSError:
        return
    if Path(os.path.realpath(here)).is_relative_to(out):
        what = ("the current directory" if Path(os.path.realpath(here)) == out
                else f"a folder holding the current directory ({here})")

        def absolute(name: Path) -> str:  # tidied (no ..) only where that names the same file
            joined, tidy = os.path.join(here, name), os.path.abspath(os.path.join(here, name))
            return shell_word(tidy if os.path.realpath(tidy) == os.path.realpath(joined) else joined)

        command = " ".join(["sate pack --model", absolute(model_file), "--data", absolute(data_dir), *options,
                            "--out", shell_word(out.name)])
        raise SateError(f"--out {one_line(str(given))}: it is {what}, which `sate pack` replaces whole (the new pack "
                        "is renamed into its place), leaving the shell in a removed folder; run it from the folder "
                        f"above: cd {shell_word(str(out.parent))} && {command}")


def old_pack_place(out: Path) -> Path:
    """Where the pack at ``out`` waits while the new one is renamed into place (``.NAME.old`` beside it), refused
    before any work when anything but a pack a killed run left there stands at that name (that one is removed, as
    ever): a user's folder of that name was deleted with everything in it, exit 0 (eighteenth hostile pass)."""
    old = out.with_name(temp_prefix(out.name) + "old")
    if os.path.lexists(old) and (old.is_symlink() or not (old / PACK_YAML).is_file()):
        what = link_or_what_is_there(old) or "a file"
        raise SateError(f"--out {out}: {old} is {what}, where `sate pack` keeps the pack it replaces until the new "
                        "one is in place (and then removes it); move it away")
    return old


def check_experiment_task(out: Path, model_file: Path, task: object, given: Path) -> None:
    """Refuse a pack of a model of another task written in an experiment (EXP/pack): a model outside any experiment
    (a pack's model.pt, one averaged elsewhere) says nothing of where it belongs, so `sate pack --model
    other/pack/model.pt --out exp/asr/pack` replaced the ASR pack with an MT one, exit 0, which the cascade then read
    as exp/asr's (24th hostile pass). A model of the experiment's task (averaged elsewhere) is packed there as
    before; an experiment whose config.yaml cannot be read says nothing. ``given``: --out as the user named it. Both
    places count, as in `check_same_experiment`: the experiment the output is named in and the one a link there leads
    into (only the latter was judged: a link in exp/asr to a store outside any experiment took an MT pack as exp/asr's;
    twenty-seventh pass, fix27c)."""
    named = experiment_holding(Path(os.path.abspath(given)).parent, levels=1)
    real = Path(os.path.realpath(out)).parent  # evaluate gives --out as typed, pack as resolved
    for target in dict.fromkeys(p for p in (named, experiment_holding(real, levels=1)) if p is not None):
        try:
            trained = read_yaml(target / CONFIG).get("task")
        except (SateError, OSError):
            continue
        if isinstance(trained, str) and trained in TASKS and trained != task:
            raise SateError(f"--out {one_line(str(given))}: it lies in the {trained} experiment "
                            f"{one_line(str(target))}, and --model {one_line(str(model_file))} is an {task} model: it "
                            f"would be taken for {one_line(target.name)}'s own; write it outside the experiment")


def check_average_current(model_file: Path, meta: Mapping[str, Any]) -> None:
    """Refuse an average older than its run (`older_average`): after a resume trained on, `sate pack --model
    EXP/model.pt` packed the average of the epochs before, exit 0 (hand31c)."""
    from sate.models.model_file import average_again, older_average  # heavy: torch, loaded already to read the model

    older = older_average(model_file, meta)
    if older is not None:
        raise SateError(f"--model {one_line(str(model_file))} is {older[0]}; average again ({average_again(model_file)}"
                        "), then pack; to pack the older average, copy it out of the experiment first and give the "
                        "copy")


def pack(model_file: Path, data_dir: Path, out: Path, decode: Mapping[str, object] | None = None,
         cmvn: str | None = None) -> PackInfo:
    """Write the packed directory ``out`` (replacing an older pack there); returns what sate.yaml says.

    ``decode`` overrides the default decoding options; ``cmvn`` is the feature normalisation the
    model was trained with (default: what the model file records, else the training run's config.yaml beside
    it, else global).
    """
    from sate.data.features import load_cmvn
    from sate.data.vocab import load_vocabularies, vocabulary_kind
    from sate.models.model_file import load_model_file

    given, out = out, check_output(out, "pack")  # before any work: only a pack (or an empty directory) is replaced
    options = [f"--decode {shell_word(','.join(f'{k}={decode_word(v)}' for k, v in decode.items()))}"] if decode else []
    check_not_here(out, given, model_file, data_dir, [*options, *([f"--cmvn {cmvn}"] if cmvn else [])])
    check_pack_holds_its_own(out)
    old = old_pack_place(out)  # the pack replaced, until the new one is in place
    meta = load_model_file(model_file)
    check_experiment_task(out, model_file, meta["task"], given)
    check_average_current(model_file, meta)
    require_directory(data_dir, "--data")  # a file or a pipe there was "data directory is missing"
    kind = vocabulary_kind(data_dir)
    parts = vocab_parts(kind)
    for name in parts:
        require_file(data_dir / name, parts[name],
                     f"{data_dir / name}: {parts[name]} is missing (run `sate vocab`)")
    if kind == "marian":
        check_tokens(meta, model_file, data_dir, load_vocabularies(data_dir, meta["task"], kind))
        if meta["task"] == "mt":  # an MT model reads no CTC list, but the pack holds it: a damaged one went in, exit 0
            from sate.data.marian_vocab import MarianVocab  # heavy: sentencepiece, for a Marian pack alone

            MarianVocab(data_dir / "marian", "ctc")
    else:
        check_tokens(meta, model_file, data_dir)
        load_vocabularies(data_dir, meta["task"], kind)  # the SentencePiece models must fit the token lists
    options = decode_options({**default_decoding(), **(decode or {})}, "--decode")
    speech = meta["task"] != "mt"
    features = model_features(resolve_config(meta["task"], meta["config"]))
    if cmvn is not None and cmvn not in CMVN_KINDS:
        raise SateError(f"--cmvn must be one of {', '.join(CMVN_KINDS)}, got {cmvn!r}")
    if not speech and cmvn is not None:  # taken without a word, and nothing of it packed
        raise SateError(f"--cmvn {cmvn}: {model_file} is an MT model, which reads text: it takes no CMVN")
    if speech and features == "waveform":
        if cmvn not in (None, "none"):
            raise SateError(f"--cmvn {cmvn}: the model reads waveforms, which take no CMVN")
        cmvn = "none"
    found = training_cmvn(model_file, meta) if speech else None
    if speech and cmvn is None:
        cmvn = found[0] if found else "global"
        print(f"cmvn: {cmvn} ({'from ' + one_line(str(found[1])) if found else 'the training default'})")
    elif speech and found is not None and cmvn != found[0]:
        raise SateError(f"--cmvn {cmvn}: the run that trained {model_file} normalised its features with "
                        f"data.cmvn {found[0]} ({found[1]})")
    if speech:
        check_cmvn_kind(meta, model_file, cmvn, "--cmvn")
    if speech and cmvn == "global":
        load_cmvn(data_dir / CMVN)  # exists and is well-formed
        # where the right statistics are, said (they are not in a pack, which `check_cmvn` checks too)
        require_cmvn(meta.get("cmvn"), data_dir / CMVN, model_file, trained_data(model_file, data_dir))
    info = PackInfo(meta["task"], options.to_dict(), feature_settings(cmvn, features) if speech else None, kind)

    out.parent.mkdir(parents=True, exist_ok=True)
    for left in remove_abandoned_builds(out):
        print(f"removed {one_line(str(left))}, a pack that a killed `sate pack` was building")
    tmp = make_temp_dir(out.parent, out.name)  # mode as mkdir gives it, not mkdtemp's 0700
    try:
        with directory_held(tmp, "sate pack"):  # held while built, so another run's `remove_abandoned_builds` leaves it
            _build(tmp, model_file, data_dir, parts, speech and cmvn == "global", info, out, old)
    except BaseException as err:
        remove_temp_dir(tmp)
        _put_back(out, old)
        if isinstance(err, OSError) and any(name is not None and Path(name).is_relative_to(tmp)
                                            for name in (err.filename, err.filename2)):
            # a full disk named the temporary folder, which is gone: say the file of the pack that was being written
            # (a copy's error names its source, then the temporary copy)
            def in_pack(name: str | None) -> str | None:
                return str(out / Path(name).relative_to(tmp)) if name and Path(name).is_relative_to(tmp) else name

            raise OSError(err.errno, err.strerror, in_pack(err.filename), None, in_pack(err.filename2)) from None
        raise
    return info


def _build(tmp: Path, model_file: Path, data_dir: Path, parts: dict[str, str], global_cmvn: bool, info: PackInfo,
           out: Path, old: Path) -> None:
    """Write the pack's files into ``tmp`` and rename it to ``out``."""
    shutil.copyfile(model_file, tmp / MODEL)
    for name in parts:
        (tmp / name).parent.mkdir(exist_ok=True)
        shutil.copyfile(data_dir / name, tmp / name)
    if global_cmvn:
        shutil.copyfile(data_dir / CMVN, tmp / CMVN)
    write_yaml(tmp / PACK_YAML, info.to_yaml())
    with folders_held([out.parent]):  # the renames of two packs into one --out at once interleaved: the second
        # ended "PACK -> PACK: Directory not empty" (27th hostile pass); now it waits for the first's, then replaces
        _rename_into_place(tmp, out, old)


def remove_abandoned_builds(out: Path, min_age: float = ABANDONED_AFTER) -> list[Path]:
    """Remove the folders beside ``out`` in which a `sate pack` into it, killed (SIGKILL, a preempted job), was
    building it: `.NAME.XXXXXXXX.tmp`, as large as the model, was left for good (the sweep of sate's temporary
    files takes files alone), one more at every such kill, and `sate translate --model` of the folder of packs
    offered it as a pack to give (thirty-first hostile pass). A build holds its folder locked (`directory_held`),
    so only one no process holds, older than ``min_age`` seconds (the instant between its making and its lock), is
    removed; where the file system has no locks, none is. Returns what was removed."""
    removed = []
    for left in abandoned_temps(out, min_age, folders=True):
        try:
            remove_temp_dir(left)
            removed.append(left)
        except OSError:
            pass  # a folder that may not be emptied is left as it is
    return removed


def _put_back(out: Path, old: Path) -> None:
    """A pack a killed run left aside before its new one was in place comes back, under the hold of the renames:
    unheld, a second pack failing while it built (a full disk, Ctrl-C) put back the pack a first had just set aside,
    and the first ended "PACK -> PACK: Directory not empty" (27th hostile pass's review). Where another run holds
    the folder past the wait, its renames are under way and the pack is left to them."""
    try:
        with folders_held([out.parent]):
            if not out.exists() and old.exists():
                old.rename(out)
    except SateError:
        pass


def _rename_into_place(tmp: Path, out: Path, old: Path) -> None:
    """The pack built in ``tmp`` renamed to ``out``, the one there kept at ``old`` until then and removed after;
    stopped between the two renames (a kill, SIGTERM), the old pack comes back."""
    try:
        if out.exists() and not (out / PACK_YAML).is_file():
            out.rmdir()  # empty (check_output): a directory with anything in it is only replaced if it is a pack
        if out.exists():
            shutil.rmtree(old, ignore_errors=True)
            out.rename(old)
        tmp.rename(out)
    except BaseException:
        if not out.exists() and old.exists():
            old.rename(out)
        raise
    finally:
        if out.exists():
            shutil.rmtree(old, ignore_errors=True)


PACK_KEYS = ("format", "version", "task", "decode", "features", "vocab")  # what `PackInfo.to_yaml` writes


def _mapping(doc: dict[str, object], key: str, path: Path) -> dict:
    """Section `key` of a pack's sate.yaml: missing, or another kind of value (`decode: []`, which was called
    missing too), each said as it is."""
    if key not in doc:
        raise SateError(f"{path}: the {key} section is missing")
    value = doc[key]
    if not isinstance(value, dict):
        raise SateError(f"{path}: {key} must be a mapping of keys (as `sate pack` writes it), got {shown(value)}")
    return value


def _pack_advice(directory: Path) -> str:
    """What to do with a directory that is not a pack: a Whisper or Marian model directory was told to "write one with
    `sate pack`", which packs sate's own model files only."""
    config = directory / "config.json"
    kind = "whisper" if (directory / CT2_MODEL).is_file() else None
    if kind is None and config.is_file():
        try:
            kind = read_json(config).get("model_type")
        except SateError:
            kind = None
    if kind == "whisper":
        return ("a Whisper model directory: `sate evaluate --model` reads it as an ASR side; to translate with it, "
                "train a sate model on it (docs/whisper.md) and pack that")
    if kind == "marian":
        return ("a Marian model directory: train with it as model.textual.path (docs/models.md) and pack the model "
                "file that makes")
    if config.is_file():  # a hub directory of another kind, or one whose config.json lost its model_type
        return (f"{one_line(str(config))} says model_type {shown(kind)}: sate reads Whisper (model_type whisper) and "
                "Marian (marian) model directories, and packs that `sate pack` writes")
    # an experiment given for its pack (a recipe packs EXP/NAME into EXP/NAME/pack): "write one with `sate pack`"
    if (directory / "pack" / PACK_YAML).is_file():
        return f"an experiment? Its pack is {one_line(str(directory / 'pack'))}"
    if (directory / MODEL).is_file():
        return (f"an experiment? Pack its model file: sate pack --model {one_line(str(directory / MODEL))} "
                "--data DATA --out PACK")
    return _what_else(directory) or "write one with `sate pack`"


def _what_else(directory: Path) -> str | None:
    """What a folder of sate's, given for a pack, is: a folder inside a pack, a data directory, an experiment with no
    model file yet, an evaluate run. Each was told to "write one with `sate pack`" into it, which packs a model file
    into a folder of its own (twenty-first hostile pass)."""
    inside = next((folder for folder in directory.parents if (folder / PACK_YAML).is_file()), None)
    if inside is not None:
        return f"a folder inside the pack {one_line(str(inside))}: give that"
    if (directory / CHECKPOINTS).is_dir():
        return ("an experiment with no model file yet: average its checkpoints (`sate average --exp`), then pack the "
                "model file (`sate pack --model FILE`)")
    if (directory / RESULTS).is_file():
        return "a `sate evaluate` run's folder; --model takes the pack it evaluated"
    if holds_data_files(directory):
        return "a data directory (`sate prep`); `sate pack --model FILE --data` packs a model file with it"
    packs = _packs_held(directory)
    if packs:  # a folder of packs, or the folder a shared pack's archive unpacked into (its pack inside)
        more = f" and {len(packs) - 3:,} more" if len(packs) > 3 else ""  # whole paths: first_few cuts long ones
        return f"a folder of packs? give one: {', '.join(one_line(str(directory / n)) for n in packs[:3])}{more}"
    return None


def _packs_held(directory: Path, limit: int = 1000) -> list[str]:
    """The names of the packs right inside ``directory`` (of its first ``limit`` entries: a home folder given by
    mistake is not read whole), in order. A folder of packs, or the folder an archived pack was unpacked into, was
    told to "write one with `sate pack`", which needs the model file and the data directory the pack was made to do
    without (thirtieth hostile pass)."""
    try:
        with os.scandir(directory) as entries:
            names = [entry.name for entry in itertools.islice(entries, limit)]
    except OSError:
        return []
    # not a hidden one: the folder a killed `sate pack` was building (`.NAME.XXXXXXXX.tmp`), or the pack it was
    # replacing (`.NAME.old`), was offered as a pack to give
    return sorted(name for name in names if not name.startswith(".") and (directory / name / PACK_YAML).is_file())


def _file_advice(path: Path) -> str:
    """What to give for a file given where a pack is read. The pack's own model.pt, a training checkpoint and a pack
    archived to be shared (`pack.tar.gz`) were told "`sate pack --model FILE` makes one", which repacked the
    first and refused the second (twenty-first hostile pass)."""
    folder = path.parent
    if (folder / PACK_YAML).is_file():
        return f"a file of the pack {one_line(str(folder))}: give the pack itself"
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF)
    except OSError:  # a file that may not be read: named by its name alone
        head = b""
    if head[:4] != ZIP_MAGIC and (known_kind(head) or "").endswith("compressed data") or path.suffix == ".zip":
        return "an archive? unpack it, and give the folder it unpacks to"
    if path.suffix == ".ckpt" or folder.name == CHECKPOINTS:
        return f"a training checkpoint? {average_advice(path)}, then `sate pack` packs that"
    if (folder / "pack" / PACK_YAML).is_file():  # EXP/model.pt, where a recipe packs EXP into EXP/pack
        return f"the experiment's pack is {one_line(str(folder / 'pack'))}"
    return "`sate pack --model FILE` makes one"


def read_pack_yaml(directory: Path) -> PackInfo:
    """Read and check ``DIR/sate.yaml``; a missing or malformed one is an error naming it."""
    path = directory / PACK_YAML
    if not directory.is_dir():  # a model file given for its pack was called missing, though it was there
        if directory.is_file():
            raise SateError(f"{directory}: a file, not a packed model directory ({_file_advice(directory)})")
        there = what_is_there(directory)  # a symlink loop, a broken symlink or a pipe was called missing
        raise SateError(f"{directory}: {there}, not a packed model directory" if there is not None else
                        # a relative name given from another folder, or a '~' no shell expanded (`load("~/packs/st")`
                        # in a notebook), said so with no hint why (25th hostile pass)
                        f"{directory}: packed model directory is missing{relative_note(directory)}")
    try:
        os.stat(path)
    except PermissionError as err:  # the folder's own mode, named: it was named through model.bin, looked for first
        raise PermissionError(err.errno, err.strerror, str(directory)) from None
    except OSError:
        pass
    require_file(path, "a pack's settings",
                 lambda: f"{directory}: not a packed model: {PACK_YAML} is missing ({_pack_advice(directory)})")
    doc = read_yaml(path)
    if doc.get("format") != FORMAT:
        raise SateError(f"{path}: not a sate pack (format {shown(doc.get('format'))})")
    if type(doc.get("version")) is not int or doc["version"] != VERSION:  # `version: true` (yes) equals 1 in Python
        raise SateError(f"{path}: pack version {shown(doc.get('version'))}; this sate reads {VERSION}")
    task = doc.get("task")
    if task not in TASKS:
        raise SateError(f"{path}: task must be one of {', '.join(TASKS)}, got {shown(task)}")
    unknown = [key for key in doc if key not in PACK_KEYS]
    if unknown:  # a typo (`decdoe:`) left the pack decoding with what it had, without a word
        raise SateError(f"{path}: unknown key {shown(unknown[0])} (a pack's sate.yaml holds {', '.join(PACK_KEYS)})")
    decode = _mapping(doc, "decode", path)
    features = doc.get("features")
    vocab = doc.get("vocab", "spm")
    if vocab not in ("spm", "marian"):
        raise SateError(f"{path}: vocab must be spm or marian, got {shown(vocab)}")
    if task != "mt":
        features = _mapping(doc, "features", path)
        expected = feature_settings(features.get("cmvn"), "waveform" if features.get("type") == "waveform"
                                    else "fbank")
        if features.get("cmvn") not in CMVN_KINDS:
            raise SateError(f"{path}: features.cmvn must be one of {', '.join(CMVN_KINDS)}")
        if features != expected:
            # key=str: a key YAML reads as a number or a boolean (`1: 2`) was a TypeError traceback
            diff = sorted((k for k in set(features) | set(expected) if features.get(k) != expected.get(k)), key=str)
            # the first few (a section of 90,000 keys was a 1.8 MB line)
            raise SateError(f"{path}: features {first_few(diff)} differ from what this sate computes "
                            f"({first_few([f'{k}={shown(expected.get(k))}' for k in diff])})")
    return PackInfo(task, decode, features if task != "mt" else None, vocab)


def required_parts(info: PackInfo) -> dict[str, str]:
    """file name -> description of every part a pack of this kind must hold."""
    parts = {MODEL: "the model file", **vocab_parts(info.vocab)}
    if info.features is not None and info.features["cmvn"] == "global":
        parts[CMVN] = "the CMVN statistics"
    return parts


def check_pack_parts(directory: Path, info: PackInfo) -> None:
    """Every part a pack of this kind must hold is a file there; shared by `sate evaluate` (`SpeechTranslator.load`)
    and `sate analyze`, which read a pack's parts alike."""
    for name, what in required_parts(info).items():
        if not (directory / name).is_file():
            # a directory, a device, a broken link or a loop is named (a broken link was "holds no file")
            kind = what_is_there(directory / name)
            held = f"holds {name} as {kind}, not a file" if kind else f"is missing {name}"
            raise SateError(f"{directory}: packed model {held} ({what})")


def check_pack_tokens(meta: Mapping[str, Any], directory: Path, info: PackInfo, vocabs: tuple) -> None:
    """A pack's model file uses the pack's own (source, target) vocabularies: a model.pt copied over a pack's, or a
    vocabulary copied into it, encoded with ids the model never learnt. Shared by `sate evaluate` and `sate analyze`
    (which, reading a pack's own vocabularies unchecked, gave an IndexError or wrong values: twenty-sixth pass)."""
    from sate.models.model_file import token_sides  # heavy: torch, loaded already to read the model file

    for side, vocab in zip(("src", "tgt"), vocabs, strict=True):
        if side in token_sides(meta["task"]) and meta[f"{side}_tokens"] != vocab.tokens:
            raise SateError(f"{directory / MODEL}: its {side} token list differs from "
                            f"{token_source(directory, side, info.vocab)}")


def check_pack_features(conf: ModelConfig, directory: Path, info: PackInfo) -> None:
    """A pack's features type (fbank or waveform) is its model's: the decoding reads it from the model, so a
    sate.yaml copied from a pack of the other kind (a wav2vec2 pack's over an fbank one's) was decoded with the model's
    features and the copied section's normalisation, its cmvn.json left unread, exit 0 (thirtieth hostile pass).
    Shared by `sate evaluate` (`SpeechTranslator.load`) and `sate analyze`."""
    if info.features is None:
        return
    said, reads = "waveform" if info.features.get("type") == "waveform" else "fbank", model_features(conf)
    if said != reads:
        raise SateError(f"{directory / PACK_YAML}: features.type is {said}, but the acoustic encoder of "
                        f"{directory / MODEL} ({conf.acoustic.type}) reads "
                        f"{'waveforms' if reads == 'waveform' else 'fbank features'}: put back the sate.yaml `sate "
                        "pack` wrote, or pack the model again")


# ----------------------------------------------------------------------------------------------
# CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = options_help()
    parser.add_argument("--model", type=read_name, required=True, help="model file of `sate train` / `sate average`")
    parser.add_argument("--data", type=read_name, required=True,
                        help="the data directory the model was trained on (SentencePiece models, token lists, CMVN)")
    parser.add_argument("--out", type=dir_name, required=True,
                        help="directory to write (an older pack there is replaced)")
    add_decode_argument(parser, "decoding defaults to store, e.g. --decode beam=5,lenpen=1.0 (beam search's "
                                "option names; repeatable)")
    parser.add_argument("--cmvn", choices=CMVN_KINDS, default=None,
                        help="feature normalisation the model was trained with "
                             "(when not given: what the model file records, else data.cmvn of the config.yaml "
                             "beside --model, else global)")


def run(args: argparse.Namespace) -> int:
    decode = parse_decode(args.decode)
    check_best_alone(args.decode, decode, "sate translate and sate evaluate, which decode with a pack's options, write")
    check_same_experiment(args.out, [args.model], f"--model {args.model}")  # not exp/st's pack as exp/asr/pack
    info = pack(args.model, args.data, args.out, decode, args.cmvn)
    stored = " ".join(f"{k}={v}" for k, v in info.decode.items())
    print(f"packed {info.task} model {one_line(str(args.model))} -> {one_line(str(args.out))} (decode: {stored})")
    return 0
