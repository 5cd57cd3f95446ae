"""`python -m sate.bench.prefix`'s arguments: each bad one is one line before the model is built."""

from __future__ import annotations

import pytest

from sate.bench import prefix


@pytest.mark.parametrize(("argv", "says"), [
    (["--seconds", "a"], "got 'a' in 'a'"),  # a ValueError traceback
    (["--seconds", "nan"], "got 'nan' in 'nan'"),  # a ValueError traceback
    (["--seconds", "1,-1"], "got '-1' in '1,-1'"),  # torch's "negative dimension" traceback
    (["--seconds", "1e9"], "got '1e9' in '1e9'"),  # an allocation of 14 TB
    (["--seconds", "0"], "got '0' in '0'"),  # a prefix heard from no memory
    (["--seconds", "1,0.01"], "from 0.04 (one encoder frame) to 3600 seconds, got '0.01'"),  # 0.5 frames: none
    (["--seconds", "1", "--repeat", "0"], "--repeat must be at least 1, got 0"),  # "inf ms" and "nanx"
])
def test_bad_arguments_are_one_line(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        prefix.main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and says in err.splitlines()[-1] and "Traceback" not in err, err


@pytest.mark.slow
def test_a_short_length_is_measured(capsys: pytest.CaptureFixture[str]) -> None:
    prefix.main(["--seconds", "0.5,0.04", "--repeat", "1"])  # 0.04 s: one frame of memory, the shortest taken
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 4 and rows[2].startswith("| 0.5 s | 3 |") and rows[3].startswith("| 0.04 s | 1 |"), rows
