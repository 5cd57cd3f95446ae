"""Datasets, collate and SpecAugment: the batches the models receive."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from sate.data.dataset import CMVN, SpeechDataset, TextDataset, collate
from sate.data.features import load_cmvn
from sate.data.manifest import read_manifest
from sate.data.sampler import BucketBatchSampler
from sate.data.specaug import SpecAugment
from sate.data.vocab import Vocabulary
from sate.errors import SateError


@pytest.fixture(scope="module")
def vocabs(prepared: Path) -> tuple[Vocabulary, Vocabulary]:
    return Vocabulary.load(prepared, "src"), Vocabulary.load(prepared, "tgt")


def test_speech_batches(prepared: Path, vocabs) -> None:
    src_vocab, tgt_vocab = vocabs
    ds = SpeechDataset.from_data_dir(prepared, "train", src_vocab, tgt_vocab, cmvn=prepared / "cmvn.json")
    rows = read_manifest(prepared / "train.jsonl")
    assert len(ds) == len(rows) == 15 and ds.lengths == [r["n_frames"] for r in rows]
    loader = DataLoader(ds, batch_sampler=BucketBatchSampler(ds.lengths, max_frames=600, seed=0), collate_fn=collate)
    seen = []
    for batch in loader:
        b = len(batch["ids"])
        assert set(batch) == {"ids", "feats", "feats_lengths", "src", "src_lengths", "tgt", "tgt_lengths"}
        assert batch["feats"].dtype == torch.float32 and batch["feats"].shape == (b, batch["feats_lengths"].max(), 80)
        assert batch["feats"].shape[0] * batch["feats"].shape[1] <= 600 or b == 1
        for key in ("feats_lengths", "src", "src_lengths", "tgt", "tgt_lengths"):
            assert batch[key].dtype == torch.long
        for k, utt in enumerate(batch["ids"]):
            row = rows[[r["id"] for r in rows].index(utt)]
            n, s, t = batch["feats_lengths"][k], batch["src_lengths"][k], batch["tgt_lengths"][k]
            assert n == row["n_frames"]
            assert (batch["feats"][k, n:] == 0).all()
            assert src_vocab.decode(batch["src"][k, :s].tolist()) == row["src_norm"]
            assert (batch["src"][k, s:] == -1).all() and (batch["tgt"][k, t:] == -1).all()
            assert tgt_vocab.decode(batch["tgt"][k, :t].tolist()) == row["tgt"]
            assert batch["tgt"][k, t - 1] != tgt_vocab.sos_eos_id  # no sos/eos added
        seen += batch["ids"]
    assert sorted(seen) == sorted(r["id"] for r in rows)


def test_cmvn_options(prepared: Path, vocabs) -> None:
    raw = SpeechDataset.from_data_dir(prepared, "dev", *vocabs)[0]["feats"].numpy()
    mean, std = load_cmvn(prepared / "cmvn.json")
    normed = SpeechDataset.from_data_dir(prepared, "dev", *vocabs, cmvn=prepared / "cmvn.json")[0]["feats"].numpy()
    np.testing.assert_allclose(normed, (raw - mean) / std, rtol=1e-4, atol=1e-4)
    utt = SpeechDataset.from_data_dir(prepared, "dev", *vocabs, cmvn="utterance")[0]["feats"].numpy()
    np.testing.assert_allclose(utt.mean(0), 0, atol=1e-4)
    np.testing.assert_allclose(utt.std(0), 1, atol=1e-3)
    assert CMVN.from_option(None) is None and CMVN.from_option("none") is None
    with pytest.raises(SateError, match="CMVN statistics are missing"):
        SpeechDataset.from_data_dir(prepared, "dev", *vocabs, cmvn=prepared / "no-cmvn.json")


def test_missing_or_stale_features_are_reported(prepared: Path, vocabs, tmp_path: Path) -> None:
    rows = read_manifest(prepared / "dev.jsonl")
    scp = tmp_path / "dev.scp"
    lines = (prepared / "fbank/dev.scp").read_text().splitlines()[1:]  # paths relative to fbank/: made absolute here
    scp.write_text("".join(f"{u} {prepared / 'fbank' / where}\n" for u, where in (x.split(" ") for x in lines)))
    with pytest.raises(SateError, match=f"no features for 1 of the 4 rows .* e.g. {rows[0]['id']}"):
        SpeechDataset(prepared / "dev.jsonl", scp, *vocabs)
    with pytest.raises(SateError, match="feature index is missing"):
        SpeechDataset(prepared / "dev.jsonl", tmp_path / "none.scp", *vocabs)
    manifest = tmp_path / "dev.jsonl"
    rows[0]["n_frames"] += 3
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ds = SpeechDataset(manifest, prepared / "fbank/dev.scp", *vocabs)
    # the index and the manifest named: the line named no file (seventeenth hostile pass)
    with pytest.raises(SateError, match=f"^{prepared / 'fbank/dev.scp'}: the features of {rows[0]['id']} have shape "
                                        rf"\(\d+, 80\), {manifest} says \({rows[0]['n_frames']}, 80\): re-run"):
        ds[0]


def test_an_index_whose_lines_were_swapped_is_refused(prepared: Path, vocabs, tmp_path: Path) -> None:
    """Two lines' offsets swapped in `fbank/dev.scp` gave each id the other's features, without a word where their
    frame counts were equal (seventeenth hostile pass): the split index is compared with its shards' indexes."""
    data = tmp_path / "data"
    shutil.copytree(prepared, data)
    scp = data / "fbank" / "dev.scp"
    lines = scp.read_text().splitlines()
    (a, at), (b, bt) = (line.split(" ") for line in lines[:2])
    scp.write_text("\n".join([f"{a} {bt}", f"{b} {at}", *lines[2:]]) + "\n")
    with pytest.raises(SateError, match=f"^{scp} is not the index its shards make \\(edited\\?\\); run `sate features"):
        SpeechDataset.from_data_dir(data, "dev", *vocabs)
    (data / "fbank" / "dev" / "plan.json").unlink()  # compared without it too (eighteenth hostile pass)
    with pytest.raises(SateError, match=f"^{scp} is not the index its shards make"):
        SpeechDataset.from_data_dir(data, "dev", *vocabs)
    scp.write_text("\n".join(lines) + "\n")
    assert len(SpeechDataset.from_data_dir(data, "dev", *vocabs)) == len(lines)


