"""Near-misses, generated: every path argument given the path next to the right one (twenty-first hostile pass).

A researcher's commonest wrong path is not a hostile one but a neighbour of the right one: the experiment where its
pack is wanted, the pair folder where the MuST-C root is, the split folder for the data directory, a checkpoint
for a pack, a gzipped reference, a folder named like a file. The twentieth pass found 24 of its 40 failures so, by
hand. Here they are generated from the code: each call of the folders harness's (`test_folders.calls`: every command
on the writes harness's world, each other corpus layout `prep` reads, the reading commands), each of its path
arguments (an absolute path in its command line: options and positionals, inputs and outputs, by the writes
harness's `ROLES`) is given each of its `neighbours`: its parent, each child, each sibling, the same-role path of
another kind (`LANDMARKS`: the world's data directory, corpus, pack, experiment, checkpoint, evaluation ... one table),
a copy of a file in a folder named like it, a file named like a folder, and a gzipped copy of a text input.

The invariant (`verdict`): the command ends 0 with what the reference run made (`ALSO_VALID` names the neighbours
that are another right value: the other side of a score, another evaluation's results; an output's neighbour may
take the output where nothing of the user's changes), or it refuses with status 1 or 2 in ONE line that names the
path given or its option; every path that line names exists or is the path given (never a doubled
`EXP/checkpoints/checkpoints`); a "run `sate ...`" advice in it, followed literally, does not leave the same
refusal after it; nothing the user made changed; no temporary file is left (the folders harness's `judge`).

The committed run is `SAMPLE` of the cheap commands' cases spread by `STRIDE` (a later pass moves it by raising
`ROTATION`), all `slow` but the verdict's own test, on the folders harness's bench (its world: a pack, an experiment,
two evaluations, each other corpus layout; a session fixture, built once for both modules). `cases(bench, wide=True)`
gives every case (the costly commands' too: they voice, train or compute features where a neighbour is taken) for a
hostile pass's wider run; `ARTIFACTS` names the cases whose right refusal the verdict cannot read as one.
"""

from __future__ import annotations

import gzip
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from sate.errors import one_line
from tests.hostile.test_folders import (  # noqa: F401 - bench and corpora: the folders harness's fixtures, shared
    Bench,
    Reference,
    Run,
    bench,
    corpora,
    effects,
    judge,
    run_forked,
)
from tests.hostile.test_writes import COSTLY, PROGRESS, ROLES, snapshot

# The same-role paths of other kinds: what a researcher gives by mistake for another (relative to the world's root;
# those missing in a world are left out). The kind says which output kind (ROLES' "out:KIND") each is; an output
# given a landmark of its own kind is a run over that output, not a near-miss.
LANDMARKS: dict[str, tuple[str, str]] = {
    "corpus": ("corpus", "corpus"), "pair": ("corpus/en-de", "corpus"), "data": ("data", "data"),
    "fbank": ("data/fbank", ""), "fbank-split": ("data/fbank/dev", ""), "manifest": ("data/dev.jsonl", "text"),
    "wav": ("talk.wav", ""), "model": ("st.pt", "model"), "pack": ("pack", "pack"), "pack-model": ("pack/model.pt",
                                                                                                  "model"),
    "exp": ("exp", "experiment"), "system": ("exp/st", "experiment"), "checkpoints": ("exp/st/checkpoints", ""),
    "checkpoint": ("exp/st/checkpoints/epoch000.ckpt", "model"), "evaluation": ("exp/st/decode_tst-COMMON",
                                                                               "directory"),
    "results": ("exp/st/decode_tst-COMMON/results.json", "results"), "stream": ("stream", "directory"),
    "config": ("mt.yaml", "text"), "hub": ("hub", "cache"),
}
TEXT_SUFFIXES = (".txt", ".json", ".jsonl", ".yaml", ".csv", ".md", ".en", ".de", ".trans")
CHILDREN = 8  # the children and siblings a path gets in the committed run (the wider run: all)


@dataclass(frozen=True)
class Case:
    """One call with one path argument (its place in the call's command line) given one neighbour."""

    command: str
    place: int
    neighbour: str  # "parent", "child:NAME", "sibling:NAME", "kind:NAME", "as-folder", "as-file", "gz"

    @property
    def id(self) -> str:
        return f"{self.command} #{self.place} -> {self.neighbour}"


