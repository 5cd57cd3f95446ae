"""Manifests: the JSONL files every corpus reader writes and every later stage reads.

One row per segment: ``id``, ``audio`` (a file soundfile reads), ``offset`` and ``duration`` (seconds of that
file), ``n_frames`` (fbank frames of the segment), ``speaker``, ``src`` (the transcript as the corpus has it),
``src_norm`` (its normalised form, `sate.data.text`) and ``tgt`` (the translation, or null in a corpus that has
none: an ASR corpus such as LibriSpeech). ``DATA/<split>.jsonl`` holds one split. `sate prep` writes absolute
audio paths; a relative one (a manifest written by hand or by another tool) is relative to the manifest's own
directory as its path spells it, never to wherever the command is run from. A manifest that is a symlink to one in
another folder (`B/dev.jsonl` -> `../A/dev.jsonl`) reads a file only that folder holds from there, and refuses a path
naming two different files, one beside the link and one beside its target (`_linked_audio`).
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import unicodedata
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

from sate.data.audio import MAX_SECONDS, SPEED_RANGE
from sate.errors import SateError, one_line, shell_word, shown
from sate.files import (
    SNIFF,
    KeyTwice,
    atomic_write_lines,
    check_set_whole,
    data_directory_above,
    json_text,
    known_kind,
    loads_json,
    require_file,
    unique_keys,
    what_is_there,
    wide_text,
)
from sate.layout import DEFAULT_SPLITS, OPTIONAL_SPLITS
from sate.numbers import is_number
from sate.targets import url_refusal

TRAIN_SPLIT = "train"
MANIFEST_KEYS = ("id", "audio", "offset", "duration", "n_frames", "speaker", "src", "src_norm", "tgt")
# A split names DATA/<split>.jsonl and what is computed of it (fbank/<split>/, frozen/KEY/<split>.npy, an evaluation's
# folder): a name with a slash or "..", or a leading dot, would read another directory's manifest and write there.
# At most 200 characters: DATA/<split>.jsonl and its temporary sibling stay within NAME_MAX (a 100,000-character
# data.train was the OS's "File name too long", naming no key).
SPLIT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def is_split_name(name: object) -> bool:
    return isinstance(name, str) and SPLIT_NAME.fullmatch(name) is not None


def check_split_names(splits: Iterable[str], where: str = "--splits") -> None:
    """Each of `splits` a split name (letters, digits, '.', '_' and '-', not first a dot, at most 200), none twice;
    else one line naming ``where`` (the option or key)."""
    splits = list(splits)
    if len(set(splits)) != len(splits):
        raise SateError(f"{where} names a split twice: {' '.join(splits)}")
    bad = next((s for s in splits if not is_split_name(s)), None)
    if bad is not None:
        raise SateError(f"{where}: {shown(bad)} is not a split name (letters, digits, '.', '_' and '-'; at most 200)")


class NotUtf8(SateError):
    """A text file holding a byte that is not UTF-8 (`read_text_lines`): for a file sate wrote and someone edited (a
    feature index: a note saved in Latin-1), the reader adds what to do."""


def read_text_lines(path: Path, strip_bom: bool = False, gzipped: bool = False) -> list[str]:
    """Lines of a UTF-8 file, split on ``\\n`` only.

    ``str.splitlines`` also splits on U+2028 and friends, which occur in real transcripts and
    would shift every following line against the yaml. ``strip_bom`` drops a byte-order mark at the
    start (editors on Windows write one) for corpus text, and at any line's start: files joined with `cat` keep each
    one's mark there, which stayed in a translation (a piece of the target vocabulary, a reference's first word no
    hypothesis matched) or made a Kaldi key no other table holds (30th hostile pass); `sate score` keeps it, as
    sacrebleu does.
    ``gzipped``: the file is gzip-compressed text (`sate score` reads a ``*.gz`` so, as sacrebleu does).
    """
    if path.is_dir():
        raise SateError(f"{path}: is a directory, not a text file")
    if path.is_socket():  # no file can open one: it was "cannot read (No such device or address)"
        raise SateError(f"{path}: is a socket, not a text file")
    if not path.exists():  # a broken symlink or a loop is named as such: the user sees a name there
        raise SateError(f"{path}: {what_is_there(path) or 'file is missing'}")
    data = _text_bytes(path, gzipped)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise NotUtf8(f"{path}:{line}: not valid UTF-8 ({err.reason}){legacy_encoding(path, data)}") from None
    if strip_bom:  # before the split too: a file that is only a mark (an empty file saved "with BOM") has no lines
        text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r").removeprefix("\ufeff") if strip_bom else line.rstrip("\r") for line in lines]


# The encodings a text of a language is saved in where it is not UTF-8 (Windows' code page, China's national
# standard, Taiwan's Big5, Unix's KOI8), by the language a corpus file's name ends in (MuST-C's `dev.zh`, an MT text's
# `train.ru`), the likelier first: Python's codec names, which iconv knows too
LEGACY_ENCODINGS = {**dict.fromkeys(("en", "de", "fr", "es", "it", "pt", "nl"), ("CP1252",)),
                    "ru": ("CP1251", "KOI8-R"), "uk": ("CP1251", "KOI8-U"), "bg": ("CP1251",),
                    **dict.fromkeys(("ar", "fa"), ("CP1256",)), **dict.fromkeys(("ro", "cs", "pl"), ("CP1250",)),
                    "tr": ("CP1254",), "vi": ("CP1258",), "zh": ("GB18030", "BIG5"), "ja": ("CP932", "EUC-JP"),
                    "ko": ("CP949",)}
# The letters a text of the language is written in, beyond ASCII: a decoding whose letters are mostly others is not
# the text's. Every Big5 byte pair is a GB18030 one too, which makes kana, Cyrillic and private-use characters of
# Traditional Chinese, and so "reads whole" proved nothing: the advice followed trained on mojibake, exit 0 (review33m).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_LETTERS = {"zh": f"[{_HAN}]", "ja": f"[{_HAN}\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]",
            "ko": f"[{_HAN}\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]", "ar": "[\u0600-\u06ff\ufb50-\ufdff\ufe70-\ufeff]",
            **dict.fromkeys(("ru", "uk", "bg"), "[\u0400-\u04ff]")}
_LATIN = "[\u00c0-\u024f\u1e00-\u1eff]"
_ODD = frozenset(("Co", "Cn", "Cs"))  # private-use, unassigned, surrogate: no text's


def _reads_as(text: str, language: str) -> bool:
    """Is ``text`` (bytes decoded in one of the language's `LEGACY_ENCODINGS`) plausibly that language's? Its letters
    beyond ASCII nine in ten of the language's script, none private-use or unassigned, no control but a tab or a form
    feed, and its Cyrillic letters mostly lower case (KOI8-R's lower case is CP1251's upper: "рТЙЧЕФ, ЛБЛ ДЕМБ?").
    Its first 100,000 characters tell (a refusal's advice: a whole file's are read one by one)."""
    text = text[:100_000]
    if any(unicodedata.category(ch) in _ODD or (ch < " " and ch not in "\t\n\r\x0c") or "\x7f" <= ch <= "\x9f"
           for ch in text):
        return False
    letters = [ch for ch in text if ch > "\x7f" and ch.isalpha()]
    script = re.compile(_LETTERS.get("ar" if language == "fa" else language, _LATIN))
    if 10 * sum(script.match(ch) is not None for ch in letters) < 9 * len(letters):
        return False
    cyrillic = [ch for ch in letters if "\u0400" <= ch <= "\u04ff"]
    return 2 * sum(ch.isupper() for ch in cyrillic) <= len(cyrillic)


def legacy_encoding(path: Path, data: bytes) -> str:
    """What to add to "not valid UTF-8" of a corpus text ``path`` whose bytes (``data``: the file's, or the line's)
    read whole, and as its language's (`_reads_as`), in an encoding that language is often saved in
    (`LEGACY_ENCODINGS`): a Chinese translation saved in GBK was "dev.zh:1: not valid UTF-8 (invalid continuation
    byte)", nothing said of what to do, where a UTF-16 file is told to convert (33rd hostile pass). '' where the name
    says no language, the bytes read so in none, or they are UTF-8 but for a few damaged bytes (then converting would
    garble the rest)."""
    language = path.name.lower().removesuffix(".gz").rpartition(".")[2]
    text = data.decode("utf-8", errors="replace")
    if sum(ch > "\x7f" for ch in text) > 2 * text.count("\ufffd"):  # mostly UTF-8: a damaged byte
        return ""
    for encoding in LEGACY_ENCODINGS.get(language, ()):
        try:
            if _reads_as(data.decode(encoding), language):
                break
        except UnicodeDecodeError:
            pass
    else:
        return ""
    name, new = shell_word(str(path)), shell_word(f"{path}.utf8")
    convert = (f"zcat {name} | iconv -f {encoding} -t UTF-8 | gzip > {new}" if path.name.lower().endswith(".gz") else
               f"iconv -f {encoding} -t UTF-8 {name} > {new}")
    return (f"; it reads as {encoding}, an encoding {language} text is saved in: convert it ({convert}, then move that "
            "over it)")


# What YAML and str.splitlines read as a line break besides \n, by the name a message gives it
LINE_BREAKS = {"\r": "a carriage return (\\r)", "\x85": "a next line (U+0085)", "\u2028": "a line separator (U+2028)",
               "\u2029": "a paragraph separator (U+2029)"}


def line_break_inside(text: str) -> str | None:
    """The name of a line break other than ``\\n`` inside ``text`` (one line of `read_text_lines`), or None. A
    corpus file whose lines end with one is read as one line: a MuST-C yaml's entries were "key offset appears
    twice" (eighteenth and nineteenth hostile passes), and a Kaldi ``text`` or a LibriSpeech transcript became one
    utterance whose transcript held every other line, exit 0 (twentieth)."""
    return next((name for brk, name in LINE_BREAKS.items() if brk in text), None)


SEGMENT_LINE = re.compile(r"^-\s*\{(.*)\}\s*$")  # a MuST-C yaml line: one flow mapping in a list item


def is_segment_line(text: str) -> bool:
    """Whether `text` looks like a line of a MuST-C segment list (``- {duration: 3.2, offset: 1.5, ..., wav: x.wav}``):
    `sate score --ref SPLIT.yaml` scored hypotheses against it, exit 0, where SPLIT.LANG beside it was meant."""
    match = SEGMENT_LINE.match(text)
    return match is not None and all(f"{field}:" in match.group(1) for field in ("duration", "offset", "wav"))


SRT_TIMES = re.compile(r"^\d+:\d\d:\d\d[,.]\d+ --> \d+:\d\d:\d\d[,.]\d+")
INDEX_LINE = re.compile(r"^\S+ \S+\.ark:\d+$")  # a feature index's line: an id, an ark and its offset
CSV_HEADER = re.compile(r"^[A-Za-z_][\w/.]*(,[A-Za-z_][\w/.]*)+$")  # column names, as metrics.csv begins
TSV_HEADER = re.compile(r"^[A-Za-z_][\w/.]*(\t[A-Za-z_][\w/.]*)+$")  # and as Libri-Trans's alignments.meta
SNIFF_LINES = 20


def not_sentences(lines: list[str]) -> str | None:
    """What a file of these lines is where text of one sentence a line is read, when its first lines say it is
    another of the files a researcher's folders hold (a MuST-C segment list, rows of JSON, SRT subtitles, a feature
    index, a CSV or tab-separated table), or None. Each is text, and each was read as sentences, exit 0: `sate score
    --hyp delays.jsonl` got a BLEU, `sate vocab --mt-text dev.jsonl ...` trained SentencePiece on JSON (twenty-second
    hostile pass)."""
    said = [line.strip() for line in lines[:SNIFF_LINES * 4] if line.strip()][:SNIFF_LINES]
    if not said:
        return None
    if all(is_segment_line(line) for line in said):
        return "a MuST-C segment list (lines of duration, offset and wav)"
    if all(line.startswith("{") and _json_object(line) for line in said):
        return "rows of JSON (a manifest, or a .jsonl that sate evaluate, segment or translate writes)"
    if said[0].isdigit() and len(said) > 1 and SRT_TIMES.match(said[1]):
        return "SRT subtitles (numbered cues with their times)"
    if said[0].startswith("WEBVTT"):
        return "WebVTT subtitles"
    if all(INDEX_LINE.match(line) for line in said):
        return "a feature index (an id and an ark offset a line)"
    if len(said) > 1 and CSV_HEADER.match(said[0]) and \
            all(line.count(",") == said[0].count(",") and not any(c.isspace() for c in line) for line in said):
        return f"a CSV table (columns {shown(said[0])})"
    if len(said) > 1 and TSV_HEADER.match(said[0]) and all(line.count("\t") == said[0].count("\t") for line in said):
        return f"a table of tab-separated columns ({shown(said[0])})"
    return None


def check_sentences(path: Path, lines: list[str], wanted: str, sniff_tokenizer: bool = False) -> None:
    """Refuse ``path`` when its first lines say it is another kind of file than text of one sentence a line
    (`not_sentences`), naming what it is and what was ``wanted`` there; ``sniff_tokenizer``: or text a tokenizer or a
    subword model wrote (`preprocessed`: MT text, which a WMT pipeline may have tokenized; a corpus sate reads as
    shipped is not sniffed for it)."""
    what = not_sentences(lines)
    if what is not None:
        raise SateError(f"{path}: {what}, not {wanted}")
    what = preprocessed(lines) if sniff_tokenizer else None
    if what is not None:
        raise SateError(f"{path}: {what}, not {wanted} as written: {PREPROCESSED_ADVICE[what.split(' ', 1)[0]]}")


# A Moses tokenizer's escapes where only its tokenization puts them (tokenizer.perl's default): a clitic split off
# (`don &apos;t`, `John &apos;s`; French `l&apos; homme`), an apostrophe or a quote standing alone (`geht &apos; s`,
# `&quot; ja &quot;`). Web text's entities (`Terms &amp; Conditions`, `&quot;hi&quot;`, `a &lt; b`: WMT's crawled
# corpora hold them) are no tokenizer's: noted (`ENTITY`), not refused (review33m).
MOSES_ESCAPE = re.compile(r"\w &apos;(?:s|t|re|ve|ll|d|m)\b|\w&apos; \w|(?<!\S)&(?:apos|quot);(?!\S)", re.IGNORECASE)
ENTITY = re.compile(r"&(?:[A-Za-z]+|#[0-9]+|#[xX][0-9A-Fa-f]+);")
# subword-nmt's continuation mark (`un@@ believ@@ able`)
BPE_MARK = re.compile(r"\S@@(?: |$)")
PREPROCESSED_ADVICE = {
    "Moses-tokenized": "give the corpus as released, before tokenization (a Moses detokenizer, detokenizer.perl or "
                       "sacremoses's, undoes both the spaces and the escapes)",
    "BPE-segmented": "give the words, before BPE (sed -E 's/(@@ )|(@@ ?$)//g' undoes it)",
    "SentencePiece-encoded": "give the text, before SentencePiece (spm_decode, or sed -E 's/ //g; s/\u2581/ /g; "
                             "s/^ //' undoes it)"}


def preprocessed(lines: list[str]) -> str | None:
    """What tokenizer or subword model wrote a corpus text, by its first non-blank lines, or None. `sate vocab
    --mt-text train.tok.en train.tok.de` of a WMT corpus a Moses pipeline had tokenized read `don &apos;t` as the
    words "don apost", and the German side's `&quot;` became pieces the model wrote; BPE's `un@@ believ@@ able` was
    three words: exit 0 (33rd hostile pass). Two lines of a Moses tokenizer's escapes where only it puts them
    (`MOSES_ESCAPE`), or a continuation mark or SentencePiece's word mark in half the lines, tell."""
    said = [line for line in lines if line.strip()]
    escaped = [found for line in said if (found := MOSES_ESCAPE.search(line)) is not None]
    if len(escaped) >= 2:
        examples = " ".join(dict.fromkeys(f"`{ENTITY.search(found[0])[0]}`" for found in escaped))
        return f"Moses-tokenized text (its escapes, {examples}, in {len(escaped)} of its first {len(said)} lines)"
    marked = sum(BPE_MARK.search(line) is not None for line in said)
    if said and 2 * marked >= len(said):
        return f"BPE-segmented text (subword-nmt's `@@` in {marked} of its first {len(said)} lines)"
    pieces = sum("\u2581" in line for line in said)
    if said and 2 * pieces >= len(said):
        return f"SentencePiece-encoded text (its word mark `\u2581` in {pieces} of its first {len(said)} lines)"
    return None


