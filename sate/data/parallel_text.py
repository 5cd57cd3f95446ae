"""Parallel text of any size, read as a stream: plain or gzip files, line-aligned pairs, a bounded sample.

MT pre-training on WMT-size data (millions of pairs) must never hold the corpus in memory: `read_pairs` yields
one aligned pair at a time from any number of file pairs (gzip is recognised by its magic bytes, not by the
name), with errors naming the file and line (invalid UTF-8, one side ending before the other), and
`reservoir_sample` keeps a uniform sample of bounded size for training a vocabulary.
"""

from __future__ import annotations

import gzip
import os
import random
import re
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice, zip_longest
from pathlib import Path
from typing import BinaryIO, TypeVar

from sate.data.manifest import SNIFF_LINES, check_sentences, entities_note, legacy_encoding
from sate.data.text import HAN_KANA
from sate.errors import SateError, one_line
from sate.files import what_is_there

T = TypeVar("T")
GZIP_MAGIC = b"\x1f\x8b"
# A sentence of MT text (WMT's longest lines hold some kilobytes). A line is read whole: a file without line breaks
# (old Mac line endings, \r alone; a binary file) was one line of all its bytes, 7 MB of gzip asked for gigabytes.
MAX_LINE_BYTES = 1 << 20


@dataclass(frozen=True)
class Pair:
    """One aligned line pair: which file pair (`source`), its 0-based line index, and both sides (stripped)."""

    source: int
    index: int
    en: str
    tgt: str


def not_a_text_file(path: Path) -> str | None:
    """Why MT text cannot be read from `path` (missing, or anything but a regular file, named as `sate.files` names
    it: a directory, a named pipe, a device, a symlink loop, a broken symlink), or None for a regular file. A pipe
    was called missing, though it was there: MT text is read twice, counted and then streamed."""
    what = what_is_there(path)
    if what is None:
        return None if path.is_file() else "file is missing"
    stream = what in ("a named pipe", "a device or socket")
    return f"{what}, not a text file" + (" (MT text is read twice: its lines counted, then streamed)" if stream else "")


def open_binary(path: Path) -> BinaryIO:
    """`path` for reading bytes, decompressed when it is gzip."""
    why = not_a_text_file(path)
    if why is not None:
        raise SateError(f"{path}: {why}")
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == GZIP_MAGIC else open(path, "rb")  # type: ignore[return-value]


def _lines(path: Path) -> Iterator[str]:
    """Decoded lines, split on ``\\n`` only (as `sate.data.manifest.read_text_lines`), ``\\r`` and a BOM at any line's
    start dropped."""
    try:
        with open_binary(path) as f:
            for lineno, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), start=1):
                if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                    raise SateError(f"{path}:{lineno}: a line of more than {MAX_LINE_BYTES:,} bytes, not a sentence "
                                    "(lines end with \\n; a file with \\r alone, or not text?)")
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise SateError(f"{path}:{lineno}: not valid UTF-8 ({err.reason})"
                                    f"{legacy_encoding(path, raw)}") from None
                # a mark at a later line's start is a file's joined on with `cat` (30th hostile pass)
                yield line.rstrip("\n").rstrip("\r").removeprefix("\ufeff")
    except (OSError, EOFError, zlib.error) as err:  # gzip.BadGzipFile is an OSError; a cut gzip raises EOFError
        raise SateError(f"{path}: cannot read: {_why(err)}") from None


def count_lines(path: Path) -> int:
    """Lines of a plain or gzip file, read in blocks (no decoding)."""
    count, last = 0, b"\n"
    try:
        with open_binary(path) as f:
            while block := f.read(1 << 20):
                count += block.count(b"\n")
                last = block[-1:]
    except (OSError, EOFError, zlib.error) as err:
        raise SateError(f"{path}: cannot read: {_why(err)}") from None
    return count + (last != b"\n")


def _why(err: BaseException) -> str:
    """Why a file could not be read; a damaged deflate stream inside a gzip (zlib.error, which a cut or CRC check does
    not raise: a traceback) is said to be damaged."""
    return f"the gzip data is damaged ({err})" if isinstance(err, zlib.error) else str(err)


def _check_sentences(*paths: Path) -> None:
    """Refuse a file of another kind given as MT text (`not_sentences`): a manifest or a MuST-C yaml given for it
    trained a vocabulary or a model, exit 0 (twenty-second hostile pass); or text a tokenizer wrote (`preprocessed`),
    but for a corpus's own text (`corpus_text`); note entities a tokenizer did not write (`entities_note`)."""
    for path in paths:
        lines = list(islice(_lines(path), SNIFF_LINES))
        shipped = corpus_text(path)
        check_sentences(path, lines, "MT text of one sentence a line", sniff_tokenizer=not shipped)
        note = None if shipped else entities_note(path, lines)
        if note is not None:
            print(note, file=sys.stderr)


