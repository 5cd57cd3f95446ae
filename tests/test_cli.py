"""`sate --help` and every command's help: written for users, with the pipeline's commands in order."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sate.cli import COMMANDS, build_parser, main
from sate.targets import read_name


def test_top_level_help_lists_the_commands_in_pipeline_order(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    printed = capsys.readouterr().out
    assert "speech translation with SATE" in printed and "parse and dispatch" not in printed
    positions = [re.search(rf"^    {name}\b", printed, re.M).start() for name in COMMANDS]
    assert positions == sorted(positions)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_has_a_description_and_no_none_defaults(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"usage: sate {command}") and "(default: None)" not in printed and "``" not in printed
    # a default is said once: `sate stream --help` gave --chunk "(default 0.5) (default: 0.5)"
    assert not re.search(r"\(default:? ([^)]+)\) \(default:? \1\)", " ".join(printed.split())), printed


def test_no_command_module_imports_torch_at_module_level() -> None:
    """`sate.cli` imports every command module, and none imports torch, Lightning or ESPnet at module level:
    `sate --help` and `sate synth` never pay for them."""
    heavy = {"torch", "torchaudio", "lightning", "espnet", "espnet2", "matplotlib"}
    code = f"import sys, sate.cli; print(sorted({heavy!r} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("argv", "dest", "given"), [
    (["prep", "--out", "d", "--mustc-root", "c", "--splits", "train", "--splits", "dev"], "splits", ["train", "dev"]),
    (["prep", "--out", "d", "--librispeech", "a", "--librispeech", "b"], "librispeech", ["a", "b"]),
    (["prep", "--out", "d", "--kaldi-dir", "a", "b", "--kaldi-dir", "c"], "kaldi_dir", ["a", "b", "c"]),
    (["features", "--data", "d", "--splits", "train", "--splits", "dev"], "splits", ["train", "dev"]),
    (["vocab", "--data", "d", "--src-splits", "x1", "--src-splits", "x2"], "src_splits", ["x1", "x2"]),
    # twentieth hostile pass: the last list was kept in these too (locality drew the last --model's encoders alone)
    (["report", "--exp", "e", "--splits", "tst-COMMON", "--splits", "dev"], "splits", ["tst-COMMON", "dev"]),
    (["analyze", "locality", "--model", "a.pt", "--model", "b.pt", "c.pt", "--data", "d", "--out", "o"], "model",
     ["a.pt", "b.pt", "c.pt"]),
    (["analyze", "attention", "--model", "p", "--out", "o.png", "--encoder-layers", "1", "--encoder-layers", "3"],
     "encoder_layers", ["1", "3"]),
])
def test_a_list_option_given_twice_keeps_both(argv: list[str], dest: str, given: list[str]) -> None:
    """`sate prep --splits train --splits dev` prepared dev alone, exit 0: argparse kept the last list given
    (fourteenth hostile pass). A list option given again adds to it, as --set and --decode do."""
    from sate.cli import build_parser

    args = build_parser(argv[0]).parse_args(argv)
    assert [str(item) for item in getattr(args, dest)] == given


def test_report_splits_default_to_tst_common_alone() -> None:
    from sate.cli import build_parser

    assert build_parser("report").parse_args(["report", "--exp", "e"]).splits is None  # run() reads tst-COMMON
    assert build_parser("report").parse_args(["report", "--exp", "e", "--splits", "dev"]).splits == ["dev"]


@pytest.mark.parametrize("command", ["train", "config"])
def test_a_config_given_twice_is_refused(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate train --config asr.yaml --config mt.yaml` trained MT without a word: argparse kept the last (twentieth
    hostile pass). Configs do not merge."""
    for name in ("asr", "mt"):
        (tmp_path / f"{name}.yaml").write_text(f"task: {name}\n")
    extra = ["--exp", str(tmp_path / "exp")] if command == "train" else []
    with pytest.raises(SystemExit) as stop:
        main([command, "--config", str(tmp_path / "asr.yaml"), "--config", str(tmp_path / "mt.yaml"), *extra])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (f"sate {command}: error: argument --config: given twice; "
                                                        "configs do not merge: give one, and change its keys with "
                                                        "--set KEY=VALUE")
    assert not (tmp_path / "exp").exists()