def entities_note(path: Path, lines: list[str]) -> str | None:
    """A note where two or more of a text's first non-blank ``lines`` hold HTML/XML entities (`&amp;`, `&quot;`,
    `&#233;`) that are not a Moses tokenizer's (`preprocessed`): web text's, as WMT's crawled corpora carry them, or
    a detokenized text's left escaped. Trained as they are, the model learns to write `&amp;`; the text may be as it
    was released, so the run goes on (review33m: such text was refused as Moses-tokenized, with no way on)."""
    said = [line for line in lines if line.strip()]
    found = [m[0] for line in said if (m := ENTITY.search(line)) is not None]
    if len(found) < 2:
        return None
    examples = " ".join(f"`{name}`" for name in dict.fromkeys(found[:5]))
    unescape = "python3 -c 'import html, sys; sys.stdout.writelines(map(html.unescape, sys.stdin))'"
    name = shell_word(str(path))
    if path.name.lower().endswith(".gz"):
        unescape = f"zcat {name} | {unescape} | gzip > {shell_word(str(path.with_suffix('.txt.gz')))}"
    else:
        unescape = f"{unescape} < {name} > {shell_word(f'{path}.txt')}"
    return (f"note: {one_line(str(path))}: HTML/XML entities ({examples}) in {len(found)} of its first {len(said)} "
            f"lines are read as they are written; if they stand for characters, unescape them first ({unescape})")


