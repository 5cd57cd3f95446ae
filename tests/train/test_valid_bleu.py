"""The greedy BLEU of validation: `trainer.valid_bleu_utts` is the split's first utterances, in its own order."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import sacrebleu

from sate.data.manifest import read_manifest
from sate.train.trainer import load_training_config, train


@pytest.mark.slow  # 6 s: one update and a validation of each task
@pytest.mark.parametrize("task", ["st", "mt"])
def test_valid_bleu_scores_the_splits_first_utterances_not_its_shortest(
        tmp_path: Path, make_config: Callable[..., Path], prepared_data: Path, task: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # validation batches come shortest first: the first batches' items were the shortest utterances (the 500
    # shortest of MuST-C dev's 1,423 chose conf/mustc/st.yaml's best checkpoints), where docs/training.md says the first
    scored: list[list[str]] = []
    real = sacrebleu.corpus_bleu

    def spy(hyps: list[str], refs: list[list[str]], *args: object, **kwargs: object) -> object:
        scored.append(refs[0])
        return real(hyps, refs, *args, **kwargs)

    monkeypatch.setattr(sacrebleu, "corpus_bleu", spy)
    rows = read_manifest(prepared_data / "dev.jsonl")
    frames = [row["n_frames"] for row in rows]
    assert sorted(frames)[:2] != frames[:2]  # the fixture tells the two apart
    config = load_training_config(make_config(tmp_path, task, prepared_data), ["trainer.max_steps=1",
                                                                                "trainer.valid_bleu_utts=2"])
    train(config, tmp_path / "exp")
    assert len(scored) == 1 and len(scored[0]) == 2
    firsts = {row["tgt"].split()[0] for row in rows[:2]}  # refs are decoded from the target ids: first words
    assert {ref.split()[0] for ref in scored[0]} == firsts


DDP_BLEU = """
import sys
from lightning.pytorch.strategies import DDPStrategy
from sate.train.trainer import load_training_config, train

reduce = DDPStrategy.reduce

def counted(self, *args, **kwargs):  # each rank's collectives, in order
    with open(f"{sys.argv[2]}/reduces_rank{self.global_rank}.txt", "a") as out:
        out.write(f"{self.lightning_module.global_step}\\n")
    return reduce(self, *args, **kwargs)

DDPStrategy.reduce = counted
# dev's five items make two validation batches at 700 frames, one a rank: the first utterance is in rank 0's alone
config = load_training_config(sys.argv[1], ["trainer.valid_bleu_utts=1", "batch.per_device=700", "batch.global=1400"])
train(config, sys.argv[2], accelerator="cpu", devices=2)
"""


@pytest.mark.slow  # 20 s: two processes that train
def test_every_rank_makes_the_bleus_reduce_though_its_batches_hold_none_of_the_first_utterances(
        tmp_path: Path, make_config: Callable[..., Path], prepared_data: Path) -> None:
    # the first utterance is in one rank's batches alone: a rank that scored nothing skipped the BLEU's reduce, a
    # collective, and the other's reduce was paired with whatever collective came next (or waited for ever)
    script = tmp_path / "ddp_bleu.py"
    script.write_text(DDP_BLEU)
    exp = tmp_path / "exp"
    exp.mkdir()
    done = subprocess.run([sys.executable, str(script), str(make_config(tmp_path, "st", prepared_data)), str(exp)],
                          capture_output=True, text=True, timeout=180, env={**os.environ, "PL_DISABLE_FORK": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = list(csv.DictReader((exp / "logs" / "version_0" / "metrics.csv").open()))
    assert [row["valid/bleu"] for row in rows if row.get("valid/bleu")]
    # the rank that scored nothing left out the BLEU's reduce, so the other's was paired with its next collective
    assert (exp / "reduces_rank0.txt").read_text() == (exp / "reduces_rank1.txt").read_text()
