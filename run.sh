#!/usr/bin/env bash
# The two commands of the README:
#   ./run.sh          set everything up, then run the offline demo recipe end to end
#   ./run.sh test     set everything up, then run the linter and the test suite
# Extra arguments after `test` go to pytest; after nothing/`demo` they go to recipes/synth/run.sh.
#
# Environment: SATE_VENV (virtual environment, default ./.venv), PYTHON (interpreter that creates it,
# default python3, must be >= 3.11), SATE_CACHE (downloads such as the Ding dictionary, default ~/.cache/sate);
# relative paths, these and the demo's options, are from the directory ./run.sh is started in.
# `sh run.sh` (dash) stopped on "set: Illegal option -o pipefail"; say what to run instead.
[ -n "${BASH_VERSION:-}" ] || { echo "$0: a bash script: run it as ./run.sh (or bash $0), not with sh" >&2; exit 1; }
set -euo pipefail
CALLER=$PWD
CALLER_PHYSICAL=$(pwd -P 2>/dev/null) || CALLER_PHYSICAL=$CALLER
# The repository root, also where $0 is a symbolic link to this file (`ln -s ~/sate/run.sh ~/bin/sate-demo`): the
# link's own folder was taken for the root, and `--help` printed "recipes/synth/run.sh: No such file or directory".
cd "$(dirname "$(readlink -f "$0")")"
ROOT=$PWD
VENV=${SATE_VENV:-$ROOT/.venv}
# A relative SATE_VENV is from where ./run.sh was started, as a user typed it: it was taken from the root, and
# `cd ~/work && SATE_VENV=venv ~/sate/run.sh` built a second environment (minutes, gigabytes) inside the checkout.
case $VENV in /*) ;; *) VENV=$CALLER/$VENV ;; esac
# So is SATE_CACHE, read by `sate` commands that the demo runs from the root.
case ${SATE_CACHE:-/} in /*) ;; *) export SATE_CACHE=$CALLER/$SATE_CACHE ;; esac
PYTHON=${PYTHON:-python3}
# A PYTHON given as a relative path (PYTHON=../py311/bin/python3) too; a bare name is looked up on the PATH.
[[ $PYTHON != */* || $PYTHON == /* ]] || PYTHON=$CALLER/$PYTHON
PIP_VERSION=24.2  # pip >= 25 refuses espnet's dependency ci_sdr (it declares a git URL dependency)

log() { printf '[run.sh] %s\n' "$*" >&2; }

# The interpreter that makes the environment, checked only when there is one to make: an environment made once with
# PYTHON=python3.11 (Ubuntu 22.04's python3 is 3.10) was refused on every later run ("Python >= 3.11 is required"),
# and a PYTHON that does not exist was advised `apt-get install python3-venv` (as root, apt-get ran for nothing).
# python_version PY: PY's version ("3.11") into $version; status 1 where PY does not run, 2 where it is older than 3.11.
python_version() {
  version=$("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || return 1
  "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || return 2
}
check_python() {
  local version status=0
  python_version "$PYTHON" || status=$?
  [ "$status" -ne 1 ] || { log "PYTHON=$PYTHON does not run here: $(python_advice)"; exit 1; }
  [ "$status" -ne 2 ] || { log "Python >= 3.11 is required; PYTHON=$PYTHON is Python $version: $(python_advice)"
                           exit 1; }
  PYTHON_VERSION=$version
}
# What to do: advised "(PYTHON=python3.11 ./run.sh)" where PYTHON=python3.11 was the one that did not run (Ubuntu
# 22.04, whose python3 is 3.10, has none installed), and "(set PYTHON=...)" to a newcomer who has no other Python.
# One on the PATH is named; otherwise where one comes from.
python_advice() {
  local candidate version
  for candidate in python3.14 python3.13 python3.12 python3.11; do
    [ "$candidate" = "$PYTHON" ] || ! python_version "$candidate" || { echo "run PYTHON=$candidate ./run.sh"; return; }
  done
  echo "install a Python 3.11 or newer (Ubuntu 22.04: sudo apt-get install python3.11 python3.11-venv; elsewhere" \
       "pyenv, uv or conda) and run PYTHON=python3.11 ./run.sh (its name or path)"
}

# Debian tools: the TTS engines that voice the demo corpus, and venv support for the Python that makes the
# environment: python3.X-venv, as `python3-venv` is for the default python3 only (PYTHON=python3.12 on Ubuntu 22.04
# still had no ensurepip after the advised install).
setup_system() {
  local missing=()
  command -v espeak-ng >/dev/null || missing+=(espeak-ng)
  command -v flite >/dev/null || missing+=(flite)
  if [ ! -x "$VENV/bin/python" ]; then
    check_python
    "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || missing+=("python$PYTHON_VERSION-venv")
  fi
  [ ${#missing[@]} -eq 0 ] || install_debian "${missing[@]}"
}
# install_debian PACKAGE...: as root, installed; otherwise the line to run, and stop.
install_debian() {
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    log "installing Debian packages: $*"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    log "missing Debian packages: $*"
    log "install them with: sudo apt-get install $*   (then run ./run.sh again)"
    exit 1
  fi
}

# The virtual environment: created once; reinstalled only when pyproject.toml changes. The editable
# install is re-pointed (seconds, no downloads) when the same venv serves another checkout. The stamp holds the
# hash and the checkout on its first line and, on its second, where the environment was made (its physical path):
# its commands (`sate` among them) run that place's bin/python, so a moved one said "sate: cannot execute: required
# file not found".
physical() { (cd "$1" 2>/dev/null && pwd -P) || realpath -m "$1"; }
stamp_current() {
  local made
  made=$(sed -n 2p "$stamp" 2>/dev/null) || made=
  [ -n "$made" ] && [ -x "$VENV/bin/python" ] && [ "$(head -n 1 "$stamp")" = "$deps_hash $ROOT" ] \
    && [ "$(physical "$made")" = "$(physical "$VENV")" ]
}

# Two ./run.sh at once on one environment (two terminals on a first setup) ran two pip installs into one
# site-packages: the second waits for the first. Taken only when there is setup to do, on a file (not the folder:
# NFS and Lustre refuse a lock on a directory opened to read), and a lock that cannot be taken for another reason
# than another holder is gone on without: on such a file system every ./run.sh said "waiting" and stopped, status 65.
lock_venv() {
  local rc=0
  command -v flock >/dev/null || return 0
  if ! { exec 9>>"$VENV/.sate-lock"; } 2>/dev/null; then
    log "cannot open $VENV/.sate-lock to lock the setup: going on without the lock"
    return 0
  fi
  flock -n -E 75 9 2>/dev/null || rc=$?
  if [ "$rc" -eq 75 ]; then
    log "waiting for another ./run.sh that sets up $VENV"
    rc=0
    flock 9 2>/dev/null || rc=$?
  fi
  [ "$rc" -eq 0 ] || log "cannot lock $VENV/.sate-lock (a file system that does not lock files?): going on without it"
  return 0
}

# An environment made by the system's python3 runs whatever python3 is now: after a system upgrade (Debian 12 to 13:
# Python 3.11 to 3.13) its bin/python was a Python that sees none of its packages, and `./run.sh test` said
# "No module named pytest", the demo a "No module named 'sate'" traceback, the stamp taken as current.
check_venv_python() {
  local seen made
  seen=$("$VENV/bin/python" -c 'import os, sys, sysconfig
print("%d.%d" % sys.version_info[:2], os.path.isdir(sysconfig.get_path("purelib")))' 2>/dev/null) || return 0
  [ "${seen#* }" = False ] || return 0
  made=$(sed -n 's/^version\(_info\)\? *= *\([0-9]*\.[0-9]*\).*/\2/p' "$VENV/pyvenv.cfg" 2>/dev/null | head -n 1)
  log "$VENV was made by Python ${made:-of another version}, and its bin/python now runs Python ${seen%% *} (a system" \
      "upgrade?), which sees none of its packages: remove it and run ./run.sh again (a fresh setup: minutes), or set" \
      "SATE_VENV to another place"
  exit 1
}