def test_prep_splits_given_twice_prepares_both(tmp_path: Path, synth_corpus: Path) -> None:
    assert main(["prep", "--mustc-root", str(synth_corpus), "--out", str(tmp_path / "d"), "--splits", "train",
                 "--splits", "dev"]) == 0
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["dev.jsonl", "train.jsonl"]


def test_ctrl_c_while_the_command_modules_load_is_one_line() -> None:
    """Ctrl-C in the first few tenths of a second of any command, while `sate.cli` imports the command modules
    (numpy among them), was a KeyboardInterrupt traceback from inside some import (fourteenth hostile pass). It is
    one line and status 130, as an interrupt later is. The interrupt comes as the scoring modules are looked for."""
    code = """if True:
        import os, runpy, signal, sys
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's Ctrl-C, whatever the runner set

        class CtrlC:
            def find_spec(self, name, path=None, target=None):
                if name == "sate.scoring":
                    os.kill(os.getpid(), signal.SIGINT)
                return None

        sys.meta_path.insert(0, CtrlC())
        sys.argv = ["sate", "score", "--help"]
        runpy.run_module("sate.cli", run_name="__main__")
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (done.returncode, done.stderr, done.stdout) == (130, "sate: interrupted\n", ""), done.stderr


@pytest.mark.slow
def test_a_command_ends_with_the_recipe_that_runs_it(tmp_path: Path) -> None:
    """A `kill` of a recipe ended its shell alone (bash runs a trap only once its foreground command has ended): a
    stage's `sate train` ran on behind it for hours, holding its experiment's lock (fourteenth hostile pass). The
    recipes export their pid as SATE_STOP_WITH, and a command ends as a `kill` ends it once that process has, even
    before the recipe's own parent has waited for it (a zombie). Here a command waits for its hypotheses on
    standard input."""
    recipe = subprocess.Popen(["sleep", "600"])
    env = {**os.environ, "SATE_STOP_WITH": str(recipe.pid)}
    silent, writer = os.pipe()  # a pipe nothing is written to, and that stays open
    (tmp_path / "ref.txt").write_text("a b c\n")
    command = subprocess.Popen([sys.executable, "-m", "sate.cli", "score", "--hyp", "/dev/stdin", "--ref",
                                str(tmp_path / "ref.txt")], stdin=silent, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    os.close(silent)
    try:
        recipe.kill()  # not waited for: a zombie until the end of the test
        _, err = command.communicate(timeout=60)
    finally:
        command.kill()
        os.close(writer)
    assert (command.returncode, err) == (143, "sate score: terminated\n"), err
    recipe.wait()


_REUSED = """
import sys
import sate.cli as cli
read, looks = cli._stat, []

def reused(pid):  # the second look finds another process under the pid: another start time
    fields = read(pid)
    looks.append(pid)
    return fields[:19] + [b"1"] + fields[20:] if len(looks) > 1 and fields else fields

