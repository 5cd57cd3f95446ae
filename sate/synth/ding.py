"""The Ding German-English dictionary's example sentences, the text of the `sate synth --text ding` corpus.

Ding (Debian package `trans-de-en`, GPL-2+) is fetched at run time and never shipped. Its example
sentences are open-domain (about 16k pairs, a huge vocabulary): real German, but more than a CPU demo
can learn in minutes; the default corpus is the generated phrasebook (sate.synth.phrasebook).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from sate.errors import SateError, first_few
from sate.files import SNIFF, atomic_open, known_kind, not_a_file

DING_PACKAGE = "trans-de-en"
DING_PATH_IN_PACKAGE = "usr/share/trans/de-en"

_ANNOTATION = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|\([^()]*\)")
# A sentence ends in one of these; cleaning only removes and replaces characters, so text without any of them never
# becomes a sentence (most dictionary entries: reading the file skips their cleaning).
_SENTENCE_END = re.compile(r"[.?!]")
_TYPOGRAPHY = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201a": "'", "\u00b4": "'", "`": "'",
                             "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
                             "\u2013": "-", "\u2014": "-", "\u00a0": " "})


def default_cache_dir() -> Path:
    """$SATE_CACHE, or ~/.cache/sate where it is unset or empty: `SATE_CACHE=$CACHE` with CACHE unset was the current
    directory, and each command fetched its download anew into whatever folder it ran in (26th hostile pass)."""
    return Path(os.environ.get("SATE_CACHE") or Path.home() / ".cache" / "sate")


def cached_ding(cache_dir: Path) -> Path:
    """Where `fetch_ding` keeps the dictionary it fetched."""
    return cache_dir / "ding" / "de-en"


def fetch_ding(cache_dir: Path) -> Path:
    """Return the Ding dictionary file, downloading `trans-de-en` with apt-get if needed."""
    target = cached_ding(cache_dir)
    if os.path.lexists(target):  # a folder there was "Is a directory", not saying whose it is or what to do
        not_a_file(target, "the Ding dictionary `sate synth` fetches there: remove it and run again")
        return target
    installed = Path("/") / DING_PATH_IN_PACKAGE
    if installed.exists():
        return installed
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise SateError(f"cannot fetch the Ding dictionary: `{tool}` is missing. Download the Debian "
                            f"package {DING_PACKAGE} by hand, unpack it and pass --ding PATH/{DING_PATH_IN_PACKAGE}")
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run(["apt-get", "download", DING_PACKAGE], cwd=tmp, capture_output=True, text=True)
        debs = list(Path(tmp).glob(f"{DING_PACKAGE}_*.deb"))
        if got.returncode != 0 or not debs:
            raise SateError(f"`apt-get download {DING_PACKAGE}` failed ({got.stderr.strip()[-300:]}). "
                            f"Run `apt-get update` (as root) and retry, or pass --ding PATH to the unpacked "
                            f"file {DING_PATH_IN_PACKAGE}")
        unpacked = subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(Path(tmp) / "x")], capture_output=True,
                                  text=True)
        if unpacked.returncode != 0:  # a damaged download, a full disk: was a CalledProcessError traceback
            raise SateError(f"`dpkg-deb -x {debs[0].name}` failed ({unpacked.stderr.strip()[-300:]}); retry, or "
                            f"unpack the package by hand and pass --ding PATH/{DING_PATH_IN_PACKAGE}")
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(target, "wb") as f, open(Path(tmp) / "x" / DING_PATH_IN_PACKAGE, "rb") as src:
            shutil.copyfileobj(src, f)
    return target


def normalize_typography(text: str) -> str:
    """Straight quotes and apostrophes, plain dashes and spaces, single spaces."""
    return " ".join(text.translate(_TYPOGRAPHY).split())


def _clean(text: str) -> str:
    previous = None
    while previous != text:  # annotations may nest: "(… {n} …)"
        previous, text = text, _ANNOTATION.sub(" ", text)
    text = normalize_typography(text)
    return re.sub(r"\s+([.,;:?!])", r"\1", text)


def _is_sentence(text: str) -> bool:
    return (len(text.split()) >= 4 and text[:1].isupper() and text[-1:] in ".?!"
            and not any(c in text for c in "/~\u2026") and "..." not in text)


def parse_ding_line(line: str) -> list[tuple[str, str]]:
    """The (English, German) example-sentence pairs of one dictionary line.

    A line is `de | de2 | ... :: en | en2 | ...`; the `|` sub-entries correspond one to one.
    Lines whose two sides have different numbers of sub-entries cannot be aligned and give none.
    Annotations `{...}`, `[...]`, `(...)` are stripped; both sides must be capitalised sentences
    ending in . ? or !, of at least 4 words, without "/", "~" or an ellipsis.
    """
    if line.startswith("#") or " :: " not in line:
        return []
    de_side, en_side = line.rstrip("\n").split(" :: ", 1)
    if not _SENTENCE_END.search(en_side) or not _SENTENCE_END.search(de_side):
        return []
    de_parts, en_parts = de_side.split(" | "), en_side.split(" | ")
    if len(de_parts) != len(en_parts):
        return []
    pairs = []
    for de, en in zip(de_parts, en_parts, strict=True):
        en_first = _first_sentence(en)
        de_first = _first_sentence(de) if en_first else None
        if de_first and en_first:
            pairs.append((en_first, de_first))
    return pairs


def _first_sentence(entry: str) -> str | None:
    """The first well-formed sentence among an entry's `;`-separated variants, e.g.
    "Shake well before using!; Shake well before use!" gives the first one."""
    for variant in entry.split(";"):
        if not _SENTENCE_END.search(variant):
            continue
        variant = _clean(variant)
        if _is_sentence(variant):
            return variant
    return None


def _binary(head: bytes) -> bool:
    """Whether a file's first bytes are binary data (the .deb, a .gz or a disk image given for the text), which holds
    no pair and is read no further. A stray NUL in a good file's comment is not: that file was refused as "is it the
    Ding file?" where it had read all its pairs (review31y). Nor is an older Ding release's ISO-8859-1 text, which
    is told to convert: not UTF-8, but free of control bytes."""
    if known_kind(head) is not None or head.count(0) > len(head) // 100:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.reason == "unexpected end of data" and len(head) - err.start < 4:
            return False  # a character cut at the head's end
        return any(byte < 0x20 and byte not in b"\t\n\r\f\v" for byte in head)
    return False


def read_ding_pairs(path: Path) -> list[tuple[str, str]]:
    """All distinct (English, German) sentence pairs of the dictionary, in file order. Read as UTF-8, strictly: an
    older Ding release is ISO-8859-1, whose umlauts were read as U+FFFD and voiced into the corpus's German, half of
    its sentences, exit 0 (29th hostile pass). Lines end in LF, CRLF or a lone CR (classic Mac), as text mode reads
    them: split on LF alone, a CR-only file was one line of no pairs (review29y)."""
    seen: set[tuple[str, str]] = set()
    pairs = []
    utf8 = 0  # lines with non-ASCII characters that are UTF-8
    wrong: list[tuple[int, UnicodeDecodeError]] = []  # lines that are not
    with open(path, "rb") as f:
        head = f.read(SNIFF)
        # binary data (the .deb, a .gz given for the text) has no pairs, and the caller says so: not "convert it"
        if _binary(head):  # read no further: a disk image given by mistake was read whole (300 MB in 7 s) for no pair
            return []
        f.seek(0)
        # Latin-1 maps each byte to one character, so the lines are split as text mode splits them (CR and LF are
        # never part of a UTF-8 sequence), and each is decoded from its own bytes
        with io.TextIOWrapper(f, encoding="latin-1", newline=None) as text:
            for number, raw in enumerate(text, 1):
                try:
                    line = raw.encode("latin-1").decode("utf-8")
                except UnicodeDecodeError as err:
                    wrong.append((number, err))
                    continue
                utf8 += not line.isascii()
                for pair in parse_ding_line(line):
                    # its sentence voiced up to the NUL alone, exit 0 (31st hostile pass); a NUL in a comment or a
                    # line that gives no pair is never voiced, and such a file read whole before (review31y)
                    if "\0" in pair[0] + pair[1]:
                        raise SateError(f"{path}:{number}: a NUL byte in a sentence pair, which no Ding text holds (an "
                                        "engine stops reading a sentence there, and `sate prep` refuses a text file "
                                        "holding one): remove it")
                    if pair not in seen:
                        seen.add(pair)
                        pairs.append(pair)
    if wrong:
        number, err = wrong[0]
        if len(wrong) > utf8:  # the file is in another encoding
            raise SateError(f"{path}:{number}: not UTF-8 text (an older Ding release is ISO-8859-1): convert it with "
                            "`iconv -f ISO-8859-1 -t UTF-8 FILE > FILE.utf8` and pass that")
        # a UTF-8 file with a line of another encoding (one edited in a Latin-1 editor): converting the whole file,
        # as said, garbled every other umlaut (`ü` as `Ã¼`), and that was read, exit 0 (review29y)
        others = f" (and line{'s' if len(wrong) > 2 else ''} {first_few([n for n, _ in wrong[1:]])})" \
            if len(wrong) > 1 else ""
        raise SateError(f"{path}:{number}: not UTF-8 text (byte 0x{err.object[err.start]:02x}, the line's byte "
                        f"{err.start + 1}){others}, in a file whose {utf8:,} other lines with non-ASCII characters are "
                        "UTF-8: write that line again in UTF-8; converting the whole file would garble the others")
    return pairs