def test_an_index_whose_shard_index_is_gone_is_refused(prepared: Path, vocabs, tmp_path: Path) -> None:
    """With a shard's index deleted, the split index was not compared: two of its lines' offsets swapped gave each id
    the other's features, exit 0 where their frame counts were equal (nineteenth hostile pass)."""
    data = tmp_path / "data"
    shutil.copytree(prepared, data)
    scp, shard = data / "fbank" / "dev.scp", data / "fbank" / "dev" / "00000.scp"
    lines = scp.read_text().splitlines()
    (a, at), (b, bt) = (line.split(" ") for line in lines[:2])
    scp.write_text("\n".join([f"{a} {bt}", f"{b} {at}", *lines[2:]]) + "\n")
    shard.unlink()
    with pytest.raises(SateError, match=f"^{shard} is missing, so {scp} cannot be checked against its shards' "
                                        "indexes; run `sate features"):
        SpeechDataset.from_data_dir(data, "dev", *vocabs)


def test_an_index_with_no_shard_folder_is_read(prepared: Path, vocabs, tmp_path: Path) -> None:
    """A split index made elsewhere (another tool's arks, or a copy of dev's index for a transcript-only dev_asr)
    has no shard folder to be compared with: it is read, as before the check above, which first refused it (the
    benchmark's fake data and the transcript-only evaluation, nineteenth hostile pass's merge)."""
    data = tmp_path / "data"
    shutil.copytree(prepared, data)
    shutil.copyfile(data / "dev.jsonl", data / "dev_copy.jsonl")
    shutil.copyfile(data / "fbank" / "dev.scp", data / "fbank" / "dev_copy.scp")
    assert len(SpeechDataset.from_data_dir(data, "dev_copy", *vocabs)) == len(read_manifest(data / "dev.jsonl"))


