"""Writing files so that a kill never leaves a half-written file that looks complete, and reading back safely.

Everything `sate` writes goes to a temporary sibling (same directory, so the rename is atomic), is
flushed to disk, and replaces the target only once complete; on any error the temporary file is removed
and the previous version of the target, if any, is untouched. One that a SIGKILL left (no code runs then) is
removed by the next write of that name, its writer's lock being gone (`_sweep_abandoned`).

Permissions are those `open()` and `mkdir` give: `tempfile` creates its files 0600 and its directories
0700, which would hide models and manifests from colleagues on a shared server, so a new file gets
0666 and a new directory 0777 less the umask, and a replaced file keeps its mode.

Checkpoints and model files (`torch.save` archives) are read by one reader, `read_checkpoint`: weights only, so a
pickle never runs code, and with the zip checksums verified, so a damaged file is named instead of decoded into
wrong weights. JSON files we did not write (hub model directories) are read by `read_json`.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import pickle
import re
import shutil
import signal
import stat
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from sate import layout
from sate.errors import BIDI_CONTROLS, SIGNAL_ENDINGS, SateError, first_few, handlers_swapped, shown

ZIP_MAGIC = b"PK\x03\x04"  # how every file of torch.save (zip format) starts
SNIFF = 8192  # bytes read to tell text from binary
MAGIC = {b"PK\x03\x04": "a zip archive (a model file or checkpoint)", b"RIFF": "a WAV audio file",
         b"fLaC": "a FLAC audio file", b"OggS": "an Ogg audio file", b"\x89PNG": "a PNG image"}
# Compressed files, by their first bytes: a gzip file is read decompressed where sacrebleu reads one (`sate score`),
# and any of them given where text or YAML is read is named as what it is, not "binary data" (twenty-first pass)
COMPRESSED_MAGIC = {b"\x1f\x8b": "gzip-compressed data", b"BZh": "bzip2-compressed data",
                    b"\xfd7zXZ\x00": "xz-compressed data", b"(\xb5/\xfd": "zstd-compressed data"}
# A Kaldi archive of binary matrices (a stored feature shard: `UTTERANCE-ID \0B`), and a SentencePiece model (a
# protobuf whose first field is the piece list, opening with <unk>, <s> or <pad>)
KALDI_ARK = re.compile(rb"\A[^\s\x00]{1,1000} \x00B")
SENTENCEPIECE = re.compile(rb"\A\n[\x00-\xff]{1,2}\n[\x00-\xff](<unk>|<s>|<pad>|</s>)")
TEMP_NAME_ROOM = 255 - 24  # NAME_MAX less what a temporary name adds: two dots, 8 random characters, ".tmp", ".old"
# A JSON or YAML mapping as parsed, before it is checked and read into our own types. It stays raw on purpose: its
# shape is the file's (a hub model's config.json, an ESPnet experiment's config.yaml, the mappings of a user's
# YAML that the typed sections read), so its values are Any until the code that reads them has checked them.
RawMapping = dict[str, Any]


def current_umask() -> int:
    """The process umask, read without changing it where the system allows (Linux: /proc)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore (briefly racy with other threads)
    os.umask(mask)
    return mask


def real_path(path: str | Path) -> Path:
    """``path`` absolute with every symlink resolved, as `Path.resolve` gives it, except that a symlink loop is left
    unresolved (using it is then the OSError "Too many levels of symbolic links", naming it, one line): Python
    3.11's `Path.resolve` raised RuntimeError on a loop, a traceback (`sate prep --kaldi-dir LOOP`, `sate evaluate
    --model LOOP`, a data directory whose ``fbank`` is a loop)."""
    return Path(os.path.realpath(path))


def what_is_there(path: Path) -> str | None:
    """What stands at ``path`` when it is not a regular file, as the messages name it ("a directory", "a named pipe",
    "a device or socket", "a symlink loop (...)", "a broken symlink (...)"), or None where a file is, or nothing."""
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "a symlink loop (it leads back to itself)"
        if os.path.islink(path):
            return f"a broken symlink (to {os.readlink(path)}, which is not there)"
        return None
    if stat.S_ISREG(mode):
        return None
    return "a directory" if stat.S_ISDIR(mode) else "a named pipe" if stat.S_ISFIFO(mode) else "a device or socket"


FS_IOC_GETFLAGS, FS_APPEND_FL = 0x80086601, 0x20  # Linux's ioctl for a file's attributes (lsattr), and `chattr +a`
FS_IMMUTABLE_FL = 0x10  # `chattr +i`


