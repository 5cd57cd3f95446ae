"""The README's first two commands, `./run.sh` and `./run.sh test`: what they refuse before any setup."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
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


@pytest.mark.parametrize(("words", "error"), [
    (["--trian-size", "50"], "unknown option --trian-size (--help lists them)"),
    (["demo", "--text", "dingg"], "--text must be phrasebook or ding, got 'dingg'"),
    (["--stage", "9", "--stop-stage", "8"], "--stage 9 is after --stop-stage 8: no stage would run"),
    (["--acoustic", "whisper", "--compare", "true"], "--compare and --ctc-layer train the paper's Conformer rows: "
                                                     "add --acoustic conformer"),
    (["demo", "--train-size", "many"], "--train-size must be a whole number (digits 0-9), got 'many'"),
    (["--nj", "abc"], "--nj must be a whole number >= 1, got 'abc'"),
    (["--speed-perturb", "yes"], "--speed-perturb must be true or false, got 'yes'"),
])
def test_the_demo_s_mistyped_options_are_refused_before_the_setup(tmp_path: Path, words: list[str],
                                                                  error: str) -> None:
    """Thirtieth pass (twenty-ninth's leftover): `./run.sh --trian-size 50` set up the whole environment (minutes,
    gigabytes on a fresh machine) before the demo recipe refused the option. Its options are read first; options it
    takes go on to the setup (here a PYTHON that does not run, so that none is made)."""
    venv = tmp_path / "venv"
    env = {**os.environ, **NO_PACKAGES, "SATE_VENV": str(venv), "PYTHON": str(tmp_path / "no-python")}
    run = subprocess.run(["bash", str(ROOT / "run.sh"), *words], capture_output=True, text=True, timeout=60, env=env,
                         cwd=tmp_path)
    assert (run.returncode, run.stdout, run.stderr) == (1, "", f"[synth] error: {error}\n")
    good = subprocess.run(["bash", str(ROOT / "run.sh"), "demo", "--train-size", "20", "--text", "ding"],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert good.returncode == 1 and good.stderr.startswith(f"[run.sh] PYTHON={tmp_path / 'no-python'} does not run")
    assert not venv.exists() and not (tmp_path / "corpus").exists()


def test_a_symbolic_link_to_run_sh_finds_the_checkout(tmp_path: Path) -> None:
    """Twenty-sixth hostile pass: through `ln -s ~/sate/run.sh ~/bin/sate-demo`, run.sh took the link's folder for
    the root: `--help` said "recipes/synth/run.sh: No such file or directory"."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sate-demo").symlink_to(ROOT / "run.sh")
    run = subprocess.run([str(tmp_path / "bin" / "sate-demo"), "--help"], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("The offline demo:")


def _fake_venv(venv: Path, made_at: Path | str | None = None, stamp: str | None = None) -> Path:
    """An environment that `run.sh` takes as set up for this checkout (made at `made_at`). Its `python -m pip` only
    writes its arguments to `pip.log` beside `bin/`: this python runs the test's interpreter, and a real pip would
    install into that interpreter's environment."""
    (venv / "bin").mkdir(parents=True)
    # This environment's python (a link to it would not see its site-packages); `ruff check` passes at once.
    (venv / "bin" / "python").write_text(
        '#!/bin/sh\n[ "$1 $2 $3" != "-m pip --version" ] || exit 0\n'
        'if [ "$1 $2" = "-m pip" ]; then echo "$@" >> "$(dirname "$0")/../pip.log"; exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n')
    (venv / "bin" / "ruff").write_text("#!/bin/sh\n")
    for name in ("python", "ruff"):
        (venv / "bin" / name).chmod(0o755)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
    deps_hash = hashlib.sha1((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    (venv / ".sate-installed").write_text(stamp if stamp is not None else f"{deps_hash} {ROOT}\n{made_at or venv}\n")
    return venv


def _old_stamp() -> str:
    """The stamp an older run.sh wrote: the hash and the checkout, not where the environment was made."""
    return f"{hashlib.sha1((ROOT / 'pyproject.toml').read_bytes()).hexdigest()} {ROOT}\n"


def _run_sh(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """run.sh from `cwd`, where pip finds nothing to install: a setup these tests do not expect fails in seconds."""
    return subprocess.run(["bash", str(ROOT / "run.sh"), *args], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, **NO_PACKAGES, "PIP_FIND_LINKS": str(cwd / "no-wheels"), **env})


needs_tts = pytest.mark.skipif(not (shutil.which("espeak-ng") and shutil.which("flite")),
                               reason="run.sh's setup installs espeak-ng and flite first")


@pytest.mark.slow
@needs_tts
def test_a_moved_environment_is_named_not_run(tmp_path: Path) -> None:
    """Twenty-sixth hostile pass: a set-up environment moved (`mv .venv ~/venvs/sate`) still ran its commands with
    the old place's Python: the demo stopped on "sate: cannot execute: required file not found". Named, with what to
    do, which works when followed; a symbolic link to the environment is the same environment and passes."""
    venv = _fake_venv(tmp_path / "moved", made_at=tmp_path / "venv")
    run = _run_sh(["test", "--version"], tmp_path, SATE_VENV=str(venv))
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == (f"[run.sh] {venv} was made at {tmp_path}/venv, which is gone: its commands still run "
                          f"{tmp_path}/venv/bin/python; move it back (mv {venv} {tmp_path}/venv) and set "
                          f"SATE_VENV={tmp_path}/venv, or remove it and run ./run.sh again (a fresh setup: minutes)\n")
    subprocess.run(["mv", str(venv), str(tmp_path / "venv")], check=True, timeout=60)  # as advised
    run = _run_sh(["test", "--version"], tmp_path, SATE_VENV=str(tmp_path / "venv"))
    assert run.returncode == 0, run.stderr
    assert "[run.sh] pointing" not in run.stderr and not (tmp_path / "venv" / "pip.log").exists()
    (tmp_path / "link").symlink_to(tmp_path / "venv")
    run = _run_sh(["test", "--version"], tmp_path, SATE_VENV=str(tmp_path / "link"))
    assert run.returncode == 0, run.stderr


@pytest.mark.slow
@needs_tts
def test_a_copied_environment_is_pointed_at_the_checkout_not_refused(tmp_path: Path) -> None:
    """review26f: a copy of a set-up environment (`cp -a .venv elsewhere`, its original still there), which
    `./run.sh test` used before the stamp recorded the place, was refused as "moved or copied", the only advice a
    fresh setup (minutes, 7 GB). It is re-pointed (seconds: its own bin/sate) and used."""
    _fake_venv(tmp_path / "venv")
    shutil.copytree(tmp_path / "venv", tmp_path / "copy", symlinks=True)
    run = _run_sh(["test", "--version"], tmp_path, SATE_VENV=str(tmp_path / "copy"))
    assert run.returncode == 0, run.stderr
    assert f"[run.sh] pointing {tmp_path}/copy (a copy of {tmp_path}/venv) at this checkout\n" in run.stderr
    assert (tmp_path / "copy" / "pip.log").read_text() == f"-m pip install -q --no-deps -e {ROOT}\n"
    assert (tmp_path / "copy" / ".sate-installed").read_text().splitlines()[1] == str(tmp_path / "copy")
    assert not (tmp_path / "venv" / "pip.log").exists()


@pytest.mark.slow  # 0.9 s: run.sh and pytest --version started
@needs_tts
def test_pip_installs_into_the_environment_whatever_pip_s_settings_say(tmp_path: Path) -> None:
    """hand31i: `PIP_USER=1` in the environment (or `user = true` in a pip.conf, common on clusters) stopped the
    setup on pip's own "Can not perform a '--user' install", and `PIP_TARGET`/`PIP_PREFIX`/`PIP_ROOT` would install
    outside the environment while the stamp said it was set up. run.sh's pip runs with them off (an environment
    variable outranks pip's configuration files), and the caller's other pip settings (an index) still reach it."""
    venv = _fake_venv(tmp_path / "venv", stamp="")
    python = (venv / "bin" / "python").read_text()
    (venv / "bin" / "python").write_text(python.replace(
        'echo "$@" >>', 'echo "$@ user=$PIP_USER target=${PIP_TARGET-} prefix=${PIP_PREFIX-} root=${PIP_ROOT-}" >>'))
    run = _run_sh(["test", "--version"], tmp_path, SATE_VENV=str(venv), PIP_USER="1", PIP_TARGET=str(tmp_path / "t"),
                  PIP_PREFIX=str(tmp_path / "p"), PIP_ROOT=str(tmp_path / "r"))
    assert run.returncode == 0, run.stderr
    settings = " user=0 target= prefix= root="
    assert (venv / "pip.log").read_text().splitlines() == [
        f"-m pip install -q pip==24.2{settings}", f"-m pip install -q -e {ROOT}[test]{settings}",
        f"-m pip check{settings}"]


@pytest.mark.slow
@needs_tts
def test_the_place_of_an_environment_is_compared_as_a_physical_path(tmp_path: Path) -> None:
    """review26f: the stamp recorded the place as typed (`cd build && SATE_VENV=../venv ./run.sh`: build/../venv);
    once build/ was removed, the environment, never moved, was refused as moved, advising that path. The place is
    recorded physical, and compared so."""
    (tmp_path / "build").mkdir()
    venv = _fake_venv(tmp_path / "venv", stamp=_old_stamp())
    run = _run_sh(["test", "--version"], tmp_path / "build", SATE_VENV="../venv")
    assert run.returncode == 0, run.stderr
    assert (venv / ".sate-installed").read_text().splitlines()[1] == os.path.realpath(venv)
    (tmp_path / "build").rmdir()
    _, hash_root = _old_stamp(), _old_stamp().strip()
    (venv / ".sate-installed").write_text(f"{hash_root}\n{tmp_path}/build/../venv\n")  # as hand26i's run.sh wrote
    (venv / "pip.log").unlink()
    run = _run_sh(["test", "--version"], tmp_path, SATE_VENV=str(venv))
    assert run.returncode == 0, run.stderr
    assert "[run.sh] pointing" not in run.stderr and not (venv / "pip.log").exists()


def _unshare_ro() -> bool:
    """Whether this test may bind-mount a folder read-only in a mount namespace of its own (root, unshare)."""
    return (os.geteuid() == 0 and shutil.which("unshare") is not None
            and subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=60).returncode == 0)


@needs_tts
@pytest.mark.skipif(not _unshare_ro(), reason="needs root and unshare -m for a read-only mount")
def test_a_read_only_environment_made_by_an_older_run_sh_is_used(tmp_path: Path) -> None:
    """review26f: a read-only environment (a shared one, a read-only mount) whose stamp an older run.sh wrote was
    used; its re-point (to record the place) then failed, and every ./run.sh stopped. Used as it is, said in one
    line."""
    venv = _fake_venv(tmp_path / "venv", stamp=_old_stamp())
    script = (f'mount --bind "{venv}" "{venv}" && mount -o remount,bind,ro "{venv}" && '
              f'exec bash "{ROOT}/run.sh" test --version')
    run = subprocess.run(["unshare", "-m", "bash", "-c", script], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env={**os.environ, **NO_PACKAGES, "SATE_VENV": str(venv)})
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith(f"[run.sh] cannot write {venv} to point it at this checkout: it is used as it is; "
                                 "its owner runs ./run.sh once to do it\n[run.sh] ruff check\n")
    assert not (venv / "pip.log").exists() and (venv / ".sate-installed").read_text() == _old_stamp()


@pytest.mark.slow  # a mount namespace, run.sh twice
@needs_tts
@pytest.mark.skipif(not _unshare_ro(), reason="needs root and unshare -m for a noexec mount")
def test_an_environment_on_a_file_system_that_runs_no_programs_is_refused_before_the_install(tmp_path: Path) -> None:
    """Thirty-first hostile pass (hand31i): SATE_VENV on a file system mounted noexec (/tmp on a hardened machine)
    was made and filled (minutes, ~7 GB), its bin/python a link to the system's; then `./run.sh test` said
    "bin/ruff: Permission denied". Refused before the environment is made; the folder it made for it removed, one of
    the user's kept. (An environment on one that runs programs passes: the re-points of the tests above.)"""
    (tmp_path / "noexec").mkdir()
    script = (f'mount -t tmpfs -o noexec tmpfs "{tmp_path}/noexec" && mkdir "{tmp_path}/noexec/mine" && '
              f'for v in "{tmp_path}/noexec/venv" "{tmp_path}/noexec/mine"; do SATE_VENV=$v bash "{ROOT}/run.sh" test; '
              f'echo "rc=$?"; done; ls -A "{tmp_path}/noexec"; ls -A "{tmp_path}/noexec/mine"')
    run = subprocess.run(["unshare", "-m", "bash", "-c", script], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env={**os.environ, **NO_PACKAGES})
    assert run.stdout == "rc=1\nrc=1\nmine\n"
    assert run.stderr == "".join(f"[run.sh] {tmp_path}/noexec/{name} is on a file system that runs no programs "
                                 "(mounted noexec?): set SATE_VENV to a place on another one (SATE_VENV=~/venvs/sate "
                                 "./run.sh)\n" for name in ("venv", "mine"))


@pytest.mark.slow
@needs_tts
def test_an_environment_whose_python_is_gone_is_named(tmp_path: Path) -> None:
    """Twenty-sixth hostile pass: an environment whose Python was removed (a system upgrade) was made again over
    itself; venv kept the dead link and the stamp from before was trusted: `./run.sh test` stopped on "ruff: command
    not found". Named, with what to do."""
    venv = _fake_venv(tmp_path / "venv")
    (venv / "bin" / "python").unlink()
    (venv / "bin" / "python").symlink_to("/usr/bin/python3.9-gone")
    run = _run_sh(["test"], tmp_path, SATE_VENV=str(venv))
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == (f"[run.sh] {venv} is an environment whose Python (/usr/bin/python3.9-gone) is gone: remove "
                          "it and run ./run.sh again (a fresh setup: minutes), or set SATE_VENV to another place\n")


@pytest.mark.slow  # a Python started to probe the environment
@needs_tts
def test_an_environment_whose_python_now_runs_another_version_is_named(tmp_path: Path) -> None:
    """Thirty-first hostile pass (hand31i): an environment made by the system's python3 runs whatever python3 is now;
    after a system upgrade (Debian 12 to 13: 3.11 to 3.13) its stamp was taken as current and `./run.sh test` said
    "No module named pytest" (the demo: "No module named 'sate'"). Here one made by "3.10" whose bin/python runs
    this Python: named, with what to do. One made by this Python (the fake environments of the other tests) is used."""
    venv = _fake_venv(tmp_path / "venv")
    (venv / "bin" / "python").unlink()
    (venv / "bin" / "python").symlink_to(os.path.realpath(sys._base_executable))
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys._base_executable).parent}\nversion = 3.10.12\n")
    (venv / "lib" / "python3.10" / "site-packages").mkdir(parents=True)
    run = _run_sh(["test"], tmp_path, SATE_VENV=str(venv))
    assert (run.returncode, run.stdout) == (1, "")
    now = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert run.stderr == (f"[run.sh] {venv} was made by Python 3.10, and its bin/python now runs Python {now} (a "
                          "system upgrade?), which sees none of its packages: remove it and run ./run.sh again (a "
                          "fresh setup: minutes), or set SATE_VENV to another place\n")


