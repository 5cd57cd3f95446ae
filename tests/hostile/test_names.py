"""Names with control and formatting characters in every message, generated (nineteenth hostile pass).

Every path a command takes or names holds each character of ``CHARS`` (a line break, a carriage return, a tab, a
terminal's colour sequence, DEL, U+0085, the line separator, the right-to-left override and the lone surrogate that
stands for a byte that is not UTF-8): the world (`build_world`) is made by sate's own commands under such names (a
copy of the fixture corpus, `sate prep` into a data dir, features, vocab, a training, average, pack, two evaluations),
so the names reach the manifests, the configs and the experiment as a user's would. ``CALLS`` says how each command
of `sate.cli.COMMANDS` is called on it, with its outputs under such names too; a command it does not know fails
`test_every_command_has_calls`. The generator (`cases`) gives each call as it is (what it prints when it works), its
``--help``, and each call with one of its paths made missing: each value that names something of the world, and
each file inside a folder it names (the folder copied, the file taken out), so that it refuses naming the path, and
each call given an option it does not know before a value so named.

The invariant (`judge`): nothing the command prints (stdout and stderr, its workers' too: the file descriptors are
captured) nor any text file it writes holds one of the characters as it is; each is escaped as `sate.errors.one_line`
escapes it (JSON files: as JSON's ``\\uXXXX``). No traceback, and a missing path is refused, named.

The committed run is every call that works (but ``WIDE_CALLS``, which train or voice) and a rotating sample of the
missing paths (`STRIDE`); `cases(wide=True)` gives them all.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from sate.cli import COMMANDS, main
from sate.errors import one_line

pytestmark = pytest.mark.slow

# label -> the character; a name holds each between two q's, so that `raw` finds it as it is and nothing else.
CHARS: dict[str, str] = {"newline": "\n", "return": "\r", "tab": "\t", "escape": "\x1b[31m", "delete": "\x7f",
                         "next-line": "\x85", "line-separator": "\u2028", "right-to-left": "\u202e",
                         "not-utf8": os.fsdecode(b"\xff")}
MARKS = {label: f"q{char}q" for label, char in CHARS.items()}
NAME = "".join(MARKS.values())  # every character in one name
# An experiment's name is UTF-8 (TensorBoard's log writer cannot open another: refused, tests/hostile/test_writes.py)
UTF8_NAME = "".join(mark for label, mark in MARKS.items() if label != "not-utf8")
TEXT_SUFFIXES = (".txt", ".md", ".srt", ".jsonl", ".json", ".csv", ".yaml", ".tsv", ".scp")


def raw(text: str) -> list[str]:
    """The characters that ``text`` holds as they are, by label."""
    return [label for label, mark in MARKS.items() if mark in text]


# ------------------------------------------------------------------------------------------------------ the world


@dataclass(frozen=True)
class World:
    root: Path
    corpus: Path  # a MuST-C layout corpus
    data: Path
    config: Path  # a tiny training config naming `data`
    systems: Path  # the folder of experiments `sate report` reads
    exp: Path
    pack: Path
    wav: Path
    utt: str  # an utterance id of the dev split
    mt_text: tuple[Path, Path] = (Path(), Path())  # parallel text for `sate vocab --mt-text`


def build_world(root: Path, corpus: Path) -> World:
    """The world, made by sate's commands: each step must work (names are no reason to refuse)."""
    from sate.models.tiny import tiny_config  # heavy: torch

    root.mkdir(parents=True)
    w = World(root, root / f"corpus{NAME}", root / f"data{NAME}", root / f"config{NAME}.yaml",
              root / f"systems{UTF8_NAME}", root / f"systems{UTF8_NAME}" / f"exp{UTF8_NAME}", root / f"pack{NAME}",
              root / f"talk{NAME}.wav", "")
    shutil.copytree(corpus, w.corpus)
    w.config.write_text(yaml.safe_dump({
        "task": "st", "seed": 0, "data": {"dir": str(w.data), "num_workers": 0},
        "batch": {"per_device": 100000, "global": 100000}, "specaug": {"enabled": False},
        "model": tiny_config("st", adaptor=None), "optim": {"lr": 1e-2, "warmup_steps": 2},
        "trainer": {"max_epochs": 1, "log_every_n_steps": 1, "keep_last": 3, "keep_best": 1, "valid_bleu_utts": 4}}))
    shutil.copyfile(sorted(w.corpus.rglob("*.wav"))[0], w.wav)
    mt_text = (root / f"extra{NAME}.en", root / f"extra{NAME}.de")
    for path, lines in zip(mt_text, (["a cup of tea", "the train leaves"], ["eine Tasse Tee", "der Zug fährt"]),
                           strict=True):
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for argv in (["prep", "--mustc-root", str(w.corpus), "--out", str(w.data)],
                 ["features", "--data", str(w.data), "--jobs", "1"],
                 ["vocab", "--data", str(w.data), "--src-size", "48", "--tgt-size", "64"],
                 ["train", "--config", str(w.config), "--exp", str(w.exp)],
                 ["average", "--exp", str(w.exp), "--last", "1"],
                 ["pack", "--model", str(w.exp / "model.pt"), "--data", str(w.data), "--out", str(w.pack),
                  "--decode", "min_len_ratio=0.3,max_len_ratio=0.6"],
                 ["evaluate", "--model", str(w.pack), "--data", str(w.data), "--split", "dev", "--beam", "1",
                  "--out", str(w.exp / "decode_dev")],
                 ["evaluate", "--model", str(w.pack), "--data", str(w.data), "--split", "dev", "--beam", "1",
                  "--stream", "wait-k=2", "--out", str(w.exp / "stream_dev")]):
        assert main(argv) == 0, argv
    utt = json.loads((w.data / "dev.jsonl").read_text(encoding="utf-8").splitlines()[0])["id"]
    return World(**{**w.__dict__, "utt": utt, "mt_text": mt_text})