def corpus_text(path: Path) -> bool:
    """Is ``path`` a corpus's text that `sate prep` reads as shipped, beside its segments' list (MuST-C's
    `txt/train.de` beside `train.yaml`, Augmented LibriSpeech's `train/train.fr` beside `alignments.meta`)? The
    recipes give MuST-C's train text as MT text with --mt-extra (stage 2 and 4), where it was sniffed for a
    tokenizer's escapes that `sate prep` of the same text, hours before, let be (review33m)."""
    stem = path.name.split(".", 1)[0]
    return os.path.isfile(path.parent / f"{stem}.yaml") or os.path.isfile(path.parent / "alignments.meta")


def check_pairs(files: Sequence[tuple[Path, Path]]) -> list[int]:
    """Line counts of each (English, target) file pair, which must agree; read before any real work."""
    counts = []
    for en, tgt in files:
        _check_sentences(en, tgt)
        n_en, n_tgt = count_lines(en), count_lines(tgt)
        if n_en != n_tgt:
            raise SateError(f"{en} has {n_en} lines but {tgt} has {n_tgt}")
        counts.append(n_en)
    return counts


# Of the fewer word types of an MT target file and the train split's translations, at least this share are the
# other's too when both are one language (a TED corpus against news: about half; two small phrasebook samples: a
# quarter); French against German: a few in a hundred
OTHER_LANGUAGE_SHARE = 0.1
ORDER_LINES = 2000  # lines of each side, and rows of the train split, that tell which side is English
_WORD = re.compile(r"[^\W\d_]+")
# Scripts written without spaces between words (Chinese, Japanese kana and kanji; Thai, Lao, Khmer and Myanmar too,
# though no language code compared here is theirs): a run of them is a clause, not a word, so two texts of one such
# language shared none of their "words" and --mt-text news.zh over an En-Zh corpus was refused as another language
# (fix24d); each character of them counts as a word.
_UNSPACED = re.compile(f"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff{HAN_KANA}]")


_KANA = re.compile("[\u3040-\u30ff]")


def _unspaced_words(text: str) -> int | None:
    """How many words of a text are characters of an unspaced script, where they are most of its words, else None
    (one Japanese word in German lines says nothing of the German). Words as `words_of` counts them: a run of Latin
    letters once, each character of an unspaced script once, so that "Facebook" in Chinese lines weighs one word,
    not eight."""
    words = _tokens(text)
    unspaced = sum(1 for word in words if _UNSPACED.fullmatch(word))
    return unspaced if unspaced and unspaced * 2 >= len(words) else None


def unspaced(lines: Sequence[str]) -> bool:
    """Is a text mostly of a script written without spaces between words (Chinese, Japanese; Thai, Lao, Khmer,
    Myanmar)?"""
    return _unspaced_words("".join(lines)) is not None


def _kana(lines: Sequence[str]) -> bool | None:
    """Is a text of an unspaced script written with kana (Japanese), or None where it is no such text (`unspaced`)?
    Counting a character of an unspaced script as a word, Japanese shares Chinese's ideographs, so a .ja file over
    Chinese translations passed as the same language (24th hostile pass, review); kana, a twentieth of the unspaced
    characters at least, is Japanese's alone."""
    text = "".join(lines)
    unspaced = _unspaced_words(text)
    return None if unspaced is None else len(_KANA.findall(text)) * 20 >= unspaced


def _language(path: Path) -> str:
    """The language a corpus file's name ends in (``train.de``, ``train.en.gz``: de, en), lower case, or ''."""
    name = path.name.lower().removesuffix(".gz")
    return name.rpartition(".")[2] if "." in name else ""


def _tokens(text: str) -> list[str]:
    """The words of a text: runs of letters, each character of an unspaced script one word."""
    return _WORD.findall(_UNSPACED.sub(r" \g<0> ", text))


def words_of(lines: Iterable[str], lower: bool = True) -> set[str]:
    """The word types of some lines, lower case unless not ``lower`` (letters only)."""
    return {word for line in lines for word in _tokens(line.lower() if lower else line)}


def shared_words(words: set[str], others: set[str]) -> float | None:
    """The share of the fewer word types of two texts that the other holds too, or None where either has too few
    (20) to tell: at least `OTHER_LANGUAGE_SHARE` for texts of one language."""
    if min(len(words), len(others)) < 20:
        return None
    return len(words & others) / min(len(words), len(others))


