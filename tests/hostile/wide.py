"""The harnesses' wider run, for a hostile pass: every case of seven harnesses through each one's own verdict
(twenty-third hostile pass). Not collected by the suite (no ``test_`` prefix); run a harness's part by name:

    SATE_WIDE_OUT=/tmp/wide nice -n 10 .venv/bin/python -m pytest -n 0 -s tests/hostile/wide.py -k swaps

Each case's problems go to ``$SATE_WIDE_OUT/<family>.jsonl`` as they come ({"id", "problems", "s"}), and a case
whose id is there already is not run again: a run stopped is resumed, and a flag removed from the file (after a fix)
is run again. ``SATE_WIDE_CHEAP=1`` leaves the costly commands' cases (`COSTLY`: they voice, train or compute
features) for a later run; ``SATE_WIDE_STEP=N`` runs every N-th case of what is left (a spread of the costly ones);
``SATE_WIDE_KILL_EVERY=N`` every N-th occurrence of each kill moment; ``SATE_WIDE_ONLY=REGEX`` only the cases whose
id it matches (``'^train <- '``: the reads harness's `sate train` cases, which a whole run reaches last). The
writes harness's grid is chosen when its module is imported: its wider run is a copy of it with `STRIDE`,
`FIXED_STRIDE` and `LINK_STRIDE` 1, `EVERY_FILE`, `THINGS_EVERY` and `FILL_COSTLY` true, and `run_case`'s ``costly``
empty.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import test_arguments as ta
from tests.hostile import test_folders as tf
from tests.hostile import test_kills as tk
from tests.hostile import test_names as tnm
from tests.hostile import test_neighbours as tn
from tests.hostile import test_reads as tr
from tests.hostile import test_swaps as ts
from tests.hostile.test_arguments import translators, world  # noqa: F401 - the harnesses' fixtures
from tests.hostile.test_folders import bench, corpora  # noqa: F401
from tests.hostile.test_kills import reference, workspace, zygote  # noqa: F401
from tests.hostile.test_neighbours import pristine  # noqa: F401
from tests.hostile.test_reads import trees  # noqa: F401
from tests.hostile.test_swaps import kinds, swap_pristine  # noqa: F401
from tests.hostile.test_writes import COSTLY

OUT = Path(os.environ.get("SATE_WIDE_OUT", "wide-run"))
CHEAP = os.environ.get("SATE_WIDE_CHEAP") == "1"
STEP = int(os.environ.get("SATE_WIDE_STEP", "1"))
ONLY = re.compile(os.environ.get("SATE_WIDE_ONLY", ""))


def _done(family: str) -> set[str]:
    path = OUT / f"{family}.jsonl"
    return {json.loads(line)["id"] for line in path.read_text().splitlines()} if path.exists() else set()


def drive(family: str, cases: list[tuple[str, Any]], run: Callable[[Any], list[str]]) -> None:
    """Each case not yet recorded run and recorded at once (a harness's own error recorded as a problem too)."""
    OUT.mkdir(parents=True, exist_ok=True)
    done = _done(family)
    left = [c for c in cases if c[0] not in done and ONLY.search(c[0])][::STEP]
    print(f"\n{family}: {len(left)} cases to run, {len(done)} done", flush=True)
    for case_id, case in left:
        start = time.monotonic()
        try:
            problems = run(case)
        except Exception as err:  # noqa: BLE001 - a stale table's error is a flag to read, not the run's end
            problems = [f"HARNESS ERROR {type(err).__name__}: {str(err)[:800]}"]
        with (OUT / f"{family}.jsonl").open("a") as f:
            f.write(json.dumps({"id": case_id, "problems": problems, "s": round(time.monotonic() - start, 2)}) + "\n")


def kept(command: str) -> bool:
    return not (CHEAP and command.split()[0] in COSTLY)


def test_swaps(bench: tf.Bench, kinds: dict[str, Path], swap_pristine: Path) -> None:  # noqa: F811
    every = [c for c in ts.argument_cases(bench, kinds, wide=True) if kept(c.command)]
    drive("swaps-args", [(c.id, c) for c in every], lambda c: ts.run_case(bench, kinds, c, swap_pristine))
    for command in ts.commands(bench, wide=True):  # a command's member cases need its reference run: one by one
        if command != "vocab mt-text" and kept(command):
            members = ts.member_cases(bench, kinds, wide=True, only=command)
            drive("swaps-members", [(c.id, c) for c in members], lambda c: ts.run_case(bench, kinds, c, swap_pristine))


def test_neighbours(bench: tf.Bench, pristine: Path) -> None:  # noqa: F811
    every = [c for c in tn.cases(bench, wide=True) if kept(c.command)]
    drive("neighbours", [(c.id, c) for c in every], lambda c: tn.run_case(bench, c, pristine))


def test_folders(bench: tf.Bench) -> None:  # noqa: F811
    mode = [c for c in tf.mode_cases(wide=True) if kept(c[0])]
    drive("folders-mode", [(f"{c[0]} folder{c[1]} {c[2]:04o}", c) for c in mode], lambda c: tf.run_mode_case(bench, *c))
    again = [c for c in tf.again_cases(wide=True) if kept(c[0])]
    drive("folders-again", [(f"{c[0]} again folder{c[1]} {c[2]:04o}", c) for c in again],
          lambda c: tf.run_mode_case(bench, *c, again=True))
    if tf.chattr_works(next(iter(bench.calls.values())).case.parent):
        append = [c for c in tf.append_cases(wide=True) if kept(c[0])]
        drive("folders-append", [(f"{c[0]} written{c[1]}", c) for c in append],
              lambda c: tf.run_append_case(bench, *c))


def test_reads(trees: tuple[Path, dict[str, str]], tmp_path: Path) -> None:  # noqa: F811
    built, baselines = trees
    every = [c for c in tr.generate_cases(built, wide=True) if kept(c.reader)]
    for name in sorted({c.reader for c in every} - set(baselines)):  # the readers the committed run leaves out
        copy = tmp_path / f"baseline-{name}"
        tr.copy_trees(built, copy)
        outcome = tr.run_reader(copy, name)
        assert outcome.status == 0, (name, outcome)
        baselines[name] = outcome.out
        shutil.rmtree(copy)

    def one(case: tr.Case) -> list[str]:
        root = tmp_path / "case"
        tr.copy_trees(built, root)
        tr.apply_edit(root, case)
        outcome = tr.run_reader(root, case.reader)
        shutil.rmtree(root, ignore_errors=True)
        return tr.judge(outcome, baselines[case.reader], case.file, tr._known(case, tr.OTHER_OUTPUT) is not None)
    drive("reads", [(c.id, c) for c in every], one)


def test_arguments(world: ta.World, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    count = iter(range(1 << 30))

    def one(case: ta.Case) -> list[str]:
        folder = tmp_path / f"c{next(count)}"
        folder.mkdir()
        with pytest.MonkeyPatch.context() as patch:
            argv, outcome = ta.run_case(case, world, folder, capsys, patch)
        problem = ta.verdict(outcome, ta.names_of(case, world, folder), case.must_refuse)
        return [] if problem is None else [f"{[ta.one_line(a) for a in argv]}: {problem} | {outcome.err[-600:]}"]
    drive("arguments", [(c.id, c) for c in ta.cases(sample=False) if kept(c.option.command)], one)

    def one_set(case: ta.SetCase) -> list[str]:
        outcome = ta.set_outcome(case, world, capsys)
        problem = ta.verdict(outcome, [case.key, case.key.rpartition(".")[2], f"--set {case.key}="], case.must_refuse)
        return [] if problem is None else [f"{problem} | {outcome.err[-600:]}"]
    drive("arguments-set", [(c.id, c) for c in ta.set_cases(sample=False)], one_set)


def test_api(world: ta.World, translators: dict[str, Any]) -> None:  # noqa: F811
    def one(case: tuple[str, str, str]) -> list[str]:
        outcome = ta.api_outcome(*case, world, translators)
        lines = outcome.err.splitlines()
        return ([f"raised {type(outcome.raised).__name__}: {ta.shown_short(outcome.raised)}"]
                if outcome.raised is not None else []) + ([f"{len(lines)} lines: {lines}"] if len(lines) > 1 else [])
    drive("arguments-api", [(f"{c[0]}({c[1]}={c[2]})", c) for c in ta.api_cases(sample=False)], one)


def test_names(tmp_path: Path, capfd: pytest.CaptureFixture[str], synth_corpus: Path) -> None:
    w = tnm.build_world(tmp_path / f"world{tnm.UTF8_NAME}", synth_corpus)
    count = iter(range(1 << 30))

    def one(case: tnm.Case) -> list[str]:
        folder = tmp_path / f"case{next(count)}"
        folder.mkdir()
        argv, must_name, must_refuse = tnm.prepare(case, w, folder)
        problems = tnm.judge(tnm.run(argv, folder, capfd), must_name, must_refuse)
        shutil.rmtree(folder, ignore_errors=True)
        return problems
    drive("names", [(c.id, c) for c in tnm.cases(w, wide=True) if kept(c.command)], one)


def test_kills(workspace: Path, zygote: tk.Zygote, reference: Callable[[str], tk.Reference]) -> None:  # noqa: F811
    every = int(os.environ.get("SATE_WIDE_KILL_EVERY", "1"))
    cases = []
    for command in sorted(c for c in tk.RUNS if kept(c)):
        ref = reference(command)
        cases += [(str(k), (k, ref)) for k in tk.kills(command, ref.ended.counts, every=True)
                  if k.n % every == 0 or k.n == 1]
    drive("kills", cases, lambda c: [f"{kind}: {detail[:500]}" for kind, detail in
                                     tk.check_kill(c[0], workspace, c[1].where, zygote, c[1])])