# ------------------------------------------------------------------------------------------------------ the calls

# command -> its calls on the world: each (world, a folder for its outputs) -> argv. Outputs are named with NAME too.
Call = Callable[[World, Path], list[str]]
CALLS: dict[str, list[Call]] = {
    "synth": [lambda w, o: ["synth", "--out", str(o / f"corpus{NAME}"), "--train-size", "2", "--dev-size", "1",
                            "--test-size", "1", "--jobs", "1"]],
    "prep": [lambda w, o: ["prep", "--mustc-root", str(w.corpus), "--out", str(o / f"data{NAME}")]],
    "features": [lambda w, o: ["features", "--data", str(w.data), "--jobs", "1"]],
    "vocab": [lambda w, o: ["vocab", "--data", str(w.data), "--src-size", "48", "--tgt-size", "64"],
              lambda w, o: ["vocab", "--data", str(w.data), "--src-size", "48", "--tgt-size", "64",
                            "--mt-text", str(w.mt_text[0]), str(w.mt_text[1])]],
    "fetch-whisper": [lambda w, o: ["fetch-whisper", "--cache", str(o / f"cache{NAME}")]],
    "config": [lambda w, o: ["config", "--config", str(w.config)],
               lambda w, o: ["config", "--config", str(w.exp / "config.yaml"), "--get", "data"],
               lambda w, o: ["config", "--config", str(w.config), "--init-from", f"asr={w.exp / 'model.pt'}"]],
    "train": [lambda w, o: ["train", "--config", str(w.config), "--exp", str(o / f"exp{UTF8_NAME}")],
              lambda w, o: ["train", "--config", str(w.config), "--exp", str(o / f"exp{NAME}")],
              lambda w, o: ["train", "--config", str(w.exp / "config.yaml"), "--exp", str(w.exp)]],  # a resume
    "average": [lambda w, o: ["average", "--exp", str(w.exp), "--last", "1", "--out", str(o / f"avg{NAME}.pt")]],
    "pack": [lambda w, o: ["pack", "--model", str(w.exp / "model.pt"), "--data", str(w.data),
                           "--out", str(o / f"pack{NAME}")]],
    "segment": [lambda w, o: ["segment", "--vad", "energy", str(w.wav), str(w.wav)],
                lambda w, o: ["segment", "--vad", "energy", "--out", str(o / f"seg{NAME}.jsonl"), str(w.wav)],
                # a folder of one FILE_STEM.jsonl per input, named like a file: said with a slash (a new folder named
                # like a file is refused since the twentieth hostile pass, which left this call refused as a whole)
                lambda w, o: ["segment", "--vad", "energy", "--out", f"{o / f'seg{NAME}.srt'}/", str(w.wav)]],
    "translate": [lambda w, o: ["translate", "--model", str(w.pack), "--beam", "1", "--vad", "energy", str(w.wav),
                                str(w.wav)],
                  lambda w, o: ["translate", "--model", str(w.pack), "--beam", "1", "--vad", "energy",
                                "--format", "jsonl", "--transcript", str(w.wav), str(w.wav)],
                  lambda w, o: ["translate", "--model", str(w.pack), "--beam", "1", "--vad", "energy",
                                "--format", "srt", "--out", str(o / f"srt{NAME}"), str(w.wav), str(w.wav)],
                  lambda w, o: ["translate", "--model", str(w.pack), "--beam", "1", "--vad", "energy",
                                "--out", str(o / f"out{NAME}.txt"), str(w.wav)]],
    "stream": [lambda w, o: ["stream", "--model", str(w.pack), "--fast", "--vad", "energy", str(w.wav)],
               lambda w, o: ["stream", "--model", str(w.pack), "--fast", "--vad", "energy", "--format", "jsonl",
                             str(w.wav)]],
    "evaluate": [lambda w, o: ["evaluate", "--model", str(w.pack), "--data", str(w.data), "--split", "dev",
                               "--beam", "1", "--out", str(o / f"eval{NAME}")]],
    "score": [lambda w, o: ["score", "--hyp", str(w.exp / "decode_dev/hyp.txt"),
                            "--ref", str(w.exp / "decode_dev/ref.txt"), "--wer"]],
    "report": [lambda w, o: ["report", "--exp", str(w.systems), "--splits", "dev"],
               lambda w, o: ["report", "--exp", str(w.systems), "--splits", "dev", "--out",
                             str(o / f"results{NAME}.md"), "--curves", str(o / f"curves{NAME}.png")]],
    "latency-plot": [lambda w, o: ["latency-plot", str(w.exp / "decode_dev"), str(w.exp / "stream_dev"),
                                   "--out", str(o / f"plot{NAME}.png")]],
    "analyze": [lambda w, o: ["analyze", "locality", "--model", str(w.pack), "--data", str(w.data), "--split", "dev",
                              "--out", str(o / f"locality{NAME}")],
                lambda w, o: ["analyze", "attention", "--model", str(w.pack), str(w.wav),
                              "--out", str(o / f"heat{NAME}.png")],
                lambda w, o: ["analyze", "attention", "--model", str(w.pack), "--data", str(w.data), "--split",
                              "dev", "--utt", w.utt, "--out", str(o / f"heat{NAME}.png")]],
}
# (command, call) -> why the committed run leaves its working call to the wide run
WIDE_CALLS: dict[tuple[str, int], str] = {("synth", 0): "voices a corpus (seconds)",
                                          ("train", 0): "trains (ten seconds)", ("train", 2): "resumes a training"}
