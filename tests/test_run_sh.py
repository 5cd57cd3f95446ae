"""The README's first two commands, `./run.sh` and `./run.sh test`: what they refuse before any setup."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NO_PACKAGES = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "/nonexistent"}


@pytest.mark.parametrize("word", ["tests", "Test", "setup", ""])
def test_a_word_that_is_no_command_is_refused_before_the_setup(tmp_path: Path, word: str) -> None:
    """Twenty-third hostile pass: `./run.sh tests` (a newcomer's first command, one letter off) ran the whole setup
    (minutes on a fresh machine: a virtual environment, gigabytes of packages) and then the demo recipe refused
    "unexpected argument 'tests'", naming neither command. Refused first; no environment is made."""
    venv = tmp_path / "venv"
    run = subprocess.run(["bash", str(ROOT / "run.sh"), word], capture_output=True, text=True, timeout=60,
                         env={**os.environ, **NO_PACKAGES, "SATE_VENV": str(venv)})
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == (f"[run.sh] unknown command '{word}': './run.sh test' runs the tests, './run.sh' (or "
                          "'./run.sh demo') the demo; options (--name value) go to the demo recipe (./run.sh --help)\n")
    assert not venv.exists()


@pytest.mark.parametrize("words", [["--help"], ["-h"], ["demo", "--help"], ["--stage", "3", "--help"]])
def test_the_demo_s_help_is_printed_before_the_setup(tmp_path: Path, words: list[str]) -> None:
    """Twenty-fourth hostile pass: `./run.sh --help`, which the refusal above advises, set up the whole environment
    (minutes, gigabytes on a fresh machine) before it printed the demo recipe's options. The recipe's help is printed
    at once, and no environment is made."""
    venv = tmp_path / "venv"
    run = subprocess.run(["bash", str(ROOT / "run.sh"), *words], capture_output=True, text=True, timeout=60,
                         env={**os.environ, **NO_PACKAGES, "SATE_VENV": str(venv)})
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("The offline demo:") and "--stage N" in run.stdout
    assert "[run.sh]" not in run.stderr
    assert not venv.exists()


def test_a_symbolic_link_to_run_sh_finds_the_checkout(tmp_path: Path) -> None:
    """Twenty-sixth hostile pass: through `ln -s ~/sate/run.sh ~/bin/sate-demo`, run.sh took the link's folder for
    the root: `--help` said "recipes/synth/run.sh: No such file or directory"."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sate-demo").symlink_to(ROOT / "run.sh")
    run = subprocess.run([str(tmp_path / "bin" / "sate-demo"), "--help"], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("The offline demo:")