def _share(words: set[str], known: set[str]) -> float:
    return len(words & known) / len(words) if words else 0.0


def check_pair_order(files: Sequence[tuple[Path, Path]], rows: Iterable[dict], option: str) -> None:
    """Refuse a pair of MT text files given target first: `--mt-text train.de train.en` (or the shell's
    `train.*`, which sorts de before en) trained the source vocabulary and the MT source on German, exit 0 (twenty-
    second hostile pass). Told by the names (.en second, another language first) or, failing that, by the words:
    the first file's are mostly those of the train split's translations and the second's those of its transcripts
    (``rows``: the split's manifest rows; their first ORDER_LINES)."""
    rows = list(islice(rows, ORDER_LINES))
    transcripts = words_of(str(row.get("src_norm") or "") for row in rows)
    translations = words_of(str(row.get("tgt") or "") for row in rows)
    for en, tgt in files:
        _check_sentences(en, tgt)  # what a file is, before which side it is
        if _same_file(en, tgt):  # `--mt-text train.en train.en` trained the target side on English, exit 0 (25th
            # hostile pass)
            raise SateError(f"{option}: {en} and {tgt} are one file, given as both sides; give the English text, then "
                            "its translations")
        if _language(tgt) == "en" and _language(en) not in ("", "en"):
            why = f"by their names: .{_language(en)}, then .en"
        else:
            first, second = words_of(islice(_lines(en), ORDER_LINES)), words_of(islice(_lines(tgt), ORDER_LINES))
            if min(len(first), len(second), len(transcripts), len(translations)) < 20:  # too few words to tell
                continue
            if not (_share(first, translations) > _share(first, transcripts)
                    and _share(second, transcripts) > _share(second, translations)):
                continue
            why = (f"by their words: {en.name}'s are mostly the train split's translations', {tgt.name}'s its "
                   "transcripts'")
        given, instead = ((f"{en} {tgt}", f"{tgt} {en}") if option.startswith("--") else
                          (f"[{en}, {tgt}]", f"[[{tgt}, {en}], ...]"))
        raise SateError(f"{option} {given}: the English side goes first ({why}); give {option} {instead}")


def _same_file(a: Path, b: Path) -> bool:
    """Are two names one file (the same name twice, a link, a path through another folder)?"""
    try:
        return os.path.samefile(a, b)
    except OSError:  # not there: its reader says so
        return False


# Target languages of MuST-C (v1, v2, v3) and CoVoST 2's En->X: a file name ending in one names its language. Other
# endings (`.tok`, `.tc`, `.txt`, `.bpe`) say nothing of one.
LANGUAGE_CODES = frozenset("ar ca cs cy de es et fa fr id it ja ko lv mn nl pt ro ru sl sv ta tr vi zh".split())
_PAIR = re.compile(r"en-([a-z]{2,3})")  # MuST-C's pair folders, `sate synth`'s, opus-mt's names: the one pattern
# Helsinki-NLP's opus-mt names that use another code than MuST-C's for its language (opus-mt-en-jap is Japanese)
_MODEL_CODES = {"jap": "ja"}
# ISO 639-5 codes of language groups that Helsinki-NLP's opus-mt models name as their target (several languages)
GROUP_CODES = frozenset("aav afa alv art ath bat ber bnt cau ccs cel cpf cpp crp cus dra euq fiu gem gmq gmw grk iir "
                        "ine inc ira iro itc map mkh mul nic phi poz pqe pqw roa sal sem sit sla tai trk tut urj zle "
                        "zls zlw".split())


def pair_language(name: str) -> str | None:
    """The target language of a MuST-C pair folder's name (``en-de``: de), or None for any other name."""
    match = _PAIR.fullmatch(name)
    return match.group(1) if match else None


def model_target(name: str) -> tuple[bool, str | None]:
    """Is ``name`` an opus-mt model's folder (``opus-mt-en-fr``, the hub cache's ``models--Helsinki-NLP--opus-mt-en-
    jap``), and the one target language it names (fr, ja), None for a model of several (a group's code, ``-en-mul``,
    ``-en-gmw``, or a group written out, ``-en-ROMANCE``)? A group's model named no language and let a folder above it
    name one (24th hostile pass, reviews); a name with more after the code (``opus-mt-en-de-converted``) is none."""
    if "opus-mt" not in name or "-en-" not in name:
        return False, None
    code = name.rpartition("-en-")[2]
    lang = pair_language("en-" + code)
    if lang is None:
        return code.isalpha() and code.isupper(), None
    lang = _MODEL_CODES.get(lang, lang)
    return True, None if lang in GROUP_CODES else lang


