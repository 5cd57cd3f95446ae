"""A warm-up longer than the run (`sate.train.schema.short_warmup`)."""

from __future__ import annotations

from sate.settings import read
from sate.train.schema import TrainingConfig, short_warmup


def test_a_warmup_longer_than_max_steps_is_noted_with_the_share_of_the_lr_reached() -> None:
    """optim.lr is the peak the warm-up reaches at its end; `--set trainer.max_steps=2000` over the default
    10,000-update warm-up stopped at a fifth of it, without a word (twenty-eighth hostile pass). `sate train` prints
    this note beside the parameter counts (tests/train/test_schema_wer_monitor.py sees it); a warm-up within the
    budget, or no step budget, has none."""
    config = read(TrainingConfig, {"trainer": {"max_steps": 2000}, "optim": {"lr": 1e-3}})
    assert short_warmup(config) == ("optim.warmup_steps 10,000 is more than trainer.max_steps 2,000: the learning "
                                    "rate is still rising at the last update, at 20% of optim.lr 0.001, which update "
                                    "10,000 would reach")
    # rounded down, and a fraction below 1%: one decimal said "rises to 0.0%", and "100.0% ... never reaches it"
    # (review28c)
    for steps, part in ((9999, "99.9%"), (1, "1/10,000"), (99, "99/10,000"), (100, "1%")):
        note = short_warmup(read(TrainingConfig, {"trainer": {"max_steps": steps}}))
        assert note is not None and f"the last update, at {part} of optim.lr" in note, note
    for trainer, optim in (({"max_steps": 10000}, {}), ({}, {}), ({"max_steps": 5}, {"warmup_steps": 0})):
        assert short_warmup(read(TrainingConfig, {"trainer": trainer, "optim": optim})) is None
