"""Typed configuration: frozen dataclasses whose fields carry their default, help and range, and one reader.

A config section is a frozen dataclass deriving from `Section`; each field is declared once with
`setting(default, help, check)`, a nested section with `section(cls, help)`. Building a section checks
every field's range (a `Section` built in code is checked as one read from YAML is). `read` turns a YAML
mapping into a section: an unknown key is named with the known ones, a value of the wrong type or out of
range is named with what it must be, each one `SateError` prefixed with where the values came from (a file
name, ``model config:``). `to_dict` gives back the plain dict that snapshots, checkpoints and model files
store, so a file written before these classes existed reads into them unchanged.

Torch-free: `sate config` and the commands' ``--help`` read these without importing a model.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any, TypeVar

from sate.errors import SateError, shown
from sate.numbers import is_int64, is_number

# (test, what a value must be): the test is given a value of the field's type.
Check = tuple[Callable[[Any], bool], str]
S = TypeVar("S", bound="Section")


class Invalid(SateError):
    """A value a section refuses: `key` (dotted, relative to the section) and what is wrong with it."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key} {problem}")
        self.key, self.problem = key, problem


def out_of_range(key: str, wanted: str, value: object) -> Invalid:
    return Invalid(key, f"must be {wanted}, got {shown(value)}")


class _Choice:
    """The test of `one_of`, known by its type: a value of another type is told the choices, not the type."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def __call__(self, value: object) -> bool:
        return value in self.names


def one_of(choices: Iterable[str]) -> Check:
    """A choice among `choices` (a tuple, or a registry whose keys are the names)."""
    names = tuple(choices)
    return (_Choice(names), f"one of {', '.join(names)}")


def at_least(low: float, wanted: str | None = None) -> Check:
    return (lambda v: v >= low, wanted or f"at least {low:g}")


POSITIVE: Check = (lambda v: v > 0, "positive")
FRACTION: Check = (lambda v: 0.0 <= v <= 1.0, "in [0, 1]")
RATE: Check = (lambda v: 0.0 <= v < 1.0, "in [0, 1)")  # dropout, label smoothing


def nameable(value: object) -> bool:
    """A path the file system can name: not empty, no NUL byte, each name at most 255 bytes and 4,095 in all (Linux's
    NAME_MAX and PATH_MAX). A 100,000-character data.dir was the OS's "File name too long", naming neither file nor
    key; a NUL byte or a lone surrogate in an init.*.path or data.mt_text was Python's traceback ("embedded null
    byte", "surrogates not allowed") once the model was built."""
    if not isinstance(value, str) or value == "":
        return False
    try:
        raw = os.fsencode(value)
    except UnicodeError:  # a lone surrogate no file system encoding writes
        return False
    return b"\0" not in raw and len(raw) < 4096 and all(len(part) <= 255 for part in raw.split(b"/"))


PATH: Check = (nameable, "a path (each name at most 255 bytes, 4,095 bytes in all; no NUL byte or lone "
                         "surrogate)")


def setting(default: Any, help: str, check: Check | None = None, key: str | None = None) -> Any:  # noqa: A002
    """A field with its default, its one line for `sate config` and its range (None: any value of its type).

    `key` is its name in YAML where that is no Python name (``global``).
    """
    metadata = {"help": help, "check": check, "key": key}
    if isinstance(default, list | dict):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def section(cls: type[Section], help: str) -> Any:  # noqa: A002
    """A nested section field, defaulting to `cls` with its own defaults."""
    return dataclasses.field(default_factory=cls, metadata={"help": help, "check": None})


@dataclasses.dataclass(frozen=True)
class Section:
    """Base of every config section: building one checks each field's range, then `validate`."""

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for f in dataclasses.fields(self):
            check = f.metadata.get("check")
            value = getattr(self, f.name)
            if isinstance(value, float) and float in _kinds(hints[f.name])[0] and not math.isfinite(value):
                raise Invalid(key_of(f), f"must be a finite number, got {shown(value)}")
            if check is not None and value is not None and not check[0](value):
                raise out_of_range(key_of(f), check[1], value)
            if isinstance(value, int) and not isinstance(value, bool) and not is_int64(value):  # 10**30 unbounded
                # by torch; a key of its own range says that one: batch.per_device was "from -2**63" (hand27t)
                wanted = "an integer from -2**63 to 2**63-1" if check is None else f"{check[1]} and at most 2**63-1"
                raise Invalid(key_of(f), f"must be {wanted}, got {shown(value)}")
        self.validate()

    def validate(self) -> None:
        """Checks across fields; raise `Invalid` naming the key."""

    def to_dict(self) -> dict[str, object]:
        """The plain dict a YAML file, a checkpoint or a model file stores."""
        return {key_of(f): _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


def key_of(f: dataclasses.Field) -> str:
    """A field's key in YAML: its name, or the `key` it was declared with."""
    return f.metadata.get("key") or f.name


def _plain(value: object) -> object:
    return value.to_dict() if isinstance(value, Section) else copy.deepcopy(value)


# --------------------------------------------------------------------------------------------------------------
# Field types, read from the annotations: int, float, bool, str, list, dict, a Section, their unions with None.

_NAMES = {int: "an integer", float: "a finite number", bool: "true or false", str: "a string", list: "a list",
          dict: "a mapping"}


@cache
def _hints(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls)


def _kinds(annotation: Any) -> tuple[tuple[type, ...], bool]:
    """The plain types a field takes and whether it may be null: ``str | list[str] | None`` -> ((str, list), True)."""
    args = typing.get_args(annotation) if isinstance(annotation, types.UnionType) or \
        typing.get_origin(annotation) is typing.Union else (annotation,)
    kinds = tuple(dict.fromkeys(dict if typing.is_typeddict(a) else typing.get_origin(a) or a  # a TypedDict: a dict
                                for a in args if a is not type(None)))
    return kinds, type(None) in args


def _typed(key: str, value: object, annotation: Any, check: Check | None = None) -> object:
    """`value` as the field's type (an int is a float where a float is due), or `Invalid`: for a key of fixed
    choices, naming them (`trainer.precision: 16`, Lightning's spelling, was "must be a string", and `'16'`, that
    advice followed, refused again for its choices; 25th hostile pass)."""
    kinds, nullable = _kinds(annotation)
    if value is None and nullable:
        return None
    for kind in kinds:
        if kind is float and is_number(value):
            return float(value)
        if kind is int and isinstance(value, int) and not isinstance(value, bool):  # its size: `Section`
            return value
        if kind in (bool, str, list, dict) and isinstance(value, kind) and isinstance(value, bool) == (kind is bool):
            return _float_items(value, annotation) if kind is list else value
    wanted = " or ".join(_NAMES.get(k, k.__name__) for k in kinds) + (" or null" if nullable else "")
    if check is not None and isinstance(check[0], _Choice):
        wanted = check[1] + (" or null" if nullable else "")
    got = yaml_shown(value)
    if isinstance(value, bool) and str in kinds and not isinstance(check and check[0], _Choice):
        got += BOOLEAN_WORD  # not for a key of choices: none is such a word, and the quoted word is refused again
    raise Invalid(key, f"must be {wanted}, got {got}")


def _float_items(value: list, annotation: Any) -> list:
    """A list of floats (``list[float]``) with its integers as floats, as a float key takes an integer: `optim.betas:
    [0, 0.98]` passed the config and was torch's "betas must be either both floats or both Tensors" traceback once
    training had begun (thirty-second hostile pass). Booleans and other values are left to the key's check."""
    lists = [a for a in (typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,))
             if typing.get_origin(a) is list]
    if not lists or typing.get_args(lists[0]) != (float,):
        return value
    return [float(item) if isinstance(item, int) and not isinstance(item, bool) else item for item in value]


