"""Length-bucketed batches capped by padded size, deterministic, shared out across ranks, in bounded memory.

A batch's cost is ``batch_size * longest_item`` (what the padded tensor holds), so a cap in
frames (speech) or tokens (text) bounds memory whatever the lengths. Items are sorted by length
(ties broken randomly per epoch) and packed greedily, and the batch order is shuffled per epoch;
everything follows from ``(seed, epoch)``, so every rank builds the same global sequence and takes
every ``num_replicas``-th batch. The sequence is padded (repeating its first batches) or, with
``drop_last``, cut to a multiple of ``num_replicas``, so all ranks run the same number of steps
and DDP never waits on a rank that ran out.

A corpus too large to index in memory (WMT-size MT text, `sate.data.text_shards`) comes in shards: then
bucketing happens within a shard, the shards come in a shuffled order per epoch, and only the shard being
read has its batches in memory. One shard (a plain list of lengths) is the unsharded case, batch for batch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from torch.utils.data import Sampler

from sate.errors import SateError


def pack_batches(order: Sequence[int], lengths: Sequence[int] | np.ndarray, max_total: int) -> list[list[int]]:
    """Greedily cut ``order`` into batches with ``len(batch) * max(lengths) <= max_total``.

    An item longer than ``max_total`` alone still gets a batch of its own: it is never dropped.
    """
    batches: list[list[int]] = []
    batch: list[int] = []
    longest = 0
    for i in order:
        i = int(i)
        length = int(lengths[i])
        new_longest = max(longest, length)
        if batch and (len(batch) + 1) * new_longest > max_total:
            batches.append(batch)
            batch, new_longest = [], length
        batch.append(i)
        longest = new_longest
    if batch:
        batches.append(batch)
    return batches


def padding_ratio(batches: Sequence[Sequence[int]], lengths: Sequence[int] | np.ndarray) -> float:
    """Fraction of the padded batch tensors that is padding (0 = no waste)."""
    real = sum(int(lengths[i]) for b in batches for i in b)
    padded = sum(len(b) * max(int(lengths[i]) for i in b) for b in batches if b)
    return 1.0 - real / padded if padded else 0.0


class ShardLengths(Protocol):
    """Item lengths of a sharded corpus: shard ``s`` holds ``sizes[s]`` consecutive items, whose lengths
    ``lengths(s)`` loads on demand."""

    sizes: Sequence[int]

    def lengths(self, shard: int) -> np.ndarray: ...


@dataclass(frozen=True)
class OneShard:
    """A length list as a corpus of one shard."""

    array: np.ndarray

    @property
    def sizes(self) -> list[int]:
        return [len(self.array)]

    def lengths(self, shard: int) -> np.ndarray:
        return self.array


class OtherItems(SateError):
    """A mid-epoch position saved over other items than the sampler now holds: its remaining batches would be
    other ones (rows removed or added since, a transcript edited), so the epoch cannot continue where it was."""


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of dataset indices for ``DataLoader(batch_sampler=...)``.

    ``lengths``: one length per item, or a `ShardLengths` (items numbered shard after shard). Give exactly
    one cap: ``max_frames`` for speech (lengths in frames) or ``max_tokens`` for text (lengths in tokens);
    both mean the same padded-size limit. Call ``set_epoch`` before each epoch. To resume mid-epoch, save
    ``state_dict(consumed)`` with the number of batches this rank took from the current iterator, and
    ``load_state_dict`` it before iterating: the sampler cannot count consumption itself because the
    DataLoader prefetches.
    """

    def __init__(self, lengths: Sequence[int] | np.ndarray | ShardLengths, max_frames: int | None = None, *,
                 max_tokens: int | None = None, shuffle: bool = True, seed: int = 0, num_replicas: int = 1,
                 rank: int = 0, drop_last: bool = False) -> None:
        if (max_frames is None) == (max_tokens is None):
            raise SateError("give exactly one of max_frames and max_tokens")
        cap = max_frames if max_frames is not None else max_tokens
        if cap <= 0:
            raise SateError(f"the batch cap must be > 0, got {cap}")
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise SateError(f"rank {rank} is not within num_replicas {num_replicas}")
        if not hasattr(lengths, "sizes"):
            lengths = OneShard(np.asarray(lengths, dtype=np.int64))
        self.shards: ShardLengths = lengths  # type: ignore[assignment]
        if sum(self.shards.sizes) == 0:
            raise SateError("cannot batch an empty dataset")
        self.max_total = int(cap)
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.num_replicas, self.rank = num_replicas, rank
        self.epoch = 0
        self._skip = 0  # global batches of this epoch the next iterator skips (a restored position)
        self._iter_start = 0  # the skip the most recent iterator started from
        self._starts = np.concatenate([[0], np.cumsum(self.shards.sizes)]).astype(np.int64)
        # A shard's batch count does not depend on the epoch: packing follows the sorted lengths, not the ties.
        # The items' lengths, shard by shard, are what a saved position refers to: their digest goes with it.
        digest = hashlib.sha1(np.asarray(self.shards.sizes, dtype=np.int64).tobytes())
        self._counts = []
        for s, size in enumerate(self.shards.sizes):
            shard = np.asarray(self.shards.lengths(s), dtype=np.int64) if size else np.zeros(0, np.int64)
            digest.update(shard.tobytes())
            self._counts.append(self._batch_count(shard) if size else 0)
        self.items = digest.hexdigest()
        self._cache: tuple[int, int, list[list[int]]] | None = None  # (epoch, shard, its batches)

    def _batch_count(self, lengths: np.ndarray) -> int:
        return len(pack_batches(np.argsort(lengths, kind="stable"), lengths, self.max_total))

    @property
    def lengths(self) -> np.ndarray:
        """Every item's length (all shards: for small corpora and reports)."""
        return np.concatenate([self.shards.lengths(s) for s in range(len(self.shards.sizes))])

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch's shuffle; a position restored for this same epoch is kept."""
        if epoch != self.epoch:
            self._skip = self._iter_start = 0
        self.epoch = epoch

    def _shard_order(self, epoch: int) -> np.ndarray:
        n = len(self.shards.sizes)
        if self.shuffle and n > 1:
            return np.random.default_rng([self.seed, epoch]).permutation(n)
        return np.arange(n)

    def _shard_batches(self, epoch: int, shard: int) -> list[list[int]]:
        """An epoch's batches of one shard, as global item indices (the last shard asked for is kept)."""
        if self._cache is not None and self._cache[:2] == (epoch, shard):
            return self._cache[2]
        lengths = self.shards.lengths(shard)
        if self.shuffle:
            # One shard draws exactly what the unsharded sampler always drew, so small corpora keep their order.
            key = [self.seed, epoch] if len(self.shards.sizes) == 1 else [self.seed, epoch, shard]
            rng = np.random.default_rng(key)
            perm = rng.permutation(len(lengths))
            order = perm[np.argsort(lengths[perm], kind="stable")]
            batches = pack_batches(order, lengths, self.max_total)
            batches = [batches[k] for k in rng.permutation(len(batches))]
        else:
            batches = pack_batches(np.argsort(lengths, kind="stable"), lengths, self.max_total)
        start = int(self._starts[shard])
        if start:
            batches = [[start + i for i in b] for b in batches]
        self._cache = (epoch, shard, batches)
        return batches

    def _batches(self, epoch: int, positions: Sequence[int]) -> Iterator[list[int]]:
        """The batches at these global positions of an epoch's sequence (each shard in turn)."""
        order = self._shard_order(epoch)
        begins = np.concatenate([[0], np.cumsum(np.asarray(self._counts, dtype=np.int64)[order])])
        for g in positions:
            k = int(np.searchsorted(begins, g, side="right")) - 1
            yield self._shard_batches(epoch, int(order[k]))[g - int(begins[k])]

    def global_batches(self) -> list[list[int]]:
        """All ranks' batches of the current epoch, in order (before the skip and rank split)."""
        return list(self._batches(self.epoch, range(sum(self._counts))))

    def _rank_positions(self) -> range | list[int]:
        """This rank's global batch numbers from the restored position, padded or cut for equal shares."""
        total = sum(self._counts)
        rest = total - self._skip
        if rest <= 0:
            return []
        span = rest // self.num_replicas * self.num_replicas if self.drop_last else -(-rest // self.num_replicas) \
            * self.num_replicas
        return [self._skip + p % rest for p in range(self.rank, span, self.num_replicas)]

    def __iter__(self) -> Iterator[list[int]]:
        """This rank's batches from the restored position (if any), fixed when the iterator is made: a loader
        that stops pulling at the epoch's last batch, as Lightning does, leaves no position behind."""
        positions = self._rank_positions()
        self._iter_start, self._skip = self._skip, 0  # a later pass over the same epoch starts from its beginning
        return self._batches(self.epoch, positions)

    def __len__(self) -> int:
        return len(self._rank_positions())

    @property
    def batches_per_rank(self) -> int:
        """This rank's batches in a whole epoch, the same in every epoch (whatever position is restored)."""
        total = sum(self._counts)
        return total // self.num_replicas if self.drop_last else -(-total // self.num_replicas)

    def rank_places(self) -> list[tuple[int, bool]]:
        """Where each of this rank's batches of the current epoch (from its start) stands in the epoch: how many
        items the epoch's batches before it hold, and whether it repeats one the epoch gave already (the padding
        that gives every rank as many batches; none with ``drop_last``). Validation counts a repeat's items once,
        and scores BLEU on the epoch's first items, not each rank's: under DDP a repeat's loss, WER and BLEU were
        counted twice, and each rank scored its own first trainer.valid_bleu_utts (the thirty-third hostile pass)."""
        total = sum(self._counts)
        sizes = [len(batch) for batch in self._batches(self.epoch, range(total))]
        starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        positions = (self.rank + k * self.num_replicas for k in range(self.batches_per_rank))
        return [(int(starts[p % total]), p >= total) for p in positions]

    def rank_batch(self, epoch: int, k: int) -> list[int]:
        """This rank's `k`-th batch of `epoch`, counted from the epoch's start (0 <= k < batches_per_rank): a
        second corpus read beside a first one (`sate.data.text_mix`) draws its batches by number."""
        if not 0 <= k < self.batches_per_rank:
            raise SateError(f"batch {k} is outside this rank's {self.batches_per_rank} batches of an epoch")
        return next(self._batches(epoch, [(self.rank + k * self.num_replicas) % sum(self._counts)]))

    def padding_ratio(self) -> float:
        """Padding waste of this epoch's batches (all ranks)."""
        return padding_ratio(self.global_batches(), self.lengths)

    @property
    def position(self) -> int:
        """Global batches of the current epoch the next iterator skips: a restored state not yet iterated."""
        return self._skip

    def state_dict(self, consumed: int) -> dict:
        """Position after this rank took ``consumed`` batches from the current iterator."""
        return {"seed": self.seed, "epoch": self.epoch, "position": self._iter_start + consumed * self.num_replicas,
                "items": self.items, "size": sum(self.shards.sizes), "batches": sum(self._counts)}

    def load_state_dict(self, state: dict) -> None:
        """Continue an epoch where ``state`` left it; works across a change of world size. A position inside an
        epoch over other items (`OtherItems`) is refused; at an epoch's end the next epoch starts afresh anyway."""
        if state["seed"] != self.seed:
            raise SateError(f"sampler state has seed {state['seed']} but this run uses seed {self.seed}")
        saved = state.get("items")  # states saved before the digest was kept are let be
        if saved is not None and saved != self.items and 0 < int(state["position"]) < int(state["batches"]):
            size, now = int(state["size"]), sum(self.shards.sizes)
            change = f"which holds {now:,} now" if size != now else "whose items have other lengths now"
            raise OtherItems(f"stopped inside epoch {int(state['epoch'])} of a train split of {size:,} items, "
                             f"{change}: the batches left of that epoch are other ones")
        self.epoch = int(state["epoch"])
        self._skip = self._iter_start = int(state["position"])
