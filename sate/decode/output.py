"""Writers for `sate translate`: plain text, JSONL and SRT subtitles, one `Result` at a time.

- text: one line per segment, the translation (an ASR model: the transcript). With
  ``transcript=True`` the line is ``transcript<TAB>translation``. With several input files every
  line starts with ``FILE<TAB>``, as grep prefixes file names.
- jsonl: one object per segment: ``{"file", "start", "end", "transcript", "translation"}``
  (seconds; ``translation`` is null for an ASR model).
- srt: numbered cues with ``HH:MM:SS,mmm --> HH:MM:SS,mmm`` times; with ``transcript=True`` a
  cue holds the transcript line above the translation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from sate.decode.api import Result

FORMATS = ("text", "jsonl", "srt")


def srt_time(seconds: float) -> str:
    """``HH:MM:SS,mmm``, rounded to the millisecond."""
    ms = max(0, round(seconds * 1000))
    hours, ms = divmod(ms, 3_600_000)
    minutes, ms = divmod(ms, 60_000)
    secs, ms = divmod(ms, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d},{ms:03d}"


def text_lines(result: Result, transcript: bool, with_file: bool) -> Iterator[str]:
    prefix = f"{result.source}\t" if with_file else ""
    for seg in result.segments:
        if seg.translation is None:
            yield prefix + seg.transcript
        elif transcript:
            yield f"{prefix}{seg.transcript}\t{seg.translation}"
        else:
            yield prefix + seg.translation


def jsonl_lines(result: Result) -> Iterator[str]:
    for seg in result.segments:
        yield json.dumps({"file": result.source, "start": seg.start, "end": seg.end, "transcript": seg.transcript,
                          "translation": seg.translation}, ensure_ascii=False)


def srt_lines(result: Result, transcript: bool) -> Iterator[str]:
    for k, seg in enumerate(result.segments, start=1):
        yield str(k)
        yield f"{srt_time(seg.start)} --> {srt_time(seg.end)}"
        if seg.translation is None or transcript:
            yield seg.transcript
        if seg.translation is not None:
            yield seg.translation
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
