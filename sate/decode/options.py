"""Decoding options: what the beam search does, with the values a pack stores and `--decode` changes.

`DecodeOptions` is a typed section (`sate.settings`): each option's default, help and range in one place,
read from ``--decode``, a pack's sate.yaml or the Python API by `decode_options`. Kept apart from the search
itself so that a command's `--help` can list them without importing torch.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

import yaml

from sate.config import load_yaml_value
from sate.errors import SateError, one_line, shown
from sate.numbers import is_digits, is_int64, is_number, plain, real_number, whole_number
from sate.settings import POSITIVE, Invalid, Section, at_least, helps, read, setting

# Upper bounds, checked before anything is allocated: past them a typo (beam=10000, max_len_ratio=1e6) used
# to run for minutes and end in an allocator error asking for tens of GB.
# - beam: published systems decode with 4-10 (fairseq 5, ESPnet 10) and BLEU falls beyond a few dozen
#   (Koehn & Knowles 2017); each step scores batch x beam x vocabulary entries (16 x 256 x 10k floats:
#   160 MB) and caches the decoder's keys and values per beam, so a few hundred is the useful limit.
MAX_BEAM = 256
# - max_len_ratio: the memory is source tokens (MT, shrink ST) or 25 frames a second (other ST). Ten
#   target tokens per source token covers a character-level target against a word-piece source (about 5
#   per word), and 250 tokens a second is ten times fast speech written in characters. The search caches
#   positions up to this length: 1e6 x a 500-frame memory asked for 77 GB.
MAX_LEN_RATIO = 10.0
# - lenpen and length_bonus: published values are 0-2 (fairseq's lenpen, ESPnet's bonus per token). Past a few
#   dozen they no longer rank hypotheses: n ** 1e300 is infinite, and a score divided by it ranks nothing.
MAX_LENPEN = 10.0
MAX_LENGTH_BONUS = 100.0


@dataclass(frozen=True)
class DecodeOptions(Section):
    """How to search; the defaults are SATE's (beam 5, fairseq length normalisation 1.0). Floats are finite."""

    beam: int = setting(5, f"hypotheses kept per utterance (1: greedy; at most {MAX_BEAM})", at_least(1))
    # fairseq: final score = (logp + length_bonus * m) / n ** lenpen (sate.decode.beam_search); 0 = none
    lenpen: float = setting(1.0, "fairseq length normalisation: score = (logp + length_bonus x m) / n ** lenpen "
                            f"(0: none; from -{MAX_LENPEN:g} to {MAX_LENPEN:g})")
    length_bonus: float = setting(0.0, "ESPnet's length bonus, added per chosen token (from "
                                  f"-{MAX_LENGTH_BONUS:g} to {MAX_LENGTH_BONUS:g})")  # eos included
    # min output length = floor(ratio x memory length)
    min_len_ratio: float = setting(0.0, "the shortest output, as a ratio of the memory length (source tokens, or "
                                   "frames / 4)")
    # max output length = ceil(ratio x memory length), at least 1. The memory is the source tokens for MT
    # and shrink ST, frames / 4 for other ST (25 a second): 1.5 lets a translation be half as long again as
    # its source, and is ample for frame memories (a 10k vocabulary needs about 0.2 there; 0.5-1 decodes
    # faster with lenpen > 0, whose stopping bound looks ahead to the max length).
    max_len_ratio: float = setting(1.5, "the longest output, as a ratio of the memory length (at most "
                                   f"{MAX_LEN_RATIO:g})", POSITIVE)
    nbest: int = setting(1, "hypotheses returned per utterance")

    def __post_init__(self) -> None:
        # an nbest past int64 was told "an integer from -2**63 to 2**63-1" (hand31e), where the bound that holds is
        # the beam's; a beam past int64 is still told first, by the fields' own checks (hand32k)
        if is_int64(self.beam) and isinstance(self.nbest, int) and not is_int64(self.nbest):
            raise Invalid("nbest", f"must be between 1 and the beam ({self.beam}), got {shown(self.nbest)}")
        super().__post_init__()

    def validate(self) -> None:
        if not 1 <= self.nbest <= self.beam:
            raise Invalid("nbest", f"must be between 1 and the beam ({self.beam}), got {self.nbest}")
        if not 0 <= self.min_len_ratio <= self.max_len_ratio:
            raise Invalid("min_len_ratio", f"must be between 0 and max_len_ratio ({self.max_len_ratio}), "
                          f"got {self.min_len_ratio}")


def check_limits(options: DecodeOptions) -> DecodeOptions:
    """Refuse a beam or length that no translation needs and that would exhaust memory; for options a user gave.

    Kept out of the dataclass itself: code that decodes a fixed number of steps on purpose (the length
    benchmark, whose untrained twin may have a memory of one position) builds options beyond these.
    """
    if options.beam > MAX_BEAM:
        raise SateError(f"beam must be at least 1 and at most {MAX_BEAM}, got {options.beam}")
    if abs(options.lenpen) > MAX_LENPEN:
        raise SateError(f"lenpen must be from -{MAX_LENPEN:g} to {MAX_LENPEN:g} (the exponent of the length "
                        f"normalisation; fairseq's default is 1), got {options.lenpen}")
    if abs(options.length_bonus) > MAX_LENGTH_BONUS:
        raise SateError(f"length_bonus must be from -{MAX_LENGTH_BONUS:g} to {MAX_LENGTH_BONUS:g} (log-probability "
                        f"added per token), got {options.length_bonus}")
    if options.max_len_ratio > MAX_LEN_RATIO:
        raise SateError(f"max_len_ratio must be positive and at most {MAX_LEN_RATIO:g} (target tokens per "
                        f"memory position), got {options.max_len_ratio}")
    return options