def role_of(argv: list[str], place: int) -> tuple[str, str]:
    """(the option or positional a path of the command line is the value of, its ROLES role)."""
    command = " ".join(argv[:2]) if argv[0] == "analyze" else argv[0]
    before = argv[place - 1]
    if before.startswith("--"):
        return before, ROLES[command].get(before, "in")
    positional = next((o for o, r in ROLES[command].items() if not o.startswith("-") and r == "in"), "input")
    return positional, "in"


def path_places(argv: list[str], roots: tuple[Path, ...]) -> list[int]:
    """The places of the absolute paths under ``roots`` in a command line (a --set value's path left out)."""
    return [n for n, value in enumerate(argv) if value.startswith("/") and argv[n - 1] != "--set"
            and any(Path(value.rstrip("/")) == r or r in Path(value.rstrip("/")).parents for r in roots)]


def neighbours(path: Path, world_root: Path, wide: bool = True) -> list[str]:
    """The near-misses of ``path`` as `Case.neighbour` names (what each is, is made by `make_neighbour`)."""
    found = ["parent"]
    limit = None if wide else CHILDREN
    if path.is_dir():
        found += [f"child:{p.name}" for p in sorted(path.iterdir())[:limit]]
        found.append("as-file")
    elif path.is_file():
        found.append("as-folder")
        if path.suffix in TEXT_SUFFIXES:
            found.append("gz")
    if path.parent.is_dir():
        found += [f"sibling:{p.name}" for p in sorted(path.parent.iterdir()) if p != path][:limit]
    found += [f"kind:{name}" for name, (rel, _) in LANDMARKS.items()
              if (world_root / rel).exists() and world_root / rel not in (path, path.parent)
              and (world_root / rel).parent != path.parent and (world_root / rel).parent != path]
    return found