# command -> the folder of the world it rewrites, which each of its cases gets a copy of
REWRITES: dict[str, str] = {"features": "data", "vocab": "data", "train": "exp"}


# ------------------------------------------------------------------------------------------------------ the cases


@dataclass(frozen=True)
class Case:
    command: str
    call: int
    # "works", "help", "unknown" (an option it does not know, before a value so named), "missing N" (argument N made
    # missing) or "without N REL" (a file taken out)
    variant: str

    @property
    def id(self) -> str:
        return f"{self.command}[{self.call}] {self.variant}"


def _named(argv: list[str], w: World) -> list[int]:
    """The arguments that name something of the world (a path under its root that exists)."""
    return [k for k, value in enumerate(argv) if value.startswith(str(w.root)) and Path(value).exists()]


def _inside(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()) if path.is_dir() else []


STRIDE = 7  # the committed sample: missing-path case i of the whole list where i % STRIDE == the run's offset


WIDE = False  # the wider run sets it: every case


def cases(w: World, wide: bool | None = None) -> list[Case]:
    wide = WIDE if wide is None else wide
    found = []
    for command, calls in CALLS.items():
        found += [Case(command, 0, "help"), Case(command, 0, "unknown")]
        for n, call in enumerate(calls):
            if wide or (command, n) not in WIDE_CALLS:
                found.append(Case(command, n, "works"))
            argv = call(w, w.root / "out")
            for k in _named(argv, w):
                found.append(Case(command, n, f"missing {k}"))
                found += [Case(command, n, f"without {k} {rel}") for rel in _inside(Path(argv[k]))]
    if wide:
        return found
    kept = [c for c in found if c.variant in ("works", "help", "unknown")]
    others = [c for c in found if c not in kept]
    return kept + others[OFFSET % STRIDE::STRIDE]


