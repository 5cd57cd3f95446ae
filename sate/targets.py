"""Where a command may write: one rule for every command with an output (`--out`, `--exp`, `--data`).

- A command replaces only a file of its own kind of output: a model file only `sate average`, a pack only
  `sate pack`, a text file only the commands that write text. A model, an audio file or a checkpoint named as a
  text output is refused, and so is a directory named as a file.
- Nothing writes inside a checkpoint folder (EXP/checkpoints, which `sate train` alone manages: an average written
  there would be taken for an epoch, and last.ckpt is the resume point), inside a pack (`sate pack` replaces a
  pack whole, and its files must keep matching its model) or inside a data directory's stored features and text
  (fbank/, frozen/, mt_bin/: their indexes and records are text that a translation would replace).
- An experiment (`sate train --exp`) goes into a new or empty directory, or one that already holds an experiment
  (its config snapshot or checkpoint folder); never into a data directory or a folder of other things, which
  Lightning's logs, the checkpoints and the snapshot would be mixed into.
- Symlinks are resolved first: the file a link points to decides, and is what gets written.
- A text output may be a stream (a named pipe, ``/dev/stdout``, ``/dev/null``): it is written in place.
- What the kernel would refuse is refused first: a directory the command fills that it may not write in, a file
  in a directory it may not write in, and a read-only file (which the rename of an atomic write would replace where
  the shell's ``>`` says "Permission denied").
- An output is never one of the command's own inputs (`same_file`: another spelling, a symlink, a hard link).
- All of it is checked before any work, and a refusal is one line naming the option and the path.
"""

from __future__ import annotations

import argparse
import codecs
import fcntl
import json
import os
import re
import shlex
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from sate import layout
from sate.config import read_yaml
from sate.errors import SateError, first_few, one_line, shell_word, shown
from sate.files import (
    MAGIC,
    PATH_MAX,
    STANDARD_NAMES,
    TEMP_NAME_ROOM,
    append_only,
    binary_kind,
    fixed_in_place,
    hub_model_folder,
    is_stream,
    kernel_file_system,
    mount_point,
    mounts_inside,
    own_descriptor,
    sticky_forbids,
    what_is_there,
)
from sate.numbers import is_digits

# text: a file of text (translate, segment, evaluate, report); results: a file of a `sate evaluate` run (its
# results.json, and the hypotheses and references it scored: text that only evaluate replaces, and a regular file,
# never a stream: a run's files are replaced together); model: a sate model file (average); image: a PNG (analyze);
# pack: a packed model directory (pack); directory: a directory the command creates or fills (prep, features,
# vocab, evaluate, analyze); data: a data directory (prep, features, vocab), never an experiment; experiment: `sate
# train`'s --exp; corpus: a directory `sate synth` voices a corpus into (OUT/en-de/), never a data directory or an
# experiment.
Kind = Literal["text", "results", "model", "image", "pack", "directory", "data", "experiment", "corpus"]
# What a run leaves in its --exp before its config snapshot (a refused start, a recipe's log): still an experiment.
RUN_FILES = (layout.TRAIN_LOCK, "logs", "tensorboard")
LOG_FOLDERS = ("logs", "tensorboard")  # an experiment's training logs (Lightning's CSV and TensorBoard loggers)


def name_max(directory: Path) -> int:
    """The longest file name (in bytes) the file system of ``directory`` (or its nearest existing parent) takes."""
    for folder in (directory, *directory.parents):
        try:
            return os.pathconf(folder, "PC_NAME_MAX")
        except (OSError, ValueError):
            continue
    return 255


def checkpoint_folder(directory: Path) -> bool:
    """A folder `sate train` keeps checkpoints in: it holds last.ckpt, or it is EXP/checkpoints beside config.yaml."""
    return os.path.exists(directory / layout.LAST_CHECKPOINT) or (
        directory.name == layout.CHECKPOINTS and os.path.isfile(directory.parent / layout.CONFIG))


def _data_dir(directory: Path) -> bool:
    """Does ``directory`` look like a data directory (`sate features` or `sate vocab` has written in it)?"""
    return os.path.isdir(directory / layout.FBANK_DIR) or os.path.isfile(directory / layout.VOCAB_META)


def _jsonl_files(directory: Path) -> list[Path]:
    """The .jsonl files in ``directory``. In a folder that may be entered but not listed (mode 0300), those of the
    splits `sate prep` names, which a stat still finds: `Path.glob` found nothing there, and `segment --out
    DATA/talk.jsonl` (or `analyze locality --out DATA`) wrote into a data directory of that mode, exit 0 (nineteenth
    hostile pass)."""
    try:
        return [directory / name for name in os.listdir(directory) if name.endswith(".jsonl")]
    except PermissionError:
        return [path for split in (*layout.DEFAULT_SPLITS, *layout.OPTIONAL_SPLITS)
                if os.path.exists(path := directory / f"{split}.jsonl")]
    except OSError:  # no such folder, or no folder
        return []


def _holds_data_files(directory: Path) -> bool:
    """Does ``directory`` hold a file `sate features` or `vocab` writes there (its statistics, vocabulary record or
    locks)?"""
    return any(os.path.isfile(directory / name) for name in (layout.VOCAB_META, layout.CMVN, layout.FEATURES_LOCK,
                                                         layout.VOCAB_LOCK))


def _holds_data(directory: Path) -> bool:
    """Does ``directory`` hold what `sate prep`, `features` or `vocab` write beside their stored folders? (A folder
    named fbank alone does not make a data directory.)"""
    return _holds_data_files(directory) or bool(_jsonl_files(directory))


def _corpus_folder(folder: Path) -> str | None:
    """What corpus ``folder`` holds the files of, as `sate prep` reads them, or None: a Kaldi data directory
    (wav.scp beside text), a MuST-C split's txt/ (SPLIT.yaml there) or wav/ beside it, a LibriSpeech chapter
    (READER-CHAPTER.trans.txt). `translate --out KALDI/text` replaced the transcripts with a translation, exit 0:
    text over text (twentieth hostile pass)."""
    if os.path.isfile(folder / "wav.scp") and os.path.isfile(folder / "text"):
        return "a Kaldi data directory (wav.scp and text)"
    split = folder.parent
    if folder.name in ("txt", "wav") and os.path.isfile(split / "txt" / f"{split.name}.yaml"):
        return f"a MuST-C split's {folder.name}/ folder"
    if os.path.isfile(folder / f"{folder.parent.name}-{folder.name}.trans.txt"):  # a name too long is none
        return "a LibriSpeech chapter"
    return None


def _protected(directory: Path) -> str | None:
    """Why nothing may be written in ``directory`` (or below it), or None."""
    corpus = _corpus_folder(directory)  # the folder itself only: a project's root may hold a Kaldi wav.scp and text
    if corpus is not None:
        return f"{directory} is {corpus}, which sate reads and never writes"
    for folder in (directory, *directory.parents):
        if checkpoint_folder(folder):
            # its experiment named: `sate train --exp EXP/checkpoints` was told that only `sate train` writes there
            # (twenty-first hostile pass)
            return (f"{folder} is a checkpoint folder, which only `sate train` writes (into the experiment that "
                    f"holds it, {folder.parent})")
        if os.path.isfile(folder / layout.PACK_YAML):
            return f"{folder} is a packed model, which only `sate pack` writes (as a whole)"
        if os.path.isfile(folder / layout.SYNTH_MARK):  # its split texts, yaml and wav (`translate --out
            # CORPUS/en-de/data/dev/txt/dev.de` replaced the references `sate prep` reads with a translation, exit 0:
            # text over text) and its records (synth.json, `.sate-synth`; nineteenth and twentieth hostile passes)
            return f"{folder} is a corpus `sate synth` voiced, which only `sate synth` writes"
        if hub_model_folder(folder):
            return (f"{folder} is a downloaded model directory (config.json beside its weights), which sate reads "
                    "and never writes")
        if folder.name in layout.STORED_DIRS and _holds_data(folder.parent):
            # the data directory named: `sate features --data DATA/fbank` was told that only sate writes there
            # (twenty-first hostile pass)
            return (f"{folder} holds a data directory's stored features or text, which only sate writes there (the "
                    f"data directory is {folder.parent})")
        if folder.name in LOG_FOLDERS and _an_experiment(folder.parent):  # not any config.yaml's folder
            # `translate --out EXP/logs/version_0/metrics.csv` replaced the training log `sate report --curves` and
            # a resume read with translation text, exit 0: text over text
            return f"{folder} holds an experiment's training logs, which only `sate train` writes"
    return None


