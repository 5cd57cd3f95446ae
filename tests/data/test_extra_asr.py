"""Extra ASR corpora in one data directory: the MuST-C fixture corpus, a LibriSpeech subset and a Kaldi directory
through prep, features, vocab and ASR training together (`data.train` as a list); MT and ST refuse them."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
import yaml

from sate.cli import main
from sate.data.dataset import ConcatSplits, SpeechDataset, collate, speech_dataset
from sate.data.feature_index import FeatureIndex
from sate.data.manifest import read_manifest
from sate.data.vocab import Vocabulary
from sate.errors import SateError
from sate.models.tiny import tiny_config
from sate.train.schema import TrainingConfig
from sate.train.trainer import load_training_config, train

if TYPE_CHECKING:
    from sate.train.datamodule import SateDataModule

EXTRA = ("train-clean-5", "kaldi")  # the LibriSpeech subset (its own name) and the Kaldi directory (named)


@pytest.fixture(scope="module")
def mixed_data(tmp_path_factory, synth_corpus: Path, librispeech_subset, kaldi_corpus) -> Path:
    """One data directory: the MuST-C fixture corpus (train, dev, tst-COMMON), train-clean-5 and kaldi, with
    features and vocabularies whose source side saw the extra transcripts (read-only)."""
    data = tmp_path_factory.mktemp("mixed")
    for argv in (["prep", "--mustc-root", synth_corpus, "--out", data],
                 ["prep", "--librispeech", librispeech_subset[0], "--out", data],
                 ["prep", "--kaldi-dir", kaldi_corpus[0], "--out", data, "--splits", "kaldi"],
                 ["features", "--data", data, "--jobs", "1"],
                 ["vocab", "--data", data, "--src-size", "48", "--tgt-size", "64", "--src-splits", *EXTRA]):
        assert main([str(a) for a in argv]) == 0, argv
    return data


@pytest.mark.slow
def test_features_of_every_split_and_cmvn_from_mustc_train_only(mixed_data: Path) -> None:
    for split in ("train", "dev", "tst-COMMON", *EXTRA):
        rows = read_manifest(mixed_data / f"{split}.jsonl")
        feats = FeatureIndex(mixed_data / "fbank" / f"{split}.scp")
        assert [r["id"] for r in rows] == list(feats)
        assert all(feats[r["id"]].shape == (r["n_frames"], 80) for r in rows)
    cmvn = json.loads((mixed_data / "cmvn.json").read_text())
    assert cmvn["split"] == "train"
    assert cmvn["frames"] == sum(r["n_frames"] for r in read_manifest(mixed_data / "train.jsonl"))


def _vocab_dir(root: Path, mixed_data: Path, splits: tuple[str, ...]) -> Path:
    root.mkdir()
    for split in splits:
        shutil.copy(mixed_data / f"{split}.jsonl", root / f"{split}.jsonl")
    return root


@pytest.mark.slow
def test_the_source_vocabulary_learns_the_extra_transcripts(run_sate, mixed_data: Path, tmp_path: Path) -> None:
    train = read_manifest(mixed_data / "train.jsonl")
    extra = [r for split in EXTRA for r in read_manifest(mixed_data / f"{split}.jsonl")]
    unseen = set("".join(r["src_norm"] for r in extra)) - set("".join(r["src_norm"] for r in train))
    word = next(w for r in extra for w in r["src_norm"].split() if set(w) & unseen)  # e.g. a word with a "q"
    alone = _vocab_dir(tmp_path / "alone", mixed_data, ("train", *EXTRA))
    assert run_sate("vocab", "--data", alone, "--src-size", "48", "--tgt-size", "64")[0] == 0
    without = Vocabulary.load(alone, "src")
    assert without.unk_id in without.encode(word)
    with_extra = Vocabulary.load(mixed_data, "src")
    assert with_extra.unk_id not in with_extra.encode(word)
    assert with_extra.decode(with_extra.encode(word)) == word
    # the target side reads train's translations only: the same model either way
    assert (alone / "spm_tgt.model").read_bytes() == (mixed_data / "spm_tgt.model").read_bytes()


@pytest.mark.slow
def test_extra_manifests_are_part_of_the_fingerprint(run_sate, mixed_data: Path, tmp_path: Path) -> None:
    data = _vocab_dir(tmp_path / "data", mixed_data, ("train", *EXTRA))
    argv = ["vocab", "--data", data, "--joint", "60"]
    assert run_sate(*argv, "--src-splits", *EXTRA)[0] == 0
    rc, out, _ = run_sate(*argv, "--src-splits", *EXTRA)
    assert rc == 0 and "vocabularies up to date" in out
    rows = (data / "kaldi.jsonl").read_text().splitlines()
    (data / "kaldi.jsonl").write_text("\n".join(rows[:-1]) + "\n")
    rc, out, _ = run_sate(*argv, "--src-splits", *EXTRA)
    assert rc == 0 and "up to date" not in out and "src: " in out
    rc, out, _ = run_sate(*argv)
    assert rc == 0 and "up to date" not in out


@pytest.mark.slow
def test_unused_extra_manifests_change_nothing(run_sate, mixed_data: Path, tmp_path: Path) -> None:
    bare = _vocab_dir(tmp_path / "bare", mixed_data, ("train",))
    beside = _vocab_dir(tmp_path / "beside", mixed_data, ("train", *EXTRA))
    for data in (bare, beside):
        assert run_sate("vocab", "--data", data, "--src-size", "48", "--tgt-size", "64")[0] == 0
    for name in ("spm_src.model", "spm_tgt.model", "tokens_src.txt", "tokens_tgt.txt"):
        assert (bare / name).read_bytes() == (beside / name).read_bytes()


def test_bad_src_splits(run_sate, mixed_data: Path, tmp_path: Path) -> None:
    data = _vocab_dir(tmp_path / "data", mixed_data, ("train", *EXTRA))
    for splits, message in ((["nope"], f"--src-splits: {data / 'nope.jsonl'} is missing"),
                            (["kaldi", "kaldi"], "name each split once, and not train"),
                            (["train"], "name each split once, and not train")):
        rc, _, err = run_sate("vocab", "--data", data, "--joint", "60", "--src-splits", *splits)
        assert rc == 2 and message in err, err
    shutil.copy(mixed_data / "kaldi.jsonl", data / "train.jsonl")  # a transcript-only corpus as train
    rc, _, err = run_sate("vocab", "--data", data, "--joint", "60")
    assert rc == 2 and f"{data / 'train.jsonl'}: 6 rows have no translation (a transcript-only corpus): " \
                        "`sate vocab` trains the target vocabulary on train's translations" in err


def _config(tmp_path: Path, data: Path, task: str, *overrides: str) -> TrainingConfig:
    path = tmp_path / f"{task}.yaml"
    path.write_text(yaml.safe_dump({
        "task": task, "data": {"dir": str(data), "num_workers": 0}, "batch": {"per_device": 1500, "global": 1500},
        "specaug": {"enabled": False}, "model": tiny_config(task, adaptor=None),
        "optim": {"lr": 1e-3, "warmup_steps": 2}, "trainer": {"max_epochs": 1, "log_every_n_steps": 1}}))
    return load_training_config(path, list(overrides))


def _module(config: TrainingConfig, data: Path) -> SateDataModule:
    from sate.train.datamodule import SateDataModule  # heavy: Lightning (seconds), for these tests only

    module = SateDataModule(config, Vocabulary.load(data, "src"), Vocabulary.load(data, "tgt"))
    module.setup()
    return module


def test_a_list_of_train_splits_is_read_as_one(mixed_data: Path, tmp_path: Path, capsys) -> None:
    one = _module(_config(tmp_path, mixed_data, "asr"), mixed_data)
    listed = _module(_config(tmp_path, mixed_data, "asr", "data.train=[train]"), mixed_data)
    assert isinstance(one.train_set, SpeechDataset) and isinstance(listed.train_set, SpeechDataset)
    assert one.train_dataloader().batch_sampler.global_batches() == \
        listed.train_dataloader().batch_sampler.global_batches()  # a one-split list is the split itself
    mixed = _module(_config(tmp_path, mixed_data, "asr", f"data.train=[train, {', '.join(EXTRA)}]"), mixed_data)
    splits = ("train", *EXTRA)
    rows = [r for split in splits for r in read_manifest(mixed_data / f"{split}.jsonl")]
    assert isinstance(mixed.train_set, ConcatSplits) and len(mixed.train_set) == len(rows) == 26
    assert mixed.train_set.lengths == [r["n_frames"] for r in rows]
    assert "training on train (12), train-clean-5 (8), kaldi (6): 26 items" in capsys.readouterr().out
    seen = [utt for batch in mixed.train_dataloader() for utt in batch["ids"]]
    assert sorted(seen) == sorted(r["id"] for r in rows)
    item = mixed.train_set[len(rows) - 1]  # a Kaldi utterance: features, source ids, no target
    assert item["id"] == rows[-1]["id"] and item["feats"].shape == (rows[-1]["n_frames"], 80)
    assert item["tgt"].numel() == 0 and Vocabulary.load(mixed_data, "src").decode(item["src"].tolist()) == \
        rows[-1]["src_norm"]


def test_mt_and_st_refuse_a_transcript_only_split(mixed_data: Path, tmp_path: Path) -> None:
    for task, split in (("st", "kaldi"), ("mt", "train-clean-5")):
        config = _config(tmp_path, mixed_data, task, f"data.train=[train, {split}]")
        rows = len(read_manifest(mixed_data / f"{split}.jsonl"))
        with pytest.raises(SateError) as err:
            _module(config, mixed_data)
        assert str(err.value) == (f"{mixed_data / f'{split}.jsonl'}: {rows} rows have no translation "
                                  "(a transcript-only corpus): it can train ASR only")
    mt = _module(_config(tmp_path, mixed_data, "mt", "data.train=[train, dev]"), mixed_data)
    assert len(mt.train_set) == 12 + 5 and mt.train_set.lengths[:12] == \
        _module(_config(tmp_path, mixed_data, "mt"), mixed_data).train_set.lengths


@pytest.mark.parametrize("features", ["fbank", "waveform"])
def test_datasets_read_a_transcript_only_split_for_asr_only(mixed_data: Path, features: str) -> None:
    src, tgt = Vocabulary.load(mixed_data, "src"), Vocabulary.load(mixed_data, "tgt")
    cmvn = mixed_data / "cmvn.json" if features == "fbank" else None
    dataset = speech_dataset(mixed_data, "kaldi", src, None, features, cmvn)
    rows = read_manifest(mixed_data / "kaldi.jsonl")
    last = dataset[len(rows) - 1]  # from the 8 kHz stereo recording
    want = (rows[-1]["n_frames"], 80) if features == "fbank" else (round(rows[-1]["duration"] * 16000),)
    assert tuple(last["feats"].shape) == want and last["tgt"].numel() == 0
    assert collate([dataset[i] for i in range(len(rows))])["tgt"].shape == (len(rows), 0)
    with pytest.raises(SateError, match=r"kaldi\.jsonl: 6 rows have no translation"):
        speech_dataset(mixed_data, "kaldi", src, tgt, features, cmvn)


@pytest.mark.slow
def test_asr_trains_on_all_three_corpora(mixed_data: Path, tmp_path: Path) -> None:
    from lightning.pytorch.callbacks import Callback

    class Seen(Callback):
        def __init__(self) -> None:
            self.ids: list[str] = []

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:  # noqa: ANN001
            self.ids += batch["ids"]

    config = _config(tmp_path, mixed_data, "asr", f"data.train=[train, {', '.join(EXTRA)}]",
                     "trainer.max_epochs=2")
    seen = Seen()
    train(config, tmp_path / "exp", callbacks=[seen])
    expected = [r["id"] for split in ("train", *EXTRA) for r in read_manifest(mixed_data / f"{split}.jsonl")]
    assert sorted(seen.ids) == sorted(expected * 2)  # two epochs, each utterance of each split once per epoch
    losses = [float(row["train/loss"]) for path in (tmp_path / "exp" / "logs").glob("version_*/metrics.csv")
              for row in csv.DictReader(path.open()) if row.get("train/loss")]
    assert losses and np.isfinite(losses).all()