def _attributes(path: Path) -> int:
    """The attribute flags of ``path`` (lsattr's), 0 where they cannot be read (no such file, no permission, a file
    system without attributes)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        flags = fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8))
    except OSError:  # a file system without attributes
        return 0
    finally:
        os.close(fd)
    return int.from_bytes(flags[:4], sys.byteorder)


def append_only(path: Path) -> bool:
    """Is ``path`` (a file or a folder) append-only (`chattr +a`)? Such a file cannot be replaced, nor can a name in
    such a folder be renamed or removed: an atomic write there failed after the work, and in a folder left its
    temporary file for good. `os.access` does not tell it (writing is allowed); False where it cannot be read."""
    return bool(_attributes(path) & FS_APPEND_FL)


def fixed_in_place(path: Path) -> str | None:
    """How ``path`` is fixed where it is, when it is append-only or immutable (`chattr +a`, `+i`): no rename may
    replace it, move it or remove it, whatever the file modes say. None otherwise. A command that replaces its own
    file under a fixed name (`sate features`' cmvn.json, `sate vocab`'s token lists, `sate prep`'s manifests,
    `sate train`'s last.ckpt) failed there after the work (twentieth hostile pass)."""
    flags = _attributes(path)
    if flags & FS_APPEND_FL:
        return "append-only (chattr +a)"
    if flags & FS_IMMUTABLE_FL:
        return "immutable (chattr +i)"
    return None


# The kernel's own file systems: their files are views of the kernel, and no file of a command's can be made there
KERNEL_FILE_SYSTEMS = {"proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "configfs", "pstore",
                       "bpf", "efivarfs", "fusectl", "binfmt_misc"}


def _mounts() -> list[tuple[Path, str]]:
    """(mount point, type) of each mount this process sees, in /proc/self/mounts' order (none where it cannot be
    read); a point's spaces, tabs, line breaks and backslashes are octal escapes there."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    escapes = {"\\040": " ", "\\011": "\t", "\\012": "\n", "\\134": "\\"}
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 3:
            point = re.sub(r"\\0(40|11|12)|\\134", lambda m: escapes[m.group(0)], fields[1])
            found.append((Path(point), fields[2]))
    return found


def kernel_file_system(path: Path) -> tuple[str, str] | None:
    """(mount point, type) of the kernel's file system (/proc, /sys, ...) that holds ``path``, or None: an output
    there failed only when it was written, after the work, and `--out /proc/version` said "No such file or
    directory" of a file that is there (nineteenth hostile pass). The longest mount point above ``path``."""
    best: tuple[Path, str] | None = None
    for point, kind in _mounts():
        if (path == point or point in path.parents) and (best is None or len(point.parts) >= len(best[0].parts)):
            best = (point, kind)
    return (str(best[0]), best[1]) if best is not None and best[1] in KERNEL_FILE_SYSTEMS else None


def mount_point(path: Path) -> bool:
    """Is ``path`` (resolved) a mount point, a file bind-mounted there among them (`mount --bind notes.txt
    EV/hyp.txt`), which no rename may replace (EBUSY)? `os.path.ismount` misses a bind mount of one device."""
    return any(point == path for point, _ in _mounts())


def mounts_inside(folder: Path) -> list[Path]:
    """The mount points below ``folder`` (resolved), bind-mounted files among them: a folder holding one can be
    renamed, but not removed (EBUSY). `sate pack --out PACK` with a user's file bind-mounted at PACK/model.pt said it
    packed, exit 0, and left the old pack as .PACK.old for good (twentieth hostile pass)."""
    return [point for point, _ in _mounts() if folder in point.parents]


CAP_FOWNER = 3  # linux/capability.h: what lets root remove or replace any user's file in a sticky folder


def sticky_forbids(path: Path) -> bool:
    """Does a folder's sticky bit (`/tmp`, mode 1777) forbid this process to replace ``path`` by a rename? Only the
    file's owner, the folder's, or a process with CAP_FOWNER may: `translate --out /tmp/notes.txt` of another user's
    (mode 666, which `os.access` allows writing) translated, then failed at the rename (nineteenth hostile pass)."""
    try:
        folder, file = os.stat(path.parent), os.stat(path)
    except OSError:
        return False
    if not folder.st_mode & stat.S_ISVTX or os.geteuid() in (folder.st_uid, file.st_uid):
        return False
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return not int(line.split()[1], 16) >> CAP_FOWNER & 1
    except (OSError, ValueError, IndexError):
        pass
    return os.geteuid() != 0


def link_or_what_is_there(path: Path) -> str | None:
    """`what_is_there`, and a symlink to a file named as one ("a symlink (to TARGET)"): what stands at a name sate
    keeps as a file of its own, written anew (a lock, a shard's file, a cache's), where a link is never followed."""
    return f"a symlink (to {os.readlink(path)})" if os.path.islink(path) else what_is_there(path)


def not_a_file(path: Path, what: str) -> None:
    """Refuse ``path`` where something other than a regular file is there (a directory, a named pipe, a device, a
    symlink loop or a broken symlink), naming it: each was called "missing", and the command that message advised
    then said it was there. Silent where a file is, or nothing: the caller says what a missing file means."""
    kind = what_is_there(path)
    if kind is not None:
        raise SateError(f"{path}: {kind}, not {what}")


def given_path(value: object, what: str) -> Path:
    """A path a Python caller gave (`model_from_file`, `SpeechTranslator.load`, `read_lines`): a str or any path
    object of a str. None, a number or bytes were TypeErrors of Path(), and a NUL character a ValueError of os.stat
    ("embedded null byte"), each a traceback (25th hostile pass)."""
    if not isinstance(value, str | os.PathLike) or isinstance(os.fspath(value), bytes):
        hint = " (decode a name of bytes with os.fsdecode(name))" if isinstance(value, bytes) else ""
        raise SateError(f"{what}: expected a path (str or Path), got {type(value).__name__}{hint}")
    if "\0" in os.fspath(value):
        raise SateError(f"{what}: {shown(os.fspath(value))} holds a NUL character, which no name on disk holds")
    return Path(value)


def cache_snapshot(directory: Path) -> Path | None:
    """The snapshot folder of a Hugging Face cache's repository folder (``models--openai--whisper-small``, which
    holds the files a level down), or None: the one ``refs/main`` names, else the only one. The newest by name was
    no answer: snapshots are named by commit hash, so with several it could name an old revision (24th hostile
    pass). Whisper's and Marian's folders are named so."""
    snapshots = sorted(p for p in (directory / "snapshots").glob("*") if p.is_dir())
    try:
        named = (directory / "refs" / "main").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        named = ""
    chosen = [p for p in snapshots if p.name == named]
    return chosen[0] if chosen else snapshots[0] if len(snapshots) == 1 else None


def cache_hint(directory: Path) -> str:
    """What a refusal of ``directory`` as a model's folder adds where it is a Hugging Face cache's folder of the model
    (``models--Helsinki-NLP--opus-mt-en-de``): the snapshot to name, or where they are; '' for any other folder."""
    if not (directory / "snapshots").is_dir():
        return ""
    snapshot = cache_snapshot(directory)
    return (f"; a Hugging Face cache folder: name its snapshot ({snapshot})" if snapshot is not None else
            f"; a Hugging Face cache folder: name one of {directory / 'snapshots'}/ (its refs/main says which is "
            "current)")


def require_file(path: Path, what: str, missing: str | Callable[[], str]) -> None:
    """A regular file at ``path``: anything else there named by `not_a_file`, and nothing there refused with
    ``missing`` (the caller's line, with the command that makes the file; a function where making the line looks at
    other files, which only a missing file may ask for)."""
    not_a_file(path, what)
    if not path.is_file():
        raise SateError(missing if isinstance(missing, str) else missing())


def given_twice(paths: Iterable[Path]) -> tuple[Path, Path] | None:
    """The first path that leads to the same file as an earlier one (links resolved), with that earlier one, or None:
    one results file given twice (its folder and the file, a link to either) was read as two runs."""
    seen: dict[object, Path] = {}
    for path in paths:
        first = seen.setdefault(_file_identity(path), path)
        if first is not path:
            return first, path
    return None


def _file_identity(path: Path) -> object:
    """What names one file, whichever way it is reached: its name in its folder, the folder known by its device and
    inode (a bind mount shows one folder under two paths, which no link resolves: `report --out A/r.png --curves
    B/r.png`, B bound to A, replaced the table with the curves, exit 0; eighteenth hostile pass), else its path."""
    real = real_path(path)
    try:
        folder = os.stat(real.parent)
    except OSError:
        return real
    return folder.st_dev, folder.st_ino, real.name


def relative_note(path: str | Path) -> str:
    """What a missing relative path was looked up against: the current directory, and a `~` kept as a name (the
    shell expands it at a word's start only: `--set data.dir=~/data` names a folder called '~')."""
    if Path(path).is_absolute():
        return ""
    tilde = "; a '~' here is not your home folder: write the path out" if str(path).startswith("~") else ""
    try:
        here = str(Path.cwd())
    except OSError:  # the current directory was deleted: the note was a bare "No such file or directory" instead of
        here = "which was deleted: cd to one that is there"  # the message naming the path (25th hostile pass)
    return f" (relative to the current directory, {here}{tilde})"


def require_directory(path: Path, option: str) -> None:
    """``option``'s directory (a data directory read, not written) must be there: a typo or a relative path given
    from another directory was told to run the command that fills it (`evaluate --data TYPO`: "manifest of split
    'dev' is missing (run `sate prep`)")."""
    if path.is_dir():
        check_data_directory(path, option)
        return
    raise SateError(f"{option} {path}: {not_a_directory(path)}")


def not_a_directory(path: Path) -> str:
    """Why ``path``, which is no directory, is none: what stands there (a file, a named pipe, a broken symlink...),
    or that nothing does. `sate train` said "no such directory" of a data.dir that was a file or /dev/null."""
    kind = what_is_there(path) or ("a file" if path.exists() else None)
    return f"{kind}, not a directory" if kind else f"no such directory{relative_note(path)}"


def check_data_directory(path: Path, option: str) -> None:
    """A pack or an experiment given where a data directory goes (`data.dir`, `--data`) is named for what it is: it
    was told to run the command that fills a data directory ("run `sate vocab`", "run `sate prep`"), which refuses
    to write into either."""
    if (path / layout.PACK_YAML).is_file():
        raise SateError(f"{option} {path}: a packed model (`sate pack`), not a data directory (`sate prep --out`)")
    held = next((name for name in (layout.CHECKPOINTS, layout.TRAIN_LOCK, layout.TRAIN_TIME)
                 if (path / name).exists()), None)
    if held is not None:
        raise SateError(f"{option} {path}: an experiment (it holds {held}), not a data directory (`sate prep --out`)")
    if (path / layout.RESULTS).is_file() and \
            not any((path / f"{split}.jsonl").exists() for split in layout.DEFAULT_SPLITS):  # (its delays.jsonl)
        raise SateError(f"{option} {path}: a `sate evaluate` run (it holds {layout.RESULTS}), not a data directory")
    if hub_model_folder(path):  # its vocab.json
        raise SateError(f"{option} {path}: a downloaded model's folder (config.json beside its weights), not a data "
                        "directory")
    near = near_data_directory(path)
    if near is not None:
        raise SateError(f"{option} {path}: {near}")


def hub_model_folder(directory: Path) -> bool:
    """Is ``directory`` a downloaded model (Hugging Face's config.json beside its weights, or a CTranslate2 Whisper's
    model.bin)? sate reads such a folder and never writes it: `translate --out WHISPER/tokenizer.json` replaced the
    model's tokenizer with translation text, exit 0; and its vocab.json made `--data MARIAN` look like a data
    directory."""
    weights = (*layout.HUB_WEIGHT_FILES, *layout.HUB_WEIGHT_FILES.values(), layout.CT2_MODEL)
    return os.path.isfile(directory / "config.json") and any(os.path.isfile(directory / name) for name in weights)


def holds_data_files(folder: Path) -> bool:
    """Does ``folder`` hold anything `sate prep`, `features` or `vocab` write (a manifest, the features, a
    vocabulary)? Looked up by name, which a folder that may be entered but not listed (mode 0300) still answers."""
    names = (layout.VOCAB_META, layout.CMVN, layout.FBANK_DIR, layout.MARIAN_DIR,
             *(layout.token_list(side) for side in ("src", "tgt")),
             *(f"{split}.jsonl" for split in (*layout.DEFAULT_SPLITS, *layout.OPTIONAL_SPLITS)))
    if any(os.path.lexists(folder / name) for name in names):
        return True
    try:
        return any(name.endswith(".jsonl") for name in os.listdir(folder))
    except OSError:
        return False


def held_inside(folder: Path, is_one: Callable[[Path], bool]) -> list[str]:
    """The paths of what ``folder`` holds that ``is_one`` takes for what was asked (the folder holding data
    directories, experiments or corpora given for one of them), sorted; none where it cannot be listed."""
    try:
        return sorted(str(child) for child in folder.iterdir() if is_one(child))
    except OSError:
        return []


def few_paths(paths: list[str], limit: int = 3) -> str:
    """The first ``limit`` of ``paths`` whole (a path to give again is not cut, as `first_few` cuts a value), and how
    many more."""
    return ", ".join(paths[:limit]) + (f" and {len(paths) - limit:,} more" if len(paths) > limit else "")


def data_directory_above(path: Path) -> Path | None:
    """The data directory ``path`` lies inside (its ``fbank/``, a shard folder), where ``path`` itself holds
    nothing a data directory does; else None."""
    if holds_data_files(path):
        return None
    return next((folder for folder in path.parents if holds_data_files(folder)), None)


def near_data_directory(path: Path) -> str | None:
    """Why the folder ``path``, given for a data directory, is none, where it holds nothing a data directory holds:
    a folder inside one (its fbank/, a shard folder), the folder holding one (the project's root), or another folder
    (a corpus, a hub model's folder). Each was told that DIR/dev.jsonl or DIR/spm_src.model, a file nobody named,
    was missing, with advice to run `sate prep` or `sate vocab` into the wrong folder (twenty-first hostile pass).
    None where ``path`` holds what a data directory does, or cannot be looked into (its own error says so)."""
    if not os.access(path, os.X_OK) or holds_data_files(path):
        return None
    inside = data_directory_above(path)
    if inside is not None:
        return f"a folder inside the data directory {inside}, not one itself: give {inside}"
    held = held_inside(path, lambda child: child.is_dir() and holds_data_files(child))
    if held:
        return (f"no data directory itself; it holds the data director{'y' if len(held) == 1 else 'ies'} "
                f"{few_paths(held)}: give {'it' if len(held) == 1 else 'one'}")
    return "no data directory: no manifests (SPLIT.jsonl), features or vocabulary in it (`sate prep --out` makes one)"


def temp_prefix(name: str) -> str:
    """``.NAME.`` for a temporary sibling of NAME, cut so that the whole temporary name (with the random part and
    ``.tmp``) fits the 255 bytes of NAME_MAX even when NAME itself is as long as allowed."""
    return "." + os.fsencode(name)[:TEMP_NAME_ROOM].decode("utf-8", "ignore") + "."


def make_temp_dir(parent: str | Path, name: str) -> Path:
    """A new directory in ``parent`` for building NAME (like `tempfile.mkdtemp`), with the mode `mkdir` would give
    it and a name that fits NAME_MAX."""
    path = Path(tempfile.mkdtemp(prefix=temp_prefix(name), suffix=".tmp", dir=parent))
    as_mkdir_makes_it(path)
    return path


def as_mkdir_makes_it(path: Path) -> None:
    """Give a folder `tempfile.mkdtemp` made (mode 0700) the mode `mkdir` would have: 0777 less the umask, and the
    setgid bit it took from a setgid parent, which a plain chmod cleared: a pack in a group's shared folder (mode
    2775) lost it, and its files were the user's group, not the folder's (nineteenth hostile pass)."""
    path.chmod((0o777 & ~current_umask()) | (path.stat().st_mode & stat.S_ISGID))


def remove_temp_dir(tmp: Path) -> None:
    """Remove a folder this process built (a pack, a model's files, an MT text store), whatever mode the umask
    gave it: under `umask 0777` it was made without any permission (as mkdir makes it), so `rmtree` could not list
    it and it stayed, `.PACK.XXXXXXXX.tmp` of mode 000 beside the pack (nineteenth hostile pass)."""
    with suppress(OSError):
        tmp.chmod(0o700)
    shutil.rmtree(tmp, ignore_errors=True)


def _mode_for(path: Path) -> int:
    """What open() would leave: a replaced file keeps its mode, a new one gets 0666 less the umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~current_umask()


def make_parents(directory: Path) -> list[Path]:
    """``directory`` and the parents it lacks, made (as ``mkdir -p``); the ones made, outermost first. A symlink on
    the way to a folder not made yet (another disk) is followed, as every output through a link is written: its
    mkdir said "File exists" (`sate evaluate --out LINK`, `sate analyze locality --out LINK`, `sate synth --out
    LINK`)."""
    directory = real_path(directory)
    missing = [d for d in (directory, *directory.parents) if not d.exists()][::-1]
    directory.mkdir(parents=True, exist_ok=True)
    return missing


def remove_empty(made: list[Path]) -> None:
    """Undo `make_parents` after a failed write: a command that wrote nothing (a full disk) leaves no empty
    folders behind. A folder something else has filled meanwhile stays."""
    for directory in reversed(made):
        try:
            directory.rmdir()
        except OSError:
            return


# A temporary file's writer holds an flock on it until the file is renamed into place or removed; one found unlocked
# and older than this many seconds was left by a writer that is gone (SIGKILL, a power cut) and is removed by the next
# write of that name. The age covers the instant between its creation and its lock.
ABANDONED_AFTER = 60.0
TEMP_TAIL = re.compile(r"[a-z0-9_]{8}\.tmp")  # what `tempfile.mkstemp` adds after the prefix, with our suffix
_TEMP_LOCKS: dict[Path, int] = {}  # temporary file -> a descriptor holding its lock until it is renamed or removed


def abandoned_temps(path: Path, min_age: float = ABANDONED_AFTER, folders: bool = False) -> Iterator[Path]:
    """The temporary siblings of ``path`` (`.NAME.XXXXXXXX.tmp` files, or with ``folders`` the folders `sate pack`
    builds in) that no writer holds, each yielded while this process holds its lock, for the caller to remove. Only
    names of the form this module makes for ``path`` are looked at, older than ``min_age`` seconds (the instant
    between a temporary's creation and its lock); where the file system has no locks none is yielded."""
    prefix, now = temp_prefix(path.name), time.time()
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and TEMP_TAIL.fullmatch(name[len(prefix):])):
            continue
        try:
            kind = entry.is_dir if folders else entry.is_file
            if not kind(follow_symlinks=False) or now - entry.stat(follow_symlinks=False).st_mtime < min_age:
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW) if folders else \
                _open_to_lock(entry.path)
        except OSError:
            continue
        try:
            held = try_flock(fd) and still_named(Path(entry.path), fd)
        except OSError:
            held = False
        try:
            if held:
                yield Path(entry.path)
        finally:
            os.close(fd)


