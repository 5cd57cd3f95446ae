"""A batch cap below the longest item of a split: one line naming the split, with advice that can be followed."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from sate.errors import SateError
from sate.train.trainer import load_training_config, train


@pytest.mark.parametrize(("task", "settings", "message"), [
    ("asr", ["batch.per_device=100"], r"batch.per_device \(100 frames\) is smaller than the longest item of "
     r"data.train \(train\), \d+ frames; raise it or drop the longer segments with `sate prep --max-duration` \(1 s "
     r"or less\)"),
    # the fixture's dev items are shorter than its longest train item: train read as the validation split
    ("asr", ["batch.per_device=300", "batch.global=300", "data.train=dev", "data.valid=train"],
     r"batch.per_device \(300 frames\) is smaller than the longest item of data.valid \(train\), \d+ frames; raise it"),
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
