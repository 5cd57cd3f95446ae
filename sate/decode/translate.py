"""Translate audio files of any length: `sate translate --model DIR FILE... [--format text|jsonl|srt]`.

Every file libsndfile reads (wav, flac, ogg, mp3 where the build allows), at any sample rate and
channel count, is resampled to 16 kHz mono, cut at pauses into segments of at most
``--max-segment`` seconds (``--vad``: silero-vad by default, see `sate.decode.vad`; `sate segment`
writes the same segments without a model), and its segments are translated in batches together
with those of neighbouring files. Results are written in the order of the
files given. A file that is missing, unreadable, corrupt, empty, silent or damaged (NaN or inf
samples) gets a one-line error naming it; the others are still translated, and the exit status is 1
if any file failed. Options and output paths are checked before any audio is read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from sate.data.audio import audio_name
from sate.decode.output import FORMATS, check_not_other_output, left_as_it_was, render
from sate.decode.vad import VadOptions, add_vad_argument, resolve_method
from sate.errors import SateError, one_line
from sate.files import atomic_fill, atomic_open, check_distinct
from sate.numbers import INT64, real_number, whole_number
from sate.targets import (
    NAMED_KINDS,
    TEXT_NAMES,
    check_named_kind,
    check_new_directory_name,
    check_not_input,
    check_not_linked_out,
    check_output,
    check_streams_once,
    names_directory,
    read_name,
    typed_path,
)


def _srt_paths(files: list[Path], out: Path) -> dict[Path, Path]:
    """One ``OUT/<stem>.srt`` per input; two inputs with the same stem would overwrite each other."""
    paths: dict[Path, Path] = {}
    seen: dict[str, Path] = {}
    for path in files:
        if path.stem in seen and seen[path.stem] != path:
            raise SateError(f"{seen[path.stem]} and {path} would both be written to {out / (path.stem + '.srt')}")
        seen[path.stem] = path
        paths[path] = out / f"{path.stem}.srt"
    return paths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sate.decode.options import add_override_arguments

    parser.add_argument("files", nargs="+", type=audio_name, metavar="FILE", help="audio files")
    parser.add_argument("--model", type=read_name, required=True,
                        help="packed model directory (`sate pack`): st or asr")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="text: one line per segment; jsonl: file, start, end, transcript, translation per "
                             "segment; srt: subtitles (when not given: srt or jsonl for an --out ending in .srt or "
                             ".jsonl, else text)")
    parser.add_argument("--out", default=None,
                        help="output file (when not given, or '-': stdout); with --format srt and several files, or "
                             "a name ending in '/', a directory that gets one FILE_STEM.srt per input")
    parser.add_argument("--transcript", action="store_true", help="also print the CTC transcript of each segment")
    add_override_arguments(parser)
    parser.add_argument("--batch-size", type=whole_number, default=16, help="segments decoded together")
    parser.add_argument("--max-segment", type=real_number, default=VadOptions.max_segment,
                        help="longest segment in seconds; longer speech is cut at its quietest point")
    parser.add_argument("--min-pause", type=real_number, default=VadOptions.min_pause,
                        help="shortest silence in seconds that separates two segments")
    add_vad_argument(parser)
    parser.add_argument("--device", default=None,
                        help="torch device, e.g. cpu or cuda:1 (when not given: a GPU if present)")


def check_outputs(files: list[Path], targets: list[Path]) -> None:
    """Before any decoding: no output is an input, a directory, or what `sate.targets` refuses (a model, a file in
    a pack or a checkpoint folder, a place that cannot be written).

    A finished decode used to be thrown away when the final rename failed, and ``--out`` naming an input
    replaced the audio with text.
    """
    for target in targets:
        check_not_input(target, files)
        check_output(target, "text", hint="; --format srt writes one .srt per input into a directory")
        check_not_other_output(target, "translate")
    # OUT/a.srt a link to OUT/b.srt: a.wav's subtitles were written there, then replaced by b.wav's, exit 0
    check_distinct(dict.fromkeys(targets))


SUFFIX_FORMATS = {".srt": "srt", ".jsonl": "jsonl", ".ndjson": "jsonl"}
# each format's own names (the first given as advice); plain text's names are taken for any of them
FORMAT_NAMES = {"text": TEXT_NAMES, "jsonl": (".jsonl", ".ndjson", *TEXT_NAMES), "srt": (".srt", *TEXT_NAMES)}
WRITES = {"text": "plain text lines", "jsonl": "JSON lines", "srt": "SubRip subtitles"}


def check_out_name(out: Path, given: str | None, fmt: str) -> None:
    """--out named for another kind than the format written is refused before any work: `--out talk.vtt` (WebVTT),
    `talk.json`, `talk.csv`, `talk.srt.gz` were written as plain text lines under that name, exit 0 (twenty-second
    hostile pass; `--out talk.srt`, the twenty-first)."""
    if given is not None:
        check_named_kind(out, f"sate translate --format {fmt} writes {WRITES[fmt]}", FORMAT_NAMES[fmt])
        return
    # no --format: the name chooses one (`output_format`); subtitles of another kind are advised .srt
    first = ".srt" if NAMED_KINDS.get(out.suffix.lower(), "").endswith("subtitles") else ".txt"
    check_named_kind(out, "sate translate writes plain text, JSON lines (.jsonl) or SubRip subtitles (.srt), as "
                     "--format says", (first, *FORMAT_NAMES["jsonl"], *FORMAT_NAMES["srt"]))


def output_format(given: str | None, out: str | None) -> str:
    """--format, or the format --out's name ends in: `--out talk.srt` wrote text lines into a file named for
    subtitles, exit 0, and `--format jsonl --out talk.srt` JSON lines (twenty-first hostile pass)."""
    named = None
    if out not in (None, "", "-") and not names_directory(out):
        named = SUFFIX_FORMATS.get(Path(out).suffix.lower())
    if given is None:
        return named or "text"
    if named is not None and named != given:
        raise SateError(f"--out {one_line(out)}: a {Path(out).suffix} name, but --format {given} writes "
                        f"{'subtitles' if given == 'srt' else given + ' lines'}: give --format {named}, or leave "
                        "--format out to take it from the name")
    return given


def check_files(files: list[Path], decode: list[str]) -> None:
    """A FILE that is really a decoding option (the old ``--decode a=1 b=2`` spelling) gets a hint."""
    from sate.decode.options import looks_like_option

    stray = [str(f) for f in files if looks_like_option(str(f)) and not f.exists()]
    if stray:
        raise SateError(f"{stray[0]} is a decoding option, not a file: --decode takes KEY=VALUE[,KEY=VALUE...] "
                        f"once per use, e.g. --decode {','.join([*decode, *stray])}")


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from sate.decode.api import Failure, Result, SpeechTranslator
    from sate.decode.options import decode_overrides

    if not 1 <= args.batch_size <= INT64[1]:  # 10**20 was "batch_size must be a whole number >= 1"
        raise SateError(f"--batch-size must be from 1 to 2**63-1, got {args.batch_size}")
    vad = VadOptions(max_segment=args.max_segment, min_pause=args.min_pause, method=resolve_method(args.vad))
    files: list[Path] = args.files
    check_files(files, args.decode)
    check_streams_once(files)
    overrides = decode_overrides(args)
    if args.out == "":  # Path('') is '.': "--out .: is a directory" for an unset variable in --out "$OUT"
        raise SateError("--out: an empty name (an unset variable?); give the output's name, or '-' for standard "
                        "output")
    given = args.format
    args.format = output_format(args.format, args.out)
    named_directory = args.out is not None and names_directory(args.out)  # Path() would drop the slash, or '/.'
    if named_directory and args.format != "srt":
        raise SateError(f"--out {args.out}: ends in '/', '.' or '..', which names a directory; --format {args.format} "
                        "writes one file: give the file's name (--format srt writes one .srt per input into a "
                        "directory)")
    args.out = None if args.out in (None, "-") else typed_path(args.out)  # '-': standard output, as when not given
    several_srt = args.format == "srt" and (len(files) > 1 or named_directory
                                            or (args.out is not None and args.out.is_dir()))
    if several_srt and args.out is None:
        raise SateError("--format srt with several files needs --out DIR (one .srt per file)")
    if several_srt and args.out.exists() and not args.out.is_dir():
        raise SateError(f"{args.out}: not a directory (--format srt with several files writes one .srt per file)")
    if several_srt:
        if not named_directory:  # a trailing '/' names a directory of that name, whatever it ends with
            check_new_directory_name(str(args.out), "--format srt with several files writes one FILE_STEM.srt per "
                                     "input into a directory", "one .srt file holds the subtitles of one input: "
                                     "translate each into its own")
        check_output(args.out, "directory")
    srt_paths = _srt_paths(files, args.out) if several_srt else {}
    if several_srt:
        check_outputs(files, list(srt_paths.values()))
        check_not_linked_out(srt_paths.values())  # names of its own: not written through a link (passes 18, 19)
    elif args.out is not None:
        check_outputs(files, [args.out])  # first: what the place or a file there says is said before the name's kind
        check_out_name(args.out, given, args.format)

    translator = SpeechTranslator.load(args.model, device=args.device)
    if translator.task == "mt":
        raise SateError(f"{args.model} is an MT model; sate translate needs an ST or ASR model")
    if translator.task == "asr" and overrides:  # its transcripts are CTC greedy: the options were taken, unused
        raise SateError(f"--decode and --beam set the beam search of an ST pack; {args.model} is an ASR pack, whose "
                        "transcripts are CTC greedy")
    options = translator.with_options(**overrides)

    failed = 0
    done = 0
    kept = ""

    def write(result: Result, out: TextIO | None) -> None:
        lines = render(result, args.format, args.transcript, with_file=len(files) > 1)
        if several_srt:
            with atomic_open(srt_paths[Path(result.source)]) as f:
                f.writelines(line + "\n" for line in lines)
        else:
            out.writelines(line + "\n" for line in lines)
            out.flush()

    def translate_all(out: TextIO | None) -> bool:
        """Translate every file into ``out``; whether any was translated."""
        nonlocal failed, done
        with tqdm(total=len(files), unit="file", desc="translate", file=sys.stderr,
                  disable=len(files) < 2 or None) as bar:
            for item in translator.stream(files, options, args.batch_size, vad):
                if isinstance(item, Failure):
                    failed += 1
                    left = left_as_it_was(srt_paths.get(Path(item.source)))
                    tqdm.write(f"sate translate: error: {one_line(str(item.error))}{left}", file=sys.stderr)
                else:
                    write(item, out)
                    done += 1
                bar.update(1)
        return done > 0

    if several_srt:
        translate_all(None)
    elif args.out is None:
        translate_all(sys.stdout)  # a closed pipe (`| head`) ends the run quietly: sate.cli.main
    elif not atomic_fill(args.out, translate_all):  # checked before decoding; a full disk: one line, status 1
        kept = f"; nothing written to --out {one_line(str(args.out))}"
    if failed:
        print(f"sate translate: {failed} of {len(files)} file(s) failed; translated {done}{kept}", file=sys.stderr)
        return 1
    return 0