def trailing_blank_lines(texts: Iterable[tuple[Path, list[str]]], count: int) -> str:
    """What to add to a corpus's "line counts differ" refusal where a text file holds ``count`` lines, the segment
    list's count, but for blank lines at its end (an editor's, `echo >> FILE`), which count as segments' texts: the
    counts alone did not say so (28th hostile pass, MuST-C; 30th, Augmented LibriSpeech). Blank lines elsewhere that
    make the difference (an editor's at the top) are named by number: "dev.de 5 lines" alone did not say which (32nd).
    """
    blank, inside = [], False
    for path, lines in texts:
        numbers = [k for k, line in enumerate(lines, start=1) if not line.strip()]
        trailing = len(lines) - len("\n".join(lines).rstrip().split("\n"))
        if trailing and len(lines) - trailing == count:
            blank.append(f"{path.name} ends with {trailing} blank line(s)")
        elif numbers and len(lines) - len(numbers) == count:
            at = ", ".join(map(str, numbers[:5])) + (", ..." if len(numbers) > 5 else "")
            blank.append(f"{path.name} holds {len(numbers)} blank line(s) ({'line' if len(numbers) == 1 else 'lines'} "
                         f"{at})")
            inside = True
    if not blank:
        return ""
    # A blank line inside a text may be a segment's own empty text: "remove them", followed where one was and a line
    # elsewhere was broken in two, made the counts agree and shifted every reference after it, exit 0 (review32d).
    return (f"; {', '.join(blank)}, each read as a segment's text: " +
            ("remove those that are no segment's, keeping a blank line that is a segment's empty text (then a line "
             "elsewhere is broken or missing: compare the file with the other text line by line)" if inside else
             "remove them"))