def _managed(path: Path) -> str | None:
    """Which command's own file ``path`` is, when it is one of the files sate keeps in a data directory, an
    experiment or a pack (by name, `sate.layout`), or None. Text like any other, but `translate --out
    DATA/tokens_src.txt` would leave the data directory without its token list."""
    names = {layout.CMVN: "sate features", layout.VOCAB_META: "sate vocab", layout.CONFIG: "sate train",
             layout.TRAIN_TIME: "sate train", layout.TRAIN_LOCK: "sate train", layout.PACK_YAML: "sate pack",
             layout.FEATURES_LOCK: "sate features", layout.VOCAB_LOCK: "sate vocab",
             **{layout.token_list(side): "sate vocab" for side in ("src", "tgt")},
             **{layout.spm_model(side): "sate vocab" for side in ("src", "tgt")}}
    if path.name in names:
        return f"it is {names[path.name]}'s {path.name}"
    if path.name == layout.MARIAN_CTC_TOKENS and path.parent.name == layout.MARIAN_DIR and \
            _data_dir(path.parent.parent):  # translate --out DATA/marian/ctc_tokens.txt replaced it, exit 0
        return f"it is sate vocab's {layout.MARIAN_DIR}/{path.name}"
    if path.name == layout.RESULTS and evaluate_results(path):
        return "it holds the scores of a `sate evaluate` run, which only `sate evaluate` rewrites"
    if evaluate_output(path):
        # `translate --out EV/hyp.txt` replaced the hypotheses that EV/results.json scored (and that `sate report`
        # bootstraps against the baseline's) with another text, exit 0
        return f"it is an output of the `sate evaluate` run in {path.parent}, which only `sate evaluate` rewrites"
    if path.suffix == ".jsonl" and (_data_dir(path.parent) or is_manifest(path)):
        return f"it is a manifest of the data directory {path.parent} (sate prep)"
    return None


def evaluate_results(path: Path) -> bool:
    """Is ``path`` the results.json of a `sate evaluate` run (a JSON object naming its mode and split)?"""
    return _json_object_with(path, ("mode", "split"), whole=True)


def evaluate_output(path: Path) -> bool:
    """Is ``path`` one of the files of a `sate evaluate` run (results.json, or hyp.txt and the like beside it)?"""
    return path.name in layout.EVALUATE_OUTPUTS and evaluate_results(path.parent / layout.RESULTS)


def is_manifest(path: Path) -> bool:
    """Does ``path`` begin with a manifest row (`sate prep`'s keys ``id`` and ``audio``)? A data directory that
    `sate prep` alone has written holds nothing else to tell it by: `segment --out DATA` replaced its train.jsonl
    with segment times."""
    return _json_object_with(path, ("id", "audio"), whole=False)


