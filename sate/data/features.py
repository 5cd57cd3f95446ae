"""Compute 80-dim log-mel fbank features for every manifest row, and global CMVN from train.

Features are Kaldi-compatible (``torchaudio.compliance.kaldi.fbank``: 25 ms window, 10 ms
shift, 16 kHz, no dither) and stored once in Kaldi ark/scp shards through kaldiio:
``DATA/fbank/<split>.scp`` indexes ``DATA/fbank/<split>/NNNNN.ark`` by manifest id. Segments
are sliced from the audio files by offset; no per-segment files are written. Consecutive rows of a
shard that read the same slice share one stored matrix. Shards are computed in parallel over
``--jobs`` processes; a re-run skips finished splits and finished shards, and recomputes a split
whose manifest changed. Global mean/std come from the split named ``train`` only (MuST-C's train,
never an extra ASR corpus in the same directory) and go to ``DATA/cmvn.json``. ``--speed-perturb``
adds ``DATA/train_sp.jsonl``: train plus copies at speeds 0.9 and 1.1 (ids ``sp0.9-<id>``,
``sp1.1-<id>``), with their features.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import sys
import threading
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from sate import layout
from sate.data.audio import (
    END_TOLERANCE_S,
    MIN_SAMPLES,
    SAMPLE_RATE,
    SHIFT,
    WINDOW,
    HeldFiles,
    num_frames,
    perturbed_samples,
    read_segment,
    wav_info,
)
from sate.data.feature_index import (
    SIZES,
    NotAnIndexLine,
    checksum,
    foreign,
    index_problems,
    read_index,
    record_checksums,
    record_sizes,
    recorded_checksums,
)
from sate.data.manifest import (
    TRAIN_SPLIT,
    check_split_names,
    manifest_splits,
    read_manifest,
    write_manifest,
)
from sate.errors import SateError, asks_workers_to_end, first_few, one_line, pool_results, shown, worker_signals
from sate.files import (
    TEMP_TAIL,
    KeyTwice,
    append_only,
    atomic_write_lines,
    exclusive,
    fixed_in_place,
    link_or_what_is_there,
    loads_json,
    near_data_directory,
    read_record,
    real_path,
    require_file,
    sticky_forbids,
    unique_keys,
    what_is_there,
)
from sate.numbers import check_jobs, whole_number
from sate.targets import check_not_shared, check_output, check_own_files, dir_name

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext
    from multiprocessing.pool import Pool

NUM_MEL_BINS = 80
SPEEDS = (0.9, 1.1)
SPEED_SPLIT = "train_sp"
SHARD_SIZE = 500  # utterances per ark shard: the unit of parallel work and of resuming
FBANK_BLOCK_FRAMES = 30_000  # 5 minutes: longer inputs are computed block by block (`compute_fbank`)
# Everything that changes the stored values; part of each split's fingerprint.
FRAME_LENGTH_MS = 1000 * WINDOW // SAMPLE_RATE  # 25: the audio module's frames, in kaldi's units
FRAME_SHIFT_MS = 1000 * SHIFT // SAMPLE_RATE  # 10
FEATURE_CONFIG = {"type": "fbank", "num_mel_bins": NUM_MEL_BINS, "frame_length_ms": FRAME_LENGTH_MS,
                  "frame_shift_ms": FRAME_SHIFT_MS, "sample_rate": SAMPLE_RATE, "dither": 0.0, "scale": 32768,
                  "min_samples": MIN_SAMPLES}


def compute_fbank(wave: np.ndarray, dither: float = 0.0) -> np.ndarray:
    """(T, 80) float32 log-mel fbank of 16 kHz mono samples in [-1, 1].

    Samples are scaled to the 16-bit range as Kaldi expects, and padded with zeros to
    ``MIN_SAMPLES`` so even an empty segment gives ``num_frames(0)`` frames. Stored features use
    ``dither=0``; the argument exists for on-the-fly extraction (e.g. decoding raw audio).

    Each frame is computed from its own 25 ms window alone, so a long input is computed FBANK_BLOCK_FRAMES
    frames at a time into the output: the same frames, with the temporary memory of one block (Kaldi's fbank of
    a whole input holds about ten times the samples at once: a 20-minute manifest row took 1.5 GB, ten hours
    would take 45 GB).
    """
    if len(wave) < MIN_SAMPLES:
        wave = np.concatenate([wave, np.zeros(MIN_SAMPLES - len(wave), dtype=np.float32)])
    total = num_frames(len(wave))
    if total <= FBANK_BLOCK_FRAMES:
        return _fbank(wave, dither)
    out = np.empty((total, NUM_MEL_BINS), dtype=np.float32)
    for first in range(0, total, FBANK_BLOCK_FRAMES):
        last = min(total, first + FBANK_BLOCK_FRAMES)
        out[first:last] = _fbank(wave[first * SHIFT:(last - 1) * SHIFT + WINDOW], dither)
    return out


def _fbank(wave: np.ndarray, dither: float) -> np.ndarray:
    import torch  # heavy: torch
    import torchaudio.compliance.kaldi as kaldi  # heavy: torch

    x = torch.from_numpy(np.ascontiguousarray(wave, dtype=np.float32)).unsqueeze(0) * 32768.0
    # float32 under a caller's `torch.autocast("cpu")` too: its float16 power spectrum overflowed (the API's "feats[0]:
    # holds NaN or infinite values", of features it had made), and bfloat16 was 1% off the training features
    with torch.autocast("cpu", enabled=False):
        feats = kaldi.fbank(x, num_mel_bins=NUM_MEL_BINS, frame_length=float(FRAME_LENGTH_MS),
                            frame_shift=float(FRAME_SHIFT_MS), dither=dither, energy_floor=0.0,
                            sample_frequency=SAMPLE_RATE)
    return feats.numpy()


def speed_rows(rows: list[dict], manifest: str | Path = f"{TRAIN_SPLIT}.jsonl") -> list[dict]:
    """Train rows plus their 0.9x and 1.1x copies (own ids, speakers and ``n_frames``; same text).

    ``offset``/``duration`` of a copy still locate the original slice of the wav, which is read
    and then played at ``speed``; ``n_frames`` is the length after perturbation. A row whose id is a copy's
    (``sp0.9-X`` beside ``X``: a split speed-perturbed already) is refused, naming its line in ``manifest``.
    """
    out = list(rows)
    line = {row["id"]: k + 1 for k, row in enumerate(rows)}
    for speed in SPEEDS:
        tag = f"sp{speed:g}-"
        for row in rows:
            if tag + row["id"] in line:  # train_sp.jsonl was written, then refused by its own reader at the copy
                raise SateError(f"{manifest}:{line[tag + row['id']]}: the id {shown(tag + row['id'])} is "
                                f"the one --speed-perturb gives the {speed:g} copy of line {line[row['id']]}: is the "
                                "split speed-perturbed already (a Kaldi train_sp directory)? Prepare it without its "
                                f"copies, or train on it without --speed-perturb")
            n = perturbed_samples(round(row["duration"] * SAMPLE_RATE), speed)
            out.append({**row, "id": tag + row["id"], "speaker": tag + str(row["speaker"]),
                        "n_frames": num_frames(n), "speed": speed})
    return out


def speed_split_problem(data_dir: Path) -> str | None:
    """Why ``DATA/train_sp.jsonl`` is not the speed-perturbed copy of ``DATA/train.jsonl`` (`speed_rows`), or None.
    It is written once, by ``--speed-perturb``: train.jsonl changed since (prepared again, a row removed, a
    translation corrected) left it with the old rows, trained on without a word."""
    manifest = data_dir / f"{SPEED_SPLIT}.jsonl"
    try:
        rows = read_manifest(manifest)
    except SateError as err:
        return str(err)
    train = data_dir / f"{TRAIN_SPLIT}.jsonl"
    expected = speed_rows(read_manifest(train), train)
    if rows == expected:
        return None
    line = next((k + 1 for k, (a, b) in enumerate(zip(rows, expected, strict=False)) if a != b),
                min(len(rows), len(expected)) + 1)
    return (f"{manifest}:{line}: not the speed-perturbed copy of {TRAIN_SPLIT}.jsonl's rows ({TRAIN_SPLIT}.jsonl "
            "changed since `sate features --speed-perturb` wrote it)")


def check_speed_manifest_ours(data_dir: Path) -> None:
    """Refuse to replace a ``DATA/train_sp.jsonl`` that `speed_rows` did not write (no row holds a ``speed``): a
    split of the user's under that name (a Kaldi train_sp directory prepared as its folder is named) was replaced by
    train's speed copies without a word, at any `sate features` over train."""
    manifest = data_dir / f"{SPEED_SPLIT}.jsonl"
    if not manifest.is_file() or manifest.stat().st_size == 0:
        return
    try:
        rows = read_manifest(manifest)
    except SateError:
        rows = []
    if not any("speed" in row for row in rows):
        raise SateError(f"{manifest}: refusing to replace it: `sate features` writes train's speed copies there "
                        f"(--speed-perturb), and no row of it is one (a split of yours, a Kaldi {SPEED_SPLIT} "
                        "prepared under its name?); prepare it under another name and move this file away")


