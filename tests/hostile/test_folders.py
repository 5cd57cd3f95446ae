"""Folders a command cannot list or write into, and append-only outputs, generated (twentieth hostile pass).

The folders come from the code, not from a list: a reference run of each command (`INVOCATIONS`, the writes
harness's tiny world; `CORPORA`, `prep` of each other corpus layout and `vocab --marian`; `VARIANTS`, `features` and
`train` doing their work; `READ_ONLY` for the commands that only read) records, through an audit hook, every folder
it lists and every folder holding a file it opens, makes, renames or removes, and every folder its arguments name
(with those below: what a C library opens makes no audit event). A case gives one of those folders a
mode of `MODES` (0300: it cannot be listed; 0100: neither listed nor written; 0500: read-only; 0000: nothing) and
runs the command again in a forked child that file modes bind as they bind every user but root (`as_a_user`'s
way). Another case makes one of the files or folders the reference run wrote append-only (`chattr +a`, which binds
root too; skipped where chattr or the file system refuses it), over a first run's outputs, and runs it again. A mode
case is run on a first run too, and again over a first run's outputs, whose folders count then (`again_cases`).

The invariant (`judge`): the command either ends 0 with what the reference run made (the same files, byte for byte
where two reference runs agree, and the same standard output), or refuses with status 1 or 2 in one line naming the
folder (a path in it, for a mode case; the path or its folder, for an append-only one) and leaves everything as it
was: no file of the user's changed, nothing new but empty folders, no temporary file. Never a silent partial
result (a split missing a reader, "no manifests", exit 0), never a traceback. `test_the_judge_flags_each_bad_outcome`
feeds it bad outcomes.

The committed run is a rotating sample (`STRIDE`: case i runs where i % STRIDE == ROTATION), all of it `slow` (the
world is the writes harness's: a pack, an experiment, two evaluations); `mode_cases(wide=True)`,
`again_cases(wide=True)` and `append_cases(wide=True)` give every case (`RAN` counts those that ran), the costly
commands (`COSTLY`: they voice, train or compute features) included, for a hostile pass's wider run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from sate import layout
from sate.cli import COMMANDS, main
from sate.data.manifest import read_manifest
from sate.errors import one_line
from sate.models.tiny import tiny_config
from tests.hostile.test_writes import (
    COSTLY,
    DATA_OPTIONS,
    INVOCATIONS,
    PROGRESS,
    World,
    _build_world,
    _fresh_name,
    outputs,
    parsers,
    snapshot,
)

pytestmark = pytest.mark.slow

MODES = (0o300, 0o100, 0o500, 0o000)
# The commands that only read, and how to call each on the world (the writers are the writes harness's INVOCATIONS).
READ_ONLY: dict[str, Callable[[World], list[str]]] = {
    "stream": lambda w: ["stream", str(w.wav), "--model", str(w.pack), "--vad", "energy"],
    "score": lambda w: ["score", "--hyp", str(w.results.parent / "hyp.txt"), "--ref",
                        str(w.results.parent / "ref.txt")],
    "config": lambda w: ["config", "--config", str(w.config)],
}
RAN: Counter[str] = Counter()  # the cases that ran, by kind and command (an index past the folders is none): the
# wider run's counts
STRIDE, ROTATION = 9, 0  # the committed sample: case i where i % STRIDE == ROTATION
WIDE_FOLDERS = 40  # more than any command touches: the wider run's indexes


def test_every_command_is_called() -> None:
    """A command added later is run here once someone says how (INVOCATIONS in the writes harness, or READ_ONLY)."""
    known = {c.split()[0] for c in [*INVOCATIONS, *READ_ONLY]}
    assert set(COMMANDS) <= known, f"commands with no call here: {sorted(set(COMMANDS) - known)}"


# ------------------------------------------------------------------------------------------- a run, recorded

@dataclass
class Run:
    status: int
    out: str
    err: str
    events: list[tuple[str, str]] = field(default_factory=list)  # (what, absolute path): "list", "read", "write"


def _hook(events: list[tuple[str, str]]) -> Callable[[str, tuple], None]:
    """An audit hook recording what the run does with paths (a descriptor or a folder-relative name left out)."""
    def path_of(value: object) -> str | None:
        if isinstance(value, bytes):
            value = os.fsdecode(value)
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        return os.path.abspath(value) if isinstance(value, str) else None

    def hook(event: str, args: tuple) -> None:
        if event == "open" and args:
            flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
            mode = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
            writes = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) or any(c in mode for c in "wax+")
            path = path_of(args[0])
            if path:
                events.append(("write" if writes else "read", path))
        elif event in ("os.listdir", "os.scandir") and args:
            path = path_of(args[0] if args[0] is not None else ".")
            if path:
                events.append(("list", path))
        elif event in ("os.mkdir", "os.remove", "os.rmdir", "os.rename", "os.link", "os.symlink", "os.truncate"):
            for value in args[:2] if event in ("os.rename", "os.link") else args[:1]:
                path = path_of(value)
                if path:
                    events.append(("write", path))
    return hook


def run_forked(argv: list[str], *, user: bool = False, record: bool = False) -> Run:
    """`sate ARGV` in a forked child (as a user whom file modes bind, where ``user``): its status, standard output
    and error, and what it did with paths where ``record``."""
    with tempfile.TemporaryDirectory(prefix="sate-folders-") as scratch:
        out, err, log = (os.path.join(scratch, n) for n in ("out", "err", "events"))
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 99
            try:
                for fd, name in ((1, out), (2, err)):
                    os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT, 0o600), fd)
                sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)  # noqa: SIM115
                events: list[tuple[str, str]] = []
                if record:
                    sys.addaudithook(_hook(events))
                if user:
                    from tests.test_os_errors import _drop_file_capabilities  # only the child gives them up
                    _drop_file_capabilities()
                try:
                    code = main(argv)
                except SystemExit as end:
                    code = end.code if isinstance(end.code, int) else 2
                except BaseException:  # noqa: BLE001 - the traceback is the finding
                    print(traceback.format_exc(), file=sys.stderr)
                    code = 98
                if record:
                    with open(log, "w") as f:  # noqa: PTH123 - the audit hook records this one too, harmlessly
                        json.dump(events, f)
            finally:
                with contextlib.suppress(BaseException):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        events = [tuple(e) for e in json.loads(Path(log).read_text())] if record and os.path.exists(log) else []
        return Run(status, Path(out).read_text(errors="replace"), Path(err).read_text(errors="replace"), events)


# ------------------------------------------------------------------------------------------- the calls

@dataclass
class Call:
    """One command on the world, its outputs in ``case`` (a fixed folder: the reference and the cases share names)."""

    command: str
    case: Path
    argv: list[str]
    data_copy: Path | None  # a data output (features/vocab --data): a copy of the world's data dir, made afresh
    prepare: Callable[[Path], None] | None = None  # what is done to that copy first
    first: list[str] | None = None  # an again case's first run, where not ``argv`` (a training resumed)

    def reset(self, world: World) -> None:
        """The case folder as a first run finds it."""
        if self.case.exists():
            unlock(self.case)
            shutil.rmtree(self.case)
        self.case.mkdir(parents=True)
        if self.data_copy is not None:
            shutil.copytree(world.data, self.data_copy)
            if self.prepare is not None:
                self.prepare(self.data_copy)


def _manifests_only(data: Path) -> None:
    shutil.rmtree(data / layout.FBANK_DIR)
    (data / layout.CMVN).unlink()


def _indexes_gone(data: Path) -> None:
    for index in (data / layout.FBANK_DIR).rglob("*.scp"):
        index.unlink()


# The costly commands' calls beside the writes harness's, doing their work: `features` on manifests alone and with its
# indexes gone (its shard folders computed again where they are), and a training resumed for a second epoch.
VARIANTS: dict[str, tuple[str, Callable[[Path], None] | None, list[str]]] = {
    "features fresh": ("features", _manifests_only, []), "features again": ("features", _indexes_gone, []),
    "train resume": ("train", None, ["--set", "trainer.max_epochs=2"]),
    "train st": ("train", None, ["--config", "ST_CONFIG"]),  # reads the features: the world's config trains MT
    "train mt-text": ("train", None, ["--config", "MT_TEXT_CONFIG"]),  # DATA/mt_bin/, a store of text pairs
}


def _st_config(world: World, data: Path | None = None) -> Path:
    """A tiny ST training on the world's data directory (given for the call's --config: `_with`); with
    ``data``, on that copy of it, with MT text pairs of its training split besides (`data.mt_text`)."""
    config = json.loads(world.config.read_text())
    config.update(task="st", model=tiny_config("st", 16, kernel=3))
    path = world.root / "st.yaml"
    if data is not None:
        rows = list(read_manifest(world.data / "train.jsonl"))[:5]
        texts = {side: world.root / f"pairs.{side}" for side in ("src", "tgt")}
        for side, text in texts.items():
            text.write_text("".join(r[side] + "\n" for r in rows), encoding="utf-8")
        config["model"] = tiny_config("st", 16, kernel=3) | {"loss": {"mt_text_weight": 1.0}}
        config["data"] = {**config["data"], "dir": str(data), "mt_text": [[str(texts["src"]), str(texts["tgt"])]]}
        config["batch"] = {**config["batch"], "mt_tokens": 60}
        path = world.root / "mt-text.yaml"
    path.write_text(json.dumps(config))
    return path


# `sate prep` on each other corpus layout it reads, by listing its folders (the nineteenth hostile pass: a LibriSpeech
# reader's folder that could not be listed left its transcripts out, exit 0): a copy of the test fixture's corpus in
# the world, at this name.
CORPORA = {"prep librispeech": ("--librispeech", "LibriSpeech/train-clean-5"),
           "prep kaldi": ("--kaldi-dir", "kaldi/kaldi_train"), "prep libri-trans": ("--libri-trans", "libri_trans"),
           "vocab marian": ("--marian", "marian-hub")}  # a tiny OPUS-MT model's folder: DATA/marian/ is written


def calls(world: World, root: Path) -> dict[str, Call]:
    found: dict[str, Call] = {}
    for command, (option, corpus) in CORPORA.items():
        case = root / command.replace(" ", "-")
        found[command] = Call(command, case, ["prep", option, str(world.root / corpus), "--out", str(case / "out")],
                              None) if command.startswith("prep") else \
            Call(command, case, ["vocab", "--data", str(case / "data"), option, str(world.root / corpus)],
                 case / "data")
    for command, invocation in INVOCATIONS.items():
        case = root / command.replace(" ", "-")
        fresh = {o: str(_fresh_name(case, k, o.strip("-"))) for c, o, k in outputs() if c == command}
        data = next((Path(fresh[o]) for c, o in DATA_OPTIONS if c == command), None)
        found[command] = Call(command, case, invocation(world, fresh), data)
    for name, (command, prepare, extra) in VARIANTS.items():
        base = found[command]
        found[name] = Call(name, root / name.replace(" ", "-"), _with(base.argv, extra), base.data_copy, prepare,
                           None)
        if base.data_copy is not None:
            found[name].data_copy = found[name].case / base.data_copy.relative_to(base.case)
        if "MT_TEXT_CONFIG" in extra:
            found[name].data_copy = found[name].case / "data"
        configs = {"ST_CONFIG": None, "MT_TEXT_CONFIG": found[name].data_copy}
        found[name].argv = [str(_st_config(world, configs[a])) if a in configs else
                            a.replace(str(base.case), str(found[name].case)) for a in found[name].argv]
        found[name].first = [a.replace(str(base.case), str(found[name].case)) for a in base.argv] \
            if "--set" in extra else None
    for command, invocation in READ_ONLY.items():
        found[command] = Call(command, root / command, invocation(world), None)
    return found


def _with(argv: list[str], extra: list[str]) -> list[str]:
    """``argv`` with each option of ``extra`` given its value there: in place of the value ``argv`` gives it (a
    second --config is refused: configs do not merge), else added (--set, which may be given again)."""
    argv = list(argv)
    for option, value in zip(extra[::2], extra[1::2], strict=True):
        if option in argv and option != "--set":
            argv[argv.index(option) + 1] = value
        else:
            argv += [option, value]
    return argv


def test_a_variant_gives_its_options_in_place_of_the_calls() -> None:
    """A variant's --config replaces the call's (`sate train` refuses a second one: the wide run's `train st` and
    `train mt-text` made no reference run after that refusal came); its --set is added."""
    argv = ["train", "--config", "/w/mt.yaml", "--exp", "/c/exp"]
    assert _with(argv, ["--config", "/w/st.yaml"]) == ["train", "--config", "/w/st.yaml", "--exp", "/c/exp"]
    assert _with(argv, ["--set", "trainer.max_epochs=2"]) == [*argv, "--set", "trainer.max_epochs=2"]


def unlock(*roots: Path) -> None:
    """Every folder under ``roots`` given back its modes and every append-only attribute lifted, so that the next
    case (and pytest) can remove what is there."""
    for root in roots:
        if not root.exists():
            continue
        if shutil.which("chattr"):
            subprocess.run(["chattr", "-R", "-f", "-a", str(root)], capture_output=True)
        os.chmod(root, 0o755)
        for top, dirs, _ in os.walk(root):
            for d in dirs:
                if not os.path.islink(os.path.join(top, d)):
                    os.chmod(os.path.join(top, d), 0o755)


# ------------------------------------------------------------------------------------------- the invariant

# Fields that hold how long a run took: two runs of one command differ there by the machine's load. When two
# reference runs happened to agree on one (`sate evaluate`'s decode_seconds, rounded to 0.01 s), a case run on a
# busier machine was "not what the reference run made" (a flaky failure in CI after the twentieth pass); its
# real-time factor (rtf: decode_seconds over the audio's, rounded to 1e-4) likewise (three evaluate cases in CI after
# the twenty-second pass, each passing alone). A training's train_time.json likewise: its seconds, rounded to 0.1 s,
# agreed in two tiny reference runs and differed in a case's (seven `train` cases of the twenty-third pass's wider run).
TIMED = {layout.RESULTS: frozenset({"decode_seconds", "rtf"}), layout.TRAIN_TIME: frozenset({"seconds"})}


def file_digest(path: Path) -> str:
    """The file's bytes' digest; of an evaluate run's results.json and a training's train_time.json, of its record
    without the fields in TIMED."""
    data = path.read_bytes()
    if path.name in TIMED:
        try:
            record = json.loads(data)
        except ValueError:
            record = None
        if isinstance(record, dict):
            data = json.dumps({k: v for k, v in record.items() if k not in TIMED[path.name]}, sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest()


def effects(before: dict, after: dict) -> dict[str, str | None]:
    """What a run changed: each new or changed path with its bytes' digest (a folder "dir"), a removed one None."""
    changed: dict[str, str | None] = {}
    for path in set(before) | set(after):
        if before.get(path) == after.get(path):
            continue
        entry = after.get(path)
        if entry is None:
            changed[path] = None
        elif entry[0] == "file":
            changed[path] = file_digest(Path(path))
        else:
            changed[path] = repr(entry[:2])
    return changed


