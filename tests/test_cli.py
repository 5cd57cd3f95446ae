"""`sate --help` and every command's help: written for users, with the pipeline's commands in order."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sate.cli import COMMANDS, main


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
])
def test_a_list_option_given_twice_keeps_both(argv: list[str], dest: str, given: list[str]) -> None:
    """`sate prep --splits train --splits dev` prepared dev alone, exit 0: argparse kept the last list given
    (fourteenth hostile pass). A list option given again adds to it, as --set and --decode do."""
    from sate.cli import build_parser

    args = build_parser(argv[0]).parse_args(argv)
    assert [str(item) for item in getattr(args, dest)] == given


def test_prep_splits_given_twice_prepares_both(tmp_path: Path, synth_corpus: Path) -> None:
    assert main(["prep", "--mustc-root", str(synth_corpus), "--out", str(tmp_path / "d"), "--splits", "train",
                 "--splits", "dev"]) == 0
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["dev.jsonl", "train.jsonl"]
