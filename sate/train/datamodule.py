"""The Lightning data module: datasets per task over a prepared data dir, the bucketed sampler, the loaders.

Apart from `sate.train.data` (batch arithmetic, feature checks) so that only what trains imports Lightning.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from sate import layout
from sate.data.dataset import ConcatSplits, SpeechDataset, TextDataset, collate, speech_dataset
from sate.data.features import SPEED_SPLIT, SPEEDS
from sate.data.manifest import missing_split
from sate.data.parallel_text import ORDER_LINES, check_pair_order, check_target_language, not_a_text_file
from sate.data.sampler import BucketBatchSampler
from sate.data.text_mix import TextMix, TextMixSampler, collate_text_mix
from sate.data.text_shards import STORE_DIR, ShardedText, TextCleaning, prepare_store, store_key
from sate.data.vocab import Vocabulary
from sate.errors import SateError, one_line
from sate.files import require_file
from sate.models.hub.whisper import WhisperAcousticEncoder
from sate.train.data import BatchPlan, check_whisper_window, plan_batch, prep_limit
from sate.train.frozen_cache import CACHE_DIR, FrozenStates, cache_key, compute_split, problem
from sate.train.schema import (
    TrainingConfig,
    budget_notes,
    check_feature_mode,
    late_specaug,
    short_warmup,
    train_splits,
)


def join(parts: list[Dataset]) -> Dataset:
    """One dataset of the splits' items, in the order given."""
    return parts[0] if len(parts) == 1 else ConcatSplits(parts)