@dataclass
class Reference:
    """What a command makes on the world: its effects and standard output, and which of them two runs agree on."""

    effects: dict[str, str | None]
    stable: set[str]
    out: str | None  # None where two runs print differently
    folders: list[Path]  # the folders it lists or reads, writes or makes files in, that exist before it runs
    written: list[Path]  # the files and folders it writes (what an append-only case aims at)
    named: set[str] | None = None  # the paths both runs made (None: all of ``effects``)
    read: set[str] = field(default_factory=set)  # the files it opens to read (the swaps harness's members)


def _shape(path: str) -> str:
    """A path with its numbers left out: TensorBoard names its event files by the time and the process id."""
    return re.sub(r"\d+", "#", path)


def judge(run: Run, before: dict, after: dict, ref: Reference, command: str, names: list[str],
          reason: str = "") -> list[str]:
    """What is wrong with one case's outcome, by class (empty: it held)."""
    problems = []
    lines = [line for line in run.err.splitlines() if line.strip() and not PROGRESS.match(line)]
    if "Traceback (most recent call last)" in run.err or run.status not in (0, 1, 2):
        problems.append(f"(c) status {run.status}, a traceback or an unknown ending: {run.err[-600:]!r}")
    now = effects(before, after)
    new = [p for p in after if p not in before]
    for path in new:
        base = os.path.basename(path)
        if ".tmp" in base or base == layout.REPLACING or base.endswith(".lock"):
            problems.append(f"(f) a temporary file was left: {path}")
    if run.status == 0:
        named = ref.named if ref.named is not None else set(ref.effects)
        shapes = {_shape(p) for p in set(ref.effects) - named}  # names two runs gave differently (a time, a pid)
        missing = sorted(named - set(now))[:3]
        extra = sorted(p for p in set(now) - named if _shape(p) not in shapes)[:3]
        if missing or extra or any(now[p] != ref.effects[p] for p in ref.stable if p in now):
            differ = sorted(p for p in ref.stable if p in now and now[p] != ref.effects[p])[:3]
            problems.append(f"(d) exit 0, but not what the reference run made: missing {missing}, extra {extra}, "
                            f"different {differ}")
        if ref.out is not None and run.out != ref.out:
            problems.append(f"(d) exit 0, but another standard output: {run.out[:200]!r} (reference "
                            f"{ref.out[:200]!r})")
        return problems
    for path, digest in now.items():
        if path in before and not (before[path][0] == "dir" and digest and after.get(path, ("",))[0] == "dir"):
            problems.append(f"(a) refused, but {path} was {'removed' if digest is None else 'changed'}: "
                            f"{before[path][:5]} -> {after.get(path, ())[:5]}")
        elif path not in before and after[path][0] != "dir":
            problems.append(f"(f) refused, but {path} was left")
    prefix = f"sate {command.split()[0]}"
    if command.startswith("train"):  # Lightning's setup lines come before what its setup reads is refused (the
        lines = [line for line in lines if line.startswith(prefix)]  # data directory's features), as test_reads
    if len(lines) > 1 and re.fullmatch(rf"{prefix}: \d+ of \d+ file\(s\) failed", lines[-1]):
        lines = [" ".join(lines[:-1])] if all(line.startswith(prefix) for line in lines) else lines  # a line per
        # input that failed, then their count: `segment` and `translate` go on after a bad input (inference.md)
    if len(lines) != 1 or not lines[0].startswith(prefix):
        problems.append(f"(e) not one line starting {prefix!r}: {lines[:4]!r}")
    elif not any(one_line(n) in lines[0] for n in names):
        problems.append(f"(e) the line names none of {names[:2]!r}: {lines[0]!r}")
    elif reason and reason not in lines[0]:
        problems.append(f"(e) the line does not say {reason!r}: {lines[0]!r}")
    return problems


