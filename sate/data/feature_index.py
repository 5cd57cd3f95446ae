"""The feature index ``DATA/fbank/<split>.scp`` (Kaldi scp: ``ID ARK:OFFSET``), read so that it can be trusted.

- Paths are relative to the fbank directory (``train/00000.ark:17``), so a copied or moved data directory reads its
  own features, never the original's. An index written before held absolute paths; those still read.
- `sate features` recomputes a shard whose index names arks of another data directory (an old absolute index in
  a copied data directory); an absolute index naming the directory's own arks is kept as it is.
- When a split is done, ``fbank/<split>/sizes.json`` records the byte size of each of its arks. An ark that is
  missing, or whose size differs from the record (or, without a record, that ends before an offset the index
  names), is damaged: `sate features` recomputes its shard instead of calling the split up to date, and a dataset
  refuses it with one line instead of a kaldiio traceback half way through an epoch.
- Each shard records the CRC-32 of every matrix it stores (``fbank/<split>/NNNNN.crc.json``, byte offset ->
  checksum), checked each time a matrix is read: bytes changed in place (a disk error, a page of zeros after a
  crash, a shard copied over from another run) keep the size, and would otherwise train on garbage. A CRC costs
  about a millisecond per megabyte, beside the read itself; `sate features` does not re-read every ark to call a
  split up to date, so a mismatch asks for the ark to be deleted, which makes it missing and recomputed.
- An index read keeps each ark's identity (inode, size, time): an ark that fails to read or check after
  `sate features` replaced it (run again while a training read the split) is named as replaced, not damaged.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import numpy as np

from sate import layout
from sate.data.manifest import NotUtf8, read_text_lines
from sate.errors import SateError, shown
from sate.files import atomic_write_lines, read_record
from sate.numbers import is_digits

SIZES = "sizes.json"


class NotAnIndexLine(SateError):
    """A line of a feature index that is not ``ID ARK:OFFSET`` (an edit: a tab between the fields, a note, a byte
    that is not UTF-8): the readers name it; `sate features`, which wrote the index, writes it again
    (`sate.data.features.plan_split`)."""


def read_index(scp: Path, base: Path | None = None) -> dict[str, tuple[Path, int]]:
    """id -> (ark, byte offset), relative arks resolved against ``base`` (the fbank directory; when not given: the
    index's own directory, which it is for a split's index)."""
    entries: dict[str, tuple[Path, int]] = {}
    try:
        lines = read_text_lines(scp)
    except NotUtf8 as err:  # a note saved in Latin-1 (cp1252): an edit as a tab is (twenty-ninth hostile pass)
        raise NotAnIndexLine(f"{err}; run `sate features`, which writes it again") from None
    for lineno, line in enumerate(lines, start=1):
        utt_id, _, where = line.partition(" ")
        ark, _, offset = where.strip().rpartition(":")
        if not utt_id or not ark or not is_digits(offset):
            raise NotAnIndexLine(f"{scp}:{lineno}: not an index line (ID ARK:OFFSET): {shown(line)}; run `sate "
                                 "features`, which writes it again")
        path = Path(ark)
        entries[utt_id] = (path if path.is_absolute() else (base or scp.parent) / path, int(offset))
    return entries


def record_sizes(shard_dir: Path, arks: list[Path]) -> None:
    """Write ``sizes.json`` of a finished split's shard directory."""
    atomic_write_lines(shard_dir / SIZES, [json.dumps({ark.name: ark.stat().st_size for ark in arks})])


def checksum(matrix: np.ndarray) -> int:
    """CRC-32 of a matrix's bytes as stored."""
    return zlib.crc32(np.ascontiguousarray(matrix))


def checksums_path(ark: Path) -> Path:
    return ark.with_suffix(".crc.json")


def record_checksums(ark: Path, sums: Mapping[int, int]) -> None:
    """Write the checksum of each matrix of ``ark`` by its byte offset (before the shard's index marks it done)."""
    atomic_write_lines(checksums_path(ark), [json.dumps({str(offset): crc for offset, crc in sums.items()})])