def corpus_folder(rows: Iterable[dict]) -> tuple[str, Path] | None:
    """The target language of a split's rows and the folder that says it, from their first row's audio path, or None
    (another corpus): MuST-C's ``ROOT/en-XX/data/SPLIT/wav/TALK.wav`` (`sate prep --mustc-root` writes them so), its
    ``ROOT/en-XX``; or fr for Augmented LibriSpeech's ``ROOT/SET/audiofiles/UTT.wav`` (En-Fr alone), its
    ``ROOT/SET/audiofiles`` (no en-fr folder there to name)."""
    for row in islice(rows, 1):
        path = Path(str(row.get("audio") or ""))
        parts = path.parts
        if len(parts) >= 5 and parts[-4] == "data" and parts[-2] == "wav" and (lang := pair_language(parts[-5])):
            return lang, path.parents[3]
        if len(parts) >= 3 and parts[-2] == "audiofiles" and parts[-3] in ("train", "other", "dev", "test"):
            return "fr", path.parent
    return None


def corpus_target_language(rows: Iterable[dict]) -> str | None:
    """The target language of a split's rows by their audio's corpus folder (`corpus_folder`), or None."""
    found = corpus_folder(rows)
    return found[0] if found else None


def check_target_language(files: Sequence[tuple[Path, Path]], rows: Iterable[dict], option: str) -> None:
    """Refuse MT text whose target file's name says another language than the train split's corpus
    (`corpus_target_language`) where its words agree: `sate vocab --mt-text news.en news.fr` into an En-De data
    directory trained the target vocabulary on French beside German, exit 0 (24th hostile pass). Names that say no
    language (`.txt`, `.tok`) and corpora whose folders say none pass. The folders are the audio's real paths, which
    a talk linked to another pair's copy of it (MuST-C's pairs share their talks) makes the other pair's: so the
    words decide, those of the target file against the train split's translations (few in common: another
    language), and where there are too few words to tell, a note says it and the work goes on."""
    rows = list(islice(rows, ORDER_LINES))
    found = corpus_folder(rows)
    if found is None:
        return
    lang, folder = found
    ours = [str(row.get("tgt") or "") for row in rows]
    translations = words_of(ours)
    for en, tgt in files:
        named = _language(tgt)
        # a target side named .en (English, the source: `--mt-text a.en b.en`) is told by its words too (25th pass)
        if named not in LANGUAGE_CODES | {"en"} or named == lang:
            continue
        lines = list(islice(_lines(tgt), ORDER_LINES))
        share = shared_words(words_of(lines), translations)
        kana = (_kana(lines), _kana(ours))
        by_kana = share is not None and None not in kana and kana[0] != kana[1]  # Japanese and Chinese share ideographs
        if by_kana:
            share = 0.0
        told = share is not None
        if share is not None and share >= OTHER_LANGUAGE_SHARE:
            continue  # the translations' language, whatever the folders say
        line = (f"{option} {en} {tgt}: {tgt.name} is named as .{named} text, and the data directory's train split is "
                f"en-{lang} (by its audio's folder {one_line(str(folder))})")
        if not told:
            print(f"note: {line}, too few words to tell by them: if the text is not {lang}, give MT text whose "
                  f"target side is {lang}", file=sys.stderr)
            continue
        why = ((f"{tgt.name} is written with kana (Japanese), the train split's translations are not" if kana[0] else
                f"the train split's translations are written with kana (Japanese), {tgt.name} is not") if by_kana else
               "few of its words are in the train split's translations")
        raise SateError(f"{line}, and {why}: give MT text whose target side is {lang}")


def read_pairs(files: Sequence[tuple[Path, Path]]) -> Iterator[Pair]:
    """Every line pair of every file pair, in order, each side stripped of surrounding whitespace."""
    for source, (en_path, tgt_path) in enumerate(files):
        for index, (en, tgt) in enumerate(zip_longest(_lines(en_path), _lines(tgt_path))):
            if en is None or tgt is None:
                short, long = (en_path, tgt_path) if en is None else (tgt_path, en_path)
                raise SateError(f"{short} ends after {index} lines but {long} goes on")
            yield Pair(source, index, en.strip(), tgt.strip())


def reservoir_sample(items: Iterable[T], size: int, seed: int = 0) -> list[T]:
    """A uniform sample of at most `size` items, in memory of `size` (Algorithm R).

    When there are `size` items or fewer, all of them come back in their order; otherwise the sample is in
    reservoir order. Deterministic for a seed.
    """
    rng = random.Random(seed)
    sample: list[T] = []
    for seen, item in enumerate(items):
        if seen < size:
            sample.append(item)
        else:
            k = rng.randint(0, seen)
            if k < size:
                sample[k] = item
    return sample