@pytest.mark.slow
@needs_tts
def test_an_environment_where_one_may_not_write_is_named(tmp_path: Path) -> None:
    """Twenty-sixth hostile pass: in a checkout one may not write, the default environment failed with venv's
    "[Errno 13] Permission denied: '.../.venv'" alone. Named, with SATE_VENV (here its folder is a file)."""
    (tmp_path / "file").write_text("")
    run = _run_sh(["test"], tmp_path, SATE_VENV=str(tmp_path / "file" / "venv"))
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == (f"[run.sh] cannot write {tmp_path}/file/venv: set SATE_VENV to a folder of yours "
                          "(SATE_VENV=~/venvs/sate ./run.sh)\n")


@pytest.mark.slow  # 3-4 s: a Python started to make or mend an environment
@needs_tts
def test_an_environment_made_without_pip_gets_pip(tmp_path: Path) -> None:
    """Twenty-sixth hostile pass: an environment whose making was interrupted (Ctrl-C during venv's ensurepip) has a
    Python and no pip; every later run stopped on "No module named pip". It gets pip, then the install goes on (here
    it finds no packages, offline)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=60)
    run = _run_sh(["test"], tmp_path, SATE_VENV=str(tmp_path / "venv"))
    assert run.returncode == 1
    assert "No matching distribution found for pip==" in run.stderr and "No module named pip" not in run.stderr
    subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-c", "import pip"], check=True, timeout=60)


@needs_tts
def test_relative_paths_are_taken_from_where_run_sh_was_started(tmp_path: Path) -> None:
    """Twenty-sixth hostile pass: `cd ~/work && SATE_VENV=venv ~/sate/run.sh --data mydata` took both from the
    repository's root: a second environment built inside the checkout (minutes, gigabytes) and ~/sate/mydata used,
    while the recipe's own --help says a relative path is from where it is started."""
    work = tmp_path / "work"
    _fake_venv(work / "venv")
    run = _run_sh(["--acoustic", "conformer", "--stage", "3", "--stop-stage", "3", "--data", "mydata"], work,
                  SATE_VENV="venv")
    assert run.returncode == 1
    assert f"missing {work}/mydata/.done/features" in run.stderr
    assert "creating the virtual environment" not in run.stderr and not (ROOT / "venv").exists()


