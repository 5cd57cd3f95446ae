"""A batch cap below the longest item of a split: one line naming the split, with advice that can be followed."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from sate.cli import main
from sate.errors import SateError
from sate.train.trainer import load_training_config, train


@pytest.mark.parametrize(("task", "settings", "message"), [
    ("asr", ["batch.per_device=100"], r"batch.per_device \(100 frames\) is smaller than the longest item of "
     r"data.train \(train\), \d+ frames; raise it or drop the longer segments with `sate prep --max-duration` \(1 s "
     r"or less\)"),
    # the fixture's dev items are shorter than its longest train item: train read as the validation split
    ("asr", ["batch.per_device=300", "batch.global=300", "data.train=dev", "data.valid=train"],
     r"batch.per_device \(300 frames\) is smaller than the longest item of data.valid \(train\), \d+ frames; raise it"),
    # a training split `sate prep` keeps whole (not named train...): prep's advice, followed, changed nothing
    ("asr", ["batch.per_device=250", "batch.global=250", "data.train=dev", "data.valid=dev"],
     r"batch.per_device \(250 frames\) is smaller than the longest item of data.train \(dev\), \d+ frames; raise it, "
     r"or give data.train a split whose items are 2.5 s at most \(`sate prep --max-duration` drops rows only from "
     r"training splits, named train...\)"),
    ("mt", ["batch.per_device=5", "batch.global=5"],
     r"batch.per_device \(5 tokens\) is smaller than the longest item of data.train \(train\), \d+ tokens; raise it"),
])
def test_the_refusal_names_the_split_and_advises_sate_prep_only_where_it_drops_the_items(
        tmp_path: Path, make_config: Callable[..., Path], prepared_data: Path, task: str, settings: list[str],
        message: str) -> None:
    """It said "smaller than the longest item (427 frames); raise it or filter long items with `sate prep`", naming no
    split: `sate prep` drops training segments alone, by their seconds, so followed the advice changed nothing of a
    validation split, or of MT's transcripts and translations in tokens (thirtieth hostile pass)."""
    config = load_training_config(make_config(tmp_path, task, prepared_data), [*settings, "trainer.max_steps=1"])
    with pytest.raises(SateError) as caught:
        train(config, tmp_path / "exp")
    assert re.fullmatch(message, str(caught.value)), caught.value


@pytest.mark.slow  # prep, features and a training
def test_the_prep_advice_for_speed_copies_followed_trains(
        tmp_path: Path, make_config: Callable[..., Path], prepared_data: Path, synth_corpus: Path,
        capsys: pytest.CaptureFixture) -> None:
    """train_sp's copies at speed 0.9 are 1/0.9 longer than the row `sate prep` measures: the advice gave the cap's
    seconds, and followed (prep, features --speed-perturb) the same refusal came back (review30c). It gives the cap
    x 0.9 and says to make the speed copies again; followed, the run trains."""
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    assert main(["features", "--data", str(data), "--jobs", "1", "--speed-perturb"]) == 0
    longest = max(int(line.split('"n_frames": ')[1].split(",")[0].rstrip("}"))
                  for line in (data / "train.jsonl").read_text().splitlines())
    cap = longest + 3  # above every train row, below the 0.9 copy of the longest
    argv = ["--set", "data.train=train_sp", "--set", f"batch.per_device={cap}", "--set", f"batch.global={cap}",
            "--set", "trainer.max_steps=1"]
    capsys.readouterr()
    assert main(["train", "--config", str(make_config(tmp_path, "asr", data)), "--exp", str(tmp_path / "exp"),
                 *argv]) == 2
    err = capsys.readouterr().err
    seconds = re.search(r"`sate prep --max-duration` \(([0-9.]+) s or less: its speed copies at 0.9 are longer\) "
                        r"and `sate features --speed-perturb` again", err)
    assert seconds is not None and "smaller than the longest item of data.train (train_sp), " in err, err
    again = tmp_path / "again"
    assert main(["prep", "--mustc-root", str(synth_corpus), "--out", str(again), "--max-duration",
                 seconds.group(1)]) == 0
    assert main(["features", "--data", str(again), "--jobs", "1", "--speed-perturb"]) == 0
    for name in ("spm_src.model", "spm_tgt.model", "tokens_src.txt", "tokens_tgt.txt", "vocab.json"):
        shutil.copy(data / name, again / name)
    assert main(["train", "--config", str(make_config(tmp_path, "asr", again)), "--exp", str(tmp_path / "exp2"),
                 *argv]) == 0, capsys.readouterr().err
