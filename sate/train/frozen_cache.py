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
digest: a split whose manifest changed is computed again. Lengths stay in samples (the frames times 320), so
``batch.*`` means what it means without the cache.
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

from sate.data.dataset import collate
from sate.data.waveform import WaveformDataset
from sate.data.whisper_mel import HOP_LENGTH
from sate.errors import SateError
from sate.files import atomic_open, atomic_write_text
from sate.models.hub.whisper import WhisperAcousticEncoder

CACHE_DIR = "frozen"
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
        raise SateError("data.frozen_cache: the ASR teacher's acoustic encoder must be the same frozen Whisper as the "
                        "student's (the same weights and acoustic.freeze), since it reads the same cached states")


def _manifest_digest(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


@torch.inference_mode()
def compute_split(acoustic: WhisperAcousticEncoder, dataset: WaveformDataset, manifest: Path, out: Path,
                  split: str, log: bool = True) -> None:
    """The frozen part's output for every utterance of `dataset`, written to ``out/SPLIT.*`` (see the module)."""
    started = time.perf_counter()
    encoder = acoustic.encoder.model
    was_training = encoder.training
    encoder.eval()
    order = sorted(range(len(dataset)), key=lambda i: dataset.lengths[i])
    states: list[np.ndarray | None] = [None] * len(dataset)
    progress = tqdm(total=len(order), unit="utt", desc=f"frozen Whisper states ({split})", disable=not log)
    try:
        batch: list[int] = []
        for k, index in enumerate(order):
            batch.append(index)
            if k + 1 == len(order) or (len(batch) + 1) * dataset.lengths[order[k + 1]] > BATCH_SAMPLES:
                padded = collate([dataset[i] for i in batch])
                part, part_lengths = encoder.frozen_part(*acoustic.log_mel(padded["feats"], padded["feats_lengths"]))
                for row, i in enumerate(batch):
                    states[i] = part[row, :int(part_lengths[row])].to(torch.float16).numpy()
                progress.update(len(batch))
                batch = []
    finally:
        progress.close()
        encoder.train(was_training)
    counts = np.array([len(s) for s in states if s is not None], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    out.mkdir(parents=True, exist_ok=True)
    with atomic_open(out / f"{split}.npy", "wb") as f:
        np.save(f, np.concatenate([s for s in states if s is not None]) if len(counts) else
                np.zeros((0, acoustic.sizes.d_model), np.float16))
    with atomic_open(out / f"{split}.index.npy", "wb") as f:
        np.save(f, offsets)
    atomic_write_text(out / f"{split}.json", json.dumps({"manifest": _manifest_digest(manifest),
                                                          "utterances": len(counts)}) + "\n")
    if log:
        size = (out / f"{split}.npy").stat().st_size / 1e6
        print(f"frozen Whisper states: {split}, {len(counts):,} utterances -> {out / split}.npy ({size:.0f} MB) in "
              f"{time.perf_counter() - started:.0f} s")


def is_current(out: Path, split: str, manifest: Path) -> bool:
    """Whether ``out`` holds `split`'s states for the manifest as it is now."""
    meta = out / f"{split}.json"
    if not meta.is_file():
        return False
    try:
        return json.loads(meta.read_text())["manifest"] == _manifest_digest(manifest)
    except (ValueError, KeyError):
        return False


class FrozenStates(Dataset):
    """A split's items with ``feats`` the cached states (T', D) float32 instead of samples; ``lengths`` in samples."""

    def __init__(self, base: WaveformDataset, out: Path, split: str) -> None:
        self.base = base
        self.states = np.load(out / f"{split}.npy", mmap_mode="r")
        self.offsets = np.load(out / f"{split}.index.npy")
        if len(self.offsets) != len(base) + 1:
            raise SateError(f"{out / split}.npy holds {len(self.offsets) - 1} utterances, the split {len(base)}: "
                            f"delete {out} and train again")
        self.lengths = [int(n) * SAMPLES_PER_STATE for n in np.diff(self.offsets)]

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, index: int) -> dict:
        a, b = int(self.offsets[index]), int(self.offsets[index + 1])
        return {"id": self.base.rows[index]["id"],
                "feats": torch.from_numpy(np.asarray(self.states[a:b], dtype=np.float32)),
                "src": torch.from_numpy(self.base.src[index]), "tgt": torch.from_numpy(self.base.tgt[index])}