def test_the_judge_flags_each_bad_outcome(tmp_path: Path) -> None:
    """A judge that cannot fail checks nothing: each bad outcome is flagged under its class."""
    mine, out = tmp_path / "mine.txt", tmp_path / "out.txt"
    mine.write_text("mine\n")
    before = snapshot(tmp_path)
    out.write_text("all\n")
    ref = Reference(effects(before, snapshot(tmp_path)), {str(out)}, "", [], [])
    out.write_text("part\n")  # a partial result, exit 0
    assert [p[:3] for p in judge(Run(0, "", ""), before, snapshot(tmp_path), ref, "x", [])] == ["(d)"]
    out.unlink()
    assert [p[:3] for p in judge(Run(0, "", ""), before, snapshot(tmp_path), ref, "x", [])] == ["(d)"]
    assert [p[:3] for p in judge(Run(0, "other\n", ""), before, snapshot(tmp_path), ref, "x", [])] == ["(d)", "(d)"]
    mine.write_text("changed\n")
    (tmp_path / ".out.txt.x1.tmp").write_text("")
    bad = judge(Run(1, "", "Traceback (most recent call last):\nPermissionError\n"), before, snapshot(tmp_path), ref,
                "x", [str(tmp_path)])
    assert sorted(p[:3] for p in bad) == ["(a)", "(c)", "(e)", "(f)", "(f)"], bad
    mine.write_text("mine\n")
    (tmp_path / ".out.txt.x1.tmp").unlink()
    same = snapshot(tmp_path)
    before = {**same, str(mine): before[str(mine)]}
    fine = Run(2, "", f"sate x: error: {tmp_path}: Permission denied\n")
    assert judge(fine, same, same, ref, "x", [str(tmp_path)]) == []
    assert [p[:3] for p in judge(fine, same, same, ref, "x", ["/elsewhere"])] == ["(e)"]
    assert [p[:3] for p in judge(fine, same, same, ref, "x", [str(tmp_path)], "append-only")] == ["(e)"]
    per_input = Run(1, "", f"sate x: error: {tmp_path}/a.wav: Permission denied\nsate x: 1 of 1 file(s) failed\n")
    assert judge(per_input, same, same, ref, "x", [str(tmp_path)]) == []  # a line per input, then their count
    two = Run(1, "", f"sate x: error: --out {tmp_path}: no\nsate x: error: again\n")
    assert [p[:3] for p in judge(two, same, same, ref, "x", [str(tmp_path)])] == ["(e)"]