def first_json_object(path: Path, whole: bool = False) -> dict | None:
    """The first line of ``path`` (a manifest row, a line of JSON lines) or, with `whole`, the file (`sate evaluate`'s
    indented results.json) as a JSON object, else None. At most 1 MB is read: a longer text is none, and what is no
    regular file neither (a named pipe there was opened and waited on for ever: `sate evaluate --out EV` again with
    EV/results.json a FIFO; fifteenth hostile pass). A byte-order mark and blank lines before it hold no row, as
    `read_manifest` reads them: a manifest so edited was "no manifest of `sate prep`" to prep over it."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            if whole:
                text = f.read(1 << 20)
            else:
                text = f.readline(1 << 20).removeprefix(codecs.BOM_UTF8)
                while text and not text.strip() and f.tell() < 1 << 20:
                    text = f.readline((1 << 20) - f.tell())
        data = json.loads(text)
    except (OSError, ValueError, RecursionError):  # a line of brackets nested deeply is no manifest row either
        return None
    return data if isinstance(data, dict) else None


def _json_object_with(path: Path, keys: tuple[str, ...], whole: bool) -> bool:
    """Is `first_json_object` of ``path`` one holding ``keys``?"""
    data = first_json_object(path, whole)
    return data is not None and set(keys) <= data.keys()


def _data_files(directory: Path) -> list[str]:
    """The files and folders that make ``directory`` a data directory (`sate features` or `sate vocab` wrote them)."""
    return [name for name in (layout.VOCAB_META, layout.FBANK_DIR, layout.CMVN, layout.FEATURES_LOCK,
                              layout.VOCAB_LOCK, *(layout.token_list(side) for side in ("src", "tgt")))
            if os.path.exists(directory / name)]


def _a_data_directory(directory: Path) -> bool:
    """Is ``directory`` a data directory: `sate features` or `sate vocab` has written in it, or `sate prep` alone (a
    manifest among its .jsonl files)? A folder of other .jsonl files (`segment --out DIR/`'s) is none."""
    return bool(_data_files(directory)) or any(is_manifest(p) for p in _jsonl_files(directory))


def _not_corpus_root(directory: Path) -> str | None:
    """Why ``directory`` may not receive a voiced corpus (`sate synth --out`): it is a data directory (manifests
    included: `sate prep` wrote them), an experiment or a `sate evaluate` run, which OUT/en-de/ would be mixed into
    (a --stream run was named a data directory for its delays.jsonl: twentieth hostile pass). Else None."""
    if evaluate_results(directory / layout.RESULTS):
        return f"it is a `sate evaluate` run (it holds its {layout.RESULTS})"
    data = _data_files(directory) or sorted(p.name for p in _jsonl_files(directory))
    if data:
        return f"it is a data directory (it holds {data[0]})"
    exp = [name for name in (layout.CONFIG, layout.CHECKPOINTS, layout.TRAIN_LOCK) if os.path.exists(directory / name)]
    if exp:
        return f"it is an experiment (it holds {exp[0]})"
    return None


def _trained_here(directory: Path) -> str | None:
    """The first file or folder that only `sate train` writes in ``directory`` (an experiment's), or None."""
    return next((name for name in (layout.CHECKPOINTS, layout.TRAIN_LOCK, layout.TRAIN_TIME)
                 if os.path.exists(directory / name)), None)


def experiment_holding(path: Path, levels: int = 3) -> Path | None:
    """The experiment ``path`` is or lies in, looking at most ``levels`` folders up (EXP, EXP/pack, EXP/pack/model.pt),
    links resolved; None outside any. An experiment is what a run leaves: its config snapshot beside its checkpoint
    folder. A `checkpoints/` alone is no sign: a project's root or `/` holding one made every output below it
    "in an experiment"."""
    real = Path(os.path.realpath(path))
    return next((folder for folder in (real, *real.parents)[:levels]
                 if os.path.isfile(folder / layout.CONFIG) and os.path.isdir(folder / layout.CHECKPOINTS)), None)


def trained_task(folder: Path) -> str | None:
    """The task (asr, mt or st) of the training run whose config snapshot lies in ``folder`` (EXP/config.yaml), else
    None. The config alone tells: checkpoints/ is deleted after averaging and packing to save disk, and a check that
    looked for it too let a cascade into such an ST experiment (review31r)."""
    path = folder / layout.CONFIG
    if not os.path.isfile(path):
        return None
    try:
        task = read_yaml(path).get("task")
    except (SateError, OSError, AttributeError):  # not a mapping: no task to judge by
        return None
    return task if isinstance(task, str) and task in ("asr", "mt", "st") else None


def unused_folder(parent: Path, stem: str) -> Path:
    """PARENT/STEM-own (or -own-2, -own-3 ...), the first that does not exist: a folder of its own for results that
    were advised into the recipes' exp/cascade or another experiment's folder, where they replaced its results or
    nested inside them (review31r)."""
    number = 1
    while os.path.lexists(folder := parent / (f"{stem}-own" + (f"-{number}" if number > 1 else ""))):
        number += 1
    return folder


def check_same_experiment(out: Path, sources: Iterable[Path], what: str, option: str = "--out") -> None:
    """Refuse an output of a model (an average, a pack, an evaluation) that lies in an experiment none of its
    ``sources`` lies in: `sate average --exp exp/st --out exp/asr/model.pt` (an --out copied from the ASR line)
    replaced the ASR model with the ST average, exit 0, and `--init-from asr=exp/asr/model.pt`, `sate pack` and
    `sate report` took it for the ASR experiment's own; likewise a pack or an evaluation of exp/st written in
    exp/asr (twenty-second hostile pass). A source outside any experiment (a model averaged elsewhere, a Whisper
    folder) says nothing of where it belongs: it is let through. Both places of the output count: the experiment
    it is named in (what `sate report`, `--init-from` and the cascade read it as) and the one it leads into (the
    file replaced): EXP/model.pt or EXP/pack left as a link into another experiment was written through, replacing
    that one's, and judging only where it leads let `--out exp/asr/model.pt` through where that is a link to a
    file on another disk (27th hostile pass)."""
    # a source's experiment: where it leads, else where it is named (exp/st/model.pt a link into a shared models/
    # folder is exp/st's model: judged by the link's target alone, it was let through; review27z)
    homes = [experiment_holding(source) or experiment_holding(Path(os.path.abspath(source)).parent)
             for source in sources]
    if None in homes:
        return
    real = Path(os.path.realpath(out))
    named = experiment_holding(out.parent, levels=1)  # an output directly in an experiment: EXP/model.pt, EXP/pack
    target = next((place for place in (named, experiment_holding(real.parent, levels=1))
                   if place is not None and place not in homes), None)
    if target is None:
        return
    link = os.path.islink(out)
    through = target != named  # only the link leads there: removing it is the way out
    raise SateError(f"{option} {out}{f' (a link to {real})' if link else ''}: it lies in the experiment {target}, and "
                    f"{what} is of the experiment {homes[0]}: it would be taken for {target.name}'s own; "
                    f"{'remove the link, or ' if through else ''}write it in {homes[0]} or outside any experiment")


def _an_experiment(directory: Path) -> str | None:
    """Why ``directory`` may not become a data directory (`prep --out`, `features --data`, `vocab --data`): it is an
    experiment (what only `sate train` writes is there), which could then no longer be trained into. Else None."""
    trained = _trained_here(directory)
    if trained:
        return f"it is an experiment (it holds {trained})"
    # an evaluate run's folder: `prep --out EV` wrote its manifests beside the run's files, exit 0; the run's
    # delays.jsonl was then read as a split ("manifest row misses key(s)"), and the run could no longer be made again
    # into its folder, now a data directory (nineteenth hostile pass)
    if evaluate_results(directory / layout.RESULTS):
        return f"it is a `sate evaluate` run (it holds its {layout.RESULTS})"
    return None


def _not_experiment(directory: Path) -> str | None:
    """Why ``directory`` may not receive an experiment (`sate train --exp`), or None."""
    data = _data_files(directory)
    if data:
        return f"it is a data directory (it holds {data[0]}); train into another directory"
    if os.path.isfile(directory / layout.CONFIG) or os.path.isdir(directory / layout.CHECKPOINTS):
        return None  # an experiment: a resume, or more training
    other = sorted(p.name for p in directory.iterdir()
                   if not (p.name.startswith(".") or p.suffix == ".log" or p.name in RUN_FILES))
    if other:
        return (f"it holds {first_few(other, 1)} but no experiment "
                f"({layout.CONFIG}, {layout.CHECKPOINTS}/); train into a new or empty directory")
    return None


def _model_file(path: Path) -> bool:
    """Is ``path`` a sate model file (what `sate average` writes)? Read mapped, so its tensors are not loaded."""
    import torch  # heavy: torch, only when a model file would be replaced

    try:
        data = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # noqa: BLE001 - anything torch cannot read as weights is not our model file
        return False
    return isinstance(data, dict) and data.get("format") == layout.MODEL_FORMAT


def _existing(path: Path, kind: Kind, option: str, named: str, hint: str = "") -> None:
    """Refuse replacing an existing ``path`` (links resolved) that is not of the command's kind of output, naming it
    as ``named`` (what the user typed, and where it leads)."""
    refuse = f"{option} {named}: refusing to replace it"
    if kind in ("pack", "directory", "data", "experiment", "corpus"):
        if not path.is_dir():
            raise SateError(f"{option} {named}: not a directory")
        if kind == "pack" and not (path / layout.PACK_YAML).is_file() and any(path.iterdir()):
            raise SateError(f"{refuse}: it is not a packed model ({layout.PACK_YAML} is missing)")
        why = _not_experiment(path) if kind == "experiment" else None
        if why is not None:
            raise SateError(f"{option} {named}: refusing to train into it: {why}")
        why = _an_experiment(path) if kind == "data" else None
        if why is not None:
            raise SateError(f"{option} {named}: refusing to write a data directory into it: {why}; give a new or other "
                            "directory")
        if kind == "directory" and _a_data_directory(path):  # `analyze locality --out DATA` wrote its tables there
            raise SateError(f"{option} {named}: refusing to write into it: it is a data directory, which only `sate "
                            "prep`, `features` and `vocab` write; give a new or other directory")
        why = _not_corpus_root(path) if kind == "corpus" else None
        if why is not None:
            raise SateError(f"{option} {named}: refusing to write a corpus into it: {why}; give a new or other "
                            "directory")
        return
    if path.is_dir():
        raise SateError(f"{option} {named}: is a directory (give a file name{hint})")
    if not path.is_file():
        raise SateError(f"{refuse}: not a regular file")
    if kind in ("text", "results"):
        what = binary_kind(path)
        if what is not None:
            raise SateError(f"{refuse}: it holds {what}, not text")
        whose = _managed(path)
        if whose is not None and not (kind == "results" and evaluate_output(path)):
            raise SateError(f"{refuse}: {whose}")
    elif kind == "model" and not _model_file(path):
        raise SateError(f"{refuse}: it is not a sate model file")
    elif kind == "image" and binary_kind(path) != MAGIC[b"\x89PNG"]:
        raise SateError(f"{refuse}: it is not a PNG image")


def same_file(a: Path, b: Path) -> bool:
    """Do two paths name one file (another spelling, `sub/../x` through a missing `sub`, a symlink, a hard link)?"""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # either is missing, or a name the file system refuses (checked elsewhere)
        return False


def check_streams_once(files: list[Path]) -> None:
    """Refuse a stream (standard input, a named pipe) given twice among a command's inputs: the first read takes
    it all, and the second was "Format not recognised" or empty. A regular file may be given twice."""
    for k, path in enumerate(files):
        twin = next((f for f in files[:k] if same_file(f, path)), None) if is_stream(path) else None
        if twin is not None:
            also = "" if str(twin) == str(path) else f" (as {twin} too)"
            raise SateError(f"{path}: given twice{also}; a stream (standard input, a pipe) is read once: give it once")


def names_directory(text: str) -> bool:
    """Does ``text`` name a directory by its spelling alone: a trailing '/', or a last part '.' or '..'? `Path`
    drops both (``notes/.`` is ``notes``), and a file of the bare name was written, replacing one there, where the
    shell's ``> notes/.`` says "Not a directory"."""
    return text.endswith(("/", os.sep)) or os.path.basename(text) in (".", "..")


# What a file's name says it holds, by its last suffix in lower case. An output is written in the kind its name says,
# or refused before any work (`check_named_kind`), and a folder a command makes is not named like a file
# (`check_new_directory_name`, `dir_name`): `translate --out talk.vtt` wrote text lines, `average --out avg.json` a
# torch model, `report --out table.csv` markdown, `analyze locality --out loc.png` and `pack --out st.zip` made
# folders of those names, each exit 0 (twenty-second hostile pass; `segment --out segs.jsonl.gz`, the twenty-first).
TEXT_NAMES = (".txt", ".text", ".log", ".out")  # plain text: what any text output may be named
# audio files' names (libsndfile's and ffmpeg's formats): an output named so, and a first field that names one
# (`sate score` telling `sate translate`'s FILE<TAB>translation lines from sentences); .raw and .pcm left out: a
# headerless format no reader takes without its rate, and a name text may have
AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a", ".aif", ".aiff", ".au", ".w64", ".caf", ".sph",
                  ".rf64")
NAMED_KINDS: dict[str, str] = {
    **dict.fromkeys(TEXT_NAMES, "plain text"), **dict.fromkeys((".md", ".markdown"), "markdown"),
    ".srt": "SubRip subtitles", ".vtt": "WebVTT subtitles", **dict.fromkeys((".ass", ".ssa"), "ASS subtitles"),
    ".json": "one JSON document", **dict.fromkeys((".jsonl", ".ndjson"), "JSON lines"), ".csv": "a CSV table",
    ".tsv": "a TSV table", **dict.fromkeys((".yaml", ".yml"), "YAML"), ".xml": "XML", **dict.fromkeys((".html", ".htm"),
                                                                                                   "HTML"),
    **dict.fromkeys((".pt", ".pth"), "a model file"), ".ckpt": "a training checkpoint (sate reads it as one)",
    ".safetensors": "safetensors weights", ".onnx": "an ONNX model",
    **dict.fromkeys((".png", ".pdf", ".svg", ".jpg", ".jpeg", ".gif", ".eps"), "an image"),
    **dict.fromkeys(AUDIO_SUFFIXES, "audio"),
    **dict.fromkeys((".gz", ".bz2", ".xz", ".zst", ".tgz"), "a compressed file"),
    **dict.fromkeys((".zip", ".tar", ".7z"), "an archive"),
}
FILE_SUFFIXES = frozenset(NAMED_KINDS)  # names of files, not folders
COMPRESSED = frozenset(s for s, kind in NAMED_KINDS.items() if kind in ("a compressed file", "an archive"))


