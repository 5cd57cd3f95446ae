"""Whisper's frozen layers computed once per utterance (``data.frozen_cache``): training reads their output.

With ``acoustic.freeze: all`` (or N), the front-end, the convolutions and the lowest N layers never change while a
model trains, yet every epoch would run them again on every utterance: on a CPU that is most of the training time
(tiny.en: 16 utterances of 2.5 s in about a second). So the data module computes their output once per split
(`WhisperEncoder.frozen_part`, each utterance alone at its natural length, as decoding sees it) into
``DATA/frozen/KEY/``, and the model continues from it (`WhisperEncoder.after_frozen`). Decoding never uses the
cache: a pack runs the whole encoder on audio.

KEY is a digest of the frozen weights and the freeze setting, so an ASR stage and the SATE stage after it (whose
frozen part is the same Whisper) share one cache, and a change of weights or of ``freeze`` makes a new one. Per
split: ``SPLIT.npy`` (every utterance's states one after another, float16: half the disk, and training noise is far
above the rounding), ``SPLIT.index.npy`` (offsets) and ``SPLIT.json``, written last, which names the manifest's
digest, its audio files' sizes and times, and KEY: a split whose manifest or audio changed is computed again, and
so is a cache found under another KEY than its own (another model's folder copied or renamed into this one's place:
every size and checksum holds). Lengths stay in samples (the frames times 320), so ``batch.*`` means what it means
without the cache.

The cache is checked as features are (`sate.data.feature_index`): ``SPLIT.json`` also records the byte size of
both arrays, the CRC-32 of the index and one CRC-32 per utterance's states. A cache cut short, replaced (another
split's or another cache's file), of another format or written before the record is computed again before
training; a byte changed in place keeps every size, so each utterance's states are checked against their CRC when
read, and a mismatch is one line naming the file and the utterance.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset
from tqdm import tqdm

from sate import layout
from sate.data.dataset import collate
from sate.data.feature_index import checksum
from sate.data.features import audio_stamp
from sate.data.manifest import read_manifest
from sate.data.waveform import WaveformDataset
from sate.data.whisper_mel import HOP_LENGTH, num_frames
from sate.errors import SateError, one_line, shown
from sate.files import atomic_open, atomic_write_text, link_or_what_is_there, read_record
from sate.models.hub.whisper import WhisperAcousticEncoder, output_lengths

CACHE_DIR = layout.FROZEN_DIR
SAMPLES_PER_STATE = 2 * HOP_LENGTH  # the encoder's stride-2 convolution: 50 states a second
BATCH_SAMPLES = 16 * 16000 * 3  # about 16 utterances of 3 s per forward pass
FORMAT = 1


def cache_key(acoustic: WhisperAcousticEncoder) -> str:
    """A digest of what the frozen part computes: its weights, the freeze setting and the front-end's size."""
    encoder = acoustic.encoder.model
    depth = encoder.frozen_layers()
    if depth is None:
        raise SateError("data.frozen_cache needs acoustic.freeze all or N: with none, nothing is frozen to cache")
    digest = hashlib.sha1(json.dumps([FORMAT, str(encoder.frozen), acoustic.sizes.__dict__]).encode())
    frozen = {name: t for name, t in encoder.state_dict().items()
              if not name.startswith("layers.") or int(name.split(".")[1]) < depth}
    if encoder.frozen != "all":
        frozen = {k: v for k, v in frozen.items() if not k.startswith("layer_norm.")}
    for name in sorted(frozen):
        digest.update(name.encode())
        # + 0 turns -0.0 into 0.0: equal weights must give one key (averaging one checkpoint makes -0.0 positive)
        digest.update((frozen[name].detach().cpu().contiguous() + 0).numpy().tobytes())
    return digest.hexdigest()[:16]


def check_teacher_cache(model: torch.nn.Module) -> None:
    """An ASR teacher reads the student's batches, so with the cache it must continue from the same frozen part."""
    teachers = getattr(model, "teachers", {})
    if "asr" not in teachers:
        return
    teacher = teachers["asr"].model.acoustic
    ours = cache_key(model.acoustic)
    if not isinstance(teacher, WhisperAcousticEncoder) or teacher.encoder.model.frozen_layers() is None or \
            cache_key(teacher) != ours:
        # which differs and what to do: "the same weights and acoustic.freeze" named neither value (26th hostile pass)
        theirs = str(teacher.encoder.model.frozen) if isinstance(teacher, WhisperAcousticEncoder) else "no Whisper"
        mine = str(model.acoustic.encoder.model.frozen)
        why = (f"it freezes {theirs}, this model {mine}" if theirs != mine else
               f"both freeze {mine}, but their frozen weights differ (another Whisper or other trained weights)")
        fix = (f"set model.acoustic.freeze {theirs} as the teacher's, or "
               if theirs not in (mine, "no Whisper", "none") else "")
        raise SateError("data.frozen_cache: the ASR teacher's acoustic encoder must be the same frozen Whisper as the "
                        "student's (the same weights and acoustic.freeze), since it reads the same cached states: "
                        f"{why}; {fix}set data.frozen_cache false")