def decode_options(values: Mapping[str, object], where: str) -> DecodeOptions:
    """Options a user gave (``--decode``, a pack's sate.yaml, the API) over the defaults, checked and within the
    limits; an unknown option, a wrong type or a value out of range is one `SateError` naming ``where``."""
    beam = plain(values.get("beam"))
    # past int64, `read` said "at most 2**63-1" (hand31e); the number shortened, as every value in a message is
    if isinstance(beam, int) and not isinstance(beam, bool) and beam > MAX_BEAM:
        raise SateError(f"{where}: beam must be at least 1 and at most {MAX_BEAM}, got {shown(beam)}")
    options = read(DecodeOptions, values, f"{where}: ", noun="decoding option")
    try:
        return check_limits(options)
    except SateError as err:  # named like read's errors: a pack's beam of 10^9 said neither file nor option
        raise SateError(f"{where}: {err}") from None


# One line per option for the commands' --help, from the fields.
HELP = helps(DecodeOptions)


# what `--decode nbest` is where the command writes the best alone (translate, evaluate: `decode_overrides`)
BEST_ALONE = "1 here: this command writes the best alone (N > 1: the Python API's beam_search)"


def options_help(best_alone: bool = False) -> str:
    """The decoding options with their defaults, for a command's --help; ``best_alone``: the command writes one
    hypothesis each, and its nbest line says so (it listed "hypotheses returned per utterance", then refused N > 1)."""
    lines = ["decoding options (--decode KEY=VALUE[,KEY=VALUE...], repeatable; a pack's sate.yaml stores the "
             "values it decodes with):"]
    helps = {**HELP, "nbest": BEST_ALONE} if best_alone else HELP
    lines += [f"  {f'{f.name}={f.default}':<20} {helps[f.name]}" for f in fields(DecodeOptions)]
    return "\n".join(lines)


def add_decode_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    """`--decode KEY=VALUE[,KEY=VALUE...]`, repeatable: one argument per use, so the file names after it
    stay file names (nargs="+" used to swallow them)."""
    parser.add_argument("--decode", action="append", default=[], metavar="KEY=VALUE[,...]", help=help_text)


def add_override_arguments(parser: argparse.ArgumentParser) -> None:
    """`--beam N` and `--decode KEY=VALUE[,...]`: the pack's decoding options changed for one run (`translate`,
    `evaluate`); `decode_overrides` reads them back."""
    parser.epilog = options_help(best_alone=True)
    parser.add_argument("--beam", type=whole_number, default=None,
                        help="beam size (when not given: the pack's, normally 5)")
    add_decode_argument(parser, "other decoding options, e.g. --decode lenpen=1.2,max_len_ratio=0.5 (repeatable; "
                                "when not given: the pack's)")


def decode_overrides(args: argparse.Namespace) -> dict[str, object]:
    """What `add_override_arguments` parsed: the --decode assignments, then --beam over them."""
    overrides = parse_decode(args.decode)
    if args.beam is not None:
        overrides["beam"] = args.beam
    # a pack's own nbest (sate.yaml) still decodes, and --stream says its own
    if getattr(args, "stream", None) is None:
        check_best_alone(args.decode, overrides, f"sate {getattr(args, 'command', None) or 'this command'} writes")
    return overrides


def check_best_alone(items: list[str], parsed: dict[str, object], writes: str) -> None:
    """Refuse ``--decode nbest=N`` (N > 1) where only the best hypothesis is written (``writes``: who writes it):
    `--decode nbest=5` computed five and printed the best, exit 0, and `sate pack --decode nbest=3` made every
    `translate` of the pack do so (twenty-fourth hostile pass). A value that is no count is named where the options
    are checked."""
    nbest = parsed.get("nbest", 1)
    if isinstance(nbest, int) and not isinstance(nbest, bool) and nbest > 1:
        raise SateError(f"--decode {_as_given(items, 'nbest')}: {writes} the best hypothesis alone; nbest does not "
                        "apply (the Python API's beam_search returns n-best lists)")


def _as_given(items: list[str], key: str) -> str:
    """``key=VALUE`` as the last --decode that sets it wrote it (`nbest=02` was echoed as `nbest=2`)."""
    parts = [part.strip() for item in items for part in item.split(",") if part.partition("=")[0].strip() == key]
    return one_line(parts[-1]) if parts else key


