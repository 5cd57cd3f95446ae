"""Writing files so that a kill never leaves a half-written file that looks complete.

Everything `sate` writes goes to a temporary sibling (same directory, so the rename is atomic), is
flushed to disk, and replaces the target only once complete; on any error the temporary file is removed
and the previous version of the target, if any, is untouched.

Permissions are those `open()` and `mkdir` give: `tempfile` creates its files 0600 and its directories
0700, which would hide models and manifests from colleagues on a shared server, so a new file gets
0666 and a new directory 0777 less the umask, and a replaced file keeps its mode.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


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


def make_temp_dir(parent: str | Path, prefix: str) -> Path:
    """A new directory in ``parent`` (like `tempfile.mkdtemp`) with the mode `mkdir` would give it."""
    path = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=parent))
    path.chmod(0o777 & ~current_umask())
    return path


def _mode_for(path: Path) -> int:
    """What open() would leave: a replaced file keeps its mode, a new one gets 0666 less the umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~current_umask()


@contextmanager
def atomic_open(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """`open(path, mode)` for writing ("w" text in UTF-8, or "wb"), renamed into place when the block ends."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            os.fchmod(f.fileno(), _mode_for(path))
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_open(path) as f:
        f.write(text)


def atomic_write_lines(path: str | Path, lines: Iterable[str]) -> None:
    """Each line followed by a newline; `lines` may be a generator (nothing appears if it fails)."""
    with atomic_open(path) as f:
        for line in lines:
            f.write(line + "\n")


def atomic_torch_save(obj: Any, path: str | Path) -> None:
    import torch

    with atomic_open(path, "wb") as f:
        torch.save(obj, f)