# Where a key takes text and a file gave a boolean: a file's `train: no` was read as false.
BOOLEAN_WORD = " (YAML reads an unquoted yes, no, on or off as a boolean: quote the word)"


def yaml_shown(value: object) -> str:
    """A value as YAML spells it, shortened as `shown` does: a file's `layers: null` was "got None", and `train: no`
    "got False" (25th hostile pass's leftovers)."""
    return _yaml_key(value) if value is None or isinstance(value, bool) else shown(value)


def is_section(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Section)


# --------------------------------------------------------------------------------------------------------------
# The reader.


def _yaml_key(key: object) -> str:
    """A key as YAML spells it: a `null:` (or `~:`) key was named 'None', and `yes:` or `true:` 'True'."""
    if key is None:
        return "null"
    return str(key).lower() if isinstance(key, bool) else str(key)


def merge(cls: type[Section], given: Mapping[str, object], noun: str = "config key",
          path: str = "") -> dict[str, object]:
    """`given` over the defaults of `cls`, every key known and of its type; ranges are checked by `build`.

    `path` is the dotted prefix of keys in messages, `noun` what a key is called (``decoding option``).
    """
    if not isinstance(given, Mapping):
        raise Invalid(path.removesuffix(".") or "the section", f"must be a mapping, got {yaml_shown(given)}")
    fields = dataclasses.fields(cls)
    names = [key_of(f) for f in fields]
    for key in given:
        if key not in names:
            raise SateError(f"unknown {noun} {shown(path + _yaml_key(key))} (known here: {', '.join(sorted(names))})")
    merged: dict[str, object] = {}
    hints = _hints(cls)
    defaults = cls()
    for f, key in zip(fields, names, strict=True):
        annotation = hints[f.name]
        if is_section(annotation):
            # a null section (a file's bare `trainer:`, every key under it commented out; `--set trainer=null`) is
            # the defaults, as an absent one is: alone, it was "trainer must be a mapping, got null" (twenty-eighth
            # hostile pass, review)
            part = given.get(key)
            merged[key] = merge(annotation, {} if part is None else part, noun, f"{path}{key}.")
        elif key in given and given[key] is None and annotation is dict:  # `model:` and `init:`, likewise
            merged[key] = {}
        elif key in given:
            merged[key] = copy.deepcopy(_typed(path + key, given[key], annotation, f.metadata.get("check")))
        else:
            merged[key] = _plain(getattr(defaults, f.name))
    return merged


def build(cls: type[S], values: Mapping[str, object], path: str = "") -> S:
    """The section of `cls` from merged `values` (as `merge` gives them): each range checked, inner first."""
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        key = key_of(f)
        value = values[key]
        if is_section(hints[f.name]):
            value = build(hints[f.name], value, f"{path}{key}.")  # type: ignore[arg-type]
        kwargs[f.name] = value
    try:
        return cls(**kwargs)
    except Invalid as err:
        raise Invalid(path + err.key, err.problem) from None


def read(cls: type[S], given: Mapping[str, object] | None, prefix: str = "", noun: str = "config key") -> S:
    """A section from a YAML mapping: `merge` then `build`; every error is one line starting with `prefix`."""
    try:
        return build(cls, merge(cls, given or {}, noun))
    except SateError as err:
        raise SateError(f"{prefix}{err}") from None


def helps(cls: type[Section], prefix: str = "") -> dict[str, str]:
    """dotted key -> its one line of help, for every field of `cls` and its sections."""
    out: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        out[prefix + key_of(f)] = f.metadata["help"]
        if is_section(_hints(cls)[f.name]):
            out |= helps(_hints(cls)[f.name], f"{prefix}{key_of(f)}.")
    return out