def _sweep_abandoned(path: Path, min_age: float = ABANDONED_AFTER) -> list[Path]:
    """Remove the temporary siblings of ``path`` that no writer holds (`abandoned_temps`): SIGKILL during an atomic
    write left `.NAME.XXXXXXXX.tmp` beside the file for good; a live writer's file (locked) is never touched.
    `min_age` 0 is for a caller that holds the folder's own lock, so that no writer can be between a temporary
    file's creation and its lock. Returns what was removed."""
    removed = []
    for left in abandoned_temps(path, min_age):
        try:
            os.unlink(left)
            removed.append(left)
        except OSError:
            pass  # another sweeper took it, or the folder may not be written: the write itself will say so
    return removed


def _open_to_lock(path: str) -> int:
    """``path`` opened to be flocked: for writing, as NFS emulates flock with fcntl locks, and an exclusive one needs a
    descriptor open for writing (`man 2 flock`: EBADF on one read-only, so no sweep removed anything there: review
    of hand27t); read-only where writing is refused (a file not this user's), as a local flock takes that too."""
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        return os.open(path, os.O_RDWR | flags)
    except PermissionError:
        return os.open(path, os.O_RDONLY | flags)


def remove_abandoned(folder: Path, suffix: str) -> list[Path]:
    """Remove at once the temporary files of ``folder``'s ``*SUFFIX`` files that no writer holds, for a caller that
    holds the folder's own lock (`sate train`, `EXP/train.lock`): a run killed while it wrote `epoch005.ckpt` and
    resumed within `ABANDONED_AFTER` left its temporary checkpoint for good, as no later write has that name."""
    try:
        names = sorted({m.group(1) for name in os.listdir(folder)
                        if (m := re.fullmatch(r"\.(.+)\." + TEMP_TAIL.pattern, name)) and m.group(1).endswith(suffix)})
    except OSError:
        return []
    return [path for name in names for path in _sweep_abandoned(folder / name, min_age=0)]


def _discard(tmp: Path) -> None:
    """Remove a temporary file that will not be renamed, and let go of its lock."""
    tmp.unlink(missing_ok=True)
    _let_go(tmp)


