"""Datasets for speech (fbank + source ids + target ids) and text (source ids + target ids), and collate.

Speech items are read from the feature store written by ``sate features``; text items here come
from a manifest (its ``src_norm``/``tgt``; MT text files of any size: `sate.data.text_shards`). Both encode text once,
up front, with the ``Vocabulary`` token ids (``<blank>`` 0 ... ``<sos/eos>`` last). The collate
function pads ids with -1 and adds no ``<sos/eos>``: the models add what they need.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NotRequired, TypedDict

import numpy as np
import torch
from torch.utils.data import ConcatDataset, Dataset

from sate import layout
from sate.data.feature_index import FeatureIndex
from sate.data.features import SPEED_SPLIT, check_speed_split, load_cmvn, stale_features
from sate.data.manifest import read_manifest, require_translations
from sate.data.tokens import IGNORE_ID
from sate.data.vocab import Vocabulary, target_ids
from sate.data.waveform import FEATURE_KINDS, WaveformDataset
from sate.errors import SateError, one_line, shown
from sate.files import lock_holder, require_file


class CMVN:
    """Feature normalisation: global (mean/std of train, from ``cmvn.json``) or per utterance."""

    def __init__(self, mean: np.ndarray | None = None, std: np.ndarray | None = None) -> None:
        self.mean, self.std = mean, std  # None: per-utterance statistics

    @classmethod
    def from_option(cls, cmvn: str | Path | CMVN | None) -> CMVN | None:
        """``None`` or ``"none"`` (raw features), ``"utterance"``, a ``cmvn.json`` path, or a CMVN object."""
        if cmvn is None or str(cmvn) == "none":
            return None
        if isinstance(cmvn, CMVN):
            return cmvn
        if str(cmvn) == "utterance":
            return cls()
        return cls(*load_cmvn(cmvn))

    def __call__(self, feats: np.ndarray) -> np.ndarray:
        if self.mean is None:
            mean, std = feats.mean(0), feats.std(0)
        else:
            mean, std = self.mean, self.std
        return ((feats - mean) / np.maximum(std, 1e-5)).astype(np.float32)


def _features_advice(feats_scp: Path) -> str:
    """What to do about features missing from ``DATA/fbank/SPLIT.scp``: run `sate features`, or wait for the one
    that is computing them now (it said "run `sate features`" to a user whose `sate features` was running)."""
    holder = lock_holder(feats_scp.parent.parent / layout.FEATURES_LOCK)
    if holder is None:
        return "run `sate features`"
    return f"`sate features` (pid {one_line(holder)}) is computing this data directory's features now: wait for it"


class SpeechDataset(Dataset):
    """One manifest split with its fbank features: items ``{id, feats (T, 80), src, tgt}``.

    ``cmvn``: ``None``/``"none"``, ``"utterance"`` or a path to ``cmvn.json`` (global, from train).
    ``tgt_vocab`` None: no target ids (ASR), as `target_ids` says.
    ``lengths`` (frames per item) feeds ``BucketBatchSampler`` without reading any feature.
    """

    def __init__(self, manifest: str | Path, feats_scp: str | Path, src_vocab: Vocabulary,
                 tgt_vocab: Vocabulary | None, cmvn: str | Path | CMVN | None = None) -> None:
        self.rows, self.manifest = read_manifest(manifest), Path(manifest)
        feats_scp = Path(feats_scp)
        require_file(feats_scp, "a feature index",
                     lambda: f"{feats_scp}: feature index is missing ({_features_advice(feats_scp)})")
        self.feats = FeatureIndex(feats_scp)
        missing = [row["id"] for row in self.rows if row["id"] not in self.feats]
        if missing:
            raise SateError(f"{feats_scp}: no features for {len(missing)} of the {len(self.rows)} rows of {manifest}, "
                            f"e.g. {missing[0]} ({_features_advice(feats_scp)})")
        self.cmvn = CMVN.from_option(cmvn)
        self.src = src_vocab.encode_many([src_vocab.manifest_source(row) for row in self.rows])
        self.tgt = target_ids(manifest, self.rows, tgt_vocab)
        self.lengths = [int(row["n_frames"]) for row in self.rows]

    @classmethod
    def from_data_dir(cls, data_dir: str | Path, split: str, src_vocab: Vocabulary, tgt_vocab: Vocabulary | None,
                      cmvn: str | Path | CMVN | None = None) -> SpeechDataset:
        """``DATA/<split>.jsonl`` with ``DATA/fbank/<split>.scp``."""
        data_dir = Path(data_dir)
        scp = data_dir / layout.FBANK_DIR / f"{split}.scp"
        dataset = cls(data_dir / f"{split}.jsonl", scp, src_vocab, tgt_vocab, cmvn)
        stale = stale_features(data_dir, split, dataset.rows)
        if stale is not None:
            raise SateError(f"{stale}; run `sate features --data {data_dir}`, which recomputes them")
        return dataset

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> Item:
        row = self.rows[index]
        feats = self.feats[row["id"]]
        if feats.shape != (row["n_frames"], 80):
            raise SateError(f"{self.feats.scp}: the features of {row['id']} have shape {feats.shape}, {self.manifest} "
                            f"says ({row['n_frames']}, 80): re-run `sate features`")  # both named: it named no file
        # kaldiio hands out read-only arrays: normalising or copying gives the tensor its own memory
        feats = self.cmvn(feats) if self.cmvn is not None else np.array(feats, dtype=np.float32)
        return {"id": row["id"], "feats": torch.from_numpy(feats),
                "src": torch.from_numpy(self.src[index]), "tgt": torch.from_numpy(self.tgt[index])}


def speech_dataset(data_dir: str | Path, split: str, src_vocab: Vocabulary, tgt_vocab: Vocabulary | None,
                   features: str = "fbank", cmvn: str | Path | CMVN | None = None) -> Dataset:
    """A split's speech items in a feature mode: stored fbank (`SpeechDataset`) or waveforms read on the fly
    (`sate.data.waveform`, for hub acoustic encoders; `cmvn` does not apply). ``tgt_vocab`` None: ASR."""
    if features not in FEATURE_KINDS:  # 'Waveform' or 'mfcc' gave stored fbank without a word (25th hostile pass)
        raise SateError(f"features must be one of {', '.join(FEATURE_KINDS)}, got {shown(features)}")
    if split == SPEED_SPLIT:  # written once from train by `sate features --speed-perturb`, and train may change
        check_speed_split(Path(data_dir))
    if features == "waveform":
        return WaveformDataset.from_data_dir(data_dir, split, src_vocab, tgt_vocab)
    return SpeechDataset.from_data_dir(data_dir, split, src_vocab, tgt_vocab, cmvn)


class ConcatSplits(ConcatDataset):
    """Several splits read as one (a training config's ``data.train: [train, ls, kaldi]``), speech or text: items
    split after split, ``lengths`` joined in the same order for ``BucketBatchSampler``."""

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        super().__init__(datasets)
        self.lengths = [n for dataset in datasets for n in dataset.lengths]


class TextDataset(Dataset):
    """Parallel text for MT: items ``{id, src, tgt}`` (source ids from ``src_norm``, target ids).

    ``lengths`` is the longer side of each pair in tokens, for ``BucketBatchSampler(max_tokens=)``.
    """

    def __init__(self, pairs: Sequence[tuple[str, str, str]], src_vocab: Vocabulary, tgt_vocab: Vocabulary) -> None:
        """``pairs``: (id, source as the source vocabulary reads it, target) triples."""
        self.ids = [p[0] for p in pairs]
        self.src = src_vocab.encode_many([p[1] for p in pairs])
        self.tgt = tgt_vocab.encode_many([p[2] for p in pairs])
        self.lengths = [max(len(s), len(t)) for s, t in zip(self.src, self.tgt, strict=True)]

    @classmethod
    def from_manifest(cls, manifest: str | Path, src_vocab: Vocabulary, tgt_vocab: Vocabulary) -> TextDataset:
        """The transcript/translation pairs of a speech manifest (every row kept; a row without a translation
        is an error)."""
        rows = read_manifest(manifest)
        require_translations(manifest, rows)
        return cls([(r["id"], src_vocab.manifest_source(r), r["tgt"]) for r in rows], src_vocab, tgt_vocab)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> Item:
        return {"id": self.ids[index], "src": torch.from_numpy(self.src[index]),
                "tgt": torch.from_numpy(self.tgt[index])}


def _pad(seqs: list[torch.Tensor], value: float) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    shape = (len(seqs), int(lengths.max()) if len(seqs) else 0, *seqs[0].shape[1:])
    out = torch.full(shape, value, dtype=seqs[0].dtype)
    for k, s in enumerate(seqs):
        out[k, : len(s)] = s
    return out, lengths


class Item(TypedDict):
    """One utterance or sentence pair of a dataset, before padding."""

    id: str
    feats: NotRequired[torch.Tensor]  # speech: float32 (T, 80), or (T,) samples in waveform mode
    src: torch.Tensor  # long (S,)
    tgt: torch.Tensor  # long (L,)


class Batch(TypedDict, total=False):
    """A padded batch (`collate`); speech batches have ``feats``, every batch the rest."""

    ids: list[str]
    feats: torch.Tensor  # float32 (B, T, 80), or (B, T) samples in waveform mode, padded with 0
    feats_lengths: torch.Tensor  # long (B,)
    src: torch.Tensor  # long (B, S), padded with IGNORE_ID (-1)
    src_lengths: torch.Tensor  # long (B,)
    tgt: torch.Tensor  # long (B, L), padded with IGNORE_ID
    tgt_lengths: torch.Tensor  # long (B,)
    mt: Batch  # st training with model.loss.mt_text_weight: the text batch beside the speech (sate.data.text_mix)


def collate(items: list[Item]) -> Batch:
    """Pad a list of items into a `Batch`."""
    batch = Batch(ids=[item["id"] for item in items])
    if "feats" in items[0]:
        batch["feats"], batch["feats_lengths"] = _pad([item["feats"] for item in items], 0.0)
    batch["src"], batch["src_lengths"] = _pad([item["src"] for item in items], IGNORE_ID)
    batch["tgt"], batch["tgt_lengths"] = _pad([item["tgt"] for item in items], IGNORE_ID)
    return batch