def check_speed_split(data_dir: Path) -> None:
    """Refuse to read ``train_sp`` when it no longer follows ``train`` (`speed_split_problem`)."""
    problem = speed_split_problem(data_dir)
    if problem is not None:
        raise SateError(f"{problem}; run `sate features --data {data_dir}` to write it again")


# ----------------------------------------------------------------------------------------------
# Shards


@dataclass(frozen=True)
class Shard:
    """One unit of work: rows [start, stop) of a split, written to ``ark`` with its ``scp`` last."""

    split: str
    ark: Path
    rows: tuple[tuple[str, str, float, float, float, int], ...]  # id, audio, offset, duration, speed, n_frames
    stats: bool  # accumulate CMVN statistics (train only)
    # DATA/SPLIT.jsonl, named with a row whose audio disagrees with it: found from the ark's path, it was a file in
    # the folder DATA/fbank links to (another disk), which is no manifest (eighteenth hostile pass)
    manifest: Path

    @property
    def scp(self) -> Path:
        return self.ark.with_suffix(".scp")

    @property
    def ark_in_index(self) -> str:
        """The ark as the index names it: relative to the fbank directory (`sate.data.feature_index`)."""
        return f"{self.ark.parent.name}/{self.ark.name}"

    @property
    def stats_path(self) -> Path:
        return self.ark.with_suffix(".stats.npz")

    def remove_temp_files(self) -> None:
        """The temporary ark and statistics `compute_shard` writes before renaming them into place."""
        self.ark.with_name(f".{self.ark.name}.tmp").unlink(missing_ok=True)
        self.stats_path.with_name(f".{self.stats_path.name}.tmp.npz").unlink(missing_ok=True)


_WORKER_FAILED: list[str] = []  # why this process could not start as a feature worker (`_init_worker`)


def _init_worker(parent: int | None = None, ending: Any = None) -> None:
    """Load torch with one thread. A pool's initializer that raises is started again for ever (torch failing to load
    under a memory limit printed tracebacks until the command was killed): the failure is kept, and the worker's
    first shard raises it as one line. A worker process ends with the command (`end_with_parent`), even one
    killed with SIGKILL, and leaves Ctrl-C to it; a SIGTERM or SIGHUP ignored where the command was started stays
    ignored (`worker_signals`)."""
    if parent is not None:  # a worker of `_workers_started` (one the pool starts again later too)
        worker_signals(parent, ending)
    try:
        import torch  # heavy: torch

        torch.set_num_threads(1)
    except Exception as err:  # noqa: BLE001 - whatever stops torch loading, said once by compute_shard
        _WORKER_FAILED.append(f"{type(err).__name__}: {err}")


def _workers_started(context: BaseContext, jobs: int) -> Pool:
    """A pool of feature workers that ignore Ctrl-C, which reaches every process of the terminal: the command alone
    stops them (ending the pool). A spawned worker spends its first second loading modules, and Ctrl-C then printed
    a KeyboardInterrupt traceback per worker under the command's one line (fourteenth hostile pass). So they are
    started with Ctrl-C ignored, which a new interpreter keeps; the command ignores it only while it starts them
    (milliseconds: a new process's mask of blocked signals is cleared, so holding Ctrl-C back is no way)."""
    main = threading.current_thread() is threading.main_thread()  # signals are the main thread's to set
    before = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        ending = context.RawValue("b", 0)
        return asks_workers_to_end(context.Pool(jobs, initializer=_init_worker, initargs=(os.getpid(), ending)),
                                   ending)
    finally:
        if main:
            signal.signal(signal.SIGINT, before if before is not None else signal.default_int_handler)


def compute_shard(shard: Shard) -> int:
    """`_compute_shard`, leaving no temporary file behind when it fails (a full disk, a damaged wav, an interrupt)."""
    if _WORKER_FAILED:
        raise SateError(f"cannot load torch to compute features ({_WORKER_FAILED[0][:200]})")
    try:
        return _compute_shard(shard)
    except BaseException as err:
        shard.remove_temp_files()
        if isinstance(err, OSError) and err.filename is None:
            err.filename = str(shard.ark)  # a failed write names no file; the one line at the CLI must
        raise


def _made_anew(tmp: Path) -> IO[bytes]:
    """A shard's fixed temporary name (its ark's, its sums'), opened for writing as a new file: whatever stands there
    is unlinked first, never written through. A hard link or a symlink there to a user's file (a name of sate's own,
    left by a killed run or made by hand) had that file replaced with features when the shard was computed again,
    and the ark renamed into place kept it as another name (eighteenth hostile pass)."""
    tmp.unlink(missing_ok=True)
    return open(tmp, "xb")  # O_EXCL: a link made since the unlink is refused, not followed