def _let_go(tmp: Path) -> None:
    fd = _TEMP_LOCKS.pop(tmp, None)
    if fd is not None:
        os.close(fd)


@contextmanager
def _temporary_sibling(path: Path, mode: str) -> Iterator[tuple[IO, Path]]:
    """A new temporary file beside ``path`` (a name that fits NAME_MAX, the mode ``path`` has or `open` would
    give), flushed to disk when the block ends; removed on any error, which names ``path`` when it named no file.
    The caller renames it into place (`_rename_into`) or discards it (`_discard`); until then it stays locked, so
    that a later write of ``path`` can tell it from one a killed writer left (`_sweep_abandoned`)."""
    made = make_parents(path.parent)
    _sweep_abandoned(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path.name), suffix=".tmp", dir=path.parent)
    except BaseException as err:
        remove_empty(made)
        if isinstance(err, OSError) and err.filename is not None:
            # the file's own name: a file system out of inodes named `.hyp.txt.st04sahm.tmp`, a name never made
            # (nineteenth hostile pass); whether inodes ran out is seen now, before the set's other temporary
            # files are removed and free them
            err.filename, err.no_inodes = str(path), _out_of_inodes(path.parent)  # type: ignore[attr-defined]
        raise
    try:
        if try_flock(fd):  # a new file nobody else knows of yet: the lock is free; none where locks are not
            _TEMP_LOCKS[Path(tmp)] = os.dup(fd)  # the lock outlives the writing descriptor, until the rename
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            os.fchmod(f.fileno(), _mode_for(path))
            yield f, Path(tmp)
            f.flush()
            os.fsync(f.fileno())
    except BaseException as err:
        _discard(Path(tmp))
        remove_empty(made)
        if isinstance(err, OSError) and err.filename is None:
            err.filename = str(path)  # a failed write or fsync names no file; the message at the CLI must
        raise


STANDARD_NAMES = {1: "standard output", 2: "standard error"}  # as the CLI names them (sate.cli.STDOUT)


def _descriptor_named(name: str) -> int | None:
    """The descriptor number ``name`` spells (``/dev/stdin``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``,
    ``/proc/self/fd/N``, ``/proc/PID/fd/N`` with this process's PID), or None."""
    # digits 0-9: `\d` read /dev/fd/١ (no such entry) as descriptor 1 and wrote through it (nineteenth hostile pass)
    match = re.fullmatch(rf"/dev/std(in|out|err)|/dev/fd/([0-9]+)|/proc/(?:self|{os.getpid()})/fd/([0-9]+)",
                         os.path.normpath(name))
    if match is None:
        return None
    return {"in": 0, "out": 1, "err": 2}[match[1]] if match[1] else int(match[2] or match[3])


def own_descriptor(path: str | Path) -> int | None:
    """The open descriptor of this process that ``path`` names (``/dev/stdin``, ``/dev/stdout``, ``/dev/stderr``,
    ``/dev/fd/N``, ``/proc/self/fd/N``, or a symlink leading to one of them), or None. Whatever it is open on, it is
    written through the descriptor: the standard output the shell opened on a file (``>> log.txt``) resolves to that
    file, which an atomic write replaced, losing the log that ``>>`` was to append to. The links are followed one by
    one, since `os.path.realpath` goes on through /proc/self/fd/N to the file it is open on."""
    try:
        name = os.path.abspath(path)
        for _ in range(40):  # the kernel's own limit on links followed
            fd = _descriptor_named(name)
            if fd is None:  # a linked folder on the way (/dev/fd -> /proc/self/fd)
                head, tail = os.path.split(name)
                name = os.path.join(os.path.realpath(head), tail)
                fd = _descriptor_named(name)
            if fd is not None:
                os.fstat(fd)
                return fd
            if not os.path.islink(name):
                return None
            name = os.path.normpath(os.path.join(os.path.dirname(name), os.readlink(name)))
    except (OSError, ValueError):  # a closed descriptor, a name no file system takes (a NUL byte)
        return None
    return None


def is_stream(path: str | Path) -> bool:
    """Is ``path`` (links followed) a named pipe or a character device (``/dev/stdout``, ``/dev/null``, a FIFO), or
    one of this process's own descriptors (`own_descriptor`)? Such an output holds nothing to replace: it is written
    in place, as the shell's ``>`` would."""
    if own_descriptor(path) is not None:
        return True
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


class _NothingWritten(Exception):
    """Raised in `atomic_fill`'s `atomic_open` block when its filler wrote nothing, so that the rename is not made."""