def test_only_the_timed_fields_are_left_out_of_a_digest(tmp_path: Path) -> None:
    """Two runs differ in how long they took, not in what they made: a train_time.json's seconds and a results.json's
    decode_seconds are left out of the digest, its run count and a score are not."""
    first, second = tmp_path / "a" / layout.TRAIN_TIME, tmp_path / "b" / layout.TRAIN_TIME
    for path, record in ((first, {"seconds": 3.1, "runs": 1}), (second, {"seconds": 3.4, "runs": 1})):
        path.parent.mkdir()
        path.write_text(json.dumps(record))
    assert file_digest(first) == file_digest(second)
    second.write_text(json.dumps({"seconds": 3.1, "runs": 2}))
    assert file_digest(first) != file_digest(second)
    results = tmp_path / "a" / layout.RESULTS
    results.write_text(json.dumps({"bleu": 1.0, "decode_seconds": 0.5}))
    digest = file_digest(results)
    results.write_text(json.dumps({"bleu": 1.0, "decode_seconds": 0.7}))
    assert file_digest(results) == digest
    results.write_text(json.dumps({"bleu": 2.0, "decode_seconds": 0.5}))
    assert file_digest(results) != digest


# ------------------------------------------------------------------------------------------- the references

def _folders(events: list[tuple[str, str]], roots: tuple[Path, ...]) -> tuple[list[Path], list[Path]]:
    """The folders under ``roots`` a run touched (listed, or holding a path it used) and the paths it wrote."""
    inside = [str(r) for r in roots]

    def under(path: str) -> bool:
        return any(path == r or path.startswith(r + os.sep) for r in inside)

    folders, written = set(), set()
    for what, path in events:
        folder = path if what == "list" else os.path.dirname(path)
        if under(folder):
            folders.add(folder)
        if what == "write" and under(path):
            written.add(path)
    return sorted(Path(f) for f in folders), sorted(Path(p) for p in written)


