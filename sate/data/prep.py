"""`sate prep`: read a corpus into validated JSONL manifests (`sate.data.manifest`), one per split.

Corpora, one per call, each into ``--out`` beside what is already there:

- ``--mustc-root ROOT``: MuST-C (v1 or v2, any target language), splits train, dev, tst-COMMON (and tst-HE);
- ``--libri-trans ROOT``: Augmented LibriSpeech En-Fr, splits train, dev, test (and other, written as
  train-other); the training sets also with the Google Translate references unless ``--no-gtranslate``;
- ``--librispeech DIR...``: LibriSpeech subsets (``SPEAKER/CHAPTER/*.flac`` and ``*.trans.txt``), transcripts only;
- ``--kaldi-dir DIR...``: Kaldi data directories (``wav.scp`` with plain paths, optional ``segments``, ``text``,
  optional ``utt2spk``), transcripts only.

Transcript-only corpora write ``tgt: null``: they train ASR models (more acoustic data for SATE's acoustic
encoder), never MT or ST. Every split's source is normalised the same way (``src_norm``), so CTC targets agree
across corpora. A split whose name starts with ``train`` is a training split: rows with empty text, zero length
or a duration outside ``--min-duration``..``--max-duration`` are dropped with a printed count. Other splits are
never dropped, only reported. Every check runs on every split before anything is written, and each manifest is
written atomically, so a failed or killed run never leaves a complete-looking manifest.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sate.data import kaldi_dir, libri_trans, librispeech, mustc
from sate.data.features import SPEED_SPLIT
from sate.data.manifest import check_split_names, manifest_bytes, manifest_splits, read_text_lines
from sate.data.parallel_text import corpus_target_language
from sate.data.rows import MAX_DURATION, MIN_DURATION, RowFilter, SplitResult
from sate.errors import SateError, one_line
from sate.files import check_journal_place, real_path, replace_together
from sate.numbers import real_number
from sate.targets import check_manifests, check_output, check_own_files, dir_name, read_name


def report(result: SplitResult, out=None) -> None:  # noqa: ANN001 - a text stream
    """One line per split, plus what was dropped (training splits) or kept despite a problem (others)."""
    out = out or sys.stdout
    # a slice of audio read by more than one row (Augmented LibriSpeech's Google Translate row beside its segment's
    # own) is counted once: its train printed 94,542 segments and 200 h of a corpus of 47,271 and 100 h (28th pass)
    slices = {(r["audio"], r["offset"], r["duration"]): r["duration"] for r in result.rows}
    hours = sum(slices.values()) / 3600
    only = " (transcripts only: ASR)" if result.rows and all(r["tgt"] is None for r in result.rows) else ""
    doubled = len(slices) < len(result.rows)
    size = (f"{len(result.rows)} rows of {len(slices)} segments (the hours count each segment once)" if doubled else
            f"{len(result.rows)} segments")
    print(f"{result.split}: {size}, {hours:.2f} h{only}", file=out)
    for reason, count in sorted(result.dropped.items()):  # a doubled segment's two rows are dropped together
        print(f"{result.split}: dropped {count} {'row(s)' if doubled else 'segment(s)'}: {reason}", file=out)
    if result.carriage_returns:
        ids = result.carriage_returns
        print(f"{result.split}: read a carriage return (\\r) inside the text of {len(ids)} segment(s) as a space (a "
              f"line break left inside a line): {', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''}", file=out)
    for reason, ids in sorted(result.flagged.items()):
        shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
        print(f"{result.split}: kept {len(ids)} segment(s) with {reason} (never dropped outside training splits, "
              f"those named train...): {shown}", file=out)


# ----------------------------------------------------------------------------------------------
# CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--mustc-root", type=read_name, help="MuST-C root holding en-<tgt>/data/<split>/{txt,wav}")
    source.add_argument("--libri-trans", type=read_name, metavar="ROOT",
                        help="Augmented LibriSpeech En-Fr root holding train/, other/, dev/, test/ as shipped")
    source.add_argument("--librispeech", type=read_name, nargs="+", action="extend", metavar="DIR",
                        help="LibriSpeech subsets (e.g. LibriSpeech/train-clean-100), one split each")
    source.add_argument("--kaldi-dir", type=read_name, nargs="+", action="extend", metavar="DIR",
                        help="Kaldi data directories (wav.scp with plain paths, text, optional segments and "
                             "utt2spk), one split each")
    parser.add_argument("--tgt-lang", default=None,
                        help="MuST-C only: target language code, the en-<tgt> directory (when not given: de)")
    parser.add_argument("--out", type=dir_name, required=True, help="data directory for the manifests")
    parser.add_argument("--splits", nargs="+", action="extend", default=None,
                        help="MuST-C: splits to read (when not given: train dev tst-COMMON, and tst-HE when present); "
                             "--libri-trans: sets to read, of train other dev test (when not given: train dev test; "
                             "other is written as train-other); --librispeech, --kaldi-dir: the split name of each "
                             "DIR, in order (when not given: each DIR's own name)")
    parser.add_argument("--gtranslate", action=argparse.BooleanOptionalAction, default=None,
                        help="--libri-trans only: add a second row per training segment (train, other) with the "
                             "Google Translate reference as its target (when not given: on)")
    parser.add_argument("--min-duration", type=real_number, default=None,
                        help=f"training splits only: drop shorter segments (s; when not given: {MIN_DURATION:g}); "
                             "another split's are named")
    parser.add_argument("--max-duration", type=real_number, default=None,
                        help=f"training splits only: drop longer segments (s; when not given: {MAX_DURATION:g}); "
                             "another split's are named")


def check_not_reserved(names: list[str], where: str) -> None:
    """`sate features --speed-perturb` writes DATA/train_sp.jsonl (train's speed copies) and computes its features from
    train's: a split prepared under that name (a Kaldi train_sp directory, named by its folder) was replaced by train's
    copies at the next `sate features`, without a word."""
    if SPEED_SPLIT in names:
        raise SateError(f"{where}: {SPEED_SPLIT} is the split `sate features --speed-perturb` writes (train's speed "
                        f"copies), which would replace it; name this one otherwise (--splits)")


def split_names(directories: list[Path], splits: list[str] | None) -> list[str]:
    """The split of each corpus directory: ``--splits`` in order, or the directory's own name."""
    if splits is None:
        names = [real_path(d).name for d in directories]
        check_split_names(names, "the directory names (name the splits with --splits)")
        check_not_reserved(names, "the directory names")
        return names
    if len(splits) != len(directories):
        raise SateError(f"--splits: give one split name per directory ({len(directories)} directories, "
                        f"{len(splits)} names)")
    return splits


def read_corpus(args: argparse.Namespace, row_filter: RowFilter) -> list[SplitResult]:
    """Every split of the corpus the options name, checked (nothing is written here)."""
    if args.tgt_lang is not None and args.mustc_root is None:
        raise SateError("--tgt-lang is for --mustc-root only")
    if args.tgt_lang == "":  # `args.tgt_lang or "de"` read an unset $LANG as de, exit 0
        raise SateError("--tgt-lang: an empty name (an unset variable?); give the language code, e.g. de")
    if args.gtranslate is not None and args.libri_trans is None:
        raise SateError("--gtranslate/--no-gtranslate is for --libri-trans only")
    if args.splits is not None:
        check_split_names(args.splits)
        check_not_reserved(args.splits, "--splits")
    if args.mustc_root is not None:
        return mustc.prepare(args.mustc_root, args.tgt_lang or "de", args.splits, row_filter)
    if args.libri_trans is not None:
        return libri_trans.prepare(args.libri_trans, args.splits, args.gtranslate is not False, row_filter)
    if args.librispeech is not None:
        return librispeech.prepare(args.librispeech, split_names(args.librispeech, args.splits), row_filter)
    return kaldi_dir.prepare(args.kaldi_dir, split_names(args.kaldi_dir, args.splits), row_filter)


def _first_rows(path: Path, ids: set[str]) -> tuple[dict | None, bool]:
    """The first row of the manifest at ``path``, and whether an id of ``ids`` is in it. Its lines are read until
    one is found (the first, for a corpus prepared again), not validated: a manifest that does not read (not UTF-8,
    not JSON; da74144) is none to compare with (None, False), and an id of another type (a list) is no id of ours:
    it was a TypeError traceback (24th hostile pass, fix24d)."""
    first: dict | None = None
    try:
        for line in read_text_lines(path, strip_bom=True):  # as `read_manifest` reads it
            row = json.loads(line) if line.strip() else None
            if not isinstance(row, dict):
                continue
            first = first or row
            if isinstance(row.get("id"), str) and row["id"] in ids:
                return first, True
            if not ids:  # the first row alone asked for: a manifest left is not read whole
                return first, False
    except (SateError, OSError, ValueError, RecursionError):  # not ours to judge here: `check_manifests` and
        return None, False  # the readers do
    return first, False


def _another_corpus(path: Path, new: list[dict]) -> dict | None:
    """The first row of the manifest at ``path`` where it holds another corpus than the ``new`` rows (no id in
    common, or another MuST-C pair: the same talks' ids in en-de and en-fr), else None."""
    if not path.is_file():
        return None
    first, common = _first_rows(path, {row["id"] for row in new})
    if first is None:
        return None
    if not common:
        return first
    languages = {corpus_target_language([first]), corpus_target_language(new)}
    return first if None not in languages and len(languages) == 2 else None  # a wav/ linked elsewhere says none


def _same_corpus(row: dict, other: dict) -> bool:
    """Are two manifests' first rows of one corpus: the same target language by their audio's corpus folder
    (`corpus_target_language`), or, where neither folder says one, both translated? A transcript-only split (an
    extra ASR split: LibriSpeech, a Kaldi directory, the recipes' train_extraN) goes with any pair, so it is never
    of the corpus replaced (24th hostile pass, fix24d: an En-Fr prepared over an En-De one named train-clean-5.jsonl
    beside it as maybe of the En-De corpus)."""
    languages = corpus_target_language([row]), corpus_target_language([other])
    if languages != (None, None):
        return languages[0] == languages[1]
    return row.get("tgt") is not None and other.get("tgt") is not None


def other_corpus_note(out: Path, results: list[SplitResult]) -> str | None:
    """A note where this run replaces a split's manifest with another corpus's (no id in common with the rows it
    held, or another MuST-C pair) and leaves other manifests of that corpus as they were: `sate prep --libri-trans`
    into a MuST-C En-De data directory replaced train and dev with En-Fr and left tst-COMMON German; a Kaldi
    directory `--splits train` replaced a translated train with transcripts alone beside dev and tst-COMMON; each
    exit 0, without a word (24th hostile pass). A corpus prepared again (ids in common), new splits beside the old
    (`--asr-extra`: nothing replaced), and manifests left of another corpus than the one replaced (an extra ASR
    split beside a pair prepared again, the pair beside an extra split prepared again) say nothing; the splits left
    may be meant, so this is a note, not a refusal."""
    if not out.is_dir():
        return None
    written = {result.split for result in results}
    replaced = {result.split: first for result in results
                if (first := _another_corpus(out / f"{result.split}.jsonl", result.rows)) is not None}
    if not replaced:
        return None
    try:
        splits = [s for s in manifest_splits(out) if s not in written and s != SPEED_SPLIT]
    except OSError:
        return None
    left = [s for s in splits if (first := _first_rows(out / f"{s}.jsonl", set())[0]) is not None
            and any(_same_corpus(old, first) for old in replaced.values())]
    if not left:
        return None
    names = ", ".join(f"{s}.jsonl" for s in replaced)
    kept = ", ".join(one_line(str(out / f"{s}.jsonl")) for s in left)
    return (f"note: {names} held another corpus than this one (no id in common with the new rows, or another "
            f"MuST-C pair); {kept}, not written now, may be of that one: if they do not go with this corpus, remove "
            "them or prepare into a new directory")


def _bound(option: str, value: float, given: float | None) -> str:
    """A duration bound as a message names it, a default said as one: "--min-duration 0.1 and --max-duration 0.05" of
    a command that gave --max-duration alone named an option not given (32nd hostile pass)."""
    return f"{option} {value}" + (" (its default)" if given is None else "")


def run(args: argparse.Namespace) -> int:
    # a split kept whole is told of its rows outside the range only where the range was given: by default LibriSpeech's
    # dev-clean (utterances over 30 s) was, with nothing for the user to do (28th hostile pass, review)
    given = args.min_duration is not None or args.max_duration is not None
    low = MIN_DURATION if args.min_duration is None else args.min_duration
    high = MAX_DURATION if args.max_duration is None else args.max_duration
    if not 0 <= low <= high:
        raise SateError(f"{_bound('--min-duration', low, args.min_duration)} and "
                        f"{_bound('--max-duration', high, args.max_duration)} must satisfy 0 <= min <= max")
    check_output(args.out, "data")
    check_journal_place([real_path(args.out)])
    results = read_corpus(args, RowFilter(low, high, given))
    for result in results:
        if not result.rows:  # why, as `report` would have printed it after the refusal: the line alone said nothing
            why = ", ".join(f"{reason} ({result.dropped_count(reason)})" for reason in sorted(result.dropped))
            if not why:  # none to filter: "left after filtering" sent a user of `sate synth --train-size 0` looking
                raise SateError(f"{result.split}: no segments: the corpus lists none for this split; leave it out "
                                "with --splits, naming the others")
            raise SateError(f"{result.split}: no segments left after filtering (dropped: {why})")
    check_own_files(args.out, [f"{result.split}.jsonl" for result in results], "--out")
    check_manifests(args.out, [f"{result.split}.jsonl" for result in results])
    note = other_corpus_note(args.out, results)
    # the splits together: a full disk or Ctrl-C on the second split left the first one of the new corpus beside
    # the others of the old, which every later command read as one data directory
    replace_together({args.out / f"{result.split}.jsonl": manifest_bytes(result.rows) for result in results})
    for result in results:
        report(result)
    print(f"wrote {', '.join(one_line(str(args.out / (r.split + '.jsonl'))) for r in results)}")
    if note is not None:
        print(note, file=sys.stderr)
    return 0
