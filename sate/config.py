"""YAML files and command-line overrides: read, written and changed as plain nested dicts.

`--set optim.lr=1e-3` overrides one key; the value is parsed as YAML, so numbers, booleans, lists and
`null` work. What the keys mean, their defaults and ranges live in the typed sections (`sate.settings`,
`sate.train.schema`, `sate.models.config`), which read these dicts; the `sate config` command that prints
them is `sate.train.show_config`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

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


def read_yaml(path: str | Path) -> dict[str, object]:
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
