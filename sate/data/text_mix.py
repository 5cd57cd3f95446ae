"""Speech batches with an MT text batch beside each: the data of ``model.loss.mt_text_weight``.

SATE fine-tunes its textual encoder and decoder on the voiced pairs only, while they adapt to the adaptor's
output; text batches keep them on the MT task they were pre-trained on, through the source embedding, as
ConST, STEMM and XSTNet do. Each training batch of task st then carries, under ``mt``, a batch of text pairs
bucketed as task mt buckets them (``batch.mt_tokens`` tokens of padded size), which `STModel.forward` adds to
the loss.

One loader and one sampler serve both: `TextMixSampler` yields each batch of the speech sampler followed by
the indices of its text batch, shifted past the speech items into `TextMix`'s index space, and
`collate_text_mix` splits them again. The text batch is a function of how many speech batches this rank has
taken since the first epoch (the text corpus runs through its own epochs at its own pace), so the speech
sampler's state alone restores both on a resume, and the speech batches are exactly those of a run without
text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch.utils.data import Dataset, Sampler

from sate.data.dataset import Batch, Item, collate
from sate.data.sampler import BucketBatchSampler


class TextMix(Dataset):
    """The speech items (indices below ``offset``), then the text items."""

    def __init__(self, speech: Dataset, text: Dataset) -> None:
        self.speech, self.text = speech, text
        self.offset = len(speech)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self.offset + len(self.text)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> Item:
        return self.speech[index] if index < self.offset else self.text[index - self.offset]


class TextMixSampler(Sampler[list[int]]):
    """The batches of `speech`, each followed by one batch of `text` (its indices plus `offset`).

    Epochs, length, position and state are the speech sampler's, so that `ResumableLoader` drives it as it
    drives a `BucketBatchSampler`. The n-th speech batch of this rank since the first epoch goes with the
    text sampler's batch n modulo its epoch, in text epoch n // (text batches per epoch).
    """

    def __init__(self, speech: BucketBatchSampler, text: BucketBatchSampler, offset: int) -> None:
        self.speech, self.text, self.offset = speech, text, offset

    def set_epoch(self, epoch: int) -> None:
        self.speech.set_epoch(epoch)

    @property
    def position(self) -> int:
        return self.speech.position

    def __len__(self) -> int:
        return len(self.speech)

    def __iter__(self) -> Iterator[list[int]]:
        speech = self.speech
        taken = speech.epoch * speech.batches_per_rank + speech.position // speech.num_replicas
        per_text_epoch = self.text.batches_per_rank
        for n, batch in enumerate(speech, start=taken):
            text = self.text.rank_batch(n // per_text_epoch, n % per_text_epoch)
            yield batch + [self.offset + i for i in text]

    def state_dict(self, consumed: int) -> dict[str, Any]:
        return self.speech.state_dict(consumed)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.speech.load_state_dict(state)


def collate_text_mix(items: list[Item]) -> Batch:
    """A speech batch (the items with ``feats``) with the text items' batch under ``mt``."""
    batch = collate([item for item in items if "feats" in item])
    batch["mt"] = collate([item for item in items if "feats" not in item])
    return batch