OFFSET = 0  # a wider run may set it: the sample moves by one each time it is raised


# --------------------------------------------------------------------------------------------------- running one


def _copy(source: Path, to: Path) -> Path:
    """``source`` copied under the same name into ``to`` (hard links: sate replaces what it writes by a rename)."""
    copy = to / source.name
    if source.is_dir():
        shutil.copytree(source, copy, symlinks=True, copy_function=os.link)
    else:
        os.link(source, copy)
    return copy


def prepare(case: Case, w: World, folder: Path) -> tuple[list[str], list[str], bool]:
    """The argv of a case in its own folder, what a refusal must name (escaped), and whether it must refuse (a file
    taken out of a folder may be one the command does without, or makes again)."""
    out = folder / f"out{NAME}"
    out.mkdir(parents=True)
    argv = CALLS[case.command][case.call](w, out)
    must_name: list[str] = []
    if case.command in REWRITES:  # a copy of its own of the folder it rewrites
        kept = str(getattr(w, REWRITES[case.command]))
        argv = [str(_copy(Path(kept), folder)) if a == kept else a for a in argv]
    if case.variant == "help":
        return [*argv[:2 if case.command == "analyze" else 1], "--help"], [], False
    if case.variant == "unknown":  # argparse's "unrecognized arguments" quotes them
        return [*argv, f"--nonesuch{UTF8_NAME}", f"value{NAME}"], [one_line(f"value{NAME}")], True
    if case.variant.startswith("missing "):
        k = int(case.variant.split()[1])
        gone = Path(argv[k]).with_name(f"gone{NAME}{Path(argv[k]).suffix}")
        argv[k] = str(gone)
        must_name = [one_line(gone.name)]
    elif case.variant.startswith("without "):
        _, k_text, rel = case.variant.split(" ", 2)
        k = int(k_text)
        copy = Path(argv[k]) if argv[k].startswith(str(folder)) else _copy(Path(argv[k]), folder)
        (copy / rel).unlink()  # a hard link of the world's: the world keeps its file
        argv[k] = str(copy)
        must_name = [one_line(part) for part in Path(rel).parts] + [one_line(copy.name)]
    return argv, must_name, case.variant.startswith("missing ")


@dataclass
class Outcome:
    status: int | None
    out: str
    err: str
    raised: str = ""
    files: dict[str, list[str]] | None = None  # text file written -> the characters it holds as they are