def other_line_ends(texts: Iterable[tuple[Path, list[str]]], count: int) -> str:
    """What to add to a corpus's "line counts differ" refusal where a text file's lines end with another line break
    than ``\n`` (`LINE_BREAKS`: a carriage return alone, as an old Mac editor or a converter writes them), so that it
    reads as one line holding ``count`` texts: "dev.de 1 lines" alone did not say why, where the segment list (a
    MuST-C yaml, a Kaldi table) holding one was named (thirty-first hostile pass)."""
    found = []
    for path, lines in texts:
        text = "\n".join(lines)
        for brk, name in LINE_BREAKS.items():
            if len(lines) < count and brk in text and len(re.split(f"\n|{brk}", text.rstrip(brk))) == count:
                # `tr` alone, of a CRLF text where one line ends with \r alone, made every \r\n two line breaks
                # (review32d): a \r before \n goes first
                convert = (f"sed 's/\\r$//' {path.name} | tr '\\r' '\\n' > {path.name}.lf && mv {path.name}.lf "
                           f"{path.name}") if brk == "\r" else "replace each by \\n"
                ends = f"lines with {name} alone" if brk == "\r" else f"its lines with {name}"
                found.append(f"{path.name} ends {ends}, not \\n, so it reads as {len(lines)} line(s): "
                             f"convert it ({convert})")
                break
    return f"; {'; '.join(found)}" if found else ""