def _pythons(tmp_path: Path, running: str | None) -> str:
    """A PATH on which python3.11 to python3.14 do not run but `running` (one of them), which runs this Python."""
    (tmp_path / "pythons").mkdir()
    for name in ("python3.11", "python3.12", "python3.13", "python3.14"):
        (tmp_path / "pythons" / name).write_text("#!/bin/sh\n" + (f'exec "{sys.executable}" "$@"\n' if name == running
                                                                  else "exit 127\n"))
        (tmp_path / "pythons" / name).chmod(0o755)
    return f"{tmp_path / 'pythons'}:{os.environ['PATH']}"


@pytest.mark.parametrize("python", ["/no/such/python3", "python3.0-none", "python3.11"])
def test_a_python_that_does_not_run_is_named_before_anything_is_installed(tmp_path: Path, python: str) -> None:
    """Twenty-sixth hostile pass: a PYTHON that does not exist was taken for a missing `python3-venv`: run as root,
    run.sh ran `apt-get install python3-venv`, then said "Python >= 3.11 is required; ...: No such file or directory
    found". One line names PYTHON; nothing is installed, no environment is made. Thirty-first (hand31i): it advised
    "(PYTHON=python3.11 ./run.sh)", also where that was the PYTHON that did not run (Ubuntu 22.04 has none
    installed); one that runs on the PATH is named, else where one comes from."""
    venv = tmp_path / "venv"
    run = _run_sh(["test"], tmp_path, SATE_VENV=str(venv), PYTHON=python, PATH=_pythons(tmp_path, None))
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == (f"[run.sh] PYTHON={python} does not run here: install a Python 3.11 or newer (Ubuntu 22.04: "
                          "sudo apt-get install python3.11 python3.11-venv; elsewhere pyenv, uv or conda) and run "
                          "PYTHON=python3.11 ./run.sh (its name or path)\n")
    assert not venv.exists()
    (tmp_path / "pythons").rename(tmp_path / "old")
    run = _run_sh(["test"], tmp_path, SATE_VENV=str(venv), PYTHON=python, PATH=_pythons(tmp_path, "python3.12"))
    assert run.stderr == f"[run.sh] PYTHON={python} does not run here: run PYTHON=python3.12 ./run.sh\n"
    assert not venv.exists()