class ResumableLoader(DataLoader):
    """A DataLoader over a `BucketBatchSampler` (or a `TextMixSampler` driving one) whose place inside an epoch goes
    into Lightning's checkpoints.

    Lightning saves `state_dict()` with every checkpoint and, resuming inside an epoch, hands it back to
    `load_state_dict()`: the epoch continues at the exact batch. `batches_done` says how many batches this
    rank has taken in the current epoch (Lightning's own count, which the DataLoader's prefetching cannot
    give). The loader draws its worker seed from its own generator, never from torch's global one, so
    that creating an iterator changes no random number the model draws.
    """

    def __init__(self, *args: Any, epoch: Callable[[], int], batches_done: Callable[[], int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.epoch, self.batches_done = epoch, batches_done
        self._pending = 0  # batches done before the position a loaded state restarts from
        self._before = 0  # the same, for the current iterator

    def __iter__(self) -> Iterator:
        # Lightning's set_epoch reaches a sampler inside a batch sampler, not a batch sampler: set it here.
        self.batch_sampler.set_epoch(self.epoch())  # type: ignore[union-attr]
        self._before, self._pending = self._pending, 0
        return super().__iter__()

    def __len__(self) -> int:
        """The whole epoch's batches for this rank, also while a resumed epoch is being finished."""
        sampler: BucketBatchSampler | TextMixSampler = self.batch_sampler  # type: ignore[assignment]
        return len(sampler) + ((self._pending or self._before) if sampler.position else 0)

    def state_dict(self) -> dict[str, Any]:
        sampler: BucketBatchSampler | TextMixSampler = self.batch_sampler  # type: ignore[assignment]
        done = int(self.batches_done())
        return {"sampler": sampler.state_dict(max(0, done - self._before)), "batches_done": done}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        sampler: BucketBatchSampler | TextMixSampler = self.batch_sampler  # type: ignore[assignment]
        sampler.load_state_dict(state["sampler"])
        self._pending = int(state["batches_done"])


def check_mt_text(pairs: list[list[str]] | None, train: Path | None = None) -> list[tuple[Path, Path]]:
    """`data.mt_text`'s file pairs, each a readable text file: `sate train` checks them before it builds the model
    (a named pipe there was named only once the model was built). With ``train`` (the train split's manifest, where
    it is a file), a target file named in another language than the split's corpus is refused as `sate vocab
    --mt-text` refuses it: `data.mt_text [[news.en, news.fr]]` over an En-De data directory trained the MT objective
    on French, exit 0 (24th hostile pass, review)."""
    files = [(Path(en), Path(tgt)) for en, tgt in pairs or []]
    for path in (p for pair in files for p in pair):
        why = not_a_text_file(path)
        if why is not None:
            raise SateError(f"data.mt_text: {path}: {why}")
    check_pair_order(files, [], "data.mt_text")  # by the names (`sate vocab --mt-text`: by the words too)
    if files and train is not None and train.is_file():  # one missing is named by check_sources
        check_target_language(files, _first_rows(train), "data.mt_text")
    return files


def _first_rows(manifest: Path) -> list[dict]:
    """The rows of a manifest's first `ORDER_LINES` lines that read as JSON objects: what the language check looks
    at. The whole manifest was read and validated for it (MuST-C's train: 230,000 rows, on every rank), though the
    training reads it again (24th hostile pass, review)."""
    rows = []
    with open(manifest, encoding="utf-8", errors="replace") as f:
        for line in islice(f, ORDER_LINES):
            with contextlib.suppress(ValueError, RecursionError):  # a damaged line is named where the split is read
                row = json.loads(line)
                if isinstance(row, dict):
                    rows.append(row)
    return rows


class SateDataModule(L.LightningDataModule):
    """Train and validation loaders of one task (`asr`, `mt` or `st`) over a prepared data dir."""

    def __init__(self, config: TrainingConfig, src_vocab: Vocabulary, tgt_vocab: Vocabulary,
                 frozen: WhisperAcousticEncoder | None = None, plan: BatchPlan | None = None) -> None:
        """`frozen`: the model's Whisper encoder, when ``data.frozen_cache`` has its frozen part computed once;
        `plan`: the run's batch arithmetic (its per-device cap), one device's when not given."""
        super().__init__()
        check_feature_mode(config)
        self.frozen = frozen
        self.config = config
        self.task = config.task
        self.conf = config.data
        self.model_conf = config.model
        self.batch_conf = config.batch
        self.plan = plan or plan_batch(config.batch, 1, config.task, config.data.features)
        self.seed = config.seed
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.data_dir = Path(str(self.conf.dir))
        self.train_set: Dataset | None = None
        self.valid_set: Dataset | None = None
        self.text_batches = config.text_batches
        self.text_set: Dataset | None = None  # st with model.loss.mt_text_weight: the MT text beside the speech
        self._speeches: dict[str, Dataset] | None = None  # check_sources': each split's items, read from the data dir
        self._texts: dict[str, TextDataset] = {}  # and each split's transcript/translation pairs that are used

    def _speech(self, split: str) -> SpeechDataset:
        """A split's speech items; ASR reads no translations, so transcript-only splits serve it too."""
        cmvn = self.conf.cmvn
        if cmvn == "global":
            cmvn = self.data_dir / layout.CMVN
        tgt_vocab = self.tgt_vocab if self.task == "st" else None
        return speech_dataset(self.data_dir, split, self.src_vocab, tgt_vocab, self.conf.features, cmvn)

    def _trained_on(self, split: str) -> Dataset:
        """A split's speech items as training reads them: the cached states of ``data.frozen_cache``, which
        `prepare_data` has computed, in place of the samples."""
        assert self._speeches is not None
        if self.frozen is None:
            return self._speeches[split]
        return FrozenStates(self._speeches[split], self._frozen_dir(), split)

    def _frozen_dir(self) -> Path:
        assert self.frozen is not None
        return self.data_dir / CACHE_DIR / cache_key(self.frozen)

    def _speech_splits(self) -> list[str]:
        return [*train_splits(self.conf.train), self.conf.valid]

    def _mt_store(self) -> tuple[list[tuple[Path, Path]], list[str], TextCleaning]:
        """`data.mt_text`'s files, the vocabularies' identity and the cleaning: what names its store."""
        files = check_mt_text(self.conf.mt_text)
        meta = self.data_dir / layout.VOCAB_META
        vocab_ids = ["\n".join(self.src_vocab.tokens), "\n".join(self.tgt_vocab.tokens),
                     meta.read_bytes().decode("utf-8", "replace") if meta.is_file() else ""]  # damaged: no traceback
        cleaning = TextCleaning(self.conf.mt_max_tokens, self.conf.mt_max_ratio, self.conf.mt_dedup)
        return files, vocab_ids, cleaning

    def prepare_data(self) -> None:
        """MT text files become token-id shards once, and frozen Whisper states are computed once (Lightning runs
        this on one process per machine)."""
        if self.conf.mt_text:  # task mt, or st's text batches (TrainingConfig allows no other)
            files, vocab_ids, cleaning = self._mt_store()
            prepare_store(self.data_dir, files, self.src_vocab, self.tgt_vocab, vocab_ids, cleaning)
        if self.frozen is not None:
            out = self._frozen_dir()
            for split in self._speech_splits():
                manifest = self.data_dir / f"{split}.jsonl"
                why = problem(out, split, manifest) if manifest.is_file() else None
                if why is not None:
                    if (out / f"{split}.json").is_file():  # computed before: say why it is done again
                        print(one_line(f"frozen Whisper states: {why}; computing them again"))
                    base = speech_dataset(self.data_dir, split, self.src_vocab, None, "waveform")
                    check_whisper_window(base, split)
                    compute_split(self.frozen, base, manifest, out, split)

    def _manifest_text(self, split: str) -> TextDataset:
        return TextDataset.from_manifest(self.data_dir / f"{split}.jsonl", self.src_vocab, self.tgt_vocab)

    def _text(self, splits: list[str]) -> tuple[Dataset, list[TextDataset]]:
        """The MT text to train on: `data.mt_text`'s store, else the splits' transcript/translation pairs (then
        also returned one dataset per split)."""
        if self.conf.mt_text:
            files, vocab_ids, cleaning = self._mt_store()
            return ShardedText(self.data_dir / STORE_DIR / store_key(files, vocab_ids, cleaning)), []
        parts = [self._texts[split] for split in splits]
        return join(parts), parts

    def check_sources(self) -> None:
        """Reads and checks what training takes from the data directory itself (the manifests, the feature
        indexes, the splits' sizes, Whisper's window). `sate train` calls it before Lightning's loggers make this
        run's version folders and the config snapshot is written: a resume refused here leaves the experiment as
        it was (twentieth hostile pass). The stores `prepare_data` builds are opened in `setup`, inside fit."""
        if self._speeches is not None:
            return
        train, valid = train_splits(self.conf.train), self.conf.valid
        for split in (*train, valid):
            manifest = self.data_dir / f"{split}.jsonl"
            # train_sp is the speed-perturbed copy of train that `sate features --speed-perturb` writes, not prep
            run = "sate features --speed-perturb" if split == SPEED_SPLIT else "sate prep"
            require_file(manifest, f"the manifest of split {split!r}",
                         missing_split(manifest, f"{manifest} is missing (run `{run}`)"))
        if self.task == "mt":  # the MT text files (data.mt_text), else the train manifests' pairs
            texts = [valid] if self.conf.mt_text else [*train, valid]
        else:  # st's text batches come from the train manifests unless data.mt_text is given
            texts = train if self.text_batches and not self.conf.mt_text else []
        self._texts = {split: self._manifest_text(split) for split in texts}
        self._speeches = {} if self.task == "mt" else {split: self._speech(split) for split in (*train, valid)}
        read = {**self._texts, **self._speeches}
        if all(split in read for split in train):
            self._refuse_empty("train", join([read[split] for split in train]), ", ".join(train))
        self._refuse_empty("valid", read[valid], valid)
        if (self.model_conf.get("acoustic") or {}).get("type") == "whisper":
            for split, items in self._speeches.items():
                check_whisper_window(items, split)
        if self.conf.mt_text:  # its store, read or built in fit's prepare_data: one this user may not enter (mode
            # 0000) was refused there, after the snapshot and train_time.json were rewritten (twenty-third hostile pass)
            store = self.data_dir / STORE_DIR / store_key(*self._mt_store())
            for folder in (store.parent, store):
                if folder.is_dir() and not os.access(folder, os.X_OK):
                    raise SateError(f"{folder} cannot be entered (no permission), where `sate train` keeps the MT "
                                    "text store of data.mt_text; lift that (chmod u+rwx), or delete it to have it "
                                    "built again")

    def _refuse_empty(self, name: str, dataset: Dataset, where: str) -> None:
        if not len(dataset):  # an empty valid split was `max()`'s ValueError traceback in the batch sampler
            raise SateError(f"{self.data_dir}: the {name} split ({where}) holds no items to train or validate on")

    def setup(self, stage: str | None = None) -> None:
        if self.train_set is not None:
            return
        self.check_sources()
        train, valid = train_splits(self.conf.train), self.conf.valid
        parts: list  # the train splits' datasets, when read from manifests
        if self.task == "mt":  # the MT text files, else the train manifests
            self.train_set, parts = self._text(train)
            self.valid_set = self._texts[valid]
        else:
            parts = [self._trained_on(split) for split in train]
            self.train_set = join(parts)
            self.valid_set = self._trained_on(valid)
        if self.text_batches:
            self.text_set = self._text(train)[0]
        if len(parts) > 1 and (self.trainer is None or self.trainer.is_global_zero):
            counts = ", ".join(f"{split} ({len(part):,})" for split, part in zip(train, parts, strict=True))
            print(f"training on {counts}: {len(self.train_set):,} items")
        self._refuse_empty("train", self.train_set, ", ".join(train))  # data.mt_text's store, after its cleaning

    def _sampler(self, dataset: Dataset, shuffle: bool, text_batches: bool = False) -> BucketBatchSampler:
        """The bucketed batches of the task's items, or (`text_batches`) of st's MT text, capped by batch.mt_tokens."""
        if text_batches:
            key, cap, unit = "batch.mt_tokens", self.batch_conf.mt_tokens, "tokens"
        else:
            key, cap, unit = self.plan.cap_key, self.plan.per_device, self.plan.unit
        if isinstance(dataset, ShardedText):  # lengths per shard, loaded as the sampler reads them
            lengths, longest = dataset, dataset.longest
        else:
            lengths, longest = dataset.lengths, max(dataset.lengths)
        if longest > cap:
            items, advice = self._items(dataset, shuffle, unit, cap)
            raise SateError(f"{key} ({cap} {unit}) is smaller than the longest item of {items}, {longest} {unit}; "
                            f"raise it{advice}")
        kind = "max_tokens" if unit == "tokens" else "max_frames"
        trainer = self.trainer
        world, rank = (trainer.world_size, trainer.global_rank) if trainer is not None else (1, 0)
        return BucketBatchSampler(lengths, **{kind: cap}, shuffle=shuffle, seed=self.seed,
                                  num_replicas=world, rank=rank)

    def _items(self, dataset: Dataset, training: bool, unit: str, cap: int) -> tuple[str, str]:
        """Where the items of `_sampler`'s `dataset` longer than `cap` come from, as its refusal names them (it named
        none), and how they may be dropped instead where a key or an option does it. `sate prep`, once the advice for
        all, drops only training segments, by their seconds: followed, it changed nothing of the validation split or
        of a transcript or translation in tokens (thirtieth hostile pass), nor of a training split not named train...
        or of the 0.9 speed copies of train_sp, longer than the seconds prep measures (review30c): `prep_limit`, as
        Whisper's window says it."""
        if isinstance(dataset, ShardedText):
            return "data.mt_text", " or filter long items with data.mt_max_tokens"
        if not training:
            return f"data.valid ({self.conf.valid})", ""
        splits = train_splits(self.conf.train)
        per_second = {"frames": 100, "samples": 16000}.get(unit)
        if per_second is None or self._speeches is None:  # tokens: nothing drops them
            return f"data.train ({', '.join(splits)})", ""
        # the split of the longest item (lengths as training reads them: a frozen cache's are in samples too), whose
        # rows say whether they are speed copies
        speeches = self._speeches
        split = max(splits, key=lambda name: max(speeches[name].lengths, default=0))
        part = speeches[split]
        limit = prep_limit(part, [i for i, n in enumerate(part.lengths) if n > cap], split, cap / per_second)
        if limit is None:  # `sate prep` keeps every row of it, whatever --max-duration says
            advice = (f", or give data.train a split whose items are {cap / per_second:g} s at most (`sate prep "
                      "--max-duration` drops rows only from training splits, named train...)")
        elif limit.perturbed:
            advice = (f" or drop the longer segments with `sate prep --max-duration` ({limit.seconds:g} s or less: "
                      f"its speed copies at {min(SPEEDS):g} are longer) and `sate features --speed-perturb` again")
        else:
            advice = f" or drop the longer segments with `sate prep --max-duration` ({limit.seconds:g} s or less)"
        named = split if len(splits) == 1 else f"{', '.join(splits)}; the longest in {split}"
        return f"data.train ({named})", advice

    def _batches_done(self) -> int:
        return int(self.trainer.fit_loop.epoch_loop.batch_progress.current.ready) if self.trainer else 0

    def _epoch(self) -> int:
        return int(self.trainer.current_epoch) if self.trainer else 0

    def train_dataloader(self) -> DataLoader:
        assert self.train_set is not None
        dataset, collate_fn = self.train_set, collate
        self.train_sampler: BucketBatchSampler | TextMixSampler = self._sampler(self.train_set, shuffle=True)
        if self.text_set is not None:  # each speech batch with a text batch beside it (sate.data.text_mix)
            text = self._sampler(self.text_set, shuffle=True, text_batches=True)
            dataset = TextMix(self.train_set, self.text_set)
            self.train_sampler = TextMixSampler(self.train_sampler, text, offset=len(self.train_set))
            collate_fn = collate_text_mix
        self._note_short_epoch(len(self.train_sampler))
        self._note_epoch_budget(len(self.train_sampler))
        return ResumableLoader(dataset, batch_sampler=self.train_sampler, collate_fn=collate_fn,
                               num_workers=self.conf.num_workers, persistent_workers=False,
                               generator=torch.Generator().manual_seed(self.seed), epoch=self._epoch,
                               batches_done=self._batches_done)

    def _note_short_epoch(self, batches: int) -> None:
        """Say where an epoch holds fewer batches than one update accumulates: Lightning then steps at each epoch's
        end, so every update was the whole train split, far less than the "= N frames per update" the run's batch
        line printed (a small corpus with a recipe's batch.global), without a word (29th hostile pass)."""
        plan = self.plan
        if batches >= plan.accumulation or (self.trainer is not None and not self.trainer.is_global_zero):
            return
        lengths = getattr(self.train_set, "lengths", None)
        held = "" if lengths is None or isinstance(self.train_set, ShardedText) else \
            f", {int(sum(lengths)):,} {plan.unit} in all"
        # The advice names the value: "lower batch.global to what the split holds" (2,896 frames, followed) made an
        # accumulation of 3 over an epoch of 4 batches, a batch line still untrue (fix29t). At batches x per_device x
        # devices the accumulation is the epoch's batches, one update an epoch, as the batch line then says
        fits = batches * plan.per_device * plan.world_size
        print(one_line(f"note: the train split makes {batches:,} batch(es) an epoch per process{held}, fewer than the "
                       f"{plan.accumulation:,} that batch.global asks one update to accumulate: each update is one "
                       f"epoch, not {plan.effective:,} {plan.unit}; for a batch line that says so, set batch.global "
                       f"to {fits:,} ({batches:,} batch(es) x {plan.per_device:,} {plan.unit} x {plan.world_size} "
                       "device(s)) or less"))

    def _note_epoch_budget(self, batches: int) -> None:
        """Say where a warm-up or a SpecAugment start outlasts the run's updates, named by the bound that binds: the
        smaller of trainer.max_steps and what trainer.max_epochs allows. The updates an epoch are known here alone:
        conf/mustc/asr.yaml's 10,000-update warm-up over a small corpus of 50 epochs of 10 updates never reached
        optim.lr, without a word (hand30c's leftover), and a max_steps between the epochs' updates and the warm-up
        was noted twice, the max_steps note false (31st hostile pass). `sate train` leaves these notes to this."""
        if self.trainer is not None and not self.trainer.is_global_zero:
            return
        tconf = self.config.trainer
        per_epoch = -(-batches // self.plan.accumulation)  # Lightning steps at an epoch's end on what it holds
        total = tconf.max_epochs * per_epoch
        if tconf.max_steps != -1 and tconf.max_steps <= total:  # max_steps binds
            notes = budget_notes(self.config)
        else:
            budget = f"the {total:,} updates of trainer.max_epochs {tconf.max_epochs:,} ({per_epoch:,} an epoch)"
            notes = [note for note in (short_warmup(self.config, total, budget),
                                       late_specaug(self.config, total, budget)) if note is not None]
        for note in notes:
            print(one_line(f"note: {note}"))

    def val_dataloader(self) -> DataLoader:
        assert self.valid_set is not None
        return DataLoader(self.valid_set, batch_sampler=self._sampler(self.valid_set, shuffle=False),
                          collate_fn=collate, num_workers=self.conf.num_workers,
                          generator=torch.Generator().manual_seed(self.seed))