def make_neighbour(path: Path, neighbour: str, world_root: Path, scratch: Path) -> Path:
    """The neighbour's path, made in ``scratch`` where it is a copy (a folder named like the file, a gzipped text)."""
    kind, _, name = neighbour.partition(":")
    if kind == "parent":
        return path.parent
    if kind == "child":
        return path / name
    if kind == "sibling":
        return path.parent / name
    if kind == "kind":
        return world_root / LANDMARKS[name][0]
    scratch.mkdir(parents=True, exist_ok=True)
    if kind == "as-folder":  # the file, in a folder of its name (a download unpacked into a folder of its name)
        (scratch / path.name).mkdir()
        shutil.copy2(path, scratch / path.name / path.name)
        return scratch / path.name
    if kind == "as-file":  # a file of the folder's name (its listing, a tarball's name without the folder)
        (scratch / path.name).write_text("\n".join(sorted(p.name for p in path.iterdir())) + "\n")
        return scratch / path.name
    if kind == "gz":
        (scratch / f"{path.name}.gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
        return scratch / f"{path.name}.gz"
    raise ValueError(neighbour)


def cases(built: Bench, wide: bool = False) -> list[Case]:
    """Every call's every path argument given each neighbour (costly commands' cases and children past `CHILDREN`
    only ``wide``)."""
    if (id(built), wide) in _CASES:
        return _CASES[id(built), wide]
    every = []
    for command, call in built.calls.items():
        if command not in CALLED or (not wide and command.split()[0] in COSTLY):
            continue
        call.reset(built.world)
        for place in path_places(call.argv, built.roots(call)):
            path = Path(call.argv[place].rstrip("/"))
            every += [Case(command, place, n) for n in neighbours(path, built.world.root, wide)]
    _CASES[id(built), wide] = every
    return every


_CASES: dict[tuple[int, bool], list[Case]] = {}


# The calls whose path arguments are given neighbours: every command of the folders harness's calls (its variants,
# which give the same paths with other settings, left out).
CALLED = ("synth", "prep", "features", "vocab", "fetch-whisper", "train", "average", "pack", "segment", "translate",
          "evaluate", "report", "latency-plot", "analyze locality", "analyze attention", "stream", "score", "config",
          "prep librispeech", "prep kaldi", "prep libri-trans", "vocab marian")


# ------------------------------------------------------------------------------------------------ the verdict

# Neighbours that are another right value, where exit 0 with another result is the right answer: (command, option,
# neighbour kind) -> why.
ALSO_VALID: dict[tuple[str, str, str], str] = {
    ("train", "--config", "sibling"): "another training config (an ST one beside the MT one): another training",
    ("config", "--config", "sibling"): "another training config: shown as given",
    ("pack", "--model", "kind:pack-model"): "a pack's model.pt is a model file: packed again, named by its path",
    ("analyze locality", "--model", "sibling:pack"): "the pack of another model: analysed as given",
    ("analyze locality", "--model", "kind:pack-model"): "a pack's model.pt is a model file: analysed as given",
    ("analyze attention", "--model", "sibling:pack"): "the pack of another model: drawn as given",
    ("analyze attention", "--model", "kind:pack-model"): "a pack's model.pt is a model file: drawn as given",
    ("latency-plot", "results", "as-folder"): "a folder holding results.json is an evaluate run's: read as one",
}
# Cases whose refusal is right but whose line the verdict cannot read as such: id -> why.
ARTIFACTS: dict[str, str] = {
    "train #2 -> sibling:mt-text.yaml": "the folders harness's MT-text config names a copy of the data directory "
                                       "that only its own call makes: data.dir, named as the config's key",
}

PATH = re.compile(r"(?<![\w.~<>-])/[^\s'\"`,;()\[\]]+")  # not a tag's slash: '</s>', a token of a vocab.json
COUNT = re.compile(r"^sate \w+: \d+ of \d+ file\(s\) failed")  # after a line per input that failed
ADVICE = re.compile(r"\brun `(sate [^`]+)`")  # advice ("which only `sate pack` writes", "write one with `sate
# pack`" name a command, not a command line to type with this one's paths)
OUT_FLAGS = ("--out", "--exp", "--cache")
OUT_ADVICE = ("name it", "write it to")  # a new output's name advised in words: "--out mt.yaml: ...; name it mt.txt"


def named_paths(line: str) -> list[str]:
    """The absolute paths a refusal's line names (trailing punctuation off, a cut value's left out)."""
    found = []
    for match in PATH.finditer(line):
        if "..." not in match.group() and "\u2026" not in match.group():
            found.append(re.sub(r"(:\d+)+$", "", match.group().rstrip(".:!?")))  # a line's number after it
    return found


def stray_paths(line: str, given: str) -> list[str]:
    """Paths a line names that neither exist nor are the path given (nor a new output's name the advice gives)."""
    stray = []
    for path in named_paths(line):
        if os.path.lexists(path) or path.rstrip("/") == given.rstrip("/"):
            continue
        if any(f"{flag} {path}" in line or f"{flag}={path}" in line for flag in OUT_FLAGS + OUT_ADVICE) and \
                os.path.isdir(os.path.dirname(path.rstrip("/"))):
            continue
        stray.append(path)
    return stray


def advice_of(line: str, refused: list[str] | None = None) -> list[list[str]] | None:
    """Each `sate ...` command a line advises, as a command line, where it can be run as it is written (no
    placeholder in capitals or angle brackets, no '...'); a command named bare (`sate vocab`) is given the paths of
    the ``refused`` command line that its command takes (the same --data): what a researcher types next. None where
    the line advises none."""
    found = ADVICE.findall(line)
    if not found:
        return None
    runnable = []
    for text in found:
        try:
            argv = shlex.split(text)[1:]
        except ValueError:
            continue
        if len(argv) == 1 and refused is not None:
            roles = ROLES.get(argv[0], {})
            own = ROLES.get(" ".join(refused[:2]) if refused[0] == "analyze" else refused[0], {})
            argv += [v for n, option in enumerate(refused[:-1]) if option.startswith("--")
                     and roles.get(option, "val") != "val" and not _other_output(own.get(option), roles[option])
                     for v in (option, refused[n + 1])]
        if any(re.fullmatch(r"[A-Z][A-Z_]*", a) or "<" in a or "..." in a or a == "\u2026" for a in argv) or \
                not any(a.startswith("/") for a in argv) or argv[-1].startswith("-"):
            continue  # a placeholder, or a command named with no path (`sate pack` makes it): nothing to follow
        runnable.append(argv)
    return runnable


def _other_output(mine: str | None, theirs: str) -> bool:
    """Whether an option names an output of another kind in the advised command than in the refused one (report's
    --out is a markdown file, evaluate's a folder): not the path the advised command takes. The data directory, an
    input of one command and the output of another, is the same folder."""
    return bool(mine) and mine.startswith("out:") and theirs.startswith("out:") and mine != theirs


def the_line(run: Run) -> str:
    return next((line for line in reversed(run.err.splitlines()) if line.strip() and not PROGRESS.match(line)), "")


def verdict(run: Run, before: dict, after: dict, ref: Reference, command: str, given: str, option: str,
            output: bool, valid: str | None = None) -> list[str]:
    """What is wrong with one near-miss's outcome (empty: it held). ``output``: the path is an output's, which may
    be taken elsewhere as long as nothing of the user's changes; ``valid``: why another result is right."""
    if run.status == 0 and (output or valid):
        problems = [p for p in judge(run, before, after, Reference({}, set(), None, [], []), command, [])
                    if not p.startswith("(d)")]
        changed = [p for p, d in effects(before, after).items() if p in before and before[p][0] != "dir"]
        problems += [f"(a) exit 0, but {p} was {'removed' if p not in after else 'changed'}" for p in changed[:3]]
        return problems
    lines = run.err.splitlines()
    if len(lines) > 1 and COUNT.match(lines[-1]):  # a line per input, then their count (inference.md)
        run = Run(run.status, run.out, "\n".join(lines[:-1]) + "\n", run.events)
    problems = judge(run, before, after, ref, command, [given, option])
    if run.status != 0:
        line = the_line(run)
        stray = stray_paths(line, given)
        if stray:
            problems.append(f"(e) the line names paths that are not there: {stray[:3]}: {line!r}")
    return problems


def test_the_verdict_flags_each_bad_outcome(tmp_path: Path) -> None:
    """A verdict that cannot fail checks nothing: a doubled path, a refusal naming another path, a user's file
    changed by an output taken elsewhere, each is flagged."""
    exp = tmp_path / "exp"
    (exp / "checkpoints").mkdir(parents=True)
    mine = tmp_path / "notes.txt"
    mine.write_text("mine\n")
    same = snapshot(tmp_path)
    ref = Reference({}, set(), "", [], [])
    doubled = Run(1, "", f"sate average: error: {exp}/checkpoints/checkpoints holds no checkpoint\n")
    assert [p[:3] for p in verdict(doubled, same, same, ref, "average", f"{exp}/checkpoints", "--exp",
                                   False)] == ["(e)"]
    fine = Run(1, "", f"sate average: error: --exp {exp}/checkpoints is a checkpoint folder: give {exp}\n")
    assert verdict(fine, same, same, ref, "average", f"{exp}/checkpoints", "--exp", False) == []
    other = Run(1, "", f"sate average: error: {mine} is no experiment\n")
    assert [p[:3] for p in verdict(other, same, same, ref, "average", f"{exp}/x", "--exp", False)] == ["(e)"]
    mine.write_text("overwritten\n")
    assert [p[:3] for p in verdict(Run(0, "", ""), same, snapshot(tmp_path), ref, "translate", str(mine), "--out",
                                   True)] == ["(a)"]
    assert stray_paths(f"run `sate pack --model {mine} --out {tmp_path}/pack`", "x") == []
    assert advice_of(f"run `sate features --data {exp}` first") == [["features", "--data", str(exp)]]
    assert advice_of("run `sate pack --model MODEL --out PACK`") == []
    assert advice_of("only `sate pack` writes it; run `sate prep --out`") == []
    assert advice_of("P is a packed model, which only `sate pack` writes") is None
    assert advice_of("run `sate vocab` first", ["pack", "--data", "/d", "--decode", "beam=2", "--out", "/p"]) == \
        [["vocab", "--data", "/d"]]  # --out: the pack's, an output vocab does not have
    assert advice_of("run `sate evaluate` first", ["report", "--exp", "/e", "--out", "/r.md"]) == []  # a table's --out
    # is no evaluation's folder: a bare command with no path, nothing to follow
    assert stray_paths(f"a .yaml name says YAML: name it {tmp_path}/mt.txt", "x") == []  # a new output's name
    assert stray_paths(f"a .yaml name says YAML, as {tmp_path}/mt.txt does", "x") == [f"{tmp_path}/mt.txt"]
    assert named_paths("data.dir None -> '/tmp/a/fol..., and no decode_<split>/results.json in /x/y.") == ["/x/y"]
    assert named_paths("/x/hyp.txt:3: a NUL byte") == ["/x/hyp.txt"]
    assert named_paths("/x/mt.yaml: unknown config key '</s>'") == ["/x/mt.yaml"]
    assert advice_of("no advice") is None


# ------------------------------------------------------------------------------------------------ running one


def run_case(built: Bench, case: Case, pristine: Path) -> list[str]:
    """One near-miss: the call's path at ``case.place`` replaced by the neighbour, judged; an advice in the
    refusal followed and the command run again. The world is given back as it was (from ``pristine``)."""
    call, world = built.calls[case.command], built.world
    ref = built.reference(case.command)
    call.reset(world)
    original = call.argv[case.place]
    path = Path(original.rstrip("/"))
    option, role = role_of(call.argv, case.place)
    scratch = call.case / "near-miss"
    given = str(make_neighbour(path, case.neighbour, world.root, scratch)) + ("/" if original.endswith("/") else "")
    argv = [*call.argv[:case.place], given, *call.argv[case.place + 1:]]
    before = snapshot(*built.roots(call))
    try:
        run = run_forked(argv)
        after = snapshot(*built.roots(call))
        kind = case.neighbour.split(":")[0]
        valid = ALSO_VALID.get((case.command, option, case.neighbour)) or ALSO_VALID.get((case.command, option, kind))
        output = role.startswith("out:")
        problems = verdict(run, before, after, ref, case.command, given, option, output, valid)
        if run.status != 0 and not problems:
            problems += follow_advice(run, argv)
        if output and run.status == 0 and LANDMARKS.get(case.neighbour.partition(":")[2], ("", "-"))[1] == role[4:]:
            problems = []  # a run over an output of its own kind
    finally:
        restore(world.root, pristine)
    if case.id in ARTIFACTS:
        problems = []
    return [f"{case.id} ({option} {given}): {p}" for p in problems]


def follow_advice(run: Run, argv: list[str]) -> list[str]:
    """The refusal's advice run as written, then the command again: the same refusal after it is wrong advice."""
    line = the_line(run)
    advised = advice_of(line, argv)
    if not advised:
        return []
    for advice in advised:
        done = run_forked(advice)
        if done.status == 2 and "the following arguments are required" in done.err:
            return []  # the advice names a command, not a command line: what else it needs is the user's to say
        if done.status != 0:
            return [f"(e) the advice `sate {shlex.join(advice)}` fails: {the_line(done)!r} (after {line!r})"]
    again = run_forked(argv)
    if again.status != 0 and the_line(again) == line:
        return [f"(e) the advice was followed, and the same refusal came: {line!r}"]
    return []


def restore(root: Path, pristine: Path) -> None:
    """``root`` made again what ``pristine`` holds, where a case changed it (what it added removed, what it changed
    or removed copied back)."""
    now, was = snapshot(root), {str(root / os.path.relpath(p, pristine)): e for p, e in snapshot(pristine).items()}
    for path in sorted(set(now) - set(was), reverse=True):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)
    for path, entry in was.items():
        source = pristine / os.path.relpath(path, root)
        current = now.get(path)
        if entry[0] == "dir":
            os.makedirs(path, exist_ok=True)
        elif current is None or current[0] != entry[0] or (entry[0] == "file" and current[1:3] != entry[1:3]) or \
                (entry[0] == "link" and current != entry):
            if os.path.lexists(path) and not os.path.isdir(path):
                os.unlink(path)
            elif os.path.isdir(path):
                shutil.rmtree(path)
            shutil.copy2(source, path, follow_symlinks=False)


