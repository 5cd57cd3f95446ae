"""BucketBatchSampler: capped padded size, determinism, equal rank shares, mid-epoch resume."""

from __future__ import annotations

import numpy as np
import pytest

from sate.data.sampler import BucketBatchSampler, pack_batches, padding_ratio
from sate.errors import SateError

LENGTHS = np.random.default_rng(0).integers(50, 1500, size=500)


def flat(batches) -> list[int]:
    return [i for b in batches for i in b]


def test_every_item_once_and_cap_respected() -> None:
    sampler = BucketBatchSampler(LENGTHS, max_frames=8000, seed=3)
    batches = list(sampler)
    assert sorted(flat(batches)) == list(range(len(LENGTHS)))
    assert all(len(b) * max(LENGTHS[b]) <= 8000 for b in batches)
    assert len(sampler) == len(batches)


def test_oversized_item_gets_its_own_batch() -> None:
    batches = list(BucketBatchSampler([10, 5000, 20, 30], max_tokens=100, shuffle=False))
    assert batches == [[0, 2, 3], [1]]


def test_deterministic_per_seed_and_epoch() -> None:
    a, b = BucketBatchSampler(LENGTHS, 8000, seed=1), BucketBatchSampler(LENGTHS, 8000, seed=1)
    assert list(a) == list(b)
    first = list(a)
    a.set_epoch(1)
    assert list(a) != first
    b.set_epoch(1)
    assert list(a) == list(b)
    assert list(BucketBatchSampler(LENGTHS, 8000, seed=2)) != first


def test_bucketing_wastes_less_than_random_batching() -> None:
    sampler = BucketBatchSampler(LENGTHS, max_frames=20000, seed=0)
    order = np.random.default_rng(0).permutation(len(LENGTHS))
    random_ratio = padding_ratio(pack_batches(order, LENGTHS, 20000), LENGTHS)
    assert sampler.padding_ratio() < 0.08 and random_ratio > 0.3
    assert padding_ratio([[0, 1]], [3, 1]) == pytest.approx(1 / 3)


@pytest.mark.parametrize("drop_last", [False, True])
def test_ranks_get_equal_disjoint_shares(drop_last: bool) -> None:
    world = 3
    samplers = [BucketBatchSampler(LENGTHS, 9000, seed=5, num_replicas=world, rank=r, drop_last=drop_last)
                for r in range(world)]
    for s in samplers:
        s.set_epoch(2)
    shares = [list(s) for s in samplers]
    n_global = len(samplers[0].global_batches())
    assert n_global % world != 0  # the case that needs padding or dropping
    assert len({len(share) for share in shares}) == 1
    assert len(shares[0]) == (n_global // world if drop_last else -(-n_global // world))
    all_items = flat(b for share in shares for b in share)
    if drop_last:
        assert len(set(all_items)) == len(all_items)  # no batch twice
    else:
        assert set(all_items) == set(range(len(LENGTHS)))  # nothing lost


def test_resume_mid_epoch_continues_exactly() -> None:
    sampler = BucketBatchSampler(LENGTHS, 8000, seed=4)
    sampler.set_epoch(7)
    full = list(sampler)
    it = iter(sampler)
    taken = [next(it) for _ in range(5)]
    state = sampler.state_dict(consumed=5)
    resumed = BucketBatchSampler(LENGTHS, 8000, seed=4)
    resumed.load_state_dict(state)
    resumed.set_epoch(7)  # the trainer calls this again at the start of the restored epoch
    assert len(resumed) == len(full) - 5
    assert taken + list(resumed) == full
    assert list(resumed) == full  # the next pass over the epoch starts from its beginning
    again = resumed.state_dict(consumed=0)
    resumed.set_epoch(8)
    assert len(resumed) == len(list(resumed)) and again["position"] == 0


def test_resume_after_a_change_of_world_size() -> None:
    two = [BucketBatchSampler(LENGTHS, 8000, seed=9, num_replicas=2, rank=r) for r in range(2)]
    taken = [list(s)[:3] for s in two]
    state = two[0].state_dict(consumed=3)
    three = [BucketBatchSampler(LENGTHS, 8000, seed=9, num_replicas=3, rank=r) for r in range(3)]
    for s in three:
        s.load_state_dict(state)
    rest = [list(s) for s in three]
    assert len({len(r) for r in rest}) == 1
    assert set(flat(b for part in taken + rest for b in part)) == set(range(len(LENGTHS)))
    before = {i for part in taken for i in flat(part)}
    assert not before & set(flat(b for part in rest for b in part))  # nothing consumed twice
    with pytest.raises(SateError, match="seed 9 but this run uses seed 1"):
        BucketBatchSampler(LENGTHS, 8000, seed=1).load_state_dict(state)


def test_unshuffled_batches_are_sorted_by_length() -> None:
    batches = list(BucketBatchSampler(LENGTHS, 8000, shuffle=False))
    maxima = [max(LENGTHS[b]) for b in batches]
    assert maxima == sorted(maxima)


@pytest.mark.parametrize("kwargs, message", [
    ({}, "exactly one of max_frames and max_tokens"),
    ({"max_frames": 10, "max_tokens": 10}, "exactly one of max_frames and max_tokens"),
    ({"max_frames": 0}, "the batch cap must be > 0"),
    ({"max_frames": 10, "num_replicas": 2, "rank": 2}, "rank 2 is not within num_replicas 2"),
])
def test_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(SateError, match=message):
        BucketBatchSampler(LENGTHS, **kwargs)
