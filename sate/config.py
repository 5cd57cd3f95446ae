"""YAML configs with command-line overrides, validated against known keys: `sate config` prints them.

A config is a nested dict read from YAML. `--set optim.lr=1e-3` overrides one key; the value is
parsed as YAML, so numbers, booleans, lists and `null` work. Keys that the defaults do not know are
errors naming the key, so a typo never silently leaves a default in place.

`sate config --task st` prints every key of an ST training config with its default and a comment;
`sate config --config conf/synth/st.yaml` prints what that file resolves to.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from sate.errors import SateError
from sate.files import atomic_write_text


class _Loader(yaml.SafeLoader):
    """YAML 1.1 reads `1e-3` (no dot) as a string; researchers write learning rates that way, so accept it."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*\.?[\d_]*(?:[eE][-+]?\d+)?|\.\d[\d_]*(?:[eE][-+]?\d+)?|\.inf|\.nan)$", re.X),
    list("-+0123456789."),
)


def load_yaml_text(text: str) -> object:
    """YAML as configs and `--set` values are read: YAML 1.1, plus floats written without a dot (1e-3)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


# Sections (dotted paths) whose keys are free-form: validated by the component that reads them.
OPEN_SECTIONS = ("model", "init")


def read_yaml(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise SateError(f"config file not found: {path}")
    try:
        data = load_yaml_text(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise SateError(f"{path}{where}: invalid YAML ({getattr(err, 'problem', err)})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SateError(f"{path}: the top level must be a mapping of keys, not {type(data).__name__}")
    return data


def write_yaml(path: str | Path, data: Mapping) -> None:
    """Write atomically, so a snapshot beside checkpoints is never half-written."""
    atomic_write_text(path, yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True))


def apply_overrides(config: dict, overrides: Iterable[str]) -> dict:
    """Apply `a.b.c=value` strings (value parsed as YAML) to a copy of `config`."""
    config = copy.deepcopy(config)
    for item in overrides:
        if "=" not in item:
            raise SateError(f"--set {item!r}: expected KEY=VALUE, e.g. optim.lr=1e-3")
        key, raw = item.split("=", 1)
        try:
            value = load_yaml_text(raw)
        except yaml.YAMLError:
            raise SateError(f"--set {item!r}: the value is not valid YAML") from None
        node = config
        parts = key.strip().split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise SateError(f"--set {item!r}: {part!r} is a value, not a section")
            node = child
        node[parts[-1]] = value
    return config


def merge(defaults: Mapping, config: Mapping, where: str = "") -> dict:
    """Defaults updated by `config`; a key unknown to `defaults` is an error (except in open sections)."""
    merged = copy.deepcopy(dict(defaults))
    for key, value in config.items():
        path = f"{where}{key}"
        if key not in defaults:
            known = ", ".join(sorted(defaults)) or "none"
            raise SateError(f"unknown config key {path!r} (known here: {known})")
        if isinstance(defaults[key], dict) and path not in OPEN_SECTIONS:
            if not isinstance(value, Mapping):
                raise SateError(f"config key {path!r} must be a section (mapping), got {value!r}")
            merged[key] = merge(defaults[key], value, f"{path}.")
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def get(config: Mapping, dotted: str) -> Any:
    """`get(cfg, "optim.lr")`: a key by its dotted path, with an error naming it when absent."""
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise SateError(f"config key {dotted!r} is missing")
        node = node[part]
    return node


# ----------------------------------------------------------------------------------------------------------------
# `sate config`: every key with its default, or what a config file resolves to.

COMMENT_COLUMN = 40


def _scalar(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, allow_unicode=True).strip().removesuffix("\n...").strip()


def render(config: Mapping, comments: Mapping[str, str], prefix: str = "", indent: int = 0) -> list[str]:
    """YAML lines of `config`, each key followed by its comment (looked up by dotted path) when there is one."""
    lines = []
    for key, value in config.items():
        path = f"{prefix}{key}"
        head = " " * indent + f"{key}:"
        nested = isinstance(value, Mapping) and value
        text = head if nested else f"{head} {_scalar(value)}"
        note = comments.get(path)
        lines.append(f"{text.ljust(COMMENT_COLUMN)}  # {note}" if note else text)
        if nested:
            lines += render(value, comments, f"{path}.", indent + 2)
    return lines


def describe(task: str | None, path: Path | None, overrides: list[str], init_from: list[str]) -> str:
    """The training config of `task` with defaults (or of the file at `path`, merged and checked), commented."""
    from sate.models import config as model_config
    from sate.models.init_from import apply_init_from, parse_init_from
    from sate.train.trainer import DEFAULTS, HELP, load_training_config

    if path is not None:
        config = load_training_config(path, overrides, need_data=False)
        config = apply_init_from(config, parse_init_from(init_from))
        config["model"] = model_config.resolve_config(config["task"], config["model"])
        title = f"# {path}, merged with the defaults and checked: what `sate train` would use"
    else:
        config = copy.deepcopy(DEFAULTS)
        config["task"] = task
        config["model"] = model_config.task_defaults(task)
        title = f"# every key of the {task} training config with its default (a config file names what it changes)"
    comments = {**HELP, **{f"model.{k}": v for k, v in model_config.HELP.items()}}
    return "\n".join([title, *render(config, comments)]) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--task", choices=["asr", "mt", "st"], help="print every key of this task's training config "
                      "with its default and what it does")
    what.add_argument("--config", type=Path, help="print this training YAML merged with the defaults, after the same "
                      "checks `sate train` makes")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="with --config: override a key as `sate train --set` does (repeatable)")
    parser.add_argument("--init-from", action="append", default=[], metavar="asr=PATH|mt=PATH",
                        help="with --config: fill init: and the teachers as `sate train --init-from` does")


def run(args: argparse.Namespace) -> int:
    if (args.overrides or args.init_from) and args.config is None:
        raise SateError("--set and --init-from need --config (they change a config file's values)")
    sys.stdout.write(describe(args.task, args.config, args.overrides, args.init_from))
    return 0
