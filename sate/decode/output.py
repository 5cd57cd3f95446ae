"""Writers for `sate translate`: plain text, JSONL and SRT subtitles, one `Result` at a time.

- text: one line per segment, the translation (an ASR model: the transcript); tabs and line breaks inside a text
  become spaces (`text_field`). With
  ``transcript=True`` the line is ``transcript<TAB>translation``. With several input files every
  line starts with ``FILE<TAB>``, as grep prefixes file names; control characters in a file name (a tab,
  a newline) are written as Python escapes (``\t``, ``\n``, ``\x1b``), so a line stays one segment.
- jsonl: one object per segment: ``{"file", "start", "end", "transcript", "translation"}``
  (seconds; ``translation`` is null for an ASR model).
- srt: numbered cues with ``HH:MM:SS,mmm --> HH:MM:SS,mmm`` times; with ``transcript=True`` a
  cue holds the transcript line above the translation. A segment without text gets no cue (the
  numbers stay consecutive), and line breaks inside a text become spaces.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sate.errors import SateError, one_line
from sate.files import json_text
from sate.targets import first_json_object

if TYPE_CHECKING:  # the API imports torch; the writers never touch a model
    from sate.decode.api import Result

FORMATS = ("text", "jsonl", "srt")


def srt_time(seconds: float) -> str:
    """``HH:MM:SS,mmm``, rounded to the millisecond."""
    ms = max(0, round(seconds * 1000))
    hours, ms = divmod(ms, 3_600_000)
    minutes, ms = divmod(ms, 60_000)
    secs, ms = divmod(ms, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d},{ms:03d}"


def printable(name: str) -> str:
    """`name` as one field of one line (`one_line`: control characters, separators and the surrogates of a name
    that is not UTF-8 escaped as Python writes them)."""
    return one_line(name)


# a tab (which separates the fields) and every line break `str.splitlines` knows
_NOT_IN_A_FIELD = re.compile("[\t\n\v\f\r\x1c-\x1e\x85\u2028\u2029]+")


def text_field(text: str) -> str:
    """A transcript or translation as one field of one line: a run of tabs and line breaks becomes one space. A
    Whisper (byte-level BPE) text can hold a newline, which split one segment's line in two, and every later segment
    of `--format text` was a line off (twenty-eighth hostile pass); `sate evaluate`'s hyp.txt joins its newlines."""
    return _NOT_IN_A_FIELD.sub(" ", text)


def text_lines(result: Result, transcript: bool, with_file: bool) -> Iterator[str]:
    prefix = f"{printable(result.source)}\t" if with_file else ""
    for seg in result.segments:
        if seg.translation is None:
            yield prefix + text_field(seg.transcript)
        elif transcript:
            yield f"{prefix}{text_field(seg.transcript)}\t{text_field(seg.translation)}"
        else:
            yield prefix + text_field(seg.translation)


def jsonl_lines(result: Result) -> Iterator[str]:
    """The bytes of a file name that is not UTF-8 (lone surrogates in Python) become JSON's ``\\udcXX`` escapes,
    which read back as the same name (they could not be written as UTF-8), and line and paragraph separators
    ``\\u2028`` and ``\\u2029`` (which `str.splitlines` would split a line at)."""
    for seg in result.segments:
        yield json_text({"file": result.source, "start": seg.start, "end": seg.end, "transcript": seg.transcript,
                         "translation": seg.translation})


def srt_lines(result: Result, transcript: bool) -> Iterator[str]:
    """Cues numbered from 1. A segment with no text gets no cue: an empty cue is a blank line right after
    the times, which players and parsers read as the end of the cue (or of the file)."""
    k = 0
    for seg in result.segments:
        texts = [seg.transcript] if seg.translation is None or transcript else []
        texts += [seg.translation] if seg.translation is not None else []
        texts = [" ".join(t.split()) for t in texts]  # a line break inside would end the cue early
        texts = [t for t in texts if t]
        if not texts:
            continue
        k += 1
        yield str(k)
        yield f"{srt_time(seg.start)} --> {srt_time(seg.end)}"
        yield from texts
        yield ""


def render(result: Result, fmt: str, transcript: bool = False, with_file: bool = False) -> list[str]:
    """The output lines of one result in ``fmt`` (text, jsonl or srt)."""
    if fmt == "text":
        return list(text_lines(result, transcript, with_file))
    if fmt == "jsonl":
        return list(jsonl_lines(result))
    if fmt == "srt":
        return list(srt_lines(result, transcript))
    raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")


def check_not_other_output(path: Path, writer: str, option: str = "--out") -> None:
    """``path`` is not the JSON lines of another of `translate`, `segment` and `stream`: `segment --out` a
    translation's jsonl replaced hours of decoding with segment times, exit 0 (twenty-fourth hostile pass), and so did
    either over `sate stream > live.jsonl` (its review); a rerun over its own output, or over any other text, is left
    to `check_output`."""
    record = first_json_object(path)
    if record is None:
        return
    if {"t", "text", "final"} <= record.keys():
        raise SateError(f"{option} {one_line(str(path))}: refusing to replace it: it holds `sate stream`'s JSON "
                        "lines (translations shown live), not "
                        f"{'segments' if writer == 'segment' else 'the translations sate translate writes'}; give "
                        "another name")
    translated = "translation" in record or "transcript" in record
    if writer == "segment" and translated:
        raise SateError(f"{option} {one_line(str(path))}: refusing to replace it: it holds `sate translate`'s JSON "
                        "lines (translations of segments), not segments; give another name")
    if writer == "translate" and not translated and {"file", "segment", "start", "end"} <= record.keys():
        raise SateError(f"{option} {one_line(str(path))}: refusing to replace it: it holds `sate segment`'s JSON "
                        "lines (segment times), not translations; give another name")


def left_as_it_was(target: Path | None) -> str:
    """What a failed input's error adds where its own output file (`translate`'s OUT/STEM.srt, `segment`'s
    OUT/STEM.jsonl) is there already, from an earlier run: it is left as it was, and the line says so. A rerun into
    the same folder left the subtitles of a file since replaced or damaged beside this run's, unnamed (twenty-fifth
    hostile pass); removed, a file missing for a moment (a disk not mounted) would lose its good ones."""
    if target is None or not os.path.lexists(target):
        return ""
    return f"; {one_line(str(target))} is left as it was (not of this run)"