# An environment on a file system mounted noexec (/tmp or /dev/shm on a hardened machine, some scratch volumes) was
# made and filled (minutes, ~7 GB): its bin/python links to the system's, which runs; then `./run.sh test` said
# "bin/ruff: Permission denied", the demo "bin/sate: Permission denied", torch could not map its libraries.
check_runs_programs() {
  local probe="$VENV/.sate-probe" status=0
  { printf '#!/bin/sh\n' > "$probe" && chmod +x "$probe"; } 2>/dev/null || { rm -f "$probe"; return 0; }
  "$probe" 2>/dev/null || status=$?
  rm -f "$probe"
  [ "$status" -eq 0 ] && return 0
  log "$VENV is on a file system that runs no programs (mounted noexec?): set SATE_VENV to a place on another one" \
      "(SATE_VENV=~/venvs/sate ./run.sh)"
  rm -f "$VENV/.sate-lock"
  [ -z "$made_folder" ] || rmdir "$VENV" 2>/dev/null || true
  exit 1
}

# venv_pip MODULE ARG...: the environment's pip (or ensurepip), installing into it alone. PIP_USER=1 (or `user = true`
# in a pip.conf, common on clusters) stopped the setup on pip's own "Can not perform a '--user' install. User
# site-packages are not visible in this virtualenv.", and PIP_TARGET, PIP_PREFIX or PIP_ROOT installed elsewhere while
# the stamp said the environment was set up (hand31i): an environment variable outranks pip's configuration files.
venv_pip() { env -u PIP_TARGET -u PIP_PREFIX -u PIP_ROOT PIP_USER=0 "$VENV/bin/python" -m "$@"; }