def _manifest_digest(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


@torch.inference_mode()
def compute_split(acoustic: WhisperAcousticEncoder, dataset: WaveformDataset, manifest: Path, out: Path,
                  split: str, log: bool = True) -> None:
    """The frozen part's output for every utterance of `dataset`, written to ``out/SPLIT.*`` (see the module).

    Each batch's states go to their place in ``SPLIT.npy`` as they are computed (every utterance's length is known
    from its samples beforehand), so memory holds one batch: every utterance's states were kept until the end
    and then joined into a second copy, twice the cache (38 KB a second of audio for tiny.en: a 400-hour corpus
    asked for 110 GB)."""
    _check_own_names(out, split)
    started = time.perf_counter()
    encoder = acoustic.encoder.model
    was_training = encoder.training
    encoder.eval()
    counts = output_lengths(num_frames(torch.tensor(dataset.lengths, dtype=torch.int64))).numpy().astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    width, dtype = acoustic.sizes.d_model, np.dtype(np.float16)
    order = sorted(range(len(dataset)), key=lambda i: dataset.lengths[i])
    crc: list[int | None] = [None] * len(dataset)
    out.mkdir(parents=True, exist_ok=True)
    progress = tqdm(total=len(order), unit="utt", desc=f"frozen Whisper states ({split})", disable=not log)
    try:
        with atomic_open(out / f"{split}.npy", "wb") as f:
            np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                     "fortran_order": False, "shape": (int(offsets[-1]), width)})
            start = f.tell()
            f.truncate(start + int(offsets[-1]) * width * dtype.itemsize)  # the whole file, filled batch by batch
            batch: list[int] = []
            for k, index in enumerate(order):
                batch.append(index)
                if k + 1 == len(order) or (len(batch) + 1) * dataset.lengths[order[k + 1]] > BATCH_SAMPLES:
                    padded = collate([dataset[i] for i in batch])
                    part, part_lengths = encoder.frozen_part(*acoustic.log_mel(padded["feats"],
                                                                               padded["feats_lengths"]))
                    for row, i in enumerate(batch):
                        if int(part_lengths[row]) != counts[i]:  # the lengths the file was laid out with
                            raise RuntimeError(f"frozen part of {int(part_lengths[row])} states for "
                                               f"{dataset.lengths[i]} samples, {counts[i]} expected")
                        states = part[row, :counts[i]].to(torch.float16).numpy()
                        crc[i] = checksum(states)
                        f.seek(start + int(offsets[i]) * width * dtype.itemsize)
                        f.write(np.ascontiguousarray(states).tobytes())
                    progress.update(len(batch))
                    batch = []
    finally:
        progress.close()
        encoder.train(was_training)
    with atomic_open(out / f"{split}.index.npy", "wb") as f:
        np.save(f, offsets)
    record = {"manifest": _manifest_digest(manifest), "audio": audio_stamp(row["audio"] for row in dataset.rows),
              "key": out.name, "utterances": len(counts),
              "bytes": {name: (out / name).stat().st_size for name in _files(split)},
              "index_crc": checksum(offsets), "crc": crc}
    atomic_write_text(out / f"{split}.json", json.dumps(record) + "\n")
    if log:
        size = (out / f"{split}.npy").stat().st_size / 1e6
        print(f"frozen Whisper states: {split}, {len(counts):,} utterances -> {one_line(str(out / split))}.npy "
              f"({size:.0f} MB) in {time.perf_counter() - started:.0f} s")


def _files(split: str) -> tuple[str, str]:
    return f"{split}.npy", f"{split}.index.npy"


def _check_own_names(out: Path, split: str) -> None:
    """Refuse a symlink, or anything but a regular file, at a name the split's states are written under: they are
    sate's own, written anew, and a symlink there was written through, a user's file it led to replaced with the
    states (eighteenth hostile pass), as `sate features` refuses one among its shards."""
    for name in (*_files(split), f"{split}.json"):
        path = out / name
        what = link_or_what_is_there(path)
        if what is not None:
            raise SateError(f"{one_line(str(path))}: {one_line(what)}, where sate keeps the frozen Whisper states it "
                            "computes (written anew); remove it")