def _named_folders(argv: list[str], roots: tuple[Path, ...]) -> list[Path]:
    """The folders the arguments name, with every folder below one (a pack, a data dir's fbank/ and its shard
    folders, an experiment's checkpoints/ and logs/), and the folder of each file named: what the command may read
    without an audit event (a C library's own open, libsndfile's and SentencePiece's)."""
    found: set[Path] = set()
    for value in argv:
        path = Path(value)
        if not path.is_absolute() or not any(path == r or r in path.parents for r in roots):
            continue
        if path.is_dir():
            found |= {Path(top) for top, _, _ in os.walk(path)}
        elif path.parent.is_dir():
            found.add(path.parent)
    return sorted(found)


@dataclass
class Bench:
    """The world, the calls on it, and each command's reference (made when a case first needs it)."""

    world: World
    calls: dict[str, Call]
    refs: dict[str, Reference] = field(default_factory=dict)
    again: dict[str, list[Path]] = field(default_factory=dict)
    again_made: dict[str, dict[str, str | None]] = field(default_factory=dict)

    def roots(self, call: Call) -> tuple[Path, ...]:
        return (self.world.root, call.case)

    def reference(self, command: str) -> Reference:
        if command not in self.refs:
            call = self.calls[command]
            runs = []
            for _ in range(2):
                call.reset(self.world)
                existing = {p for root in self.roots(call) for p, e in snapshot(root).items() if e[0] == "dir"}
                existing |= {str(r) for r in self.roots(call)}
                before = snapshot(*self.roots(call))
                run = run_forked(call.argv, record=True)
                assert run.status == 0, f"{command}'s reference run failed: {run.err[-800:]}"
                runs.append((run, effects(before, snapshot(*self.roots(call)))))
                self._restore(call, before)
            (first, a), (second, b) = runs
            folders, written = _folders(first.events, self.roots(call))
            folders = sorted({*folders, *_named_folders(call.argv, self.roots(call))})
            self.refs[command] = Reference(a, {p for p in a if a[p] == b.get(p)},
                                           first.out if first.out == second.out else None,
                                           [f for f in folders if str(f) in existing], written,
                                           set(a) & set(b), {p for what, p in first.events if what == "read"})
        return self.refs[command]

    def again_folders(self, command: str) -> list[Path]:
        """The folders of an again case: the reference's, and every folder of a first run's outputs."""
        if command not in self.again:
            call = self.calls[command]
            call.reset(self.world)
            before = snapshot(*self.roots(call))
            first = run_forked(call.first or call.argv)
            assert first.status == 0, first.err[-600:]
            self.again[command] = sorted({*self.reference(command).folders,
                                          *(Path(top) for top, _, _ in os.walk(call.case))})
            shutil.copytree(call.case, self._firsts / call.case.name, symlinks=True)
            # what a run over it makes, which may differ from what a first run makes: a resume's training, and a
            # training's record of its runs (train_time.json counts them: `train` again over a finished experiment
            # ended 0 with "runs": 2, flagged as not what a run makes in the twenty-third pass's wider run)
            done = run_forked(call.argv)
            assert done.status == 0 or call.first is None, done.err[-600:]
            if done.status == 0:
                self.again_made[command] = {str(p): file_digest(p)
                                            for p in call.case.rglob("*") if p.is_file() and not p.is_symlink()}
            self._restore(call, before)
        return self.again[command]

    @property
    def _firsts(self) -> Path:
        return self.world.root.parent / "firsts"

    def first_run(self, command: str) -> None:
        """The case folder as a first run leaves it (a copy of the one `again_folders` made: a run costs seconds)."""
        self.again_folders(command)
        call = self.calls[command]
        call.reset(self.world)
        shutil.rmtree(call.case)
        shutil.copytree(self._firsts / call.case.name, call.case, symlinks=True)

    def _restore(self, call: Call, before: dict) -> None:
        """What a run left in the world removed (each case starts from it as it was)."""
        for path in sorted(set(snapshot(self.world.root)) - set(before), reverse=True):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            elif os.path.lexists(path):
                os.unlink(path)


