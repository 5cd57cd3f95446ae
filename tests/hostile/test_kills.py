"""Every long command killed in the middle of its work, and two runs on one folder at once (fifteenth hostile pass).

The cases are generated from the code: `COMMANDS` (a command missing from `RUNS` fails a test) and the moments
each command's own run goes through. A reference run of each command counts its moments, as a hook in the
process sees them: a file written and flushed to disk (``fsync``, the end of every atomic write's temporary
file), a file renamed into place (``replace``), a line on the standard output (``stdout``). A kill case runs the
command again and signals it at one of those moments, as Ctrl-C (SIGINT to its process group), ``kill``
(SIGTERM) or the out-of-memory killer (SIGKILL) would, rotated over the commands by `ROTATION_SEED`; a new
write, rename or output line is a new case without anyone editing this file.

After each kill `outcome_problems` checks: the exit status of the signal, and sate's one line for SIGINT/SIGTERM;
no traceback; every file the command does not write byte-identical (links not retargeted); each file it writes
either as it was or as the whole run writes it (and, for a set written together, all of one or the other while
its record is there); no file that is neither (a temporary file, a partial output, a lock); no process of the run
left. Then the same command again must succeed (or resume) and leave exactly what an uninterrupted run leaves.
`PAIRS` run two commands on one folder at once (`check_pair`).

The committed set is one kill per command (its first moment kind in `MOMENTS`' order, at its middle occurrence)
and keeps the module near a minute; a wider run during a hostile pass imports `kills(..., every=True)` or its own
spread of moments, `check_kill` and the fixtures, and counts. The commands run in processes forked from one
helper process that has imported sate and torch once (`Zygote`): a fresh `python -m sate.cli` costs some 5 s of
imports, a fork some milliseconds.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import soundfile as sf

from sate import layout
from sate.cli import COMMANDS, signals_as_interrupts
from sate.files import lock_holder, replace_together

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ROTATION_SEED = 15  # which signal each command gets in the committed set: (position + seed) % 3
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
ENDING = {signal.SIGINT: (130, "interrupted"), signal.SIGTERM: (143, "terminated")}
MOMENTS = ("replace", "fsync", "stdout")  # in the order a command's committed moment is chosen
HANG_S = 60.0  # a run that has not ended by then hangs


# ------------------------------------------------------------------------------- how to run each long command

@dataclass(frozen=True)
class Run:
    """A tiny invocation in the workspace `workspace` builds, and what of its outputs a second run may change."""

    argv: tuple[str, ...]
    volatile: tuple[str, ...] = ()  # globs of outputs whose bytes differ run to run (times, checkpoints)
    together: bool = False  # its outputs are one set: after a kill, all as they were or all new
    record: str | None = None  # the file that says a set is whole: a set may be mixed while it is missing
    stdout: bool = False  # its result is the standard output, compared with the reference's after the rerun


RUNS: dict[str, Run] = {
    "synth": Run(("synth", "--out", "newcorpus", "--train-size", "2", "--text-size", "2", "--dev-size", "1",
                  "--test-size", "1", "--jobs", "2")),
    "prep": Run(("prep", "--mustc-root", "corpus", "--out", "prepped"), together=True),
    "features": Run(("features", "--data", "fresh", "--jobs", "1")),  # workers: the wider run, test_os_errors
    "vocab": Run(("vocab", "--data", "data", "--src-size", "40", "--tgt-size", "56"), together=True,
                 record="data/vocab.json"),
    "train": Run(("train", "--config", "st1.yaml", "--exp", "exp2"), volatile=("exp2/*",)),
    "average": Run(("average", "--exp", "exp", "--last", "1")),
    "pack": Run(("pack", "--model", "exp/model.pt", "--data", "data", "--out", "pack",
                 "--decode", "beam=2,max_len_ratio=0.05")),
    "segment": Run(("segment", "talk.wav", "--out", "seg.jsonl", "--vad", "energy")),
    "translate": Run(("translate", "talk.wav", "--model", "pack", "--out", "hyp.txt", "--vad", "energy")),
    "stream": Run(("stream", "talk.wav", "--model", "pack", "--fast", "--vad", "energy"), stdout=True),
    "evaluate": Run(("evaluate", "--model", "pack", "--data", "data", "--split", "dev", "--out", "sys/st/decode_dev"),
                    volatile=("sys/st/decode_dev/results.json",), together=True,
                    record="sys/st/decode_dev/results.json"),
    "score": Run(("score", "--hyp", "hyp.txt", "--ref", "ref.txt"), stdout=True),
    "report": Run(("report", "--exp", "sys", "--splits", "tst-COMMON"), together=True),
    "latency-plot": Run(("latency-plot", "lat1/results.json", "lat2/results.json", "--out", "plot.png")),
    "analyze": Run(("analyze", "locality", "--model", "pack", "--data", "data", "--split", "dev", "--max-utts", "1",
                    "--out", "loc"), together=True),
}
# Commands with no work to stop in the middle, and why.
NOT_LONG: dict[str, str] = {
    "config": "prints a config at once and writes no file",
    "fetch-whisper": "needs the network (PyPI) or a cached wheel, which this machine has not; it writes through one "
                     "os.replace, covered by the other commands' replace moments",
}
# Pairs of runs on one folder at once: each must succeed or be refused in one line, and together leave what the
# runs leave one after the other.
PAIRS: list[tuple[str, str]] = [("features", "features"), ("vocab", "vocab"), ("features", "vocab"),
                                ("train", "average"), ("evaluate", "report"), ("translate", "translate"),
                                ("prep", "prep")]
# What a pair runs where it differs from RUNS (features+vocab on one fresh data dir, train into the experiment
# that average reads, evaluate into the system that report reads).
PAIR_RUNS: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {
    ("features", "features"): (("features", "--data", "fresh", "--jobs", "1"),) * 2,
    ("features", "vocab"): (("features", "--data", "fresh", "--jobs", "1"),
                            ("vocab", "--data", "fresh", "--src-size", "40", "--tgt-size", "56")),
    ("train", "average"): (("train", "--config", "st3.yaml", "--exp", "exp"), RUNS["average"].argv),
    ("evaluate", "report"): (("evaluate", "--model", "pack", "--data", "data", "--split", "tst-COMMON", "--out",
                              "sys/st/decode_tst-COMMON"), RUNS["report"].argv),
}

# Problems a kill case may show that are known and deliberately left, by (problem, signal, command or "*").
KNOWN_LEFT: dict[tuple[str, int, str], str] = {
    ("temporary", signal.SIGKILL, "*"): "SIGKILL during an atomic write leaves .NAME.XXXX.tmp: the next write of "
                                        "that name removes it once it is a minute old and unlocked "
                                        "(files._sweep_abandoned, tests/test_files.py), and a resume of `sate train` "
                                        "removes its checkpoints' at once (files.remove_abandoned)",
    ("lock", signal.SIGKILL, "*"): "a lock file left by SIGKILL is not held (the kernel drops a flock with its "
                                   "holder) and does not block the next run (files.exclusive)",
    ("journal", signal.SIGKILL, "*"): "SIGKILL just before a set's first rename or after its last leaves its "
                                      "journal over a whole set: readers refuse it until the command runs again "
                                      "(files.check_set_whole), which the rerun here does",
}


# ------------------------------------------------------------------------------- the process that forks the runs

ZYGOTE = r"""
import atexit, json, os, select, signal, sys, traceback
import torch, lightning, sentencepiece, sacrebleu, soundfile  # the imports every run would pay for
import sate.cli
for name in sate.cli.COMMANDS:
    pass