def _json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def refuse_line_break(text: str, where: str, what: str) -> None:
    """A `SateError` at ``where`` (FILE:LINE) when one line of a corpus file (``what``: "a line of a Kaldi table")
    holds a line break other than ``\\n``: the file's lines end with it, and it would be read as one line."""
    brk = line_break_inside(text)
    if brk is not None:
        raise SateError(f"{where}: {brk} inside a line, not {what} (lines end with \\n; a file whose lines end with "
                        f"it?): {shown(text.strip())}")


TEXT_BLOCK = 1 << 20
MAX_TEXT_BYTES = 1 << 30  # far beyond a corpus's text file (MuST-C En-De's train.en: 30 MB); MT text is streamed


def _text_bytes(path: Path, gzipped: bool = False) -> bytes:
    """The file's bytes (``gzipped``: decompressed), read block by block (a FIFO or /dev/stdin as the stream it is),
    refused at the first NUL (text never holds one, and a device such as /dev/zero would be read for ever) or past
    MAX_TEXT_BYTES (of a gzip file: of its text, which a small file can make endless)."""
    blocks, size = [], 0
    try:
        with (gzip.open if gzipped else open)(path, "rb") as f:
            while block := f.read(TEXT_BLOCK):
                if (nul := block.find(b"\0")) >= 0:
                    what = None if blocks else known_kind(block[:SNIFF])  # `sate score --ref ref.txt.xz`
                    wide = None if blocks or what is not None else wide_text(block[:SNIFF])
                    if wide is not None:
                        raise SateError(f"{path}: {wide} text, not UTF-8: convert it first (iconv -f {wide} -t UTF-8; "
                                        "a Windows editor saves UTF-8 when asked)")
                    if what is not None:
                        raise SateError(f"{path}: {what}, not text" + (" (decompress it first)" if "compressed" in
                                                                         what else ""))
                    line = sum(b.count(b"\n") for b in blocks) + block.count(b"\n", 0, nul) + 1
                    raise SateError(f"{path}:{line}: a NUL byte (at byte {size + nul:,}): binary data, not text")
                blocks.append(block)
                size += len(block)
                if size > MAX_TEXT_BYTES:  # an endless pipe would be read until memory runs out
                    raise SateError(f"{path}: more than {MAX_TEXT_BYTES:,} bytes of text, more than any text file "
                                    "sate reads whole (hypotheses, references, transcripts, token lists)")
    except OSError as err:  # gzip.BadGzipFile too: "Not a gzipped file"
        raise SateError(f"{path}: cannot read ({err.strerror or err})") from None
    except (EOFError, zlib.error) as err:  # a cut or damaged gzip file
        raise SateError(f"{path}: cannot read (damaged gzip data: {err})") from None
    return b"".join(blocks)