setup_python() {
  local made place installed version made_folder=
  deps_hash=$(sha1sum pyproject.toml | cut -c1-40)
  stamp="$VENV/.sate-installed"
  [ ! -x "$VENV/bin/python" ] || check_venv_python
  stamp_current && return 0
  if [ ! -x "$VENV/bin/python" ]; then
    # In a checkout one may not write (a shared one), venv said "[Errno 13] Permission denied: '.../.venv'" alone.
    [ -e "$VENV" ] || made_folder=1
    mkdir -p "$VENV" 2>/dev/null && [ -w "$VENV" ] \
      || { log "cannot write $VENV: set SATE_VENV to a folder of yours (SATE_VENV=~/venvs/sate ./run.sh)"; exit 1; }
  fi
  # A read-only environment (a shared one) needs no lock: nothing is written to it below but by an install, which
  # then fails in pip's words.
  [ ! -w "$VENV" ] || lock_venv
  # Another ./run.sh may have set it up while this one waited.
  stamp_current && return 0
  [ ! -w "$VENV" ] || check_runs_programs
  if [ ! -x "$VENV/bin/python" ]; then
    # One whose Python is gone (a system upgrade) was made again over itself: venv keeps the dead bin/python link,
    # and the stamp left from before had `./run.sh test` stop on "ruff: command not found".
    if [ -e "$VENV/pyvenv.cfg" ]; then
      log "$VENV is an environment whose Python ($(readlink "$VENV/bin/python" || echo bin/python)) is gone: remove" \
          "it and run ./run.sh again (a fresh setup: minutes), or set SATE_VENV to another place"
      exit 1
    fi
    # A folder of one's own (SATE_VENV=~ or ~/venvs, taken for where to put it) had the environment made among its
    # files: its bin/activate or bin/python, if it had one, overwritten. What an interrupted making leaves is taken,
    # Python 3.13's .gitignore among it, and so is a file system's lost+found (a volume of its own for it).
    local entry others=()
    for entry in "$VENV"/* "$VENV"/.[!.]* "$VENV"/..?*; do
      [ -e "$entry" ] || [ -L "$entry" ] || continue
      case ${entry##*/} in
        .sate-lock | .sate-installed | include | lib | lib64 | lost+found) ;;
        .gitignore) [[ $(head -n 1 "$entry" 2>/dev/null) == "# Created by venv"* ]] || others+=(.gitignore) ;;
        bin) [ -z "$(ls -A "$entry" 2>/dev/null)" ] || others+=(bin/...) ;;
        *) others+=("${entry##*/}") ;;
      esac
    done
    if [ ${#others[@]} -gt 0 ]; then
      log "$VENV holds files of its own (${others[*]:0:3}), no environment's: set SATE_VENV to a new or empty folder" \
          "(SATE_VENV=$VENV/sate ./run.sh)"
      rm -f "$VENV/.sate-lock"
      exit 1
    fi
    log "creating the virtual environment $VENV"
    rm -f "$stamp"
    "$PYTHON" -m venv "$VENV"
  fi
  made=$(sed -n 2p "$stamp" 2>/dev/null) || made=
  place=$(physical "$VENV")
  # Moved (the place it was made at is gone): refused. A copy (the original is still there) is re-pointed below,
  # which writes its own bin/sate, as it was before the stamp recorded the place.
  if [ -n "$made" ] && [ "$(physical "$made")" != "$place" ] && [ ! -d "$made" ]; then
    log "$VENV was made at $made, which is gone: its commands still run $made/bin/python; move it back" \
        "(mv $VENV $made) and set SATE_VENV=$made, or remove it and run ./run.sh again (a fresh setup: minutes)"
    exit 1
  fi
  installed=$(head -n 1 "$stamp" 2>/dev/null | cut -d' ' -f1) || installed=
  if [ "$installed" = "$deps_hash" ] && [ ! -w "$VENV" ]; then
    # One made by an older run.sh (its stamp has no place) or serving another checkout, that one may not write: it
    # worked before; it still does, said.
    log "cannot write $VENV to point it at this checkout: it is used as it is; its owner runs ./run.sh once to do it"
    return 0
  fi
  # One made by hand before (`python3 -m venv .venv`, Ubuntu 22.04's python3 is 3.10) had its pip replaced, and then
  # pip refused "Package 'sate' requires a different Python: 3.10.12 not in '>=3.11'", saying nothing of what to do.
  local status=0
  python_version "$VENV/bin/python" || status=$?
  [ "$status" -ne 1 ] || { log "$VENV/bin/python does not run: remove $VENV and run ./run.sh again (a fresh setup:" \
                                "minutes), or set SATE_VENV to another place"; exit 1; }
  [ "$status" -ne 2 ] || { log "$VENV is an environment of Python $version, and sate needs 3.11 or newer: remove it" \
                                "and run PYTHON=python3.11 ./run.sh (a Python 3.11 or newer), or set SATE_VENV to" \
                                "another place"; exit 1; }
  # A venv whose making was interrupted (Ctrl-C) has a Python but no pip, or half a pip (`import pip` passed, then a
  # "No module named 'pip._internal.cli'" traceback): "No module named pip" on every run. One made by hand with a
  # Debian Python without its venv package (`python3 -m venv` left it so) has no ensurepip to mend it: "No module
  # named ensurepip", alone.
  if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    "$VENV/bin/python" -c 'import ensurepip' 2>/dev/null || install_debian "python$version-venv"
    venv_pip ensurepip >/dev/null
  fi
  if [ "$installed" = "$deps_hash" ]; then
    if [ -n "$made" ] && [ "$(physical "$made")" != "$place" ]; then
      log "pointing $VENV (a copy of $made) at this checkout"
    else
      log "pointing $VENV at this checkout"
    fi
    venv_pip pip install -q --no-deps -e "$ROOT"
  else
    if [ -n "$installed" ]; then
      log "pyproject.toml changed: installing sate and its dependencies into $VENV again"
    else
      log "installing sate and its dependencies into $VENV (first time: several minutes, ~7 GB)"
    fi
    venv_pip pip install -q "pip==$PIP_VERSION"
    venv_pip pip install -q -e "$ROOT[test]"
    venv_pip pip check
  fi
  printf '%s %s\n%s\n' "$deps_hash" "$ROOT" "$place" > "$stamp"
}

# A word that is neither command nor option (`./run.sh tests`) was taken after the whole setup (minutes on a fresh
# machine) and then refused by the demo recipe as "unexpected argument": said first, naming the two commands. So is
# an empty word (`./run.sh "$MODE"`, MODE unset), which was taken for the demo.
case "${1-demo}" in
  test|demo|-*) ;;
  *) log "unknown command '$1': './run.sh test' runs the tests, './run.sh' (or './run.sh demo') the demo; options" \
         "(--name value) go to the demo recipe (./run.sh --help)"
     exit 2 ;;