@needs_tts
def test_an_environment_made_is_used_whatever_python3_is_now(tmp_path: Path) -> None:
    """Twenty-sixth hostile pass: an environment made once with PYTHON=python3.11 (Ubuntu 22.04's python3 is 3.10)
    was refused on every later `./run.sh` ("Python >= 3.11 is required") unless PYTHON was given again. PYTHON only
    makes the environment."""
    venv = _fake_venv(tmp_path / "venv")
    run = _run_sh(["test", "--version"], tmp_path, SATE_VENV=str(venv), PYTHON="/no/such/python3")
    assert run.returncode == 0, run.stderr
    assert "pytest" in run.stdout + run.stderr and "[run.sh] Python" not in run.stderr



@pytest.mark.skipif("dash" not in os.path.realpath(shutil.which("sh") or ""), reason="sh is not dash here")
def test_run_sh_started_with_sh_says_how_to_start_it(tmp_path: Path) -> None:
    """Twenty-sixth hostile pass: `sh run.sh` (dash, Debian's sh) stopped on "set: Illegal option -o pipefail", as
    the recipes did before they said what to run instead."""
    run = subprocess.run(["sh", "run.sh", "test"], capture_output=True, text=True, timeout=60, cwd=ROOT,
                         env={**os.environ, **NO_PACKAGES, "SATE_VENV": str(tmp_path / "venv")})
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == "run.sh: a bash script: run it as ./run.sh (or bash run.sh), not with sh\n"
    assert not (tmp_path / "venv").exists()