def _slip(text: str) -> str | None:
    """What a new name's last part ends in that no one types on purpose (a space, a tab, a dot: a quoting slip, or
    a name cut at a suffix's dot), or None. `translate --out 'talk.srt '` wrote text under a name ending in a
    space, and `pack --out 'pk.'` made the folder 'pk.', each exit 0 (twenty-second hostile pass)."""
    last = os.path.basename(text.rstrip("/" + os.sep))
    if last in ("", ".", "..") or os.path.lexists(text):  # there: written as named, as a folder named '~' is
        return None
    if last != last.rstrip():
        return "a space" if last.endswith(" ") else "white space"
    return "a dot" if last.endswith(".") else None


def _named_like_a_file(text: str) -> str | None:
    """Why ``text``, naming a directory a command makes that is not there yet, reads as a file's name (its suffix,
    or a slip at its end), or None; a trailing '/' names a directory of any name."""
    if names_directory(text) or os.path.lexists(text):
        return None
    slip = _slip(text)
    if slip is not None:
        return f"ends in {slip}"
    suffix = Path(text).suffix.lower()
    return f"ends like a file's ({Path(text).suffix})" if suffix in FILE_SUFFIXES else None


def _as_typed(text: str) -> tuple[str, str]:
    """A new directory's name and that name with a trailing '/', as a message shows them: quoted where it ends in a
    slip (`_slip`: a space at the end is invisible unquoted)."""
    quote = shlex.quote if _slip(text) is not None else str
    return one_line(quote(text)), one_line(quote(text + "/"))


def check_new_directory_name(text: str, what: str, instead: str, option: str = "--out") -> None:
    """``option`` ``text`` names a directory ``what`` makes, and none is there yet: a name that ends like a file's
    (`sate segment ... --out segs.json`, `translate --format srt a.wav b.wav --out subs.srt`, `pack --out st.zip`)
    is refused with ``instead``, what to give, or a trailing '/' for a directory of that name."""
    why = _named_like_a_file(text)
    if why is not None:
        shown, folder = _as_typed(text)
        raise SateError(f"{option} {shown}: {what}, and its name {why}: {instead}; for a directory of that name, end "
                        f"it with a slash: {folder}")


def check_named_kind(path: Path, writes: str, names: tuple[str, ...], option: str = "--out") -> None:
    """Refuse a file output whose name says a kind other than the one the command writes (``writes``; ``names``:
    the suffixes of that kind, the first given as advice), or whose name ends in a slip (`_slip`): the file was
    written under it, exit 0 (`translate --out talk.vtt` text lines, `average --out avg.json` a torch model,
    `report --out table.csv` markdown; twenty-second hostile pass). A symlink's target is asked too, since it is
    what gets written (`--out latest.txt` leading to notes.json). A suffix of no kind sate knows (none, a date,
    `.bin`) is written as named; a stream has no name to go by."""
    if is_stream(path):
        return
    slip = _slip(str(path))
    if slip is not None:
        raise SateError(f"{option} {one_line(shlex.quote(str(path)))}: the name ends in {slip} (a quoting slip?); "
                        "give it without")
    suffix = path.suffix.lower()
    if suffix in FILE_SUFFIXES and suffix not in names:
        bare = path.with_suffix("")
        if suffix in COMPRESSED:
            then = "compress" if NAMED_KINDS[suffix] == "a compressed file" else "archive"
            advice = (f"name it {one_line(str(bare))} and {then} it after" if bare.suffix.lower() in names else
                      f"name it {one_line(str(bare.with_suffix(names[0])))}, and {then} it after")
            raise SateError(f"{option} {one_line(str(path))}: a {suffix} name says {NAMED_KINDS[suffix]}, but "
                            f"{writes}, uncompressed: {advice}")
        raise SateError(f"{option} {one_line(str(path))}: a {suffix} name says {NAMED_KINDS[suffix]}, but {writes}: "
                        f"name it {one_line(str(path.with_suffix(names[0])))}")
    real = Path(os.path.realpath(path))
    suffix = real.suffix.lower()
    if suffix in FILE_SUFFIXES and suffix not in names:
        raise SateError(f"{option} {one_line(str(path))} (leading to {one_line(str(real))}): a {suffix} name says "
                        f"{NAMED_KINDS[suffix]}, but {writes}: write elsewhere, or remove the link")


# A name that begins with a URL's scheme: scheme:// (a drive letter, c:/, is no scheme of two letters), or one of
# the usual schemes followed by :/ as a `Path` collapses it; `take1:/a.wav` (a folder `take1:`) is a missing file
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://|(?:https?|ftps?|sftp|file|s3|gs|az|abfs|hdfs|hf|ssh):/", re.IGNORECASE)
PYTHON_DOWNLOAD = "urllib.request.urlretrieve(url, name), or curl -o NAME URL"  # the Python API's advice


def url_refusal(name: str, download: str | None = None, base: str | Path = "") -> str | None:
    """Why ``name``, a URL, is no file to read, with what to give instead; None where it is no URL, or where a file or
    folder of that name is there, or the folder its name begins with (a folder `https:`, `file:`: legal names on
    Linux, read as ever). ``download``: the advice for http, https and ftp (the Python API's `PYTHON_DOWNLOAD`); by
    default a shell's `curl -o`, its name the URL's own. The one check of every command and API that reads a user's
    audio: `sate segment https://host/a.wav` and the others said "https:/host/a.wav: no such file", the name not as
    given (a `Path` collapses its //) and no word that sate reads local files; only `SpeechTranslator` said so, with
    Python's advice to a shell user (thirty-first hostile pass's review, hand32u). ``base``: the folder a relative
    name is read from (a manifest's), where not the current one: the answer depended on where `sate` ran
    (review33l)."""
    if not URL.match(name) or os.path.lexists(os.path.join(base, name)) or \
            os.path.isdir(os.path.join(base, name.split("/", 1)[0])):
        return None  # a folder `take1:` there: `take1://x.wav` is a file in it, missing (hand33l)
    scheme = name.split(":", 1)[0].lower()
    if scheme == "file":
        parts = urllib.parse.urlparse(name)  # file://a.wav: a.wav is the URL's host, its path empty (review32u)
        path = urllib.request.url2pathname(parts.path if parts.netloc in ("", "localhost") else
                                           parts.netloc + parts.path)
        there = "" if os.path.lexists(path) else ", which is not there either"
        return one_line(f"{name}: a file:// URL, not a file's path: give its path ({path}{there})")
    if download is None:
        stem = urllib.parse.unquote(urllib.parse.urlparse(name).path.rstrip("/").rpartition("/")[2])
        stem = stem if stem not in ("", ".", "..") and not {"/", "\0"} & set(stem) else "NAME"
        download = f"curl -o {shell_word(stem)} {shell_word(name)}"
    how = f" ({download})" if scheme in ("http", "https", "ftp") and download else ""
    return one_line(f"{name}: a URL, not a file: sate reads local files; download it first{how} and give the file")


def url_read_name(text: str) -> str | None:
    """Why ``text``, an option's value naming a file or directory to read (`read_name`: `--model`, `--data`,
    `--mustc-root`), is a URL, or None: each said "https:/host/pack: no such directory", the name collapsed by a
    `Path` and no word that sate reads local files (hand32u's leftover; hand33l). A file:// URL is told its path."""
    said = url_refusal(text, download="")
    if said is None or said.startswith(f"{text}: a file:// URL"):
        return said
    return one_line(f"{text}: a URL, not a local path: sate reads local files and directories; download it first "
                    "and give its path")


def typed_path(text: str) -> Path:
    """``text``, a name as typed, as a path. `Path` drops a leading './', which changes what two names mean: `./~/t.txt`
    (a folder named '~' here, written so that no shell expands it) was refused by `check_not_tilde` as a '~' the
    shell left (twenty-second hostile pass), and `./-` (a file named '-') was read as standard input by `sate score`
    and `sate stream` (twenty-fourth). Such a name is made absolute, which keeps what was typed."""
    path = Path(text)
    if text != "-" and str(path) == "-" or not text.startswith("~") and path.parts and path.parts[0].startswith("~"):
        return Path.cwd() / path
    return path


def file_name(text: str) -> Path:
    """An option's value naming one file to write (argparse's ``type=``): a name ending in '/' (or in '/.') names a
    directory, as the shell's ``> out/`` says ("Is a directory"); `Path` drops the slash, and the file was written
    beside it under the bare name, replacing a file there. A bare '-' is refused: these outputs (a model, a PNG,
    markdown, JSON) do not go to standard output, and a file named '-' is rarely what `--out -` meant."""
    if text == "":  # Path('') is '.', named as a directory
        raise argparse.ArgumentTypeError("an empty name (an unset variable?); give the file's name")
    if names_directory(text):
        raise argparse.ArgumentTypeError(f"{text}: ends in '/', '.' or '..', which names a directory; this option "
                                          "writes one file: give the file's name")
    if text == "-":  # the shell's name for standard output; a file named '-' was written in the current directory
        raise argparse.ArgumentTypeError("'-' (standard output): this option writes a file; give its name (./- for a "
                                          "file named '-')")
    return typed_path(text)


