"""`sate config`: every key of a training config with its default and a comment, or what a config file resolves to.

`sate config --task st` prints every key of an ST training config with its default and its one line of help,
both read from the typed sections (`sate.train.schema`, `sate.models.config`); `sate config --config
conf/synth/st.yaml` prints what that file resolves to, after the checks `sate train` makes; with `--get
model.loss.mt_text_weight` only that key's resolved value, so that a recipe can ask a config what it does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from sate.config import ConfigOption, dump_flow
from sate.data.features import SPEED_SPLIT
from sate.data.manifest import TRAIN_SPLIT
from sate.errors import SateError, one_line, shell_word
from sate.models.config import model_help, resolve_in_file, task_defaults
from sate.settings import helps
from sate.targets import read_name
from sate.train.schema import (
    WER_MONITOR_ADVICE,
    TrainingConfig,
    budget_notes,
    speech_side_only,
    trained_twice,
    untrained_output,
    untrained_wer_monitor,
)
from sate.train.trainer import checked_config

COMMENT_COLUMN = 40


def render(config: Mapping[str, object], comments: Mapping[str, str], prefix: str = "", indent: int = 0) -> list[str]:
    """YAML lines of `config`, each key followed by its comment (looked up by dotted path) when there is one."""
    lines = []
    for key, value in config.items():
        path = f"{prefix}{key}"
        head = " " * indent + f"{key}:"
        nested = isinstance(value, Mapping) and value
        text = head if nested else f"{head} {dump_flow(value)}"
        note = comments.get(path)
        lines.append(f"{text.ljust(COMMENT_COLUMN)}  # {note}" if note else text)
        if nested:
            lines += render(value, comments, f"{path}.", indent + 2)
    return lines


def resolved(path: Path, overrides: list[str], init_from: list[str]) -> tuple[TrainingConfig, dict[str, object]]:
    """The training YAML at `path` merged with the defaults and checked, and the same with the model section resolved,
    as dicts."""
    config = checked_config(path, overrides, init_from, need_data=False)
    return config, {**config.to_dict(), "model": resolve_in_file(config.task, config.model, path).to_dict()}


def get(config: Mapping[str, object], key: str, path: Path) -> str:
    """One resolved value by dotted key, as a YAML scalar (a section as a YAML flow mapping)."""
    value: object = config
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            # the path quoted as a shell word: `sate config --config my conf.yaml`, copied, named two files; a
            # config read from a pipe (`<(...)`, /dev/fd/63) is gone once read: its task's keys instead
            lister = f"--config {shell_word(str(path))}` lists them" if path.is_file() else \
                f"--task {config.get('task')}` lists its task's keys"
            raise SateError(f"{path}: no key {key!r} in the resolved config (`sate config {lister})")
        value = value[part]
    return dump_flow(value)


def describe(task: str | None, path: Path | None, overrides: list[str], init_from: list[str]) -> str:
    """The training config of `task` with defaults (or of the file at `path`, merged and checked), commented."""
    if path is not None:
        config, shown = resolved(path, overrides, init_from)
        for note in budget_notes(config):  # as `sate train` notes them beside its parameter counts
            print(f"note: {note}", file=sys.stderr)
        twice = trained_twice(shown["data"]["train"])  # type: ignore[index]
        if twice is not None:  # a fresh `sate train` refuses it; the snapshot of a run started so is shown
            print(f"note: {twice}; `sate train` refuses it for a new run (give {SPEED_SPLIT} in {TRAIN_SPLIT}'s "
                  "place) and resumes a run that began so", file=sys.stderr)
        untrained = untrained_wer_monitor(str(shown["task"]), shown["model"],  # type: ignore[arg-type]
                                          shown["trainer"]["monitor"])  # type: ignore[index]
        if untrained is not None:  # as trained_twice: a fresh `sate train` refuses it, a run begun so resumes
            print(f"note: {untrained}; `sate train` refuses it for a new run ({WER_MONITOR_ADVICE}) and resumes a "
                  "run that began so", file=sys.stderr)
        deaf = untrained_output(str(shown["task"]), shown["model"], config.init)  # type: ignore[arg-type]
        if deaf is not None:  # the advice after the verdict: its own parentheses nested in one (review30c)
            print(f"note: {deaf.why}; `sate train` refuses it for a new run and resumes a run that began so; for a "
                  f"new run, {deaf.advice}", file=sys.stderr)
        speech = speech_side_only(str(shown["task"]), shown["model"], config.init)  # type: ignore[arg-type]
        if speech is not None:
            print(f"note: {speech}", file=sys.stderr)
        title = f"# {one_line(str(path))}, merged with the defaults and checked: what `sate train` would use"
    else:
        shown = {**TrainingConfig().to_dict(), "task": task, "model": task_defaults(task)}
        title = f"# every key of the {task} training config with its default (a config file names what it changes)"
    comments = {**helps(TrainingConfig), **{f"model.{k}": v for k, v in model_help().items()}}
    return "\n".join([title, *render(shown, comments)]) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--task", choices=["asr", "mt", "st"], help="print every key of this task's training config "
                      "with its default and what it does")
    what.add_argument("--config", type=read_name, action=ConfigOption,
                      help="print this training YAML merged with the defaults, after the same checks `sate train` "
                           "makes")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="with --config: override a key as `sate train --set` does (repeatable)")
    parser.add_argument("--init-from", action="append", default=[], metavar="asr=PATH|mt=PATH",
                        help="with --config: fill init: and the teachers as `sate train --init-from` does")
    parser.add_argument("--get", metavar="KEY", help="with --config: print only this dotted key's resolved value, "
                        "e.g. model.loss.mt_text_weight")


def run(args: argparse.Namespace) -> int:
    if (args.overrides or args.init_from or args.get is not None) and args.config is None:
        raise SateError("--set, --init-from and --get need --config (they change or read a config file's values)")
    if args.get is not None:
        print(get(resolved(args.config, args.overrides, args.init_from)[1], args.get, args.config))
        return 0
    sys.stdout.write(describe(args.task, args.config, args.overrides, args.init_from))
    return 0