def _record(out: Path, split: str) -> dict | None:
    """``SPLIT.json`` as written by `compute_split`, or None (missing, unreadable, or of an earlier format)."""
    record = read_record(out / f"{split}.json", "`sate train`")
    if not (isinstance(record, dict) and isinstance(record.get("crc"), list) and isinstance(record.get("bytes"), dict)
            and isinstance(record.get("manifest"), str) and isinstance(record.get("key"), str)
            and record.get("utterances") == len(record["crc"])):
        return None
    return record


def _foreign(out: Path, split: str, record: dict) -> str | None:
    """Why the cache in ``out`` is another frozen part's (its record names another KEY than the folder), or None."""
    if record["key"] == out.name:
        return None
    return (f"{out / split}.npy holds the frozen states of the cache {shown(record['key'])}, not of {out.name} "
            "(another model's, copied or renamed into its place)")


def _open(out: Path, split: str, record: dict) -> tuple[np.ndarray, np.ndarray]:
    """The states (mapped, not read) and offsets of a split's cache, checked against its record: the sizes, the
    arrays' headers and the index's CRC; the first problem is one `SateError` naming the file."""
    for name in _files(split):
        try:
            size = (out / name).stat().st_size
        except OSError:
            raise SateError(f"{out / name} is missing") from None
        if size != record["bytes"].get(name):
            raise SateError(f"{out / name} has {size} bytes, {record['bytes'].get(name)} when it was written: cut "
                            "short or replaced")
    states_file, index_file = (out / name for name in _files(split))
    try:
        states = np.load(states_file, mmap_mode="r")
        offsets = np.load(index_file)
    except (OSError, ValueError) as err:
        raise SateError(f"{out / split}.npy or its index cannot be read ({shown(str(err))})") from None
    if states.ndim != 2 or states.dtype != np.float16:
        raise SateError(f"{states_file} holds {states.dtype} {states.shape}, not float16 (T, D) states: replaced")
    if offsets.dtype != np.int64 or offsets.shape != (record["utterances"] + 1,) or checksum(offsets) != \
            record["index_crc"] or int(offsets[-1]) != len(states):
        raise SateError(f"{index_file} does not match its record or {states_file.name}: replaced or damaged")
    return states, offsets


def problem(out: Path, split: str, manifest: Path) -> str | None:
    """Why ``out`` does not hold `split`'s states for the manifest as it is now (not computed, the manifest
    changed, or the cache is damaged: `_open`), or None."""
    record = _record(out, split)
    if record is None:
        return f"{out / split}.json is missing or of an earlier format"
    if record["manifest"] != _manifest_digest(manifest):
        return f"{manifest} has changed since {out / split}.npy was computed"
    stamp = record.get("audio")  # a record written before audio was stamped has none: let be, as features do
    if isinstance(stamp, str) and (now := audio_stamp(row["audio"] for row in read_manifest(manifest))) is not None \
            and now != stamp:
        return (f"an audio file of {manifest} changed since {out / split}.npy was computed (copied again, "
                "re-encoded?)")
    if (foreign := _foreign(out, split, record)) is not None:
        return foreign
    try:
        _open(out, split, record)
    except SateError as err:
        return str(err)
    return None


class FrozenStates(Dataset):
    """A split's items with ``feats`` the cached states (T', D) float32 instead of samples; ``lengths`` in samples.
    Each item's states are checked against their CRC-32 as they are read."""

    def __init__(self, base: WaveformDataset, out: Path, split: str) -> None:
        self.base, self.file = base, out / f"{split}.npy"
        record = _record(out, split)
        if record is None:
            raise SateError(f"{out / split}.json is missing or of an earlier format: delete {out} and train again")
        if (foreign := _foreign(out, split, record)) is not None:
            raise SateError(f"{foreign}; delete {out} and train again")
        try:
            self.states, self.offsets = _open(out, split, record)
        except SateError as err:
            raise SateError(f"{err}; delete {out} and train again") from None
        self.checksums = record["crc"]
        if len(self.offsets) != len(base) + 1:
            raise SateError(f"{out / split}.npy holds {len(self.offsets) - 1} utterances, the split {len(base)}: "
                            f"delete {out} and train again")
        self.lengths = [int(n) * SAMPLES_PER_STATE for n in np.diff(self.offsets)]

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, index: int) -> dict:
        a, b = int(self.offsets[index]), int(self.offsets[index + 1])
        states = np.asarray(self.states[a:b])
        utt_id = self.base.rows[index]["id"]
        if checksum(states) != self.checksums[index]:
            raise SateError(f"{self.file}: the states of {utt_id} (rows {a}-{b}) do not match their checksum (the file "
                            f"is damaged); delete {self.file.parent} and train again")
        return {"id": utt_id, "feats": torch.from_numpy(states.astype(np.float32)),
                "src": torch.from_numpy(self.base.src[index]), "tgt": torch.from_numpy(self.base.tgt[index])}
