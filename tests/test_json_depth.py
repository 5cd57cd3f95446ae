"""JSON nested a thousand levels deep (2 KB of brackets; the tests use 100,000 levels) overflows Python's JSON
parser with a RecursionError, which every reader let through as a traceback: a manifest line, a hub model's
config.json or tokenizer.json, cmvn.json, a results file. Each is now one line naming the file (or, for records
sate wrote itself and recomputes when unreadable, read as unreadable)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from sate.analysis.tradeoff import read_run
from sate.cli import main
from sate.data.feature_index import recorded_checksums, recorded_sizes
from sate.data.features import load_cmvn
from sate.data.manifest import read_manifest
from sate.data.vocab import vocabulary_kind
from sate.errors import SateError
from sate.files import read_json
from sate.layout import VOCAB_META
from sate.models.hub.whisper_tokens import whisper_tokens
from sate.scoring.report import collect
from sate.train.frozen_cache import problem
from sate.train.lock import ExperimentLock
from sate.train.train_time import read_train_time

DEEP = "[" * 100_000 + "]" * 100_000


def written(path: Path, text: str = DEEP) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("reader", ["manifest", "hub config.json", "tokenizer.json", "vocabulary.json", "cmvn.json",
                                    "results.json", "report results.json"])
def test_deep_json_is_one_line(tmp_path: Path, reader: str) -> None:
    cases: dict[str, tuple[Callable[[], object], str]] = {
        "manifest": (lambda: read_manifest(written(tmp_path / "dev.jsonl", DEEP + "\n")),
                     r"dev.jsonl:1: not a JSON object: nested too deeply"),
        "hub config.json": (lambda: read_json(written(tmp_path / "config.json")), r"config.json: not valid JSON"),
        "tokenizer.json": (lambda: whisper_tokens(written(tmp_path / "tokenizer.json").parent, 60),
                           r"tokenizer.json: not a tokenizer.json"),
        "vocabulary.json": (lambda: whisper_tokens(written(tmp_path / "vocabulary.json").parent, 60),
                            r"vocabulary.json: cannot read"),
        "cmvn.json": (lambda: load_cmvn(written(tmp_path / "cmvn.json")), r"cmvn.json: not a CMVN file"),
        "results.json": (lambda: read_run(written(tmp_path / "results.json")), r"results.json: not valid JSON"),
        "report results.json": (lambda: collect(written(tmp_path / "exp" / "st" / "decode_dev" / "results.json")
                                                .parents[2], ["dev"]), r"results.json: not valid JSON"),
    }
    read, says = cases[reader]
    with pytest.raises(SateError, match=says) as err:
        read()
    assert "\n" not in str(err.value) and len(str(err.value)) < 300


def test_deep_records_sate_wrote_read_as_unreadable(tmp_path: Path) -> None:
    """Records sate recomputes when they cannot be read: the same as a damaged one, not a traceback."""
    ark = tmp_path / "fbank" / "train" / "00000.ark"
    written(ark.with_suffix(".crc.json"))
    written(ark.parent / "sizes.json")
    assert recorded_checksums(ark) == {} and recorded_sizes(ark.parent) == {}
    written(tmp_path / VOCAB_META)
    assert vocabulary_kind(tmp_path) == "spm"
    written(tmp_path / "frozen" / "dev.json")
    assert "dev.json is missing or of an earlier format" in str(problem(tmp_path / "frozen", "dev",
                                                                         written(tmp_path / "dev.jsonl", "")))


def test_records_of_a_training_run_read_as_unreadable(tmp_path: Path) -> None:
    """EXP/train.lock and EXP/train_time.json nested deeply were a RecursionError traceback in `sate train`
    (the lock's holder and the time so far are read as unknown, as for any other damage)."""
    written(tmp_path / "train.lock")
    with ExperimentLock(tmp_path) as lock:
        assert lock.takeover is None
    written(tmp_path / "train_time.json")
    assert read_train_time(tmp_path) == {"seconds": 0.0, "runs": 0}


@pytest.mark.slow
def test_a_vocab_json_that_is_not_utf8_is_read_as_damaged(tmp_path: Path, prepared_data: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """vocab.json of bytes that are not UTF-8 (a disk error, another tool's file) was a UnicodeDecodeError traceback
    in `sate vocab`, `sate train` and `sate pack`: it is damaged like one cut short, and the vocabularies are made
    again."""
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    argv = ["vocab", "--data", str(data), "--src-size", "48", "--tgt-size", "64"]
    assert main(argv) == 0  # the record of this directory's inputs (they are named by path)
    good = (data / VOCAB_META).read_bytes()
    assert main(argv) == 0 and "vocabularies up to date" in capsys.readouterr().out
    (data / VOCAB_META).write_bytes(b'{"kind": "\xff\xfe"}\n')
    assert vocabulary_kind(data) == "spm"
    assert main(argv) == 0 and "vocabularies up to date" not in capsys.readouterr().out
    assert (data / VOCAB_META).read_bytes() == good


@pytest.mark.parametrize("command", [["segment", "{talk}", "--out", "{out}"],
                                     ["translate", "{talk}", "--model", "{pack}", "--out", "{out}"]])
def test_an_output_of_deep_json_is_looked_at_without_a_traceback(tmp_path: Path, command: list[str],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-fourth hostile pass: an --out whose first line is brackets nested deeply (`x.jsonl`) was a
    RecursionError traceback from the check of whether it is a manifest (`sate.targets`), before any work. It is no
    manifest row: the output is written as for any other text file of the user's."""
    out = written(tmp_path / "x.jsonl", DEEP + "\n")
    talk = tmp_path / "talk.wav"
    sf.write(talk, np.zeros(16000, dtype=np.float32), 16000)
    argv = [a.format(talk=talk, out=out, pack=tmp_path / "no-pack") for a in command]
    status = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "RecursionError" not in err
    if command[0] == "segment":
        assert status == 0 and out.read_text() != DEEP + "\n"
    else:  # refused for its missing pack, in one line, the output untouched
        assert status == 2 and "no-pack" in err and len(err.strip().splitlines()) == 1
        assert out.read_text() == DEEP + "\n"