@pytest.mark.slow  # 3-4 s: a Python started to make or mend an environment
@needs_tts
def test_a_second_run_sh_waits_for_the_first_setup(tmp_path: Path) -> None:
    """Twenty-sixth hostile pass: two `./run.sh` at once on one environment (two terminals on a first setup) ran two
    pip installs into one site-packages. The second waits for the first's lock (`VENV/.sate-lock`), then finds the
    work done; the lock is let go before the command runs (a demo of half an hour holds nothing)."""
    venv = _fake_venv(tmp_path / "venv", stamp=_old_stamp())
    fd = os.open(venv / ".sate-lock", os.O_WRONLY | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        second = subprocess.Popen(["bash", str(ROOT / "run.sh"), "test", "--version"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True,
                                  env={**os.environ, **NO_PACKAGES, "SATE_VENV": str(venv)})
        with pytest.raises(subprocess.TimeoutExpired):
            second.wait(timeout=3)
        (venv / ".sate-installed").write_text(f"{_old_stamp().strip()}\n{venv}\n")  # the first's setup, done
    finally:
        os.close(fd)
    _, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert err.startswith(f"[run.sh] waiting for another ./run.sh that sets up {venv}\n[run.sh] ruff check\n")
    assert not (venv / "pip.log").exists()  # the stamp was read again once the lock was held
    # The command runs with the lock let go (the re-point holds it): pytest's python finds no descriptor 9 open.
    (venv / ".sate-installed").write_text(_old_stamp())
    python = (venv / "bin" / "python").read_text()
    check = '[ "$1 $2" != "-m pytest" ] || [ ! -e /proc/$$/fd/9 ] || exit 3\n'
    (venv / "bin" / "python").write_text(python.replace("#!/bin/sh\n", "#!/bin/sh\n" + check))
    run = _run_sh(["test", "--version"], tmp_path, SATE_VENV=str(venv))
    assert run.returncode == 0, run.stderr
    assert "[run.sh] pointing" in run.stderr


@pytest.mark.slow
@needs_tts
def test_a_lock_that_cannot_be_taken_is_gone_on_without(tmp_path: Path) -> None:
    """review26f: the lock was taken on every run, on the environment's folder opened to read, which NFS and Lustre
    refuse: every ./run.sh said "waiting for another ./run.sh" and stopped, status 65, the environment set up. A
    set-up environment takes no lock; a setup whose lock fails for another reason than a holder says so in one line
    and goes on. (flock here is a stand-in that fails as util-linux's does there.)"""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "flock").write_text(f'#!/bin/sh\ntouch "{tmp_path}/flock-ran"\n'
                                'echo "flock: 9: Bad file descriptor" >&2\nexit 65\n')
    (shim / "flock").chmod(0o755)
    path = f"{shim}:{os.environ['PATH']}"
    venv = _fake_venv(tmp_path / "venv")
    run = _run_sh(["test", "--version"], tmp_path, SATE_VENV=str(venv), PATH=path)
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith("[run.sh] ruff check\n") and not (tmp_path / "flock-ran").exists()
    (venv / ".sate-installed").write_text(_old_stamp())
    run = _run_sh(["test", "--version"], tmp_path, SATE_VENV=str(venv), PATH=path)
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith(f"[run.sh] cannot lock {venv}/.sate-lock (a file system that does not lock files?): "
                                 f"going on without it\n[run.sh] pointing {venv} at this checkout\n")
    assert "waiting" not in run.stderr and (tmp_path / "flock-ran").exists()


@pytest.mark.slow  # 3-4 s: a Python started to make or mend an environment
def test_a_relative_python_is_taken_from_where_run_sh_was_started(tmp_path: Path) -> None:
    """Twenty-sixth hostile pass: `PYTHON=py/python3 ~/sate/run.sh` (a path from the current directory) was looked for
    from the repository's root, where it is not. It makes the environment (pip then finds nothing, offline)."""
    (tmp_path / "py").mkdir()
    (tmp_path / "py" / "python3").symlink_to(Path(sys.executable).resolve())
    run = _run_sh(["test"], tmp_path, SATE_VENV=str(tmp_path / "venv"), PYTHON="py/python3")
    assert run.returncode == 1
    assert f"creating the virtual environment {tmp_path}/venv" in run.stderr and "does not run" not in run.stderr


def _fake_python(venv: Path, body: str) -> Path:
    """An environment whose bin/python is the shell script `body`, not yet set up (no stamp)."""
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\n" + body)
    (venv / "bin" / "python").chmod(0o755)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return venv


def _not_root(tmp_path: Path) -> str:
    """A PATH on which `id -u` says 1000: run.sh as root would run apt-get install."""
    (tmp_path / "shim").mkdir()
    (tmp_path / "shim" / "id").write_text("#!/bin/sh\necho 1000\n")
    (tmp_path / "shim" / "id").chmod(0o755)
    return f"{tmp_path / 'shim'}:{os.environ['PATH']}"


@needs_tts
def test_an_environment_without_pip_whose_python_has_no_ensurepip_names_the_venv_package(tmp_path: Path) -> None:
    """Twenty-ninth hostile pass (hand29i): `python3 -m venv .venv` by hand on Debian without python3.11-venv leaves an
    environment with a Python and no pip, and its Python has no ensurepip to mend it: `./run.sh` stopped on
    "No module named ensurepip" alone. The Debian package is named, as for an environment still to make."""
    venv = _fake_python(tmp_path / "venv", 'case "$*" in\n'
                        '  *ensurepip*) echo "$0: No module named ensurepip" >&2; exit 1 ;;\n'
                        '  "-m pip"*) echo "$0: No module named pip" >&2; exit 1 ;;\n'
                        '  *print*) echo 3.11 ;;\n'
                        'esac\n')
    run = _run_sh(["test"], tmp_path, SATE_VENV=str(venv), PATH=_not_root(tmp_path))
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == ("[run.sh] missing Debian packages: python3.11-venv\n"
                          "[run.sh] install them with: sudo apt-get install python3.11-venv   (then run ./run.sh "
                          "again)\n")


@needs_tts
def test_an_environment_of_a_python_older_than_3_11_is_named_before_pip_runs(tmp_path: Path) -> None:
    """Twenty-ninth hostile pass (hand29i): an environment made by hand with Ubuntu 22.04's python3 (3.10) had its
    pip replaced by pip 24.2, then pip refused "Package 'sate' requires a different Python: 3.10.12 not in '>=3.11'",
    saying nothing of what to do. Named, before pip runs, with what to do."""
    venv = _fake_python(tmp_path / "venv", 'case "$*" in\n'
                        '  *print*) echo 3.10 ;;\n'
                        '  *sys.exit*) exit 1 ;;\n'
                        '  *) echo "$@" >> "$(dirname "$0")/../pip.log" ;;\n'
                        'esac\n')
    run = _run_sh(["test"], tmp_path, SATE_VENV=str(venv))
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == (f"[run.sh] {venv} is an environment of Python 3.10, and sate needs 3.11 or newer: remove it "
                          "and run PYTHON=python3.11 ./run.sh (a Python 3.11 or newer), or set SATE_VENV to another "
                          "place\n")
    assert not (venv / "pip.log").exists()


@pytest.mark.slow  # 3-4 s: a Python started to make or mend an environment
@needs_tts
def test_an_environment_with_half_a_pip_gets_pip(tmp_path: Path) -> None:
    """Twenty-ninth hostile pass (hand29i): Ctrl-C while venv's ensurepip unpacked pip leaves half of it: `import
    pip` passed, so it was not mended, and every run stopped on a "No module named 'pip._internal.cli'" traceback.
    It gets pip, then the install goes on (here it finds no packages, offline)."""
    import pip

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=60)
    site = next((tmp_path / "venv" / "lib").glob("python3*/site-packages"))
    (site / "pip").mkdir()
    for name in ("__init__.py", "__main__.py"):  # the first files of pip's wheel
        shutil.copy(Path(pip.__file__).parent / name, site / "pip" / name)
    run = _run_sh(["test"], tmp_path, SATE_VENV=str(tmp_path / "venv"))
    assert run.returncode == 1
    assert "No matching distribution found for pip==" in run.stderr and "Traceback" not in run.stderr
    subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-m", "pip", "--version"], check=True, timeout=60,
                   capture_output=True)


