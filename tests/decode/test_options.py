"""Decoding options: each has a line of help, and the commands that decode list them with their defaults."""

from __future__ import annotations

import argparse
import math
from dataclasses import fields

import pytest

from sate.cli import build_parser, main
from sate.decode.options import HELP, MAX_BEAM, MAX_LEN_RATIO, DecodeOptions, decode_overrides, parse_decode
from sate.decode.pack import decode_options
from sate.errors import SateError


def test_every_option_has_help() -> None:
    assert [f.name for f in fields(DecodeOptions)] == list(HELP)


@pytest.mark.parametrize("command", ["pack", "translate", "evaluate"])
def test_decoding_commands_list_every_option_with_its_default(command: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    printed = capsys.readouterr().out
    for option in fields(DecodeOptions):
        assert f"  {option.name}={option.default} " in printed


@pytest.mark.parametrize(("changes", "message"), [
    ({"max_len_ratio": math.inf}, "max_len_ratio must be a finite number"),
    ({"max_len_ratio": math.nan}, "max_len_ratio must be a finite number"),
    ({"max_len_ratio": 1e6}, f"max_len_ratio must be positive and at most {MAX_LEN_RATIO:g}"),
    ({"min_len_ratio": math.nan}, "min_len_ratio must be a finite number"),
    ({"beam": 10000}, f"beam must be at least 1 and at most {MAX_BEAM}"),
    # n ** 1e300 is infinite: a score divided by it ranks nothing
    ({"lenpen": 1e300}, "lenpen must be from -10 to 10 .*got 1e[+]300"),
    ({"lenpen": -11}, "lenpen must be from -10 to 10"),
    ({"length_bonus": -1e300}, "length_bonus must be from -100 to 100 .*got -1e[+]300"),
    # just past a bound, the value is shown as given: "at most 10, got 10" (six digits of :g) refused 10 (hand31e)
    ({"max_len_ratio": 10.0000001}, "at most 10 .*got 10.0000001$"),
    ({"lenpen": -10.0000001}, "from -10 to 10 .*got -10.0000001$"),
    ({"length_bonus": 100.0000001}, "from -100 to 100 .*got 100.0000001$"),
    # past int64 it was "beam must be at least 1 and at most 2**63-1", a bound that --beam 1000 then broke (hand31e)
    ({"beam": 10**23}, f"beam must be at least 1 and at most {MAX_BEAM}, got {10**23}$"),
    # and nbest was told "an integer from -2**63 to 2**63-1", where its bound is the beam (hand32k)
    ({"nbest": 10**30}, r"^--decode: nbest must be between 1 and the beam \(5\), got 10{30}$"),
    ({"nbest": -10**30, "beam": 3}, r"^--decode: nbest must be between 1 and the beam \(3\), got -10{30}$"),
])
def test_unbounded_options_are_refused_before_any_memory_is_taken(changes: dict, message: str) -> None:
    with pytest.raises(SateError, match=message):
        decode_options(changes, "--decode")  # the path of every option a user gives (CLI, sate.yaml, the API)
    decode_options({"beam": MAX_BEAM, "nbest": MAX_BEAM, "max_len_ratio": MAX_LEN_RATIO}, "--decode")  # fine
    decode_options({"lenpen": -10, "length_bonus": 100}, "--decode")
    with pytest.raises(SateError, match=r"^nbest must be between 1 and the beam \(4\), got 10{30}$"):
        DecodeOptions(beam=4, nbest=10**30)  # the Python API's own options (docs/inference.md), told the same


def test_decode_values_are_read_like_set_values() -> None:
    # YAML 1.1 reads 1e6 (no dot) as a string; --set reads it as a float, and so does --decode.
    assert parse_decode(["max_len_ratio=1e6", "lenpen=5e-1"]) == {"max_len_ratio": 1e6, "lenpen": 0.5}
    assert parse_decode(["beam=3,lenpen=1.2", "nbest=2"]) == {"beam": 3, "lenpen": 1.2, "nbest": 2}
    for bad in ("beam", "=3", "beam=3,,lenpen=1"):
        with pytest.raises(SateError, match="expected KEY=VALUE"):
            parse_decode([bad])


def test_a_key_twice_in_one_decode_is_refused_and_a_later_decode_overrides() -> None:
    with pytest.raises(SateError, match="'lenpen' is given twice"):
        parse_decode(["lenpen=1,beam=2,lenpen=2"])
    assert parse_decode(["lenpen=1,beam=2", "lenpen=2"]) == {"lenpen": 2, "beam": 2}


@pytest.mark.parametrize("command", ["translate", "evaluate", "pack"])
def test_decode_does_not_swallow_the_arguments_after_it(command: str) -> None:
    required = {"translate": ["--model", "m"], "evaluate": ["--model", "m", "--data", "d"],
                "pack": ["--model", "m", "--data", "d", "--out", "o"]}[command]
    argv = [command, *required, "--decode", "beam=3,lenpen=1.2", "--decode", "nbest=2"]
    if command == "translate":
        argv += ["a.wav", "b.wav"]
    args = build_parser(command).parse_args(argv)
    assert args.decode == ["beam=3,lenpen=1.2", "nbest=2"]
    if command == "translate":
        assert [str(f) for f in args.files] == ["a.wav", "b.wav"]


def test_a_pack_beam_beyond_the_limit_names_the_pack_file() -> None:
    """Every other bad value in a pack's sate.yaml named the file; a beam of 10^9 or a max_len_ratio of 10^6 said
    only "beam must be ...", leaving the user to guess whether the command line or which pack was meant."""
    for changes, key in [({"beam": 10**9}, "beam"), ({"max_len_ratio": 1e6}, "max_len_ratio")]:
        with pytest.raises(SateError, match=rf"^packs/a/sate\.yaml: {key} must be"):
            decode_options(changes, "packs/a/sate.yaml")


def test_an_nbest_given_to_a_command_that_writes_the_best_alone_is_refused() -> None:
    """`translate`/`evaluate --decode nbest=5` computed five hypotheses and wrote the best alone, exit 0 (twenty-fourth
    hostile pass). nbest=1, a beam alone, and --stream (which says its own) are as before."""
    for command in ("translate", "evaluate"):
        args = argparse.Namespace(command=command, decode=["beam=4,nbest=3"], beam=None)
        with pytest.raises(SateError, match=rf"^--decode nbest=3: sate {command} writes the best hypothesis alone; "):
            decode_overrides(args)
        assert decode_overrides(argparse.Namespace(command=command, decode=["nbest=1"], beam=2)) == \
            {"nbest": 1, "beam": 2}
    assert decode_overrides(argparse.Namespace(command="evaluate", decode=["nbest=2"], beam=None,
                                               stream="wait-k=2")) == {"nbest": 2}


@pytest.mark.parametrize("command", ["translate", "evaluate"])
def test_nbest_is_said_as_given_and_its_help_says_it_is_one_here(command: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Review of the twenty-fourth pass's nbest refusal: `--help` listed "nbest=1 hypotheses returned per utterance"
    among the --decode keys without a word that N > 1 is refused; `nbest=02` was echoed as `nbest=2`; and `--talks`
    or an ASR pack were told "one translation per utterance". `sate pack --help` keeps the option's own line."""
    args = argparse.Namespace(command=command, decode=["nbest=5", "beam=4, nbest=02"], beam=None)
    with pytest.raises(SateError, match=rf"^--decode nbest=02: sate {command} writes the best hypothesis alone; "):
        decode_overrides(args)
    for name, line in ((command, "nbest=1              1 here: this command writes the best alone"),
                       ("pack", "nbest=1              hypotheses returned per utterance")):
        with pytest.raises(SystemExit):
            build_parser(name).parse_args([name, "--help"])
        assert line in capsys.readouterr().out
