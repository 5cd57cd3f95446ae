"""Real human English speech: the Asterisk PBX's core prompts, the evaluation set for segmentation.

Everything else in the project is synthetic. Debian ships the Asterisk core sounds: 568 telephone
prompts ("Please enter your password followed by the pound key.") read by one US speaker (Allison
Smith), 8 kHz 16-bit wav in `asterisk-core-sounds-en-wav`, their texts in `asterisk-core-sounds-en`
(CC-BY-SA-3.0). They are fetched at run time with `apt-get download` into the cache (``SATE_CACHE``,
as the Ding dictionary is) and never shipped. Prompts are read resampled to 16 kHz, as the
pipeline expects. `sate.bench.recordings` builds long noisy recordings from them.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sate.data.audio import read_audio
from sate.errors import SateError
from sate.files import require_file
from sate.synth.ding import default_cache_dir

PACKAGES = ("asterisk-core-sounds-en-wav", "asterisk-core-sounds-en")
SOUNDS_IN_PACKAGE = "usr/share/asterisk/sounds/en_US_f_Allison"
TEXTS_IN_PACKAGE = "usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz"
CACHE_NAME = "asterisk-en"
TEXTS = "core-sounds-en.txt"


@dataclass(frozen=True)
class Prompt:
    """One recorded prompt: its name in the text list (``digits/5``), wav path and text."""

    name: str
    path: Path
    text: str


def fetch_asterisk(cache_dir: Path | None = None) -> Path:
    """The cached prompt directory (``sounds/`` and the text list), downloading the two packages if needed."""
    root = (cache_dir or default_cache_dir()) / CACHE_NAME
    if (root / TEXTS).is_file() and (root / "sounds").is_dir():
        return root
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise SateError(f"cannot fetch the Asterisk prompts: `{tool}` is missing. Download the Debian packages "
                            f"{' and '.join(PACKAGES)} by hand and unpack them into {root} (sounds/ from "
                            f"{SOUNDS_IN_PACKAGE}, {TEXTS} gunzipped)")
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent) as tmp:
        got = subprocess.run(["apt-get", "download", *PACKAGES], cwd=tmp, capture_output=True, text=True)
        debs = sorted(Path(tmp).glob("*.deb"))
        if got.returncode != 0 or len(debs) != len(PACKAGES):
            raise SateError(f"`apt-get download {' '.join(PACKAGES)}` failed ({got.stderr.strip()[-300:]}). "
                            "Run `apt-get update` (as root) and retry")
        for deb in debs:
            subprocess.run(["dpkg-deb", "-x", str(deb), str(Path(tmp) / "x")], check=True)
        staged = Path(tmp) / CACHE_NAME
        staged.mkdir()
        shutil.move(str(Path(tmp) / "x" / SOUNDS_IN_PACKAGE), staged / "sounds")
        with gzip.open(Path(tmp) / "x" / TEXTS_IN_PACKAGE, "rb") as src, open(staged / TEXTS, "wb") as f:
            shutil.copyfileobj(src, f)
        if root.exists():  # a half-made copy from an interrupted run
            shutil.rmtree(root)
        os.replace(staged, root)  # whole or not at all
    return root


def read_prompts(root: Path) -> list[Prompt]:
    """Every spoken prompt with a text, in the text list's order.

    Left out: tones and beeps (texts in brackets, "[this is a simple beep tone]"), the ``silence/``
    files, and names without a wav.
    """
    texts = root / TEXTS
    require_file(texts, "the prompts' texts",
                 f"{texts} is missing: not an Asterisk prompt directory (see sate.bench.asterisk)")
    prompts = []
    for number, line in enumerate(texts.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip() or line.startswith(";"):
            continue
        name, sep, text = line.partition(":")
        if not sep:
            raise SateError(f"{texts}:{number}: expected NAME: TEXT, got {line[:60]!r}")
        name, text = name.strip(), text.strip()
        path = root / "sounds" / f"{name}.wav"
        if not text or text.startswith("[") or name.startswith("silence/") or not path.is_file():
            continue
        prompts.append(Prompt(name, path, text))
    if not prompts:
        raise SateError(f"{texts}: no prompt with a wav in {root / 'sounds'}")
    return prompts


def load_prompt(prompt: Prompt) -> np.ndarray:
    """The prompt's samples, float32 16 kHz mono (the files are 8 kHz)."""
    return read_audio(prompt.path)