def csv_rows(path: Path) -> list[tuple[int, dict[str, str | None]]]:
    """The rows of a CSV file of text with a header (`read_text_lines`; Lightning's metrics.csv), each by its
    column names (None for a field it lacks) with the number of the line it begins on, none for an empty file; a row
    the csv module refuses is one `SateError` naming its line: a field past the module's 128 KiB limit was a
    `_csv.Error` traceback in `sate report --curves` and at a resume. An editor's byte-order mark is dropped: it hid
    the first column's name ("no step column"). Blank lines are skipped and counted: a row was named by its place
    among the rows, a line too early for each blank line and quoted line break above it (33rd hostile pass)."""
    lines = read_text_lines(path, strip_bom=True)
    _check_header_line(path, lines)
    reader = csv.reader(lines)
    rows: list[tuple[int, dict[str, str | None]]] = []
    names: list[str] | None = None
    end = 0
    try:
        for record in reader:
            start, end = end + 1, reader.line_num
            if not record:
                continue
            if names is None:
                names = record
                continue
            rows.append((start, dict(zip(names, record + [None] * (len(names) - len(record)), strict=False))))
    except csv.Error as err:
        raise _not_a_row(path, end, err) from None
    return rows


def csv_records(path: Path) -> tuple[list[str], list[tuple[list[str], int]]]:
    """The lines of a CSV file (`read_text_lines`) and each record with the number of lines read once it ends: a
    record's own text is ``lines[previous end:end]``, so a file can be rewritten with records left out and every
    other line as it was (a quoted field over two lines, a row of more fields than the header)."""
    lines = read_text_lines(path)
    _check_header_line(path, lines)
    reader = csv.reader(lines)
    records = []
    try:
        for record in reader:
            records.append((record, reader.line_num))
    except csv.Error as err:
        raise _not_a_row(path, records[-1][1] if records else 0, err) from None
    return lines, records


def _check_header_line(path: Path, lines: list[str]) -> None:
    """Refuse a CSV log whose header line holds NEL, U+2028 or U+2029 (one whose lines end with it): the csv module
    splits on neither, so the whole log was its header and `sate report --curves` said the experiment "holds no
    training logs to draw" (twentieth hostile pass; a line ending with \\r alone is the csv module's error)."""
    brk = line_break_inside(lines[0].replace("\r", "")) if lines else None
    if brk is not None:
        raise SateError(f"{path}:1: not a CSV log: {brk} inside its header line (lines that end with it?); save it "
                        "with \\n or \\r\\n line ends")


def _not_a_row(path: Path, lines_read: int, err: csv.Error) -> SateError:
    """The row after the first ``lines_read`` lines, named. A carriage return inside a line (a log saved with lines
    ending in \\r alone) is said so: the csv module's words, "do you need to open the file in universal-newline
    mode?", were advice to a programmer (nineteenth hostile pass)."""
    if "new-line character seen in unquoted field" in str(err):
        return SateError(f"{path}:{lines_read + 1}: not a row of a CSV log: a carriage return inside a line (lines "
                         "that end with \\r alone?); save it with \\n or \\r\\n line ends")
    return SateError(f"{path}:{lines_read + 1}: not a row of a CSV log ({err})")


def require_translations(path: str | Path, rows: list[dict], advice: str = "it can train ASR only") -> None:
    """Stop a task that reads translations (MT, ST, the target vocabulary) on a transcript-only split; ``advice``
    says what to do instead (`sate vocab`: how to make vocabularies, which an ASR training needs too)."""
    missing = sum(row["tgt"] is None for row in rows)
    if missing:
        raise SateError(f"{path}: {missing:,} rows have no translation (a transcript-only corpus): {advice}")


def write_manifest(path: Path, rows: Iterable[dict]) -> None:
    """A file name that is not UTF-8 in a row (a corpus under such a folder) was a UnicodeEncodeError traceback from
    `sate prep`: `json_text` writes its bytes as JSON escapes, read back as the same name (nineteenth hostile pass)."""
    atomic_write_lines(path, (json_text(row) for row in rows))


def manifest_bytes(rows: Iterable[dict]) -> bytes:
    """What `write_manifest` writes, for a set of manifests written together (`files.replace_together`)."""
    return "".join(json_text(row) + "\n" for row in rows).encode()