def make_bench(tmp_path_factory: pytest.TempPathFactory, synth_corpus: Path, prepared_data: Path,
               corpora: dict[str, Path]) -> Bench:
    """The world, with a copy of each of ``corpora`` (by `CORPORA`'s names) in it, and the calls, for this module
    and a wider run's."""
    world = _build_world(tmp_path_factory.mktemp("folders-world"), synth_corpus, prepared_data)
    for name, (_, where) in CORPORA.items():
        (world.root / where).parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(corpora[name].parent, (world.root / where).parent, dirs_exist_ok=True) \
            if name == "prep kaldi" else shutil.copytree(corpora[name], world.root / where)
    return Bench(world, calls(world, tmp_path_factory.mktemp("folders-cases")))


@pytest.fixture(scope="session")  # the near-miss harness (test_neighbours) runs on the same bench
def corpora(librispeech_subset: tuple[Path, list], kaldi_corpus: tuple[Path, list], libri_trans_root: Path,
            marian_dir: Path) -> dict[str, Path]:
    """The test fixtures' corpora of the other layouts `sate prep` reads (the Kaldi one with its audio beside), and a
    Marian model's folder for `sate vocab --marian`."""
    return {"prep librispeech": librispeech_subset[0], "prep kaldi": kaldi_corpus[0],
            "prep libri-trans": libri_trans_root, "vocab marian": marian_dir}