def _compute_shard(shard: Shard) -> int:
    """Write one shard (ark, then stats, then scp: an scp means the shard is complete).

    Rows that read the same slice as the row before them (Augmented LibriSpeech's second translation of a segment)
    are computed and stored once: the scp points both ids at one matrix, and CMVN counts its frames once.
    """
    from kaldiio.matio import write_array  # slow: kaldiio, only where features are read or written

    total = np.zeros(NUM_MEL_BINS)
    total_sq = np.zeros(NUM_MEL_BINS)
    frames = 0
    rates: dict[str, int] = {}
    scp_lines = []
    previous, stored_at = None, 0
    sums: dict[int, int] = {}
    tmp_ark = shard.ark.with_name(f".{shard.ark.name}.tmp")
    with _made_anew(tmp_ark) as f, HeldFiles() as held:  # a talk that cannot seek is read on, not from its start
        for utt_id, audio, offset, duration, speed, n_frames in shard.rows:
            if (audio, offset, duration, speed, n_frames) == previous:  # the same slice, another translation
                scp_lines.append(f"{utt_id} {shard.ark_in_index}:{stored_at}")
                continue
            previous = (audio, offset, duration, speed, n_frames)
            try:
                if audio not in rates:
                    rates[audio] = wav_info(audio).sample_rate
                wave = read_segment(audio, offset, duration, speed=speed, sample_rate=rates[audio], held=held)
            except SateError as err:  # a damaged wav, an offset past its end: say which row of which manifest
                raise SateError(f"{shard.manifest}: {utt_id}: {err}") from None
            feats = compute_fbank(wave)
            if feats.shape[0] != n_frames:
                raise SateError(f"{shard.manifest}: {utt_id}: manifest says {n_frames} frames but the audio gives "
                                f"{feats.shape[0]}; re-run `sate prep`")  # the id alone named no file
            f.write(f"{utt_id} ".encode())
            stored_at = f.tell()
            scp_lines.append(f"{utt_id} {shard.ark_in_index}:{stored_at}")
            write_array(f, feats)
            sums[stored_at] = checksum(feats)
            if shard.stats:
                f64 = feats.astype(np.float64)
                total += f64.sum(0)
                total_sq += (f64 * f64).sum(0)
                frames += feats.shape[0]
    os.replace(tmp_ark, shard.ark)
    if shard.stats:
        tmp_stats = shard.stats_path.with_name(f".{shard.stats_path.name}.tmp.npz")
        with _made_anew(tmp_stats) as f:
            np.savez(f, sum=total, sum_sq=total_sq, frames=frames)
        os.replace(tmp_stats, shard.stats_path)
    record_checksums(shard.ark, sums)
    atomic_write_lines(shard.scp, scp_lines)
    return len(shard.rows)


def _fingerprint(rows: list[dict]) -> str:
    """What a split's features are computed from. Times are taken as floats, as `sate prep` writes them: a manifest
    rewritten by `jq` 1.6 (a translation corrected) holds `"offset": 0` for prep's `0.0`, the same time, and its
    features were "changed since computed", so training refused and `sate features` recomputed the whole split
    (thirty-first hostile pass). A manifest of prep's floats has the fingerprint it had."""
    h = hashlib.sha256(json.dumps({**FEATURE_CONFIG, "shard_size": SHARD_SIZE}, sort_keys=True).encode())
    for row in rows:
        h.update(json.dumps([row["id"], row["audio"], float(row["offset"]), float(row["duration"]),
                             float(row.get("speed", 1.0)), row["n_frames"]]).encode())
    return h.hexdigest()


@dataclass
class SplitPlan:
    """Where a split's features go and which of its shards still need computing."""

    split: str
    scp: Path
    shards: list[Shard]
    todo: list[Shard]
    inherited_scp: Path | None  # train_sp reuses train's features for its speed-1.0 rows


def _read_plan(plan_path: Path) -> dict:
    """A split's plan.json: the manifest fingerprint and each shard's audio stamp it recorded; {} when it is missing
    or damaged (then recomputed, as a record sate writes itself is; a cut or edited plan.json was a JSON or
    AttributeError traceback)."""
    plan = read_record(plan_path, "`sate features`")
    return plan if isinstance(plan, dict) else {}


def audio_stamp(files: Iterable[str]) -> str | None:
    """The size and modification time of each audio file, as one digest: a manifest names the files, not what they
    hold, so a talk replaced after its features (or a Whisper frozen cache, `sate.train.frozen_cache`) were computed
    (copied again, re-encoded) kept the old ones. None when a file is missing: what was computed from it cannot be
    computed again, and raw audio is often deleted once its features are stored."""
    h = hashlib.sha256()
    for audio in sorted(set(files)):
        try:
            st = os.stat(audio)
        except OSError:
            return None
        h.update(json.dumps([audio, st.st_size, st.st_mtime_ns]).encode())
    return h.hexdigest()


def _audio_stamp(rows: tuple[tuple[str, str, float, float, float, int], ...]) -> str | None:
    """`audio_stamp` of the files a shard reads."""
    return audio_stamp(row[1] for row in rows)


def _shard_rows(rows: list[dict]) -> list[tuple[tuple[str, str, float, float, float, int], ...]]:
    """A split's rows as its shards hold them, SHARD_SIZE at a time."""
    return [tuple((r["id"], r["audio"], float(r["offset"]), float(r["duration"]), float(r.get("speed", 1.0)),
                   int(r["n_frames"])) for r in rows[start:start + SHARD_SIZE])
            for start in range(0, len(rows), SHARD_SIZE)]


