"""Content swaps, generated: every input file given another valid file of another kind under its own name
(twenty-second hostile pass).

The twenty-first pass's wrong results with exit 0 were inputs of the right name or form holding the wrong content: a
MuST-C segment list or a data directory's manifest given as references and scored, text lines in a file named .srt.
No other harness makes them: the near-miss harness (test_neighbours) gives the same-role path of another kind under
its own name, the reads harness (test_reads) damages a file's bytes. Here each is a copy of ANOTHER VALID FILE of
another kind, given where one kind is read:

- arguments (`argument_cases`): each input file of each call (the folders harness's calls, `test_folders.calls`,
  and `EXTRA`: the input options those leave out) given a copy of each kind of file the world holds or a run makes
  (`KINDS`: a manifest, a results.json, a metrics.csv, a config, a pack's sate.yaml, a MuST-C yaml/en/de, a
  delays.jsonl, segments, a vocab.json, a cmvn.json, sizes.json, a crc.json, a checkpoint, a model.pt of another
  task, a SentencePiece model, a feature .ark/.scp, a WAV, a FLAC, an .srt, a translate jsonl ...) renamed to the
  argument's own name;
- members (`member_cases`): each file a call reads inside a folder it is given (a data directory, an experiment, a
  pack, an evaluate run, a corpus: the files its reference run opens, found by the folders harness's audit hook, and
  those a C library reads) replaced in place by a copy of each other kind of the same suffix group (`GROUPS`: json
  for json, yaml for yaml, .pt for .pt, text for text ...).

The invariant is the near-miss harness's `verdict` (on the folders harness's `judge`): exit 0 only with what the
reference run made, or ONE line naming the path given (the member swapped, or the folder holding it) or its option,
naming no path that is not there; nothing the user made changed, no temporary file left. Exit 0 with another result
is class (d), the finds that matter most; `ALSO_VALID` and `MEMBER_VALID` name the swaps that are another right
value (another recording for a recording, another evaluation's results for a results.json, a split's manifest for
another's), and a data output a command made again as it was (`sate features` recomputing a shard whose record is
another's) holds. `LEFT` names the swaps whose outcome is deliberate, with the reason; `NOT_SWAPPED` the input
options no call gives a file through, and why.

The committed run is `SAMPLE` cases of each family spread by `STRIDE` (a later pass moves it by raising `ROTATION`),
the cheap commands' only, all `slow` but the tables' tests, on the folders harness's bench. `argument_cases(bench,
wide=True)` and `member_cases(bench, wide=True)` give every case, the costly commands' too, for a hostile pass's
wider run.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from sate.data.vocab import Vocabulary
from sate.models import build_model, save_model_file
from sate.models.tiny import tiny_config
from tests.hostile.test_folders import (  # noqa: F401 - bench and corpora: the folders harness's fixtures, shared
    Bench,
    Call,
    Reference,
    _folders,
    bench,
    corpora,
    run_forked,
)
from tests.hostile.test_neighbours import CALLED, path_places, restore, role_of, stray_paths, the_line, verdict
from tests.hostile.test_writes import COSTLY, ROLES, snapshot

# ------------------------------------------------------------------------------------------------ the kinds

# Each kind of file a researcher's folders hold: its path in the world (relative to the world's root), or
# "made:NAME" for one a run makes (`make_kinds`). A kind missing in a world is left out.
KINDS: dict[str, str] = {
    "manifest": "data/dev.jsonl", "results": "exp/st/decode_tst-COMMON/results.json",
    "stream-results": "stream/results.json", "delays": "stream/delays.jsonl",
    "metrics": "exp/st/logs/version_0/metrics.csv", "config": "mt.yaml", "config-snapshot": "exp/st/config.yaml",
    "sate-yaml": "pack/sate.yaml", "mustc-yaml": "corpus/en-de/data/dev/txt/dev.yaml",
    "mustc-en": "corpus/en-de/data/dev/txt/dev.en", "mustc-de": "corpus/en-de/data/dev/txt/dev.de",
    "synth-record": "corpus/en-de/synth.json", "vocab": "data/vocab.json", "cmvn": "data/cmvn.json",
    "sizes": "data/fbank/dev/sizes.json", "crc": "data/fbank/dev/00000.crc.json", "plan": "data/fbank/dev/plan.json",
    "stats": "data/fbank/train/00000.stats.npz", "ark": "data/fbank/dev/00000.ark", "scp": "data/fbank/dev.scp",
    "tokens": "data/tokens_src.txt", "spm": "data/spm_src.model", "checkpoint": "exp/st/checkpoints/epoch000.ckpt",
    "model": "st.pt", "mt-model": "made:mt.pt", "asr-model": "made:asr.pt", "wav": "talk.wav",
    "flac": "LibriSpeech/train-clean-5/19/198/19-198-0000.flac", "hyp": "exp/st/decode_tst-COMMON/hyp.txt",
    "srt": "made:talk.srt", "translation-jsonl": "made:talk.jsonl", "segments": "made:segments.jsonl",
    "hub-config": "marian-hub/config.json", "marian-vocab": "marian-hub/vocab.json",
    "safetensors": "marian-hub/model.safetensors",
    "librispeech-trans": "LibriSpeech/train-clean-5/19/198/19-198.trans.txt",
    "kaldi-text": "kaldi/kaldi_train/text", "kaldi-wav-scp": "kaldi/kaldi_train/wav.scp",
    "kaldi-segments": "kaldi/kaldi_train/segments", "alignments": "libri_trans/dev/alignments.meta",
}
# A member is given the kinds of its own group (by suffix; a name with none, a Kaldi list, is text).
GROUPS: dict[str, str] = {
    ".json": "json", ".jsonl": "jsonl", ".yaml": "yaml", ".yml": "yaml", ".pt": "torch", ".ckpt": "torch",
    ".model": "spm", ".spm": "spm", ".txt": "text", ".en": "text", ".de": "text", ".fr": "text", ".csv": "text",
    ".srt": "text", ".meta": "text", "": "text", ".src": "text", ".tgt": "text", ".ark": "ark", ".scp": "scp",
    ".wav": "audio", ".flac": "audio", ".npz": "npz", ".safetensors": "safetensors",
}
# Files a C library opens, which the audit hook does not see: a member of these suffixes counts as read by every call
# given its folder.
UNSEEN = (".model", ".spm", ".wav", ".flac")


def group_of(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix not in GROUPS and len(suffix) > 5:
        suffix = ""  # a name with a dot inside, no suffix (utt2spk.bak is not one either)
    return GROUPS.get(suffix)


def make_kinds(built: Bench, folder: Path) -> dict[str, Path]:
    """Each kind's file: the world's, and those a run makes (an .srt and a jsonl of `sate translate`, segments of
    `sate segment`, model files of the other tasks on the world's vocabularies), made in ``folder``."""
    world = built.world
    folder.mkdir(parents=True, exist_ok=True)
    src, tgt = Vocabulary.load(world.data, "src"), Vocabulary.load(world.data, "tgt")
    runs = {"talk.srt": ["translate", "--model", str(world.pack), "--vad", "energy", str(world.wav), "--format", "srt",
                         "--out", str(folder / "talk.srt")],
            "talk.jsonl": ["translate", "--model", str(world.pack), "--vad", "energy", str(world.wav), "--format",
                           "jsonl", "--out", str(folder / "talk.jsonl")],
            "segments.jsonl": ["segment", str(world.wav), "--vad", "energy", "--out", str(folder / "segments.jsonl")]}
    found = {}
    for name, rel in KINDS.items():
        made = rel.removeprefix("made:")
        if made == rel:
            if (world.root / rel).is_file():
                found[name] = world.root / rel
            continue
        if not (folder / made).exists():
            if made in runs:
                done = run_forked(runs[made])
                assert done.status == 0, done.err[-600:]
            else:
                task = made.removesuffix(".pt")
                torch.manual_seed(0)
                save_model_file(folder / made, build_model(task, tiny_config(task, 16), len(src), len(tgt)),
                                src.tokens, tgt.tokens)
        found[name] = folder / made
    return found


# ------------------------------------------------------------------------------------------------ the calls

# Input file options no call of the folders harness gives, called here on the world: (world root, kind files) -> argv.
EXTRA = {
    "vocab mt-text": lambda w, k: ["vocab", "--data", "DATA_COPY", "--src-size", "40", "--tgt-size", "60",
                                   "--mt-text", str(w.root / "pairs.src"), str(w.root / "pairs.tgt")],
}


# Input options no call here gives a file through, with the reason: (command, option) -> why.
NOT_SWAPPED: dict[tuple[str, str], str] = {
    ("synth", "--ding"): "a sound voiced into a costly corpus: any recording is a ding",
    ("config", "--init-from"): "its value is ROLE=PATH (asr=..., mt=...), not a path alone",
    ("train", "--init-from"): "its value is ROLE=PATH (asr=..., mt=...), not a path alone",
    ("train", "--steps-from"): "a checkpoint to take the step count from: trains (costly) on any right one",
    ("evaluate", "--mt-model"): "a cascade's MT pack: the world holds one pack, an ST one",
    ("prep", "--mustc-root"): "a folder: its files are members", ("prep", "--libri-trans"): "a folder",
    ("prep", "--librispeech"): "a folder", ("prep", "--kaldi-dir"): "a folder", ("vocab", "--marian"): "a folder",
    ("average", "--exp"): "a folder", ("report", "--exp"): "a folder", ("evaluate", "--data"): "a folder",
    ("evaluate", "--model"): "a pack: a folder", ("translate", "--model"): "a pack: a folder",
    ("stream", "--model"): "a pack: a folder", ("pack", "--data"): "a folder",
    ("analyze locality", "--data"): "a folder", ("analyze attention", "--data"): "a folder",
}


def extra_calls(built: Bench) -> None:
    """`EXTRA` added to the bench's calls (once): a data output is a copy of the world's data directory."""
    for name, invocation in EXTRA.items():
        if name in built.calls:
            continue
        case = built.world.root.parent / "swap-calls" / name.replace(" ", "-")
        argv = invocation(built.world, {})
        copy = case / "data" if "DATA_COPY" in argv else None
        built.calls[name] = Call(name, case, [str(copy) if a == "DATA_COPY" else a for a in argv], copy)


def commands(built: Bench, wide: bool) -> list[str]:
    return [c for c in [*CALLED, *EXTRA] if c in built.calls and (wide or c.split()[0] not in COSTLY)]


@dataclass(frozen=True)
class Case:
    """One call with one input file (its place in the command line, or a member of the folder there) given a copy of
    one kind."""

    command: str
    place: int
    kind: str
    member: str = ""  # the member's path relative to the folder at ``place``; "": the argument itself

    @property
    def id(self) -> str:
        return f"{self.command} #{self.place}{'/' + self.member if self.member else ''} <- {self.kind}"


def _same(a: Path, b: Path) -> bool:
    return a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()


def argument_cases(built: Bench, kinds: dict[str, Path], wide: bool = False) -> list[Case]:
    """Every input file argument of every call given each kind whose bytes differ from its own."""
    every = []
    for command in commands(built, wide):
        call = built.calls[command]
        call.reset(built.world)
        for place in path_places(call.argv, built.roots(call)):
            path = Path(call.argv[place])
            if path.is_file() and role_of(call.argv, place)[1] == "in":
                every += [Case(command, place, k) for k, f in kinds.items() if not _same(f, path)]
    return every


def member_cases(built: Bench, kinds: dict[str, Path], wide: bool = False, only: str | None = None) -> list[Case]:
    """Every file a call reads inside a folder it is given (its reference run opened it: the folders harness's audit
    hook), replaced by each kind of its group whose bytes differ; ``only``: one command's."""
    every = []
    for command in commands(built, wide) if only is None else [only]:
        call = built.calls[command]
        read = built.reference(command).read
        call.reset(built.world)
        for place in path_places(call.argv, built.roots(call)):
            folder = Path(call.argv[place].rstrip("/"))
            role = role_of(call.argv, place)[1]
            if not folder.is_dir() or role not in ("in", "out:data"):
                continue
            for member in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
                group = group_of(member)
                if group is None or (str(member) not in read and member.suffix.lower() not in UNSEEN):
                    continue
                every += [Case(command, place, k, str(member.relative_to(folder))) for k, f in kinds.items()
                          if group_of(f) == group and not _same(f, member)]
    return every


# ------------------------------------------------------------------------------------------------ the verdict

# Swaps that are another right value, where exit 0 with another result is right: (command, option, kind) -> why;
# an option "*" holds for every option of the command, a command "*" for every command.
ALSO_VALID: dict[tuple[str, str, str], str] = {
    **{(c, o, k): "another recording (the file's content says its format, whatever its name): its output"
       for c, o in (("segment", "files"), ("translate", "files"), ("stream", "input"), ("analyze attention", "audio"))
       for k in ("wav", "flac")},
    ("latency-plot", "results", "stream-results"): "another evaluation's results.json: drawn as given",
    ("latency-plot", "results", "results"): "another evaluation's results.json: drawn as given",
    **{("score", o, k): "another text of lines (a MuST-C side, a transcript): scored as given"
       for o in ("--hyp", "--ref") for k in ("mustc-en", "mustc-de", "hyp")},
    **{(c, "--model", k): "a model file of another seed or task that the command takes: its result"
       for c in ("pack",) for k in ("mt-model", "asr-model")},
    ("config", "--config", "config-snapshot"): "a config snapshot is a config: shown as given",
    **{("analyze locality", "--model", k): "a model file of another task: its encoders' locality, the task named in "
       "the output" for k in ("mt-model", "asr-model")},
    **{("vocab mt-text", "--mt-text", k): "another text of lines (a MuST-C side, a transcript): MT text as given"
       for k in ("mustc-en", "mustc-de", "hyp")},
}
# Member swaps that are another right value: (the member's name, as fnmatch matches it; the kind) -> why.
MEMBER_VALID: dict[tuple[str, str], str] = {
    **{(f"*.{suffix}", kind): "another recording in a recording's place: its rows and features"
       for suffix in ("wav", "flac") for kind in ("wav", "flac")},
    ("*.jsonl", "manifest"): "another split's manifest in a manifest's place: its rows",
    ("results.json", "stream-results"): "another evaluation's results.json: tabled as given",
    **{(name, kind): "lines of text in a corpus's text: which sentences the user's corpus holds is the user's (a "
       "file of as many lines is text whatever it says)"
       for name in ("*.en", "*.de", "*.fr", "*.trans.txt") for kind in ("mustc-en", "mustc-de", "hyp",
                                                                          "librispeech-trans")},
}
# Swaps whose outcome is deliberate though the verdict flags it: case id -> why.
LEFT: dict[str, str] = {}


def option_of(argv: list[str], place: int) -> str:
    """The option a path of the command line is a value of (the second file of --mt-text SRC TGT too)."""
    option, _ = role_of(argv, place)
    if not option.startswith("-") and argv[place - 2].startswith("--") and not argv[place - 1].startswith("-") and \
            ROLES.get(argv[0], {}).get(argv[place - 2]) == "in":
        return argv[place - 2]
    return option


def valid_for(case: Case, option: str) -> str | None:
    if case.member:
        return next((why for (name, kind), why in MEMBER_VALID.items()
                     if kind == case.kind and fnmatch.fnmatch(Path(case.member).name, name)), None)
    for key in ((case.command, option, case.kind), (case.command, "*", case.kind), ("*", option, case.kind)):
        if key in ALSO_VALID:
            return ALSO_VALID[key]
    return None


def run_case(built: Bench, kinds: dict[str, Path], case: Case, pristine: Path) -> list[str]:
    """One swap: a copy of the kind under the argument's name (in a scratch folder), or in the member's place; judged
    by the near-miss harness's verdict. The world is given back as it was (from ``pristine``)."""
    call, world = built.calls[case.command], built.world
    ref = built.reference(case.command)
    call.reset(world)
    original = call.argv[case.place]
    path = Path(original.rstrip("/"))
    option = option_of(call.argv, case.place)
    argv = list(call.argv)
    if case.member:
        given = path / case.member
        shutil.copyfile(kinds[case.kind], given)  # a new file's times, as an edit or a copy gives them
        names = [str(given), str(path)]
    else:
        scratch = call.case / "swap"
        scratch.mkdir(parents=True, exist_ok=True)
        given = scratch / path.name
        shutil.copyfile(kinds[case.kind], given)
        argv[case.place] = str(given)
        names = [str(given)]
    before = snapshot(*built.roots(call))
    try:
        run = run_forked(argv)
        after = snapshot(*built.roots(call))
        repaired = run.status == 0 and case.member and role_of(call.argv, case.place)[1] == "out:data" and \
            _as_built(path, world.data)
        valid = valid_for(case, option) or ("the command's own stored file, made again" if repaired else None)
        problems = verdict(run, before, after, ref, case.command, names[0], option, False, valid)
        if repaired:  # its own stored files, the one swapped too, made again as they were: `_as_built`
            problems = [p for p in problems if not p.startswith("(a) exit 0")]
        elif valid and call.data_copy is not None:  # a data output's own files (its vocabularies, features) made
            # from another right value; the file given stays the user's
            problems = [p for p in problems if not p.startswith(f"(a) exit 0, but {call.data_copy}/") or
                        p.startswith(f"(a) exit 0, but {given} was")]
        if run.status != 0 and len(names) > 1 and any(p.startswith("(e) the line names none") for p in problems):
            problems = verdict(run, before, after, ref, case.command, names[1], option, False)  # a member: the
            # folder holding it named is the path given too
    finally:
        restore(world.root, pristine)
    if case.id in LEFT:
        problems = []
    problems = [p for p in problems if not _missing_as_said(p, the_line(run))]
    return [f"{case.id} ({option} {given}): {p}" for p in problems]


def _missing_as_said(problem: str, line: str) -> bool:
    """Whether ``problem`` is a path the line names that is not there, where the line says so: the swapped file names
    a file that is missing (another split's segment list names its own talks' audio), and the line names that file as
    missing."""
    if not problem.startswith("(e) the line names paths that are not there"):
        return False
    return all(re.search(re.escape(path) + r": (audio )?file is missing", line) for path in stray_paths(line, ""))


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}


