"""The waveform feature mode: segments read on the fly, lengths in samples, and the checks of its settings."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sate.data.audio import MIN_SAMPLES, read_segment
from sate.data.dataset import collate, speech_dataset
from sate.data.features import speed_rows
from sate.data.vocab import Vocabulary
from sate.data.waveform import WaveformDataset, segment_samples
from sate.errors import SateError
from sate.train.data import plan_batch
from sate.train.schema import BatchConfig, DataConfig, SpecAugConfig, TrainingConfig, check_feature_mode


def test_items_are_the_segments_samples(prepared_data: Path) -> None:
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    dataset = speech_dataset(prepared_data, "dev", src, tgt, features="waveform")
    assert isinstance(dataset, WaveformDataset)
    row = dataset.rows[1]
    item = dataset[1]
    want = read_segment(row["audio"], row["offset"], row["duration"])
    assert item["feats"].dim() == 1 and len(item["feats"]) == dataset.lengths[1] == max(len(want), MIN_SAMPLES)
    np.testing.assert_array_equal(item["feats"].numpy()[:len(want)], want)
    assert item["src"].tolist() == src.encode(row["src_norm"])
    batch = collate([dataset[i] for i in range(3)])
    assert batch["feats"].shape == (3, max(dataset.lengths[:3])) and batch["feats_lengths"].tolist() == \
        dataset.lengths[:3]


def test_speed_perturbed_rows_are_read_at_their_speed(prepared_data: Path) -> None:
    from sate.data.manifest import read_manifest

    row = speed_rows(read_manifest(prepared_data / "train.jsonl")[:1])[1]  # the 0.9 copy
    assert row["speed"] == 0.9
    wave = read_segment(row["audio"], row["offset"], row["duration"], speed=0.9)
    assert segment_samples(row) == len(wave) > round(row["duration"] * 16000)


def test_feature_mode_must_fit_the_acoustic_encoder() -> None:
    config = TrainingConfig(model={"acoustic": {"type": "hf_wav2vec2", "path": "w2v"}})
    with pytest.raises(SateError, match="data.features is fbank but model.acoustic.type hf_wav2vec2 reads waveform"):
        check_feature_mode(config)
    config = replace(config, data=DataConfig(features="waveform"))
    with pytest.raises(SateError, match="data.cmvn global normalises fbank"):
        check_feature_mode(config)
    config = replace(config, data=DataConfig(features="waveform", cmvn="none"))
    with pytest.raises(SateError, match="specaug.enabled false"):
        check_feature_mode(config)
    config = replace(config, specaug=SpecAugConfig(enabled=False))
    check_feature_mode(config)
    with pytest.raises(SateError, match="reads fbank"):
        check_feature_mode(replace(config, model={}))
    assert "samples per update" in plan_batch(BatchConfig(per_device=10, global_=20), 1, "st", "waveform").describe()


@pytest.mark.parametrize("features", ["Waveform", "mfcc", None])
def test_speech_dataset_refuses_a_feature_mode_it_does_not_know(prepared_data: Path, features: object) -> None:
    """docs/data.md's `speech_dataset(..., features="waveform")`, misspelt, gave stored fbank without a word."""
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    with pytest.raises(SateError, match=r"^features must be one of fbank, waveform, got "):
        speech_dataset(prepared_data, "dev", src, tgt, features=features)  # type: ignore[arg-type]
    assert len(speech_dataset(prepared_data, "dev", src, tgt, features="fbank")) > 0
