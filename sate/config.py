"""YAML files and command-line overrides: read, written and changed as plain nested dicts.

`--set optim.lr=1e-3` overrides one key; the value is parsed as YAML, so numbers, booleans, lists and
`null` work. What the keys mean, their defaults and ranges live in the typed sections (`sate.settings`,
`sate.train.schema`, `sate.models.config`), which read these dicts; the `sate config` command that prints
them is `sate.train.show_config`.
"""

from __future__ import annotations

import argparse
import copy
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

from sate.errors import BIDI_CONTROLS, SateError, shown
from sate.files import SNIFF, atomic_write_text, known_kind, not_a_file, wide_text
from sate.numbers import is_digits


class SafeValues(yaml.SafeLoader):
    """PyYAML's safe loader, with a scalar it cannot turn into its value a YAML error naming the line like any other:
    a whole number too long for Python (beyond 4,300 digits), a date that does not exist (2001-02-30), ``!!int 12a``
    were ValueError tracebacks from Python's constructors, in a config, a pack's sate.yaml or a MuST-C yaml line."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> object:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as err:
            what = f"the value {shown(node.value)}" if isinstance(node, yaml.ScalarNode) else "a value"
            why = str(err).split(";")[0][:100]  # Python's own advice (raise the digit limit) is not the user's
            raise yaml.constructor.ConstructorError(None, None, f"cannot read {what}: {why}", node.start_mark) \
                from None

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """An integer as YAML 1.2 reads it where 1.1 differs: digits after a leading zero are decimal (`010` is 10,
        not octal 8); `0x` and `0b` keep their bases."""
        value = str(self.construct_scalar(node)).replace("_", "")
        digits = value.lstrip("+-")
        if len(digits) > 1 and digits[0] == "0" and is_digits(digits):
            return -int(digits) if value.startswith("-") else int(digits)
        return super().construct_yaml_int(node)

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """Merge keys (``<<``) as YAML's merge type says: of the mappings merged, the earlier one's key wins, and the
        mapping's own keys win over all. PyYAML 6.0.3 on tells a key merged twice by the identity of its Python
        string, so which one won depended on whether Python had interned it: `<<: [{l: 2}, {l: 5}]` gave 2, and
        `acoustic: {<<: [*small, *big]}` the later mapping's `layers` (twenty-seventh hostile pass)."""
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        own = [(key_node, value_node) for key_node, value_node in node.value
               if key_node.tag != "tag:yaml.org,2002:merge"]
        for key_node, _ in own:  # YAML 1.1's `=` key, as PyYAML reads it
            if key_node.tag == "tag:yaml.org,2002:value":
                key_node.tag = "tag:yaml.org,2002:str"
        # the own keys first: a merged pair they override is dropped, so a flattened mapping holds each key once and,
        # merged in turn (`top: {<<: *mid}`, mid overriding its base), gives its own value, not the one it overrode
        seen = {_merge_key(key_node) for key_node, _ in own}
        for key_node, value_node in node.value:
            if key_node.tag != "tag:yaml.org,2002:merge":
                continue
            mappings = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for mapping in mappings:
                if not isinstance(mapping, yaml.MappingNode):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"expected a mapping or list of mappings for merging, but found {mapping.id}",
                        mapping.start_mark)
                self.flatten_mapping(mapping)
                for pair in mapping.value:
                    key = _merge_key(pair[0])
                    if key not in seen:
                        seen.add(key)
                        merged.append(pair)
        node.value = merged + own


def _merge_key(key_node: yaml.Node) -> object:
    """A key as a merge tells it apart: a scalar by its tag and text (not by its Python string's identity), another
    node by itself."""
    return (key_node.tag, key_node.value) if isinstance(key_node, yaml.ScalarNode) else id(key_node)


SafeValues.add_constructor("tag:yaml.org,2002:int", SafeValues.construct_yaml_int)


# YAML 1.1's base-60 numbers: `1:30` is read as 90 and `2:30.5` as 150.5, so `--set trainer.max_epochs=2:30` trained
# 150 epochs and `--decode lenpen=1:0.5` was refused as 60.5, a value the user never wrote. YAML 1.2 dropped them;
# here they are strings, refused by the key they are given to ("must be an integer, got '2:30'").
_BASE_60 = re.compile(r"\|[^|]*\(\?::\[0-5\]\?\[0-9\]\)\+[^|]*?(?=\||\)\$)")
# YAML 1.1's octal: `010` is 8, so `--set trainer.max_epochs=010` trained 8 epochs, `nbest: 010` in a pack was refused
# as 8, and `08` (no octal) became the float 8.0. YAML 1.2 reads a leading zero as a decimal's; so does sate
# (`SafeValues.construct_yaml_int`).
_OCTAL = "|[-+]?0[0-7_]+"
SafeValues.yaml_implicit_resolvers = {
    first: [(tag, re.compile(_BASE_60.sub("", rx.pattern).replace(_OCTAL, "|[-+]?0[0-9_]+"), re.X)
             if tag.endswith((":int", ":float")) else rx)
            for tag, rx in entries]
    for first, entries in yaml.SafeLoader.yaml_implicit_resolvers.items()}