def recorded_checksums(ark: Path) -> dict[int, int]:
    """The checksums ``ark``'s shard recorded, or {} (a shard written before they were recorded)."""
    sums = read_record(checksums_path(ark), "`sate features`")  # bounded, and no named pipe or device read in its place
    try:
        return {int(offset): int(crc) for offset, crc in sums.items()}  # type: ignore[union-attr]
    except (ValueError, AttributeError, TypeError):
        return {}


def recorded_sizes(shard_dir: Path) -> dict[str, int]:
    """The sizes a finished split recorded, or {} (a split older than the record, or not finished)."""
    sizes = read_record(shard_dir / SIZES, "`sate features`")
    return sizes if isinstance(sizes, dict) else {}


def ark_problem(ark: Path, last_offset: int) -> str | None:
    """Why the features in ``ark`` cannot be trusted, or None."""
    try:
        size = ark.stat().st_size
    except PermissionError:  # there, but its folder may not be searched: neither missing nor fixed by recomputing
        raise
    except OSError:
        return f"{ark} is missing"
    if (ark.parent / SIZES).exists() and not isinstance(read_record(ark.parent / SIZES, "`sate features`"), dict):
        # emptied or cut: no ark's size was checked, and a cut ark was "up to date" for `sate features`
        return f"{ark.parent / SIZES} does not hold the sizes of its arks: damaged"
    recorded = recorded_sizes(ark.parent).get(ark.name)
    if recorded is not None and (not isinstance(recorded, int) or isinstance(recorded, bool)):  # "1234", true
        return f"{ark.parent / SIZES} records {shown(recorded)} for {ark.name}, not a number of bytes: damaged"
    if recorded is not None and size != recorded:
        return f"{ark} has {size} bytes, {recorded} when it was written: cut short or replaced"
    if size <= last_offset:
        return f"{ark} ends at byte {size}, before the features its index names at byte {last_offset}: cut short"
    if checksums_path(ark).exists() and not recorded_checksums(ark):  # edited or cut: no feature would be checked
        return f"{checksums_path(ark)} does not hold the checksums of {ark.name}'s features: damaged"
    return _lost_record(ark)


def _lost_record(ark: Path) -> str | None:
    """A record deleted from a split folder that wrote it, or None. A shard without its crc.json, or a finished
    split without sizes.json, read as an older sate's, which wrote neither: its features went unchecked, and a cut
    ark "up to date" (twenty-first hostile pass). A sate that records checksums records sizes too (sizes came
    first), so either record there says the other was written."""
    folder = ark.parent
    if (folder / SIZES).exists() and not checksums_path(ark).exists():
        return f"{checksums_path(ark)} is missing (its split records the sizes of its arks, so it was written): damaged"
    finished = (folder.parent / f"{folder.name}.scp").exists()
    if finished and checksums_path(ark).exists() and not (folder / SIZES).exists():
        return f"{folder / SIZES} is missing (its shards record their checksums, so it was written): damaged"
    return None


def index_problems(entries: Mapping[str, tuple[Path, int]]) -> list[str]:
    """Every damaged ark an index names (`ark_problem`)."""
    last: dict[Path, int] = {}
    for ark, offset in entries.values():
        last[ark] = max(offset, last.get(ark, -1))
    return [why for ark, offset in last.items() if (why := ark_problem(ark, offset)) is not None]


def foreign(entries: Mapping[str, tuple[Path, int]], fbank: Path) -> Path | None:
    """The first ark an index names that is not the data directory's own, or None. An ark is its own when it lies
    in ``fbank`` or is the file ``fbank/<split>/<name>`` names, all resolved: a split folder linked to another disk
    stays its own (it was recomputed at every `sate features`), while an index written before paths were relative,
    in a data directory copied since, names the original's arks, and a line edited to ``../../other/fbank/...`` or
    ``/etc/passwd`` names what is no feature of this directory (the reader's advice was to delete it). Each ark is
    resolved once, however many utterances it holds."""
    home = os.path.realpath(fbank)
    for ark in dict.fromkeys(ark for ark, _ in entries.values()):
        real = os.path.realpath(ark)
        if os.path.commonpath([real, home]) != home and real != os.path.realpath(fbank / ark.parent.name / ark.name):
            return ark
    return None