def dir_name(text: str, new_named_as_file: bool = True) -> Path:
    """An option's value naming a directory to write into (argparse's ``type=``): an empty value, as an unset
    variable in ``--out "$OUT"`` gives, is refused; `Path` read it as the current directory, into which `prep`,
    `evaluate`, `segment`, `synth` and `analyze locality` wrote their files, exit 0. A bare '-' is refused as
    `file_name` refuses it, and one not there yet named like a file (``new_named_as_file``: `_named_like_a_file`)
    unless it ends in '/'."""
    if text == "":
        raise argparse.ArgumentTypeError("an empty name (an unset variable?); give a directory ('.' for the current "
                                          "one)")
    if text == "-":  # as `file_name`: `pack --out -`, `prep --out -` made a folder named '-' here, exit 0
        raise argparse.ArgumentTypeError("'-' (standard output): this option names a directory; give its name (./- "
                                          "for a directory named '-')")
    why = _named_like_a_file(text) if new_named_as_file else None
    if why is not None:  # `analyze locality --out loc.png`, `pack --out st.zip`, `evaluate --out results.json` made a
        # folder of that name, exit 0 (twenty-second hostile pass): the rule segment and translate had. Said so that
        # it holds for a directory that must be there too (`features --data`: "run `sate prep`" comes after)
        shown, folder = _as_typed(text)
        slip = " (a quoting slip?)" if _slip(text) is not None else ""
        raise argparse.ArgumentTypeError(f"{shown}: a directory goes here, and none is there by this name, which "
                                          f"{why}{slip}; give a directory's name, or end it with a slash for a "
                                          f"directory of that name: {folder}")
    return typed_path(text)


def read_name(text: str) -> Path:
    """An option's value naming a file or directory to read (argparse's ``type=``): an empty value, as an unset
    variable in ``--model "$PACK"`` gives, is refused. `Path('')` is the current directory: `average --exp ""` run
    in an experiment averaged it, `evaluate --model ""` in a pack evaluated it, and the others named a '.' nobody
    typed (".: is a directory", "spm_src.model: ... is missing (run `sate vocab`)")."""
    if text == "":
        raise argparse.ArgumentTypeError("an empty name (an unset variable?); give its name ('.' for the current "
                                          "directory)")
    url = url_read_name(text)
    if url is not None:
        raise argparse.ArgumentTypeError(url)
    return typed_path(text)


def check_not_input(path: Path, inputs: Iterable[Path], option: str = "--out") -> None:
    """Refuse an output that is one of the files the command reads: it would be replaced by what was made of it."""
    clash = next((f for f in inputs if same_file(f, path)), None)
    if clash is not None:
        raise SateError(f"{option} {path}: is also an input ({clash}): refusing to overwrite it")


def check_not_reading(path: Path, option: str = "--out") -> None:
    """Refuse an output naming standard input (``/dev/stdin``, ``/dev/fd/0``) or a descriptor of this process open
    for reading only (``/dev/fd/3`` under ``3< notes.txt``): ``--out /dev/stdin < notes.txt`` replaced notes.txt,
    which the shell gave the command to read, with the translation, exit 0. A terminal is written as ever."""
    fd = own_descriptor(path)
    if fd is None or os.isatty(fd):
        return
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        target = f"descriptor {fd}"
    reading = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    if fd == 0:
        raise SateError(f"{option} {path}: names standard input ({one_line(target)}), which is for reading: refusing "
                        "to write into it; give the output's own name")
    if reading:
        raise SateError(f"{option} {path}: names descriptor {fd}, open for reading only ({one_line(target)}): "
                        "refusing to write into it; give the output's own name")


def check_not_tilde(path: Path, option: str = "--out") -> None:
    """Refuse an output whose first part is a '~' that is not there: the shell expands it only at a word's start
    (not in quotes, nor after `--out=`), and every command made a folder named '~' in the current directory and
    wrote into it, exit 0 (twenty-first hostile pass: `--out=~/talk.txt`, `EXP="~/exp"`). A folder named '~' that
    is there is written into, as named."""
    first = Path(path).parts[0] if Path(path).parts else ""
    if first.startswith("~") and not os.path.lexists(first):
        raise SateError(f"{option} {path}: a '~' here is not your home folder (the shell expands it only at the start "
                        f"of a word, not in quotes or after '='), and no folder {first} is in {Path.cwd()}: write the "
                        "path out")


