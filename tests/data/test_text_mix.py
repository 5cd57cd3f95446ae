"""Speech batches with a text batch beside each (`sate.data.text_mix`): the speech order untouched, the text read
in bucketed epochs of its own, the position restored from the speech sampler's state alone, ranks apart."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from sate.data.sampler import BucketBatchSampler
from sate.data.text_mix import TextMix, TextMixSampler, collate_text_mix
from sate.errors import SateError

SPEECH = [int(n) for n in np.random.default_rng(0).integers(50, 400, size=40)]  # frames
TEXT = [int(n) for n in np.random.default_rng(1).integers(2, 30, size=100)]  # tokens


def _mix(rank: int = 0, world: int = 1) -> TextMixSampler:
    speech = BucketBatchSampler(SPEECH, max_frames=1200, seed=3, num_replicas=world, rank=rank)
    text = BucketBatchSampler(TEXT, max_tokens=120, seed=3, num_replicas=world, rank=rank)
    return TextMixSampler(speech, text, offset=len(SPEECH))


def _epochs(sampler: TextMixSampler, epochs: int) -> list[list[int]]:
    out = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        out += list(sampler)
    return out


def _split(batch: list[int]) -> tuple[list[int], list[int]]:
    return [i for i in batch if i < len(SPEECH)], [i - len(SPEECH) for i in batch if i >= len(SPEECH)]


def test_speech_batches_are_those_without_text_and_the_text_runs_through_its_own_epochs() -> None:
    mixed = _epochs(_mix(), 3)
    plain = BucketBatchSampler(SPEECH, max_frames=1200, seed=3)
    assert [_split(b)[0] for b in mixed] == _epochs(plain, 3)  # type: ignore[arg-type]
    text = [_split(b)[1] for b in mixed]
    assert all(text) and all(len(b) * max(TEXT[i] for i in b) <= 120 for b in text)  # bucketed by tokens
    per_epoch = BucketBatchSampler(TEXT, max_tokens=120, seed=3).batches_per_rank
    assert len(text) > per_epoch  # more speech batches than text ones: the text starts a second epoch
    first = sorted(i for b in text[:per_epoch] for i in b)
    assert first == list(range(len(TEXT)))  # each text item once per text epoch
    assert text[per_epoch:2 * per_epoch] != text[:per_epoch]  # the next text epoch is shuffled anew


def test_a_restored_position_continues_speech_and_text_where_they_were() -> None:
    whole = _epochs(_mix(), 2)
    sampler = _mix()
    sampler.set_epoch(1)
    taken = list(itertools.islice(iter(sampler), 3))
    state = sampler.state_dict(3)
    resumed = _mix()
    resumed.load_state_dict(state)
    resumed.set_epoch(1)
    n = len(_mix().speech)
    assert taken + list(resumed) == whole[n:]


def test_ranks_take_different_text_batches() -> None:
    ranks = [_epochs(_mix(rank, 2), 1) for rank in (0, 1)]
    text = [{i for b in batches for i in _split(b)[1]} for batches in ranks]
    assert len(ranks[0]) == len(ranks[1]) and text[0] and text[1] and not text[0] & text[1]


def test_a_batch_number_outside_the_epoch_is_refused() -> None:
    sampler = BucketBatchSampler(TEXT, max_tokens=120, seed=3)
    assert sampler.rank_batch(0, 0) == sampler.global_batches()[0]
    with pytest.raises(SateError, match="outside this rank's"):
        sampler.rank_batch(0, sampler.batches_per_rank)


def test_the_collated_batch_holds_the_text_under_mt() -> None:
    speech = [{"id": f"u{i}", "feats": torch.zeros(5 + i, 80), "src": torch.tensor([2, 3]), "tgt": torch.tensor([4])}
              for i in range(2)]
    text = [{"id": f"t{i}", "src": torch.arange(2, 4 + i), "tgt": torch.tensor([5, 6])} for i in range(3)]
    dataset = TextMix(speech, text)
    assert len(dataset) == 5 and dataset[1]["id"] == "u1" and dataset[2]["id"] == "t0"
    batch = collate_text_mix([dataset[i] for i in (0, 1, 2, 3, 4)])
    assert batch["ids"] == ["u0", "u1"] and batch["feats"].shape == (2, 6, 80)
    assert batch["mt"]["ids"] == ["t0", "t1", "t2"] and batch["mt"]["src"].shape == (3, 4)
    assert "feats" not in batch["mt"] and batch["mt"]["src_lengths"].tolist() == [2, 3, 4]