def _unreadable(paths: Iterable[Path]) -> Path | None:
    """The first of ``paths`` that is there but may not be read by this user, or None: a permission, which no
    recomputing by `sate features` mends, is said before any work."""
    return next((path for path in paths if os.path.isfile(path) and not os.access(path, os.R_OK)), None)


def _identity(path: Path) -> tuple[int, int, int] | None:
    """What tells a file replaced (another inode) or rewritten in place (size, time); None when it is missing."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


class FeatureIndex(Mapping[str, np.ndarray]):
    """A checked index as a mapping id -> (T, 80) features, each read from its ark when asked for."""

    def __init__(self, scp: Path) -> None:
        self.scp = scp
        self.entries = read_index(scp)
        self.checksums: dict[Path, dict[int, int]] = {}  # read per ark when it is first read from
        other = foreign(self.entries, scp.parent) if scp.parent.name == layout.FBANK_DIR else None  # a data dir's
        if other is not None:
            raise SateError(f"{scp}: it names {other}, which is not one of {scp.parent}'s feature files (an index of "
                            "another data directory, copied?); run `sate features`, which recomputes it")
        arks = sorted({ark for ark, _ in self.entries.values()})
        # a shard's record of its checksums or sizes that may not be read was "does not hold the checksums of
        # 00000.ark's features: damaged; run `sate features` again" (twenty-second hostile pass): a permission,
        # which no recomputing by this user mends
        records = dict.fromkeys(p for ark in arks for p in (checksums_path(ark), ark.parent / SIZES))
        closed = _unreadable(records)
        if closed is not None:
            raise SateError(f"{closed}: cannot read (Permission denied), the record the features {scp} names are "
                            "checked against (see the file's and its folders' permissions: ls -l)")
        problems = index_problems(self.entries)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise SateError(f"{scp}: {problems[0]}{more}; run `sate features` again, which recomputes it")
        self.seen = {ark: _identity(ark) for ark in arks}
        # an ark that may not be read was found at its first read: a resume trained an epoch, then its validation
        # failed, with a log folder made and the run counted (twenty-first hostile pass); now before any work
        locked = _unreadable(arks)
        if locked is not None:
            raise SateError(f"{locked}: cannot read (Permission denied), a feature file {scp} names (see the file's "
                            "and its folders' permissions: ls -l)")

    def _failed(self, ark: Path, utt_id: str, offset: int, what: str) -> SateError:
        """The error for an ark that does not read or check: replaced since the index was read, or damaged."""
        if _identity(ark) != self.seen.get(ark):
            return SateError(f"{ark}: replaced or removed since this command read {self.scp} (`sate features` "
                             f"run again meanwhile?), so the features of {utt_id} at byte {offset} are not there any "
                             "more; run the command again")
        return SateError(f"{ark}: {what}; delete it and run `sate features` again")

    def __getitem__(self, utt_id: str) -> np.ndarray:
        from kaldiio import load_mat  # slow: kaldiio, only where features are read or written

        ark, offset = self.entries[utt_id]
        try:
            matrix = load_mat(f"{ark}:{offset}")
        except PermissionError as err:  # not damaged: deleting and recomputing it was the advice
            raise SateError(f"{ark}: cannot read the features of {utt_id}: {err.strerror} (see the file's and its "
                            "folders' permissions: ls -l)") from None
        except Exception as err:  # kaldiio raises ValueError, OSError or others by case
            raise self._failed(ark, utt_id, offset, f"cannot read the features of {utt_id} at byte {offset} "
                               f"({shown(str(err))})") from None
        if ark not in self.checksums:
            self.checksums[ark] = recorded_checksums(ark)
        expected = self.checksums[ark].get(offset)
        if expected is not None and checksum(matrix) != expected:
            raise self._failed(ark, utt_id, offset, f"the features of {utt_id} at byte {offset} do not match their "
                               "checksum (the file is damaged)")
        return matrix

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, utt_id: object) -> bool:
        return utt_id in self.entries