@pytest.mark.parametrize("python", ["old", "shim", "python3.0-none"])
def test_ci_with_a_python_older_than_3_11_says_so(tmp_path: Path, python: str) -> None:
    """Twenty-ninth hostile pass (hand29i): `.ci/run` on a machine whose python3 is older than 3.11 (Ubuntu 22.04, a
    CI image) stopped on a "No module named 'tomllib'" traceback before run.sh could say what Python it needs. fix29i:
    one that does not run (missing, an inactive pyenv shim) was called "no Python 3.11 or newer"; it is named as one
    that does not run, as run.sh does."""
    old = python == "old"
    if python in ("old", "shim"):
        python = str(tmp_path / python)
        Path(python).write_text(
            '#!/bin/sh\ncase "$2" in *"version_info[:2]"*) echo 3.10; exit 0;; esac\n'
            'echo "ModuleNotFoundError: No module named \'tomllib\'" >&2\nexit 1\n' if old else
            '#!/bin/sh\necho "pyenv: python3.12: command not found" >&2\nexit 127\n')
        Path(python).chmod(0o755)
    env = {**os.environ, **NO_PACKAGES, "PYTHON": python, "SATE_VENV": str(tmp_path / "venv")}
    run = subprocess.run([str(ROOT / ".ci" / "run")], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env={**env, "PATH": _pythons(tmp_path, "python3.12")})
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == (f".ci/run: PYTHON={python} is Python 3.10, and CI needs 3.11 or newer: set PYTHON to one "
                          "(PYTHON=python3.12 .ci/run)\n" if old else
                          f".ci/run: PYTHON={python} does not run here: set PYTHON to a Python 3.11 or newer "
                          "(PYTHON=python3.12 .ci/run)\n")
    assert not (tmp_path / "venv").exists()
    # hand31i: with none on the PATH it advised "(PYTHON=python3.11 .ci/run)", the very PYTHON that did not run
    (tmp_path / "pythons").rename(tmp_path / "gone")
    for i, given in enumerate((python, "python3.11")):
        run = subprocess.run([str(ROOT / ".ci" / "run")], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                             env={**env, "PYTHON": given, "PATH": _pythons(tmp_path, None)})
        assert run.returncode == 1 and run.stderr.endswith(
            "(none is on the PATH: install one, e.g. sudo apt-get install python3.11 python3.11-venv on Ubuntu "
            "22.04, and run PYTHON=python3.11 .ci/run, its name or path)\n"), run.stderr
        (tmp_path / "pythons").rename(tmp_path / f"gone-{i}")


