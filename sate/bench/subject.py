"""What is benchmarked: one ST model file and the prepared data dir it was trained on, or a tiny stand-in.

Every part that needs a model uses this one, so all ratios come from the same weights and data. The
tiny stand-in (``--tiny``) voices a small synth corpus, prepares it and fits a tiny ST model to its
train split (300 full-batch Adam steps, under a minute on 2 cores), so the harness runs without a
trained model. It has memorised its train split, so its hypotheses end with eos at about the right
length, as a trained model's do on unseen speech; its speed figures say little about a real model
(per-step overheads dominate such a small network).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

import torch

from sate import layout
from sate.bench.steps import run_sate as sate
from sate.data.dataset import Batch, SpeechDataset, collate
from sate.data.manifest import missing_split
from sate.data.vocab import Vocabulary
from sate.errors import SateError
from sate.files import require_file
from sate.models.base import SateModel
from sate.models.model_file import ModelFile, model_from_file
from sate.models.tiny import tiny_config
from sate.synth import corpus as synth

TINY_STEPS = 300
TINY_MODEL = tiny_config("st", acoustic_type="transformer", decoder_layers=2, dropout=0.0)
TINY_SPLITS = {"train": 64, "dev": 4, "tst-COMMON": 1}  # prep wants every split


class SubjectInfo(TypedDict):
    """What was benchmarked, for the JSON: the model file and the data dir (or that they were --tiny's)."""

    model: str
    data: str


@dataclass
class Subject:
    """An ST model (eval mode), its file's dict, and the data dir whose vocabularies it was trained with."""

    model_path: Path
    data: Path
    model: SateModel
    meta: ModelFile
    src: Vocabulary
    tgt: Vocabulary
    tiny: bool = False
    _datasets: dict[str, SpeechDataset] = field(default_factory=dict, repr=False)

    def dataset(self, split: str) -> SpeechDataset:
        """A split with global CMVN, as `sate evaluate` reads it (loaded once)."""
        if split not in self._datasets:
            manifest = self.data / f"{split}.jsonl"
            require_file(manifest, "a manifest", missing_split(manifest, f"{manifest} is missing (--split {split})"))
            self._datasets[split] = SpeechDataset.from_data_dir(self.data, split, self.src, self.tgt,
                                                                cmvn=self.data / layout.CMVN)
        return self._datasets[split]

    def describe(self) -> SubjectInfo:
        if self.tiny:
            return SubjectInfo(model="tiny (--tiny)", data="a temporary synth corpus (--tiny)")
        return SubjectInfo(model=str(self.model_path), data=str(self.data))


def load_subject(model_path: Path, data: Path, tiny: bool = False) -> Subject:
    """Read an ST model file and check that `data` has the target vocabulary it was trained with."""
    model, meta = model_from_file(model_path)
    if model.task != "st":
        raise SateError(f"{model_path}: a {model.task} model; the benchmark needs an st model")
    src, tgt = Vocabulary.load(data, "src"), Vocabulary.load(data, "tgt")
    if tgt.tokens != meta["tgt_tokens"] or src.tokens != meta["src_tokens"]:
        raise SateError(f"{data}: its token lists differ from the ones {model_path} was trained with")
    return Subject(model_path, data, model, meta, src, tgt, tiny)


def fit(model: SateModel, batch: Batch, steps: int, log: bool = True) -> SateModel:
    """Full-batch Adam (lr 1e-2) on one batch: a tiny model memorises it in a few hundred steps."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    start = time.perf_counter()
    for step in range(steps):
        optimizer.zero_grad()
        loss = model(batch)["loss"]
        loss.backward()
        optimizer.step()
        if log and (step % 50 == 0 or step == steps - 1):
            print(f"tiny model: step {step + 1}/{steps}, loss {float(loss.detach()):.1f}, "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
    return model.eval()


def build_tiny(work: Path) -> Subject:
    """Voice a small synth corpus into `work`, prepare it and fit a tiny ST model to its train split."""
    from sate.models import build_model  # heavy: ESPnet
    from sate.models.model_file import save_model_file  # heavy: torch

    pairs, left = [], dict(TINY_SPLITS)
    for en, de in synth.read_ding_pairs(synth.fetch_ding(synth.default_cache_dir())):
        split = synth.split_of(en)
        if left[split] > 0:
            pairs.append((en, de))
            left[split] -= 1
    synth.build_corpus(work / "corpus", pairs, train_size=TINY_SPLITS["train"], seed=0, jobs=2, progress=False)
    data = work / "data"
    for argv in (["prep", "--mustc-root", str(work / "corpus"), "--out", str(data)],
                 ["features", "--data", str(data), "--jobs", "2"],
                 ["vocab", "--data", str(data), "--src-size", "100", "--tgt-size", "150"]):
        if sate(argv) != 0:
            raise SateError(f"sate {' '.join(argv)} failed")
    src, tgt = Vocabulary.load(data, "src"), Vocabulary.load(data, "tgt")
    train = SpeechDataset.from_data_dir(data, "train", src, tgt, cmvn=data / layout.CMVN)
    torch.manual_seed(0)
    model = fit(build_model("st", TINY_MODEL, len(src), len(tgt)), collate(list(train)), TINY_STEPS)
    model_file = work / layout.MODEL
    save_model_file(model_file, model, src.tokens, tgt.tokens)
    return load_subject(model_file, data, tiny=True)