def test_text_dataset_from_a_manifest(prepared: Path, vocabs) -> None:
    src_vocab, tgt_vocab = vocabs
    text = TextDataset.from_manifest(prepared / "train.jsonl", src_vocab, tgt_vocab)
    rows = read_manifest(prepared / "train.jsonl")
    assert len(text) == 15 and text.ids == [r["id"] for r in rows]
    assert src_vocab.decode(text[0]["src"].tolist()) == rows[0]["src_norm"]
    assert text.lengths[0] == max(len(text[0]["src"]), len(text[0]["tgt"]))
    first = BucketBatchSampler(text.lengths, max_tokens=40, shuffle=False).global_batches()[0]
    batch = collate([text[i] for i in first])
    assert set(batch) == {"ids", "src", "src_lengths", "tgt", "tgt_lengths"}
    assert batch["src"].shape == (len(batch["ids"]), batch["src_lengths"].max())


def test_collate_pads_with_the_documented_values() -> None:
    items = [{"id": "a", "feats": torch.ones(3, 80), "src": torch.tensor([5, 6]), "tgt": torch.tensor([7])},
             {"id": "b", "feats": torch.ones(1, 80), "src": torch.tensor([], dtype=torch.long),
              "tgt": torch.tensor([8, 9, 10])}]
    batch = collate(items)
    assert batch["ids"] == ["a", "b"]
    assert batch["feats"][1, 1:].sum() == 0 and batch["feats_lengths"].tolist() == [3, 1]
    assert batch["src"].tolist() == [[5, 6], [-1, -1]] and batch["src_lengths"].tolist() == [2, 0]
    assert batch["tgt"].tolist() == [[7, -1, -1], [8, 9, 10]]


def test_specaugment_masks_inside_each_utterance() -> None:
    torch.manual_seed(0)
    lengths = torch.tensor([400, 60, 1000])
    feats = torch.randn(3, 1000, 80) + 10  # no value is 0 before masking
    feats[0, 400:] = 0
    feats[1, 60:] = 0
    aug = SpecAugment()
    for _ in range(20):
        out, out_lengths = aug(feats, lengths)
        assert out_lengths is lengths and out.shape == feats.shape
        for k, n in enumerate(lengths.tolist()):
            masked = out[k, :n] == 0
            freq = masked.all(dim=0)  # masked in every frame: a frequency mask
            time = masked.all(dim=1)  # masked in every bin: a time mask
            assert freq.sum() <= 27
            assert time.sum() <= min(100, int(0.2 * n))
            assert (masked == (freq.unsqueeze(0) | time.unsqueeze(1))).all()  # nothing else touched
            if freq.any():  # one contiguous band
                idx = freq.nonzero().squeeze(1)
                assert idx.max() - idx.min() + 1 == len(idx)
            torch.testing.assert_close(out[k, n:], feats[k, n:])
    widths = [(aug(feats, lengths)[0][2] == 0).all(dim=1).sum().item() for _ in range(50)]
    assert max(widths) > 50  # the 1000-frame utterance gets masks close to T=100
    aug.eval()
    assert aug(feats, lengths)[0] is feats
    with pytest.raises(ValueError):
        SpecAugment(max_time_ratio=2)


def test_feature_store_is_one_file_per_shard(prepared: Path) -> None:
    lines = (prepared / "fbank/train.scp").read_text().splitlines()
    assert len({line.split()[1].rsplit(":", 1)[0] for line in lines}) == 1  # one ark file, not one per utterance