@pytest.mark.slow
@needs_tts
def test_test_paths_are_taken_from_where_run_sh_was_started(tmp_path: Path) -> None:
    """Twenty-ninth hostile pass (hand29i): `cd tests && ../run.sh test test_run_sh.py` said "file or directory not
    found: test_run_sh.py": pytest runs from the root. A path is taken from where run.sh was started, as the demo's
    are; the word after -k (here `decode`, a folder there too) is an expression, and stays one."""
    venv = _fake_venv(tmp_path / "venv")
    node = "test_run_sh.py::test_run_sh_started_with_sh_says_how_to_start_it"
    run = _run_sh(["test", "-n", "0", "--collect-only", "-m", "not slow", node, "-k", "decode or started"],
                  ROOT / "tests", SATE_VENV=str(venv))
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"tests/{node}" in run.stdout


@pytest.mark.slow
@needs_tts
def test_pytest_runs_from_tests_where_run_sh_was_started_there(tmp_path: Path) -> None:
    """fix29i: hand29i's rewriting of test paths also rewrote `-xk decode` (from tests/, where decode/ exists) into a
    path, deselecting every test, and left a --deselect id from the caller's folder unmatched. pytest now runs from
    tests/ when started there (no word rewritten but a --deselect id), and from the root with the words as given when
    started outside the checkout."""
    venv = _fake_venv(tmp_path / "venv")
    gone = "decode/test_beam_search.py::test_the_encode_once_path_cuts_and_checks_the_padding_as_beam_search_does"
    for deselect in (["--deselect", gone], [f"--deselect={gone}"]):
        run = _run_sh(["test", "-n", "0", "--collect-only", "-xk", "decode", "decode/test_beam_search.py", *deselect],
                      ROOT / "tests", SATE_VENV=str(venv))
        assert run.returncode == 0, run.stdout + run.stderr
        assert "tests/decode/test_beam_search.py::" in run.stdout
        assert "deselected)" in run.stdout and f"tests/{gone}" not in run.stdout
    node = "tests/test_run_sh.py::test_run_sh_started_with_sh_says_how_to_start_it"
    run = _run_sh(["test", "-n", "0", "--collect-only", node], tmp_path, SATE_VENV=str(venv))
    assert run.returncode == 0, run.stdout + run.stderr
    assert node in run.stdout