def row_problem(row: dict) -> str | None:
    """What is wrong with one manifest row's values (types and ranges), or None. A manifest edited by hand or
    written by another tool is read by every later stage: a negative offset would read the end of the file, an id
    with a space would not survive the feature index, a string where a number goes would fail deep in a worker."""
    utt_id = row["id"]
    if not isinstance(utt_id, str) or not utt_id or not utt_id.isprintable() or any(c.isspace() for c in utt_id):
        return f"id must be a non-empty string without spaces or invisible characters, got {shown(utt_id)}"
    for key in ("offset", "duration"):
        if not is_number(row[key]) or not 0 <= row[key] <= MAX_SECONDS:
            return f"{key} must be a number of seconds from 0 to {MAX_SECONDS:,.0f}, got {shown(row[key])}"
    if not isinstance(row["n_frames"], int) or isinstance(row["n_frames"], bool) or row["n_frames"] < 1:
        return f"n_frames must be a whole number >= 1, got {shown(row['n_frames'])}"
    if "speed" in row and (not is_number(row["speed"]) or not SPEED_RANGE[0] <= row["speed"] <= SPEED_RANGE[1]):
        return f"speed must be a number from {SPEED_RANGE[0]:g} to {SPEED_RANGE[1]:g}, got {shown(row['speed'])}"
    for key in ("audio", "src", "src_norm"):
        if not isinstance(row[key], str):
            return f"{key} must be a string, got {shown(row[key])}"
    if row["tgt"] is not None and not isinstance(row["tgt"], str):
        return f"tgt must be a string or null, got {shown(row['tgt'])}"
    if not row["audio"].strip():  # resolved against the manifest's folder, it was named as "a directory"
        return f"audio must name an audio file, got {shown(row['audio'])}"
    if "\0" in row["audio"] or not _encodes(row["audio"], os.fsencode):  # ValueError tracebacks from os.stat
        return f"audio is no file path the system can open (a NUL byte or a lone surrogate), got {shown(row['audio'])}"
    for key in ("src", "src_norm", "tgt"):  # JSON's "\ud800" is no text: SentencePiece said only "Not a string"
        if row[key] is not None and not _encodes(row[key], str.encode):
            return f"{key} holds a lone surrogate (JSON's \\ud800 to \\udfff), not text: {shown(row[key])}"
    return None


def _encodes(text: str, encode: Callable[[str], bytes]) -> bool:
    try:
        encode(text)
    except UnicodeEncodeError:
        return False
    return True


def read_manifest(path: str | Path) -> list[dict]:
    """Rows of a manifest written by ``sate prep`` (or ``sate features --speed-perturb``), each checked
    (`row_problem`), with unique ids and absolute audio paths (a relative one is the manifest directory's; of a
    symlinked manifest, see `_linked_audio`)."""
    path = Path(path)
    require_file(path, "a manifest", missing_split(path, f"{path}: manifest is missing (run `sate prep` first)"))
    check_set_whole(path, "run `sate prep` again")
    rows = []
    seen: dict[str, int] = {}
    target = _target_folder(path)
    linked: dict[str, str] = {}  # a relative audio path of a linked manifest -> the file read (a talk has many rows)
    # an editor's byte-order mark and a blank line (one at the end) hold no row, as in a corpus's text files: each was
    # "not a JSON object", in Python's words ("Unexpected UTF-8 BOM (decode using utf-8-sig)", "Expecting value")
    for lineno, line in enumerate(read_text_lines(path, strip_bom=True), start=1):
        if not line.strip():
            continue
        try:
            row = loads_json(line, object_pairs_hook=unique_keys)
        except KeyTwice as err:
            raise SateError(f"{path}:{lineno}: the key {shown(err.args[0])} is given twice (JSON readers keep the "
                            "last without a word)") from None
        except json.JSONDecodeError as err:
            raise SateError(f"{path}:{lineno}: not a JSON object: {err.msg}") from None
        except ValueError as err:  # a number too long to read (`json_int`)
            raise SateError(f"{path}:{lineno}: not a JSON object: {err}") from None
        except RecursionError:  # a few kilobytes of brackets overflow the parser's stack
            raise SateError(f"{path}:{lineno}: not a JSON object: nested too deeply to read") from None
        if not isinstance(row, dict):
            raise SateError(f"{path}:{lineno}: not a JSON object")
        missing = [key for key in MANIFEST_KEYS if key not in row]
        if missing:
            raise SateError(f"{path}:{lineno}: manifest row misses key(s) {', '.join(missing)}")
        problem = row_problem(row)
        if problem is not None:
            raise SateError(f"{path}:{lineno}: {problem}")
        if row["id"] in seen:
            raise SateError(f"{path}:{lineno}: id {shown(row['id'])} is also the id of line {seen[row['id']]}; ids "
                            "must be unique")
        seen[row["id"]] = lineno
        # a pattern first: a file check per row made read_manifest 40% slower. As written: joined to the manifest's
        # folder, it was a file missing since prep (review32u); a file (or a folder its name begins with) so named
        # beside it reads, and beside a linked manifest's target, which `_linked_audio` reads (it was "a URL":
        # hand33l), wherever sate runs (review33l)
        url = url_refusal(row["audio"], base=path.parent)
        if url is not None and (target is None or url_refusal(row["audio"], base=target) is not None):
            raise SateError(f"{path}:{lineno}: {url}")
        if not os.path.isabs(row["audio"]) and target is None:
            row["audio"] = os.path.abspath(path.parent / row["audio"])
        elif not os.path.isabs(row["audio"]):
            if row["audio"] not in linked:
                linked[row["audio"]] = _linked_audio(path, lineno, row["audio"], target)
            row["audio"] = linked[row["audio"]]
        rows.append(row)
    return rows