def check_output(path: Path, kind: Kind, option: str = "--out", hint: str = "") -> Path:
    """The path to write for ``path`` (symlinks resolved), or a one-line `SateError` saying why not (module doc).
    ``hint``: what the command says after "give a file name" where a directory stands there (its own way of writing
    into one; `report --out DIR` was told translate's and segment's, twenty-seventh pass)."""
    check_not_reading(path, option)
    check_not_tilde(path, option)
    if is_stream(path) and kind == "text":
        return Path(path)
    _not_a_descriptor(path, kind, option)
    real = Path(os.path.realpath(path))  # resolves every link, also one whose target is missing
    if real.name == "":
        raise SateError(f"{option} {path}: is the root directory")
    kernel = kernel_file_system(real)
    if kernel is not None:  # written only after the work, and refused by the kernel then (nineteenth hostile pass)
        raise SateError(f"{option} {path}: refusing to write there: {kernel[0]} is the kernel's own file system "
                        f"({kernel[1]}), where no file of a command's can be made; write elsewhere")
    if real.name == layout.REPLACING:  # `report --out EXP/.sate-replacing` wrote its table, then removed it as the
        # journal of its set, exit 0; `translate --out DATA/.sate-replacing` replaced the journal of a killed `prep`
        raise SateError(f"{option} {path}: {layout.REPLACING} is the name of sate's journal of files replaced "
                        "together; give the output another name")
    if len(os.fsencode(real.name)) > name_max(real.parent):
        raise SateError(f"{option} {path}: the name is longer than the file system allows "
                        f"({len(os.fsencode(real.name))} bytes, at most {name_max(real.parent)})")
    # the temporary sibling written first is up to 24 bytes longer (files.temp_prefix): a path past PATH_MAX was
    # refused by the system only then, after the work (`translate` translated everything; eighteenth hostile pass)
    longest = len(os.fsencode(str(real.parent))) + 1 + min(len(os.fsencode(real.name)) + 255 - TEMP_NAME_ROOM, 255)
    if longest >= PATH_MAX:
        raise SateError(f"{option} {path}: the path is longer than the system resolves ({longest:,} bytes with the "
                        f"temporary name written first, at most {PATH_MAX - 1:,}); choose a shorter one")
    # what realpath leaves unresolved: a loop (a link to itself, or to one that links back), the path's own or a
    # folder's on the way to it: `fetch-whisper --cache LOOP` (the cache's whisper-tiny.en inside it) passed, and
    # failed after the download as "File exists" (sixteenth hostile pass)
    looped = next((p for p in (real, *real.parents) if p.is_symlink()), None)
    if looped is not None:
        raise SateError(f"{option} {path}: a symlink loop ({looped} leads back to itself)")
    # a directory is checked itself, a file (or a pack, which replaces itself) by its parent
    fills = kind in ("directory", "data", "experiment", "corpus")
    typed = Path(os.path.abspath(path))  # links unresolved: a Hugging Face cache's files are links into blobs/
    place = _protected(real if fills else real.parent) or _protected(typed if fills else typed.parent)
    if place is not None:
        raise SateError(f"{option} {path}: {place}")
    # named as typed, and where it leads: a refusal naming the link's target alone left the user to find the link
    named = str(path) if real == typed else f"{path} (leading to {real})"
    if kind == "results" and real.parent != Path(os.path.realpath(Path(path).parent)) and evaluate_output(real):
        # EV/results.json linked to another run's: that run's scores (and its hyp.txt) were replaced, exit 0
        raise SateError(f"{option} {named}: refusing to replace it: it is a file of another `sate evaluate` run "
                        f"({real.parent}), which only a run into that folder rewrites; remove the link")
    if real.exists():
        _existing(real, kind, option, named, hint)
    if real.suffix == ".jsonl" and _a_data_directory(real.parent):
        # `segment --out DATA/` wrote DATA/talk.jsonl and `evaluate --stream --out DATA` DATA/delays.jsonl, exit 0:
        # every later `sate features --data DATA` stopped at that "split" (seventeenth hostile pass); so did a
        # model, a pack or a folder of any kind given that name (`average --out DATA/x.jsonl`)
        raise SateError(f"{option} {named}: a .jsonl in the data directory {real.parent} is read as the manifest of "
                        f"a split ({real.stem}) by the commands that read it; write it elsewhere")
    if kind == "image" and Path(path).suffix.lower() != ".png":  # `--curves plot.pdf` wrote a PNG under it, exit 0
        raise SateError(f"{option} {path}: the image is written as PNG; name it *.png")
    if real.is_file() and not os.access(real, os.W_OK):
        raise SateError(f"{option} {path}: refusing to replace it: it is read-only (no write permission, or a "
                        "read-only file system)")
    renamed_onto = real.is_file() or kind == "pack" and real.is_dir()  # what the new output is renamed onto
    if renamed_onto and mount_point(real):  # the rename onto it failed after the work, "Device or resource busy"
        # (nineteenth hostile pass)
        raise SateError(f"{option} {path}: refusing to replace it: it is a mount point (a file system or a bind "
                        "mount is mounted there), which nothing can be renamed onto; write elsewhere, or unmount it")
    if renamed_onto and sticky_forbids(real):  # the rename onto it failed
        # after the work (nineteenth hostile pass)
        raise SateError(f"{option} {path}: refusing to replace it: it is another user's file in a folder with the "
                        f"sticky bit ({real.parent}, as /tmp), which only its owner may replace; write elsewhere")
    if renamed_onto and append_only(real):  # the rename onto it failed after the work (nineteenth hostile pass); a
        # pack's folder too, which is renamed aside (twentieth)
        raise SateError(f"{option} {path}: refusing to replace it: it is append-only (chattr +a), which no "
                        "command may replace; write elsewhere, or lift it (chattr -a)")
    # a pack is replaced whole, its folder renamed aside and removed: one made read-only (chmod -R a-w) was replaced
    # all the same, exit 0, and left beside the new one as .NAME.old, which could not be emptied (eighteenth pass)
    stuck = next((Path(root) for root, _, _ in os.walk(real) if not os.access(root, os.W_OK | os.X_OK)),
                 None) if kind == "pack" and real.is_dir() else None
    if stuck is not None:
        raise SateError(f"{option} {path}: refusing to replace it: {'it' if stuck == real else stuck} is read-only "
                        "(no write permission, or a read-only file system)")
    # a file in it append-only or immutable could not be removed with the old pack: `sate pack` said it packed, exit 0,
    # and left .NAME.old beside the new pack for good (twentieth hostile pass)
    entries = [Path(root) / name for root, dirs, files in os.walk(real) for name in (*dirs, *files)] \
        if kind == "pack" and real.is_dir() else []
    fixed = next(((entry, how) for entry in entries  # a link is removed, not what it leads to; nor is a pipe opened
                  if not entry.is_symlink() and (entry.is_file() or entry.is_dir())
                  and (how := fixed_in_place(entry) or _sticky(entry)) is not None), None)
    if fixed is not None:
        advice = "lift that, or write elsewhere" if "chattr" in fixed[1] else "write elsewhere"
        raise SateError(f"{option} {path}: refusing to replace it: {fixed[0]} is {fixed[1]}, which could not be "
                        f"removed with the old pack; {advice}")
    mounted = mounts_inside(real) if kind == "pack" and real.is_dir() else []
    if mounted:  # as bind-mounted there, the same (twentieth hostile pass)
        raise SateError(f"{option} {path}: refusing to replace it: {mounted[0]} is a mount point (a file system or a "
                        "bind mount is mounted there), which could not be removed with the old pack; unmount it, or "
                        "write elsewhere")
    # a directory the command fills must itself be writable, a file's (or a pack's) parent
    inside = (real,) if kind in ("directory", "data", "experiment", "corpus") else ()
    existing = next(p for p in (*inside, real.parent, *real.parent.parents) if p.exists())
    if not existing.is_dir():
        raise SateError(f"{option} {path}: cannot write ({existing} is not a directory)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise SateError(f"{option} {path}: cannot write in {existing} (no permission or a read-only file system)")
    if append_only(existing):  # a file is renamed into place there, which such a folder refuses: the rename failed
        # after the work, and its temporary file could not be removed (nineteenth hostile pass)
        raise SateError(f"{option} {path}: cannot write in {existing}: it is append-only (chattr +a), where no file "
                        "can be renamed into place; write elsewhere, or lift it (chattr -a)")
    return real


def _not_a_descriptor(path: Path, kind: Kind, option: str) -> None:
    """Refuse an output other than text that is, or lies under, one of this process's descriptors (`/dev/stdout`,
    `/dev/fd/N`): on a pipe it resolves to /proc/self/fd/pipe:[N], and was "refusing to write there: /proc is the
    kernel's own file system", a place nobody typed (twenty-seventh hostile pass). A named pipe or a device file
    (a FIFO, /dev/null, or a link to one, in an output folder as evaluate's EV/hyp.txt) is no descriptor: it is
    refused as ever, "not a directory" or "refusing to replace it: not a regular file" (review of that pass)."""
    above = next((p for p in Path(path).parents if own_descriptor(p) is not None), None)
    if above is not None:  # `prep --out /dev/stdout/data`
        raise SateError(f"{option} {path}: cannot write ({above} is not a directory: it is "
                        f"{_descriptor_said(above)})")
    if own_descriptor(path) is None:
        return
    if kind in ("directory", "data", "experiment", "corpus", "pack"):
        raise SateError(f"{option} {path}: not a directory (it is {_descriptor_said(path)})")
    folder = Path(os.path.realpath(Path(path).parent))
    if folder != Path("/dev") and kernel_file_system(folder) is None:  # a link of the user's leading to one
        raise SateError(f"{option} {path} (leading to {_descriptor_said(path)}): refusing to replace it: not a "
                        "regular file")
    what = {"model": "a model file", "image": "a PNG"}.get(kind, "this file")
    raise SateError(f"{option} {path}: it is {_descriptor_said(path)}, where {what} is not written: give a file's "
                    "name")


def _descriptor_said(path: Path) -> str:
    """``path``'s descriptor of this process as a user knows it: "standard output", "descriptor 3"."""
    fd = own_descriptor(path)
    return STANDARD_NAMES.get(fd, f"descriptor {fd}") if fd is not None else str(path)


def _sticky(path: Path) -> str | None:
    """Why ``path`` may not be removed by this process for a folder's sticky bit, or None: another user's pack of mode
    1777 was replaced, its removal failed unseen, and `sate pack` left .PACK.old for good, exit 0 (twentieth
    hostile pass)."""
    return "another user's file in a folder with the sticky bit" if sticky_forbids(path) else None


def check_manifests(directory: Path, names: Iterable[str], option: str = "--out") -> None:
    """`sate prep` replaces its own manifests, not a file of the user's under a split's name: a ``train.jsonl`` of
    other JSON lines (a dataset of another tool) was replaced with a manifest, exit 0. An empty file holds nothing
    to lose."""
    for name in names:
        path = directory / name
        if path.is_file() and path.stat().st_size and not is_manifest(path):
            raise SateError(f"{option} {directory}: refusing to replace {path}: it is no manifest of `sate prep` (its "
                            "first line holds no id and audio); move it away or prepare into another directory")


def check_own_files(directory: Path, names: Iterable[str], option: str = "--data") -> None:
    """The files a command writes under fixed names in the directory it fills (`prep`'s manifests, `features`'
    cmvn.json and indexes, `vocab`'s models and token lists) are its own and are replaced; what stands in the place
    of one and is no file (a directory, a device) is refused before any work, where the rename at the end failed
    after it (`sate vocab` trained SentencePiece first, `sate prep` had written the splits before), naming a
    temporary file. One that is a symlink is written where it leads, which is checked as every output is: a link
    into a pack or a checkpoint folder (a data directory's cmvn.json or token list linked to a pack's) had the pack's
    file replaced; and, as for `check_not_shared`, a link into another data directory or experiment: a token list
    and SentencePiece model linked to another data directory's (a vocabulary shared by links) had that directory's
    vocabulary replaced, so its models no longer resumed or packed. A broken link or a loop is refused: written
    through, a broken link made the folders it named, wherever they were."""
    for name in names:
        path = directory / name
        real = Path(os.path.realpath(path))
        if real.exists() and not real.is_file():
            what = "a directory" if real.is_dir() else "not a regular file"
            raise SateError(f"{option} {directory}: {path} is {what}, where the command writes its file {name}")
        if real.is_file() and mount_point(real):  # a file bind-mounted there: its rename failed after the work
            raise SateError(f"{option} {directory}: {path} is a mount point (mount --bind), where the command renames "
                            f"its file {name} into place; unmount it, or write elsewhere")
        fixed = fixed_in_place(real) if real.is_file() else None
        if fixed is not None:  # the rename onto it failed after the work: `sate features` computed every split, `sate
            # vocab` trained both models and replaced one before the token list, `sate prep` left its journal and a
            # half-replaced set, `sate train` trained an epoch it could not save as last.ckpt (twentieth hostile pass)
            how = fixed.split(" (")[0]
            raise SateError(f"{option} {directory}: {path} is {fixed}, where the command renames its file {name} into "
                            f"place; lift that (chattr -{'a' if how == 'append-only' else 'i'}), or write elsewhere")
        if real.is_file() and sticky_forbids(real):  # a colleague's file in a shared folder of mode 1777: the rename
            # onto it failed after the work (`sate features` computed every split), "a special or protected file
            # system" (twentieth hostile pass)
            raise SateError(f"{option} {directory}: {path} is another user's file in a folder with the sticky bit "
                            f"({real.parent}), where the command renames its file {name} into place, which only its "
                            "owner may replace; ask them to remove it, or write elsewhere")
        if real.parent.is_dir() and append_only(real.parent):  # its rename failed after the work, and the folder kept
            # the temporary file (nineteenth hostile pass: DATA/marian for `vocab --marian`, EXP/checkpoints)
            raise SateError(f"{option} {directory}: {real.parent} is append-only (chattr +a), where the command "
                            f"renames its file {name} into place; lift that (chattr -a), or write elsewhere")
        # a link on the way counts as the file's own: DATA/marian linked to a pack's marian/ (sate vocab --marian)
        linked = os.path.islink(path) or real != Path(os.path.abspath(path))
        place = _protected(real.parent) if linked else None
        # the directory holding it as `directory` holds `name` (DATA/marian linked to / holds no such directory)
        home = real.parents[min(len(Path(name).parts), len(real.parents)) - 1]
        if linked and place is None and home != Path(os.path.realpath(directory)) and (owner := _owner(home)):
            place = f"{home} is another {owner}, whose file this run would replace; remove the link"
        if place is None and linked and real.is_file() and (what := _other_kind(real, name)) is not None:
            place = f"it is no {Path(name).name} (it holds {what}), and would be replaced; remove the link"
        if place is None and _ours(real, name) is None and linked_out(path) is not None:
            # a name not told by its content (an evaluate run's hyp.txt, locality.csv) linked to a user's notes,
            # outside the folder (eighteenth hostile pass) or in it (nineteenth): the notes were replaced, exit 0
            place = f"{_where(real, path.parent)}, which this run would replace; remove the link"
        if place is not None:
            how = "is a symlink to" if os.path.islink(path) else "leads through a symlink to"
            raise SateError(f"{option} {directory}: {path} {how} {real}, where the command would write its "
                            f"file {name}: {place}")
        if os.path.islink(path) and not os.path.exists(path):  # written through, it made folders where it led
            raise SateError(f"{option} {directory}: {path} is {what_is_there(path)}, where the command writes its "
                            f"file {name}: remove it")


def linked_out(path: Path) -> Path | None:
    """Where ``path`` leads when it is a symlink to another file with something in it, in its folder or out of it,
    or None. A link to another name in the same folder counts too: `translate --format srt --out DIR/` with
    DIR/talk.srt linked to DIR/notes.txt replaced the notes with subtitles, exit 0 (nineteenth hostile pass)."""
    if not os.path.islink(path):
        return None
    real = Path(os.path.realpath(path))
    if real.is_file() and real.stat().st_size:
        return real
    return None


def _where(real: Path, folder: Path) -> str:
    """Where a link at a command's own file in ``folder`` leads, for its refusal: another file there, or outside."""
    inside = real.parent == Path(os.path.realpath(folder))
    return f"another file in {folder}" if inside else f"a file outside {folder}"


def check_not_linked_out(paths: Iterable[Path], option: str = "--out") -> None:
    """Refuse a file a command names itself in the folder it is given (one per input: `translate --format srt --out
    DIR`'s DIR/talk.srt, `segment --out DIR/`'s DIR/talk.jsonl) that is a symlink to another file with something in
    it: the user's notes it led to, out of that folder (eighteenth hostile pass) or in it (nineteenth), were
    replaced with subtitles or segments, exit 0. Two names of the set linked to each other are `check_distinct`'s,
    called first, which names both. What is no file there (a named pipe, a device, a loop, a broken link out of the
    folder) is refused as `check_own_files` refuses it: a named pipe at DIR/talk.srt hung the run once it was done,
    waiting for a reader, and a broken link was written through, making the folders it named (nineteenth hostile
    pass)."""
    for path in paths:
        what = what_is_there(path)
        if what is not None and what.startswith("a broken symlink") and \
                Path(os.path.realpath(path)).parent == Path(os.path.realpath(path.parent)):
            what = None  # to a name beside it: the file is made there, as a link to nothing there holds nothing
        if what is not None and what != "a directory":  # a directory there: check_output's "a file over a directory"
            raise SateError(f"{option} {path.parent}: {path} is {what}, where the command writes its file "
                            f"{path.name}: remove it")
        real = linked_out(path)
        if real is not None:
            raise SateError(f"{option} {path.parent}: {path} is a symlink to {real}, where the command would write its "
                            f"file {path.name}: {_where(real, path.parent)}, which this run would replace; remove "
                            "the link")


def _other_kind(path: Path, name: str) -> str | None:
    """What ``path`` (where a link at a command's own file ``name`` leads) holds when it is no file of that kind
    (a manifest, cmvn.json, vocab.json, a token list, a SentencePiece model, train_time.json), or None; an empty
    file holds nothing, and the other names are not judged. A data directory's cmvn.json or token list linked by
    mistake to a file of the user's (notes.txt, on no data directory) had it replaced with CMVN statistics or
    tokens, exit 0."""
    if path.stat().st_size == 0:
        return None
    ours = _ours(path, name)
    return None if ours is not False else binary_kind(path) or "other text"


def _ours(path: Path, name: str) -> bool | None:
    """Does ``path`` hold what a command's own file ``name`` holds? None: a name not judged by its content."""
    base = Path(name).name
    if base == "delays.jsonl":  # `sate evaluate --stream`'s, not a manifest: an evaluation again into a run under a
        # linked folder (EXP linked to a scratch disk) was refused, "it is no delays.jsonl" (twentieth hostile pass)
        ours = _json_object_with(path, ("id", "delays"), whole=False)
    elif base.endswith(".jsonl"):
        ours = is_manifest(path)
    elif base == layout.CMVN:
        ours = _json_object_with(path, ("mean", "std"), whole=True)
    elif name == layout.VOCAB_META:
        ours = _json_object_with(path, ("inputs",), whole=True)
    elif name == layout.TRAIN_TIME:  # linked to a user's talk.wav, a resume wrote its time record into it
        ours = _json_object_with(path, ("seconds", "runs"), whole=True)
    elif base == layout.METRICS_LOG:  # Lightning's CSV log: a header that names the step
        ours = b"step" in _first_line(path, 4096).split(b",")
    elif base in (*(layout.token_list(side) for side in ("src", "tgt")), layout.MARIAN_CTC_TOKENS):
        ours = _first_line(path, 64).rstrip(b"\r\n") == b"<blank>"
    elif name in (*(layout.spm_model(side) for side in ("src", "tgt")), f"{layout.MARIAN_DIR}/source.spm",
                  f"{layout.MARIAN_DIR}/target.spm"):
        ours = _sentencepiece(path)
    else:
        return None
    return ours


def _first_line(path: Path, limit: int) -> bytes:
    """The first line of ``path``, at most ``limit`` bytes; none (b"") where it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.readline(limit)
    except OSError:
        return b""


def _sentencepiece(path: Path) -> bool:
    """Does ``path`` hold a SentencePiece model?"""
    import sentencepiece as spm  # slow: only where a link leads to a file a model would replace

    try:
        spm.SentencePieceProcessor(model_proto=path.read_bytes())
    except (RuntimeError, OSError):
        return False
    return True


def _owner(directory: Path) -> str | None:
    """Which kind of sate directory ``directory`` is (a pack, an evaluate run's folder, a data directory, an
    experiment), or None. A pack first: it holds a cmvn.json and token lists as a data directory does."""
    if (directory / layout.PACK_YAML).is_file():
        return "packed model"
    if evaluate_results(directory / layout.RESULTS):  # a --stream run's delays.jsonl made it "a data directory"
        return "`sate evaluate` run's folder"
    if _holds_data(directory) or _data_dir(directory):
        return "data directory"
    return "experiment" if _an_experiment(directory) or (directory / layout.CONFIG).is_file() else None


def _holds_manifests(directory: Path) -> bool:
    """`_holds_data`, where a .jsonl counts as a manifest only: its first row holds `id` and `audio`, or it is empty
    and named as a split `sate prep` writes (a split without rows). Any empty .jsonl counted: `sate segment` of a
    silent talk writes one, which made `/scratch` "another data directory" again (review of the twenty-seventh
    hostile pass)."""
    splits = {f"{split}.jsonl" for split in (*layout.DEFAULT_SPLITS, *layout.OPTIONAL_SPLITS)}
    return _holds_data_files(directory) or \
        any(_json_object_with(path, ("id", "audio"), False)
            or path.name in splits and os.path.isfile(path) and not os.path.getsize(path)
            for path in _jsonl_files(directory))


def _foreign_owner(directory: Path) -> str | None:
    """`_owner` of a folder a link leads into; one that holds stored folders alone (features moved to another disk:
    /disk/fbank linked as DATA/fbank) is no data directory: it was refused as "another data directory"; nor is one
    beside JSON lines that are no manifests (`/scratch/feats` linked, `/scratch` holding `sate segment`'s lines or
    notes: twenty-seventh hostile pass)."""
    owner = _owner(directory)
    return None if owner == "data directory" and not _holds_manifests(directory) else owner


def check_not_shared(directory: Path, name: str, option: str = "--data") -> None:
    """Refuse a folder ``name`` of ``directory`` (a data directory's fbank/ or fbank/SPLIT/, an experiment's
    checkpoints/, logs/ or tensorboard/) that leads (by a symlink on the way) into another data directory,
    experiment or pack: `sate features` with DATA/fbank linked to another data directory's fbank/ (to share stored
    features) replaced that directory's feature indexes with its own splits'; `sate train --exp NEW` with
    NEW/checkpoints linked to another experiment's trained into its checkpoint folder (its last.ckpt replaced, its
    oldest epochs deleted), and with NEW/logs linked, a resume cut the other experiment's training logs. A link to a
    folder of no such directory (another disk) is the directory's own."""
    path = directory / name
    real, own = Path(os.path.realpath(path)), Path(os.path.realpath(directory))
    if not os.path.lexists(path) or real == own / name:
        return
    home = real.parent
    owner = _foreign_owner(home)
    if owner is None and home.name in layout.STORED_DIRS:  # a split folder (fbank/dev) of another data directory
        home = home.parent
        owner = _foreign_owner(home)
    if owner is not None and home != own:  # not a folder of its own linked within it (EXP/checkpoints -> EXP/ckpts)
        raise SateError(f"{option} {directory}: {path} is a symlink to {real}, the {name}/ of another {owner} "
                        f"({home}), whose files this run would replace; remove the link")