def parse_decode(items: list[str], option: str = "--decode") -> dict[str, object]:
    """``["beam=5,lenpen=1.2", "nbest=2"]`` -> ``{"beam": 5, "lenpen": 1.2, "nbest": 2}``.

    Values are read as `--set` reads them (YAML with ``1e-3`` a float), so both options agree on numbers.
    A later ``--decode`` overrides an earlier one, as a later `--set` does (a script's defaults, then the user's);
    a key twice inside one item is refused, since nothing but a slip writes ``lenpen=1,lenpen=2``.
    """
    out: dict[str, object] = {}
    for item in items:
        seen: set[str] = set()
        for part in item.split(","):
            key, sep, raw = part.partition("=")
            if not sep or not key.strip():
                raise SateError(f"{option} {shown(item)}: expected KEY=VALUE[,KEY=VALUE...], e.g. beam=5,lenpen=1.2")
            if key.strip() in seen:
                raise SateError(f"{option} {shown(item)}: {shown(key.strip())} is given twice; give it once "
                                f"(a later {option} overrides an earlier one)")
            seen.add(key.strip())
            try:
                out[key.strip()] = load_yaml_value(raw, f"{option} {shown(item)}")  # as --set reads values
            except yaml.YAMLError:
                raise SateError(f"{option} {shown(item)}: the value of {key.strip()} is not valid YAML") from None
    return out


def looks_like_option(text: str) -> bool:
    """Is a command-line word a decoding assignment (``lenpen=1.2``), as old `--decode a=1 b=2` lines give?"""
    key, sep, _ = text.partition("=")
    return bool(sep) and key.strip() in {f.name for f in fields(DecodeOptions)}


# ---------------------------------------------------------------------------------------------- streaming

# Streaming policies (`sate.decode.policies`) and their one parameter's default: wait K chunks, agreement of N
# hypotheses, F encoder frames. Here, without torch, so that `sate stream --help` is instant.
STREAM_POLICIES = {"wait-k": 3, "local-agreement": 2, "alignatt": 4}
STREAM_VALUE = {"wait-k": "K chunks", "local-agreement": "N hypotheses", "alignatt": "F encoder frames"}
CHUNK = 0.5  # seconds of audio read before each decision
MIN_CHUNK = 0.05
# The longest segment the VAD cuts (sate.decode.vad.MAX_SEGMENT): a longer chunk adds nothing, and a chunk is read
# whole, so `--chunk 1e12` asked for 3.2e16 bytes of stdin at once (a MemoryError traceback).
MAX_CHUNK = 120.0


@dataclass(frozen=True)
class StreamPolicy:
    """A streaming policy and its parameter, as ``NAME=VALUE`` reads (`parse_policy`)."""

    name: str
    value: int

    def __str__(self) -> str:
        return f"{self.name}={self.value}"


def parse_policy(text: str) -> StreamPolicy:
    """``alignatt=4`` -> StreamPolicy("alignatt", 4); a bare name takes its default."""
    name, sep, raw = text.partition("=")
    if name not in STREAM_POLICIES:
        raise SateError(f"unknown streaming policy {shown(name)}: choose {', '.join(STREAM_POLICIES)} "
                        "(NAME or NAME=VALUE)")
    if not sep:
        return StreamPolicy(name, STREAM_POLICIES[name])
    try:  # int() alone also took ' 3', '3_0' and '٣' (an Arabic-Indic three); it refuses 4,300 digits and more
        value = int(raw) if is_digits(raw.removeprefix("-")) else None  # -4: named below as under the least
    except ValueError:
        value = None
    if value is None:
        raise SateError(f"streaming policy {shown(text)}: the value must be a whole number (digits 0-9)")
    least = 0 if name == "alignatt" else 1
    if value < least:
        raise SateError(f"streaming policy {shown(text)}: the value must be at least {least}")
    return StreamPolicy(name, value)


def check_chunk(chunk: float, what: str = "--chunk") -> float:
    """A chunk length in seconds that the front end can read; `what` names where it was given (an option, or a
    results file's key)."""
    if not (math.isfinite(chunk) if isinstance(chunk, float) else is_number(chunk)) \
            or not MIN_CHUNK <= chunk <= MAX_CHUNK:  # an int past floats (10**400): isfinite's OverflowError
        got = shown(chunk) if isinstance(chunk, int) and not is_number(chunk) else f"{chunk:g}"
        raise SateError(f"{what} must be at least {MIN_CHUNK:g} and at most {MAX_CHUNK:g} seconds, got {got}")
    return chunk


def add_stream_arguments(parser: argparse.ArgumentParser, flag: str, default: str | None) -> None:
    """The policy option (`flag`) and ``--chunk``, for `sate stream` and `sate evaluate --stream`."""
    names = ", ".join(f"{name}={STREAM_VALUE[name]} (default {value})" for name, value in STREAM_POLICIES.items())
    parser.add_argument(flag, default=default, metavar="POLICY", help=f"streaming policy NAME[=VALUE]: {names}")
    # where the policy is optional (evaluate), so is --chunk: given without the policy it is refused, not ignored
    said = "" if default is not None else f" (default {CHUNK:g})"  # a default given is shown by the help formatter
    parser.add_argument("--chunk", type=real_number, default=CHUNK if default is not None else None,
                        help=f"seconds of audio read before each decision{said}")