def stale_features(data_dir: Path, split: str, rows: list[dict]) -> str | None:
    """Why a split's stored features are not those of its manifest rows as they are now, or None: what `sate
    features` would recompute (`plan_split`). A row's offset, duration or audio edited (same frame count), or a
    talk replaced since the features were computed, was trained and evaluated on the old slice without a word: a
    dataset checked the ids and frame counts alone. A split whose plan.json is missing or damaged is not judged by
    its fingerprint and audio; its index is, as train_sp's is (train's index and then its own shards')."""
    fbank = data_dir / layout.FBANK_DIR
    parts = [(split, rows)] if split != SPEED_SPLIT else \
        [(TRAIN_SPLIT, rows[:len(rows) // (1 + len(SPEEDS))]),  # train's rows (`speed_rows`), read from its features
         (SPEED_SPLIT, _own_rows(SPEED_SPLIT, rows))]  # as `plan_split` takes them
    for name, part in parts:
        if not part:  # no row reads a feature (an empty split is named as such)
            continue
        plan = _read_plan(fbank / name / "plan.json")
        if "fingerprint" in plan and plan["fingerprint"] != _fingerprint(part):
            return (f"{data_dir / f'{name}.jsonl'} changed since its features were computed (a row's audio, offset, "
                    "duration or frames)")
        recorded = plan.get("audio")
        shards = _shard_rows(part)
        if "fingerprint" in plan and isinstance(recorded, list) and len(recorded) == len(shards):
            for k, (old, shard) in enumerate(zip(recorded, shards, strict=True)):
                if old is not None and (new := _audio_stamp(shard)) is not None and new != old:
                    return (f"an audio file of {data_dir / f'{name}.jsonl'}'s rows {k * SHARD_SIZE + 1} to "
                            f"{k * SHARD_SIZE + len(shard)} changed since their features were computed (copied "
                            "again, re-encoded?)")
        missing = _missing_shard_indexes(fbank, name, len(shards))
        if missing:  # the split's index could not be compared: a swap in it read each id the other's features
            return f"{missing[0]} is missing, so {fbank / f'{name}.scp'} cannot be checked against its shards' indexes"
        if _index_edited(fbank, name, len(shards)):
            return f"{fbank / f'{name}.scp'} is not the index its shards make (edited?)"
    return None


def _missing_shard_indexes(fbank: Path, split: str, count: int) -> list[Path]:
    """The indexes of a split's ``count`` shards (``fbank/SPLIT/NNNNN.scp``) that are not there at all. The split's
    index is compared with them (`_index_edited`); with one deleted, two of its lines' offsets swapped gave each id
    the other's features, and `sate features` called the split up to date (nineteenth hostile pass). A split with
    no shard folder at all has an index made elsewhere (another tool's arks, or another split's named by a copy of
    its index): there is nothing to compare it with, and nothing is missing."""
    if not os.path.isdir(fbank / split):
        return []
    return [path for k in range(count) if not os.path.lexists(path := fbank / split / f"{k:05d}.scp")]


def _index_edited(fbank: Path, split: str, count: int) -> bool:
    """Is a split's index (`fbank/SPLIT.scp`) not the one its ``count`` shards' indexes make (train_sp's: train's
    index, then its own shards'; where each can be read: the reader names one that cannot)? Two lines' offsets
    swapped by hand gave each id the other's features, without a word where their frame counts were equal; `sate
    features` writes it again (seventeenth hostile pass; train_sp's, and any split's without its plan.json, were
    not compared: the eighteenth)."""
    index = fbank / f"{split}.scp"
    paths = [fbank / split / f"{k:05d}.scp" for k in range(count)]
    if split == SPEED_SPLIT:  # `finish_split` joins train's index first (its speed-1.0 rows)
        paths.insert(0, fbank / f"{TRAIN_SPLIT}.scp")
    if not all(path.is_file() for path in [index, *paths]):  # a named pipe would block: not judged
        return False
    lines, joined = _read_lines(index), _joined(paths)
    return lines is not None and joined is not None and \
        [line for line in lines if line] != [line for line in joined if line]


# What `sate features` writes in a split's shard folder (DATA/fbank/SPLIT/), besides its hidden temporary files;
# ASCII digits only: `\d` took a user's `٠٠٠٠١.ark` (Arabic-Indic digits) for a shard (eighteenth hostile pass)
SHARD_FILE = re.compile(r"[0-9]{5,}\.(ark|scp|crc\.json|stats\.npz)|plan\.json|" + re.escape(SIZES))
# Its hidden temporary files there (an ark's and its statistics' while computed, `sate.files` atomic writes): any
# other hidden name (a user's .gitignore) is not its own
SHARD_TEMP = re.compile(rf"\.({SHARD_FILE.pattern})\.({TEMP_TAIL.pattern}|tmp|tmp\.npz)")


def _empty(shard_dir: Path) -> None:
    """A split's shard folder, emptied of its old shards, not removed. One linked to another disk keeps its link:
    rmtree refuses a link (its error was ignored), and the mkdir after it was "File exists" at the split's first
    run or any change of its manifest. A folder holding anything sate did not write there is refused, naming it:
    the user's files in DATA/fbank/dev/ (another tool's features) were deleted without a word."""
    if shard_dir.is_dir():  # sate's own names are files: a folder of the user's named `.00000.ark.tmp` (its
        # files in it) was removed whole as a temporary file (eighteenth hostile pass)
        other = sorted(p.name for p in shard_dir.iterdir()
                       if not ((SHARD_TEMP.fullmatch(p.name) or SHARD_FILE.fullmatch(p.name)) and not p.is_dir()))
        if other:
            raise SateError(f"{shard_dir}: holds {first_few(other, 1)}, which sate features did not write; the "
                            "folder is emptied before its features are computed: move it away")
    try:
        if shard_dir.is_dir():  # emptied, not removed: a disk mounted there cannot be removed ("Device or resource
            # busy", at every run once its manifest changed, after its features were deleted: twentieth hostile pass)
            for path in shard_dir.iterdir():
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        elif shard_dir.exists():  # no folder: named by rmtree, not "File exists" below
            shutil.rmtree(shard_dir)
    except OSError as err:  # rmtree's walk by descriptors names the entry alone: "plan.json: Permission denied"
        if not isinstance(err.filename, str) or os.path.isabs(err.filename):
            raise
        raise OSError(err.errno, err.strerror, str(shard_dir / err.filename)) from None
    shard_dir.mkdir(parents=True, exist_ok=True)


def check_stored_files(fbank: Path) -> None:
    """Refuse, before any work, a symlink or anything but a regular file under the name of one of the files `sate
    features` keeps in ``fbank`` (a split's index ``SPLIT.scp``; in a split folder its arks, indexes, checksums,
    sizes, CMVN sums and plan). They are its own, written anew at each run: a ``sizes.json`` or ``00000.crc.json``
    linked elsewhere was written through, replacing a pack's ``model.pt`` (or any file the link led to) with a
    record, exit 0; a directory there failed after the work, naming a temporary file."""
    entries = sorted(fbank.iterdir()) if fbank.is_dir() else []
    for entry in entries:
        inside = sorted(entry.iterdir()) if entry.is_dir() else []  # a split folder (linked to another disk or not)
        own = [entry] if entry.suffix == ".scp" else []
        for path in own + [p for p in inside if SHARD_FILE.fullmatch(p.name)]:
            what = link_or_what_is_there(path)
            if what is not None:
                raise SateError(f"{path}: {what}, where `sate features` keeps a file of its own (written anew at "
                                "each run); remove it")
        # append-only or immutable, its own file (or a split folder's entry) could not be replaced or removed: the
        # rename failed after the work, "Operation not permitted" said of a special file system (twentieth pass)
        for path in own + [p for p in inside if SHARD_FILE.fullmatch(p.name)] + ([entry] if entry.is_dir() else []):
            fixed = fixed_in_place(path)
            if fixed is not None:
                raise SateError(f"{path}: {fixed}, where `sate features` replaces its own files (written anew at "
                                "each run); lift that, or use another data directory")
            if path.is_file() and sticky_forbids(path):  # a colleague's, in a shared fbank/ of mode 1777
                raise SateError(f"{path}: another user's file in a folder with the sticky bit, where `sate features` "
                                "replaces its own files, which only its owner may replace; use another data directory")


def _own_rows(split: str, rows: list[dict]) -> list[dict]:
    """The rows whose features a split's shards hold: train_sp's speed-1.0 rows are train's."""
    return [row for row in rows if row.get("speed", 1.0) != 1.0] if split == SPEED_SPLIT else rows


def check_audio_kept(data_dir: Path, split: str, rows: list[dict]) -> None:
    """Refuse a split whose stored features `plan_split` would delete (its manifest changed) while an audio file its
    rows name is not there to compute them again. A data directory handed over with its features and without its
    audio (the manifest's paths edited to this machine) lost every split's features, and then stopped at 'audio
    file is missing'; evaluate had said to run `sate features`."""
    shard_dir = real_path(data_dir / layout.FBANK_DIR) / split
    rows = _own_rows(split, rows)
    if _read_plan(shard_dir / "plan.json").get("fingerprint") == _fingerprint(rows) or not any(shard_dir.glob("*.ark")):
        return
    for audio in sorted({row["audio"] for row in rows}):
        if not os.path.isfile(audio):  # a folder there was "missing" too
            kind = what_is_there(Path(audio))
            raise SateError(f"{audio}: {f'{kind}, not an audio file' if kind else 'audio file is missing'}, and "
                            f"{data_dir / f'{split}.jsonl'} changed since its "
                            "features were computed: they would be deleted before the audio is read again; put the "
                            "audio where the manifest says, or undo the manifest's change")


def check_audio_there(shards: Iterable[Shard]) -> None:
    """Refuse shards to compute whose rows name audio files that are not there, before any is computed: a corpus
    moved after `sate prep` (its manifests hold absolute paths) stopped in a worker on "ROW: PATH: audio file is
    missing", saying neither how many nor what to do (25th hostile pass). Up-to-date shards need no audio."""
    for shard in shards:
        # each file once (a talk holds hundreds of rows); a broken link (a link farm whose corpus moved) is gone too
        gone = sorted(audio for audio in {audio for _id, audio, *_ in shard.rows} if not os.path.exists(audio))
        if gone:
            raise SateError(f"{shard.manifest}: {len(gone):,} audio file(s) its rows name are not there (first: "
                            f"{one_line(gone[0])}); the corpus moved or was removed since `sate prep`? run `sate "
                            "prep` again over the corpus where it is now")


def check_rows_fit_changed_audio(shards: Iterable[Shard]) -> None:
    """Refuse shards whose audio changed since their features were computed where a row's segment now runs past the
    end of its file: the manifest is older than the corpus. `sate synth --seed 1` over the corpus a data directory
    was prepared from, then `sate features` without `sate prep`: train's shards were computed from the old segment
    times on the new talks, then dev stopped on "runs past the end of the audio ... is the manifest row of another
    file?" (24th hostile pass). Said before anything is computed or the plan's stamps are written, with the step that
    mends it; audio copied again or re-encoded (each row still in its file) is recomputed, as before."""
    lengths: dict[str, float] = {}
    for shard in shards:
        for utt_id, audio, offset, duration, _speed, _frames in shard.rows:
            if audio not in lengths:
                lengths[audio] = wav_info(audio).duration
            if offset + duration > lengths[audio] + END_TOLERANCE_S:
                raise SateError(f"{shard.manifest}: {utt_id}: its audio {audio} changed since its features were "
                                f"computed and now ends at {lengths[audio]:.3f} s, before the row's segment "
                                f"({offset:.3f} s + {duration:.3f} s): the manifest is older than the corpus (made or "
                                "downloaded again?); run `sate prep` again, then `sate features`")


def _same_directory(one: str | Path, other: str | Path) -> bool:
    """One folder under two names no link resolves (a bind mount, an NFS path and its automount path): the data
    directory named another way than when it computed its features was refused as a copy sharing its own store
    (fix24d)."""
    try:
        return os.path.samefile(one, other)
    except OSError:
        return False


def _recorded_owner(plan: dict) -> str | None:
    """The data directory a split's plan.json names as the one that computed its store, or None (an earlier sate's)."""
    owner = plan.get("data_dir")
    return owner if isinstance(owner, str) else None


def _store_inside(data_dir: Path, split: str) -> bool:
    """Does ``data_dir``'s store of ``split`` lie inside it, reached through no link (its own, wherever it moved)?"""
    return os.path.realpath(data_dir / layout.FBANK_DIR / split).startswith(os.path.realpath(data_dir) + os.sep)


def _sharing_owner(data_dir: Path, split: str, plan: dict) -> str | None:
    """The data directory a split's plan.json names (`plan_split` records the one that computed it) when it is not
    ``data_dir`` and still reads the same store (its fbank/SPLIT leads to the same folder, its manifest is there);
    None otherwise (no record, ours, or a data directory since moved)."""
    other = _recorded_owner(plan)
    if other is None or other == os.path.realpath(data_dir) or _same_directory(other, data_dir):
        return None
    theirs, ours = Path(other) / layout.FBANK_DIR / split, data_dir / layout.FBANK_DIR / split
    shared = os.path.realpath(theirs) == os.path.realpath(ours) and (Path(other) / f"{split}.jsonl").is_file()
    return other if shared else None


def _store_owner(data_dir: Path, split: str, plan: dict, computing: bool) -> str | None:
    """The data directory a split's plan.json records as the one that computed its store: this one where it computes
    the split (a copy sharing the store of a live one was refused before, `check_store_not_shared`); where it only
    reads, the one recorded, kept, unless that one is gone and this one's store lies inside it (no link: its own,
    moved). A store reached through a link keeps what its plan names, none (an earlier sate's) or a gone directory:
    whichever directory read it first was recorded as its owner, a copy included, and the original was then refused
    its own store, or a copy took over a moved original's (24th hostile pass, reviews)."""
    ours = os.path.realpath(data_dir)
    if computing:
        return ours
    recorded = _recorded_owner(plan)
    if recorded is not None and (os.path.isdir(recorded) or _same_directory(recorded, data_dir)):
        return recorded
    return ours if _store_inside(data_dir, split) else recorded


def check_store_not_shared(data_dir: Path, split: str, rows: list[dict]) -> None:
    """Refuse to recompute a split whose store (``DATA/fbank/SPLIT``, reached through a link to another disk) is
    also that of the data directory that computed it, which still reads it: a data directory copied with its fbank
    linked to a scratch disk shares the store, and `sate prep` of another corpus into the copy, then `sate
    features`, deleted the original's features (hours of fbank on MuST-C), exit 0, without a word (24th hostile
    pass). A data directory moved (the one named is gone, or its fbank leads elsewhere) takes the store over."""
    shard_dir = data_dir / layout.FBANK_DIR / split
    plan = _read_plan(shard_dir / "plan.json")
    other = _sharing_owner(data_dir, split, plan)
    if plan.get("fingerprint") in (None, _fingerprint(_own_rows(split, rows))):
        return
    recorded = _recorded_owner(plan)
    if other is None and (recorded is None or not os.path.isdir(recorded)) and not _store_inside(data_dir, split):
        # a store reached through a link whose plan names no data directory (an earlier sate's) or one since gone (a
        # moved original): who else reads it cannot be told, so it is said (24th hostile pass, reviews)
        whose = "no data directory (an earlier sate's)" if recorded is None else f"{one_line(recorded)}, gone"
        print(f"note: {one_line(str(shard_dir))} leads to {one_line(os.path.realpath(shard_dir))}, whose plan names "
              f"{whose}: if another data directory reads it, its {split} features are replaced now", file=sys.stderr)
    if other is None:
        return
    raise SateError(f"--data {data_dir}: {shard_dir} is also the feature store of {other} (its {layout.FBANK_DIR} "
                    f"leads to the same folder, {os.path.realpath(shard_dir)}: a data directory copied with its "
                    f"link?), whose {split} features computing this {split} would replace; give this data directory "
                    f"a {layout.FBANK_DIR}/ of its own (remove the link: `sate features` makes one)")


def plan_split(data_dir: Path, split: str, rows: list[dict]) -> SplitPlan:
    """Shard a split; wipe its old shards if the manifest or the feature config changed."""
    fbank = real_path(data_dir / layout.FBANK_DIR)
    shard_dir = fbank / split
    plan_path = shard_dir / "plan.json"
    inherited = fbank / f"{TRAIN_SPLIT}.scp" if split == SPEED_SPLIT else None
    rows = _own_rows(split, rows)
    fingerprint = _fingerprint(rows)
    plan = _read_plan(plan_path)
    stale = plan.get("fingerprint") != fingerprint
    if stale:
        _empty(shard_dir)
        (fbank / f"{split}.scp").unlink(missing_ok=True)
        if split == TRAIN_SPLIT:  # train_sp's index points into train's shards: it is stale too
            (fbank / f"{SPEED_SPLIT}.scp").unlink(missing_ok=True)
    shards = [Shard(split, shard_dir / f"{k:05d}.ark", chunk, stats=split == TRAIN_SPLIT,
                    manifest=data_dir / f"{split}.jsonl")
              for k, chunk in enumerate(_shard_rows(rows))]
    # A plan written before stamps were recorded has none: its features are let be, and stamped now.
    stamps, recorded = [_audio_stamp(s.rows) for s in shards], plan.get("audio")
    if stale or not isinstance(recorded, list) or len(recorded) != len(shards):
        recorded = list(stamps)
    changed = [s for s, old, new in zip(shards, recorded, stamps, strict=True)
               if s.scp.is_file() and None not in (old, new) and old != new]
    check_rows_fit_changed_audio(changed)
    stamps = [old if new is None else new for old, new in zip(recorded, stamps, strict=True)]
    owner = _store_owner(data_dir, split, plan, stale)
    if stale or stamps != plan.get("audio") or plan.get("data_dir") != owner:
        record = {"fingerprint": fingerprint, "utterances": len(rows), "audio": stamps}
        atomic_write_lines(plan_path, [json.dumps(record if owner is None else {**record, "data_dir": owner})])
    if changed:
        print(f"{split}: {len(changed)} shard(s) whose audio files changed since their features were computed: "
              "recomputed at the manifest's segment times (if the corpus was made again since `sate prep`, run "
              "`sate prep` first)")
    scp = fbank / f"{split}.scp"
    damaged = [s for s in shards if s.scp.is_file() and ((entries := _index_entries(s.scp, fbank)) is None or
                                                         _untrusted(entries, fbank, s))]
    split_entries = _index_entries(scp) if scp.is_file() else {}
    split_damaged = split_entries is not None and scp.is_file() and _untrusted(split_entries, fbank)
    if damaged:  # a deleted or cut ark is not up to date
        print(f"{split}: {len(damaged)} shard(s) whose ark or index is missing, damaged or another data directory's: "
              "recomputed")
    elif split_entries is None:  # a line no reader takes (a tab between its fields): `sate features` refused it too,
        # naming the line with nothing to do, where an index edited any other way is written again (29th hostile pass)
        print(f"{split}: its index {one_line(str(scp))} holds a line that is not ID ARK:OFFSET (edited?): written "
              "again from its shards' indexes")
        split_damaged = True
    elif split_damaged:  # its shards are whole: "0 shard(s) ... recomputed" told nothing (twentieth hostile pass)
        print(f"{split}: its index {one_line(str(scp))} names an ark that is missing, damaged or another data "
              "directory's (copied from one?): written again from its shards' indexes")
    elif scp.is_file() and (missing := _missing_shard_indexes(fbank, split, len(shards))):
        print(f"{split}: {len(missing)} shard index(es) missing ({one_line(str(missing[0]))}), against which its index "
              f"{one_line(str(scp))} is checked: recomputed")
        split_damaged = True
    elif scp.is_file() and (joined := _joined([*([inherited] if inherited is not None else []),
                                                *(s.scp for s in shards)])) is not None and _read_lines(scp) != joined:
        print(f"{split}: its index {one_line(str(scp))} is not the one its shards make (edited?): written again")
        split_damaged = True
    no_stats = [s for s in shards if s.stats and s.scp.is_file() and s not in damaged and stats_problem(s)]
    if no_stats:
        print(f"{split}: {len(no_stats)} shard(s) whose CMVN sums ({no_stats[0].stats_path.name}) are missing or "
              "damaged: recomputed")
        damaged += no_stats
    if changed or damaged or split_damaged:
        for shard in changed + damaged:
            shard.scp.unlink(missing_ok=True)
        for index in [scp] + ([fbank / f"{SPEED_SPLIT}.scp"] if split == TRAIN_SPLIT else []):
            index.unlink(missing_ok=True)
    todo = [] if scp.is_file() else [s for s in shards if not s.scp.is_file()]
    return SplitPlan(split, scp, shards, todo, inherited)


def _stats_frames(shard: Shard) -> int:
    """The frames a shard's CMVN sums count: each stored matrix once (`_compute_shard` stores a repeated slice
    once)."""
    rows = shard.rows
    return sum(row[5] for k, row in enumerate(rows) if k == 0 or rows[k - 1][1:] != row[1:])


def stats_problem(shard: Shard) -> str | None:
    """Why a train shard's CMVN sums (``NNNNN.stats.npz``, which `write_cmvn` adds up into ``cmvn.json``) cannot be
    used, or None: missing, unreadable, of another shape, not finite, or counting other frames than its rows'. A cut
    file was a BadZipFile traceback, sums of another length a ValueError one, and a frame count edited to -3 gave a
    ``cmvn.json`` of nonsense, exit 0."""
    try:  # opened here, so that a file np.load refuses is closed too (it left the descriptor to the collector)
        with open(shard.stats_path, "rb") as f:
            stats = np.load(f, allow_pickle=False)
            if not isinstance(stats, np.lib.npyio.NpzFile):  # one array (.npy) was a TypeError traceback of `with`
                return "not the sums sate features writes (cut short or replaced?)"
            with stats:
                total, total_sq, frames = (np.asarray(stats[key]) for key in ("sum", "sum_sq", "frames"))
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error):
        return "not the sums sate features writes (cut short or replaced?)"
    if not (total.shape == total_sq.shape == (NUM_MEL_BINS,) and total.dtype.kind == total_sq.dtype.kind == "f"
            and np.isfinite(total).all() and np.isfinite(total_sq).all() and (total_sq >= 0).all()):
        return f"not {NUM_MEL_BINS} finite sums of frames and of their squares"
    counted = _stats_frames(shard)
    if frames.shape != () or frames.dtype.kind not in "iu" or int(frames) != counted:
        return f"counting {frames.tolist()!r:.40} frames where its rows have {counted}"
    return None


def _index_entries(scp: Path, base: Path | None = None) -> dict[str, tuple[Path, int]] | None:
    """An index as `read_index` reads it, or None where a line of it is not ``ID ARK:OFFSET``: an index sate wrote
    and someone edited, which `plan_split` writes again (a shard's, by computing the shard again)."""
    try:
        return read_index(scp, base)
    except NotAnIndexLine:
        return None


def _untrusted(entries: dict[str, tuple[Path, int]], fbank: Path, shard: Shard | None = None) -> bool:
    """Whether an index names a missing, damaged or foreign ark; for a shard's own index, also whether it is not
    the index `_compute_shard` wrote for the shard's rows (`_not_written_for`)."""
    return bool(index_problems(entries)) or foreign(entries, fbank) is not None or \
        (shard is not None and _not_written_for(shard, entries))


def _not_written_for(shard: Shard, entries: dict[str, tuple[Path, int]]) -> bool:
    """Whether a shard's index is other than the one written for its rows: their ids in order, each at a matrix of
    the shard's own ark, in the order they were stored (only consecutive rows of one slice share one). An index edited
    by hand (a line removed or repeated, an id pointed at another utterance's matrix) made the readers say to run
    `sate features`, which said "up to date"."""
    if list(entries) != [row[0] for row in shard.rows]:
        return True
    ark = os.path.realpath(shard.ark)
    if any(os.path.realpath(path) != ark for path, _ in entries.values()):
        return True
    offsets = [offset for _, offset in entries.values()]
    if offsets != sorted(offsets):
        return True
    recorded = recorded_checksums(shard.ark)  # {} for a shard written before they were recorded
    return bool(recorded) and set(offsets) != set(recorded)


def _read_lines(path: Path) -> list[str] | None:
    try:
        return path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return None


def _joined(paths: list[Path]) -> list[str] | None:
    """The lines of the split index `finish_split` writes from these indexes (train's first for train_sp, then the
    shards'), or None when one is not there or cannot be read."""
    lines: list[str] = []
    for path in paths:
        text = _read_lines(path)
        if text is None:
            return None
        lines += text[:-1] if text and text[-1] == "" else text
    return lines + [""]


def finish_split(plan: SplitPlan) -> None:
    """Join the shard indexes into ``fbank/<split>.scp``: its presence marks the split done."""
    if plan.scp.is_file():
        return
    lines = []
    if plan.inherited_scp is not None:
        lines += plan.inherited_scp.read_text(encoding="utf-8").splitlines()
    for shard in plan.shards:
        lines += shard.scp.read_text(encoding="utf-8").splitlines()
    record_sizes(plan.scp.parent / plan.split, [shard.ark for shard in plan.shards])
    atomic_write_lines(plan.scp, lines)


def write_cmvn(plan: SplitPlan, path: Path) -> None:
    """Global mean/std over all train frames, from the per-shard sums."""
    total = np.zeros(NUM_MEL_BINS)
    total_sq = np.zeros(NUM_MEL_BINS)
    frames = 0
    for shard in plan.shards:
        problem = stats_problem(shard)
        if problem is not None:  # checked when planned; changed since
            raise SateError(f"{shard.stats_path}: CMVN sums {problem}; run `sate features` again")
        with np.load(shard.stats_path) as stats:
            total += stats["sum"]
            total_sq += stats["sum_sq"]
            frames += int(stats["frames"])
    if frames == 0:
        raise SateError(f"{plan.split}: no frames to compute CMVN statistics from (an empty split?); {path} not "
                        "written")
    mean = total / frames
    std = np.sqrt(np.maximum(total_sq / frames - mean * mean, 1e-10))
    atomic_write_lines(path, [json.dumps({"split": plan.split, "frames": frames, "mean": mean.tolist(),
                                         "std": std.tolist()})])


def foreign_cmvn(path: Path, plan: SplitPlan) -> tuple[int, int] | None:
    """The frame counts of a ``cmvn.json`` that was not added up from this train split's shards and of the shards',
    or None: another
    data directory's statistics copied in (`cp -r other/* DATA/`) were "up to date" and normalised every training
    without a word (24th hostile pass). A link is statistics shared on purpose (kept, unsaid); a count of every
    row's frames (an older sate counted a repeated slice twice) is this split's."""
    if not plan.shards or path.is_symlink() or not path.is_file():
        return None
    record = read_record(path, "`sate features`")
    frames = record.get("frames") if isinstance(record, dict) else None
    if not isinstance(frames, int) or isinstance(frames, bool):
        return None
    stored = sum(_stats_frames(s) for s in plan.shards)
    return None if frames in (stored, sum(row[5] for s in plan.shards for row in s.rows)) else (frames, stored)


def _unreadable_cmvn(path: Path) -> bool:
    """Would `load_cmvn` refuse ``path``?"""
    try:
        load_cmvn(path)
    except SateError:
        return True
    return False


def load_cmvn(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(mean, std) float32 arrays of shape (80,) from ``cmvn.json``."""
    path = Path(path)
    # a pack's copy is fixed by packing again, a data directory's by computing it: `sate features` on a pack is refused
    remedy = ("pack it again (`sate pack`) from a data directory whose cmvn.json is whole"
              if (path.parent / layout.PACK_YAML).is_file() else "run `sate features` on a train split with speech")
    require_file(path, "CMVN statistics",
                 f"{path}: CMVN statistics are missing (run `sate features` on the train split)")
    try:
        stats = loads_json(path.read_text(encoding="utf-8"), object_pairs_hook=unique_keys)
        for key in ("mean", "std"):  # numpy reads "1.0" and true as 1: an edited std trained without a word
            items = stats[key] if isinstance(stats, dict) and isinstance(stats.get(key), list) else []
            if (odd := next((v for v in items if isinstance(v, bool | str)), None)) is not None:
                raise SateError(f"{path}: {key} holds {shown(odd)}, not a number")
        with np.errstate(over="ignore"):  # 1e300 is inf in float32, refused below; numpy's warning was two lines
            mean = np.asarray(stats["mean"], dtype=np.float32)
            std = np.asarray(stats["std"], dtype=np.float32)
    except KeyTwice as err:  # an edit that appended a key: the last was kept without a word
        raise SateError(f"{path}: the key {shown(err.args[0])} is given twice") from None
    except (KeyError, TypeError, ValueError, RecursionError, OverflowError) as err:  # an int no float holds: 10**400
        raise SateError(f"{path}: not a CMVN file ({err})") from None
    if mean.shape != (NUM_MEL_BINS,) or std.shape != (NUM_MEL_BINS,):
        raise SateError(f"{path}: mean and std must have {NUM_MEL_BINS} values")
    if not (np.isfinite(mean).all() and np.isfinite(std).all() and (std > 0).all()):
        raise SateError(f"{path}: mean and std must be finite, std > 0 (statistics of zero frames?); {remedy}")
    return mean, std


# ----------------------------------------------------------------------------------------------
# CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=dir_name, required=True, help="data directory written by `sate prep`")
    parser.add_argument("--splits", nargs="+", action="extend", default=None,
                        help="splits to process (when not given: every manifest in --data)")
    parser.add_argument("--jobs", type=whole_number, default=os.cpu_count() or 1, help="parallel worker processes")
    parser.add_argument("--speed-perturb", action="store_true",
                        help=f"also write {SPEED_SPLIT}.jsonl and its features: train at speeds 0.9, 1.0, 1.1")


def run(args: argparse.Namespace) -> int:
    """`_run` holding the data directory's features lock: a second `sate features` on it is refused."""
    check_jobs(args.jobs)
    data_dir: Path = args.data
    check_output(data_dir, "data", "--data")
    if not data_dir.is_dir():
        raise SateError(f"{data_dir}: no manifests: the directory does not exist (run `sate prep` first)")
    near = near_data_directory(data_dir)  # its fbank/, the folder holding it: "no manifests (run `sate prep`)"
    if near is not None:
        raise SateError(f"--data {data_dir}: {near}")
    check_own_files(data_dir, [layout.CMVN, SPEED_SPLIT + ".jsonl"])
    check_not_shared(data_dir, layout.FBANK_DIR)
    fbank = data_dir / layout.FBANK_DIR
    if fbank.is_dir() and append_only(fbank):  # a split's index is renamed into place there: computed, then refused,
        # naming a temporary index the folder kept for good (nineteenth hostile pass)
        raise SateError(f"--data {data_dir}: {fbank} is append-only (chattr +a), where `sate features` renames its "
                        "feature indexes into place; lift that (chattr -a), or use another data directory")
    for folder in sorted(fbank.iterdir()) if fbank.is_dir() else ():
        if folder.is_symlink() and folder.is_dir():  # a split folder linked into another data directory's fbank/
            check_not_shared(data_dir, f"{layout.FBANK_DIR}/{folder.name}")
    for folder in [fbank, *sorted(p for p in fbank.iterdir() if p.is_dir())] if fbank.is_dir() else ():
        if not os.access(folder, os.W_OK | os.X_OK):  # a read-only fbank/ (or split folder): the splits before it
            # were computed, then its index (or shards) could not be written (twentieth hostile pass)
            raise SateError(f"--data {data_dir}: {folder} is not writable (no permission, or read-only), where `sate "
                            "features` writes its features and their indexes; lift that, or use another data "
                            "directory")
    with exclusive(data_dir / layout.FEATURES_LOCK, "`sate features`"):
        check_stored_files(fbank)  # held: another run empties and refills split folders while it looks
        return _run(args, data_dir)


def _run(args: argparse.Namespace, data_dir: Path) -> int:
    from tqdm import tqdm  # slow: tqdm, only while progress shows

    if args.splits:  # `--splits ../other/dev` read another directory's manifest and wrote its features in here
        check_split_names(args.splits)
    splits = args.splits or [s for s in manifest_splits(data_dir) if s != SPEED_SPLIT]
    if not splits:
        raise SateError(f"{data_dir}: no manifests (run `sate prep` first)")
    speed_manifest = data_dir / f"{SPEED_SPLIT}.jsonl"
    if SPEED_SPLIT in splits and not args.speed_perturb and not speed_manifest.is_file():  # not prep's: it refuses it
        raise SateError(f"--splits {SPEED_SPLIT}: {speed_manifest} is not there; --speed-perturb writes it from "
                        f"{TRAIN_SPLIT}.jsonl")
    if SPEED_SPLIT in splits and TRAIN_SPLIT not in splits:
        # its index joins train's, and its manifest follows train's: train alone was "No such file" for fbank/train.scp
        # after train_sp's shards were computed
        splits = [TRAIN_SPLIT, *splits]
    if args.speed_perturb and TRAIN_SPLIT not in splits:
        if os.path.lexists(data_dir / f"{TRAIN_SPLIT}.jsonl"):
            raise SateError(f"--speed-perturb needs the {TRAIN_SPLIT} split in --splits")
        # "in --splits" to a user who gave none, or whose directory has no train (an ASR one of train-clean-100):
        # followed, it was "train.jsonl: manifest is missing" (30th hostile pass)
        held = [s for s in manifest_splits(data_dir) if s != SPEED_SPLIT]
        raise SateError(f"--speed-perturb: {data_dir} holds no {TRAIN_SPLIT}.jsonl (its splits: "
                        f"{', '.join(held) or 'none'}), "
                        f"and speed copies are made of the split named {TRAIN_SPLIT} alone (the translated corpus's "
                        f"training split, `sate prep`'s default); leave --speed-perturb out for these splits")
    follows = not args.speed_perturb and TRAIN_SPLIT in splits and speed_manifest.is_file()  # an earlier one's copy
    if args.speed_perturb or (follows and speed_split_problem(data_dir) is not None):
        check_speed_manifest_ours(data_dir)
        train = data_dir / f"{TRAIN_SPLIT}.jsonl"
        write_manifest(speed_manifest, speed_rows(read_manifest(train), train))
        if follows:
            print(f"{one_line(str(speed_manifest))}: written again: {TRAIN_SPLIT}.jsonl changed since `sate features "
                  "--speed-perturb` wrote it")
    if args.speed_perturb or follows:
        splits = [s for s in splits if s != SPEED_SPLIT] + [SPEED_SPLIT]
    manifests = {split: read_manifest(data_dir / f"{split}.jsonl") for split in splits}
    if TRAIN_SPLIT in manifests and not manifests[TRAIN_SPLIT]:  # `sate prep` writes none: emptied since
        # it was "train: 0 utterances, up to date", exit 0, cmvn.json left from rows no longer there
        raise SateError(f"{data_dir / f'{TRAIN_SPLIT}.jsonl'}: holds no rows, and the CMVN statistics come from "
                        f"{TRAIN_SPLIT}; prepare it again (`sate prep`)")
    for split, rows in manifests.items():  # every split, before any split's features are deleted
        check_audio_kept(data_dir, split, rows)
        check_store_not_shared(data_dir, split, rows)
    plans = {split: plan_split(data_dir, split, rows) for split, rows in manifests.items()}

    todo = [shard for plan in plans.values() for shard in plan.todo]
    check_audio_there(todo)
    for plan in plans.values():
        done = len(plan.shards) - len(plan.todo)
        state = "up to date" if not plan.todo else f"{len(plan.todo)} of {len(plan.shards)} shards to compute"
        own, rows = sum(len(s.rows) for s in plan.shards), len(manifests[plan.split])
        # train_sp's shards hold its speed copies alone: "train_sp: 16 utterances" was said of a split of 24 rows,
        # train's 8 among them (28th hostile pass)
        count = f"{own} utterances" if own == rows else \
            f"{rows} utterances ({rows - own} with {TRAIN_SPLIT}'s features, {own} speed copies)"
        print(f"{plan.split}: {count}, {state}"
              + (f" ({done} done before)" if plan.todo and done else ""))
    with tqdm(total=sum(len(s.rows) for s in todo), unit="utt", desc="fbank", disable=not todo,
              file=sys.stderr) as bar:
        if args.jobs == 1 or len(todo) <= 1:
            _init_worker()
            for shard in todo:
                bar.update(compute_shard(shard))
        else:
            import multiprocessing as mp

            # spawn: forking a process that already ran torch's OpenMP pool can hang the children.
            try:
                with _workers_started(mp.get_context("spawn"), min(args.jobs, len(todo))) as pool:
                    for count in pool_results(pool, compute_shard, todo, "a feature worker", "run `sate features` "
                                              "again, which goes on from the finished shards (fewer --jobs use "
                                              "less memory)"):
                        bar.update(count)
                    pool.close()  # ended by their queue, not by the with's terminate(), which SIGTERMs them while it
                    pool.join()  # holds their queue's lock: sate synth's voicing hung so (fifteenth hostile pass)
            except BaseException:  # leaving the pool stopped its workers, maybe in the middle of a shard
                for shard in todo:
                    shard.remove_temp_files()
                raise
    for plan in plans.values():
        finish_split(plan)
    cmvn_path = data_dir / layout.CMVN
    if TRAIN_SPLIT in plans and (plans[TRAIN_SPLIT].todo or not cmvn_path.is_file()):
        write_cmvn(plans[TRAIN_SPLIT], cmvn_path)
        print(f"wrote {one_line(str(cmvn_path))}")
    elif TRAIN_SPLIT in plans and plans[TRAIN_SPLIT].shards and _unreadable_cmvn(cmvn_path):
        # its readers refused it and said to run `sate features`, which called everything up to date. Statistics that
        # read are let be, as before: a cmvn.json linked to statistics shared between data directories stays theirs
        write_cmvn(plans[TRAIN_SPLIT], cmvn_path)
        print(f"{one_line(str(cmvn_path))}: written again: it was no CMVN file its readers take (edited or damaged?)")
    elif TRAIN_SPLIT in plans and (counts := foreign_cmvn(cmvn_path, plans[TRAIN_SPLIT])) is not None:
        print(f"note: {one_line(str(cmvn_path))} counts {counts[0]:,} frames, and this {TRAIN_SPLIT} split's features "
              f"{counts[1]:,}: it was not computed from them (copied "
              "from another data directory?); kept: delete it and run `sate features` again for this split's",
              file=sys.stderr)
    elif not cmvn_path.is_file():
        # "was not processed" of a directory that holds no train at all (an ASR one of train-clean-100) sent the user
        # to process it (30th hostile pass)
        why = (f"the {TRAIN_SPLIT} split was not processed" if (data_dir / f"{TRAIN_SPLIT}.jsonl").is_file() else
               f"{one_line(str(data_dir))} holds no {TRAIN_SPLIT} split, the one its statistics come from")
        print(f"note: {one_line(str(cmvn_path))} not written: {why}")
    return 0