RUN_FOLDERS = (layout.CHECKPOINTS, *LOG_FOLDERS)  # what `sate train` (and Lightning) fill in its --exp


def check_run_folders(exp: Path) -> None:
    """The folders `sate train` fills in ``exp``: each a directory of this experiment's own, or not there yet (a
    file at EXP/logs was "File exists" after the config snapshot was written; one linked into another experiment
    was trained into, `check_not_shared`); and its train_time.json not a link into another experiment."""
    for name in RUN_FOLDERS:
        path = exp / name
        if os.path.lexists(path) and not path.is_dir():
            what = what_is_there(path) or "a file"
            raise SateError(f"--exp {exp}: {path} is {what}, where `sate train` keeps its {name}/ folder; move it "
                            "away or train into another --exp")
        check_not_shared(exp, name, "--exp")
        # checkpoints are renamed into place there, and a resume's logs rewritten: an append-only checkpoints/ (or
        # one without write permission) failed the first save after an epoch's training, naming a temporary file
        # that the folder then kept for good (nineteenth hostile pass)
        stuck = path.is_dir() and name == layout.CHECKPOINTS and append_only(path)  # logs/ gets new folders only
        if stuck or path.is_dir() and not os.access(path, os.W_OK | os.X_OK):
            how = "append-only (chattr +a)" if stuck else "not writable (no permission, or read-only)"
            raise SateError(f"--exp {exp}: {path} is {how}, where `sate train` writes its {name}/; lift that, or "
                            "train into another --exp")
        if name in LOG_FOLDERS and path.is_dir() and not os.access(path, os.R_OK):  # Lightning numbers its next
            # version by listing the folder: in a tensorboard/ of mode 0300 it found none, and a resume's events went
            # into the first run's version_0, exit 0 (twentieth hostile pass)
            raise SateError(f"--exp {exp}: {path} cannot be listed (no read permission), where Lightning numbers "
                            "this run's log folder by the ones there; lift that (chmod u+r), or train into another "
                            "--exp")
    for name in LOG_FOLDERS:
        _check_versions(exp, exp / name)
    # the epoch and best checkpoints a run removes as it keeps its last and best N: one append-only or immutable
    # failed its removal after the resumed epoch's training and save, "Operation not permitted ... a special or
    # protected file system", at every resume (twenty-first hostile pass)
    folder = exp / layout.CHECKPOINTS
    names = sorted(os.listdir(folder)) if folder.is_dir() and os.access(folder, os.R_OK) else []
    for name in (n for n in names if n.endswith(".ckpt") and n != layout.LAST_CHECKPOINT):
        fixed = fixed_in_place(folder / name) if (folder / name).is_file() else None
        if fixed is not None:
            how = fixed.split(" (")[0]
            raise SateError(f"--exp {exp}: {folder / name} is {fixed}, and `sate train` removes an old checkpoint as "
                            "it keeps its last and best N (trainer.keep_last, trainer.keep_best); lift that (chattr "
                            f"-{'a' if how == 'append-only' else 'i'}), or move it out of the checkpoint folder")
    # its record of training time, written where a link leads: another experiment's time and run count grew; and the
    # resume point: a folder or a link to /dev/null at last.ckpt was passed over as "older" and the next save went
    # into it (fourteenth hostile pass)
    # and the metric logs a resume rewrites: a link or a folder at one was refused only after Lightning's setup
    # lines, and a link to a user's recording as "a NUL byte: binary data", not as a link (fifteenth hostile pass)
    # and its config snapshot, replaced at each run: an append-only one failed after the setup (twentieth pass)
    logs = [str(p.relative_to(exp)) for p in metric_logs(exp)]
    check_own_files(exp, [layout.CONFIG, layout.TRAIN_TIME, f"{layout.CHECKPOINTS}/{layout.LAST_CHECKPOINT}", *logs],
                    "--exp")