esac
# `./run.sh --help` (the advice above) printed the demo recipe's options only after the whole setup: minutes and
# gigabytes on a fresh machine before a user could read what the recipe takes. Its help needs no environment.
# So were its options refused (a mistyped name, `--train-size many`) only after it: they are read first, as far as
# the recipe can without sate (recipes/lib/pipeline.sh).
if [ "${1:-demo}" != test ]; then
  for arg in "$@"; do
    case $arg in -h|--help) exec bash recipes/synth/run.sh --help ;; esac
  done
  options=("$@")
  [ "${1:-}" != demo ] || options=("${@:2}")
  (cd "$CALLER" && SATE_OPTIONS_ONLY=1 bash "$ROOT/recipes/synth/run.sh" "${options[@]}") || exit
fi

setup_system
setup_python
exec 9>&-
export PATH="$VENV/bin:$PATH"

case "${1:-demo}" in
  test)
    shift || true
    log "ruff check"
    ruff check sate tests
    log "pytest"
    # Two worker processes (pytest-xdist), each test module whole on one of them so that its module fixtures are
    # built once. `./run.sh test -n 0 ...` runs in this process instead (for --pdb, or -s to see output).
    # Bytecode is written even where the environment says not to: without __pycache__ (git-ignores it) every
    # worker compiles the package and pytest rewrites every test module again, 5 s of each worker's collection.
    unset PYTHONDONTWRITEBYTECODE
    # Started in tests/ or a folder of it, pytest runs from there, as pytest itself would: it finds pyproject.toml
    # above as its configuration, takes test paths (and --junitxml, --basetemp) from there, and with no path collects
    # that folder; `cd tests && ../run.sh test test_run_sh.py` said "file or directory not found". A --deselect id is
    # one from the root (pytest compares node ids): one that names a file or folder here is made one from the root.
    # Started anywhere else, pytest runs from the root with the arguments as given: from sate/ Python would import
    # sate/numbers.py for the standard library's `numbers` (a traceback in every xdist worker).
    case $CALLER_PHYSICAL/ in
      "$ROOT"/tests/*)
        cd "$CALLER_PHYSICAL"
        here=${CALLER_PHYSICAL#"$ROOT"/}/ local_args=() after=
        for arg in "$@"; do
          if [ "$after" = --deselect ]; then
            [ ! -e "${arg%%::*}" ] || arg=$here$arg
          elif [[ $arg == --deselect=* ]]; then
            value=${arg#--deselect=}
            [ ! -e "${value%%::*}" ] || arg=--deselect=$here$value
          fi
          local_args+=("$arg") after=$arg
        done
        set -- "${local_args[@]}"
        ;;
    esac
    exec python -m pytest -n 2 --dist loadscope "$@"
    ;;
  *)
    [ "${1:-}" != demo ] || shift
    # From where ./run.sh was started, so that the recipe takes a relative --data, --exp or --corpus from there, as
    # its own --help says: from the root, `cd ~/work && ~/sate/run.sh --data mydata` used ~/sate/mydata.
    cd "$CALLER"
    exec bash "$ROOT/recipes/synth/run.sh" "$@"
    ;;
esac