@pytest.fixture(scope="session")
def bench(tmp_path_factory: pytest.TempPathFactory, synth_corpus: Path, prepared_data: Path,
          corpora: dict[str, Path]) -> Bench:
    return make_bench(tmp_path_factory, synth_corpus, prepared_data, corpora)


# ------------------------------------------------------------------------------------------- unlistable folders

def run_mode_case(bench: Bench, command: str, folder_index: int, mode: int, again: bool = False) -> list[str]:
    """The command's ``folder_index``-th folder given ``mode``, the command run as a user; ``again``: over a first
    run's outputs, whose folders count too (an existing --out folder, a pack, an evaluation, a data dir's)."""
    ref, call = bench.reference(command), bench.calls[command]
    if folder_index >= len(bench.again_folders(command) if again else ref.folders):
        return []
    RAN[("again " if again else "") + command] += 1
    call.reset(bench.world)
    folders = ref.folders
    if again:
        bench.first_run(command)
        folders = bench.again_folders(command)
    folder = folders[folder_index]
    before = snapshot(*bench.roots(call))
    saved = stat.S_IMODE(folder.stat().st_mode)
    folder.chmod(mode)
    try:
        run = run_forked(call.argv, user=True)
    finally:
        folder.chmod(saved)
    after = snapshot(*bench.roots(call))
    if again and run.status == 0:  # it may say "up to date": what it leaves must be what a first run makes
        problems = [p for p in judge(run, before, after, replace(ref, out=None), command, [])
                    if not p.startswith("(d) exit 0, but not")] + _same_outputs(ref, after,
                                                                                bench.again_made.get(command))
    else:
        problems = judge(run, before, after, ref, command, [str(folder)])
    bench._restore(call, before)
    return [f"{'again, ' if again else ''}{folder} {mode:04o}: {p}" for p in problems]


def mode_cases(wide: bool = False) -> list[tuple[str, int, int]]:
    """(command, folder index, mode): every folder of every command in every mode (the folders are known once the
    reference has run: an index past them is an empty case); the committed sample a rotation of its first eight."""
    every = [(c, i, m) for c in [*INVOCATIONS, *CORPORA, *VARIANTS, *READ_ONLY]
             for i in range(WIDE_FOLDERS if wide else 8) for m in MODES if wide or c.split()[0] not in COSTLY]
    return every if wide else [case for n, case in enumerate(every) if n % STRIDE == ROTATION]


def again_cases(wide: bool = False) -> list[tuple[str, int, int]]:
    """(command, folder index, mode) over a first run's outputs: every writer; the committed sample a rotation."""
    every = [(c, i, m) for c in [*INVOCATIONS, *CORPORA, *VARIANTS] for i in range(WIDE_FOLDERS if wide else 12)
             for m in MODES if wide or c.split()[0] not in COSTLY]
    return every if wide else [case for n, case in enumerate(every) if n % (2 * STRIDE) == ROTATION + 1]