class PyYAMLValues(SafeValues):
    """YAML 1.1 as PyYAML writes it, for a file another tool dumped with PyYAML (an ESPnet `config.yaml`): its dumper
    leaves `08` plain, a string to YAML 1.1, which `SafeValues` reads as YAML 1.2 does, as the number 8, so a token
    `08` of an ESPnet token list became an int and the list was refused."""


PyYAMLValues.yaml_implicit_resolvers = yaml.SafeLoader.yaml_implicit_resolvers
PyYAMLValues.add_constructor("tag:yaml.org,2002:int", yaml.constructor.SafeConstructor.construct_yaml_int)


class _Loader(SafeValues):
    """YAML 1.1 reads `1e-3` (no dot) as a string; researchers write learning rates that way, so accept it. A key
    given twice in one mapping is refused: YAML loaders keep the last without a word, so a second `trainer:`
    section replaced the first whole. A key is read as the text it is written as: every key sate reads is a name, and
    `on:` was named "unknown config key 'true'" (YAML 1.1's boolean), `~:` as 'null' (eighteenth hostile pass)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        _keys_once(node)
        return super().construct_mapping(node, deep=deep)


def _keys_once(node: yaml.MappingNode) -> None:
    """Refuse a key given twice in ``node``, and read its keys as text; a merge key (``<<``) given twice too, and a
    key twice in a mapping it merges, which is never constructed itself: each kept one of the two without a word
    (twenty-seventh hostile pass, review)."""
    lines: dict[str, int] = {}
    for key_node, value_node in node.value:
        merge = key_node.tag == "tag:yaml.org,2002:merge"
        if merge:  # a merge key (<<) brings defaults that the mapping's own keys may override; its keys are text too
            _keys_as_text(value_node)  # ('true' for `<<: {on: 1}`)
        elif not isinstance(key_node, yaml.ScalarNode):
            continue
        else:
            key_node.tag = "tag:yaml.org,2002:str"
        key, line = ("<<" if merge else key_node.value), key_node.start_mark.line + 1
        if key in lines:
            last = "give one, merging a list (`<<: [*a, *b]`)" if merge else "YAML would keep the last without a word"
            raise yaml.constructor.ConstructorError(
                None, None, f"the key {shown(key)} is given twice (lines {lines[key]} and {line}); {last}",
                key_node.start_mark)
        lines[key] = line


def _keys_as_text(node: yaml.Node) -> None:
    """The keys a merge key (``<<``) brings, read as the text they are written as, as a mapping's own keys are
    (`_Loader.construct_mapping`): PyYAML merges them without constructing their mapping (nineteenth hostile pass)."""
    for mapping in node.value if isinstance(node, yaml.SequenceNode) else [node]:
        if isinstance(mapping, yaml.MappingNode):
            _keys_once(mapping)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    # ASCII digits only: `\d` also took other scripts' digits, which float() reads, so `--set optim.lr=1٣e-3` (an
    # Arabic-Indic three) trained at 0.013 and `.٥` was 0.5 without a word (eighteenth hostile pass)
    re.compile(r"^[-+]?(?:\d[\d_]*\.?[\d_]*(?:[eE][-+]?\d+)?|\.\d[\d_]*(?:[eE][-+]?\d+)?|\.inf|\.nan)$",
               re.X | re.ASCII),
    list("-+0123456789."),
)

# YAML 1.1's timestamps: `data.train: 2024-05-01` (a split, or a folder, named by its date) was a date, refused as
# "must be a string or a list, got datetime.date(2024, 5, 1)", Python's own words. YAML 1.2's core schema has no
# timestamps, and no key sate reads takes a date: such a value is the text it looks like (25th hostile pass).
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in entries if tag != "tag:yaml.org,2002:timestamp"]
    for first, entries in _Loader.yaml_implicit_resolvers.items()}


# Far beyond any config (an ESPnet config.yaml's token list holds some thousands): aliases nested in aliases (a
# "billion laughs" of a few hundred bytes) pass it at once, and are refused before anything walks or prints them.
MAX_YAML_VALUES = 200_000
MAX_YAML_DEPTH = 64  # also stops an alias that contains itself (`a: &a [*a]`, a list holding itself)
MAX_YAML_BYTES = 4 << 20  # a config file; PyYAML took 39 s for a 16-MB one on a loaded core


def bounded(data: object, where: str) -> object:
    """``data`` as loaded from YAML, or a `SateError` when its aliases expand it past MAX_YAML_VALUES values or
    MAX_YAML_DEPTH levels. The loaded data shares one object per anchor, so loading is cheap; what would hang is
    every later walk of the expanded tree (merging, comparing, an error message rendering a value)."""
    count, stack = 0, [(data, 0)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_YAML_VALUES or depth > MAX_YAML_DEPTH:
            what = f"more than {MAX_YAML_VALUES} values" if count > MAX_YAML_VALUES else \
                f"more than {MAX_YAML_DEPTH} levels"
            raise SateError(f"{where}: {what} once its aliases are expanded (aliases nested in aliases?); refused")
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for pair in value.items() for item in pair)
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
    return data


def load_yaml_text(text: str, where: str = "the YAML") -> object:
    """YAML as configs and `--set` values are read: YAML 1.1, plus floats written without a dot (1e-3), with
    aliases bounded (`bounded`)."""
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise SateError(f"{where}: nested too deeply to read") from None
    return bounded(data, where)


def load_yaml_value(text: str, where: str) -> object:
    """One value given on the command line (`--set`, `--decode`), read as `load_yaml_text` reads YAML, refusing a
    comment after it: `--set 'data.dir=/data/run #2'` read the folder /data/run without a word (eighteenth hostile
    pass)."""
    tokens = [token for token in yaml.scan(text, Loader=_Loader)
              if not isinstance(token, yaml.StreamStartToken | yaml.StreamEndToken)]
    rest = text[max((token.end_mark.index for token in tokens), default=0):].strip()
    if rest.startswith("#"):
        raise SateError(f"{where}: {shown(rest)} reads as a YAML comment, which the value would lose; quote the value "
                        "to keep it (KEY='... #...')")
    value = load_yaml_text(text, where)  # aliases bounded first: a "billion laughs" is named as one
    used = {token.value for token in tokens if isinstance(token, yaml.AliasToken)}
    anchor = next((token for token in tokens if isinstance(token, yaml.AnchorToken) and token.value not in used), None)
    if anchor is not None:  # `--set 'data.dir=&run x'` read the folder x, and `&run` alone null (nineteenth pass)
        raise SateError(f"{where}: {shown(text[anchor.start_mark.index:anchor.end_mark.index])} reads as a YAML "
                        "anchor, which the value would lose; quote the value to keep it (KEY='&...')")
    # YAML's non-specific tag changes nothing: `--set 'data.dir=! x'` read the folder x (twentieth hostile pass)
    bare = next((token for token in tokens if isinstance(token, yaml.TagToken) and token.value == (None, "!")), None)
    if bare is not None:
        raise SateError(f"{where}: {shown(text[bare.start_mark.index:bare.end_mark.index])} reads as a YAML tag, which "
                        "the value would lose; quote the value to keep it (KEY='! ...')")
    return value


def yaml_problem(err: yaml.YAMLError) -> str | None:
    """PyYAML's short reason, cut as a value in a message is: it quotes an undefined alias or an unknown tag whole,
    so a 3 MB alias name was a 3 MB error line."""
    if isinstance(err, yaml.reader.ReaderError):  # its text, cut in the middle, showed an ESC's #x001b as "#x00..."
        code = err.character if isinstance(err.character, int) else ord(err.character)
        return f"character #x{code:04x} at offset {err.position:,}: {err.reason}"
    problem, context = getattr(err, "problem", None), getattr(err, "context", None)
    if isinstance(problem, str):  # PyYAML's reader ends the text with a NUL: `--set data.dir=&` "found '\x00'"
        problem = problem.replace("found '\\x00'", "found the end of the text")
    # where PyYAML's context is not "while parsing ...", it holds half of what it says: a duplicate anchor was
    # "invalid YAML (second occurrence)", a second document "(but found another document)" (twentieth hostile pass)
    if isinstance(problem, str) and isinstance(context, str) and not context.startswith("while "):
        first, mark = context.removesuffix("; first occurrence"), getattr(err, "context_mark", None)
        problem = f"{first} (first at line {mark.line + 1})" if first != context and mark is not None else \
            f"{context}, {problem}"
    return problem if problem is None or len(problem) <= 150 else problem[:147] + "..."


def invalid_yaml(path: Path, err: yaml.YAMLError) -> SateError:
    """One line for a YAML syntax error: PyYAML's own message spans several lines, quoting the file."""
    mark = getattr(err, "problem_mark", None)
    where = f" line {mark.line + 1}" if mark is not None else ""
    return SateError(f"{path}{where}: invalid YAML ({yaml_problem(err) or shown(str(err))})")