cli._stat = reused
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_command_ends_when_the_recipes_pid_is_given_to_another_process(tmp_path: Path) -> None:
    """The watch went by the pid alone: once the recipe had ended and its pid was given to a new process, the command
    ran on as if the recipe were alive (fourteenth hostile pass). The recipe's start time is read when the watch
    begins; another start time under the pid is another process. The reuse is simulated: pids wrap only after
    millions of processes."""
    recipe = subprocess.Popen(["sleep", "600"])  # alive throughout: only its start time seems to change
    silent, writer = os.pipe()
    (tmp_path / "ref.txt").write_text("a b c\n")
    command = subprocess.Popen([sys.executable, "-c", _REUSED, "score", "--hyp", "/dev/stdin", "--ref",
                                str(tmp_path / "ref.txt")], stdin=silent, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                               env={**os.environ, "SATE_STOP_WITH": str(recipe.pid),
                                    "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    os.close(silent)
    try:
        _, err = command.communicate(timeout=60)
    finally:
        command.kill()
        os.close(writer)
        recipe.kill()
        recipe.wait()
    assert (command.returncode, err) == (143, "sate score: terminated\n"), err


@pytest.mark.parametrize("value", ["²", *(pytest.param(value, marks=pytest.mark.slow)  # a process each
                                    for value in (str(10 ** 20), "0", "-5", "abc", ""))])
def test_a_stop_with_that_names_no_process_is_let_be(value: str, tmp_path: Path) -> None:
    """SATE_STOP_WITH="²" passed isdigit() and ended every command with a ValueError traceback; 10**20 ended the
    watching thread with an OverflowError traceback (the review's finds in the fourteenth pass). A value that is no
    pid is no recipe's: the command runs as without it."""
    (tmp_path / "ref.txt").write_text("a b c\n")
    done = subprocess.run([sys.executable, "-m", "sate.cli", "score", "--hyp", str(tmp_path / "ref.txt"), "--ref",
                           str(tmp_path / "ref.txt")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SATE_STOP_WITH": value})
    assert done.returncode == 0 and done.stderr == "" and "BLEU" in done.stdout, done.stderr


@pytest.mark.parametrize("char", ["\n", "\x1b[31m", "\x85", "\u202e", "\udcff"])
def test_an_argument_argparse_does_not_take_is_named_escaped(char: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Nineteenth hostile pass: argparse's "unrecognized arguments" quoted them as they are, so a mistyped option
    before a file named with a line break or a terminal's colour sequence printed them raw."""
    with pytest.raises(SystemExit) as end:
        main(["score", "--hyp", "h.txt", "--ref", "r.txt", "--nonesuch", f"talk{char}.wav"])
    err = capsys.readouterr().err
    assert end.value.code == 2 and f"talk{char}" not in err and "talk" in err.splitlines()[-1]


@pytest.mark.parametrize("argv", [["vocab", "--data", "d", "--src-size", "x" * 100_000],
                                  ["segment", "--vad", "x" * 100_000, "a.wav"],
                                  ["score", "--hyp", "h.txt", "--ref", "r.txt", "--nonesuch", *(["f"] * 50_000)]])
def test_a_long_argument_argparse_refuses_is_named_cut(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """An option's value of 100,000 characters ("invalid whole number", "invalid choice") or a mistyped option before
    thousands of files ("unrecognized arguments") was an error line of that size (twentieth hostile pass)."""
    with pytest.raises(SystemExit) as end:
        main(argv)
    line = capsys.readouterr().err.splitlines()[-1]
    assert end.value.code == 2 and len(line) <= 1000 + len("sate segment: error: ")
    assert "xxx...xxx" in line or line.endswith(" f ...")


def test_only_a_quoted_value_is_cut_not_the_text_between_two() -> None:
    """The cut took the text between two short values' quotes for one long value: `average --out -` said "'-' (st...
    named '-')" (found by the fast loop after the merge of the twentieth pass)."""
    from sate.cli import _LONG_QUOTED

    line = "argument --out: '-' (standard output): this option writes a file; give its name (./- for a file named '-')"
    assert _LONG_QUOTED.search(line) is None
    value = "x" * 100
    for quoted in (f"'{value}'", f'"{value}"'):
        assert _LONG_QUOTED.search(f"argument --vad: invalid choice: {quoted} (choose from 'silero', 'energy')")
        assert _LONG_QUOTED.search(f"unrecognized arguments: {quoted}")


@pytest.mark.parametrize(("argv", "command"), [(["stream", "--model", "p", "a.wav", "b.wav"], "stream"),
                                               (["score", "--hyp", "h", "--ref", "r", "--frmat", "json"], "score"),
                                               (["analyze", "locality", "--model", "m", "--data", "d", "--out", "o",
                                                 "x"], "analyze locality")])
def test_an_argument_a_command_does_not_take_is_refused_by_that_command(
        argv: list[str], command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate stream a.wav b.wav` (one input) or a mistyped option said "sate: error: unrecognized arguments" under the
    usage of `sate COMMAND ...`, naming no command (twenty-first hostile pass); the command's own usage and name now."""
    with pytest.raises(SystemExit) as end:
        main(argv)
    err = capsys.readouterr().err
    assert end.value.code == 2 and err.startswith(f"usage: sate {command} [-h]"), err
    extra = "--frmat json" if command == "score" else argv[-1]
    assert err.splitlines()[-1] == f"sate {command}: error: unrecognized arguments: {extra}"


@pytest.mark.parametrize("argv", [["score", "--hyp", "hyp.txt", "--ref", "ref.txt"],
                                  ["segment", "talk.wav", "--out", "out.srt"],
                                  # torch's libraries abort the process as they load there: said before (review)
                                  ["translate", "--model", "/nowhere/pack", "/nowhere/talk.wav"]])
@pytest.mark.slow
def test_a_deleted_working_directory_is_one_line(tmp_path: Path, argv: list[str]) -> None:
    """A command run in a directory deleted since (by another shell) ended in a bare "No such file or directory",
    naming nothing (`sate score`, `segment --out`, `evaluate`), where it asked for the directory (25th hostile pass,
    review); it is said before any work."""
    gone = tmp_path / "gone"
    gone.mkdir()
    script = ("import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); from sate.cli import main; "
              "sys.exit(main(sys.argv[2:]))")
    run = subprocess.run([sys.executable, "-c", script, str(gone), *argv], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr == (f"sate {argv[0]}: error: the current directory was deleted (by another shell or a "
                          "clean-up?): cd to a directory that exists and run the command again\n")
    # absolute names alone run there as they did (review: refusing every command there was a false positive)
    (tmp_path / "h.txt").write_text("a b c\n")
    gone.mkdir()
    run = subprocess.run([sys.executable, "-c", script, str(gone), "score", "--hyp", str(tmp_path / "h.txt"), "--ref",
                          str(tmp_path / "h.txt")], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}, timeout=120)
    assert run.returncode == 0 and run.stdout.lstrip().startswith("BLEU|"), run.stderr


def test_a_file_named_with_a_leading_dash_is_said_to_be_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`sate translate --model P *.wav` over a `-intro.wav` was "unrecognized arguments: -intro.wav" alone (25th
    hostile pass); the line says it is a file and how to give it."""
    monkeypatch.chdir(tmp_path)
    Path("-intro.wav").write_bytes(b"")
    with pytest.raises(SystemExit):
        main(["score", "--hyp", "h.txt", "--ref", "r.txt", "-intro.wav"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith("error: unrecognized arguments: -intro.wav (-intro.wav is a file here, read as an option for "
                        "its leading '-': give it as ./-intro.wav)"), err
    with pytest.raises(SystemExit):
        main(["score", "--hyp", "h.txt", "--ref", "r.txt", "-other.wav"])  # no such file: no word of one
    assert capsys.readouterr().err.strip().endswith("unrecognized arguments: -other.wav")
    # -hello.wav is -h with an explicit argument to argparse, and a folder is said as one (review)
    Path("-hello.wav").write_bytes(b"")
    Path("-talks").mkdir()
    for word, what in (("-hello.wav", "a file"), ("-talks", "a folder")):
        with pytest.raises(SystemExit):
            main(["segment", word])
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.endswith(f"({word} is {what} here, read as an option for its leading '-': give it as ./{word})"), err
    with pytest.raises(SystemExit):  # given after --, it is a name: an error of another word says nothing of it
        main(["segment", "--max-segment", "x", "--", "-hello.wav"])
    assert "is a file here" not in capsys.readouterr().err


@pytest.mark.slow
def test_a_device_type_torch_deprecates_is_refused_without_its_warning() -> None:
    """`--device mkldnn` printed torch's UserWarning ("will be deprecated ... Triggered internally at
    /pytorch/c10/core/Device.cpp") and its source line above sate's one line (27th hostile pass). Torch warns once
    a process, so the check runs in a fresh one: here an earlier test's mkldnn would leave nothing to warn (review)."""
    script = ("import warnings, sys\n"
              "from sate.decode.api import pick_device\n"
              "from sate.errors import SateError\n"
              "warnings.simplefilter('error')\n"
              "try:\n    pick_device('mkldnn')\nexcept SateError as err:\n    print(err)\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert (run.returncode, run.stderr) == (0, ""), run.stderr
    assert run.stdout.startswith("--device mkldnn: no mkldnn device is available on this machine"), run.stdout


@pytest.mark.parametrize("analysis", ["locality", "attention"])
def test_analyze_help_shows_a_default_only_where_there_is_one(analysis: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`sate analyze`'s options read "(default: None)" where they have none (`--device`: "(default: a GPU if present)
    (default: None)"), where every other command shows a default only where there is one (27th hostile pass)."""
    with pytest.raises(SystemExit):
        main(["analyze", analysis, "--help"])
    printed = " ".join(capsys.readouterr().out.split())
    assert not re.search(r"\(default: (None|False|\[\])\)", printed), printed
    assert "(default: dev)" in printed and "(default: a GPU if present)" in printed


def test_analyze_shows_defaults_by_the_rule_of_every_command() -> None:
    """`sate analyze`'s help formatter repeated the rule of sate.cli's for which defaults to show (27th hostile
    pass's review): it is that rule, so the two cannot drift apart."""
    import argparse

    from sate.cli import DefaultsShown, HelpFormatter, build_parser

    assert issubclass(HelpFormatter, DefaultsShown)
    parser = build_parser("analyze")
    chooser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    analyze = chooser.choices["analyze"]
    analyses = next(a for a in analyze._actions if isinstance(a, argparse._SubParsersAction))
    for sub in analyses.choices.values():
        assert sub.formatter_class is DefaultsShown, sub.prog


def test_an_output_named_with_a_leading_dash_is_told_how_to_give_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`--out -x.txt`, a file not there yet, was "argument --out: expected one argument" alone (a name already there
    had the hint of its leading '-'); the advice followed (`--out=-x.txt`) is taken. An option given where the value
    was forgotten (`--out --beam 2`) gets no such hint (27th hostile pass)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        main(["score", "--hyp", "h.txt", "--ref", "h.txt", "--format", "-json"])
    assert "(-json was read as an option for its leading '-': give it as --format=-json)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["segment", "a.wav", "--out", "--vad", "energy"])
    assert capsys.readouterr().err.strip().endswith("error: argument --out: expected one argument")
    (tmp_path / "h.txt").write_text("ein Satz\n")
    with pytest.raises(SystemExit):
        main(["segment", "h.txt", "--out", "-s.jsonl"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == ("sate segment: error: argument --out: expected one argument (-s.jsonl was read as an option for "
                   "its leading '-': give it as --out=-s.jsonl)")
    assert main(["segment", "h.txt", "--out=-s.jsonl"]) == 1  # taken: h.txt is no audio, said as such
    assert "h.txt" in capsys.readouterr().err


@pytest.mark.parametrize("words", [["segment", "a.wav", "--out", "--vad=energy"],
                                   ["segment", "a.wav", "--out", "--va", "energy"],
                                   ["segment", "a.wav", "--out", "--vda", "energy"],
                                   ["translate", "h.txt", "--model", "p", "--out", "--form", "srt"],
                                   ["translate", "h.txt", "--model", "p", "--out", "--format=srt"],
                                   ["evaluate", "--model", "p", "--data", "d", "--out", "--stream=wait-k"]])
def test_a_value_forgotten_before_an_option_gets_no_leading_dash_hint(
        words: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`--out --vad=energy` (the value of --out forgotten, the next option given with `=value`, abbreviated or
    mistyped) got the hint for a name with a leading '-': "give it as --out=--vad=energy", and `segment` followed
    so made a folder named `--vad=energy` (27th hostile pass's review). An option is no name: argparse's line alone."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        main(words)
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("error: argument --out: expected one argument")


def test_a_long_name_with_a_leading_dash_keeps_its_advice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The hint of a name with a leading '-' said the name twice, and a long one's line was cut at 1,000 characters
    before the advice (`--out -aaa.../x.jsonl` of 600 characters ended "aaaa...", 27th hostile pass's review): the
    name is said by its ends, and the advice is kept."""
    monkeypatch.chdir(tmp_path)
    value = "-" + "a" * 600 + "/x.jsonl"
    with pytest.raises(SystemExit):
        main(["segment", "a.wav", "--out", value])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert len(err) < 1050 and err.endswith("/x.jsonl was read as an option for its leading '-': join it to --out "
                                             "with '=')"), err
    Path("-" + "b" * 200 + ".wav").write_bytes(b"")  # a file there, after hundreds of words argparse did not take
    with pytest.raises(SystemExit):
        main(["score", "--hyp", "h.txt", "--ref", "r.txt", *(["-x"] * 500), "-" + "b" * 200 + ".wav"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert len(err) < 1050 and err.endswith("bb.wav is a file here, read as an option for its leading '-': put ./ "
                                             "before it)"), err


@pytest.mark.parametrize(("argv", "option"), [(["translate", "--model", "https://host/pack", "a.wav"], "--model"),
                                              (["evaluate", "--model", "p", "--data", "s3://b/data"], "--data"),
                                              (["prep", "--mustc-root", "https://host/mustc", "--out", "d"],
                                               "--mustc-root")])
def test_a_url_given_as_a_path_to_read_is_named_as_one(argv: list[str], option: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`--model https://host/pack`, `--data s3://b/data`, `--mustc-root https://...` said "https:/host/pack: no such
    directory" (or "packed model directory is missing"), the name collapsed by a `Path` and no word that sate reads
    local files and directories (hand33l), where an audio file given so is named a URL. A folder here named
    `https:` is read as ever."""
    monkeypatch.chdir(tmp_path)
    url = argv[argv.index(option) + 1]
    with pytest.raises(SystemExit) as end:
        main(argv)
    assert end.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        f"error: argument {option}: {url}: a URL, not a local path: sate reads local files and directories; "
        "download it first and give its path")
    (tmp_path / url.split("/")[0]).mkdir()
    assert read_name(url) == Path(url)


@pytest.mark.parametrize("argv", [["segment"], ["translate", "--model", "p"], ["stream", "--model", "p"],
                                  ["analyze", "attention", "--model", "p", "--out", "o.png"]])
def test_a_url_given_as_an_audio_file_is_named_as_one_by_every_command(
        argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate segment https://host/a.wav`, `sate stream` and `sate analyze attention` said "https:/host/a.wav: no such
    file" (the name not as given: a Path collapses its //, and no word that sate reads local files), and `sate
    translate` gave Python's `urlretrieve` to a shell user (review31z): one line of every command now, before any
    model is looked at, with a `curl` that names the file. A folder here named `https:` is read as ever."""
    monkeypatch.chdir(tmp_path)
    command = " ".join(argv[:2] if argv[0] == "analyze" else argv[:1])
    name, dest = ("INPUT", "input") if argv[0] == "stream" else ("FILE", "files")
    url = "https://host/talks/a%20b.wav?token=1&x=2"
    with pytest.raises(SystemExit) as end:
        main([*argv, url])
    assert end.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"sate {command}: error: argument {name}: {url}: a URL, not a file: sate reads local files; download it first "
        f"(curl -o 'a b.wav' '{url}') and give the file")
    with pytest.raises(SystemExit):
        main([*argv, f"file://{tmp_path}/a.wav"])
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        f"file://{tmp_path}/a.wav: a file:// URL, not a file's path: give its path ({tmp_path}/a.wav, which is not "
        "there either)")
    if argv[0] == "analyze":  # its parser, chosen, imports matplotlib (0.7 s)
        return
    (tmp_path / "https:" / "host").mkdir(parents=True)
    (tmp_path / "https:" / "host" / "a.wav").write_bytes(b"")
    words = [*argv, "https://host/a.wav"]
    given = vars(build_parser(words[0]).parse_args(words))[dest]
    assert (given if isinstance(given, list) else [given]) == [Path("https:/host/a.wav")]