@pytest.mark.parametrize(("command", "index", "mode"),
                         [pytest.param(*c, id=f"{c[0]} again folder{c[1]} {c[2]:04o}") for c in again_cases()])
def test_a_folder_of_a_first_runs_outputs_that_the_command_cannot_list_or_write(bench: Bench, command: str,
                                                                               index: int, mode: int) -> None:
    problems = run_mode_case(bench, command, index, mode, again=True)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("command", "index", "mode"),
                         [pytest.param(*c, id=f"{c[0]} folder{c[1]} {c[2]:04o}") for c in mode_cases()])
def test_a_folder_the_command_uses_that_it_cannot_list_or_write(bench: Bench, command: str, index: int,
                                                                 mode: int) -> None:
    problems = run_mode_case(bench, command, index, mode)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------------------- append-only outputs

def chattr_works(folder: Path) -> bool:
    probe = folder / "chattr-probe"
    probe.write_text("")
    try:
        return shutil.which("chattr") is not None and \
            subprocess.run(["chattr", "+a", str(probe)], capture_output=True).returncode == 0
    finally:
        subprocess.run(["chattr", "-a", str(probe)], capture_output=True)
        probe.unlink()


def run_append_case(bench: Bench, command: str, index: int) -> list[str]:
    """A first run's outputs, then its ``index``-th written path (a file or a folder it writes in) made append-only,
    then the command again."""
    ref, call = bench.reference(command), bench.calls[command]
    targets = sorted({*ref.written, *(p.parent for p in ref.written)})
    if index >= len(targets):
        return []
    RAN["append-only " + command] += 1
    bench.first_run(command)
    target = targets[index]
    if not target.exists() or target.is_symlink():
        return []  # a temporary name, or a folder the run removes
    subprocess.run(["chattr", "+a", str(target)], check=True, capture_output=True)
    before = snapshot(*bench.roots(call))  # after chattr, which changes the target's times
    try:
        run = run_forked(call.argv)
        after = snapshot(*bench.roots(call))  # before chattr -a, which changes the target's times
    finally:
        subprocess.run(["chattr", "-a", str(target)], capture_output=True)
    if run.status == 0:  # a second run over its own outputs (it may say "up to date"): what it leaves must be what
        # a first run makes
        problems = [p for p in judge(run, before, after, replace(ref, out=None), command, [])
                    if not p.startswith("(d) exit 0, but not")]
        problems += _same_outputs(ref, after, bench.again_made.get(command))
    else:
        problems = judge(run, before, after, ref, command, [str(target), str(target.parent)], "append-only")
    bench._restore(call, before)
    return [f"{target} +a: {p}" for p in problems]


def _same_outputs(ref: Reference, after: dict, again: dict[str, str | None] | None = None) -> list[str]:
    """Every file the reference made is there with the reference's bytes (where two runs agree); ``again``: as a run
    over a first run's outputs leaves them (a training resumed), where it differs from a first run's."""
    wrong = []
    for path in sorted(ref.stable):
        digest = ref.effects[path] if again is None or path not in again else again[path]
        entry = after.get(path)
        if digest is None or (digest.startswith("(") and entry is not None):
            continue
        now = file_digest(Path(path)) if entry and entry[0] == "file" else None
        if now != digest:
            wrong.append(f"(d) exit 0, but {path} is not what a run makes ({'missing' if now is None else 'other'})")
    return wrong[:3]


def append_cases(wide: bool = False) -> list[tuple[str, int]]:
    every = [(c, i) for c in [*INVOCATIONS, *CORPORA, *VARIANTS] for i in range(WIDE_FOLDERS if wide else 10)
             if wide or c.split()[0] not in COSTLY]
    return every if wide else [case for n, case in enumerate(every) if n % STRIDE == ROTATION]


@pytest.mark.parametrize(("command", "index"), [pytest.param(*c, id=f"{c[0]} written{c[1]}") for c in append_cases()])
def test_an_output_or_its_folder_append_only(bench: Bench, command: str, index: int) -> None:
    if not chattr_works(bench.calls[command].case.parent):
        pytest.skip("chattr +a needs root and a file system with attributes")
    problems = run_append_case(bench, command, index)
    assert not problems, "\n".join(problems)


def test_every_output_option_is_called() -> None:
    """The writers here are the writes harness's, whose table knows every output option."""
    assert {c for c, _, _ in outputs()} <= set(INVOCATIONS) and set(parsers()) >= set(INVOCATIONS)
