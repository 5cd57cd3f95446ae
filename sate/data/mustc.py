"""Read a MuST-C corpus (v1 or v2, any target language) into validated JSONL manifests.

For each split, ``ROOT/en-<tgt>/data/<split>/txt/<split>.{yaml,en,<tgt>}`` are read line by
line and checked against the talk wavs in ``wav/``; the result is ``OUT/<split>.jsonl``, one
segment per line. Every check runs on every split before anything is written, and each manifest
is written to a temporary file and renamed, so a failed or killed run never leaves a
complete-looking manifest. Train rows with empty text, zero length or a duration outside
``--min-duration``..``--max-duration`` are dropped with a printed count; dev and test rows are
never dropped, only reported.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sate.data.audio import END_TOLERANCE_S, SAMPLE_RATE, WavInfo, num_frames, segment_samples, wav_info
from sate.data.text import normalize_source
from sate.errors import SateError
from sate.files import atomic_write_lines

DEFAULT_SPLITS = ("train", "dev", "tst-COMMON")
OPTIONAL_SPLITS = ("tst-HE", "tst-heldout")  # added to the default splits when present (tst-heldout: sate synth)
TRAIN_SPLIT = "train"
YAML_FIELDS = ("duration", "offset", "speaker_id", "wav")
MANIFEST_KEYS = ("id", "audio", "offset", "duration", "n_frames", "speaker", "src", "src_norm", "tgt")

_FLOW_LINE = re.compile(r"^-\s*\{(.*)\}\s*$")


# ----------------------------------------------------------------------------------------------
# Reading the corpus files


def read_text_lines(path: Path, strip_bom: bool = False) -> list[str]:
    """Lines of a UTF-8 file, split on ``\\n`` only.

    ``str.splitlines`` also splits on U+2028 and friends, which occur in real transcripts and
    would shift every following line against the yaml. ``strip_bom`` drops a byte-order mark at the
    start (editors on Windows write one) for corpus text; `sate score` keeps it, as sacrebleu does.
    """
    if not path.is_file():
        raise SateError(f"{path}: file is missing")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise SateError(f"{path}:{line}: not valid UTF-8 ({err.reason})") from None
    if strip_bom:
        text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def parse_yaml_line(text: str, path: Path, lineno: int) -> dict[str, str]:
    """One yaml entry (``- {duration: 2.3, offset: 1.5, speaker_id: spk.1, wav: ted_1.wav}``).

    MuST-C yaml files are one flow mapping per line; parsing them per line gives line numbers
    for errors and is much faster than loading the whole file. Lines with quotes fall back to
    the yaml parser. v2's extra fields (``rW``, ``uW``) are accepted and ignored.
    """
    fields: dict[str, str] | None = None
    match = _FLOW_LINE.match(text)
    if match and '"' not in text and "'" not in text:
        fields = {}
        keys = []
        for part in match.group(1).split(","):
            key, sep, value = part.partition(":")
            if not sep or not key.strip():
                fields = None
                break
            keys.append(key.strip())
            fields[key.strip()] = value.strip()
    if fields is None:
        import yaml

        try:  # the node tree still has every key: the loaded dict keeps only the last of a repeated one
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            loaded = yaml.safe_load(text)
        except yaml.YAMLError:
            node = loaded = None
        if not (isinstance(loaded, list) and len(loaded) == 1 and isinstance(loaded[0], dict)):
            raise SateError(f"{path}:{lineno}: malformed yaml entry: {text.strip()!r}")
        keys = [str(k.value) for k, _ in node.value[0].value]
        fields = {str(k): str(v) for k, v in loaded[0].items()}
    repeated = next((k for k in keys if keys.count(k) > 1), None)
    if repeated is not None:
        raise SateError(f"{path}:{lineno}: key {repeated} appears twice: {text.strip()!r}")
    missing = [name for name in YAML_FIELDS if not fields.get(name)]
    if missing:
        raise SateError(f"{path}:{lineno}: yaml entry misses field(s) {', '.join(missing)}: {text.strip()!r}")
    return fields


@dataclass(frozen=True)
class YamlSegment:
    lineno: int
    wav: str
    offset: float
    duration: float
    speaker: str


def read_yaml(path: Path) -> list[YamlSegment]:
    """All entries of a split's yaml; blank lines are skipped but keep line numbers right."""
    segments = []
    for lineno, text in enumerate(read_text_lines(path, strip_bom=True), start=1):
        if not text.strip():
            continue
        fields = parse_yaml_line(text, path, lineno)
        try:
            offset, duration = float(fields["offset"]), float(fields["duration"])
        except ValueError:
            raise SateError(f"{path}:{lineno}: offset and duration must be numbers: {text.strip()!r}") from None
        if not (math.isfinite(offset) and math.isfinite(duration)) or offset < 0 or duration < 0:
            raise SateError(f"{path}:{lineno}: offset and duration must be finite and >= 0: {text.strip()!r}")
        wav = fields["wav"]
        if "/" in wav or "\\" in wav:
            raise SateError(f"{path}:{lineno}: wav must be a file name inside wav/, got {wav!r}")
        segments.append(YamlSegment(lineno, wav, offset, duration, fields["speaker_id"]))
    return segments


