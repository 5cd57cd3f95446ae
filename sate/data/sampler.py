"""Length-bucketed batches capped by padded size, deterministic, shared out across ranks.

A batch's cost is ``batch_size * longest_item`` (what the padded tensor holds), so a cap in
frames (speech) or tokens (text) bounds memory whatever the lengths. Items are sorted by length
(ties broken randomly per epoch) and packed greedily, and the batch order is shuffled per epoch;
everything follows from ``(seed, epoch)``, so every rank builds the same global list and takes
every ``num_replicas``-th batch. The list is padded (repeating its first batches) or, with
``drop_last``, cut to a multiple of ``num_replicas``, so all ranks run the same number of steps
and DDP never waits on a rank that ran out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

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


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of dataset indices for ``DataLoader(batch_sampler=...)``.

    Give exactly one cap: ``max_frames`` for speech (lengths in frames) or ``max_tokens`` for
    text (lengths in tokens); both mean the same padded-size limit. Call ``set_epoch`` before
    each epoch. To resume mid-epoch, save ``state_dict(consumed)`` with the number of batches
    this rank took from the current iterator, and ``load_state_dict`` it before iterating:
    the sampler cannot count consumption itself because the DataLoader prefetches.
    """

    def __init__(self, lengths: Sequence[int] | np.ndarray, max_frames: int | None = None, *,
                 max_tokens: int | None = None, shuffle: bool = True, seed: int = 0, num_replicas: int = 1,
                 rank: int = 0, drop_last: bool = False) -> None:
        if (max_frames is None) == (max_tokens is None):
            raise SateError("give exactly one of max_frames and max_tokens")
        cap = max_frames if max_frames is not None else max_tokens
        if cap <= 0:
            raise SateError(f"the batch cap must be > 0, got {cap}")
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise SateError(f"rank {rank} is not within num_replicas {num_replicas}")
        self.lengths = np.asarray(lengths, dtype=np.int64)
        if len(self.lengths) == 0:
            raise SateError("cannot batch an empty dataset")
        self.max_total = int(cap)
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.num_replicas, self.rank = num_replicas, rank
        self.epoch = 0
        self._skip = 0  # global batches of this epoch the next iterator skips (a restored position)
        self._iter_start = 0  # the skip the most recent iterator started from
        self._cache: tuple[int, list[list[int]]] | None = None

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch's shuffle; a position restored for this same epoch is kept."""
        if epoch != self.epoch:
            self._skip = self._iter_start = 0
        self.epoch = epoch

    def global_batches(self) -> list[list[int]]:
        """All ranks' batches of the current epoch, in order (before the skip and rank split)."""
        if self._cache is None or self._cache[0] != self.epoch:
            if self.shuffle:
                rng = np.random.default_rng([self.seed, self.epoch])
                perm = rng.permutation(len(self.lengths))
                order = perm[np.argsort(self.lengths[perm], kind="stable")]
                batches = pack_batches(order, self.lengths, self.max_total)
                batches = [batches[k] for k in rng.permutation(len(batches))]
            else:
                batches = pack_batches(np.argsort(self.lengths, kind="stable"), self.lengths, self.max_total)
            self._cache = (self.epoch, batches)
        return self._cache[1]

    def _rank_batches(self) -> list[list[int]]:
        rest = self.global_batches()[self._skip:]
        if self.drop_last:
            rest = rest[: len(rest) // self.num_replicas * self.num_replicas]
        elif rest and len(rest) % self.num_replicas:
            short = self.num_replicas - len(rest) % self.num_replicas
            rest = rest + [rest[k % len(rest)] for k in range(short)]
        return rest[self.rank::self.num_replicas]

    def __iter__(self) -> Iterator[list[int]]:
        """This rank's batches from the restored position (if any), fixed when the iterator is made: a loader
        that stops pulling at the epoch's last batch, as Lightning does, leaves no position behind."""
        batches = self._rank_batches()
        self._iter_start, self._skip = self._skip, 0  # a later pass over the same epoch starts from its beginning
        return iter(batches)

    def __len__(self) -> int:
        return len(self._rank_batches())

    def padding_ratio(self) -> float:
        """Padding waste of this epoch's batches (all ranks)."""
        return padding_ratio(self.global_batches(), self.lengths)

    @property
    def position(self) -> int:
        """Global batches of the current epoch the next iterator skips: a restored state not yet iterated."""
        return self._skip

    def state_dict(self, consumed: int) -> dict:
        """Position after this rank took ``consumed`` batches from the current iterator."""
        return {"seed": self.seed, "epoch": self.epoch, "position": self._iter_start + consumed * self.num_replicas}

    def load_state_dict(self, state: dict) -> None:
        """Continue an epoch where ``state`` left it; works across a change of world size."""
        if state["seed"] != self.seed:
            raise SateError(f"sampler state has seed {state['seed']} but this run uses seed {self.seed}")
        self.epoch = int(state["epoch"])
        self._skip = self._iter_start = int(state["position"])
