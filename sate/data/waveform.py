"""The waveform feature mode: raw 16 kHz samples read from the talk wavs on the fly, for hub acoustic encoders.

wav2vec2, HuBERT and WavLM (``acoustic.type hf_*``) read waveforms, not fbank; with ``data.features:
waveform`` a speech item's ``feats`` is its samples (T,) and every length is in samples, the sampler's and
``batch.per_device``'s included. Nothing is precomputed: each segment is sliced from its talk's wav when the
loader asks for it (speed-perturbed rows of ``train_sp`` at their speed), through the same `read_segment` as
`sate features`. A segment shorter than 0.1 s is zero-padded to 0.1 s, as fbank pads it. The model directory's
normalisation (``do_normalize``) happens inside the model (`sate.models.hub.speech`), so training and decoding
share it without a setting here; global CMVN and SpecAugment are fbank's and do not apply.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from sate.data.audio import MIN_SAMPLES, SAMPLE_RATE, perturbed_samples, read_segment, wav_info
from sate.data.manifest import read_manifest
from sate.data.vocab import target_ids
from sate.errors import SateError

FEATURE_KINDS = ("fbank", "waveform")


def waveform_input(wave: np.ndarray) -> np.ndarray:
    """Float32 samples as a hub encoder reads them: at least ``MIN_SAMPLES`` long (zeros after)."""
    wave = np.asarray(wave, dtype=np.float32)
    if len(wave) < MIN_SAMPLES:
        wave = np.concatenate([wave, np.zeros(MIN_SAMPLES - len(wave), dtype=np.float32)])
    return wave


def segment_samples(row: dict) -> int:
    """The samples a manifest row gives in waveform mode (after speed perturbation and padding)."""
    n = round(float(row["duration"]) * SAMPLE_RATE)
    speed = float(row.get("speed", 1.0))
    return max(perturbed_samples(n, speed) if speed != 1.0 else n, MIN_SAMPLES)


class WaveformDataset(Dataset):
    """One manifest split as waveforms: items ``{id, feats (T,) float32, src, tgt}``; ``lengths`` in samples.

    ``tgt_vocab`` None: no target ids (ASR), as `sate.data.vocab.target_ids` says."""

    def __init__(self, manifest: str | Path, src_vocab: object, tgt_vocab: object | None) -> None:
        self.rows = read_manifest(manifest)
        self.src = src_vocab.encode_many([src_vocab.manifest_source(row) for row in self.rows])
        self.tgt = target_ids(manifest, self.rows, tgt_vocab)
        self.lengths = [segment_samples(row) for row in self.rows]
        self._rates: dict[str, int] = {}

    @classmethod
    def from_data_dir(cls, data_dir: str | Path, split: str, src_vocab: object,
                      tgt_vocab: object | None) -> WaveformDataset:
        return cls(Path(data_dir) / f"{split}.jsonl", src_vocab, tgt_vocab)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict:
        row = self.rows[index]
        audio = row["audio"]
        try:
            if audio not in self._rates:
                self._rates[audio] = wav_info(audio).sample_rate
            wave = read_segment(audio, float(row["offset"]), float(row["duration"]),
                                speed=float(row.get("speed", 1.0)), sample_rate=self._rates[audio])
        except SateError as err:
            raise SateError(f"{row['id']}: {err}") from None
        wave = waveform_input(wave)
        if len(wave) != self.lengths[index]:
            raise SateError(f"{row['id']}: the manifest's duration gives {self.lengths[index]} samples but the audio "
                            f"{len(wave)}; re-run `sate prep`")
        return {"id": row["id"], "feats": torch.from_numpy(wave),
                "src": torch.from_numpy(self.src[index]), "tgt": torch.from_numpy(self.tgt[index])}