# ----------------------------------------------------------------------------------------------
# Building one split


@dataclass
class SplitResult:
    """Rows to write and what was dropped (train) or noticed (dev/test)."""

    split: str
    rows: list[dict] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)
    flagged: dict[str, list[str]] = field(default_factory=dict)


def _problems(row: dict, n_samples: int) -> list[str]:
    problems = []
    if not row["src"] or not row["tgt"]:
        problems.append("empty text")
    elif not row["src_norm"]:
        problems.append("empty source after normalisation")
    if n_samples == 0:
        problems.append("zero length")
    return problems


def prepare_split(mustc_dir: Path, split: str, tgt_lang: str, min_duration: float,
                  max_duration: float) -> SplitResult:
    """Validate one split and build its manifest rows (nothing is written here)."""
    split_dir = mustc_dir / "data" / split
    if not split_dir.is_dir():
        raise SateError(f"{split_dir}: split directory is missing")
    txt = split_dir / "txt"
    yaml_path, en_path, tgt_path = txt / f"{split}.yaml", txt / f"{split}.en", txt / f"{split}.{tgt_lang}"
    segments = read_yaml(yaml_path)
    src_lines, tgt_lines = read_text_lines(en_path, strip_bom=True), read_text_lines(tgt_path, strip_bom=True)
    if not len(segments) == len(src_lines) == len(tgt_lines):
        raise SateError(f"{txt}: line counts differ: {yaml_path.name} has {len(segments)} entries, "
                        f"{en_path.name} {len(src_lines)} lines, {tgt_path.name} {len(tgt_lines)} lines")

    result = SplitResult(split)
    infos: dict[str, WavInfo] = {}
    index_in_talk: Counter = Counter()
    is_train = split == TRAIN_SPLIT
    for seg, src, tgt in zip(segments, src_lines, tgt_lines, strict=True):
        if seg.wav not in infos:
            try:
                infos[seg.wav] = wav_info(split_dir / "wav" / seg.wav)
            except SateError as err:
                raise SateError(f"{yaml_path}:{seg.lineno}: {err}") from None
        info = infos[seg.wav]
        talk = Path(seg.wav).stem
        seg_id = f"{talk}_{index_in_talk[talk]}"
        index_in_talk[talk] += 1
        if seg.offset + seg.duration > info.duration + END_TOLERANCE_S:
            raise SateError(f"{yaml_path}:{seg.lineno}: segment {seg_id} ({seg.offset:.3f} s + {seg.duration:.3f} s)"
                            f" runs past the end of {info.path} ({info.duration:.3f} s)")
        n_samples = segment_samples(seg.offset, seg.duration, info)
        src, tgt = src.strip(), tgt.strip()
        row = {"id": seg_id, "audio": str(info.path.resolve()), "offset": seg.offset,
               "duration": n_samples / SAMPLE_RATE, "n_frames": num_frames(n_samples), "speaker": seg.speaker,
               "src": src, "src_norm": normalize_source(src), "tgt": tgt}
        problems = _problems(row, n_samples)
        if is_train:
            if not problems and not min_duration <= row["duration"] <= max_duration:
                problems = [f"duration outside {min_duration:g}-{max_duration:g} s"]
            if problems:
                result.dropped[problems[0]] += 1
                continue
        for problem in problems:
            result.flagged.setdefault(problem, []).append(seg_id)
        result.rows.append(row)
    return result