def yaml_bytes(path: Path) -> bytes:
    """The bytes of a config: a file, or a pipe (`sate train --config <(sed ... base.yaml)`), read up to one byte
    past MAX_YAML_BYTES so that neither a large file nor an endless stream is read whole; a directory or a device is
    named for what it is (all were "config file not found")."""
    if path.is_symlink() and not path.exists():
        not_a_file(path, "a config file")  # a loop or a broken symlink, named for what it is
    if not path.exists():
        raise SateError(f"{path}: config file not found")
    if path.is_dir():
        raise SateError(f"{path}: is a directory, not a config file")
    if not (path.is_file() or path.is_fifo()):
        raise SateError(f"{path}: is a device or socket, not a config file")
    size = path.stat().st_size if path.is_file() else 0  # a file too large is not even opened
    if size <= MAX_YAML_BYTES:
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_YAML_BYTES + 1)
        except OSError as err:
            raise SateError(f"{path}: cannot read ({err.strerror or err})") from None
        if len(data) <= MAX_YAML_BYTES:
            return data
        size = len(data)  # a pipe, or a file that grew
    raise SateError(f"{path}: {size:,} bytes, more than any config ({MAX_YAML_BYTES:,}); not a config file?")


def read_yaml(path: str | Path) -> dict[str, object]:
    path = Path(path)
    raw = yaml_bytes(path)
    # a model or checkpoint given for a config (`sate config --config EXP/checkpoints/last.ckpt`) was "not UTF-8
    # text (byte 64)" (twentieth hostile pass): a file of a known kind is named as that kind
    what = known_kind(raw[:SNIFF])  # and a SentencePiece model, a feature shard, a gzip file (twenty-first pass)
    if what is not None:
        raise SateError(f"{path}: {what}, not YAML text")
    wide = wide_text(raw[:SNIFF])  # Notepad's "Unicode", PowerShell's `>`, named as a text file's is: it was "not
    # UTF-8 text (byte 0)", or without a byte-order mark "invalid YAML (character #x0000 ...)"
    if wide is not None:
        raise SateError(f"{path}: {wide} text, not UTF-8: convert it first (iconv -f {wide} -t UTF-8; a Windows "
                        "editor saves UTF-8 when asked)")
    try:
        data = load_yaml_text(raw.decode("utf-8"), str(path))
    except UnicodeDecodeError as err:
        raise SateError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except yaml.YAMLError as err:
        raise invalid_yaml(path, err) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SateError(f"{path}: the top level must be a mapping of keys, not {type(data).__name__}")
    return data


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper, quoting a string exactly when sate's loader would read it plain as something else: YAML
    1.1's own rules left `08` and `1e-3` plain, which `_Loader` reads back as the numbers 8 and 0.001, so a split or
    folder named so changed in a config snapshot."""


_Dumper.yaml_implicit_resolvers = {first: list(entries) for first, entries in _Loader.yaml_implicit_resolvers.items()}
for _first, _entries in yaml.SafeLoader.yaml_implicit_resolvers.items():  # and a text that looks like a date, which
    _Dumper.yaml_implicit_resolvers[_first] += [  # other YAML readers (PyYAML's own) read as one
        (tag, rx) for tag, rx in _entries if tag == "tag:yaml.org,2002:timestamp"]


LINE_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")  # what YAML (and PyYAML) reads as a line break


def _represent_str(dumper: _Dumper, value: str) -> yaml.ScalarNode:
    """A string holding NEL (U+0085) double-quoted, where it is written ``\\N``: PyYAML wrote it raw inside single
    quotes, where YAML 1.1 reads it as a line break and folds it into a space, so a data.dir holding one came back
    from the run's config snapshot as another folder (seventeenth hostile pass). Any other line break too, so that
    `dump_flow` keeps a value on its line (`\\n`; PyYAML wrote a quoted string over several lines). And one holding
    a bidirectional control, which PyYAML takes for a printable character: `_bidi_escaped` escapes it there."""
    if any(brk in value for brk in LINE_BREAKS) or not BIDI_CONTROLS.isdisjoint(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_str(value)


_Dumper.add_representer(str, _represent_str)


_BIDI_ESCAPES = {ord(c): f"\\u{ord(c):04X}" for c in BIDI_CONTROLS}


def _bidi_escaped(text: str) -> str:
    """PyYAML's text with each bidirectional control (U+202E, the right-to-left override, ...) written as YAML's
    ``\\uXXXX``, as a message escapes it: a data.dir holding one reordered its line of `sate config` and of the
    config snapshot (nineteenth hostile pass). `_represent_str` double-quoted each string holding one, where the
    escape reads back as the character."""
    return text.translate(_BIDI_ESCAPES)


def dump_yaml(data: Mapping) -> str:
    """YAML as sate writes it (config snapshots, packs' sate.yaml), read back as written (`_Dumper`)."""
    return _bidi_escaped(yaml.dump(dict(data), Dumper=_Dumper, sort_keys=False, allow_unicode=True))


def dump_flow(value: object) -> str:
    """One value as sate writes it (`dump_yaml`) on one line, for `sate config`'s listing: PyYAML's own dumper
    showed the split '08' and the folder '1e-3' plain, which sate (and the listing saved as a config) reads as the
    numbers 8 and 0.001 (seventeenth hostile pass). No line width (a long data.dir with spaces was folded over
    lines, at the indent of its key: the listing saved as a config was invalid YAML, and `--get` told a script a
    value with line breaks) and only the dumper's own line ends removed (`str.strip` took a no-break space at either
    end of a value away; eighteenth hostile pass)."""
    text = _bidi_escaped(yaml.dump(value, Dumper=_Dumper, default_flow_style=True, allow_unicode=True,
                                   width=math.inf))
    return text.removesuffix("\n").removesuffix("\n...")


def write_yaml(path: str | Path, data: Mapping) -> None:
    """Write atomically, so a snapshot beside checkpoints is never half-written."""
    atomic_write_text(path, dump_yaml(data))


def apply_overrides(config: dict, overrides: Iterable[str]) -> dict:
    """Apply `a.b.c=value` strings (value parsed as YAML) to a copy of `config`; a mapping sets the keys it gives
    in the mapping there (`trainer={max_epochs: 2}` is `trainer.max_epochs=2`)."""
    config = copy.deepcopy(config)
    for item in overrides:
        if "=" not in item:
            raise SateError(f"--set {shown(item)}: expected KEY=VALUE, e.g. optim.lr=1e-3")
        key, raw = item.split("=", 1)
        try:
            value = load_yaml_value(raw, f"--set {shown(item)}")
        except yaml.YAMLError as err:
            why = yaml_problem(err)
            raise SateError(f"--set {shown(item)}: the value is not valid YAML" + (f" ({why})" if why else "")) \
                from None
        node = config
        parts = key.strip().split(".")
        for part in parts[:-1]:
            # a null section (`--set trainer=null`, which replaces a section whole, or a file's bare `trainer:`)
            # takes keys as an absent one does: `--set trainer=null --set trainer.max_epochs=2` was "'trainer' is a
            # value, not a section" (twenty-eighth hostile pass). A copy of the section, not the section: a YAML alias
            # (`decoder: *sec`) shares it with another key, and `--set model.textual.layers=3` set model.decoder.layers
            # too, without a word (twenty-eighth hostile pass, review)
            child = node.get(part)
            child = node[part] = {} if child is None else dict(child) if isinstance(child, dict) else child
            if not isinstance(child, dict):
                raise SateError(f"--set {shown(item)}: {shown(part)} is a value, not a section")
            node = child
        old = node.get(parts[-1])
        # a mapping changes the keys it gives: `--set 'trainer={max_epochs: 2}'` replaced the whole section, and the
        # file's max_steps, max_minutes and monitor went back to their defaults without a word
        node[parts[-1]] = _changed(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return config


def _changed(old: dict, new: dict) -> dict:
    """``old`` with the keys of ``new`` set, mapping into mapping."""
    out = dict(old)
    for key, value in new.items():
        out[key] = _changed(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


class ConfigOption(argparse._StoreAction):
    """`--config` of `sate train` and `sate config`, given once: argparse kept the last, so `sate train --config
    asr.yaml --config mt.yaml` trained MT without a word (twentieth hostile pass). Configs do not merge; `--set`
    changes a key, and a later `--set` overrides an earlier one."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"argument {option_string}: given twice; configs do not merge: give one, and change its "
                         "keys with --set KEY=VALUE")
        super().__call__(parser, namespace, values, option_string)
