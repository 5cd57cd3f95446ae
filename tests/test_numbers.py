"""A whole number that no float holds, or that Python will not read, in any YAML or JSON sate reads: one line naming
the file or option, never a traceback.

YAML and JSON put no limit on a whole number's size. Python reads one of more than 4,300 decimal digits as a
ValueError ("Exceeds the limit ... use sys.set_int_max_str_digits()"), writes none of that size either (so a message
showing it failed again), and an int beyond 1.8e308 (400 digits, or a `0x...` of any length) is an OverflowError in
`math.isfinite` and `float()`. Each was a traceback in `sate config`, `sate train`, `--decode`, a pack's sate.yaml,
a manifest line, a results file; so was a date that does not exist (2001-02-30) or `!!int 12a` in YAML.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from sate.analysis.tradeoff import read_run
from sate.cli import main
from sate.config import load_yaml_text, read_yaml
from sate.data.cmvn_record import cmvn_difference
from sate.data.features import load_cmvn
from sate.data.manifest import read_manifest
from sate.data.mustc import parse_yaml_line
from sate.decode.options import decode_options, parse_decode
from sate.decode.pack import read_pack_yaml
from sate.errors import SateError, shown
from sate.files import read_json
from sate.models.pretrained import read_espnet
from sate.numbers import decimal, is_int64, is_number
from sate.scoring.report import read_results

LONG = "9" * 5000  # beyond Python's 4,300 digits
HUGE = "9" * 400  # read, but beyond any float
HEX = "0x" + "f" * 4000  # hexadecimal has no digit limit: 16,000 bits, that no decimal repr may show


def test_a_number_is_one_a_float_holds() -> None:
    assert is_number(3) and is_number(-2.5) and is_number(10**308)
    assert not any(is_number(v) for v in (10**400, -(10**400), float("nan"), float("inf"), True, "1", None))
    assert is_int64(2**63 - 1) and is_int64(-(2**63))
    assert not any(is_int64(v) for v in (2**63, 1.0, False))
    assert shown(16**4000) == "<a whole number of 16,001 bits>" and shown([1, 16**4000]).startswith("[1, <a whole")
    # its size said: reprlib cut digits from the middle, and 10**50 read as 10**40 does (33rd hostile pass)
    assert shown(10**50) == "10000000000000000000... (51 digits)" and shown(-(10**50)).endswith("0... (51 digits)")
    assert shown(10**39) == "1" + "0" * 39 and shown([2**200]) == "[16069380442589902755... (61 digits)]"


@pytest.mark.parametrize(("value", "says"), [
    (LONG, r"the value is not valid YAML \(cannot read the value '9999.*Exceeds the limit \(4300 digits\)"),
    # a date that does not exist, tagged as one (untagged, it is text: sate reads no timestamps, as YAML 1.2)
    ("!!timestamp 2001-02-30", r"the value is not valid YAML \(cannot read the value '2001-02-30': day is out of "
                               r"range"),
    ("!!int 12a", r"the value is not valid YAML \(cannot read the value '12a'"),
])
def test_a_yaml_value_python_cannot_construct_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          value: str, says: str) -> None:
    config = tmp_path / "mt.yaml"
    config.write_text("task: mt\n")
    assert main(["config", "--config", str(config), "--set", f"model.d_model={value}"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and len(err) < 400 and re.search(says, err), err
    config.write_text(f"task: mt\nseed: {value}\n")
    with pytest.raises(SateError, match=r"mt.yaml line 2: invalid YAML \(cannot read the value"):
        read_yaml(config)  # the reader of `sate config` and `sate train`


@pytest.mark.parametrize(("key", "value", "says"), [
    ("optim.lr", HUGE, "optim.lr must be a finite number, got 9999"),  # a float is due: float() overflowed
    ("trainer.max_epochs", HUGE, "trainer.max_epochs must be at least 1 and at most 2[*][*]63-1"),
    ("seed", "9" * 30, r"seed must be from 0 to 4294967295 \(numpy's seeds\), got 9{30}$"),  # numpy: 32 bits
    ("model.d_model", HEX, r"d_model must be a positive even number up to 65,536, got <a whole number of 16,000 "
                           r"bits>$"),  # its own range first
])
def test_a_whole_number_beyond_a_float_or_int64_is_refused_by_its_key(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str], key: str,
                                                                       value: str, says: str) -> None:
    config = tmp_path / "mt.yaml"
    config.write_text("task: mt\n")
    assert main(["config", "--config", str(config), "--set", f"{key}={value}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(says, err), err[:500]


def test_decoding_options_and_a_packs_sate_yaml(tmp_path: Path) -> None:
    with pytest.raises(SateError, match=r"--decode: beam must be at least 1 and at most 256, got 9{20}\.\.\. "
                                        r"\(400 digits\)$"):
        decode_options(parse_decode([f"beam={HUGE}"]), "--decode")
    with pytest.raises(SateError, match=r"--decode 'beam=!!timestamp 2001-02-30': the value of beam is not valid "
                                        r"YAML"):
        parse_decode(["beam=!!timestamp 2001-02-30"])
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "sate.yaml").write_text("format: sate-pack\nversion: 1\ntask: mt\ndecode:\n"
                                    "  beam: !!timestamp 2001-02-30\n")
    with pytest.raises(SateError, match=r"sate.yaml line 5: invalid YAML \(cannot read the value '2001-02-30'"):
        read_pack_yaml(pack)


def test_a_mustc_line_and_an_espnet_config(tmp_path: Path) -> None:
    line = f"- {{duration: {LONG}, offset: 0, speaker_id: 's', wav: 'x.wav'}}"  # quoted: read by the YAML parser
    with pytest.raises(SateError, match=r"^tst.yaml:3: malformed yaml entry"):
        parse_yaml_line(line, Path("tst.yaml"), 3)
    (tmp_path / "config.yaml").write_text(f"token_list: [a, b]\nfrontend_conf: {{n_fft: {LONG}}}\n")
    with pytest.raises(SateError, match=r"config.yaml line 2: invalid YAML \(cannot read the value"):
        read_espnet(tmp_path / "model.pth", {"w": torch.zeros(1)}, None)


@pytest.mark.parametrize(("key", "value", "says"), [
    ("n_frames", LONG, "not a JSON object: a number of 5,000 digits, too long to read"),
    ("offset", HUGE, "offset must be a number of seconds from 0 to 10,000,000, got 9999"),
    ("speed", HUGE, "speed must be a number from 0.1 to 10"),
])
def test_a_manifest_row_naming_the_line(tmp_path: Path, key: str, value: str, says: str) -> None:
    row = {"id": "a", "audio": "a.wav", "offset": 0.0, "duration": 1.0, "n_frames": 98, "speaker": "s", "src": "hi",
           "src_norm": "hi", "tgt": None}
    path = tmp_path / "dev.jsonl"
    path.write_text(json.dumps({**row, "id": "b"}) + "\n" + json.dumps({**row, key: "N"}).replace('"N"', value) + "\n")
    with pytest.raises(SateError, match=rf"^{path}:2: {says}"):
        read_manifest(path)


def test_results_and_hub_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(f'{{"d_model": {LONG}}}')
    with pytest.raises(SateError, match=r"config.json: not valid JSON \(a number of 5,000 digits, too long to read\)"):
        read_json(tmp_path / "config.json")
    results = tmp_path / "results.json"
    results.write_text(f'{{"bleu": {HUGE}}}')
    with pytest.raises(SateError, match=r"results.json: bleu must be a number or null, got 9999"):
        read_results(results)
    with pytest.raises(SateError, match=r"results.json: bleu must be a finite number, got 9999"):
        read_run(results)
    stream = {"policy": "wait-k=3", "chunk": 0.5, "latency": {"al": "N", "laal": 1, "al_ca": 1, "laal_ca": 1}}
    results.write_text(json.dumps({"bleu": 20.0, "stream": stream}).replace('"N"', HUGE))
    with pytest.raises(SateError, match=r"results.json: stream.latency.al must be a finite number, got 9999"):
        read_run(results)
    assert load_yaml_text("a: 0x10\nb: 1_000\n") == {"a": 16, "b": 1000}  # YAML 1.1's integers still read


def test_cmvn_statistics_and_their_record(tmp_path: Path) -> None:
    """A cmvn.json mean of 400 digits was an OverflowError traceback in `sate pack` and in loading a pack; so was
    such a number in the statistics a model file records."""
    stats = {"mean": [0.0] * 80, "std": [1.0] * 80}
    path = tmp_path / "cmvn.json"
    path.write_text(json.dumps(stats).replace("0.0", HUGE, 1))
    with pytest.raises(SateError, match=r"cmvn.json: not a CMVN file \(int too large to convert to float\)"):
        load_cmvn(path)
    path.write_text(json.dumps(stats))
    record = {"mean": [10**400] * 80, "std": [1.0] * 80}
    assert cmvn_difference(record, path) == "the recorded statistics are unreadable"


def test_a_worker_count_is_bounded_by_the_machine() -> None:
    """`--jobs` is a process each: from 1 to four per CPU (at least 16)."""
    import os

    from sate.numbers import check_jobs, max_jobs

    assert max_jobs() == max(16, 4 * (os.cpu_count() or 1))
    check_jobs(1)
    check_jobs(max_jobs())
    for bad, says in ((0, "--jobs must be >= 1, got 0"), (max_jobs() + 1, f"--jobs {max_jobs() + 1:,}: at most")):
        with pytest.raises(SateError, match=says):
            check_jobs(bad)


def test_decimal_takes_plain_decimals_alone() -> None:
    """float() reads '1_0' as 10, '٣' as 3 and 'inf': a corpus's offset written so was another number, exit 0."""
    assert [decimal(t) for t in ("0.3", " 1.5 ", "-1", "2.", ".5", "1e-3", "3E2")] == [0.3, 1.5, -1.0, 2.0, 0.5, 0.001,
                                                                                      300.0]
    assert [decimal(t) for t in ("1_0", "\u0663", "inf", "nan", "0x10", "", "1.2.3", "１")] == [None] * 8


def test_number_options_read_numbers_as_a_file_writes_them() -> None:
    """argparse's int and float read '1_0' as 10, '٣' as 3 and ' 2 ' as 2: `prep --min-duration 1_0` filtered at 10 s
    without a word (fifteenth hostile pass, the arguments harness)."""
    import argparse

    from sate.numbers import real_number, whole_number

    assert (whole_number("12"), whole_number("-3"), whole_number("+4")) == (12, -3, 4)
    assert (real_number("2.5"), real_number("1e-3"), real_number("-0.5")) == (2.5, 1e-3, -0.5)
    assert real_number("inf") == float("inf")  # to the option's own range check, which names it
    for odd in ("1_0", "\u0663", " 2 ", "2\n", "0x10", "2.5", "", "\u00b2"):
        with pytest.raises(argparse.ArgumentTypeError, match="invalid whole number"):
            whole_number(odd)
    for odd in ("1_0", "\u0663", " 2", "2\n", "x", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="invalid number"):
            real_number(odd)
