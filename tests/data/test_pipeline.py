"""The whole data chain on a real `sate synth` corpus: prep, features, vocab, batches."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader

from sate.data.dataset import SpeechDataset, TextDataset, collate
from sate.data.manifest import read_manifest
from sate.data.sampler import BucketBatchSampler
from sate.data.specaug import SpecAugment
from sate.data.text_shards import ShardedText, TextCleaning, prepare_store
from sate.data.vocab import Vocabulary


@pytest.mark.slow
def test_synth_corpus_to_batches(run_sate, synth_corpus: Path, fixture_sizes: dict[str, int], tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_sate("prep", "--mustc-root", synth_corpus, "--out", data)[0] == 0
    for split, size in fixture_sizes.items():
        rows = read_manifest(data / f"{split}.jsonl")
        assert len(rows) == size  # clean synthetic text: nothing is dropped
        assert all(r["src_norm"] and r["src_norm"] == r["src_norm"].lower() for r in rows)
    assert run_sate("features", "--data", data, "--jobs", "1")[0] == 0  # --jobs 2: test_features.py
    mt = synth_corpus / "en-de" / "mt"
    rc, _, err = run_sate("vocab", "--data", data, "--src-size", "60", "--tgt-size", "60",
                          "--mt-text", mt / "train.en", mt / "train.de")
    assert rc == 0, err
    src, tgt = Vocabulary.load(data, "src"), Vocabulary.load(data, "tgt")
    assert len(src) == len(tgt) == 62

    train = SpeechDataset.from_data_dir(data, "train", src, tgt, cmvn=data / "cmvn.json")
    sampler = BucketBatchSampler(train.lengths, max_frames=3000, seed=0)
    augment = SpecAugment()
    n_items = 0
    for batch in DataLoader(train, batch_sampler=sampler, collate_fn=collate):
        feats, lengths = augment(batch["feats"], batch["feats_lengths"])
        assert feats.shape == (len(batch["ids"]), int(lengths.max()), 80) and torch.isfinite(feats).all()
        assert (batch["src_lengths"] > 0).all() and (batch["tgt_lengths"] > 0).all()
        n_items += len(batch["ids"])
    assert n_items == fixture_sizes["train"]
    test = SpeechDataset.from_data_dir(data, "tst-COMMON", src, tgt, cmvn=data / "cmvn.json")
    assert len(test) == fixture_sizes["tst-COMMON"]
    assert abs(float(torch.cat([test[i]["feats"] for i in range(len(test))]).mean())) < 1.0  # train CMVN fits

    text = TextDataset.from_manifest(data / "train.jsonl", src, tgt)
    assert len(text) == fixture_sizes["train"]
    mt_text = ShardedText(prepare_store(data, [(mt / "train.en", mt / "train.de")], src, tgt, ["v"], TextCleaning()))
    assert len(mt_text) == len((mt / "train.en").read_text(encoding="utf-8").splitlines())
    for dataset in (text, mt_text):
        lengths = dataset if isinstance(dataset, ShardedText) else dataset.lengths
        batch = collate([dataset[i] for i in BucketBatchSampler(lengths, max_tokens=500).global_batches()[0]])
        assert batch["src"].shape[0] == len(batch["ids"]) and (batch["src"] != src.unk_id).any()
