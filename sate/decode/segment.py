"""Speech segments of audio files, without a model: `sate segment FILE... [--vad silero|energy] [--out PATH]`.

The segments are exactly those `sate translate` would decode (same reading, resampling, VAD and
options), written as JSONL, one line per segment: ``{"file", "segment", "start", "end"}``, times in
seconds from the start of the file. ``--out`` ending in ``.jsonl`` (or a stream: a named pipe,
``/dev/stdout``) is one file for all inputs; any other ``--out`` is a directory that gets one
``FILE_STEM.jsonl`` per input; without ``--out`` (or with ``--out -``) the lines go to stdout. A file with
no speech gets no lines (an empty FILE_STEM.jsonl) and a note on stderr, not an error; a file that cannot be
read gets a one-line error naming it, the others are still segmented, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from sate.data.audio import audio_name
from sate.decode.output import check_not_other_output, left_as_it_was
from sate.decode.vad import VadOptions, add_vad_argument, file_segments, no_speech, resolve_method
from sate.errors import SateError, one_line
from sate.files import atomic_fill, atomic_open, check_distinct, is_stream
from sate.numbers import real_number
from sate.targets import (
    check_new_directory_name,
    check_not_input,
    check_not_linked_out,
    check_output,
    check_streams_once,
    dir_name,
    names_directory,
    same_file,
    typed_path,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=audio_name, metavar="FILE", help="audio files")
    parser.add_argument("--out", type=_out_name, default=None,
                        help="FILE.jsonl (or a named pipe) for all inputs, or a directory that gets one "
                             "FILE_STEM.jsonl per input (when not given, or '-': stdout)")
    add_vad_argument(parser)
    parser.add_argument("--max-segment", type=real_number, default=VadOptions.max_segment,
                        help="longest segment in seconds; longer speech is cut at its least speech-like point")
    parser.add_argument("--min-pause", type=real_number, default=VadOptions.min_pause,
                        help="shortest silence in seconds that separates two segments")


def segment_lines(path: Path, segments: list[tuple[float, float]]) -> list[str]:
    """The JSONL lines of one file's segments."""
    return [json.dumps({"file": str(path), "segment": k, "start": start, "end": end})
            for k, (start, end) in enumerate(segments)]


def segment_file(path: Path, options: VadOptions) -> list[tuple[float, float]]:
    """One file's segments, read block by block (any length in bounded memory); a file without speech gets []
    and a note on stderr."""
    segments, seconds = file_segments(path, options)
    if not segments:
        print(f"sate segment: note: {one_line(str(path))}: {no_speech(seconds)}; no segments", file=sys.stderr)
    return segments


def _per_file_paths(files: list[Path], out: Path) -> dict[Path, Path]:
    """One ``OUT/<stem>.jsonl`` per input; two inputs with one stem would overwrite each other."""
    paths: dict[Path, Path] = {}
    for path in files:
        target = out / f"{path.stem}.jsonl"
        clash = next((f for f, t in paths.items() if t == target and f != path), None)
        if clash is not None:
            raise SateError(f"{clash} and {path} would both be written to {target}")
        paths[path] = target
    return paths


def _out_name(text: str) -> str:
    """--out as given (`dir_name` refuses an empty one; '-' is standard output here): `run` reads a trailing '/' or
    '/.' from it."""
    if text != "-":  # FILE.jsonl is a file here: `run` asks check_new_directory_name of any other name
        dir_name(text, new_named_as_file=False)
    return text


def run(args: argparse.Namespace) -> int:
    # The detector is settled (or refused) before any file is read.
    options = VadOptions(max_segment=args.max_segment, min_pause=args.min_pause, method=resolve_method(args.vad))
    files: list[Path] = args.files
    check_streams_once(files)
    # '-': standard output, as for `sate translate` (a folder named '-' was made, and -/talk.jsonl written, exit 0)
    out: Path | None = None if args.out in (None, "-") else typed_path(args.out)
    # /dev/stdout, a pipe: one stream. `notes.jsonl/` (or `/.`) names a directory, which Path's spelling dropped:
    # the one file notes.jsonl was written. NOTES.JSONL is a file too (it was made a folder of that name)
    per_file = out is not None and (names_directory(args.out) or out.suffix.lower() != ".jsonl" and not is_stream(out))
    if out is not None and any(same_file(f, out) for f in files):
        raise SateError(f"--out {out}: is one of the inputs; give a FILE.jsonl or a directory")
    if out is not None and not per_file and not is_stream(out) and out.is_dir():  # "give a file name" was the advice
        raise SateError(f"--out {out}: is a directory, and a name ending in .jsonl names one file for every input; "
                        f"for one FILE_STEM.jsonl per input in that directory, end the name with a slash: {out}/")
    if per_file:
        check_new_directory_name(args.out, "a directory that gets one FILE_STEM.jsonl per input (an --out not ending "
                                 "in .jsonl)", "for one file of every input's segments, end the name in .jsonl")
    if out is not None:
        check_output(out, "directory" if per_file else "text")
        if not per_file:
            check_not_other_output(out, "segment")
    if per_file and out.exists() and not out.is_dir():
        raise SateError(f"--out {out}: not a directory (an --out not ending in .jsonl is a directory that gets "
                        "one FILE_STEM.jsonl per input)")
    targets = _per_file_paths(files, out) if per_file else {}
    for target in targets.values():
        check_output(target, "text")
        check_not_input(target, files)
        check_not_other_output(target, "segment")
    # OUT/a.jsonl a link to OUT/b.jsonl: a.wav's segments were written there, then replaced by b.wav's, exit 0
    check_distinct(dict.fromkeys(targets.values()))
    check_not_linked_out(targets.values())  # names of its own: not written through a link (passes 18, 19)
    failed = 0
    kept = ""

    def segment_all(stream: TextIO | None) -> bool:
        """Segment every file into ``stream`` (None: each into its own file); whether any was segmented."""
        nonlocal failed
        for path in files:
            try:
                lines = segment_lines(path, segment_file(path, options))
            except SateError as err:
                failed += 1
                left = left_as_it_was(targets.get(path))
                print(f"sate segment: error: {one_line(str(err))}{left}", file=sys.stderr)
                continue
            if stream is None:
                with atomic_open(targets[path]) as f:
                    f.writelines(line + "\n" for line in lines)
            else:
                stream.writelines(line + "\n" for line in lines)
                stream.flush()
        return failed < len(files)

    if per_file:  # a failed write (a full disk, a closed pipe) names its file: one line at the CLI, status 1
        segment_all(None)
    elif out is None:
        segment_all(sys.stdout)
    elif not atomic_fill(out, segment_all):
        kept = f"; nothing written to --out {one_line(str(out))}"
    if failed:
        print(f"sate segment: {failed} of {len(files)} file(s) failed{kept}", file=sys.stderr)
        return 1
    return 0
