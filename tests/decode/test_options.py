"""Decoding options: each has a line of help, and the commands that decode list them with their defaults."""

from __future__ import annotations

from dataclasses import fields

import pytest

from sate.cli import main
from sate.decode.options import HELP, DecodeOptions


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