def _assert_made(tmp_path: Path, *venvs: Path) -> Path:
    """Asserts that run.sh goes on to make each of `venvs` the environment, with a python3 that makes none (it says
    whether run.sh went on to make one); returns that python3."""
    fake = tmp_path / "python3"
    fake.write_text('#!/bin/sh\n[ "$1 $2" != "-m venv" ] || { echo made "$3"; exit 9; }\n'
                    f'exec "{sys.executable}" "$@"\n')
    fake.chmod(0o755)
    for venv in venvs:
        run = _run_sh(["test"], tmp_path, SATE_VENV=str(venv), PYTHON=str(fake))
        assert (run.returncode, run.stdout) == (9, f"made {venv}\n"), run.stderr
    return fake


@pytest.mark.slow
@needs_tts
def test_a_folder_of_one_s_own_files_is_not_made_an_environment(tmp_path: Path) -> None:
    """Twenty-ninth hostile pass (hand29i): SATE_VENV naming a folder of one's own (`SATE_VENV=~`, taken for where to
    put the environment) had the environment made among its files, its `bin/activate` overwritten by venv's. Refused,
    nothing written there; the advised folder inside it is made, and so is one an interrupted making left."""
    own = tmp_path / "home"
    (own / "bin").mkdir(parents=True)
    (own / "bin" / "activate").write_text("my own\n")
    (own / "notes.txt").write_text("notes\n")
    run = _run_sh(["test"], tmp_path, SATE_VENV=str(own), PYTHON=sys.executable)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == (f"[run.sh] {own} holds files of its own (bin/... notes.txt), no environment's: set SATE_VENV "
                          f"to a new or empty folder (SATE_VENV={own}/sate ./run.sh)\n")
    assert sorted(p.name for p in own.rglob("*")) == ["activate", "bin", "notes.txt"]
    assert (own / "bin" / "activate").read_text() == "my own\n"
    for folder in ("bin", "include", "lib/python3/site-packages"):  # venv's first step, interrupted
        (tmp_path / "left" / folder).mkdir(parents=True)
    _assert_made(tmp_path, own / "sate", tmp_path / "left")


@pytest.mark.slow
@needs_tts
def test_what_a_file_system_or_python_3_13_s_venv_put_in_the_folder_is_no_file_of_one_s_own(tmp_path: Path) -> None:
    """fix29i: a folder holding only a file system's `lost+found` (a volume of its own for the environment) or what
    an interrupted making by Python 3.13 left (its `.gitignore`, written before pyvenv.cfg) was refused as holding
    "files of its own". Both are made the environment; a `.gitignore` of one's own is still a file of one's own."""
    (tmp_path / "vol" / "lost+found").mkdir(parents=True)
    for folder in ("bin", "include", "lib/python3.13/site-packages"):
        (tmp_path / "left13" / folder).mkdir(parents=True)
    (tmp_path / "left13" / ".gitignore").write_text(
        "# Created by venv; see https://docs.python.org/3/library/venv.html\n*\n")
    fake = _assert_made(tmp_path, tmp_path / "vol", tmp_path / "left13")
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / ".gitignore").write_text("*.pyc\n")
    run = _run_sh(["test"], tmp_path, SATE_VENV=str(tmp_path / "own"), PYTHON=str(fake))
    assert (run.returncode, run.stdout) == (1, "")
    assert "holds files of its own (.gitignore)" in run.stderr