def _stamps(folder: Path) -> dict[Path, tuple[int, int]]:
    return {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def run(argv: list[str], folder: Path, capfd: pytest.CaptureFixture[str]) -> Outcome:
    """The command in this process; its output, and each text file it wrote in the case's folder that holds one of
    the characters as it is (a file of the world copied there and left alone is the world's)."""
    before = _stamps(folder)
    capfd.readouterr()
    status, raised = None, ""
    try:  # warnings recorded and formatted as a user's terminal shows them (pytest keeps them for its summary)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for hidden in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.filterwarnings("ignore", category=hidden)
            status = main(argv)
    except SystemExit as end:  # argparse, --help
        status = end.code if isinstance(end.code, int) else 2
    except Exception as err:  # noqa: BLE001 -- whatever escapes main is a traceback to the user
        raised = "".join(traceback.format_exception_only(err)).strip()
    sys.stdout.flush()
    sys.stderr.flush()
    out, err = capfd.readouterr()
    err += "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in caught)
    files = {}
    for path, stamp in _stamps(folder).items():
        if path.suffix in TEXT_SUFFIXES and before.get(path) != stamp:
            found = raw(path.read_bytes().decode("utf-8", "surrogateescape"))
            if found:
                files[str(path.relative_to(folder))] = found
    return Outcome(status, out, err, raised, files)


def judge(outcome: Outcome, must_name: list[str], must_refuse: bool = True) -> list[str]:
    """What is wrong, each as '(class) what'; empty when the case held."""
    problems = []
    if outcome.raised or "Traceback (most recent call last)" in outcome.err:
        problems.append(f"(c) traceback: {one_line(outcome.raised or outcome.err.strip().splitlines()[-1])[:300]}")
    for stream, text in (("stdout", outcome.out), ("stderr", outcome.err)):
        if raw(text):
            at = min(text.find(MARKS[label]) for label in raw(text))
            problems.append(f"(e) {stream} holds {raw(text)} as they are: {one_line(text[max(0, at - 120):at + 60])}")
    for name, found in (outcome.files or {}).items():
        problems.append(f"(e) {one_line(name)} holds {found} as they are")
    if must_name:
        if outcome.status == 0 and not must_refuse:
            pass
        elif outcome.status in (0, None):
            problems.append(f"(d) status {outcome.status} with a missing path")
        elif not any(name in outcome.err for name in must_name):
            problems.append(f"(e) the refusal names none of {must_name}: {one_line(outcome.err)[-300:]}")
    return problems


# --------------------------------------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, synth_corpus: Path) -> World:
    return build_world(tmp_path_factory.mktemp("names") / f"world{UTF8_NAME}", synth_corpus)


def test_every_command_has_calls() -> None:
    assert set(CALLS) == set(COMMANDS), set(CALLS) ^ set(COMMANDS)
    assert all(n < len(CALLS[command]) for command, n in WIDE_CALLS)


def test_the_judge_flags_what_is_wrong() -> None:
    assert judge(Outcome(0, "fine\n", ""), []) == []
    assert judge(Outcome(2, "", f"sate x: error: {one_line(NAME)}: no such file\n"), [one_line(NAME)]) == []
    bad = {"(c)": Outcome(None, "", "", raised="KeyError: 'x'"),
           "(e) stdout": Outcome(0, f"wrote {NAME}\n", ""),
           "(e) stderr": Outcome(0, "", f"note: q{CHARS['right-to-left']}q\n"),
           "(e) f": Outcome(0, "", "", files={"f.txt": ["tab"]}),
           "(d)": Outcome(0, "", ""),
           "(e) the refusal": Outcome(2, "", "sate x: error: something\n")}
    for expected, outcome in bad.items():
        assert any(p.startswith(expected) for p in judge(outcome, ["gone"] if expected in ("(d)", "(e) the refusal")
                                                         else [])), expected


def test_the_sample_has_every_command(world: World) -> None:
    sample = cases(world)
    assert {c.command for c in sample if c.variant == "works"} == set(COMMANDS) - {"synth"}
    assert any(c.variant.startswith("missing") for c in sample) and any(c.variant.startswith("without")
                                                                       for c in sample)


def run_cases(chosen: list[Case], w: World, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> list[str]:
    failures = []
    for n, case in enumerate(chosen):
        folder = tmp_path / f"case{n}"
        folder.mkdir()
        argv, must_name, must_refuse = prepare(case, w, folder)
        failures += [f"[{case.id}] {p}" for p in judge(run(argv, folder, capfd), must_name, must_refuse)]
        shutil.rmtree(folder, ignore_errors=True)
    return failures


@pytest.mark.parametrize("command", list(CALLS))
def test_names_are_escaped_in_every_message(command: str, world: World, tmp_path: Path,
                                            capfd: pytest.CaptureFixture[str]) -> None:
    """The sampled cases of one command, each failure named as `[command[call] variant]`."""
    failures = run_cases([c for c in cases(world) if c.command == command], world, tmp_path, capfd)
    assert not failures, "\n".join(failures)