def _as_built(copy: Path, data: Path) -> bool:
    """Whether a data output (a copy of the world's data directory, one of its files swapped) holds, after a run
    that ended 0, every file of the world's with the world's bytes: its command made the swapped file again
    (`sate features` recomputes a shard whose record or index is another's)."""
    made = _digests(copy)
    return all(made.get(name) == digest for name, digest in _digests(data).items())


@pytest.fixture(scope="session")
def kinds(bench: Bench, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:  # noqa: F811
    extra_calls(bench)
    return make_kinds(bench, tmp_path_factory.mktemp("swap-kinds"))


@pytest.fixture(scope="session")
def swap_pristine(bench: Bench, kinds: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    """A copy of the world as it is built, to give each case's world back from."""
    copy = tmp_path_factory.mktemp("swap-pristine") / "world"
    shutil.copytree(bench.world.root, copy, symlinks=True)
    return copy


SAMPLE, STRIDE, ROTATION = 8, 41, 0  # the committed cases of each family: case (n * STRIDE + ROTATION) % len


def sample(every: list[Case]) -> list[Case]:
    return [every[(n * STRIDE + ROTATION) % len(every)] for n in range(SAMPLE)] if every else []


@pytest.mark.slow
@pytest.mark.parametrize("n", range(SAMPLE))
def test_an_input_file_given_a_file_of_another_kind(bench: Bench, kinds: dict[str, Path], swap_pristine: Path,  # noqa: F811
                                                    n: int) -> None:
    problems = run_case(bench, kinds, sample(argument_cases(bench, kinds))[n], swap_pristine)
    assert not problems, "\n".join(problems)


def member_sample(built: Bench, kinds: dict[str, Path], n: int) -> Case | None:
    """The committed member case ``n``: a command by rotation, then one of its cases (a command's cases need its
    reference run: only the sampled commands' are made)."""
    called = [c for c in commands(built, wide=False) if c != "vocab mt-text"]
    command = called[(n * 5 + ROTATION) % len(called)]
    every = member_cases(built, kinds, only=command)
    return every[(n * STRIDE + ROTATION) % len(every)] if every else None


@pytest.mark.slow
@pytest.mark.parametrize("n", range(SAMPLE))
def test_a_file_in_an_input_folder_replaced_by_one_of_another_kind(bench: Bench, kinds: dict[str, Path],  # noqa: F811
                                                                   swap_pristine: Path, n: int) -> None:
    case = member_sample(bench, kinds, n)
    problems = [] if case is None else run_case(bench, kinds, case, swap_pristine)
    assert not problems, "\n".join(problems)


def test_the_tables_name_known_kinds() -> None:
    """Each kind's file belongs to a group a member can be swapped within, and each ALSO_VALID row to a call and a
    kind the tables know."""
    assert all(group_of(Path(rel.removeprefix("made:"))) for rel in KINDS.values()), \
        [r for r in KINDS.values() if not group_of(Path(r.removeprefix("made:")))]
    known = {*CALLED, *EXTRA, "*"}
    assert all(c in known and k in KINDS for c, _, k in ALSO_VALID), [k for k in ALSO_VALID if k[0] not in known]
    assert all(o == "*" or o in ROLES[c.split()[0] if c in EXTRA else c] for c, o, _ in ALSO_VALID if c != "*")


def test_the_swap_checks_flag_what_is_wrong(tmp_path: Path) -> None:
    """A check that cannot fail checks nothing: a data output made again only where it holds the world's bytes, a
    missing path excused only where the line says it is missing, another right value only for its own members."""
    data, copy = tmp_path / "data", tmp_path / "copy"
    (data / "fbank").mkdir(parents=True)
    (data / "fbank" / "plan.json").write_text('{"shards": 1}\n')
    shutil.copytree(data, copy)
    assert _as_built(copy, data)
    (copy / "fbank" / "plan.json").write_text('{"<unk>": 0}\n')
    assert not _as_built(copy, data)
    gone = tmp_path / "wav" / "ted_2.wav"
    (tmp_path / "dev.yaml").write_text("- {duration: 1.0, offset: 0.0, wav: ted_2.wav}\n")
    said = f"sate prep: error: {tmp_path}/dev.yaml:1: {gone}: audio file is missing"
    problem = f"(e) the line names paths that are not there: ['{gone}']"
    assert _missing_as_said(problem, said)
    assert not _missing_as_said(problem, f"sate prep: error: {gone}/checkpoints holds no checkpoint")
    assert not _missing_as_said("(d) exit 0, but not what the reference run made", said)
    assert valid_for(Case("prep librispeech", 2, "wav", "19/198/19-198-0000.flac"), "--librispeech")
    assert not valid_for(Case("report", 2, "vocab", "st/decode_tst-COMMON/results.json"), "--exp")
    assert valid_for(Case("score", 2, "mustc-de"), "--hyp") and not valid_for(Case("score", 2, "delays"), "--hyp")


@pytest.mark.slow
def test_every_input_option_is_swapped(bench: Bench, kinds: dict[str, Path]) -> None:  # noqa: F811
    """An input option added later gives its file to these cases once a call gives it one (the folders harness's
    calls or `EXTRA`), or `NOT_SWAPPED` says why not."""
    swapped = {(c.command.split()[0] if c.command in EXTRA else c.command,
                option_of(bench.calls[c.command].argv, c.place)) for c in argument_cases(bench, kinds, wide=True)}
    inputs = {(c, o) for c, roles in ROLES.items() for o, r in roles.items() if r == "in"}
    assert inputs - swapped - set(NOT_SWAPPED) == set(), "input options neither swapped nor in NOT_SWAPPED"
    assert not swapped & set(NOT_SWAPPED), "NOT_SWAPPED names options that are swapped"