@pytest.fixture(scope="session")
def pristine(bench: Bench, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811 - the imported fixture
    """A copy of the world as it is built, to give each case's world back from."""
    copy = tmp_path_factory.mktemp("near-miss-pristine") / "world"
    shutil.copytree(bench.world.root, copy, symlinks=True)
    return copy


SAMPLE, STRIDE, ROTATION = 12, 37, 0  # the committed cases: case (n * STRIDE + ROTATION) % len of the cheap ones


def sample(built: Bench) -> list[Case]:
    """The committed cases: `SAMPLE` of the cheap commands' cases, spread over them by `STRIDE`; a later pass moves
    the sample by raising ROTATION."""
    every = cases(built)
    return [every[(n * STRIDE + ROTATION) % len(every)] for n in range(SAMPLE)]


@pytest.mark.slow
@pytest.mark.parametrize("n", range(SAMPLE))
def test_a_path_argument_given_its_neighbour(bench: Bench, pristine: Path, n: int) -> None:  # noqa: F811
    problems = run_case(bench, sample(bench)[n], pristine)
    assert not problems, "\n".join(problems)


def test_every_path_option_has_a_role() -> None:
    """A path option's neighbours are judged by its role (an output's may take the output elsewhere): every option
    the writes harness's ROLES knows, every call here among the folders harness's."""
    from tests.hostile.test_folders import CORPORA, READ_ONLY  # the folders harness's tables, read only here
    from tests.hostile.test_writes import INVOCATIONS
    assert set(CALLED) == {*INVOCATIONS, *CORPORA, *READ_ONLY}
    assert all(one_line(k) == k for k in LANDMARKS)
