"""A recipe's command line: stage numbers, unknown options and relative paths, refused or resolved before any work."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.recipes.conftest import ROOT


@pytest.mark.parametrize(("args", "says"), [
    (["--stage", "abc"], "--stage must be a stage number, got 'abc'"),
    (["--stop-stage", "2x"], "--stop-stage must be a stage number, got '2x'"),
    (["--stage", "99999999999999999999"], "--stage must be a stage number"),
    (["--stage", "3", "--stop-stage", "1"], "--stage 3 is after --stop-stage 1: no stage would run"),
    (["--stage", "50"], "--stage 50 --stop-stage 100 selects none of the stages this run has (0 to 9; more with "
                        "their options: --help)"),
    (["--stage", "10"], "--stage 10 --stop-stage 100 selects none of the stages this run has"),  # no --compare true
    (["--PATH", "/nonexistent"], "unknown option --PATH (--help lists them)"),
    (["--recipe-name", "x"], "unknown option --recipe-name"),
    (["--prep-args", "x"], "unknown option --prep-args"),
])
def test_stage_numbers_and_options_are_checked(tmp_path: Path, run_recipe, args: list[str],  # noqa: ANN001
                                               says: str) -> None:
    """`--stage abc` made each stage's test a shell error taken as "not selected", `--stage 50` or a stop before the
    start selected none: each exited 0 having done nothing. Any shell variable was an option (`--PATH` replaced the
    PATH)."""
    done = run_recipe("mustc", "--mustc-root", tmp_path / "mustc", "--data", tmp_path / "data", "--exp",
                      tmp_path / "exp", *args, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("[mustc] error: ") == 1 and f"[mustc] error: {says}" in done.stderr, done.stderr
    assert "integer expression" not in done.stderr and "stage 0:" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_scoring_before_decoding_names_the_stage(tmp_path: Path, run_recipe) -> None:  # noqa: ANN001
    """Stage 8 alone on a new experiment was `sate report: error: --exp EXP: no such directory`."""
    exp = tmp_path / "exp"
    done = run_recipe("mustc", "--mustc-root", tmp_path / "mustc", "--data", tmp_path / "data", "--exp", exp,
                      "--stage", "8", "--stop-stage", "8", timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (f"[mustc] error: missing {exp}/*/decode_*/results.json (the test "
                                                    "sets decoded by stage 7). Run the earlier stages first.")


@pytest.mark.slow
def test_relative_and_hostile_paths_are_taken_from_where_the_recipe_started(tmp_path: Path,
                                                                            synth_corpus: Path) -> None:
    """A run.sh works from the repository root: a relative --corpus was looked for there, and --data -d was read by
    `sate prep` as an option. From another directory, with quotes, '$', a leading '-' and non-ASCII in the paths,
    stages 0-2 write where the command line said."""
    work = tmp_path / "it's a \"$HOME\" dir é"
    work.mkdir()
    shutil.copytree(synth_corpus, work / "my corpus")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    argv = ["bash", str(ROOT / "recipes" / "synth" / "run.sh"), "--acoustic", "conformer", "--corpus", "my corpus",
            "--data", "-data $x", "--exp", "exp", "--src-vocab-size", "48", "--tgt-vocab-size", "60", "--nj", "1",
            "--stage", "0", "--stop-stage", "2"]
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    data = work / "-data $x"
    assert (data / "train.jsonl").is_file() and (data / "vocab.json").is_file() and (data / "fbank").is_dir()
    assert f"manifests in {data}" in done.stderr
    assert not (ROOT / "-data $x").exists() and not (ROOT / "my corpus").exists()
