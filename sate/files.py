"""Writing files so that a kill never leaves a half-written file that looks complete.

Everything `sate` writes goes to a temporary sibling (same directory, so the rename is atomic), is
flushed to disk, and replaces the target only once complete; on any error the temporary file is removed
and the previous version of the target, if any, is untouched.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_open(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """`open(path, mode)` for writing ("w" text in UTF-8, or "wb"), renamed into place when the block ends."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
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