def _check_versions(exp: Path, folder: Path) -> None:
    """Refuse what in a folder of Lightning's loggers (EXP/logs, EXP/tensorboard) stops them at the start of the fit,
    after the work began: a ``version_X`` they count as a version and cannot number (they take X where `str.isdigit`
    does, which '²' passes and `int()` refuses: a ValueError traceback inside Lightning), and anything but a folder
    at the name of the next version they make (a file or a broken link at logs/version_1: "File exists"; seventeenth
    hostile pass)."""
    try:
        names = os.listdir(folder)
    except OSError:  # not there yet, or not a folder: named where the folder is checked
        return
    versions = []
    for name in (n for n in names if (folder / n).is_dir()):  # as Lightning numbers them (`_get_next_version`)
        number = name.split("_")[1] if name.startswith("version_") else ""
        if number.isdigit():
            try:
                versions.append(int(number))
            except ValueError:
                raise SateError(f"--exp {exp}: {one_line(str(folder / name))}: Lightning reads it as a log version "
                                f"it cannot number ({shown(number)}); rename it (version_N, N in 0-9) or move it "
                                "away") from None
    following = folder / f"version_{max(versions) + 1 if versions else 0}"
    if os.path.lexists(following) and not following.is_dir():
        what = what_is_there(following) or "a file"
        raise SateError(f"--exp {exp}: {following} is {what}, where Lightning makes this run's log folder; move it "
                        "away")


def metric_logs(exp: Path) -> list[Path]:
    """The CSV logs of a `sate train` dir, one per run or resume (Lightning's ``logs/version_N/``, in N's order);
    a folder named otherwise (``version_old``) is not Lightning's and is left out."""
    folder = exp / "logs"
    try:
        names = os.listdir(folder)
    except PermissionError:  # `Path.glob` found nothing in a folder of mode 0300 without a word: `report --curves`
        raise  # said "holds no training logs to draw" (nineteenth hostile pass)
    except OSError:  # no such folder, or no folder: no logs, as glob found
        return []
    logs = [folder / name / layout.METRICS_LOG for name in names if name.startswith("version_")
            and is_digits(name[8:]) and (folder / name).is_dir() and (folder / name / layout.METRICS_LOG).exists()]
    return sorted(logs, key=lambda p: int(p.parent.name[8:]))