@contextmanager
def atomic_open(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """`open(path, mode)` for writing ("w" text in UTF-8, or "wb"), renamed into place when the block ends.

    A symlink is followed: the file it points to is replaced, and the link stays. A stream (`is_stream`) is
    written directly: it has no directory entry to rename over, and what a reader took cannot be taken back."""
    encoding = {} if "b" in mode else {"encoding": "utf-8"}
    fd = own_descriptor(path)
    if fd is not None or is_stream(path):
        try:
            if fd is not None:  # appended where >> appends, after what the command printed there before
                sys.stdout.flush()
            with os.fdopen(os.dup(fd), mode, **encoding) if fd is not None else open(path, mode, **encoding) as f:
                yield f
        except OSError as err:  # a write names no file: the CLI's line must (the standard output as itself,
            if err.filename is None:  # so that a closed pipe, `--out /dev/stdout | head`, ends quietly)
                err.filename = STANDARD_NAMES.get(fd, str(path))  # type: ignore[arg-type]
            raise
        return
    path = Path(os.path.realpath(path))
    with _temporary_sibling(path, mode) as (f, tmp):
        yield f
    try:
        _rename_into(tmp, path)
    except BaseException:
        _discard(tmp)
        raise


def _rename_into(tmp: Path, path: Path) -> None:
    """`os.replace` of a written temporary file onto ``path``; a directory standing at ``path`` (sate's own
    `plan.json` made a folder) is named alone: "Is a directory" named the temporary name first, a file already gone."""
    try:
        os.replace(tmp, path)
    except IsADirectoryError as err:
        raise IsADirectoryError(err.errno, err.strerror, str(path)) from None
    _let_go(tmp)


def atomic_fill(path: str | Path, fill: Callable[[IO], bool]) -> bool:
    """Write ``path`` through `atomic_open` with ``fill``, which says whether it wrote anything. Where it wrote
    nothing (every input of the command failed), a file there is left as it was: the rename replaced it with an
    empty one, a training log or notes named by mistake lost to a run that produced nothing. A stream is written
    through as always. Returns whether the file was written."""
    try:
        with atomic_open(path) as f:
            if not fill(f) and not is_stream(path):
                raise _NothingWritten
    except _NothingWritten:
        return False
    return True


def replace_together(contents: dict[Path, bytes], record: Path | None = None, record_text: str = "",
                     remove: Iterable[Path] = ()) -> None:
    """Write a set of files that must agree with each other (a vocabulary's models and token lists, a corpus's
    manifests) and the ``record`` saying the set is complete and what made it, where there is one. Every file is
    written to its temporary sibling first, so a full disk or an interrupt there changes none of them and loses
    nothing the user had; only then is the old record removed, the files renamed into place and the new record
    renamed last. A kill among the renames (no writes, no waiting on the disk) leaves no record, and the set is made
    again. Folders made for the files are removed again when the set is not written (`sate prep --out NEW`). A
    stream among them (`--out /dev/stdout`, `is_stream`) has nothing to replace: it is written in place once every
    temporary file is, before the renames. The renames hold the sets' folders (`folders_held`), so two runs that
    write one set at once leave the one's whole set or the other's, never a mix. ``remove``: files of an earlier
    set that the new one has not, removed with the old record, before the renames (removed after them, a kill left
    them beside the new record). A set with no record is listed in its folder's journal (`layout.REPLACING`) while
    its files are renamed; SIGKILL, which no handler holds off, leaves the journal, and `check_set_whole` refuses
    what it lists."""
    temps: list[tuple[Path, Path]] = []  # (temporary, target), those not yet renamed
    made: list[Path] = []
    last = [(record, record_text.encode())] if record is not None else []
    streams = {path: data for path, data in contents.items() if is_stream(path)}
    journals: dict[Path, tuple[set[str], list[str]]] = {}  # the folders whose journal this run wrote
    renames = -1  # how many renames the set needs, once its files are written
    removing = list(remove)
    # the old record, put back when the set's first rename fails (a file bind-mounted at a name of the set: EBUSY)
    # and no file of the old set is gone: it was removed first, and an earlier evaluate run lost its results.json
    # with its set whole (nineteenth hostile pass)
    old_record = _small_file(record) if record is not None and not removing else None
    check_distinct(path for path in [*contents, *(p for p, _ in last)] if path not in streams)
    if record is None:
        check_journal_place(Path(os.path.realpath(path)).parent for path in contents if path not in streams)
    try:
        for path, data in [*contents.items(), *last]:
            if path in streams:
                continue
            path = Path(os.path.realpath(path))
            made += make_parents(path.parent)
            with _temporary_sibling(path, "wb") as (f, tmp):
                temps.append((tmp, path))
                f.write(data)
        for path, data in streams.items():
            with atomic_open(path, "wb") as f:
                f.write(data)
        with folders_held([target.parent for _, target in temps] + [path.parent for path in removing]), \
                endings_held():
            if record is not None:
                temps[-1][1].unlink(missing_ok=True)
            for path in removing:
                path.unlink(missing_ok=True)
            renames = len(temps)
            if record is None:
                _open_journals([target for _, target in temps], journals)
            while temps:
                _rename_into(*temps[0])
                temps.pop(0)
            for folder, (names, earlier) in journals.items():
                _write_journal(folder, [name for name in earlier if name not in names])
    except BaseException:
        if temps and len(temps) == renames:  # nothing renamed: each journal back to what it listed before
            for folder, (_, earlier) in journals.items():
                with suppress(OSError):  # one that cannot be put back lists more than it must: a refusal, no loss
                    _write_journal(folder, earlier)
            if old_record is not None and record is not None and not os.path.lexists(record):
                with suppress(OSError), atomic_open(record, "wb") as f:  # not put back: the set is made again
                    f.write(old_record)
        for tmp, _ in temps:
            _discard(tmp)
        remove_empty(made)  # a folder a renamed file is in stays
        raise


def _small_file(path: Path, limit: int = 1 << 20) -> bytes | None:
    """What a regular file of at most ``limit`` bytes holds (a set's record), or None."""
    try:
        if os.stat(path, follow_symlinks=False).st_size <= limit and os.path.isfile(path) \
                and not os.path.islink(path):
            return Path(path).read_bytes()
    except OSError:
        pass
    return None


def check_distinct(paths: Iterable[Path]) -> None:
    """Refuse two of the files of one set (`replace_together`; the commands call it before their work too) that lead
    to one file by a link between them: prep's dev.jsonl a link to train.jsonl, vocab's tokens_tgt.txt to
    tokens_src.txt, a map of `analyze attention` to --out were both renamed onto it, the one's content lost, exit 0
    (seventeenth hostile pass)."""
    twice = given_twice(paths)
    if twice is not None:
        raise SateError(f"{twice[1]}: leads to the same file as {twice[0]} (a link between them, or one folder "
                        "mounted at two places), where the command writes two files of one set; remove the link, or "
                        "give each its own name")


def _listed(journal: Path) -> list[str] | None:
    """The names the journal at ``journal`` lists, or None where it is no journal of sate's (missing, damaged, a
    file of other content)."""
    value = read_record(journal, "the command")  # no journal is written again: `check_set_whole` names it first
    names = value.get("names") if isinstance(value, dict) else None
    return [name for name in names if isinstance(name, str)] if isinstance(names, list) else None


def _journal(folder: Path) -> list[str]:
    """The names that ``folder``'s journal (`layout.REPLACING`) lists: none where there is none, or it is damaged
    (a writer refuses a file there that is no journal of sate's before its work: `check_journal_place`)."""
    return _listed(folder / layout.REPLACING) or []


def _write_journal(folder: Path, names: list[str]) -> None:
    """``folder``'s journal listing ``names``, or none when there are none."""
    if names:
        atomic_write_text(folder / layout.REPLACING, json.dumps({"names": sorted(names)}) + "\n")
    else:
        (folder / layout.REPLACING).unlink(missing_ok=True)


def _open_journals(targets: list[Path], opened: dict[Path, tuple[set[str], list[str]]]) -> None:
    """Before a set with no record is renamed into place: each folder's journal lists the set's names there, with
    those an earlier killed set left (only a set that replaces them all ends their doubt). Each folder's (this set's
    names, the earlier ones) goes into ``opened`` as its journal is written, so that a refusal at the next folder's
    (a full disk) puts back those written: `sate report --out A/results.md --curves B/curves.png` left A's journal
    listing a table it never renamed (sixteenth hostile pass). A single file is replaced whole by its rename and
    needs none."""
    folders: dict[Path, set[str]] = {}
    for target in targets:
        folders.setdefault(target.parent, set()).add(target.name)
    if len(targets) < 2 and not any(os.path.lexists(folder / layout.REPLACING) for folder in folders):
        return
    for folder, names in folders.items():
        earlier = _journal(folder)
        _write_journal(folder, [*names, *(name for name in earlier if name not in names)])
        opened[folder] = names, earlier


def check_journal_place(folders: Iterable[Path]) -> None:
    """Refuse a `layout.REPLACING` in one of ``folders`` that is not sate's journal (a regular file listing names),
    before a set with no record is written there (`replace_together`; the commands call it before their work too):
    the journal is written under that name and removed after, so a user's own file of that name was removed, and one
    that was a symlink had the file it led to replaced with the journal (sixteenth hostile pass)."""
    for folder in dict.fromkeys(folders):
        journal = folder / layout.REPLACING
        if not os.path.lexists(journal):
            continue
        what = (f"a symlink to {os.readlink(journal)}" if os.path.islink(journal) else what_is_there(journal) or
                ("a file sate did not write (no list of names)" if _listed(journal) is None else None))
        if what is not None:
            raise _not_a_journal(journal, what, "move it away, or write elsewhere")


def _not_a_journal(journal: Path, what: str, advice: str) -> SateError:
    """The one refusal of what stands at a journal's name and is no journal of sate's, for writers and readers."""
    return SateError(f"{journal}: {what}, where sate keeps its journal while it replaces files of {journal.parent} "
                     f"together (and removes it after): {advice}")


def check_set_whole(path: Path, advice: str) -> None:
    """Refuse ``path`` where its folder's journal lists it: a run replacing it with other files of its set (`sate
    prep`'s manifests) was killed by SIGKILL among the renames, and the set may now be part new, part old: `sate
    prep` left the new corpus's train.jsonl beside the old dev.jsonl (fifteenth hostile pass). A live run's renames
    (the folder held) end first. ``advice``: the command that writes the set again. A link is judged where it leads,
    where the set was renamed and listed: beside the link, `sate vocab` read a linked new train.jsonl (sixteenth
    pass)."""
    real = Path(os.path.realpath(path))
    folder = real.parent
    if not os.path.lexists(folder / layout.REPLACING):
        return
    # no file (a user's folder, a named pipe): "remove it, the command writes it again" was wrong advice for a journal
    if (kind := what_is_there(folder / layout.REPLACING)) is not None:
        raise _not_a_journal(folder / layout.REPLACING, kind, "move it away")
    with folders_held([folder]):
        names = _journal(folder)
    if real.name in names:
        others = [name for name in names if name != real.name]
        raise SateError(f"{path}: the run that replaced it{' with ' + first_few(others) if others else ''} was "
                        f"killed among the renames ({folder / layout.REPLACING} lists them), so they may be of two "
                        f"runs: {advice}")


@contextmanager
def endings_held() -> Iterator[None]:
    """Hold off the signals that end a command (SIGINT, SIGTERM, SIGHUP, SIGXCPU: `SIGNAL_ENDINGS`) for the block,
    which must be short: `replace_together`'s renames (and its journal's few bytes). One that comes meanwhile ends
    the command once they are done, as it would have. Ctrl-C or `kill` among them left the set half renamed, where
    no record says so: `sate prep` over a data directory left the new corpus's train.jsonl beside the old corpus's
    dev.jsonl (fifteenth hostile pass). Python runs its handlers in the main thread alone, so they are swapped
    there (a signal mask would not do: another thread takes the signal); SIGKILL cannot be held."""
    came: list[int] = []
    try:
        with handlers_swapped(SIGNAL_ENDINGS, lambda signum, frame: came.append(signum)):
            yield
    finally:
        if came:  # the handler put back, now: the command's own (an interrupt), or the default that ends it
            handler = signal.getsignal(came[0])
            if callable(handler):
                handler(came[0], None)
            else:
                os.kill(os.getpid(), came[0])


def open_lock(path: Path) -> IO[str]:
    """The lock file at ``path`` (created if need be), open to read and append. A lock is sate's own file, so a
    symlink there is refused, never followed: a `DATA/features.lock` linked to a pack's `model.pt` had the pid
    written into the model, then the link removed; a directory, a named pipe or a device is named for what it is
    (a pipe was "File or stream is not seekable", naming nothing)."""
    kind = link_or_what_is_there(path)
    if kind is None:
        try:  # O_NOFOLLOW: a link made since the look above is refused too (ELOOP)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
        except OSError as err:
            if err.errno != errno.ELOOP:
                raise OSError(err.errno, err.strerror, str(path)) from None
            kind = "a symlink"
        else:
            info = os.fstat(fd)
            # a file bind-mounted there is another file's too: the notes bound at DATA/features.lock were cut to the
            # pid, exit 0 (nineteenth hostile pass)
            mounted = mount_point(Path(os.path.abspath(path)))
            if stat.S_ISREG(info.st_mode) and info.st_nlink < 2 and not mounted:
                return os.fdopen(fd, "a+", encoding="utf-8")
            os.close(fd)
            # a hard link is refused as a symlink is: a DATA/features.lock that was another name of a user's notes
            # had the notes cut to the pid, exit 0 (seventeenth hostile pass)
            kind = what_is_there(path) or ("a mount point (another file is bound there, perhaps a file of yours)"
                                           if mounted else "a hard link (the file has other names, one of them "
                                           "perhaps a file of yours)" if stat.S_ISREG(info.st_mode) else
                                           "not a regular file")
    advice = "unmount it" if kind.startswith("a mount point") else "remove it"
    raise SateError(f"{path}: {kind}, not a lock file sate writes; {advice}")


NO_LOCKS = (errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL)  # what flock says on a file system without


def try_flock(fd: int) -> bool | None:
    """An exclusive advisory lock on ``fd``, without waiting: True when taken, False when another process holds it,
    None where the file system has no locks (`NO_LOCKS`; the caller goes on unlocked, or judges otherwise)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as err:
        if err.errno not in NO_LOCKS:
            raise
        return None
    return True


def still_named(path: Path, fd: int) -> bool:
    """Is the file open on ``fd`` still the one at ``path``? A lock's holder removes its file before it lets go, so a
    file opened just before that and locked just after is one nobody else will lock."""
    try:
        return os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _locked(path: Path, what: str) -> IO[str]:
    """The lock file at ``path``, open and locked (unlocked where the file system has no locks), or a `SateError`
    naming its holder. A holder removes the file before it lets go, so a file opened just before that and locked
    just after is one nobody else will lock: both this run and the next, which made the file anew, went on as the
    only one. The lock is taken again on the file the name now gives, until the two agree."""
    while True:
        f = open_lock(path)
        try:
            taken = try_flock(f.fileno())
        except OSError:
            f.close()
            raise
        if taken is False:
            f.seek(0)
            holder = f.read().strip()[:40] or "?"
            f.close()
            raise SateError(f"{path.parent} is in use by another {what} (pid {holder}; lock {path}); wait for it "
                            "to end")
        if taken is None or still_named(path, f.fileno()):
            return f
        f.close()  # removed (or made anew) by the holder that just ended: lock the file there now


def lock_holder(path: Path) -> str | None:
    """The pid written in the lock file at ``path`` while another process holds it (`exclusive`), else None (no
    file, nobody holds it, a file system without locks): for a reader to say that a run is making what it misses.
    The look takes a shared lock for an instant, which a run starting in that instant may find held."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return os.read(fd, 32).decode("ascii", "replace").strip() or "?"
    except OSError:
        return None
    finally:
        os.close(fd)
    return None


@contextmanager
def exclusive(path: Path, what: str) -> Iterator[None]:
    """Hold an advisory lock on ``path`` for the block, or raise a `SateError` naming the holder (``what`` says
    which command holds it). The kernel drops a `flock` when its process ends in any way, so a lock left by a
    killed run never blocks; where the file system has no locks, the block runs unlocked."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path, what) as f:
        try:  # unbuffered, so that a full disk fails here, naming the lock, and not again when the file closes
            if os.fstat(f.fileno()).st_size:  # the pid a run before left
                os.ftruncate(f.fileno(), 0)
            os.write(f.fileno(), f"{os.getpid()}\n".encode())
        except OSError as err:
            with suppress(OSError):  # a lock file made by this run, on a full disk, was left for good (twenty-first
                # hostile pass: DATA/features.lock, EXP/train.lock beside "No space left on device")
                if still_named(path, f.fileno()):
                    path.unlink()
            raise OSError(err.errno, err.strerror, str(path)) from None
        try:
            yield
        finally:
            with suppress(OSError):
                if still_named(path, f.fileno()):
                    path.unlink()  # before letting go, so that nobody locks a file about to vanish


@contextmanager
def directory_held(path: Path, what: str) -> Iterator[None]:
    """Hold an advisory lock on the directory ``path`` itself for the block, or raise a `SateError` saying that
    another ``what`` writes there: two runs into one folder interleaved their renames (the one's hypotheses beside
    the other's results). The lock is the directory's, so no lock file is left behind by a kill (a lock file in a
    results folder would be litter beside the results); the kernel drops it when the process ends in any way. Where
    the file system has no locks, or the folder may be written but not read (mode 0333), the block runs unlocked."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except PermissionError:
        fd = None
    held = None
    try:
        if fd is not None and try_flock(fd) is False:
            raise SateError(f"{path} is in use by another {what}; wait for it to end, or write elsewhere")
        if fd is not None:
            held = _identity(fd)
            _HELD_HERE.add(held)
        yield
    finally:
        _HELD_HERE.discard(held)
        if fd is not None:
            os.close(fd)


# The folders this process holds (`directory_held`), as (device, inode): a second lock on one of them from this
# process (`folders_held` inside `sate evaluate`'s hold) would wait on itself, since flock locks are per open file.
_HELD_HERE: set[tuple[int, int] | None] = set()
RENAMES_WAIT = 10.0  # seconds `folders_held` waits for another run's renames (milliseconds) before it gives up


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


@contextmanager
def folders_held(folders: Iterable[Path]) -> Iterator[None]:
    """Hold each of ``folders`` for the block, waiting briefly for another run that holds one: `replace_together`'s
    renames, so that two `report` or `analyze attention` runs that wrote one set of files at once left one run's
    table beside the other's curves. Folders are taken in one order (device, inode), so two runs cannot wait on each
    other. One held for longer (`sate evaluate` writes there) is refused by name after `RENAMES_WAIT` seconds."""
    fds: dict[tuple[int, int], tuple[int, Path]] = {}
    try:
        for folder in dict.fromkeys(folders):
            try:
                fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            except PermissionError:  # a folder that may be written but not read (0333): unlocked, as directory_held
                continue
            try:
                key = _identity(fd)
            except OSError:
                os.close(fd)
                raise
            if key in fds or key in _HELD_HERE:
                os.close(fd)
            else:
                fds[key] = fd, folder
        deadline = time.monotonic() + RENAMES_WAIT
        for fd, folder in (fds[key] for key in sorted(fds)):
            while try_flock(fd) is False:
                if time.monotonic() > deadline:
                    raise SateError(f"{folder} is in use by another sate run; wait for it to end, or write elsewhere")
                time.sleep(0.05)
        yield
    finally:
        for fd, _ in fds.values():
            os.close(fd)


@contextmanager
def held_out_dir(out: Path, what: str) -> Iterator[None]:
    """Create the output folder ``out`` once the inputs are loaded and before the long work, and hold it for the
    block (`directory_held`): a bad path fails in a second, not after the work; a second ``what`` into the same
    folder is refused before it starts (two runs interleaved their files); a run that ends without its results in
    the block (a kill, a failure, a full disk) removes the folders it made again."""
    try:
        made = make_parents(out)
    except OSError as err:
        raise SateError(f"--out {out}: cannot create ({err.strerror or err})") from None
    try:
        with directory_held(out, what):
            yield
    except BaseException:
        remove_empty(made)
        raise


# What an OSError means for the user, by errno (the CLI's one line).
JOBS_ADVICE = ", or start fewer worker processes (--jobs)"  # left out for a command without --jobs
OS_HINTS = {
    errno.ENOSPC: "the disk is full: free space there, or write elsewhere",
    errno.EDQUOT: "the disk quota is used up: free space there, or write elsewhere",
    errno.EROFS: "a read-only file system: write elsewhere",
    errno.ENAMETOOLONG: "a name longer than the file system allows: choose a shorter one",
    errno.EFBIG: "beyond the largest file allowed here: a file size limit (ulimit -f) or the file system's own",
    errno.EACCES: "see the file's and its folders' permissions (ls -l), or use another place",
    errno.EPERM: "the system allows no such change there (a special or protected file system): use another place",
    # a low `ulimit -n` (worker processes each take pipes): it read "Too many open files" and named no limit
    errno.EMFILE: "a process's limit (ulimit -n) is reached: raise it" + JOBS_ADVICE,
    errno.ENFILE: "the system's limit is reached: close other programs" + JOBS_ADVICE,
}


# ENOSPC where the file system has room but no inode left for a new file (`df -i`): "the disk is full" sent the user
# to `df -h`, which showed free space (nineteenth hostile pass, a tmpfs of nr_inodes=8)
NO_INODES = "the file system has room for no more files (no free inodes: df -i): remove files there, or write elsewhere"


def _out_of_inodes(name: object) -> bool:
    """Is the file system holding ``name`` (or its nearest folder there is) out of inodes, with blocks to spare?"""
    if not isinstance(name, str | bytes | os.PathLike):
        return False
    for folder in (Path(os.fsdecode(name)), *Path(os.fsdecode(name)).parents):
        try:
            vfs = os.statvfs(folder)
        except OSError:
            continue
        return vfs.f_files > 0 and vfs.f_ffree == 0 and vfs.f_bavail > 0
    return False


# The longest path the system resolves (Linux's PATH_MAX): a longer name names no file there is, so a message shows
# its ends alone; a config value of 3 MB (data.dir, a teacher's path) was a 3 MB "one-line" error.
PATH_MAX = 4096


def _shown_name(name: object) -> str:
    text = str(name)
    return text if len(text) <= PATH_MAX else f"{text[:60]}...{text[-60:]} (a name of {len(text):,} characters)"


def temp_dir_settled() -> None:
    """Settle `tempfile.gettempdir()` before a library asks it while being imported: portalocker, which sacrebleu
    imports, does, and on a disk with no space left (TMPDIR, /tmp and the current directory full) the probe it runs, a
    small file written in each candidate, failed in every one: `sate score`, which writes no file, ended "No usable
    temporary directory found in [...]", saying nothing of a full disk (27th hostile pass). The first candidate
    folder there is is named then; a temporary file made there later meets the disk's own error, which names it."""
    if tempfile.tempdir is not None:
        return
    try:
        tempfile.gettempdir()
    except OSError:
        named = [os.environ.get(name, "") for name in ("TMPDIR", "TEMP", "TMP")] + ["/tmp", "/var/tmp", "/usr/tmp"]
        tempfile.tempdir = next((folder for folder in named if folder and os.path.isdir(folder)), os.curdir)


def describe_os_error(err: OSError, jobs: bool = True) -> str:
    """One line saying what went wrong and where: ``PATH: No space left on device (the disk is full: ...)``.
    ``jobs``: the command starts worker processes (has --jobs), which the advice on open files may name."""
    where = " -> ".join(_shown_name(name) for name in (err.filename, err.filename2) if name is not None)
    what = err.strerror or str(err) or type(err).__name__
    hint = OS_HINTS.get(err.errno) if err.errno is not None else None
    if hint is not None and not jobs:  # `sate vocab` under `ulimit -n 10` was told of a --jobs it has not got
        hint = hint.removesuffix(JOBS_ADVICE)
    if err.errno == errno.ENOSPC and (getattr(err, "no_inodes", False) or _out_of_inodes(err.filename)):
        hint = NO_INODES
    return (f"{where}: " if where else "") + what + (f" ({hint})" if hint else "")


# What `sate.errors.one_line` escapes that ``json.dumps`` leaves as it is inside a string (it escapes U+0000-U+001F
# itself): DEL and the C1 controls (U+0085 splits a line for `str.splitlines`), the line and paragraph separators,
# the bidirectional controls (a name shown reordered) and the lone surrogates of a name that is not UTF-8.
_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff" + "".join(sorted(BIDI_CONTROLS)) + "]")


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` that can be written as UTF-8 and read back exactly, each character
    a message would escape (`_JSON_RAW`) written as JSON's ``\\uXXXX``: the lone surrogates were a UnicodeEncodeError
    when the file was written, the separators and U+0085 split a line for `str.splitlines`, and DEL or a
    right-to-left override in a file name reached a terminal that showed the file (nineteenth hostile pass). All of
    them occur only inside strings."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m[0]):04x}", json.dumps(value, ensure_ascii=False, **options))


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_open(path) as f:
        f.write(text)


def atomic_write_lines(path: str | Path, lines: Iterable[str]) -> None:
    """Each line followed by a newline; `lines` may be a generator (nothing appears if it fails)."""
    with atomic_open(path) as f:
        for line in lines:
            f.write(line + "\n")


def atomic_torch_save(obj: Any, path: str | Path) -> None:
    import torch  # heavy: torch

    with atomic_open(path, "wb") as f:
        try:
            torch.save(obj, f)
        except RuntimeError as err:
            # a write that fails in torch's zip writer (EFBIG under `ulimit -f`, ENOSPC) is followed by its own
            # check at the end, "unexpected pos 64 vs 0", which hid the OSError: a traceback (nineteenth pass)
            if isinstance(err.__context__, OSError):
                raise err.__context__ from None
            raise


class UnsafeCheckpoint(SateError):
    """A checkpoint holding pickled objects that would run code when loaded: refused, never loaded."""

    def __init__(self, message: str, names: str) -> None:
        super().__init__(message)
        self.names = names  # the pickled globals found, for the caller's message ("unknown" when unreadable)


def damage(path: Path) -> str | None:
    """Why a file looks damaged (empty, cut short, a checksum that disagrees), or None if it looks whole.

    `torch.save` writes a zip archive; an interrupted copy or save loses its end, where the zip directory
    is, and a flipped byte inside a tensor is read without a word by torch but fails the zip's CRC-32.
    """
    size = path.stat().st_size
    if size == 0:
        return "the file is empty (0 bytes)"
    with open(path, "rb") as f:
        head = f.read(len(ZIP_MAGIC))
    if head != ZIP_MAGIC[:len(head)]:
        return None  # not torch's zip format: foreign, not damaged
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as err:
        return f"the file is damaged or truncated ({size} bytes; {err}): was a copy or a save interrupted?"
    return f"the file is damaged: {bad} fails its checksum" if bad else None


def _not_torch(path: Path) -> str | None:
    """What a file is when `torch.save` cannot have written it (neither its zip archive nor an old-style pickle, which
    starts with a protocol byte), or None. A manifest or a WAV given as a model was "not a plain-tensor checkpoint",
    with torch's advice to load it unsafely."""
    with open(path, "rb") as f:
        head = f.read(len(ZIP_MAGIC))
    if head.startswith((ZIP_MAGIC, b"\x80")):
        return None
    return binary_kind(path) or "text"


def known_kind(head: bytes) -> str | None:
    """What a file sate knows is, by its first bytes (a model file, a recording, an image, a compressed file, a
    stored feature shard, a SentencePiece model), or None: where text or YAML is read, such a file is named as
    what it is; "not UTF-8 text (byte 25)" or "a NUL byte: binary data" named nothing a user would recognise."""
    for magic, what in (MAGIC | COMPRESSED_MAGIC).items():
        if head.startswith(magic):
            return what
    if KALDI_ARK.match(head):
        return "a Kaldi feature archive (a stored feature shard, .ark)"
    if SENTENCEPIECE.match(head):
        return "a SentencePiece model"
    return None


def wide_text(head: bytes) -> str | None:
    """The encoding of a file holding a NUL when its first bytes are text in UTF-16 or UTF-32 (Windows Notepad's
    "Unicode", PowerShell's `>`), as iconv names it, or None: a text file was "a NUL byte (at byte 3): binary data,
    not text" (twenty-second hostile pass), a config "not UTF-8 text (byte 0)" (twenty-seventh)."""
    marks = ((b"\xff\xfe\0\0", "UTF-32"), (b"\0\0\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))
    marked = next((name for mark, name in marks if head.startswith(mark)), None)
    if marked is not None or len(head) < 8:
        return marked
    # no mark: a character in UTF-32 is four bytes, the last (LE) or first (BE) NUL and the next below 0x11, and
    # text's low byte mostly not NUL (CJK's may be); checked first, as ASCII in it is NULs every other byte too
    quads = [head[k::4] for k in range(4)]
    for name, (high, next_high, low) in (("UTF-32LE", (3, 2, 0)), ("UTF-32BE", (0, 1, 3))):
        if (not quads[high].strip(b"\0") and max(quads[next_high], default=0) <= 0x10
                and (len(quads[low]) - quads[low].count(0)) * 2 >= len(quads[low])):
            return name
    # ASCII in UTF-16 is a NUL every other byte, and none between
    even, odd = head[0::2], head[1::2]
    if odd.count(0) * 2 >= len(odd) and b"\0" not in even:
        return "UTF-16LE"
    if even.count(0) * 2 >= len(even) and b"\0" not in odd:
        return "UTF-16BE"
    return None


def binary_kind(path: Path) -> str | None:
    """What a file is when it is not text (by its first bytes), or None for text."""
    with open(path, "rb") as f:
        head = f.read(SNIFF)
    for magic, what in MAGIC.items():
        if head.startswith(magic):
            return what
    if b"\0" in head:
        return "binary data"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(head) - 4:  # not merely a character cut by the sniff's end
            return "binary data (not UTF-8 text)"
    return None


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _unsafe_globals(path: Path) -> str:
    import torch  # heavy: torch, only when a checkpoint is read

    try:
        names = torch.serialization.get_unsafe_globals_in_checkpoint(path)
    except Exception:  # noqa: BLE001 - the names only make the message better
        return "unknown"
    return ", ".join(sorted(names)[:4]) or "unknown"  # sorted: two saves of one model name the same classes


def hub_hint(directory: Path) -> str:
    """Where a checkpoint was given a downloaded hub model (a Marian, Whisper or wav2vec2 directory, or a file of
    one): such a model is named in the model config, never loaded as a checkpoint (`--init-from mt=MARIAN_DIR`
    was only "is a directory", `mt=DIR/model.safetensors` "holds binary data")."""
    if not (directory / "config.json").is_file():
        return ""
    return (f" ({directory} is a downloaded model: name it in the model config, as textual.path with textual.type "
            "hf_marian or acoustic.path with acoustic.type whisper or hf_*; docs/models.md)")


def read_checkpoint(path: str | Path, mmap: bool = False) -> Any:
    """`torch.load` with weights_only=True and the zip checksums verified: pickled code or foreign objects are
    refused, never run (`UnsafeCheckpoint` when the file holds pickled objects), and a damaged file is one
    `SateError` saying so. Checking the checksums costs a fraction of a second for a model file; torch itself
    would decode a damaged tensor into wrong weights without a word. With `mmap` the tensors are mapped from the
    file, read only where used (a reader of headers, or of weights without the optimizer's states)."""
    import torch  # heavy: torch, only when a checkpoint is read

    path = Path(path)
    if not path.is_file():
        if path.is_dir():  # a pack given for its model file, an experiment for its model.pt: once "not found"
            inside = next((path / name for name in (layout.MODEL, layout.LAST_CHECKPOINT, f"checkpoints/"
                                                    f"{layout.LAST_CHECKPOINT}") if (path / name).is_file()), None)
            raise SateError(f"{path}: is a directory, not a checkpoint or model file" +
                            (f" (did you mean {inside}?)" if inside is not None else hub_hint(path)))
        if path.exists():
            raise SateError(f"{path}: is a device or a pipe, not a checkpoint or model file")
        link = what_is_there(path)  # a broken link or a loop was "not found", the link itself being there
        if link is not None:
            raise SateError(f"{path}: {link}, not a checkpoint or model file")
        raise SateError(f"checkpoint not found: {path}{relative_note(path)}")  # a config's relative path, run elsewhere
    try:
        data = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except Exception as err:  # torch raises UnpicklingError, RuntimeError or others by case
        why = damage(path)
        if why is not None:
            raise SateError(f"{path}: {why}") from None
        what = _not_torch(path)
        if what is not None:
            raise SateError(f"refusing to load {path}: it holds {what}, not a checkpoint or model file"
                            f"{hub_hint(path.parent)}") from None
        message = f"refusing to load {path}: not a plain-tensor checkpoint ({_first_line(err)})"
        if isinstance(err, pickle.UnpicklingError):
            names = _unsafe_globals(path)
            if "Unsupported global" in str(err) or names != "unknown":
                # not torch's first line: "...you have two options, \x1b[1mdo those steps...", options never shown
                # (`--init-from` of a pickled file; hand28a, twenty-eighth hostile pass)
                raise UnsafeCheckpoint(f"refusing to load {path}: not a plain-tensor checkpoint: it holds pickled "
                                       f"objects ({names}) that would run code when loaded", names) from None
        raise SateError(message) from None
    why = damage(path)
    if why is not None:
        raise SateError(f"{path}: {why}")
    return data


def json_int(text: str) -> int:
    """A JSON integer (`json.loads`'s ``parse_int``): one longer than Python converts (4,300 digits) is a ValueError
    saying so, where Python's own advises the programmer to raise the limit."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"a number of {len(text):,} digits, too long to read") from None


def loads_json(text: str, **options: Any) -> Any:
    """`json.loads` as sate reads a file it did not write: a number too long to read is a ValueError like other bad
    JSON (`json_int`); nesting too deep stays a RecursionError for the caller to name."""
    return json.loads(text, parse_int=json_int, **options)


class KeyTwice(ValueError):
    """A JSON object naming one key twice (the key is its argument)."""


def unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object's pairs as a dict (`loads_json`'s ``object_pairs_hook``); a key given twice is refused, as in
    YAML (`sate.config`): JSON readers keep the last without a word, so a row edited by appending ``"offset": 0``
    read another segment."""
    row = dict(pairs)
    if len(row) != len(pairs):
        seen: set[str] = set()
        raise KeyTwice(next(key for key, _ in pairs if key in seen or seen.add(key)))  # type: ignore[func-returns-value]
    return row


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read a block at a time (a model file, a text of any length)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def contents_digest(blobs: Iterable[bytes]) -> str:
    """SHA-256 over byte strings in order, each with its length (where one ends counts): a record of the files a
    command wrote, by which it finds them edited or damaged since."""
    h = hashlib.sha256()
    for blob in blobs:
        h.update(len(blob).to_bytes(8, "little"))
        h.update(blob)
    return h.hexdigest()


MAX_RECORD_BYTES = 64 << 20  # far beyond any record sate writes (a plan of thousands of shards: kilobytes)


def read_record(path: Path, writer: str) -> object | None:
    """The JSON value of a record sate wrote itself (an index, a plan, a sidecar), or None when it is missing or
    damaged (unreadable, not UTF-8, not JSON, nested too deeply, larger than any record): the caller computes it
    again. Anything but a file in its place (a named pipe, a device, a directory, a broken link, a loop) is refused
    naming it: a named pipe blocked the command for ever, and a link to /dev/zero was read until memory ran out.
    ``writer`` is the command that writes the record (e.g. "`sate features`"): the advice said "the command writes
    it again", which `sate pack` or `sate train` reading a data directory's record never does."""
    kind = what_is_there(path)
    if kind is not None and path.parent.is_dir():  # a loop above it is named where the folder is used, as before
        raise SateError(f"{path}: {kind}, where sate keeps a record of its own; remove it ({writer} writes it again)")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_RECORD_BYTES + 1)
        return json.loads(data.decode("utf-8")) if len(data) <= MAX_RECORD_BYTES else None
    except (OSError, ValueError, RecursionError):  # a few kilobytes of brackets overflow the parser's stack
        return None


def read_json(path: Path, at_most: tuple[int, str] | None = None) -> RawMapping:
    """A JSON object from `path`, or a `SateError` naming the file (the JSON we read and did not write comes from
    hub model directories, hence the hint). ``at_most``: (bytes, what writes it) for a record sate writes small (a
    results.json is about 1 KB), refused by its size before it is read: `report` read a 2-GB one whole, and JSON
    parsed takes several times its size in memory."""
    require_file(path, "a JSON file", f"{path} is missing: is {path.parent} a complete download of a hub model?")
    if at_most is not None and (size := path.stat().st_size) > at_most[0]:
        raise SateError(f"{path}: {size:,} bytes, far more than {at_most[1]} writes there: not its file")
    try:
        data = loads_json(path.read_text(encoding="utf-8"), object_pairs_hook=unique_keys)
    except KeyTwice as err:  # a results.json edited by appending `"bleu": 99`: reported without a word
        raise SateError(f"{path}: the key {shown(err.args[0])} is given twice (JSON readers keep the last without a "
                        "word)") from None
    except ValueError as err:  # not UTF-8, not JSON, a number too long to read
        what = None  # a gzipped results.json was "not valid JSON ('utf-8' codec can't decode byte 0x8b ...)"
        if isinstance(err, UnicodeDecodeError):  # (twenty-first hostile pass)
            with open(path, "rb") as f:
                what = known_kind(f.read(SNIFF))
        raise SateError(f"{path}: {what}, not JSON text" if what is not None else
                        f"{path}: not valid JSON ({err})") from None
    except RecursionError:  # a few kilobytes of brackets overflow the parser's stack
        raise SateError(f"{path}: not valid JSON (nested too deeply to read)") from None
    if not isinstance(data, dict):
        raise SateError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data