def hooked(child, hook, counts):
    def event(kind):
        if os.getpid() != child:
            return
        counts[kind] = counts.get(kind, 0) + 1
        if hook and hook["kind"] == kind and counts[kind] == hook["n"]:
            signum = hook["signal"]
            if signum == signal.SIGINT:
                os.killpg(0, signum)  # Ctrl-C: the terminal signals the whole foreground group
            else:
                os.kill(child, signum)

    fsync, replace = os.fsync, os.replace

    def counted_fsync(*a, **k):
        event("fsync")
        return fsync(*a, **k)

    def counted_replace(*a, **k):
        event("replace")
        return replace(*a, **k)

    os.fsync, os.replace = counted_fsync, counted_replace

    class Lines:
        def __init__(self, stream):
            self._stream = stream
        def write(self, text):
            done = self._stream.write(text)
            if "\n" in text:
                event("stdout")
            return done
        def __getattr__(self, name):
            return getattr(self._stream, name)

    sys.stdout = Lines(sys.stdout)


def run(req):
    os.setsid()
    for fd, name, flags in ((0, os.devnull, os.O_RDONLY), (1, req["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, req["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(name, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(req["cwd"])
    counts = {}
    hooked(os.getpid(), req["hook"], counts)
    try:
        status = sate.cli.main(req["argv"])
    except SystemExit as err:
        status = err.code if isinstance(err.code, int) else 1
    except BaseException:
        traceback.print_exc()
        status = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        with open(req["counts"], "w") as f:
            json.dump(counts, f)
        atexit._run_exitfuncs()
    finally:
        os._exit(status)


def say(line):
    os.write(1, (json.dumps(line) + "\n").encode())

pending, running = b"", {}
while True:
    ready, _, _ = select.select([0], [], [], 0.02)
    if ready:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            req = json.loads(line)
            sys.stdout.flush(); sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                run(req)
            running[pid] = req["id"]
            say({"id": req["id"], "pid": pid})
    while running:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            break
        say({"id": running.pop(pid), "status": os.waitstatus_to_exitcode(status)})
"""


@dataclass
class Ended:
    """How one run ended: its exit status (-N: killed by signal N), standard output and error, moments counted."""

    status: int
    out: bytes
    err: str
    counts: dict[str, int]
    pid: int
    hung: bool = False
    orphans: list[str] = field(default_factory=list)


def _session(pid: int) -> list[str]:
    """The processes still alive in the session ``pid`` leads (a run's workers), as pid and command line."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_bytes().rpartition(b")")[2].split()
            if int(fields[3]) == pid and fields[0] not in (b"Z", b"X"):
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{proc.name} {command[:120]}")
        except (OSError, IndexError, ValueError):
            continue
    return found


class Zygote:
    """One Python process that has imported sate, torch and Lightning, forking a run per request."""

    def __init__(self, scratch: Path) -> None:
        def from_a_terminal() -> None:  # a test runner may hand SIGINT down ignored
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGHUP, signal.SIG_DFL)

        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        self._proc = subprocess.Popen([sys.executable, "-c", ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      env=env, start_new_session=True, preexec_fn=from_a_terminal)
        self._scratch, self._next, self._buffer = scratch, 0, b""
        self._said: dict[int, dict] = {}

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def _read(self, deadline: float) -> bool:
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return False
        chunk = os.read(fd, 65536)
        assert chunk, "the zygote has ended"
        self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            said = json.loads(line)
            self._said.setdefault(said["id"], {}).update(said)
        return True

    def start(self, argv: list[str] | tuple[str, ...], cwd: Path, hook: dict | None = None) -> int:
        """Start ``sate ARGV`` in ``cwd``; ``hook``: {"kind", "n", "signal"}, the moment to signal it at."""
        assert self._proc.stdin is not None
        self._next += 1
        key = self._next
        files = {name: str(self._scratch / f"{key}.{name}") for name in ("out", "err", "counts")}
        request = {"id": key, "argv": list(argv), "cwd": str(cwd), "hook": hook, **files}
        self._proc.stdin.write((json.dumps(request) + "\n").encode())
        self._proc.stdin.flush()
        deadline = time.monotonic() + 30
        while "pid" not in self._said.get(key, {}):
            assert self._read(deadline), "the zygote did not fork"
        return key

    def wait(self, key: int) -> Ended:
        """The end of run ``key``: killed with its session after HANG_S (then ``hung``); its orphans listed."""
        pid, hung = self._said[key]["pid"], False
        deadline = time.monotonic() + HANG_S
        while "status" not in self._said[key]:
            if not self._read(deadline):
                hung = True
                os.killpg(pid, signal.SIGKILL)
                deadline = time.monotonic() + 30
        settle = time.monotonic() + 10  # workers end with their parent (PR_SET_PDEATHSIG), the resource tracker
        while _session(pid) and time.monotonic() < settle:  # once its pipe closes
            time.sleep(0.05)
        orphans = _session(pid)
        for orphan in orphans:
            os.kill(int(orphan.split()[0]), signal.SIGKILL)
        scratch = self._scratch / str(key)
        counts = json.loads(Path(f"{scratch}.counts").read_text() or "{}") if Path(f"{scratch}.counts").exists() \
            else {}
        return Ended(self._said[key]["status"], Path(f"{scratch}.out").read_bytes(),
                     Path(f"{scratch}.err").read_text(errors="replace"), counts, pid, hung, orphans)

    def run(self, argv: list[str] | tuple[str, ...], cwd: Path, hook: dict | None = None) -> Ended:
        return self.wait(self.start(argv, cwd, hook))


# ------------------------------------------------------------------------------------------- the invariants

Entry = tuple[str, str]  # ("file", sha1) / ("link", target) / ("dir", "") / ("other", kind)


def snapshot(root: Path) -> dict[str, Entry]:
    """Everything under ``root`` by its relative path: a file by its bytes' hash, a link by its target."""
    found: dict[str, Entry] = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(top) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                found[rel] = ("dir", "")
            elif path.is_file():
                found[rel] = ("file", hashlib.sha1(path.read_bytes()).hexdigest())
            else:
                found[rel] = ("other", oct(path.lstat().st_mode))
    return found


def _matches(path: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(path, g) or path == g.rstrip("/*") for g in globs)


def outcome_problems(command: str, signum: int, ended: Ended, old: dict[str, Entry], new: dict[str, Entry],
                     now: dict[str, Entry], run: Run) -> list[tuple[str, str]]:
    """What is wrong with run ``command`` killed with ``signum``: (problem, detail) pairs, empty when it held.
    ``old``: the workspace before; ``new``: after an uninterrupted run; ``now``: after the killed one."""
    problems: list[tuple[str, str]] = []
    if ended.hung:
        problems.append(("hang", f"still running after {HANG_S:.0f} s"))
    expected = ENDING[signum][0] if signum in ENDING else -signum
    if ended.status != expected:
        problems.append(("status", f"exit status {ended.status}, not {expected}"))
    if "Traceback (most recent call last)" in ended.err:
        problems.append(("traceback", ended.err[-600:]))
    if signum in ENDING:
        said = [line for line in ended.err.splitlines() if line.startswith("sate ")]
        if said != [f"sate {command}: {ENDING[signum][1]}"]:
            problems.append(("message", f"sate's lines {said}, not one 'sate {command}: {ENDING[signum][1]}'"))
    if ended.orphans:
        problems.append(("orphan", "; ".join(ended.orphans)))
    problems += file_problems(old, new, now, run)
    return problems


def file_problems(old: dict[str, Entry], new: dict[str, Entry], now: dict[str, Entry],
                  run: Run) -> list[tuple[str, str]]:
    """The workspace ``now`` against before (``old``) and after an uninterrupted run (``new``): user files intact,
    each output old or new (a set all one or all the other), nothing else left."""
    problems: list[tuple[str, str]] = []
    at_old, at_new = [], []
    for path in sorted(set(old) | set(new) | set(now)):
        before, after, found = old.get(path), new.get(path), now.get(path)
        if before is None and after is None:
            if Path(path).name == layout.REPLACING:
                continue  # a set's journal: judged below
            if not _matches(path, run.volatile):
                kind = "lock" if path.endswith(".lock") else "temporary" if ".tmp" in path else "leftover"
                problems.append((kind, path))
        elif before == after:
            if found != before:
                problems.append(("user file", f"{path}: {before} became {found}"))
        elif path == run.record and found is None:  # removed before the renames: the set is made again
            continue
        elif _matches(path, run.volatile):
            if found is not None and after is not None and found[0] != after[0]:
                problems.append(("output", f"{path}: {found[0]} where a run leaves a {after[0]}"))
        elif found == before:
            at_old.append(path)
        elif found == after:
            at_new.append(path)
        else:
            problems.append(("output", f"{path}: {found}, neither as it was ({before}) nor as a run leaves it "
                             f"({after})"))
    mixed = [p for p in at_old if old.get(p) is not None or new.get(p, ("dir",))[0] != "dir"]
    whole = run.record is None or run.record in now  # a set whose record is gone is redone, never read
    # a set killed among its renames (SIGKILL) is listed in its folder's journal, and its readers refuse it
    journals = [path for path in now if Path(path).name == layout.REPLACING]
    if run.together and whole and mixed and [p for p in at_new if new[p][0] != "dir"] and not journals:
        problems.append(("mix", f"old {mixed[:3]} beside new {at_new[:3]}"))
    elif journals and not (mixed and at_new):
        problems.append(("journal", f"{journals[0]} left over a set that is whole"))
    return problems


def unknown(problems: list[tuple[str, str]], case: Kill, root: Path) -> list[tuple[str, str]]:
    """``problems`` less those `KNOWN_LEFT` lists (a SIGKILL's lock file counts only if still held)."""
    left = []
    for kind, detail in problems:
        known = {(kind, case.signum, case.command), (kind, case.signum, "*")} & set(KNOWN_LEFT)
        if known and (kind != "lock" or lock_holder(root / detail) is None):
            continue
        left.append((kind, detail))
    return left


def test_the_checker_flags_what_it_is_for() -> None:
    """A changed user file, a retargeted link, a traceback, two lines, a leftover temporary file and lock, an
    output half old half new, a wrong status, an orphan: each is flagged (a checker that cannot fail is no check)."""
    run = Run(("x",), together=True)
    old = {"notes.txt": ("file", "a"), "link": ("link", "notes.txt"), "out/a": ("file", "1"), "out/b": ("file", "2")}
    new = {**old, "out/a": ("file", "3"), "out/b": ("file", "4")}
    now = {**old, "notes.txt": ("file", "z"), "link": ("link", "elsewhere"), "out/a": ("file", "3"),
           "out/.a.x1.tmp": ("file", "5"), "out/x.lock": ("file", "")}
    ended = Ended(1, b"", "Traceback (most recent call last):\nsate x: interrupted\nsate x: interrupted\n", {}, 1,
                  orphans=["7 python worker"])
    kinds = {kind for kind, _ in outcome_problems("x", signal.SIGINT, ended, old, new, now, run)}
    assert kinds == {"status", "traceback", "message", "orphan", "user file", "temporary", "lock", "mix"}
    assert outcome_problems("x", signal.SIGTERM, Ended(143, b"", "sate x: terminated\n", {}, 1), old, new, new,
                            run) == []
    journal = ("file", "listing out/a and out/b")  # the mix of a set killed among its renames, listed: refused
    mixed = {**old, "out/a": ("file", "3"), f"out/{layout.REPLACING}": journal}
    assert file_problems(old, new, mixed, run) == []
    assert file_problems(old, new, {**new, f"out/{layout.REPLACING}": journal}, run) == [
        ("journal", f"out/{layout.REPLACING} left over a set that is whole")]


def test_every_command_is_known_to_the_harness() -> None:
    """A command added to sate.cli needs a line in RUNS (how to run it on tiny inputs) or NOT_LONG (why not)."""
    assert set(RUNS).isdisjoint(NOT_LONG)
    assert sorted(COMMANDS) == sorted([*RUNS, *NOT_LONG])


# ------------------------------------------------------------------------------------------ the workspace

def _write_config(path: Path, data: Path, epochs: int) -> None:
    from tests.train.conftest import write_config  # the suite's tiny training config

    written = write_config(path.parent, "st", data, trainer={"max_epochs": epochs, "keep_last": 2})
    shutil.copyfile(written, path)


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    z = Zygote(tmp_path_factory.mktemp("kills-io"))
    yield z
    z.close()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, prepared_data: Path, synth_corpus: Path,
              zygote: Zygote) -> Path:
    """What RUNS reads: data (the fixture's, vocabularies 48/64), fresh (its manifests alone), corpus, an
    experiment trained 2 epochs and averaged (exp/model.pt), a pack, a talk, evaluate runs for report and
    latency-plot, and old outputs the runs replace (hyp.txt, seg.jsonl)."""
    ws = tmp_path_factory.mktemp("kills-ws")
    shutil.copytree(prepared_data, ws / "data")
    (ws / "fresh").mkdir()
    for manifest in prepared_data.glob("*.jsonl"):
        shutil.copyfile(manifest, ws / "fresh" / manifest.name)
    shutil.copytree(synth_corpus, ws / "corpus")
    shutil.copyfile(sorted((synth_corpus / "en-de/data/tst-COMMON/wav").glob("*.wav"))[0], ws / "talk.wav")
    audio, rate = sf.read(ws / "talk.wav")
    sf.write(ws / "talk.wav", audio[: rate * 4], rate)  # four seconds keep decoding short
    for epochs in (1, 3, 2):  # st.yaml last: write_config writes that name
        _write_config(ws / f"st{epochs}.yaml", ws / "data", epochs)
    (ws / "hyp.txt").write_text("an old hypothesis\n")
    (ws / "ref.txt").write_text("ein alter Satz\n")
    (ws / "seg.jsonl").write_text('{"old": true}\n')
    for argv in (["train", "--config", "st.yaml", "--exp", "exp"], ["average", "--exp", "exp", "--last", "2"],
                 ["pack", "--model", "exp/model.pt", "--data", "data", "--out", "pack", "--decode",
                  "beam=1,max_len_ratio=0.05"],
                 ["evaluate", "--model", "pack", "--data", "data", "--split", "tst-COMMON", "--out",
                  "sys/st/decode_tst-COMMON"],
                 ["evaluate", "--model", "pack", "--data", "data", "--split", "dev", "--out", "lat1", "--stream",
                  "wait-k"]):
        ended = zygote.run(argv, ws)
        assert ended.status == 0, (argv, ended.err[-2000:])
    results = json.loads((ws / "lat1/results.json").read_text())
    for key in results["stream"]["latency"]:  # an untrained model writes nothing: latencies null, which the plot
        results["stream"]["latency"][key] = 1.0  # refuses
    (ws / "lat1/results.json").write_text(json.dumps(results))
    (ws / "lat2").mkdir()
    results["stream"]["latency"] = {key: 2.0 for key in results["stream"]["latency"]}
    (ws / "lat2/results.json").write_text(json.dumps(results))
    return ws


@dataclass
class Reference:
    """A command's uninterrupted run: the workspace after it, its output and its moments."""

    new: dict[str, Entry]
    ended: Ended
    where: Path  # where it ran, and each of its kill cases runs (absolute names in outputs stay the same)


@pytest.fixture(scope="module")
def reference(workspace: Path, zygote: Zygote,
              tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Reference]:
    made: dict[str, Reference] = {}

    def get(command: str) -> Reference:
        if command not in made:
            ws = tmp_path_factory.mktemp(f"run-{command}")
            shutil.copytree(workspace, ws, dirs_exist_ok=True)
            ended = zygote.run(RUNS[command].argv, ws)
            assert ended.status == 0 and "Traceback" not in ended.err, ended.err[-2000:]
            made[command] = Reference(snapshot(ws), ended, ws)
        return made[command]

    return get


# ----------------------------------------------------------------------------------------------- the cases

@dataclass(frozen=True)
class Kill:
    command: str
    kind: str
    n: int
    signum: int

    def __str__(self) -> str:
        return f"{self.command} {signal.Signals(self.signum).name} at {self.kind} {self.n}"


def committed_signal(command: str, seed: int = ROTATION_SEED) -> int:
    """The committed set's signal for ``command``: SIGINT, SIGTERM and SIGKILL in turn over the commands."""
    return SIGNALS[(sorted(RUNS).index(command) + seed) % len(SIGNALS)]


def kills(command: str, counts: dict[str, int], every: bool = False) -> list[Kill]:
    """The moments to kill ``command`` at, from its reference run's ``counts``: the committed set takes the first
    moment kind it has (MOMENTS' order), at its middle occurrence, with the rotation's signal; ``every``: each
    occurrence of each kind with each signal (the wider run)."""
    if every:
        return [Kill(command, kind, n, signum) for kind in MOMENTS for n in range(1, counts.get(kind, 0) + 1)
                for signum in SIGNALS]
    for kind in MOMENTS:
        if counts.get(kind):
            return [Kill(command, kind, (counts[kind] + 1) // 2, committed_signal(command))]
    return []


def check_kill(case: Kill, workspace: Path, ws: Path, zygote: Zygote, ref: Reference) -> list[tuple[str, str]]:
    """Run ``case`` in a copy ``ws`` of the workspace, then the command again: the problems found, known ones out."""
    run = RUNS[case.command]
    shutil.rmtree(ws)
    shutil.copytree(workspace, ws)
    old = snapshot(ws)
    ended = zygote.run(run.argv, ws, {"kind": case.kind, "n": case.n, "signal": case.signum})
    problems = unknown(outcome_problems(case.command, case.signum, ended, old, ref.new, snapshot(ws), run),
                       case, ws)
    again = zygote.run(run.argv, ws)
    if again.status != 0 or "Traceback" in again.err:
        problems.append(("rerun", f"status {again.status}: {again.err[-600:]}"))
    after = file_problems(old, ref.new, snapshot(ws), run)  # a journal left is known only until the rerun
    problems += [(f"after the rerun: {kind}", detail)
                 for kind, detail in [*unknown([p for p in after if p[0] != "journal"], case, ws),
                                      *(p for p in after if p[0] == "journal")]]
    if run.stdout and again.out != ref.ended.out:
        problems.append(("after the rerun: output", f"{again.out[:200]!r} != {ref.ended.out[:200]!r}"))
    return problems


@pytest.mark.parametrize("command", sorted(RUNS))
def test_a_kill_in_the_middle_leaves_old_or_new_and_the_next_run_succeeds(
        command: str, workspace: Path, zygote: Zygote, reference: Callable[[str], Reference]) -> None:
    ref = reference(command)
    cases = kills(command, ref.ended.counts)
    assert cases, f"{command} went through none of the moments {MOMENTS}: {ref.ended.counts}"
    for case in cases:
        problems = check_kill(case, workspace, ref.where, zygote, ref)
        assert not problems, f"{case}:\n" + "\n".join(f"{kind}: {detail}" for kind, detail in problems)


def test_a_kill_among_the_renames_of_a_set_ends_the_command_once_the_set_is_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM (or Ctrl-C) while `replace_together` renames a set into place (a corpus's manifests, an evaluation's
    files) ends the command once the whole set is in place: `sate prep` over a data directory left the new
    train.jsonl beside the old dev.jsonl, with no record to say so (fifteenth hostile pass)."""
    names = [tmp_path / f"{split}.jsonl" for split in ("train", "dev", "tst")]
    for path in names:
        path.write_text("old\n")
    renamed: list[str] = []

    def killed_among(src: str, dst: str) -> None:
        if Path(dst).name != layout.REPLACING:  # the set's journal is written before its first rename
            renamed.append(dst)
            if len(renamed) == 1:
                os.kill(os.getpid(), signal.SIGTERM)
        os.rename(src, dst)

    monkeypatch.setattr(os, "replace", killed_among)
    with signals_as_interrupts(), pytest.raises(KeyboardInterrupt):
        replace_together({path: b"new\n" for path in names})
    assert [path.read_text() for path in names] == ["new\n"] * 3 and len(renamed) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in names)


def check_pair(pair: tuple[str, str], argvs: tuple[tuple[str, ...], ...], workspace: Path, ws: Path, zygote: Zygote,
               ref: Reference | None) -> list[tuple[str, str]]:
    """Run ``argvs`` at once in a copy ``ws`` of the workspace: the problems found. Each must succeed or be refused
    in one line naming the run it waits for; no traceback, temporary file, lock or process left; where ``ref`` is
    the run of both (the same command twice), every file it writes as it writes it."""
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(workspace, ws)
    old = snapshot(ws)
    ended = [zygote.wait(key) for key in [zygote.start(argv, ws) for argv in argvs]]
    problems: list[tuple[str, str]] = []
    for command, end in zip(pair, ended, strict=True):
        said = [line for line in end.err.splitlines() if line.startswith("sate ")]
        if "Traceback (most recent call last)" in end.err:
            problems.append(("traceback", f"{command}: {end.err[-600:]}"))
        if end.orphans or end.hung:
            problems.append(("orphan" if end.orphans else "hang", f"{command}: {end.orphans}"))
        if not (end.status == 0 or (end.status == 2 and len(said) == 1 and "in use" in said[0])):
            problems.append(("status", f"{command}: {end.status} {said}"))
    now = snapshot(ws)
    problems += [(kind, path) for path in now if path not in old and (".tmp" in path or path.endswith(".lock"))
                 for kind in ["temporary" if ".tmp" in path else "lock"]]
    if ref is not None:
        run = RUNS[pair[0]]
        problems += [("output", f"{path}: {now.get(path)}, not as a run leaves it ({entry})")
                     for path, entry in ref.new.items()
                     if old.get(path) != entry and not _matches(path, run.volatile) and now.get(path) != entry]
    return problems


@pytest.mark.parametrize("pair", PAIRS, ids=["+".join(p) for p in PAIRS])
def test_two_runs_on_one_folder_at_once(pair: tuple[str, str], workspace: Path, zygote: Zygote,
                                        reference: Callable[[str], Reference], tmp_path: Path) -> None:
    """Both at once: each succeeds, or is refused in one line naming the run it waits for; the same command twice
    leaves what one run leaves; no temporary file or lock left, no traceback."""
    argvs = PAIR_RUNS.get(pair, (RUNS[pair[0]].argv, RUNS[pair[1]].argv))
    same = pair[0] == pair[1] and pair not in PAIR_RUNS
    ref = reference(pair[0]) if same else None
    problems = check_pair(pair, argvs, workspace, ref.where if ref else tmp_path / "ws", zygote, ref)
    assert not problems, "\n".join(f"{kind}: {detail}" for kind, detail in problems)