def _target_folder(path: Path) -> Path | None:
    """The folder of the file a symlinked manifest leads to, where that is another folder than the link's
    (`B/dev.jsonl` -> `../A/dev.jsonl`, a split shared between data directories); else None: a manifest not linked,
    or linked within its own folder (`dev.jsonl` -> `dev.v1.jsonl`), reads its relative audio from its own folder as
    its path spells it."""
    if not os.path.islink(path):
        return None
    target = Path(os.path.realpath(path)).parent
    return None if Path(os.path.realpath(path.parent)) == target else target


def _linked_audio(path: Path, lineno: int, audio: str, target: Path) -> str:
    """The file a relative ``audio`` of a manifest linked from ``target`` names. Either folder may hold it: the link's
    (B's own talks beside A's segmentation, a `cp -rs` tree) or the target's (a split shared without its talks).
    The link's was read without a word (twenty-ninth hostile pass: another corpus's talk of that name), then the
    target's (B's own processed talks ignored): the one that exists is read, the link's spelling where both are one
    file (the path, and so the features' fingerprints, as before), and two different files are refused."""
    mine, theirs = os.path.abspath(path.parent / audio), os.path.abspath(target / audio)
    if not os.path.exists(mine) and os.path.exists(theirs):
        return theirs
    if os.path.exists(mine) and os.path.exists(theirs) and not os.path.samefile(mine, theirs):
        raise SateError(f"{path}:{lineno}: audio {shown(audio)} is both {one_line(mine)} (beside the link) and "
                        f"{one_line(theirs)} (beside {one_line(os.path.realpath(path))}, which it links to), two "
                        "different files: replace the link by a copy whose audio paths are absolute (editing it "
                        "through the link edits the other's), or remove the copy not meant")
    return mine


def missing_split(manifest: Path, line: str) -> Callable[[], str]:
    """For `require_file`: ``line`` with the splits the data directory holds. A split spelt another way (`--split
    tst-common`, `data.valid: deev`) was told to run `sate prep`, which had made the data directory's splits."""
    def say() -> str:
        try:
            splits = manifest_splits(manifest.parent)
        except OSError:  # the listing's own error is for the reader of the folder, not for this line
            splits = []
        if splits:
            return f"{line}; {manifest.parent} holds the splits {', '.join(splits)}"
        owner = inside_data_directory(manifest.parent)
        return f"{line}; {owner}" if owner else line
    return say


def inside_data_directory(folder: Path) -> str | None:
    """What to say where ``folder``, given as a data directory, lies inside one (its ``fbank/``, a shard folder), or
    None: `evaluate --data DATA/fbank` was told to run `sate prep`, and `train` with `data.dir: DATA/fbank` to run
    `sate vocab`, each of which had run (twenty-first hostile pass). The rule is `files.near_data_directory`'s."""
    data = data_directory_above(folder) if folder.is_dir() else None
    return None if data is None else f"{folder}: a folder inside the data directory {data}, not one itself: give {data}"


def manifest_splits(data_dir: Path) -> list[str]:
    """Splits with a manifest in ``data_dir``, in pipeline order (train first). A folder that cannot be listed is
    the OSError (Permission denied, naming it): `Path.glob` found nothing there, and `sate features` on a data
    directory of mode 0300 said "no manifests (run `sate prep` first)" (nineteenth hostile pass)."""
    names = sorted(name[: -len(".jsonl")] for name in os.listdir(data_dir) if name.endswith(".jsonl"))
    known = [s for s in (*DEFAULT_SPLITS, *OPTIONAL_SPLITS) if s in names]
    return known + [s for s in names if s not in known]
