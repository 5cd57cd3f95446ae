"""Read Augmented LibriSpeech En->Fr as shipped: the libri-trans reader of `sate prep` (`sate.data.prep`).

``ROOT/<set>/`` for the sets ``train``, ``other`` (130 h more training speech), ``dev`` and ``test`` holds
``audiofiles/<name>.wav`` (one file per segment; some of ``other``'s are FLAC under a .wav name, which soundfile
reads by content), ``alignments.meta`` (a header line, then one whitespace-separated line per segment whose 5th
column is ``<name>``), and ``<set>.en``, ``<set>.fr`` and ``<set>_gtranslate.fr``, line i of each belonging to
the i-th segment line of ``alignments.meta``. Each segment becomes one row: its whole file, speaker
``<book>-<chapter>`` (the first two dash-separated fields of the name), ``src`` the English, ``tgt`` the French.

Training sets are doubled with the Google Translate references, as ESPnet (egs/libri_trans/st1), NeurST and
MSP-ST train: a second row ``<name>.gtranslate`` with ``tgt`` from ``_gtranslate.fr`` follows each segment's own
row (the two read the same audio, so `sate features` stores its features once). dev and test keep the
reference translation only. ``other/`` is written as the training split ``train-other``.
"""

from __future__ import annotations

import os
from pathlib import Path

from sate.data.audio import segment_samples
from sate.data.manifest import check_sentences, other_line_ends, read_text_lines, trailing_blank_lines
from sate.data.rows import RowFilter, SplitResult, audio_info
from sate.errors import SateError, shown
from sate.files import few_paths, held_inside

SETS = ("train", "other", "dev", "test")
DEFAULT_SETS = ("train", "dev", "test")
TRAINING_SETS = ("train", "other")  # doubled with _gtranslate.fr
MANIFEST_NAMES = {"other": "train-other"}  # a name starting with train: filtered as a training split
GTRANSLATE_SUFFIX = ".gtranslate"
META_NAME_COLUMN = 4  # 0-based: the audio file name without .wav


def read_meta(path: Path) -> list[tuple[int, str]]:
    """(line number, audio file name) of each segment line of ``alignments.meta`` (after its header)."""
    lines = read_text_lines(path, strip_bom=True)
    while lines and not lines[-1].strip():  # an editor's blank last line is no segment, as a MuST-C yaml's is not:
        lines.pop()  # it was "expected at least 5 ... columns, got 0" (review30d)
    if not lines:
        raise SateError(f"{path}: empty (expected a header line, then one line per segment)")
    names: list[tuple[int, str]] = []
    first: dict[str, int] = {}
    for lineno, text in enumerate(lines[1:], start=2):
        columns = text.split()
        if len(columns) <= META_NAME_COLUMN:
            raise SateError(f"{path}:{lineno}: expected at least {META_NAME_COLUMN + 1} whitespace-separated columns "
                            f"(the {META_NAME_COLUMN + 1}th: the audio file name), got {len(columns)}: {shown(text)}")
        name = columns[META_NAME_COLUMN]
        if "/" in name or "\\" in name:
            raise SateError(f"{path}:{lineno}: the audio file name must be a name inside audiofiles/, got "
                            f"{shown(name)}")
        if name in first:
            raise SateError(f"{path}:{lineno}: segment {name} appears twice (first at line {first[name]})")
        first[name] = lineno
        names.append((lineno, name))
    return names


def prepare_split(root: Path, name: str, gtranslate: bool, row_filter: RowFilter) -> SplitResult:
    """One set's rows in ``alignments.meta`` order (nothing is written here)."""
    directory = root / name
    if not directory.is_dir():
        raise SateError(f"{directory}: split directory is missing")
    meta_path = directory / "alignments.meta"
    meta = read_meta(meta_path)
    doubled = gtranslate and name in TRAINING_SETS
    text_paths = [directory / f"{name}.en", directory / f"{name}.fr"]
    if doubled:
        text_paths.append(directory / f"{name}_gtranslate.fr")
    texts = []
    for path in text_paths:  # .en and .fr first: the option's advice fails where one of them is missing too
        if path.name.endswith("_gtranslate.fr") and not os.path.lexists(path):
            # "file is missing" alone did not say why it was read (30th hostile pass)
            raise SateError(f"{path}: file is missing (the Google Translate references, read to double the training "
                            f"set {name}: --no-gtranslate prepares it without them)")
        texts.append(read_text_lines(path, strip_bom=True))
    for path, lines in zip(text_paths, texts, strict=True):
        # another file of as many lines (alignments.meta) copied as train.en became the transcripts, exit 0
        # (twenty-second hostile pass)
        check_sentences(path, lines, "the set's text of one segment a line")
    if any(len(lines) != len(meta) for lines in texts):
        counts = ", ".join(f"{path.name} {len(lines)} lines" for path, lines in zip(text_paths, texts, strict=True))
        raise SateError(f"{directory}: line counts differ: {meta_path.name} has {len(meta)} segment lines after its "
                        f"header, {counts}{trailing_blank_lines(zip(text_paths, texts, strict=True), len(meta))}"
                        f"{other_line_ends(zip(text_paths, texts, strict=True), len(meta))}")

    result = SplitResult(MANIFEST_NAMES.get(name, name))
    for k, (lineno, seg) in enumerate(meta):
        info = audio_info(directory / "audiofiles" / f"{seg}.wav", f"{meta_path}:{lineno}")
        n_samples = segment_samples(0.0, info.duration, info)
        speaker = "-".join(seg.split("-")[:2])
        row_filter.add(result, seg, info.path, 0.0, n_samples, speaker, texts[0][k], texts[1][k])
        if doubled:
            row_filter.add(result, seg + GTRANSLATE_SUFFIX, info.path, 0.0, n_samples, speaker, texts[0][k],
                           texts[2][k])
    return result


def prepare(root: Path, sets: list[str] | None, gtranslate: bool, row_filter: RowFilter) -> list[SplitResult]:
    """Every asked set of ``root`` (default: train, dev, test), checked before anything is written."""
    if not root.is_dir():
        raise SateError(f"{root}: not a directory (give the Augmented LibriSpeech root holding train/, dev/, test/)")
    sets = list(DEFAULT_SETS) if sets is None else sets
    unknown = [s for s in sets if s not in SETS]
    if unknown:
        raise SateError(f"--splits {' '.join(unknown)}: Augmented LibriSpeech has the sets {', '.join(SETS)}")
    if not any(os.path.lexists(root / name / "alignments.meta") for name in sets):  # (a data directory's fbank/
        # holds train/ and dev/ too)
        raise SateError(f"--libri-trans {root}: {_no_sets(root)}")
    return [prepare_split(root, name, gtranslate, row_filter) for name in sets]


def _no_sets(root: Path) -> str:
    """Why ``root``, which holds none of the sets asked, is no Augmented LibriSpeech root: a set's folder itself, or
    the folder holding the root. Each was "ROOT/train: split directory is missing", a path nobody gave (twenty-first
    hostile pass)."""
    if root.name in SETS and os.path.isfile(root / "alignments.meta"):
        return f"the set folder {root.name}/ of the Augmented LibriSpeech root {root.parent}: give {root.parent}"
    held = held_inside(root, lambda child: any(os.path.lexists(child / name / "alignments.meta") for name in SETS))
    if held:
        return (f"no Augmented LibriSpeech root itself; it holds {few_paths(held)}: give "
                f"{'it' if len(held) == 1 else 'one'}")
    return f"none of {', '.join(f'{name}/' for name in SETS)} in it (give the Augmented LibriSpeech root holding them)"
