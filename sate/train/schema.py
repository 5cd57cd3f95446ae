"""The training config's schema: every key with its default, a comment, its type and its range.

`model` is checked by `sate.models.config` and `init` by `sate.models.pretrained`; every other section is
checked here the same way: a key the defaults do not know, a value of the wrong type or out of range is
one `SateError` naming the key, so a typo or a `--set trainer.max_epochs=ten` never reaches Lightning.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from sate.errors import SateError
from sate.models.config import TASKS

# Lightning precision strings `trainer.precision` may name ("auto" is resolved by sate.train.trainer).
PRECISIONS = ("auto", "32-true", "bf16-mixed", "16-mixed", "bf16-true", "16-true", "64-true")

# Every key a training config may have; `model` is checked by sate.models.config, `init` by sate.models.pretrained.
DEFAULTS: dict = {
    "task": "st",
    "seed": 0,
    "data": {"dir": None, "train": "train", "valid": "dev", "mt_text": None, "mt_max_tokens": 256, "mt_max_ratio": 9.0,
             "mt_dedup": True, "features": "fbank", "cmvn": "global", "num_workers": 2},
    "batch": {"per_device": 20000, "global": 20000},
    "specaug": {"enabled": True, "start_step": 0, "freq_mask_width": 27, "num_freq_masks": 1,
                "time_mask_width": 100, "num_time_masks": 1, "max_time_ratio": 0.2},
    "model": {},
    "init": {},
    "optim": {"lr": 2e-3, "warmup_steps": 10000, "betas": [0.9, 0.98], "weight_decay": 0.0, "clip_norm": 10.0},
    "trainer": {
        "max_epochs": 50,
        "max_steps": -1,
        "max_minutes": None,
        "patience": 0,
        "monitor": "valid/loss",
        "monitor_mode": "min",
        "keep_last": 10,
        "keep_best": 10,
        "checkpoint_every_minutes": None,
        "checkpoint_every_steps": 0,
        "valid_bleu_utts": 200,
        "valid_max_len_ratio": 1.5,
        "nan_patience": 20,
        "oom_patience": 5,
        "precision": "auto",
        "log_every_n_steps": 50,
    },
}
# One line per key for `sate config`; a test checks that every key of DEFAULTS has one.
HELP: dict[str, str] = {
    "task": "asr (acoustic encoder + CTC) | mt (textual encoder + decoder) | st (SATE or the E2E baseline)",
    "seed": "seeds weights, batch order, SpecAugment and dropout",
    "data": "the prepared data",
    "data.dir": "a `sate prep` output dir with fbank/, cmvn.json, spm_*.model, tokens_*.txt",
    "data.train": "training split (a manifest DATA/<split>.jsonl), or a list of splits read as one "
                  "(e.g. [train, train-clean-100]: extra ASR corpora)",
    "data.valid": "validation split",
    "data.mt_text": "mt only: [[EN_FILE, TGT_FILE], ...] parallel text (plain or gzip, any size, streamed into "
                    "DATA/mt_bin once) to train on instead of the train manifest",
    "data.mt_max_tokens": "mt_text: pairs with a side longer than this many tokens are dropped",
    "data.mt_max_ratio": "mt_text: pairs with one side more than this many times longer (in tokens) are dropped",
    "data.mt_dedup": "mt_text: a pair seen before (the same two lines) is dropped",
    "data.features": "asr, st: fbank (stored by sate features) | waveform (16 kHz samples read on the fly, for "
                     "acoustic.type hf_*; lengths and batch sizes in samples)",
    "data.cmvn": "fbank normalisation: global (train statistics) | utterance | none (waveform: none)",
    "data.num_workers": "data loader processes (0 loads in the training process)",
    "batch": "batch size, in frames (asr, st; samples with data.features waveform) or target tokens (mt)",
    "batch.per_device": "what one device holds in one forward pass",
    "batch.global": "what one update sees over all devices; accumulation = global / (per_device x devices)",
    "specaug": "SpecAugment on the features (asr, st)",
    "specaug.enabled": "false switches it off",
    "specaug.start_step": "the update from which it applies (an untrained CTC model learns faster without it)",
    "specaug.freq_mask_width": "F: the widest frequency mask, in mel bins",
    "specaug.num_freq_masks": "frequency masks per utterance",
    "specaug.time_mask_width": "T: the widest time mask, in frames",
    "specaug.num_time_masks": "time masks per utterance",
    "specaug.max_time_ratio": "a time mask covers at most this share of its utterance",
    "model": "the architecture and the loss: see the model keys below (sate config --task TASK)",
    "init": "components loaded from checkpoints, e.g. {acoustic: {path: exp/asr/model.pt}}; "
            "or sate train --init-from asr=PATH --init-from mt=PATH",
    "optim": "Adam with a linear warm-up and inverse square-root decay",
    "optim.lr": "peak learning rate, reached at the end of the warm-up",
    "optim.warmup_steps": "updates of linear warm-up",
    "optim.betas": "Adam's beta1 and beta2",
    "optim.weight_decay": "L2 penalty added to the gradients by Adam (not decoupled)",
    "optim.clip_norm": "gradient norm clipping (0: none)",
    "trainer": "the training loop",
    "trainer.max_epochs": "stop after this many epochs",
    "trainer.max_steps": "stop after this many updates (-1: no limit)",
    "trainer.max_minutes": "stop after this much wall-clock time (null: no limit)",
    "trainer.patience": "stop after this many validations without improving `monitor` (0: never)",
    "trainer.monitor": "the validation metric for best-N checkpoints and early stopping",
    "trainer.monitor_mode": "min or max: which way `monitor` improves",
    "trainer.keep_last": "the last N epoch checkpoints kept (sate average --last N)",
    "trainer.keep_best": "the best N checkpoints by `monitor` kept (sate average --best N)",
    "trainer.checkpoint_every_minutes": "also write last.ckpt inside an epoch this often (null: at epoch ends only); "
                                        "a resumed run continues from the exact batch",
    "trainer.checkpoint_every_steps": "also write last.ckpt inside an epoch every N updates (0: never)",
    "trainer.valid_bleu_utts": "validation utterances decoded greedily for BLEU (mt, st)",
    "trainer.valid_max_len_ratio": "greedy validation decoding stops at this ratio of the source length",
    "trainer.nan_patience": "stop after this many batches in a row with a non-finite loss (each is skipped)",
    "trainer.oom_patience": "stop after this many updates in a row with an out-of-memory error (each is skipped)",
    "trainer.precision": "auto (bf16-mixed on GPUs with bf16, 16-mixed on other GPUs, 32 on the CPU) | "
                         "32-true | bf16-mixed | 16-mixed | bf16-true | 16-true | 64-true",
    "trainer.log_every_n_steps": "how often training losses go to logs/ and tensorboard/",
}

Check = tuple[Callable[[Any], bool], str]


def _in(choices: tuple[str, ...]) -> Check:
    return (lambda v: v in choices, f"one of {', '.join(choices)}")


def _at_least(low: float) -> Check:
    return (lambda v: v >= low, f"at least {low:g}")


_POSITIVE: Check = (lambda v: v > 0, "positive")
_FRACTION: Check = (lambda v: 0.0 <= v <= 1.0, "in [0, 1]")

# The type of a key whose default is None (such a key may also be null).
NULLABLE_TYPES: dict[str, type] = {"data.dir": str, "data.mt_text": list, "trainer.max_minutes": float,
                                   "trainer.checkpoint_every_minutes": float}
# Keys that take either of two types: (the types, what to call them in a message).
EITHER_TYPES: dict[str, tuple[tuple[type, type], str]] = {"data.train": ((str, list), "a string or a list")}


def train_splits(value: str | list[str]) -> list[str]:
    """`data.train` as a list: one split name, or several (e.g. MuST-C's train and extra ASR corpora)."""
    return [value] if isinstance(value, str) else list(value)


def _split_names(value: str | list) -> bool:
    """One non-empty split name, or a non-empty list of distinct ones."""
    names = train_splits(value)
    return bool(names) and all(isinstance(n, str) and n != "" for n in names) and len(set(names)) == len(names)


# dotted key -> (test, what it must be). Types come from DEFAULTS (or NULLABLE_TYPES); a float is never nan or inf.
CHECKS: dict[str, Check] = {
    "task": _in(TASKS),
    "seed": _at_least(0),
    "data.dir": (lambda v: v is None or v != "", "a directory"),
    "data.train": (_split_names, "a split name or a non-empty list of distinct split names"),
    "data.valid": (lambda v: v != "", "a split name"),
    "data.mt_text": (lambda v: v is None or (len(v) > 0 and all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) and p for p in pair) for pair in v)),
                     "null or a list of file pairs [[EN, TGT], ...]"),
    "data.mt_max_tokens": _at_least(1),
    "data.mt_max_ratio": _at_least(1),
    "data.features": _in(("fbank", "waveform")),
    "data.cmvn": _in(("global", "utterance", "none")),
    "data.num_workers": _at_least(0),
    "batch.per_device": _POSITIVE,
    "batch.global": _POSITIVE,
    "specaug.start_step": _at_least(0),
    "specaug.freq_mask_width": _at_least(0),
    "specaug.num_freq_masks": _at_least(0),
    "specaug.time_mask_width": _at_least(0),
    "specaug.num_time_masks": _at_least(0),
    "specaug.max_time_ratio": _FRACTION,
    "optim.lr": _POSITIVE,
    "optim.warmup_steps": _at_least(0),
    "optim.betas": (lambda v: len(v) == 2 and all(_number(b) and 0.0 <= b < 1.0 for b in v),
                    "two numbers in [0, 1), e.g. [0.9, 0.98]"),
    "optim.weight_decay": _at_least(0),
    "optim.clip_norm": _at_least(0),
    "trainer.max_epochs": _at_least(1),
    "trainer.max_steps": (lambda v: v == -1 or v >= 1, "-1 (no limit) or at least 1"),
    "trainer.max_minutes": (lambda v: v is None or v > 0, "null or positive"),
    "trainer.patience": _at_least(0),
    "trainer.monitor": (lambda v: v != "", "a metric name such as valid/loss"),
    "trainer.monitor_mode": _in(("min", "max")),
    "trainer.keep_last": _at_least(1),
    "trainer.keep_best": _at_least(0),
    "trainer.checkpoint_every_minutes": (lambda v: v is None or v > 0, "null or positive"),
    "trainer.checkpoint_every_steps": _at_least(0),
    "trainer.valid_bleu_utts": _at_least(0),
    "trainer.valid_max_len_ratio": _POSITIVE,
    "trainer.nan_patience": _at_least(1),
    "trainer.oom_patience": _at_least(1),
    "trainer.precision": _in(PRECISIONS),
    "trainer.log_every_n_steps": _at_least(1),
}
UNCHECKED_SECTIONS = ("model", "init")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _typed(key: str, value: Any, default: Any, where: str) -> Any:
    """`value` as the type of `default` (an int is a float where a float is due), or a `SateError`."""
    if key in EITHER_TYPES:
        types, kind = EITHER_TYPES[key]
        if not isinstance(value, types):
            raise SateError(f"{where}{key} must be {kind}, got {value!r}")
        return value
    want = NULLABLE_TYPES.get(key, type(default))
    if value is None and (default is None or key in NULLABLE_TYPES):
        return None
    if want is float and _number(value):
        return float(value)
    if want in (int, float) and not _number(value) or isinstance(value, bool) != (want is bool) \
            or not isinstance(value, want):
        kind = {int: "an integer", float: "a finite number", bool: "true or false", str: "a string",
                list: "a list"}.get(want, want.__name__)
        raise SateError(f"{where}{key} must be {kind}{' or null' if key in NULLABLE_TYPES else ''}, got {value!r}")
    return value


def check_training_config(config: dict, where: str = "") -> dict:
    """`config` (merged with DEFAULTS) with every key outside model/init type- and range-checked.

    `where` prefixes messages (a file name and ": "). Ints given for float keys become floats.
    """
    checked = dict(config)
    for section, default in DEFAULTS.items():
        if section in UNCHECKED_SECTIONS:
            continue
        if isinstance(default, dict):
            checked[section] = {key: _checked(f"{section}.{key}", config[section][key], value, where)
                                for key, value in default.items()}
        else:
            checked[section] = _checked(section, config[section], default, where)
    if checked["task"] != "mt" and checked["data"]["mt_text"] is not None:
        raise SateError(f"{where}data.mt_text applies to task mt only (task is {checked['task']})")
    return checked


def _checked(key: str, value: Any, default: Any, where: str) -> Any:
    value = _typed(key, value, default, where)
    test, wanted = CHECKS.get(key, (lambda v: True, ""))
    if not test(value):
        raise SateError(f"{where}{key} must be {wanted}, got {value!r}")
    return value