def report(result: SplitResult, out=None) -> None:
    """One line per split, plus what was dropped (train) or kept despite a problem (dev/test)."""
    out = out or sys.stdout
    hours = sum(r["duration"] for r in result.rows) / 3600
    print(f"{result.split}: {len(result.rows)} segments, {hours:.2f} h", file=out)
    for reason, count in sorted(result.dropped.items()):
        print(f"{result.split}: dropped {count} segment(s): {reason}", file=out)
    for reason, ids in sorted(result.flagged.items()):
        shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
        print(f"{result.split}: kept {len(ids)} segment(s) with {reason} (never dropped outside train): {shown}",
              file=out)


# ----------------------------------------------------------------------------------------------
# Manifest I/O (shared by features, vocab and the datasets)


def write_manifest(path: Path, rows: Iterable[dict]) -> None:
    atomic_write_lines(path, (json.dumps(row, ensure_ascii=False) for row in rows))


def read_manifest(path: str | Path) -> list[dict]:
    """Rows of a manifest written by ``sate prep`` (or ``sate features --speed-perturb``)."""
    path = Path(path)
    if not path.is_file():
        raise SateError(f"{path}: manifest is missing (run `sate prep` first)")
    rows = []
    for lineno, line in enumerate(read_text_lines(path), start=1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise SateError(f"{path}:{lineno}: not a JSON object: {err.msg}") from None
        if not isinstance(row, dict):
            raise SateError(f"{path}:{lineno}: not a JSON object")
        missing = [key for key in MANIFEST_KEYS if key not in row]
        if missing:
            raise SateError(f"{path}:{lineno}: manifest row misses key(s) {', '.join(missing)}")
        rows.append(row)
    return rows


def manifest_splits(data_dir: Path) -> list[str]:
    """Splits with a manifest in ``data_dir``, in pipeline order (train first)."""
    names = sorted(p.name[: -len(".jsonl")] for p in data_dir.glob("*.jsonl"))
    known = [s for s in (*DEFAULT_SPLITS, *OPTIONAL_SPLITS) if s in names]
    return known + [s for s in names if s not in known]


# ----------------------------------------------------------------------------------------------
# CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mustc-root", type=Path, required=True,
                        help="MuST-C root holding en-<tgt>/data/<split>/{txt,wav}")
    parser.add_argument("--tgt-lang", default="de", help="target language code (the en-<tgt> directory)")
    parser.add_argument("--out", type=Path, required=True, help="data directory for the manifests")
    parser.add_argument("--splits", nargs="+", default=None,
                        help="splits to read (when not given: train dev tst-COMMON, and tst-HE when present)")
    parser.add_argument("--min-duration", type=float, default=0.1, help="train only: drop shorter segments (s)")
    parser.add_argument("--max-duration", type=float, default=30.0, help="train only: drop longer segments (s)")


def run(args: argparse.Namespace) -> int:
    if not re.fullmatch(r"[A-Za-z_-]+", args.tgt_lang):
        raise SateError(f"--tgt-lang {args.tgt_lang!r} is not a language code")
    if not 0 <= args.min_duration <= args.max_duration:
        raise SateError(f"--min-duration {args.min_duration} and --max-duration {args.max_duration} "
                        "must satisfy 0 <= min <= max")
    mustc_dir = args.mustc_root / f"en-{args.tgt_lang}"
    if not mustc_dir.is_dir():
        raise SateError(f"{mustc_dir}: missing (is --mustc-root a MuST-C root and --tgt-lang right?)")
    splits = args.splits
    if splits is None:
        splits = list(DEFAULT_SPLITS) + [s for s in OPTIONAL_SPLITS if (mustc_dir / "data" / s).is_dir()]
    if len(set(splits)) != len(splits):
        raise SateError(f"--splits names a split twice: {' '.join(splits)}")
    results = [prepare_split(mustc_dir, split, args.tgt_lang, args.min_duration, args.max_duration)
               for split in splits]
    for result in results:
        if not result.rows:
            raise SateError(f"{mustc_dir / 'data' / result.split}: no segments left after filtering")
    for result in results:
        write_manifest(args.out / f"{result.split}.jsonl", result.rows)
        report(result)
    print(f"wrote {', '.join(str(args.out / (r.split + '.jsonl')) for r in results)}")
    return 0
